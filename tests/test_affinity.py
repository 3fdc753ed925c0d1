import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf.affinity import FullGaussianAffinity, GaussianKNNAffinity


def _x(n=120, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("scale", ["global", "local"])
def test_knn_batch_affinity_equals_the_full_graph_on_the_same_points(scale):
    x = _x()
    aff = GaussianKNNAffinity(n_nbrs=6, scale_nbr=3, scale=scale).fit(x, batch_size=len(x))
    dense = aff(tf.constant(x)).numpy()
    sparse = aff.graph(x, neighbors="exact").toarray()
    np.testing.assert_allclose(dense, sparse, rtol=1e-4, atol=1e-6)


def test_knn_affinity_is_symmetric_with_zero_diagonal_and_k_edges():
    x = _x()
    aff = GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, batch_size=len(x))
    w = aff(tf.constant(x)).numpy()
    np.testing.assert_allclose(w, w.T)
    assert np.all(np.diag(w) == 0)
    # Before symmetrization each row has exactly n_nbrs edges, so after it
    # every row has at least 5 and the edge count is between 5n/2 and 5n.
    nnz = (w > 0).sum(1)
    assert nnz.min() >= 5
    assert 5 * len(x) / 2 <= (w > 0).sum() / 2 <= 5 * len(x)


def test_kernel_value_of_one_edge():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0]], dtype=np.float32)
    aff = GaussianKNNAffinity(n_nbrs=1, scale_nbr=1).fit(x, batch_size=4)
    # Nearest-neighbour distances 1, 1, 2, 4: the median scale is 1.5.
    assert aff.scale_ == pytest.approx(1.5)
    w = aff(tf.constant(x)).numpy()
    # 0->1 and 1->0 are both kNN edges: W = exp(-1 / (2 * 1.5^2)).
    assert w[0, 1] == pytest.approx(np.exp(-1 / 4.5), rel=1e-6)
    # 3->2 is an edge one way only: half the kernel after symmetrization.
    assert w[2, 3] == pytest.approx(0.5 * np.exp(-16 / 4.5), rel=1e-5)
    assert w[0, 3] == 0


def test_full_affinity_connects_all_pairs():
    x = _x(n=30)
    aff = FullGaussianAffinity(scale_nbr=2).fit(x, batch_size=30)
    w = aff.graph(x)
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    expected = np.exp(-d2 / (2 * aff.scale_**2))
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(w, expected, rtol=1e-4, atol=1e-6)


def double(z):
    return 2.0 * z


def test_embedding_function_is_applied_before_distances():
    x = _x(n=60)
    plain = GaussianKNNAffinity(n_nbrs=4, scale_nbr=2).fit(x, batch_size=60)
    embedded = GaussianKNNAffinity(n_nbrs=4, scale_nbr=2, embedding=double).fit(x, batch_size=60)
    assert embedded.scale_ == pytest.approx(2 * plain.scale_, rel=1e-5)
    # Scaling all distances and the scale by 2 leaves W unchanged.
    np.testing.assert_allclose(embedded(tf.constant(x)).numpy(), plain(tf.constant(x)).numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_nbrs=0), "n_nbrs=0"),
        (dict(scale_nbr=0), "scale_nbr=0"),
        (dict(scale="median"), "scale='median'"),
        (dict(n_nbrs=200), "batch_size=120"),
    ],
)
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GaussianKNNAffinity(**kwargs).fit(_x(), batch_size=120)


def test_labeled_pairs_get_one_or_zero_and_others_keep_the_kernel():
    from spectralnet_tf.affinity import apply_labels

    w = tf.constant(np.full((4, 4), 0.5) * (1 - np.eye(4)), tf.float32)
    labels = tf.constant([0, 0, 1, -1], tf.int64)
    got = apply_labels(w, labels).numpy()
    expected = np.array([[0, 1, 0, 0.5], [1, 0, 0, 0.5], [0, 0, 0, 0.5], [0.5, 0.5, 0.5, 0]])
    np.testing.assert_allclose(got, expected)
