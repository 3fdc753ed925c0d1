import threading

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf import Schedule, SpectralNet
from spectralnet_tf.streaming import Rows, dataset_batches, is_lazy, map_batches, row_batches


def _h5(tmp_path, x):
    f = h5py.File(tmp_path / "rows.h5", "w")
    f.create_dataset("data", data=x, chunks=(16, x.shape[1]))
    return f["data"]


def test_chunks_cover_every_row_once_in_order(tmp_path):
    x = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
    ds = _h5(tmp_path, x)
    chunks = list(row_batches(ds, batch_size=32))
    assert [len(c) for c in chunks] == [32, 32, 32, 4]
    np.testing.assert_array_equal(np.concatenate(chunks), x)
    np.testing.assert_array_equal(map_batches(None, ds, 7), x)


class _Reads:
    """A row source that records which chunks were read, and signals when the
    chunk at ``signal_at`` is read."""

    def __init__(self, n, signal_at):
        self.shape, self.signal_at = (n, 2), signal_at
        self.starts, self.read = [], threading.Event()

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        self.starts.append(key.start)
        if key.start == self.signal_at:
            self.read.set()
        return np.full((len(range(*key.indices(len(self)))), 2), key.start, np.float32)


def test_the_next_chunk_is_read_while_the_caller_holds_the_current_one():
    source = _Reads(10, signal_at=4)
    chunks = row_batches(source, batch_size=4)
    first = next(chunks)
    assert source.read.wait(10)  # read ahead, with the caller still on the first chunk
    rest = list(chunks)
    assert source.starts == [0, 4, 8]
    np.testing.assert_array_equal(np.concatenate([first, *rest])[:, 0],
                                  [0, 0, 0, 0, 4, 4, 4, 4, 8, 8])
    assert list(row_batches(_Reads(0, signal_at=0))) == []


def test_rows_selects_increasing_rows_and_refuses_others(tmp_path):
    x = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
    ds = _h5(tmp_path, x)
    idx = np.array([1, 2, 7, 30, 49])
    rows = Rows(ds, idx)
    assert rows.shape == (5, 4) and len(rows) == 5 and is_lazy(rows)
    np.testing.assert_array_equal(rows[1:4], x[idx[1:4]])
    np.testing.assert_array_equal(map_batches(None, rows, 2), x[idx])
    with pytest.raises(ValueError, match="strictly increasing"):
        Rows(ds, [3, 1])
    with pytest.raises(ValueError, match=r"\[0, 50\)"):
        Rows(ds, [10, 50])


def test_a_model_applied_in_chunks_equals_one_call(tmp_path):
    x = np.random.default_rng(1).normal(size=(70, 5)).astype(np.float32)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="tanh")])
    whole = model(x).numpy()
    np.testing.assert_allclose(map_batches(model, _h5(tmp_path, x), 16), whole, rtol=1e-6, atol=1e-6)


