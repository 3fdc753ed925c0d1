import h5py
import numpy as np
import pytest

from spectralnet_tf.autoencoder import (build_autoencoder, load_ae_weights, load_encoder,
                                        read_ae_weights, save_ae_weights)

SIZES = [(784, 500), (500, 500), (500, 2000), (2000, 10),
         (10, 2000), (2000, 500), (500, 500), (500, 784)]


def _write_vade_style(path, weights, with_input_layer=True):
    """A file in the Keras 1 layout of VaDE's ae_mnist_weights.h5."""
    with h5py.File(path, "w") as f:
        names = (["input_1"] if with_input_layer else []) + [f"dense_{i + 1}" for i in range(len(weights))]
        f.attrs["layer_names"] = np.array([n.encode() for n in names])
        if with_input_layer:
            f.create_group("input_1").attrs["weight_names"] = np.array([], dtype="S1")
        for i, (kernel, bias) in enumerate(weights):
            g = f.create_group(f"dense_{i + 1}")
            g.attrs["weight_names"] = np.array([f"dense_{i + 1}_W".encode(), f"dense_{i + 1}_b".encode()])
            g.create_dataset(f"dense_{i + 1}_W", data=kernel)
            g.create_dataset(f"dense_{i + 1}_b", data=bias)


def _random_weights(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(scale=0.05, size=s).astype(np.float32),
             rng.normal(scale=0.05, size=s[1]).astype(np.float32)) for s in SIZES]


def test_legacy_layout_reproduces_the_expected_encoding(tmp_path):
    weights = _random_weights()
    path = tmp_path / "ae_mnist_weights.h5"
    _write_vade_style(path, weights)
    encoder = load_encoder(str(path))
    x = np.random.default_rng(1).uniform(size=(5, 784)).astype(np.float32)
    h = x
    for i, (kernel, bias) in enumerate(weights[:4]):
        h = h @ kernel + bias
        if i < 3:
            h = np.maximum(h, 0)  # ReLU; the code layer is linear
    np.testing.assert_allclose(encoder.predict(x, verbose=0), h, rtol=1e-4, atol=1e-5)


def test_our_files_round_trip_through_the_same_loader(tmp_path):
    ae, _ = build_autoencoder(seed=3)
    path = tmp_path / "ours.h5"
    save_ae_weights(ae, str(path))
    with h5py.File(path, "r") as f:
        assert [n.decode() for n in f.attrs["layer_names"]][:2] == ["encoder1", "encoder2"]
    other, _ = build_autoencoder(seed=4)
    load_ae_weights(other, str(path))
    x = np.random.default_rng(0).uniform(size=(3, 784)).astype(np.float32)
    np.testing.assert_array_equal(other.predict(x, verbose=0), ae.predict(x, verbose=0))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.h5.*does not exist.*Keras 1 layout"):
        read_ae_weights(str(tmp_path / "nope.h5"))


def test_corrupt_file_is_named(tmp_path):
    path = tmp_path / "bad.h5"
    path.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(ValueError, match="bad.h5.*not a readable HDF5"):
        read_ae_weights(str(path))


def test_wrong_layout_is_named(tmp_path):
    path = tmp_path / "keras3.h5"
    with h5py.File(path, "w") as f:
        f.create_group("layers")
    with pytest.raises(ValueError, match="keras3.h5.*no top-level 'layer_names'"):
        read_ae_weights(str(path))


def test_wrong_shapes_are_named(tmp_path):
    weights = _random_weights()[:6]  # a smaller autoencoder
    path = tmp_path / "small.h5"
    _write_vade_style(path, weights, with_input_layer=False)
    with pytest.raises(ValueError, match="small.h5.*expected"):
        load_encoder(str(path))
