"""Data that need not fit in memory: rows read a chunk at a time.

A "row source" is a numpy array, an ``h5py.Dataset`` (e.g. the Reuters
``data``), or a ``LazyRows``: ``Rows`` (a selection of rows of any row
source) or rows generated on demand (the harness's infinite MNIST). ``row_batches`` reads
consecutive chunks, the next one in a background thread while a model runs on
the current one; ``map_batches`` applies a model to every chunk and stacks the
(small) outputs, e.g. the 10-d codes of 685,000 documents. At most two chunks
of the input are in memory at a time.
"""

import concurrent.futures
import contextlib
import os

import h5py
import numpy as np
import tensorflow as tf

#: Rows per chunk when applying a model.
CHUNK_ROWS = 4096


class LazyRows:
    """A row source read or generated only when sliced: ``shape``, ``dtype``,
    ``len`` and ``x[a:b]`` (a float numpy array)."""

    def take_rows(self, indices):
        """The rows ``indices`` (increasing, not empty) as one array: by
        default ``block_rows``. A source that generates its rows overrides it
        to make only the rows asked for."""
        return block_rows(self, indices)


def check_indices(indices, n):
    """Row numbers of a source of n rows: strictly increasing, in [0, n);
    returned as int64."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.ndim != 1 or (indices.size and (np.diff(indices) <= 0).any()):
        raise ValueError("indices must be a 1-D strictly increasing array of row numbers.")
    if indices.size and not 0 <= indices[0] <= indices[-1] < n:
        raise ValueError(f"indices must lie in [0, {n}), got [{indices[0]}, {indices[-1]}].")
    return indices


def block_rows(source, indices):
    """The rows ``indices`` (increasing, not empty) of a row source: the
    contiguous block that spans them is read, and those rows kept."""
    block = source[int(indices[0]) : int(indices[-1]) + 1]
    return np.asarray(block)[indices - indices[0]]


class Rows(LazyRows):
    """The rows ``indices`` (increasing) of a row source, read lazily.

    Slicing a ``Rows`` reads the contiguous block that spans the selected rows
    and keeps those rows, which is fast for dense selections such as a 90%
    training split of an HDF5 file (h5py point selection is not); a
    ``LazyRows`` source is asked for the rows themselves (``take_rows``), so
    that a generated one makes only the rows selected.
    """

    def __init__(self, source, indices):
        self.source = source
        self.indices = check_indices(indices, len(source))

    @property
    def shape(self):
        return (len(self.indices), *self.source.shape[1:])

    @property
    def dtype(self):
        return self.source.dtype

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(f"Rows supports slices only, got {type(key).__name__}.")
        positions = np.arange(*key.indices(len(self.indices)))
        if positions.size == 0:
            return np.empty((0, *self.source.shape[1:]), dtype=self.source.dtype)
        return self.take_rows(positions)

    def take_rows(self, indices):
        """Rows ``indices`` of this selection, asked of the source as its own
        row numbers: a selection of a selection stays as sparse."""
        idx = self.indices[np.asarray(indices, dtype=np.int64)]
        if isinstance(self.source, LazyRows):
            return self.source.take_rows(idx)
        return block_rows(self.source, idx)


def is_dataset(x):
    """True for a ``tf.data.Dataset``."""
    return isinstance(x, tf.data.Dataset)


def dataset_batches(ds, name="X"):
    """The feature batches of a ``tf.data.Dataset`` as 2-D float32 numpy
    arrays, one at a time. Its elements are rows (rank 1) or batches of
    rows (rank 2); an element that is a tuple, such as ``(features,
    labels)``, contributes its first component, as Keras's ``fit`` reads
    it. Anything else is a ValueError naming ``name``."""
    spec = ds.element_spec
    if isinstance(spec, tuple):
        if not spec:
            raise ValueError(f"{name} is a Dataset of empty tuples; it needs features.")
        ds, spec = ds.map(lambda *parts: parts[0]), spec[0]
    if not isinstance(spec, tf.TensorSpec) or spec.shape.rank not in (1, 2):
        raise ValueError(
            f"{name} must be a Dataset of feature rows or batches of rows (rank 1 or 2 "
            f"tensors, or tuples that start with one), got element_spec={spec}.")
    if spec.shape.rank == 1:
        ds = ds.batch(CHUNK_ROWS)
    for batch in ds.prefetch(2).as_numpy_iterator():
        yield np.asarray(batch, dtype=np.float32)


def dataset_rows(ds, name="X"):
    """All rows of a ``tf.data.Dataset`` (``dataset_batches``), stacked."""
    batches = list(dataset_batches(ds, name))
    if not batches:
        raise ValueError(f"{name} is an empty Dataset.")
    return np.concatenate(batches)


@contextlib.contextmanager
def spooled(ds, folder, name="X"):
    """The rows of a ``tf.data.Dataset`` (``dataset_batches``) written a batch
    at a time to an HDF5 file in ``folder``, as an open ``h5py.Dataset``: a
    row source that ``map_batches`` streams, so that a Dataset larger than
    memory goes through an encoder as an HDF5 file does. The file is closed
    on exit (the caller removes ``folder``)."""
    with h5py.File(os.path.join(folder, "rows.h5"), "w") as f:
        rows = None
        for batch in dataset_batches(ds, name):
            if rows is None:
                rows = f.create_dataset("rows", shape=(0, batch.shape[1]), dtype=np.float32,
                                        maxshape=(None, batch.shape[1]),
                                        chunks=(min(CHUNK_ROWS, max(1, len(batch))),
                                                batch.shape[1]))
            elif batch.shape[1] != rows.shape[1]:
                raise ValueError(f"{name} has batches of {rows.shape[1]} and of "
                                 f"{batch.shape[1]} features.")
            start = rows.shape[0]
            rows.resize(start + len(batch), axis=0)
            rows[start:] = batch
        if rows is None or rows.shape[0] == 0:
            raise ValueError(f"{name} is an empty Dataset.")
        yield rows


def is_lazy(x):
    """True for row sources read from disk or generated on demand."""
    return isinstance(x, (h5py.Dataset, LazyRows))


def row_batches(x, batch_size=CHUNK_ROWS):
    """Consecutive float32 chunks of the rows of ``x`` (numpy), each read in a
    background thread while the caller works on the one before.

    Reading (from disk, or generating the rows, as infinite MNIST's warps do)
    and a model's pass over a chunk then overlap. A plain Python thread, not a
    ``tf.data`` pipeline: ``Dataset.from_generator`` runs the generator under
    TensorFlow's own threads, where making infinite MNIST's views ran slower
    than in a plain loop with no overlap at all (BENCHMARKS, "Scale")."""
    n = len(x)

    def read(start):
        return np.asarray(x[start : start + batch_size], dtype=np.float32)

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="row_batches") as pool:
        ahead = pool.submit(read, 0) if n else None
        for start in range(0, n, batch_size):
            chunk = ahead.result()
            if start + batch_size < n:
                ahead = pool.submit(read, start + batch_size)
            yield chunk


def map_batches(fn, x, batch_size=CHUNK_ROWS):
    """``fn`` applied to every row of ``x``, a chunk at a time (float32 numpy).
    With ``fn=None`` the rows themselves are returned, read into memory."""
    if fn is None:
        if not is_lazy(x):
            return np.asarray(x, dtype=np.float32)
        # Filled in place: a list of chunks and their concatenation would hold the rows twice.
        rows = np.empty((len(x), int(x.shape[1])), np.float32)
        for start in range(0, len(x), batch_size):
            rows[start:start + batch_size] = x[start:start + batch_size]
        return rows
    return np.concatenate([np.asarray(fn(chunk)) for chunk in row_batches(x, batch_size)]
                          ).astype(np.float32)
