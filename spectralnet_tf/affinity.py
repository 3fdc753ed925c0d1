"""Affinities: the graph W a minibatch trains on (paper Eq. 4), behind one base class.

``Affinity`` states the interface (its docstring); ``GaussianKNNAffinity``
(the paper's kNN graph), ``FullGaussianAffinity`` (all pairs) and
``PrecomputedAffinity`` (the user's own graph) implement it. Each is a
scikit-learn estimator in the ``get_params`` sense (``__init__`` only stores
its parameters; ``clone`` and ``set_params`` work, also nested in
``SpectralNet(affinity=...)``).

The kernel is ``exp(-||z_i - z_j||^2 / (2 s_i s_j))``: with ``scale="global"``
``s_i = s_j = scale_``, the median distance to the ``scale_nbr``-th neighbour
over random batch-sized samples (so the scale matches the neighbour distances
seen inside a minibatch); with ``scale="local"`` ``s_i`` is point i's own
distance to its ``scale_nbr``-th neighbour (self-tuning scale). Distances are
Euclidean on ``z = embedding(x)`` (the Siamese net) or on ``x`` itself.
W is symmetrized as ``(W + W.T) / 2`` and has a zero diagonal.

Under a ``tf.distribute`` strategy each replica builds only its own rows of
the global minibatch's W (``kernel_matrix``), so the O(m²) work is split over
the replicas; the neighbour thresholds, scales and nearest-neighbour indices
of the other rows, which the symmetrization needs, are all-gathered (O(m)
numbers).
"""


import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import tensorflow as tf
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator

from . import distribute
from .checks import Callable, Interval, Options, validate_params
from .neighbors import make_neighbors
from .sampling import subsample_size, uniform_subsample
from .streaming import map_batches

SCALES = ("global", "local")


#: An affinity below this share of the graph's largest is no edge (``pieces``):
#: a far point's Gaussian weight underflows to it long before it reaches 0.
EDGE_FLOOR = 1e-12


def piece_sizes(edges):
    """The sizes, largest first, of the connected components of the graph
    whose edges ``edges`` (sparse, symmetric) holds."""
    count, labels = connected_components(edges, directed=False)
    return np.sort(np.bincount(labels, minlength=count))[::-1]


class SubsampleGraph(NamedTuple):
    """The graph the minibatches sample (``Affinity.sampled_graph``) on a
    subsample of the training points: their ``rows`` and W (``sparse_graph``).
    Built once per fit: its pieces are counted (``Affinity.pieces``) and the
    warm start solves it."""
    rows: np.ndarray
    w: sp.csr_matrix

    def pieces(self):
        """The sizes, largest first, of W's pieces: no edge of weight above
        ``EDGE_FLOOR`` of the largest between them."""
        return piece_sizes(self.w > EDGE_FLOOR * self.w.max())


def sparse_graph(w):
    """The nonzero entries of a dense W (a tensor) as a scipy CSR matrix in
    float64, for the exact solvers and the graph's pieces: a kNN graph holds
    few of its pairs, and a dense float64 copy of it would cost more than
    the graph itself."""
    where = tf.where(tf.not_equal(w, 0.0))
    values = tf.gather_nd(w, where).numpy().astype(np.float64)
    where = where.numpy()
    return sp.csr_matrix((values, (where[:, 0], where[:, 1])), shape=tuple(w.shape))


def pairwise_sq_dists(z, rows=None, eye=None):
    """(m, m) squared Euclidean distances, exact zeros on the diagonal; with
    ``rows`` (r of the m points) and ``eye`` (their r rows of the m×m
    identity), the (r, m) distances of those rows to all points.

    The points are first moved so that the first lies at the origin: the
    expansion ``|a|^2 + |b|^2 - 2ab`` cancels in float32 when the points lie
    far from the origin (a feature such as a timestamp, offset by 1e6, leaves
    no significant digit of a neighbour's distance), and a distance does not
    change under a shift. Every replica of a distributed step shifts by the
    same point, the global minibatch's first."""
    centre = z[:1]
    z = z - centre
    sq = tf.reduce_sum(tf.square(z), axis=1)
    if rows is None:
        rows, sq_rows, eye = z, sq, tf.eye(tf.shape(z)[0], dtype=z.dtype)
    else:
        rows = rows - centre
        sq_rows = tf.reduce_sum(tf.square(rows), axis=1)
    d2 = sq_rows[:, None] + sq[None, :] - 2.0 * tf.matmul(rows, z, transpose_b=True)
    return tf.maximum(d2, 0.0) * (1.0 - eye)


