"""The number of clusters from the data: the eigengap of the training graph.

``SpectralNet(n_clusters="auto")`` (or ``n_clusters=Eigengap(...)``) chooses k
before F_theta is built, from the graph its minibatches sample.

The rule is the eigengap heuristic (von Luxburg, "A tutorial on spectral
clustering", Statistics and Computing 2007, Sec. 8.3), with the gap measured
as a ratio: k is the index after which the eigenvalues of the normalized
Laplacian grow by the largest factor, ``argmax_k lambda_{k+1} / lambda_k``
over ``min_clusters <= k <= max_clusters``. The ratio is the quantity the
guarantees for spectral clustering are stated in: Peng, Sun and Zanetti
("Partitioning well-clustered graphs", COLT 2015) show that it recovers k
clusters when ``lambda_{k+1} / rho(k)`` is large, ``rho(k)`` being the
graph's k-way expansion, which lies between ``lambda_k / 2`` and a multiple
of ``sqrt(lambda_k)`` (higher-order Cheeger inequality, Lee, Oveis Gharan and
Trevisan, STOC 2012). A difference would not do on the kNN graphs SpectralNet
trains on: within a cluster their eigenvalues grow steadily, by more than the
step from the near-zero ones. Eigenvalues below ``EIGENVALUE_FLOOR`` (zeros:
separate components, up to rounding) count as that floor. The symmetric
normalized Laplacian ``I - D^-1/2 W D^-1/2`` is used whatever ``laplacian``
trains the net: its spectrum does not change with the kernel's scale or the
degrees.

A gap "stands out" when its logarithm is at least ``min_ratio`` times that of
the next largest in the range; otherwise the choice is a guess between the
two best candidates, and a warning names both.
"""

import time
import warnings

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator

from .affinity import sparse_graph
from .checks import check_int, check_real
from .spectral import laplacian_matrix, spectrum

#: Default for the largest k considered (the issue of users: "help me pick k").
MAX_CLUSTERS = 20
#: Points of the random subsample whose graph is solved exactly.
EIGENGAP_POINTS = 3000
#: A gap stands out at this many times the runner-up (in log units).
MIN_RATIO = 1.5
#: Eigenvalues below this are zeros (float64 solve of a float32 graph).
EIGENVALUE_FLOOR = 1e-6


