import numpy as np
import pytest

from spectralnet_tf import centroids


def _blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centers = np.array([[0, 0], [10, 0], [0, 10], [10, 10]], dtype=np.float32)
    return (centers[y] + rng.normal(size=(n, 2))).astype(np.float32), y


def test_kmeans_fits_on_a_sample_above_the_cap_and_assigns_every_point(monkeypatch):
    from spectralnet_tf.metrics import acc

    x, y = _blobs(5000)
    monkeypatch.setattr(centroids, "KMEANS_FIT_MAX", 400)
    monkeypatch.setattr(centroids, "ASSIGN_CHUNK", 999)
    fitted = []
    real = centroids.KMeans.fit
    monkeypatch.setattr(centroids.KMeans, "fit", lambda self, a: fitted.append(len(a)) or real(self, a))
    labels = centroids.kmeans_labels(x, 4, seed=0)
    assert fitted == [400] and labels.shape == (5000,) and acc(y, labels) == 1.0
    centers = centroids.fit_centroids(x, 4, seed=0)
    np.testing.assert_array_equal(centroids.assign(x, centers), labels)


def test_kmeans_below_the_cap_is_plain_kmeans_on_all_points():
    from sklearn.cluster import KMeans

    x, _ = _blobs(600)
    np.testing.assert_array_equal(centroids.kmeans_labels(x, 4, seed=1),
                                  KMeans(4, n_init=10, random_state=1).fit_predict(x))


def test_kmeans_inertia_is_over_every_point_also_when_fitted_on_a_sample(monkeypatch):
    x, _ = _blobs(5000)
    for cap, chunk in ((100_000, 65536), (400, 999)):  # on all points; sample, chunks
        monkeypatch.setattr(centroids, "KMEANS_FIT_MAX", cap)
        monkeypatch.setattr(centroids, "ASSIGN_CHUNK", chunk)
        labels, inertia = centroids.kmeans_labels_inertia(x, 4, seed=0)
        centers = centroids.kmeans(x, 4, seed=0).cluster_centers_
        want = float(((x - centers[labels]) ** 2).sum())
        assert inertia == pytest.approx(want, rel=1e-4)
        np.testing.assert_array_equal(labels, centroids.kmeans_labels(x, 4, seed=0))