def sorted_sq_dists(d2, n):
    """Each row's n+1 smallest squared distances, ascending (column 0 is self)."""
    return -tf.math.top_k(-d2, k=n + 1).values


def gaussian_kernel(d2, s_row, s_col):
    """``exp(-d2 / (2 s_row s_col))``; d2 broadcast against the scales."""
    return tf.exp(-d2 / (2.0 * s_row * s_col))


class Affinity(BaseEstimator):
    """The graph W whose Laplacian's eigenvectors F_theta learns.

    Every affinity has one interface, which ``SpectralNet`` and Algorithm 1
    use without knowing which they hold:

    - ``fit(z, batch_size, seed=0, graph=None)``: fit on the points ``z``
      (codes, with an encoder), e.g. a global scale; ``graph`` only for an
      affinity that ``takes_graph``;
    - ``coordinates(z, index)``: what ``kernel_matrix`` reads for the points
      ``z``, numbered ``index`` in the fit's X (their embedding, or their
      row numbers in a given graph), computed once before training;
    - ``kernel_matrix(coords)``: the dense W of a minibatch, inside the
      compiled training step;
    - ``for_full_data(n, batch_size)``: the affinity on all n points that
      minibatches of ``batch_size`` sample, ``sampled_graph(coords,
      batch_size)`` its dense W on a subsample, and ``subsample_graph(coords,
      batch_size, seed)`` that W on a random subsample, sparse, and
      ``pieces(coords, subsample)`` the sizes of the graph's pieces;
    - ``graph(z, neighbors)``: W over all the points (exact spectral
      clustering, the true eigenvectors), and ``full_graph(z, batch_size,
      max_edges)`` that of ``for_full_data``, within a budget of edges
      (``graph_edges``): what the training points' clusters are refined on;
    - ``n_neighbors_needed()`` and ``ranks()``: the neighbours a minibatch
      must hold, and the ranks that depend on the sample's density.

    Parameters are checked, in ``fit``, against ``_parameter_constraints``.
    """

    #: Whether ``fit`` takes the user's graph (``fit(X, graph=W)``).
    takes_graph = False
    #: Whether the graph of a random subsample stands for the graph (not for a
    #: sparse given graph, which falls apart; ``graph_of`` gives it whole).
    subsampled = True
    #: The default minibatch (None: ``SpectralNet``'s), clipped to the training points.
    batch_size = None
    _parameter_constraints = {}

    def check_params(self, batch_size=None):
        """Raise a ValueError naming the first bad parameter (and, given a
        ``batch_size``, refuse one too small for the neighbours needed)."""
        validate_params(self, self._parameter_constraints)
        if batch_size is not None and self.n_neighbors_needed() >= batch_size:
            raise ValueError(
                f"The affinity needs {self.n_neighbors_needed()} neighbours per point but a "
                f"minibatch has only {batch_size} points (batch_size={batch_size})."
            )

    def n_neighbors_needed(self):
        """How many neighbours (besides self) a batch must sort."""
        raise NotImplementedError

    def ranks(self):
        """The neighbour-rank parameters (name -> rank), the ones that depend
        on the sample density: ``for_full_data`` scales them, and a run's
        record names the exact reference's graph by them."""
        return {}

    def full_data_ranks(self, n_samples, batch_size):
        """The neighbour ranks of ``for_full_data(n_samples, batch_size)``
        (each rank scaled by n_samples / batch_size); needs no fitted scale."""
        if not 1 <= batch_size <= n_samples:
            raise ValueError(
                f"batch_size must be in [1, n_samples={n_samples}], got batch_size={batch_size}."
            )
        return {key: min(int(round(value * n_samples / batch_size)), n_samples - 1)
                for key, value in self.ranks().items()}

    def sampled_graph(self, coords, batch_size):
        """Dense W on the coordinates ``coords`` of a subsample, of the graph
        that minibatches of ``batch_size`` sample (``for_full_data`` at the
        subsample's size): what the warm start and the label targets solve."""
        return self.for_full_data(len(coords), batch_size).kernel_matrix(tf.constant(coords))

    def subsample_graph(self, coords, batch_size, seed=0):
        """The ``SubsampleGraph`` on a random subsample (sorted rows,
        ``sampling.subsample_size`` of them: all up to 4,096) of the points
        whose coordinates are ``coords``: the rows a warm start of the same
        seed draws without constraints (``constraints.subsample_rows``)."""
        rows = uniform_subsample(seed, len(coords), subsample_size(len(coords), batch_size))
        return SubsampleGraph(rows, sparse_graph(self.sampled_graph(np.asarray(coords)[rows],
                                                                    batch_size)))

    def pieces(self, coords, subsample):
        """The sizes, largest first, of the pieces (connected components) of
        the graph the minibatches sample on the points whose coordinates are
        ``coords``, counted on ``subsample``, their ``subsample_graph``."""
        del coords  # a random subsample's graph stands for the graph
        return subsample.pieces()

    def graph_edges(self, n_samples):
        """How many edges ``graph`` builds over ``n_samples`` points (each
        point's, before symmetrization): its cost."""
        raise NotImplementedError

    def full_graph(self, z, batch_size, max_edges=None):
        """W over all the points ``z`` of the graph that minibatches of
        ``batch_size`` sample (``for_full_data``), dense or sparse: the
        graph whose eigenvectors the net approximates. None where building
        it takes more than ``max_edges`` edges (``graph_edges``)."""
        full = self.for_full_data(len(z), batch_size)
        if max_edges is not None and full.graph_edges(len(z)) > max_edges:
            return None
        return full.graph(z)

    def __call__(self, x):
        """W of a minibatch of points x (their coordinates computed first)."""
        return self.kernel_matrix(tf.constant(self.coordinates(np.asarray(x, np.float32),
                                                               np.arange(len(x)))))


