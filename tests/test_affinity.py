import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from spectralnet_tf.affinity import (FullGaussianAffinity, GaussianKNNAffinity, pairwise_sq_dists,
                                     sparse_graph)


def _x(n=120, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("scale", ["global", "local"])
def test_knn_batch_affinity_equals_the_full_graph_on_the_same_points(scale):
    x = _x()
    aff = GaussianKNNAffinity(n_nbrs=6, scale_nbr=3, scale=scale).fit(x, batch_size=len(x))
    dense = aff(tf.constant(x)).numpy()
    sparse = aff.graph(x, neighbors="exact").toarray()
    np.testing.assert_allclose(dense, sparse, rtol=1e-4, atol=1e-6)


def test_distances_of_points_far_from_the_origin_keep_their_digits():
    # Points of spread ~1 offset by 1e6 (a timestamp-like feature). The float32
    # points are exactly representable in float64, and one point's offset
    # subtracted from another's is exact (Sterbenz), so the distances among the
    # float32 points are known to float64 precision; float32 arithmetic on the
    # shifted points must give them to ~1e-6 relative. The expansion
    # |a|^2 + |b|^2 - 2ab about the origin loses every digit here.
    far = (_x(40) + np.float32(1e6)).astype(np.float32)
    exact = ((far[:, None].astype(np.float64) - far[None]) ** 2).sum(-1)
    assert np.median(exact[exact > 0]) > 1.0  # the points do not collapse in float32
    np.testing.assert_allclose(pairwise_sq_dists(tf.constant(far)).numpy(), exact,
                               rtol=1e-5, atol=1e-5)
    rows = tf.constant(far[5:9])
    part = pairwise_sq_dists(tf.constant(far), rows, tf.constant(np.eye(40, dtype=np.float32)[5:9]))
    np.testing.assert_allclose(part.numpy(), exact[5:9], rtol=1e-5, atol=1e-5)


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


def test_sparse_graph_holds_exactly_the_dense_graph_in_float64():
    x = _x()
    w = GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, batch_size=len(x))(tf.constant(x))
    s = sparse_graph(w)
    assert s.format == "csr" and s.dtype == np.float64
    assert s.nnz == int(tf.math.count_nonzero(w))
    np.testing.assert_array_equal(s.toarray(), w.numpy().astype(np.float64))


def test_kernel_value_of_one_edge():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0]], dtype=np.float32)
    aff = GaussianKNNAffinity(n_nbrs=1, scale_nbr=1, scale="global").fit(x, batch_size=4)
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
    aff = FullGaussianAffinity(scale_nbr=2, scale="global").fit(x, batch_size=30)
    w = aff.graph(x)
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    expected = np.exp(-d2 / (2 * aff.scale_**2))
    np.fill_diagonal(expected, 0)
    np.testing.assert_allclose(w, expected, rtol=1e-4, atol=1e-6)


def double(z):
    return 2.0 * z


def test_embedding_function_is_applied_before_distances():
    x = _x(n=60)
    plain = GaussianKNNAffinity(n_nbrs=4, scale_nbr=2, scale="global").fit(x, batch_size=60)
    embedded = GaussianKNNAffinity(n_nbrs=4, scale_nbr=2, scale="global", embedding=double).fit(
        x, batch_size=60)
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
    from spectralnet_tf.constraints import apply_labels

    w = tf.constant(np.full((4, 4), 0.5) * (1 - np.eye(4)), tf.float32)
    labels = tf.constant([0, 0, 1, -1], tf.int64)
    got = apply_labels(w, labels).numpy()
    expected = np.array([[0, 1, 0, 0.5], [1, 0, 0, 0.5], [0, 0, 0, 0.5], [0.5, 0.5, 0.5, 0]])
    np.testing.assert_allclose(got, expected)


def test_full_data_affinity_scales_neighbour_ranks_and_keeps_the_scale():
    x = np.random.default_rng(0).normal(size=(5000, 2)).astype(np.float32)
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="global", embedding=np.abs)
    with pytest.raises(ValueError, match=r"needs a fitted affinity with scale='global'"):
        aff.for_full_data(5000, 500)
    aff.fit(x, batch_size=500)
    full = aff.for_full_data(5000, 500)  # factor 10
    assert (full.n_nbrs, full.scale_nbr, full.scale) == (100, 50, "global")
    assert full.scale_ == aff.scale_ and full.embedding is np.abs
    # Its graph connects each point to its 100 nearest (in |x|), with the batch scale.
    w = full.graph(x[:1000])
    assert (w > 0).sum(axis=1).min() >= 100
    dense = FullGaussianAffinity(scale_nbr=3, scale="local").for_full_data(5000, 500)
    assert dense.scale_nbr == 30 and not hasattr(dense, "scale_")
    with pytest.raises(ValueError, match=r"batch_size must be in \[1, n_samples=50\], got batch_size=64"):
        aff.for_full_data(50, 64)


