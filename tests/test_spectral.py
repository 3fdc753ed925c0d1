import numpy as np
import pytest

from spectralnet_tf.affinity import GaussianKNNAffinity
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.metrics import acc
from spectralnet_tf.spectral import (laplacian_matrix, smallest_eigenvectors,
                                     spectral_clustering)


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