class GaussianAffinity(Affinity):
    """Shared part of the Gaussian affinities: embedding, scale, kernel.

    Parameters
    ----------
    scale_nbr : int, default=7
        The scale is the distance to this neighbour (per point, or median).
    scale : {"local", "global"}, default="local"
        "local": each point's own distance (self-tuning, Zelnik-Manor &
        Perona 2004), so that an outlier's edges keep weight and a sparse
        cluster is not cut apart; "global": one scale, the median over the
        data of that distance (the paper's). Both defaults, with the
        neighbours', were chosen on a development suite of data sets
        (``harness/defaults.py``).
    embedding : callable or None, default=None
        Distances are taken between ``embedding(x)`` (e.g. a Siamese net).
        Inside ``SpectralNet`` leave it None: the estimator's
        ``affinity_embedding`` sets it on the fitted copy ``affinity_``.
    n_scale_batches : int, default=10
        Random batches over which the global median is taken.

    Attributes
    ----------
    scale_ : float or None
        The fitted global scale (None with ``scale="local"``).
    """

    _parameter_constraints = {
        "scale_nbr": [Interval(numbers.Integral, 1, None, closed="left")],
        "scale": [Options(*SCALES)],
        "embedding": [None, Callable()],
        "n_scale_batches": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, scale_nbr=7, scale="local", embedding=None, n_scale_batches=10):
        self.scale_nbr = scale_nbr
        self.scale = scale
        self.embedding = embedding
        self.n_scale_batches = n_scale_batches

    def n_neighbors_needed(self):
        return self.scale_nbr

    # -- fitting -----------------------------------------------------------
    def embed(self, x):
        return x if self.embedding is None else self.embedding(x)

    def fit(self, z, batch_size, seed=0, graph=None):
        """Set ``scale_`` from random samples of ``batch_size`` points of z
        (in ``embedding``)."""
        del graph  # refused by SpectralNet: a Gaussian affinity builds its own
        self.check_params(batch_size)
        if self.scale == "local":
            self.scale_ = None
            return self
        rng = np.random.default_rng(seed)
        n = len(z)
        kth = []
        for _ in range(self.n_scale_batches if batch_size < n else 1):
            idx = rng.choice(n, size=min(batch_size, n), replace=False)
            coords = tf.constant(self.embed_all(np.asarray(z)[idx]))
            d2 = sorted_sq_dists(pairwise_sq_dists(coords), self.scale_nbr)
            kth.append(np.sqrt(d2[:, self.scale_nbr].numpy()))
        self.scale_ = float(np.median(np.concatenate(kth)))
        if not self.scale_ > 0:
            raise ValueError(
                "The median distance to the scale_nbr-th neighbour is 0 (many "
                f"duplicate points?); scale_nbr={self.scale_nbr} is too small."
            )
        return self

    def coordinates(self, z, index=None):
        """The embedding of the points z (their row numbers are not needed)."""
        return self.embed_all(z)

    def embedder(self):
        """The map from a point to the coordinates its distances are taken
        in (None: the point itself)."""
        return self.embedding

    def _scales(self, nbr_sq_dists):
        """Per-point scales (column vector) for the kernel."""
        if self.scale == "global":
            return tf.constant(self.scale_, tf.float32)
        return tf.sqrt(tf.maximum(nbr_sq_dists[:, self.scale_nbr], 1e-12))[:, None]

    def ranks(self):
        return {"scale_nbr": self.scale_nbr}

    def for_full_data(self, n_samples, batch_size):
        """The affinity on all ``n_samples`` points that minibatches sample.

        A point's j-th neighbour within a random minibatch of m points is, on
        average, its ``j N / m``-th neighbour among all N points. So the loss
        SpectralNet minimizes over minibatches is, approximately (a minibatch
        draws a soft boundary around that rank), that of the graph with every
        neighbour rank scaled by N / m; its Laplacian has the true eigenvectors
        the net approximates. The ``n_nbrs``-NN graph of all N points is far
        sparser and more local. The embedding and the fitted global scale carry
        over unchanged: the scale was measured on minibatch-sized samples.
        """
        if self.scale == "global" and not hasattr(self, "scale_"):
            raise ValueError(
                "for_full_data needs a fitted affinity with scale='global': its scale is "
                "measured on minibatch-sized samples. Call fit(x, batch_size) first."
            )
        full = type(self)(**{**self.get_params(deep=False),
                             **self.full_data_ranks(n_samples, batch_size)})
        if self.scale == "global":
            full.scale_ = self.scale_
        return full

    # -- affinity of a minibatch ------------------------------------------
    def embed_all(self, x):
        """The embedding of every row of x, once (numpy float32)."""
        return map_batches(self.embedder(), x)

    def kernel_matrix(self, z):
        """W of a minibatch from already-embedded points z (training uses this
        with ``embed_all`` computed once, not the embedding at every step).

        In a replica of a ``tf.distribute`` strategy, ``z`` is the whole
        global minibatch and the result is this replica's rows of W
        (``distribute.local_part``); see the module docstring."""
        if distribute.sharded():
            return self._kernel_rows(z)
        d2 = pairwise_sq_dists(z)
        nbr_d2 = sorted_sq_dists(d2, self.n_neighbors_needed())
        s = self._scales(nbr_d2)
        w = gaussian_kernel(d2, s, tf.transpose(s)) * self._mask(d2, nbr_d2)
        return 0.5 * (w + tf.transpose(w))

    def _kernel_rows(self, z):
        """This replica's rows i of W: ``(W̃_ij + W̃_ji) / 2``, where W̃_ji
        keeps j's own neighbour threshold, gathered from j's replica."""
        m = z.shape[0] or tf.shape(z)[0]
        eye = distribute.local_eye(m, z.dtype)
        d2 = pairwise_sq_dists(z, distribute.local_part(z), eye)
        nearest = tf.math.top_k(-d2, k=self.n_neighbors_needed() + 1)
        nbr_d2 = -nearest.values  # = sorted_sq_dists(d2, ...)
        s = self._scales(nbr_d2)
        s_cols = s if self.scale == "global" else tf.transpose(distribute.all_gather(s))
        kernel = gaussian_kernel(d2, s, s_cols) * (1.0 - eye)
        threshold = self._threshold(nbr_d2)
        if threshold is None:  # all pairs: already symmetric
            return kernel
        own = tf.cast(d2 <= threshold, d2.dtype)
        theirs = tf.cast(d2 <= tf.transpose(distribute.all_gather(threshold)), d2.dtype)
        # j's distances to i were rounded in j's block, not this one: j's
        # nearest neighbours (gathered indices) are i's edges either way.
        theirs = tf.maximum(theirs, _neighbour_of(
            distribute.all_gather(nearest.indices[:, :self.n_nbrs + 1]),
            distribute.local_part(tf.range(m)), d2.dtype))
        return 0.5 * kernel * (own + theirs)

    def _threshold(self, nbr_d2):
        """Each row's largest squared distance to a neighbour (a column), or
        None: every pair is an edge."""
        return None

    def _mask(self, d2, nbr_d2):
        return 1.0 - tf.eye(tf.shape(d2)[0], dtype=d2.dtype)


