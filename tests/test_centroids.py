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


def _rays(seed=0):
    """Three groups along the axes of 3-D: the first long (lengths 0.5-5),
    the other two short (lengths near 1), each point slightly off its axis.
    k-means on the rows as they are lowers its inertia by splitting the long
    group and merging the short ones; their directions are the groups."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], [1000, 500, 500])
    length = np.where(y == 0, rng.uniform(0.5, 5.0, len(y)), rng.uniform(0.9, 1.1, len(y)))
    x = np.eye(3)[y] * length[:, None] + rng.normal(scale=0.02, size=(len(y), 3))
    return x.astype(np.float32), y


def test_unit_rows_have_length_one_and_a_zero_row_stays_zero():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [-1e-3, 0.0]], np.float32)
    np.testing.assert_allclose(centroids.unit_rows(x).numpy(), [[0.6, 0.8], [0, 0], [-1, 0]],
                               atol=1e-6)


def test_normalized_rows_cluster_by_direction_where_lengths_mislead_kmeans():
    from spectralnet_tf.metrics import acc

    x, y = _rays()
    assert acc(y, centroids.kmeans_labels(x, 3, seed=0)) < 0.9  # the construction's point
    labels = centroids.kmeans_labels(x, 3, seed=0, normalize_rows=True)
    assert acc(y, labels) == 1.0
    centers = centroids.fit_centroids(x, 3, seed=0, normalize_rows=True)
    np.testing.assert_array_equal(centroids.assign(x, centers, normalize_rows=True), labels)
    # Scaling a row does not move it to another cluster.
    scaled = x * np.random.default_rng(1).uniform(0.1, 10.0, (len(x), 1)).astype(np.float32)
    np.testing.assert_array_equal(centroids.assign(scaled, centers, normalize_rows=True), labels)


def test_normalized_rows_on_a_sample_assign_every_point_as_fitted(monkeypatch):
    x, _ = _rays()
    monkeypatch.setattr(centroids, "KMEANS_FIT_MAX", 400)
    monkeypatch.setattr(centroids, "ASSIGN_CHUNK", 333)
    labels, inertia = centroids.kmeans_labels_inertia(x, 3, seed=0, normalize_rows=True)
    model = centroids.kmeans(x, 3, seed=0, normalize_rows=True)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    want = ((unit - model.cluster_centers_[labels]) ** 2).sum()
    assert inertia == pytest.approx(float(want), rel=1e-4)
    np.testing.assert_array_equal(
        labels, centroids.assign(x, model.cluster_centers_.astype(np.float32), True))
