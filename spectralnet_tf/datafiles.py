"""Data files of the ``spectralnet`` command line: read a matrix, write labels.

A DATA argument is one of

- ``FILE.npy``: a 2-D array;
- ``FILE.npz``: the array named by ``key`` (or ``FILE.npz:ARRAY``), or its only array;
- ``FILE.csv`` / ``FILE.tsv``: numbers, comma / tab separated; a first row
  that is not all numbers is a header and skipped;
- ``FILE.h5:DATASET`` (or ``.hdf5``): an HDF5 dataset, left on disk as an
  ``h5py.Dataset`` (the estimator streams it through an encoder, or reads it
  itself).

Every problem a user can fix is a ``DataError`` with a one-line message.
No TensorFlow here: the command line imports this before deciding whether it
needs TensorFlow.
"""

import os
import sys
import zipfile

import numpy as np

MATRIX_EXTENSIONS = (".npy", ".npz", ".csv", ".tsv", ".h5", ".hdf5")
#: Rows per chunk when checking an HDF5 dataset for NaN or inf.
CHECK_ROWS = 65536


class DataError(ValueError):
    """A data file that cannot be used; the message names the file."""


def split_spec(spec):
    """``(path, name)`` of ``FILE.h5:DATASET`` or ``FILE.npz:ARRAY``;
    ``(spec, None)`` otherwise."""
    for ext in (".h5:", ".hdf5:", ".npz:"):
        at = spec.lower().rfind(ext)
        if at >= 0:
            cut = at + len(ext) - 1
            return spec[:cut], spec[cut + 1:]
    return spec, None


def extension(path):
    return os.path.splitext(path)[1].lower()


def read_matrix(spec, key=None):
    """The 2-D numeric matrix in ``spec`` (float32 numpy, or an h5py.Dataset),
    checked for NaN and inf."""
    path, dataset = split_spec(spec)
    _check_readable(path)
    ext = extension(path)
    if ext not in MATRIX_EXTENSIONS:
        raise DataError(f"{spec}: unknown file type {ext or '(no extension)'!r}; "
                        f"use one of {', '.join(MATRIX_EXTENSIONS)}.")
    if ext in (".h5", ".hdf5"):
        x = _read_h5(path, dataset)
    else:
        try:
            x = _READERS[ext](path, key or dataset)
        except DataError:
            raise
        except (OSError, ValueError, EOFError) as err:  # a corrupt or mistyped file
            raise DataError(f"{spec}: cannot read it as {ext}: {one_line(err)}") from None
    real = np.issubdtype(x.dtype, np.number) and not np.issubdtype(x.dtype, np.complexfloating)
    if x.ndim != 2 or not real:
        raise DataError(f"{spec}: expected a 2-D array of real numbers (rows x columns), "
                        f"got shape {x.shape} and dtype {x.dtype}.")
    if len(x) == 0 or x.shape[1] == 0:
        raise DataError(f"{spec}: no data (shape {x.shape}).")
    if isinstance(x, np.ndarray):
        x = x.astype(np.float32, copy=False)
        check_finite(x, spec)
    else:
        for start in range(0, len(x), CHECK_ROWS):
            check_finite(np.asarray(x[start:start + CHECK_ROWS], dtype=np.float32), spec, start)
    return x


def check_finite(x, name, first_row=0):
    """DataError naming the first NaN or inf, by row and column counted from 1."""
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise DataError(f"{name}: row {first_row + i + 1}, column {j + 1} is {x[i, j]}; "
                        "the data must be finite numbers (rows and columns counted from 1).")


def read_labels(spec, n, key=None, name="labels"):
    """Integer labels, one per row of the data (n of them): a text file with
    one integer a line, or any DATA format holding one column or a vector."""
    path, dataset = split_spec(spec)
    ext = extension(path)
    if ext in MATRIX_EXTENSIONS and ext not in (".csv", ".tsv"):
        _check_readable(path)
        try:
            y = (np.asarray(_read_h5(path, dataset)) if ext in (".h5", ".hdf5")
                 else _READERS[ext](path, key or dataset))
        except DataError:
            raise
        except (OSError, ValueError, EOFError) as err:
            raise DataError(f"{spec}: cannot read it as {ext}: {one_line(err)}") from None
    else:  # one number a line (.csv, .tsv, .txt, no extension ...)
        _check_readable(path)
        try:
            y = _read_text(path, "\t" if ext == ".tsv" else ",")
        except (OSError, ValueError) as err:
            raise DataError(f"{spec}: cannot read {name}: {one_line(err)}") from None
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1:
        raise DataError(f"{spec}: {name} must be one column of integers, got shape {y.shape}.")
    if len(y) != n:
        raise DataError(f"{spec}: {len(y)} {name} for the {n} rows of the data.")
    if not np.issubdtype(y.dtype, np.integer):
        whole = np.isfinite(y) & (y == np.round(y)) if np.issubdtype(y.dtype, np.number) else None
        if whole is None or not whole.all():
            row = 1 if whole is None else int(np.argmin(whole)) + 1
            raise DataError(f"{spec}: {name} must be integers; row {row} is not.")
    return y.astype(np.int64)