def _neighbour_of(indices, rows, dtype):
    """(len(rows), m): 1 at [i, j] where row j of ``indices`` (m, n) names
    point ``rows[i]`` (consecutive global indices), i.e. it is j's neighbour."""
    m, n = tf.shape(indices)[0], tf.shape(indices)[1]
    local = tf.reshape(indices, [-1]) - rows[0]
    cols = tf.repeat(tf.range(m), n)
    inside = tf.logical_and(local >= 0, local < tf.shape(rows)[0])
    where = tf.stack([tf.boolean_mask(local, inside), tf.boolean_mask(cols, inside)], axis=1)
    return tf.scatter_nd(where, tf.ones(tf.shape(where)[:1], dtype),
                         tf.stack([tf.shape(rows)[0], m]))


class FullGaussianAffinity(GaussianAffinity):
    """Gaussian affinity between all pairs of points (parameters as in
    ``GaussianAffinity``)."""

    def graph_edges(self, n_samples):
        return n_samples * (n_samples - 1)

    def graph(self, x, neighbors=None):
        """Dense (n, n) numpy W over all of x (for small n)."""
        return self.kernel_matrix(tf.constant(self.embed_all(x))).numpy()


class GaussianKNNAffinity(GaussianAffinity):
    """Gaussian affinity on the k-nearest-neighbour graph (paper Eq. 4).

    ``W_ij > 0`` only if j is among the ``n_nbrs`` nearest neighbours of i
    (before symmetrization).

    Parameters
    ----------
    n_nbrs : int, default=20
        Neighbours each point is connected to.
    scale_nbr, scale, embedding, n_scale_batches
        As in ``GaussianAffinity``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(100, 2)).astype("float32")
    >>> aff = GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, batch_size=100)
    >>> w = aff(x).numpy()
    >>> w.shape, bool(np.allclose(w, w.T))
    ((100, 100), True)
    """

    _parameter_constraints = {
        **GaussianAffinity._parameter_constraints,
        "n_nbrs": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, n_nbrs=20, scale_nbr=7, scale="local", embedding=None, n_scale_batches=10):
        super().__init__(scale_nbr, scale, embedding, n_scale_batches)
        self.n_nbrs = n_nbrs

    def n_neighbors_needed(self):
        return max(self.n_nbrs, self.scale_nbr)

    def ranks(self):
        return {"n_nbrs": self.n_nbrs, "scale_nbr": self.scale_nbr}

    def graph_edges(self, n_samples):
        return n_samples * min(self.n_nbrs, n_samples - 1)

    def _threshold(self, nbr_d2):
        # j is a neighbour of i if no farther than i's n_nbrs-th neighbour.
        return nbr_d2[:, self.n_nbrs][:, None]

    def _mask(self, d2, nbr_d2):
        within = d2 <= self._threshold(nbr_d2)
        return tf.cast(within, d2.dtype) * super()._mask(d2, nbr_d2)

    def graph(self, x, neighbors=None):
        """Sparse (n, n) scipy W over all of x, from a neighbour backend."""
        return self.coordinate_graph(self.embed_all(x), neighbors)

    def coordinate_graph(self, z, neighbors=None):
        """``graph`` from already-embedded points z (``embed_all``)."""
        backend = make_neighbors(neighbors or "auto", n_samples=len(z))
        dist, idx = backend.kneighbors(z, self.n_neighbors_needed())
        n = len(z)
        if self.scale == "global":
            s = np.full(n, self.scale_, dtype=np.float64)
        else:
            s = np.maximum(dist[:, self.scale_nbr - 1], 1e-6)
        rows = np.repeat(np.arange(n), self.n_nbrs)
        cols = idx[:, : self.n_nbrs].ravel()
        d2 = dist[:, : self.n_nbrs].ravel() ** 2
        vals = gaussian_kernel(d2, s[rows], s[cols]).numpy()
        w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
        return 0.5 * (w + w.T)