def test_minibatch_neighbours_are_edges_of_the_full_data_graph():
    # The graph a random minibatch samples: a minibatch's kNN edges lie in the
    # scaled full-data graph, not in the plain n_nbrs-NN graph of all points.
    from sklearn.neighbors import NearestNeighbors

    n, m, k = 4000, 400, 5
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    aff = GaussianKNNAffinity(n_nbrs=k, scale_nbr=2).fit(x, batch_size=m)

    def edges(n_nbrs):
        idx = NearestNeighbors(n_neighbors=n_nbrs + 1).fit(x).kneighbors(x)[1][:, 1:]
        return {(i, j) for i, row in enumerate(idx) for j in row}

    full, plain = edges(aff.for_full_data(n, m).n_nbrs), edges(k)
    batch = rng.choice(n, m, replace=False)
    nbrs = NearestNeighbors(n_neighbors=k + 1).fit(x[batch]).kneighbors(x[batch])[1][:, 1:]
    sampled = [(batch[i], batch[j]) for i, row in enumerate(nbrs) for j in row]
    in_full = np.mean([e in full for e in sampled])
    in_plain = np.mean([e in plain for e in sampled])
    assert in_full > 0.75 and in_plain < 0.2, (in_full, in_plain)
    # And the scaled graph gives each minibatch point about k neighbours in it.
    in_batch = np.isin(np.array(sorted(full))[:, 1].reshape(n, -1)[batch], batch).sum(axis=1)
    assert abs(in_batch.mean() - k) < 0.5


def test_affinities_are_scikit_learn_estimators_whose_fit_sets_only_fitted_state():
    from sklearn.base import clone

    aff = GaussianKNNAffinity(n_nbrs=4, scale_nbr=2, scale="global")
    assert aff.get_params() == {"n_nbrs": 4, "scale_nbr": 2, "scale": "global", "embedding": None,
                                "n_scale_batches": 10}
    copy = clone(aff).set_params(n_nbrs=6)
    assert (copy.n_nbrs, aff.n_nbrs) == (6, 4)
    assert aff.ranks() == {"n_nbrs": 4, "scale_nbr": 2}
    assert FullGaussianAffinity(scale_nbr=5).ranks() == {"scale_nbr": 5}
    before = dict(vars(aff))
    aff.fit(_x(), batch_size=100)
    assert {k: v for k, v in vars(aff).items() if not k.endswith("_")} == before
    assert aff.scale_ > 0
    assert not hasattr(clone(aff), "scale_")  # a clone is unfitted


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_scale_batches=0), "n_scale_batches must be an integer >= 1, got n_scale_batches=0"),
    (dict(scale_nbr=2.5), "scale_nbr=2.5"),
    (dict(n_nbrs=True), "n_nbrs=True"),
    (dict(embedding="abs"), "embedding must be None or a callable, got embedding='abs'"),
])
def test_check_params_names_the_parameter_before_any_data(kwargs, match):
    with pytest.raises(ValueError, match=match):
        GaussianKNNAffinity(**kwargs).check_params()


@pytest.mark.parametrize("make, edges", [(lambda: GaussianKNNAffinity(n_nbrs=5, scale_nbr=2),
                                          200 * 20),
                                         (lambda: FullGaussianAffinity(scale_nbr=2), 200 * 199)])
def test_full_graph_is_the_full_data_graph_within_its_edge_budget(make, edges):
    """``full_graph`` builds the graph minibatches of 50 sample over all 200
    points (``for_full_data``): 200 x 20 neighbours' edges for the kNN graph,
    200 x 199 for all pairs; one edge over the budget, nothing is built."""
    x = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
    aff = make().fit(x, batch_size=50)
    full = aff.for_full_data(200, 50)
    assert full.graph_edges(200) == edges
    want = sp.csr_matrix(full.graph(x)).toarray()
    np.testing.assert_array_equal(sp.csr_matrix(aff.full_graph(x, 50, edges)).toarray(), want)
    np.testing.assert_array_equal(sp.csr_matrix(aff.full_graph(x, 50)).toarray(), want)
    assert aff.full_graph(x, 50, edges - 1) is None