def write_labels(labels, path=None):
    """One integer a line, to ``path`` (atomically) or to stdout."""
    text = "".join(f"{int(v)}\n" for v in labels)
    if path is None:
        sys.stdout.write(text)
        return
    from .atomic import atomic_file

    with atomic_file(path) as f:
        f.write(text)


def write_matrix(x, path=None):
    """``x`` to ``path``: ``.npy`` or ``.csv``/``.tsv`` by extension (atomically);
    CSV to stdout without a path."""
    if path is None:
        np.savetxt(sys.stdout, x, delimiter=",", fmt="%.8g")
        return
    ext = extension(path)
    if ext not in (".npy", ".csv", ".tsv"):
        raise DataError(f"{path}: unknown output type {ext or '(no extension)'!r}; "
                        "use .npy, .csv or .tsv.")
    from .atomic import atomic_file

    with atomic_file(path, "wb") as f:
        if ext == ".npy":
            np.save(f, x)
        else:
            np.savetxt(f, x, delimiter="\t" if ext == ".tsv" else ",", fmt="%.8g")


def one_line(err):
    return " ".join(str(err).split())


def read_graph(path, n):
    """A scipy.sparse matrix saved by ``scipy.sparse.save_npz``, over ``n``
    points; its weights are checked by the estimator (symmetry, signs,
    isolated vertices)."""
    import scipy.sparse as sp

    _check_readable(path)
    try:
        graph = sp.load_npz(path)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise DataError(f"{path}: not a scipy.sparse .npz file (save one with "
                        f"scipy.sparse.save_npz): {one_line(err)}") from None
    if graph.shape != (n, n):
        raise DataError(f"{path}: a graph of shape {graph.shape}, but DATA has {n} rows; it "
                        f"must be ({n}, {n}).")
    return graph


# -- readers -------------------------------------------------------------------
def _check_readable(path):
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file.")
    if os.path.isdir(path):
        raise DataError(f"{path}: is a directory, not a data file.")
    if not os.access(path, os.R_OK):
        raise DataError(f"{path}: not readable (permission denied).")


def _read_npy(path, key):
    return np.load(path, allow_pickle=False)


def _read_npz(path, key):
    with np.load(path, allow_pickle=False) as arrays:
        names = list(arrays.keys())
        if key is None:
            if len(names) != 1:
                raise DataError(f"{path}: holds {len(names)} arrays ({', '.join(names) or 'none'}); "
                                "name one with --key, or as FILE.npz:ARRAY.")
            key = names[0]
        if key not in names:
            raise DataError(f"{path}: no array {key!r}; it holds {', '.join(names) or 'none'}.")
        return arrays[key]


def _read_text(path, delimiter):
    """Numbers of a delimited text file; a first row that is not all numbers
    is a header."""
    with open(path) as f:
        first = f.readline()
    header = 0
    try:
        [float(v) for v in first.strip().split(delimiter)]
    except ValueError:
        header = 1
    x = np.loadtxt(path, delimiter=delimiter, skiprows=header, dtype=np.float64, ndmin=2)
    return x


def _read_csv(path, key):
    return _read_text(path, ",")


def _read_tsv(path, key):
    return _read_text(path, "\t")


def _read_h5(path, dataset):
    import h5py

    if not dataset:
        raise DataError(f"{path}: name the HDF5 dataset, as {path}:DATASET.")
    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise DataError(f"{path}: cannot read it as HDF5: {one_line(err)}") from None
    if dataset not in f or not isinstance(f[dataset], h5py.Dataset):
        names = []
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        f.close()
        raise DataError(f"{path}: no dataset {dataset!r}; it holds {', '.join(names) or 'none'}.")
    return f[dataset]  # the file stays open as long as the dataset is used


_READERS = {".npy": _read_npy, ".npz": _read_npz, ".csv": _read_csv, ".tsv": _read_tsv}