#: ``PrecomputedAffinity`` keeps point indices as float32 coordinates: exact below this.
MAX_PRECOMPUTED_POINTS = 1 << 24


def check_graph(graph, n_samples):
    """The user's graph over ``n_samples`` points as a float32 CSR matrix
    without its diagonal, or a ValueError that names what is wrong: not a
    matrix, the wrong shape, a NaN or inf, a negative weight, asymmetry,
    or a vertex without an edge to another point."""
    try:
        w = sp.csr_matrix(graph, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"graph must be a scipy.sparse matrix or a 2-D array, got "
                         f"{type(graph).__name__}: {err}") from None
    if w.shape != (n_samples, n_samples):
        raise ValueError(f"graph must have shape (n_samples, n_samples) = ({n_samples}, "
                         f"{n_samples}), one row and column per row of X, got graph.shape="
                         f"{w.shape}.")
    if n_samples > MAX_PRECOMPUTED_POINTS:
        raise ValueError(f"graph has {n_samples} points; affinity='precomputed' takes at most "
                         f"{MAX_PRECOMPUTED_POINTS}.")
    w.sum_duplicates()
    coo = w.tocoo()
    bad = ~np.isfinite(coo.data)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"graph has {int(bad.sum())} NaN or inf weights, e.g. "
                         f"graph[{coo.row[i]}, {coo.col[i]}]={coo.data[i]}.")
    if (coo.data < 0).any():
        i = int(np.argmax(coo.data < 0))
        raise ValueError(f"graph must be non-negative, got graph[{coo.row[i]}, {coo.col[i]}]="
                         f"{coo.data[i]} ({int((coo.data < 0).sum())} negative weights).")
    diff = abs(w - w.T).tocoo()
    tol = 1e-6 * max(float(np.abs(coo.data).max(initial=0.0)), np.finfo(np.float32).tiny)
    if diff.nnz and diff.data.max() > tol:
        i = int(np.argmax(diff.data))
        r, c = int(diff.row[i]), int(diff.col[i])
        raise ValueError(f"graph must be symmetric, got graph[{r}, {c}]={w[r, c]} but "
                         f"graph[{c}, {r}]={w[c, r]}.")
    w.setdiag(0.0)
    w.eliminate_zeros()
    isolated = np.flatnonzero(np.diff(w.indptr) == 0)
    if len(isolated):
        raise ValueError(f"graph has {len(isolated)} isolated vertices (no edge to another "
                         f"point), e.g. row {isolated[0]}; every point needs a neighbour.")
    w.sort_indices()
    return w.astype(np.float32)


