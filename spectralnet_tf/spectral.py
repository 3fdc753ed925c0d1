"""Exact spectral clustering, the reference SpectralNet approximates.

The k eigenvectors of the graph Laplacian with the smallest eigenvalues, from
a scipy eigensolver on the same affinity SpectralNet trains with, then
k-means on them (paper Appendix C).
"""

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


def smallest_eigenvectors(lap, k):
    """The k eigenvectors of a symmetric PSD matrix with smallest eigenvalues."""
    n = lap.shape[0]
    if n <= DENSE_MAX_N:
        vals, vecs = scipy.linalg.eigh(lap.toarray(), subset_by_index=[0, k - 1])
    else:
        # Shift-invert just below 0 (the Laplacian is PSD) finds the bottom.
        vals, vecs = scipy.sparse.linalg.eigsh(
            sp.csc_matrix(lap), k=k, sigma=-1e-3, which="LM"
        )
    order = np.argsort(vals)
    return vals[order], vecs[:, order]


def spectral_embedding(x, affinity, n_components, laplacian="unnormalized", neighbors=None):
    """True eigenvectors for x: (eigenvalues, (n, n_components) eigenvectors)."""
    w = affinity.graph(x, neighbors)
    return smallest_eigenvectors(laplacian_matrix(w, laplacian), n_components)


def spectral_clustering(x, n_clusters, affinity, laplacian="unnormalized",
                        neighbors=None, random_state=0):
    """Exact spectral clustering: returns (labels, eigenvectors)."""
    _, vecs = spectral_embedding(x, affinity, n_clusters, laplacian, neighbors)
    labels = KMeans(n_clusters, n_init=10, random_state=random_state).fit_predict(vecs)
    return labels, vecs
