import numpy as np
import pytest
import scipy.sparse as sp

from spectralnet_tf.affinity import GaussianKNNAffinity
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.metrics import acc
from spectralnet_tf.spectral import (edge_purity, harmonic_labels, harmonic_scores,
                                     laplacian_matrix, poisson_labels, poisson_scores,
                                     refine, smallest_eigenvectors, spectral_clustering)


def test_exact_spectral_clustering_separates_nested_cs():
    x, y, k = load_dataset("cc")
    aff = GaussianKNNAffinity(n_nbrs=8, scale_nbr=2).fit(x, batch_size=1024)
    labels, vecs = spectral_clustering(x, k, aff)
    assert acc(y, labels) == 1.0
    assert vecs.shape == (len(x), 2)


@pytest.mark.parametrize("laplacian", ["unnormalized", "normalized"])
def test_eigenvectors_solve_the_laplacian(laplacian):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2)).astype(np.float32)
    w = GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, batch_size=200).graph(x)
    lap = laplacian_matrix(w, laplacian)
    vals, vecs = smallest_eigenvectors(lap, 3)
    np.testing.assert_allclose(lap @ vecs, vecs * vals, atol=1e-8)
    assert np.all(np.diff(vals) >= 0) and vals[0] == pytest.approx(0, abs=1e-8)
    full = np.linalg.eigvalsh(lap.toarray())
    np.testing.assert_allclose(vals, full[:3], atol=1e-8)


@pytest.mark.parametrize("laplacian", ["unnormalized", "normalized"])
def test_refine_carries_a_start_to_the_eigenvectors_and_never_away(laplacian):
    from spectralnet_tf.metrics import grassmann

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2)).astype(np.float32)
    w = GaussianKNNAffinity(n_nbrs=8, scale_nbr=3).fit(x, batch_size=300).graph(x)
    _, vecs = smallest_eigenvectors(laplacian_matrix(w, laplacian), 3)
    start = vecs + 0.3 * rng.normal(size=vecs.shape)
    distances = [grassmann(refine(w, start, laplacian, max_iter=t, tol=0.0), vecs)
                 for t in (0, 1, 2, 5, 20)]
    assert distances[0] == pytest.approx(grassmann(start, vecs)) and distances[0] > 0.1
    assert all(b <= a + 1e-12 for a, b in zip(distances, distances[1:]))
    q = refine(w, start, laplacian, max_iter=5000, tol=0.0)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-10)
    assert grassmann(q, vecs) < 1e-6


def _dense_and_lobpcg(monkeypatch, seed, n, n_nbrs, scale_nbr, k):
    """The Laplacian of a random kNN graph and its k eigenpairs from both solvers."""
    from spectralnet_tf import spectral

    x = np.random.default_rng(seed).normal(size=(n, 2)).astype(np.float32)
    w = GaussianKNNAffinity(n_nbrs=n_nbrs, scale_nbr=scale_nbr).fit(x, batch_size=n).graph(x)
    lap = laplacian_matrix(w)
    dense = smallest_eigenvectors(lap, k)
    monkeypatch.setattr(spectral, "DENSE_MAX_N", 10)
    return lap, dense, smallest_eigenvectors(lap, k)


def test_sparse_solver_matches_dense_solver(monkeypatch):
    _, (dense_vals, _), (sparse_vals, _) = _dense_and_lobpcg(monkeypatch, 1, 300, 10, 2, 3)
    np.testing.assert_allclose(sparse_vals, dense_vals, atol=1e-8)


def test_lobpcg_solver_matches_dense_eigenvectors_and_fails_if_unconverged(monkeypatch):
    from spectralnet_tf.metrics import grassmann

    lap, (dense_vals, dense_vecs), (vals, vecs) = _dense_and_lobpcg(monkeypatch, 2, 600, 15, 5, 4)
    np.testing.assert_allclose(vals, dense_vals, atol=1e-8)
    assert grassmann(vecs, dense_vecs) < 1e-8
    with pytest.raises(RuntimeError, match=r"did not converge in max_iter=1 iterations"):
        smallest_eigenvectors(lap, 4, max_iter=1)