class PrecomputedAffinity(Affinity):
    """The user's own graph W over the training points:
    ``SpectralNet(affinity="precomputed").fit(X, graph=W)``.

    A minibatch's affinity is W's submatrix on its points. Its coordinates
    are the points' row numbers in X, one float32 column (``coordinates``),
    so training gathers, shards and all-gathers them as it does any other
    coordinates. The submatrix is looked up in W's compressed rows:
    O(m log m + edges of the batch's rows) per minibatch, whatever n. A
    sparse W over n points keeps about ``degree * m / n`` of a point's edges
    in a minibatch of m: a minibatch large against n / degree keeps the
    graph connected.

    The diagonal of W (self loops) is ignored, as the Gaussian affinities
    have none. There are no parameters; ``fit`` takes the graph.

    Attributes
    ----------
    graph_ : scipy.sparse.csr_matrix of shape (n_samples, n_samples)
        The checked graph (float32, no diagonal).
    """

    takes_graph = True
    subsampled = False
    #: A minibatch keeps about m/n of a point's edges: the paper's 1,024 points,
    #: not the smaller default that a Gaussian graph, rebuilt in each batch, takes.
    batch_size = 1024
    embedding = None
    scale_ = None

    def graph_of(self, coords):
        """W's rows and columns of the points ``coords`` names (sparse CSR)."""
        rows = np.asarray(coords, np.float64)[:, 0].round().astype(np.int64)
        return self.graph_[rows][:, rows]

    def pieces(self, coords, subsample):
        """The sizes of the pieces of W on the points ``coords`` names, all
        of them, not on ``subsample``: a random part of a sparse graph falls
        apart."""
        del subsample
        w = self.graph_of(coords)
        return piece_sizes(w > EDGE_FLOOR * w.max())

    def n_neighbors_needed(self):
        """Every point of a minibatch needs another point beside it."""
        return 1

    def check_params(self, batch_size=None):
        """No parameters to check; a minibatch needs two points."""
        if batch_size is not None and batch_size < 2:
            raise ValueError(f"A minibatch needs two points, got batch_size={batch_size}.")

    def for_full_data(self, n_samples, batch_size):
        """The graph itself: minibatches sample W's submatrices, so W is the
        graph whose eigenvectors the net approximates."""
        return self

    def coordinates(self, z, index):
        """Each point's row number in X (and W), as a float32 column."""
        return np.asarray(index, np.float32)[:, None]

    def fit(self, z, batch_size, seed=0, graph=None):
        """Keep ``graph`` (checked by ``check_graph`` against the ``len(z)``
        points) for the minibatches."""
        del seed  # nothing random here
        self.check_params(batch_size)
        if graph is None:
            raise ValueError("affinity='precomputed' needs the graph: fit(X, graph=W).")
        self.graph_ = check_graph(graph, len(z))
        self._cols = tf.RaggedTensor.from_row_splits(
            tf.constant(self.graph_.indices, tf.int32), tf.constant(self.graph_.indptr, tf.int64))
        self._vals = tf.RaggedTensor.from_row_splits(
            tf.constant(self.graph_.data, tf.float32), tf.constant(self.graph_.indptr, tf.int64))
        return self

    def kernel_matrix(self, z):
        """W's submatrix on the points whose indices ``z`` holds (m, 1): (m, m),
        or, in a replica of a strategy, this replica's rows of it."""
        ids = tf.cast(tf.round(z[:, 0]), tf.int32)
        m = z.shape[0] or tf.shape(ids)[0]
        mine = distribute.local_part(ids)
        order = tf.argsort(ids)
        ids_sorted = tf.gather(ids, order)
        cols = tf.gather(self._cols, mine)
        vals = tf.gather(self._vals, mine).flat_values
        row_of = tf.cast(cols.value_rowids(), tf.int32)
        cols = cols.flat_values
        pos = tf.minimum(tf.searchsorted(ids_sorted, cols, out_type=tf.int32), tf.shape(ids)[0] - 1)
        inside = tf.equal(tf.gather(ids_sorted, pos), cols)
        where = tf.stack([tf.boolean_mask(row_of, inside),
                          tf.gather(order, tf.boolean_mask(pos, inside))], axis=1)
        w = tf.scatter_nd(where, tf.boolean_mask(vals, inside),
                          tf.stack([tf.shape(mine)[0], tf.shape(ids)[0]]))
        if isinstance(m, int) and mine.shape[0] is not None:
            w.set_shape([mine.shape[0], m])
        return w

    def graph(self, x=None, neighbors=None):
        """W over all the points it was fitted on (scipy CSR)."""
        return self.graph_

    def full_graph(self, z, batch_size, max_edges=None):
        """The given graph, whatever its size: it is built already."""
        return self.graph_


AFFINITIES = {"knn": GaussianKNNAffinity, "full": FullGaussianAffinity,
              "precomputed": PrecomputedAffinity}
