import numpy as np
import pytest

from spectralnet_tf.datasets import DATASETS, load_dataset


@pytest.mark.parametrize("name", sorted(set(DATASETS) - {"mnist", "reuters", "infimnist"}))  # files: own tests
def test_dataset_shapes_labels_and_determinism(name):
    x, y, k = load_dataset(name, seed=3)
    assert x.dtype == np.float32 and x.ndim == 2 and len(x) == len(y)
    assert set(np.unique(y)) == set(range(k))
    x2, y2, _ = load_dataset(name, seed=3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)


def test_nested_cs_has_1500_points_and_kmeans_fails_on_it():
    from sklearn.cluster import KMeans

    from spectralnet_tf.metrics import acc

    x, y, _ = load_dataset("cc")
    assert x.shape == (1500, 2)
    assert acc(y, KMeans(2, n_init=10, random_state=0).fit_predict(x)) < 0.9


def test_unknown_dataset_is_named():
    with pytest.raises(ValueError, match="'mnist3'"):
        load_dataset("mnist3")


def test_mnist_reads_the_local_npz(tmp_path):
    rng = np.random.default_rng(0)
    parts = {"x_train": rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
             "y_train": np.arange(6, dtype=np.uint8),
             "x_test": rng.integers(0, 256, (4, 28, 28), dtype=np.uint8),
             "y_test": np.arange(4, dtype=np.uint8)}
    np.savez(tmp_path / "mnist.npz", **parts)
    x, y, k = load_dataset("mnist", data_dir=str(tmp_path))
    assert x.shape == (10, 784) and k == 10 and x.dtype == np.float32
    np.testing.assert_allclose(x[7], parts["x_test"][1].reshape(-1) / 255.0)
    np.testing.assert_array_equal(y, np.r_[np.arange(6), np.arange(4)])


def test_mnist_missing_local_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="mnist.npz does not exist.*--data-dir.*SPECTRALNET_DATA_DIR"):
        load_dataset("mnist", data_dir=str(tmp_path))


def test_mnist_offline_without_local_copy_names_both_options(monkeypatch):
    import keras

    def offline():
        raise OSError("no network")

    monkeypatch.delenv("SPECTRALNET_DATA_DIR", raising=False)
    monkeypatch.setattr(keras.datasets.mnist, "load_data", offline)
    with pytest.raises(FileNotFoundError, match="--data-dir.*SPECTRALNET_DATA_DIR"):
        load_dataset("mnist")


def test_reuters_without_its_file_names_both_ways_to_give_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECTRALNET_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="--data-dir DIR or set .SPECTRALNET_DATA_DIR"):
        load_dataset("reuters")
    with pytest.raises(FileNotFoundError, match="make_reuters.py --src RCV1_DIR"):
        load_dataset("reuters", data_dir=str(tmp_path))