def test_a_dense_laplacian_of_pieces_is_solved_by_lobpcg_as_densely(monkeypatch):
    """A graph too dense for shift-invert, of three pieces (a triple zero
    eigenvalue): LOBPCG above ``DENSE_EIGH_MAX_N`` rows finds the same
    eigenspace as dense ``eigh``, and an unconverged LOBPCG falls back to it."""
    from spectralnet_tf import spectral
    from spectralnet_tf.metrics import grassmann

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(size=(100, 2)) + c for c in ([0, 0], [20, 0], [0, 20])])
    w = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1) / 8.0) * (rng.uniform(size=(300, 300)) < 0.3)
    w = np.triu(w, 1) + np.triu(w, 1).T
    lap = laplacian_matrix(w, "normalized")
    assert sp.csr_matrix(lap).nnz > spectral.SPARSE_MAX_DENSITY * 300 ** 2
    vals, vecs = smallest_eigenvectors(lap, 4)  # dense eigh: 300 rows
    assert vals[:3] == pytest.approx(0, abs=1e-10) and vals[3] > 1e-3
    monkeypatch.setattr(spectral, "DENSE_EIGH_MAX_N", 100)
    lobpcg_vals, lobpcg_vecs = smallest_eigenvectors(lap, 4)
    np.testing.assert_allclose(lobpcg_vals, vals, atol=1e-8)
    assert grassmann(lobpcg_vecs, vecs) < 1e-8
    calls = []

    def unconverged(*args):
        calls.append(args)
        raise RuntimeError("The eigensolver did not converge")

    monkeypatch.setattr(spectral, "_lobpcg_smallest", unconverged)
    fallback_vals, _ = smallest_eigenvectors(lap, 4)
    assert len(calls) == 1
    np.testing.assert_allclose(fallback_vals, vals, atol=1e-12)


@pytest.mark.slow
def test_amg_preconditioned_lobpcg_finds_the_dense_eigenspace_and_honours_its_time_limit(
        monkeypatch):
    import spectralnet_tf.spectral as spectral
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.metrics import grassmann

    rng = np.random.default_rng(0)
    centers = np.array([[0, 0], [8, 0], [0, 8]], dtype=np.float32)
    x = (centers[rng.integers(0, 3, 3000)] + rng.normal(size=(3000, 2))).astype(np.float32)
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(x, 256)
    lap = spectral.laplacian_matrix(aff.graph(x, "exact"), "normalized")
    vals, vecs = spectral.smallest_eigenvectors(lap, 4)  # dense: 3,000 rows
    monkeypatch.setattr(spectral, "AMG_MIN_N", 1000)
    amg_vals, amg_vecs = spectral.smallest_eigenvectors(lap, 4)
    np.testing.assert_allclose(amg_vals, vals, atol=1e-5)
    assert grassmann(amg_vecs, vecs) < 1e-2
    with pytest.raises(spectral.EigensolverTimeout, match="time_limit=0.001"):
        spectral.amg_smallest(lap.tocsr(), 4, tol=1e-15, time_limit=0.001)


def test_harmonic_labels_follow_the_weak_edge_not_the_midpoint():
    # A chain 0-1-2-3-4-5 with unit weights but a weak edge (1, 2): the
    # harmonic function is the resistance distance from node 0 over the total,
    # f(1) = 1/104 and f(2) = 101/104, so the split is at the weak edge.
    w = np.zeros((6, 6))
    for i in range(5):
        w[i, i + 1] = w[i + 1, i] = 0.01 if i == 1 else 1.0
    assert harmonic_labels(w, [0, -1, -1, -1, -1, 1], 2).tolist() == [0, 0, 1, 1, 1, 1]