class Eigengap(BaseEstimator):
    """Choose the number of clusters by the largest eigengap of the
    training graph's normalized Laplacian (module docstring).

    Parameters
    ----------
    max_clusters : int, default=20
        Largest k considered; needs ``max_clusters + 1`` eigenvalues.
    min_clusters : int, default=2
        Smallest k considered (1 would allow "no cluster structure").
    n_samples : int, default=3000
        The graph is that of a random subsample of this many training
        points (all of them if there are fewer), built as the graph the
        minibatches sample (``affinity.for_full_data``; with a local scale,
        its global-scale twin: ``sharp``), and solved exactly.
        A given graph (``PrecomputedAffinity``) is solved whole instead: a
        random subsample of a sparse graph falls apart.
    min_ratio : float, default=1.5
        The chosen gap stands out if its logarithm is at least this many
        times the second largest's; otherwise ``fit`` warns once, naming both candidates.

    Attributes
    ----------
    n_clusters_ : int
        The chosen k.
    eigenvalues_ : ndarray of shape (max_clusters + 1,)
        The smallest eigenvalues, ascending.
    gaps_ : ndarray of shape (max_clusters - min_clusters + 1,)
        ``log(eigenvalues_[k] / eigenvalues_[k - 1])`` (both at least
        ``EIGENVALUE_FLOOR``) for k = min_clusters .. max_clusters: the gap
        after the k-th eigenvalue.
    candidates_ : tuple of int
        The two k with the largest gaps, best first.
    distinct_ : bool
        Whether the best gap stood out (``min_ratio``).
    seconds_ : float
        Time to build the graph and solve for its spectrum.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from spectralnet_tf import Eigengap, GaussianKNNAffinity
    >>> x, _ = make_blobs(900, centers=4, cluster_std=0.5, random_state=0)
    >>> affinity = GaussianKNNAffinity().fit(x, batch_size=900)
    >>> Eigengap(max_clusters=10).fit(affinity, x, batch_size=900).n_clusters_
    4
    """

    def __init__(self, max_clusters=MAX_CLUSTERS, min_clusters=2, n_samples=EIGENGAP_POINTS,
                 min_ratio=MIN_RATIO):
        self.max_clusters = max_clusters
        self.min_clusters = min_clusters
        self.n_samples = n_samples
        self.min_ratio = min_ratio

    def check_params(self):
        """Raise a ValueError naming the first bad parameter."""
        check_int("min_clusters", self.min_clusters, 1)
        check_int("max_clusters", self.max_clusters, self.min_clusters + 1)
        check_int("n_samples", self.n_samples, self.max_clusters + 2)
        check_real("min_ratio", self.min_ratio, lambda v: 1 <= v < np.inf, "a number >= 1")


    #: Whether k is chosen from the data (``FixedClusters``: given).
    chooses = True

    def fit(self, affinity, z, batch_size, seed=0):
        """Choose k from the graph that ``affinity`` (fitted) samples over
        the points whose coordinates are ``z`` (``affinity.coordinates``),
        with minibatches of ``batch_size``. Returns self."""
        self.check_params()
        start = time.perf_counter()
        n = len(z)
        size = min(n, max(self.n_samples, batch_size))
        if size < self.max_clusters + 2:
            raise ValueError(f"n_clusters='auto' with max_clusters={self.max_clusters} needs at "
                             f"least {self.max_clusters + 2} points, got {n}.")
        if not affinity.subsampled:  # a given graph: a random part of it falls apart
            w = affinity.graph_of(z).astype(np.float64)
            values, _ = spectrum(w, self.max_clusters + 1, "normalized")
            self.eigenvalues_ = np.sort(values)
        else:
            rows = np.sort(np.random.default_rng(seed).choice(n, size, replace=False))
            coords, m = np.asarray(z)[rows], min(batch_size, size)
            w = sharp(affinity, coords, m, seed).sampled_graph(coords, m)
            # float64: near-degenerate small eigenvalues must not drown in float32
            # rounding. All eigenvalues of the dense matrix (divide and conquer)
            # take a fraction of the time of a subset of them, which bisects
            # clusters of near-equal values.
            lap = laplacian_matrix(sparse_graph(w), "normalized").toarray()
            self.eigenvalues_ = scipy.linalg.eigvalsh(lap, driver="evd")[:self.max_clusters + 1]
        self.seconds_ = time.perf_counter() - start
        ks = np.arange(self.min_clusters, self.max_clusters + 1)
        floored = np.maximum(self.eigenvalues_, EIGENVALUE_FLOOR)
        self.gaps_ = np.log(floored[ks] / floored[ks - 1])
        order = np.argsort(-self.gaps_, kind="stable")
        self.candidates_ = tuple(int(ks[i]) for i in order[:2])
        self.n_clusters_ = self.candidates_[0]
        best, runner_up = self.gaps_[order[0]], self.gaps_[order[1]]
        self.distinct_ = bool(best > 0 and best >= self.min_ratio * runner_up)
        if best <= 0:
            warnings.warn(
                f"n_clusters='auto': the graph falls into more than max_clusters="
                f"{self.max_clusters} pieces (its {self.max_clusters + 1} smallest eigenvalues "
                f"are all near 0), so no k up to {self.max_clusters} is told apart; chose "
                f"k={self.n_clusters_}. Raise max_clusters, or connect the graph.",
                UserWarning, stacklevel=3)
        elif not self.distinct_:
            warnings.warn(
                f"n_clusters='auto': no eigengap stands out (the largest, after eigenvalue "
                f"{self.candidates_[0]}, a factor {np.exp(best):.3g}, is under min_ratio="
                f"{self.min_ratio} times the next in log units, a factor {np.exp(runner_up):.3g} "
                f"after eigenvalue {self.candidates_[1]}); chose "
                f"k={self.n_clusters_}, the other candidate is k={self.candidates_[1]}. Pass "
                "n_clusters explicitly if you know it.", UserWarning, stacklevel=3)
        return self


def sharp(affinity, coords, batch_size, seed):
    """The affinity whose graph the eigengap is read on: ``affinity``, or
    with a local scale a copy with the global one, fitted on ``coords``
    (its coordinates). A local scale gives the rim of a group wide kernels
    that join it to the next group by weak edges; their small eigenvalues,
    of the size of a cluster's own smallest modes, blur the gap that
    separate groups make. The global scale leaves such groups apart."""
    if getattr(affinity, "scale", None) != "local":
        return affinity
    copy = type(affinity)(**{**affinity.get_params(deep=False), "scale": "global",
                             "embedding": None})
    return copy.fit(coords, batch_size, seed=seed)


class FixedClusters:
    """A given number of clusters, behind the interface ``Eigengap`` has:
    ``SpectralNet(n_clusters=k)`` holds one of these for the integer k."""

    chooses = False

    def __init__(self, n_clusters):
        self.max_clusters = self.n_clusters_ = n_clusters

    def check_params(self):
        pass

    def fit(self, affinity, z, batch_size, seed=0):
        return self