def test_fit_with_an_encoder_streams_the_hdf5_rows(tmp_path):
    """An on-disk X with an encoder gives the same fit as the same X in memory."""
    rng = np.random.default_rng(0)
    centers = np.repeat(np.eye(2, 6) * 6, 100, axis=0)
    x = (centers + rng.normal(size=(200, 6))).astype(np.float32)
    y = np.repeat([0, 1], 100)
    ds = _h5(tmp_path, x)
    encoder = keras.Sequential([keras.Input((6,)), keras.layers.Dense(
        3, kernel_initializer=keras.initializers.GlorotUniform(seed=0))])
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=3), batch_size=64,
                  random_state=0, encoder=encoder)
    on_disk = SpectralNet(2, **params).fit(ds)
    in_memory = SpectralNet(2, **params).fit(x)
    np.testing.assert_allclose(on_disk.embedding_, in_memory.embedding_, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(on_disk.predict(Rows(ds, np.arange(0, 200, 3))),
                                  in_memory.predict(x[::3]))
    assert set(np.unique(on_disk.labels_)) == {0, 1} and len(on_disk.labels_) == len(y)


def test_a_non_2d_dataset_is_refused_by_name(tmp_path):
    f = h5py.File(tmp_path / "bad.h5", "w")
    ds = f.create_dataset("data", data=np.zeros(10, np.float32))
    with pytest.raises(ValueError, match=r"X must be a 2-D numeric data set.*\(10,\)"):
        SpectralNet(2).fit(ds)


class _CountRows(keras.layers.Layer):
    """The identity, counting the rows it is run on."""

    def build(self, input_shape):
        self.rows = self.add_weight(shape=(), initializer="zeros", dtype="int64",
                                    trainable=False)

    def call(self, x):
        self.rows.assign_add(keras.ops.cast(keras.ops.shape(x)[0], "int64"))
        return x


def test_fit_encodes_x_once_and_keeps_the_codes(tmp_path):
    """The encoder runs over X exactly once in fit; ``codes_`` are its output
    (what run.py clusters with k-means, instead of encoding again)."""
    x = np.random.default_rng(2).normal(size=(150, 6)).astype(np.float32)
    count = _CountRows()
    dense = keras.layers.Dense(3, kernel_initializer=keras.initializers.GlorotUniform(seed=0))
    encoder = keras.Sequential([keras.Input((6,)), dense, count])
    count.rows.assign(0)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2), batch_size=64,
                  random_state=0)
    net = SpectralNet(2, encoder=encoder, **params).fit(_h5(tmp_path, x))
    assert int(count.rows.numpy()) == len(x)
    np.testing.assert_allclose(net.codes_, dense(x).numpy(), rtol=1e-6, atol=1e-6)
    assert net.history_["encode_seconds"] >= 0
    plain = SpectralNet(2, **params).fit(x)
    assert plain.codes_ is None and "encode_seconds" not in plain.history_


@pytest.mark.slow
def test_a_tf_data_dataset_fits_transforms_and_predicts_as_the_same_rows_in_an_array():
    """A Dataset of rows, of batches, or of (features, labels) tuples is the
    same input as the array of its rows: equal labels with the same seed."""
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.datasets import blobs

    x, y = blobs(300, 3, seed=0)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=3, steps_per_epoch=5),
                  random_state=0)
    ref = SpectralNet(3, **params).fit(x)
    for ds in (tf.data.Dataset.from_tensor_slices(x),
               tf.data.Dataset.from_tensor_slices(x).batch(64),
               tf.data.Dataset.from_tensor_slices((x, y)).batch(50)):
        net = SpectralNet(3, **params).fit(ds)
        np.testing.assert_array_equal(net.labels_, ref.labels_)
        np.testing.assert_array_equal(net.predict(ds), ref.labels_)
        # The same rows, a batch at a time as the Dataset gives them: oneDNN
        # may round a matmul differently for another row count (AVX2).
        batches = list(dataset_batches(ds))
        np.testing.assert_array_equal(np.concatenate(batches), x)
        np.testing.assert_array_equal(net.transform(ds),
                                      np.concatenate([ref.transform(b) for b in batches]))


def test_a_dataset_that_holds_no_feature_rows_is_refused():
    from spectralnet_tf import SpectralNet

    images = tf.data.Dataset.from_tensor_slices(np.zeros((10, 4, 4), np.float32)).batch(5)
    with pytest.raises(ValueError, match="X must be a Dataset of feature rows or batches"):
        SpectralNet(2).fit(images)
    with pytest.raises(ValueError, match="X is an empty Dataset"):
        SpectralNet(2).fit(tf.data.Dataset.from_tensor_slices(np.zeros((0, 2), np.float32)))


@pytest.mark.slow
def test_a_dataset_goes_through_an_encoder_streamed_as_an_hdf5_file_would(monkeypatch):
    """With an encoder, a Dataset is spooled to a temporary HDF5 file and
    streamed from it (never stacked in memory), with the same result as the
    array."""
    from spectralnet_tf import SpectralNet, estimator
    from spectralnet_tf.datasets import blobs

    x, _ = blobs(300, 3, seed=0)
    encoder = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, name="code")])
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=3, steps_per_epoch=5),
                  random_state=0, encoder=encoder)
    ref = SpectralNet(3, **params).fit(x)
    monkeypatch.setattr(estimator, "dataset_rows", None)  # stacking in memory would fail
    net = SpectralNet(3, **params).fit(tf.data.Dataset.from_tensor_slices(x).batch(64))
    np.testing.assert_array_equal(net.labels_, ref.labels_)
    np.testing.assert_allclose(net.codes_, ref.codes_, rtol=1e-6)
