"""Exact spectral clustering, the reference SpectralNet approximates.

The k eigenvectors of the graph Laplacian with the smallest eigenvalues, from
a scipy eigensolver on the same affinity SpectralNet trains with, then
k-means on them (paper Appendix C).
"""

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from sklearn.cluster import KMeans

from .losses import LAPLACIANS

#: Up to this many points the Laplacian is solved densely.
DENSE_MAX_N = 6000


def laplacian_matrix(w, laplacian="unnormalized"):
    """``D - W`` or ``I - D^-1/2 W D^-1/2`` (sparse in, sparse out)."""
    if laplacian not in LAPLACIANS:
        raise ValueError(f"laplacian must be one of {LAPLACIANS}, got laplacian={laplacian!r}.")
    w = sp.csr_matrix(w)
    d = np.asarray(w.sum(axis=1)).ravel()
    if laplacian == "unnormalized":
        return sp.diags(d) - w
    inv_sqrt = sp.diags(1.0 / np.sqrt(np.maximum(d, 1e-12)))
    return sp.identity(w.shape[0]) - inv_sqrt @ w @ inv_sqrt


def smallest_eigenvectors(lap, k, tol=1e-8, max_iter=1000):
    """The k eigenvectors of a symmetric PSD matrix with smallest eigenvalues.

    Dense ``eigh`` up to ``DENSE_MAX_N`` rows. Above, LOBPCG: it needs only
    products with ``lap``, so it handles the full-data graphs of
    ``Affinity.for_full_data`` (on MNIST: 70,000 points, 684 neighbours,
    58M nonzeros), whose factorization for shift-invert does not fit. Being a
    block method, it also finds repeated eigenvalues (a graph with several
    components). ``tol`` bounds the
    residual norms relative to ``2 max(diag)`` (>= the largest eigenvalue of a
    graph Laplacian, by Gershgorin); a result 1000 times worse is an error.
    """
    n = lap.shape[0]
    if n <= DENSE_MAX_N:
        vals, vecs = scipy.linalg.eigh(lap.toarray(), subset_by_index=[0, k - 1])
    else:
        vals, vecs = _lobpcg_smallest(sp.csr_matrix(lap), k, tol, max_iter)
    return vals, vecs  # ascending


def _lobpcg_smallest(lap, k, tol, max_iter):
    scale = 2.0 * lap.diagonal().max()
    # A few spare vectors speed convergence at the k-th eigenvalue. No Jacobi
    # preconditioner: on near-disconnected graphs it made LOBPCG fail.
    start = np.random.default_rng(0).normal(size=(lap.shape[0], k + max(4, k // 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # checked below, with a clearer message
        vals, vecs = scipy.sparse.linalg.lobpcg(
            lap, start, largest=False, tol=tol * scale, maxiter=max_iter
        )
    order = np.argsort(vals)[:k]
    vals, vecs = vals[order], vecs[:, order]
    residual = np.linalg.norm(lap @ vecs - vecs * vals, axis=0).max() / scale
    if residual > 1e3 * tol:
        raise RuntimeError(
            f"The eigensolver did not converge in max_iter={max_iter} iterations: "
            f"relative residual {residual:.1e} (tol={tol}); raise max_iter."
        )
    return vals, vecs


def spectral_clustering(x, n_clusters, affinity, laplacian="unnormalized",
                        neighbors=None, random_state=0):
    """Exact spectral clustering: returns (labels, eigenvectors)."""
    return cluster_graph(affinity.graph(x, neighbors), n_clusters, laplacian, random_state)


def laplacian_eigenvectors(w, k, laplacian="unnormalized"):
    """The k smallest eigenvectors of the Laplacian of ``w`` (dense or sparse)."""
    return smallest_eigenvectors(laplacian_matrix(w, laplacian), k)[1]


def cluster_graph(w, n_clusters, laplacian="unnormalized", random_state=0):
    """Exact spectral clustering of a given affinity matrix ``w`` (dense or
    sparse): k-means on its Laplacian's ``n_clusters`` smallest eigenvectors.
    Returns (labels, eigenvectors)."""
    vecs = laplacian_eigenvectors(w, n_clusters, laplacian)
    labels = KMeans(n_clusters, n_init=10, random_state=random_state).fit_predict(vecs)
    return labels, vecs