def _random_graph(seed, n=60):
    """A symmetric weighted graph on n nodes, about a fifth of the pairs joined."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(size=(n, n)) * (rng.uniform(size=(n, n)) < 0.2)
    return np.triu(w, 1) + np.triu(w, 1).T


def test_harmonic_labels_solve_the_clamped_laplacian_and_keep_the_given_labels():
    n, k = 60, 3
    w = _random_graph(0, n)
    labels = np.full(n, -1)
    labels[:9] = np.arange(9) % k
    got = harmonic_labels(sp.csr_matrix(w), labels, k)
    np.testing.assert_array_equal(harmonic_labels(w.astype(np.float32), labels, k), got)
    lap = np.diag(w.sum(1)) - w
    free, fixed = np.arange(9, n), np.arange(9)
    f = np.linalg.solve(lap[np.ix_(free, free)], -lap[np.ix_(free, fixed)] @ np.eye(k)[labels[:9]])
    assert got[:9].tolist() == labels[:9].tolist()
    np.testing.assert_array_equal(got[9:], f.argmax(1))
    # Labeled points keep their labels even where their neighbours disagree.
    flipped = labels.copy()
    flipped[0] = (labels[0] + 1) % k
    assert harmonic_labels(w, flipped, k)[0] == flipped[0]


def test_harmonic_labels_leave_unreached_components_unlabeled_and_refuse_no_labels():
    w = np.zeros((5, 5))
    w[0, 1] = w[1, 0] = w[3, 4] = w[4, 3] = 1.0  # {0, 1}, {2}, {3, 4}
    assert harmonic_labels(w, [1, -1, -1, -1, -1], 2).tolist() == [1, 1, -1, -1, -1]
    # A stored zero is no edge, and an edge given one way only counts both ways.
    stored = sp.csr_matrix((np.array([1.0, 0.0]), (np.array([0, 1]), np.array([1, 2]))), (5, 5))
    assert harmonic_labels(stored, [1, -1, -1, -1, -1], 2).tolist() == [1, 1, -1, -1, -1]
    with pytest.raises(ValueError, match=r"^partial_labels must label at least one point, got "
                                         r"only -1\.$"):
        harmonic_labels(w, [-1] * 5, 2)
    with pytest.raises(ValueError, match=r"partial_labels\[1\]=2"):
        harmonic_labels(w, [0, 2, -1, -1, -1], 2)


def test_harmonic_scores_are_the_walk_probabilities_and_nan_where_unreached():
    # The chain of the weak-edge test: the chance of reaching node 5 before
    # node 0 is the resistance from node 0 over the total, 104.
    w = np.zeros((7, 7))
    for i in range(5):
        w[i, i + 1] = w[i + 1, i] = 0.01 if i == 1 else 1.0
    f = harmonic_scores(w, [0, -1, -1, -1, -1, 1, -1], 2)  # node 6 is alone
    np.testing.assert_allclose(f[:6, 1], np.array([0, 1, 101, 102, 103, 104]) / 104)
    np.testing.assert_allclose(f[:6].sum(axis=1), 1.0)
    assert np.isnan(f[6]).all()
    assert harmonic_labels(w, [0, -1, -1, -1, -1, 1, -1], 2).tolist() == [0, 0, 1, 1, 1, 1, -1]


def test_poisson_scores_solve_the_centred_source_problem_with_zero_weighted_mean():
    # L u = b, with b the labeled points' one-hot classes less their mean,
    # and d^T u = 0: the solution the paper's iteration from zero reaches.
    n, k = 60, 3
    w = _random_graph(1, n)
    labels = np.full(n, -1)
    labels[:7] = [0, 1, 2, 0, 0, 1, 2]
    u = poisson_scores(w, labels, k)
    b = np.zeros((n, k))
    b[:7] = np.eye(k)[labels[:7]] - np.eye(k)[labels[:7]].mean(axis=0)
    np.testing.assert_allclose((np.diag(w.sum(1)) - w) @ u, b, atol=1e-10)
    np.testing.assert_allclose(w.sum(1) @ u, 0.0, atol=1e-10)
    np.testing.assert_allclose(poisson_scores(sp.csr_matrix(w.astype(np.float32)), labels, k), u,
                               atol=1e-5)
    got = poisson_labels(w, labels, k)
    np.testing.assert_array_equal(got[7:], u[7:].argmax(axis=1))
    # A labeled point keeps its label where u says otherwise: on the path
    # 0-1-2-3 labeled 1, 0, 1, 1, class 0 leads at node 0.
    path = np.diag(np.ones(3), 1) + np.diag(np.ones(3), -1)
    assert poisson_scores(path, [1, 0, 1, 1], 2)[0].argmax() == 0
    assert poisson_labels(path, [1, 0, 1, 1], 2).tolist() == [1, 0, 1, 1]


def test_poisson_scores_of_a_large_component_by_amg_conjugate_gradients(monkeypatch):
    # From ITERATIVE_SOLVE_MIN_N unknowns the grounded system is solved by
    # AMG-preconditioned CG: the same u as the sparse LU, to its tolerance.
    import spectralnet_tf.spectral as spectral

    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 4)).astype(np.float32)
    w = GaussianKNNAffinity(n_nbrs=8, scale_nbr=4, scale="local").fit(x, 600).graph(x, "exact")
    labels = np.full(600, -1)
    labels[:9] = np.arange(9) % 3
    direct = poisson_scores(w, labels, 3)
    monkeypatch.setattr(spectral, "ITERATIVE_SOLVE_MIN_N", 100)
    import pyamg

    built = []
    real = pyamg.smoothed_aggregation_solver
    monkeypatch.setattr(pyamg, "smoothed_aggregation_solver",
                        lambda a, **kw: built.append(a.shape) or real(a, **kw))
    u = poisson_scores(w, labels, 3)
    assert built == [(599, 599)]  # one component, grounded at one node
    lap = spectral.laplacian_matrix(sp.csr_matrix(w, dtype=np.float64))
    b = np.zeros((600, 3))
    b[:9] = np.eye(3)[labels[:9]] - 1 / 3
    assert np.linalg.norm(lap @ u - b) <= 1e-7 * np.linalg.norm(b)
    np.testing.assert_allclose(u, direct, atol=1e-6 * np.abs(direct).max())
    np.testing.assert_array_equal(poisson_labels(w, labels, 3)[9:], direct[9:].argmax(axis=1))
    # A solve that stops short of the tolerance says so, not a wrong u.
    monkeypatch.setattr(spectral, "ITERATIVE_SOLVE_TOL", 1e-30)
    with pytest.raises(RuntimeError, match=r"^AMG-preconditioned CG did not converge: relative "
                                           r"residual .* \(tol=1e-30\)\.$"):
        poisson_scores(w, labels, 3)


def test_poisson_scores_by_component_and_refusing_no_labels():
    w = np.zeros((7, 7))
    w[0, 1] = w[1, 2] = w[3, 4] = w[5, 6] = 1.0  # {0, 1, 2}, {3, 4}, {5, 6}
    w = w + w.T
    u = poisson_scores(w, [0, -1, 1, 1, -1, -1, -1], 2)
    np.testing.assert_allclose(u[:3, 0], [0.5, 0.0, -0.5])  # d = (1, 2, 1): centred
    np.testing.assert_allclose(u[3:5], [[0, 1], [0, 1]])  # one class: that class
    assert np.isnan(u[5:]).all()  # no label: no answer
    assert poisson_labels(w, [0, -1, 1, 1, -1, -1, -1], 2).tolist() == [0, 0, 1, 1, 1, -1, -1]
    with pytest.raises(ValueError, match=r"^partial_labels must label at least one point, got "
                                         r"only -1\.$"):
        poisson_scores(w, [-1] * 7, 2)
    # A class without a label in a component is never its answer there: the
    # middle of the path 0-1-2 labeled 1 and 2 is a tie at zero, which the
    # unlabeled class 0 would win at zero too.
    u = poisson_scores(w, [1, -1, 2, -1, -1, -1, -1], 3)
    assert np.isneginf(u[:3, 0]).all() and np.isfinite(u[:3, 1:]).all()
    assert poisson_labels(w, [1, -1, 2, -1, -1, -1, -1], 3)[:3].tolist() == [1, 1, 2]


def test_poisson_learning_keeps_the_classes_where_the_harmonic_function_flattens():
    # Two Gaussian blobs 3 apart in 5 dimensions, a 10-NN graph, one label in
    # one blob and four in the other: away from the labels the harmonic
    # function is near the labels' shares, and nearly every point goes to the
    # class with more labels. The centred sources of Poisson learning are
    # not swayed by the count; the Bayes rule scores Phi(1.5) here.
    from sklearn.neighbors import kneighbors_graph

    rng = np.random.default_rng(0)
    n = 500
    x = np.r_[rng.normal(size=(n, 5)), rng.normal(size=(n, 5)) + [3.0, 0, 0, 0, 0]]
    y = np.repeat([0, 1], n)
    w = kneighbors_graph(x, 10, mode="connectivity")
    labels = np.full(2 * n, -1)
    labels[[0, n, n + 1, n + 2, n + 3]] = [0, 1, 1, 1, 1]
    assert np.mean(harmonic_labels(w, labels, 2) == y) < 0.6
    assert np.mean(poisson_labels(w, labels, 2) == y) > 0.9


def test_edge_purity_is_each_points_weight_to_its_own_label():
    w = np.array([[1, 2, 0, 1], [2, 0, 3, 0], [0, 3, 0, 4], [1, 0, 4, 5.0]])
    # Row 0: weight 2 of 3 to its label (the self-loop left out); row 3: 4 of 5.
    want = [2 / 3, 2 / 5, 4 / 7, 4 / 5]
    np.testing.assert_allclose(edge_purity(w, [0, 0, 1, 1]), want)
    np.testing.assert_allclose(edge_purity(sp.csr_matrix(w), ["b", "b", "a", "a"]), want)
    assert np.isnan(edge_purity(np.eye(2), [0, 1])).all()  # no edges but self-loops
    # Row i's weights, not column i's: a directed graph is read by rows.
    np.testing.assert_allclose(edge_purity(np.array([[0, 1, 3], [0, 0, 2], [1, 0, 0.0]]),
                                           [0, 0, 1]), [1 / 4, 0, 0])
    with pytest.raises(ValueError, match=r"labels must have one entry per row of w \(4\), "
                                         r"got len\(labels\)=3\."):
        edge_purity(w, [0, 0, 1])
