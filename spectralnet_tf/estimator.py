"""``SpectralNet``: the scikit-learn style estimator."""

import numbers
import os
import tempfile
import time
import warnings
from typing import NamedTuple

import numpy as np
import tensorflow as tf
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                          TransformerMixin)
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from . import distribute as dist
from .affinity import AFFINITIES, Affinity, check_graph
from .callbacks import Checkpoint, GrassmannMonitor, IterationCount, ProgressBar, TensorBoardLog
from .centroids import NORMALIZE_ROWS, assign, fit_centroids, kmeans_labels, unit_rows
from .checkpoint import Checkpointer, check_fingerprint, digest, fingerprint
from .checks import (Callable, HasMethods, InstanceOf, Interval, Options, Units, check_int,
                     validate_params)
from .constraints import GroupConstraint, LabelConstraint, check_partial_labels
from .export import export_saved_model, load_estimator, part_to_json, save_estimator
from .groups import check_groups, group_means
from .labelscores import label_coordinates
from .initializers import INITIALIZERS, RandomInit, SpectralInit, make_initializer
from .losses import LAPLACIANS
from .metrics import label_permutation
from .nclusters import Eigengap, FixedClusters
from .networks import (DTYPE_POLICIES, OUTPUT_ACTIVATIONS, build_spectralnet, compose_embedder,
                       input_scaling)
from .parts import PartsMixin, checked, unfitted_copy
from .schedule import Schedule, make_schedule
from .siamese import FixedEmbedding, SiameseEmbedding
from .spectral import refine
from .streaming import dataset_batches, dataset_rows, is_dataset, is_lazy, map_batches, spooled
from .summaries import write_phase_seconds
from .train import Config, Data, train_spectralnet

#: Default minibatch size, clipped to the training points (the paper's
#: MNIST: 1024): chosen with the other defaults on the development suite.
DEFAULT_BATCH_SIZE = 512
#: Fewest iterations per epoch when steps_per_epoch is None.
MIN_STEPS_PER_EPOCH = 10
#: hidden_units="auto": the width w by the input width d, as
#: ``(most features, w)`` bands, the last for any d; and the narrowest w.
AUTO_WIDTHS = ((32, 128), (256, 256), (None, 512))
MIN_AUTO_WIDTH = 32
#: ``hidden_units="auto"`` on the user's own graph (``affinity="precomputed"``;
#: None would be ``AUTO_WIDTHS``, as on points): one small hidden layer.
#: There the nodes' clusters come from the graph, and the net's one task is
#: to map a new node's features to them, which the graph, not the features,
#: defines: a net able to learn the training nodes by heart predicts new
#: nodes worse. Chosen on the development suite's block models
#: (``harness/defaults.py``).
GRAPH_HIDDEN_UNITS = (8,)
#: The training points' clusters come from the net's embedding refined on the
#: graph the minibatches sample, over all of X (``Affinity.full_graph``),
#: where that graph has at most this many edges: about 5,100 points at the
#: default graph and minibatch (its edges grow as n^2 / batch_size); above it,
#: from the embedding alone. A given graph is refined on whatever its size.
REFINE_MAX_EDGES = 1 << 20
#: SpectralNet's schedule by default (``schedule=None``), where ``Schedule``'s
#: own are the paper's plateau cuts: the convergence stop after 5 epochs
#: without a fall of 1% of the validation loss. The training points' clusters
#: come from the graph wherever it is small enough (``REFINE_MAX_EDGES``), and
#: the net's own clusters, which new points get, were as good by this stop as
#: by a patience of 10 and 0.1%, in less time a fit (``harness/defaults.py``,
#: stage 9).
SPECTRAL_SCHEDULE = {"patience": 5, "tol": 1e-2}


def check_array(X, name="X"):
    """float32 2-D finite array, or a ValueError naming what is wrong."""
    try:
        X = np.asarray(X, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array; got {type(X).__name__}: {err}") from err
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got an array with "
            f"ndim={X.ndim} and shape {X.shape}."
        )
    bad = ~np.isfinite(X)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} contains {int(bad.sum())} NaN or inf values, e.g. "
            f"{name}[{i}, {j}]={X[i, j]}."
        )
    return X


def check_rows(X, name="X"):
    """Like ``check_array``, but a row source on disk (``h5py.Dataset`` or
    ``streaming.Rows``) stays on disk: only its shape and dtype are checked
    here; its values are checked once encoded."""
    if not is_lazy(X):
        return check_array(X, name)
    if len(X.shape) != 2 or not np.issubdtype(X.dtype, np.number):
        raise ValueError(
            f"{name} must be a 2-D numeric data set (n_samples, n_features), got "
            f"shape {X.shape} and dtype {X.dtype}."
        )
    return X


#: The widest column's range (max - min) that float32 squared distances
#: hold: above ``SPREAD_MAX / sqrt(n_features)`` they overflow (3.4e38), below
#: ``SPREAD_MIN`` the nearest neighbours' underflow (1.2e-38) first.
SPREAD_MIN, SPREAD_MAX = 1e-15, 1e18


def check_spread(X):
    """A ValueError where X's values spread too far, or too little, for the
    graph's float32 squared distances (``SPREAD_MIN``, ``SPREAD_MAX``)."""
    X = np.asarray(X)  # float32 extremes are exact; only their difference needs float64
    spread = float((X.max(axis=0).astype(np.float64) - X.min(axis=0)).max(initial=0.0))
    limit = SPREAD_MAX / np.sqrt(X.shape[1])
    if spread > limit or 0 < spread < SPREAD_MIN:
        raise ValueError(
            f"X's widest column spans {spread:.3g} (max - min), outside what the graph's "
            f"float32 squared distances hold ({SPREAD_MIN:g} to {limit:.3g} for "
            f"{X.shape[1]} columns); rescale X, e.g. with sklearn's StandardScaler.")


def count_distinct_rows(X, at_most, chunk=4096):
    """How many distinct rows X has, counted up to ``at_most`` (a chunk at
    a time, so that a large X with many distinct rows is not read whole)."""
    seen = set()
    for start in range(0, len(X), chunk):
        block = np.ascontiguousarray(X[start:start + chunk])
        seen.update(map(bytes, block))
        if len(seen) >= at_most:
            break
    return min(len(seen), at_most)


#: A piece of the graph with fewer than this share of the points is an
#: outlier's: it takes a cluster of its own (``warn_of_pieces``).
SMALL_PIECE = 0.01


def warn_of_pieces(sizes, k):
    """Warn, in one line, where the graph falls into pieces that will take
    clusters of their own: more pieces than clusters, or a piece of outliers
    (under ``SMALL_PIECE`` of the points). ``sizes``: ``Affinity.pieces``."""
    sizes = np.asarray(sizes)
    if len(sizes) <= k and (len(sizes) == 1 or sizes[-1] >= SMALL_PIECE * sizes.sum()):
        return
    shown = ", ".join(str(int(s)) for s in sizes[:6]) + (", ..." if len(sizes) > 6 else "")
    warnings.warn(
        f"SpectralNet: the graph falls into {len(sizes)} pieces with no edge between them "
        f"({shown} of {int(sizes.sum())} points), and each takes a cluster of its own, so "
        f"n_clusters={k} cannot follow the data's groups: join the pieces with more neighbours "
        "(affinity__n_nbrs) or a local scale (affinity__scale='local'), or ask for as many "
        "clusters as pieces.", UserWarning, stacklevel=4)


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


def _seed(random_state):
    """The seed of the estimator's random streams. An integer seeds them
    directly (so a recorded seed keeps giving its recorded result); None or a
    RandomState goes through ``check_random_state`` (None: numpy's global
    RandomState) and one integer is drawn from it."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


class Plan(NamedTuple):
    """What ``SpectralNet.fit`` would train with on n points (``SpectralNet.plan``):
    every "auto" or None parameter resolved, the parts as unfitted objects."""

    n_val: int
    n_train: int
    batch_size: int
    steps_per_epoch: int
    max_epochs: int
    hidden_units: tuple
    affinity: object
    affinity_embedding: object
    n_clusters: object
    schedule: object


def auto_hidden_units(n_samples, n_features):
    """``hidden_units="auto"``: ``(w, w, w // 2)``. w follows the input width
    d (the encoder's output width, with an encoder), by the bands of
    ``AUTO_WIDTHS``, chosen with the other defaults on the development
    suite. It is then lowered to the power of two at or above n/4 (at
    least ``MIN_AUTO_WIDTH``), so that a few hundred points do not get a
    net of a million weights."""
    width = next(w for most, w in AUTO_WIDTHS if most is None or n_features <= most)
    width = min(width, max(MIN_AUTO_WIDTH, 1 << max(0, int(np.ceil(np.log2(n_samples / 4))))))
    return (width, width, width // 2)


def make_affinity(affinity, embedding=None):
    """An unfitted affinity object from ``SpectralNet``'s ``affinity``: a name
    ("knn", "full", "precomputed": the class with its defaults) or a copy of
    an ``Affinity``, with ``embedding`` set when one is given."""
    part = AFFINITIES[affinity]() if isinstance(affinity, str) else unfitted_copy(affinity)
    if embedding is not None:
        part.set_params(embedding=embedding)
    return part


def make_affinity_embedding(embedding):
    """``SpectralNet``'s ``affinity_embedding`` as ``fit`` uses it: None, an
    unfitted ``SiameseEmbedding`` ("siamese": the defaults; an object: a
    copy), or a ``FixedEmbedding`` of a callable."""
    if embedding is None:
        return None
    if isinstance(embedding, str):
        return SiameseEmbedding()
    if isinstance(embedding, BaseEstimator):
        return unfitted_copy(embedding)
    return FixedEmbedding(embedding)


def make_spectral_schedule(schedule):
    """SpectralNet's unfitted ``Schedule``: ``SPECTRAL_SCHEDULE`` for None,
    else a copy of the object."""
    return make_schedule(schedule, **SPECTRAL_SCHEDULE)


def make_n_clusters(n_clusters):
    """``SpectralNet``'s ``n_clusters`` as ``fit`` uses it: a chooser of k,
    ``FixedClusters`` for an int, an unfitted ``Eigengap`` ("auto": the
    defaults; an object: a copy)."""
    if isinstance(n_clusters, str):
        return Eigengap()
    if isinstance(n_clusters, BaseEstimator):
        return unfitted_copy(n_clusters)
    return FixedClusters(n_clusters)


_POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")


class SpectralNet(PartsMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                  BaseEstimator):
    """Spectral clustering with a deep network (Shaham et al., ICLR 2018).

    A network F_theta maps each point to the k smallest eigenvectors of the
    graph Laplacian of the data, trained by the paper's Algorithm 1 on random
    minibatches. k-means on the embedding's unit-length rows gives the
    clusters (on a graph small enough to build whole, or given, on the
    embedding refined on the graph); a new point goes through the net to the
    nearest centroid. The
    parts (``GaussianKNNAffinity``, ``SiameseEmbedding``, ``Eigengap``,
    ``Schedule``) take nested keys (``set_params(affinity__n_nbrs=5)``), which replace the part
    by a copy. docs/python.md explains each parameter; docs/training.md, training.

    Parameters
    ----------
    n_clusters : int, "auto" or Eigengap, default=2
        k, also the embedding's width; "auto" or an ``Eigengap``: chosen in
        ``fit`` by the training graph's largest eigengap (``n_clusters_``).
    hidden_units : tuple of int or "auto", default="auto"
        ReLU layers of F_theta, before a size-k layer and Orthonorm; "auto":
        ``(w, w, w/2)``, w from the input width and n (``auto_hidden_units``),
        and ``GRAPH_HIDDEN_UNITS`` on a given graph.
    output_activation : {"tanh", "linear"}, default="tanh"
        Activation of the size-k layer ("tanh": the paper's Table 3).
    affinity : {"knn", "full", "precomputed"} or Affinity, default="knn"
        The graph a minibatch trains on: ``GaussianKNNAffinity()``,
        ``FullGaussianAffinity()``, or the user's own, ``fit(X, graph=W)``.
        An object is copied, never fitted itself (``affinity_``).
    laplacian : {"normalized", "unnormalized"}, default="normalized"
        ``I - D^-1/2 W D^-1/2`` (paper Eq. 5) or ``D - W`` (Eq. 3).
    batch_size : int or None, default=None
        Points in a minibatch (gradient and orthogonalization steps alike);
        None: min(512, n_train), with a given graph min(1024, n_train).
    schedule : Schedule or None, default=None
        The learning rate and the stops (``Schedule``); None:
        ``Schedule(**SPECTRAL_SCHEDULE)``, RMSprop from 1e-3, cut 10-fold
        after 5 epochs without a lower validation loss, stopped once 5 epochs
        in a row lowered it by less than 1%. A ``Schedule`` given here has
        its own defaults, the paper's patience of 10 among them.
    init : {"spectral", "random"}, SpectralInit or RandomInit, default="spectral"
        F_theta fitted first to the exact eigenvectors of a subsample's graph
        (``initializers.SpectralInit``), or Glorot weights (the paper's). The
        defaults of the graph, the Laplacian, the start, the stop and the
        minibatch were chosen by a stated rule on a development suite of data
        sets (``harness/defaults.py``).
    dtype_policy : {"float32", "mixed_bfloat16", "auto"}, default="float32"
        The ReLU layers' Keras policy; "auto": bfloat16 where the hardware has it.
    validation_fraction : float, default=0.1
        The share of X held out for the validation loss.
    label_weight : float, default=1.0
        With ``partial_labels``: the label term's weight in the loss; 0: none.
    labeled_share : float, default=0.0
        With ``partial_labels``: the share of each minibatch drawn from them.
    group_weight : "balanced" or float, default="balanced"
        With ``groups``: the affinity of a pair of one group; "balanced": the
        weight that makes their loss term equal the rest at initialisation.
    affinity_embedding : None, "siamese", SiameseEmbedding or callable, default=None
        The affinity's distance: Euclidean (None), a Siamese net trained first
        (paper Sec. 3.2), or a fixed callable (e.g. a trained Keras model).
    encoder : keras.Model or None, default=None
        A fixed map to a code space that everything trains on; ``model_``,
        ``predict`` and the exports take raw input.
    checkpoint_dir : str or None, default=None
        Checkpoint each epoch there (atomically); ``fit(..., resume=True)``.
    log_dir : str or None, default=None
        TensorBoard curves of both trainings, and each phase's seconds.
    distribute : tf.distribute.Strategy or None, default=None
        Data-parallel training on this strategy's replicas (docs/distributed.md).
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the scale, the weights, the minibatches and k-means.
    verbose : int, default=0
        0: silent; 1: a progress bar over epochs.

    Attributes
    ----------
    n_clusters_ : int
        The number of clusters: ``n_clusters``, or the one it chose.
    eigenvalues_ : ndarray of shape (max_clusters + 1,)
        Only with an ``Eigengap``: the spectrum it chose k from.
    model_ : keras.Model
        The trained embedder F_theta, raw input to embedding, ending in Orthonorm.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        F_theta of the training data.
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training point; after a semi-supervised fit, in the
        classes of ``partial_labels``. Without labels or groups, on a graph
        of at most ``REFINE_MAX_EDGES`` edges or a given one, the clusters of
        the embedding refined on that graph, which may differ from
        ``predict(X)``, the net's own clusters of X.
    group_labels_ : ndarray of shape (n_samples,) or None
        After ``fit(X, groups=...)``: each group's cluster, by its mean row.
    cluster_centers_ : ndarray of shape (n_clusters, n_clusters)
        k-means centroids of the embedding's unit-length rows (where
        ``labels_`` are refined on the graph, each cluster's mean
        unit-length row).
    normalize_rows_ : bool
        Whether the centroids are of unit-length rows (every fit's are).
    affinity_ : Affinity
        The fitted copy of ``affinity``.
    label_check_ : dict or None
        After a semi-supervised fit: whether the labels' classifier reshaped
        the graph, and the held-out accuracies that decided it.
    affinity_embedding_ : SiameseEmbedding, FixedEmbedding or None
        The fitted copy of ``affinity_embedding``.
    history_ : dict
        Per epoch "loss", "val_loss", "lr", "epoch_seconds" and more;
        "seconds", "stopped_by"; the warm start's values.
    codes_ : ndarray or None
        The encoder's output for the training data (None without an encoder).
    siamese_ : keras.Model
        With a ``SiameseEmbedding``: the trained net (``siamese_history_``).
    n_features_in_, feature_names_in_ : int, ndarray of str
        As in scikit-learn (names only from a DataFrame with string columns).

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from spectralnet_tf import GaussianKNNAffinity, SpectralNet
    >>> X, y = make_moons(1000, noise=0.05, random_state=0)
    >>> net = SpectralNet(n_clusters=2, random_state=0)
    >>> labels = net.fit(X).labels_        # doctest: +SKIP
    >>> net.set_params(affinity=GaussianKNNAffinity(n_nbrs=30)).affinity.n_nbrs
    30
    """

    _parameter_constraints = {
        "n_clusters": [_POSITIVE_INT, "auto", Eigengap],
        "hidden_units": ["auto", Units()],
        "output_activation": [Options(*OUTPUT_ACTIVATIONS)],
        "affinity": [Options(*AFFINITIES), Affinity],
        "laplacian": [Options(*LAPLACIANS)],
        "batch_size": [None, _POSITIVE_INT],
        "schedule": [None, Schedule],
        "init": [Options(*INITIALIZERS), SpectralInit, RandomInit],
        "dtype_policy": [Options(*DTYPE_POLICIES)],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "label_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "labeled_share": [Interval(numbers.Real, 0, 1, closed="both")],
        "group_weight": ["balanced", Interval(numbers.Real, 0, None, closed="neither")],
        "affinity_embedding": [None, "siamese", SiameseEmbedding, Callable()],
        "encoder": [None, HasMethods("predict")],
        "checkpoint_dir": [None, InstanceOf((str, os.PathLike), "a path")],
        "log_dir": [None, InstanceOf((str, os.PathLike), "a path")],
        "distribute": [None, InstanceOf(tf.distribute.Strategy, "a tf.distribute.Strategy")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left"),
                         np.random.RandomState],
        "verbose": [bool, Interval(numbers.Integral, 0, None, closed="left")],
    }

    def __init__(
        self,
        n_clusters=2,
        *,
        hidden_units="auto",
        output_activation="tanh",
        affinity="knn",
        laplacian="normalized",
        batch_size=None,
        schedule=None,
        init="spectral",
        dtype_policy="float32",
        validation_fraction=0.1,
        label_weight=1.0,
        labeled_share=0.0,
        group_weight="balanced",
        affinity_embedding=None,
        encoder=None,
        checkpoint_dir=None,
        log_dir=None,
        distribute=None,
        random_state=None,
        verbose=0,
    ):
        self.n_clusters = n_clusters
        self.hidden_units = hidden_units
        self.output_activation = output_activation
        self.affinity = affinity
        self.laplacian = laplacian
        self.batch_size = batch_size
        self.schedule = schedule
        self.init = init
        self.dtype_policy = dtype_policy
        self.validation_fraction = validation_fraction
        self.label_weight = label_weight
        self.labeled_share = labeled_share
        self.group_weight = group_weight
        self.affinity_embedding = affinity_embedding
        self.encoder = encoder
        self.checkpoint_dir = checkpoint_dir
        self.log_dir = log_dir
        self.distribute = distribute
        self.random_state = random_state
        self.verbose = verbose

    #: Parameters that hold a part (nested keys), and how each value makes one.
    _parts = {"affinity": make_affinity, "affinity_embedding": make_affinity_embedding,
              "n_clusters": make_n_clusters, "schedule": make_spectral_schedule,
              "init": make_initializer}

    # ------------------------------------------------------------------ fit
    def make_affinity(self, embedding=None):
        """A new unfitted affinity object from the ``affinity`` parameter,
        with ``embedding`` as its distance's embedding when given."""
        return make_affinity(self.affinity, embedding)

    def plan(self, n_samples, n_features):
        """Check the parameters against n points of ``n_features`` input
        features (the encoder's input, with an encoder) and resolve what they
        leave to ``fit``: the hold-out, the batch sizes, the steps per epoch,
        the epoch cap and the net. Returns a ``Plan``; raises the ValueError
        that ``fit`` would, before any work."""
        validate_params(self, self._parameter_constraints)
        n = n_samples
        chooser, affinity, embedding, schedule = self._make_parts(n)
        needed = affinity.n_neighbors_needed()
        ranks = ", ".join(f"{key}={value}" for key, value in affinity.ranks().items())
        # The validation hold-out is one minibatch at least: its affinity
        # needs the neighbours too (this matters for small data only).
        n_val = max(needed + 1, int(round(self.validation_fraction * n)))
        n_train = n - n_val
        if n_train <= needed:
            raise ValueError(
                f"The affinity needs {needed} neighbours per point ({ranks}) in a minibatch "
                f"and in the validation hold-out of {n_val} points, so more than "
                f"{n_val + needed} points; got n_samples={n}. Lower them or give more data.")
        k = chooser.max_clusters
        batch_size = self._check_batch("batch_size", self.batch_size, n_train, n, k,
                                       affinity.batch_size or DEFAULT_BATCH_SIZE)
        if batch_size <= needed:  # fail now, not after Siamese training
            raise ValueError(
                f"The affinity needs {needed} neighbours per point ({ranks}) but a minibatch "
                f"has batch_size={batch_size} points; lower them or raise batch_size.")
        steps, epochs = schedule.budget(max(n_train // batch_size, MIN_STEPS_PER_EPOCH))
        if _is_auto(self.hidden_units) and affinity.takes_graph and GRAPH_HIDDEN_UNITS:
            units = tuple(GRAPH_HIDDEN_UNITS)
        elif _is_auto(self.hidden_units):  # the encoder's output width, with an encoder
            units = auto_hidden_units(n, n_features if self.encoder is None
                                      else int(self.encoder.output_shape[-1]))
        else:
            units = tuple(self.hidden_units)
        return Plan(n_val, n_train, batch_size, steps, epochs, units, affinity, embedding, chooser,
                    schedule)

    def _make_parts(self, n):
        """The unfitted parts (k's chooser, the affinity, the learned
        distance), each checked, and checked against n points and the
        strategy; a ValueError naming the parameter otherwise."""
        chooser = checked("n_clusters", self.n_clusters, make_n_clusters(self.n_clusters))
        k = chooser.max_clusters
        if n < k:
            raise ValueError(f"X has n_samples={n}, fewer than n_clusters={self.n_clusters!r}"
                             + ("" if k == self.n_clusters else f" (max_clusters={k})") + ".")
        affinity = checked("affinity", self.affinity, self.make_affinity())
        embedding = make_affinity_embedding(self.affinity_embedding)
        self._check_embedding(affinity, embedding)
        schedule = checked("schedule", self.schedule, make_spectral_schedule(self.schedule))
        checked("init", self.init, make_initializer(self.init))
        if (isinstance(self._strategy(), tf.distribute.MultiWorkerMirroredStrategy)
                and not isinstance(self.random_state, numbers.Integral)):
            raise ValueError(
                "Under a multi-worker strategy every worker must draw the same split and "
                "minibatches: random_state must be an int, got "
                f"random_state={self.random_state!r}.")
        return chooser, affinity, embedding, schedule

    def _check_embedding(self, affinity, embedding):
        """The learned distance and the affinity agree, or a ValueError."""
        if embedding is None:
            return
        if affinity.embedding is not None:
            raise ValueError(
                "affinity has an embedding of its own and affinity_embedding is set too; set "
                f"one of them, got affinity={self.affinity!r} and "
                f"affinity_embedding={self.affinity_embedding!r}.")
        if affinity.takes_graph:
            raise ValueError(
                "affinity='precomputed' takes the graph as given; a learned distance does not "
                f"apply to it: set affinity_embedding=None, got affinity_embedding="
                f"{self.affinity_embedding!r}.")
        checked("affinity_embedding", self.affinity_embedding, embedding, self._strategy())

    def _check_batch(self, name, value, n_train, n, k, default):
        if value is None:  # rounded down to equal shards under a strategy
            return dist.round_to_shards(min(default, n_train), self._strategy())
        check_int(name, value, k)
        dist.check_divisible(name, value, self._strategy())
        if value > n_train:
            raise ValueError(
                f"{name}={value} is larger than the {n_train} training points "
                f"(n_samples={n} minus the validation_fraction="
                f"{self.validation_fraction} hold-out).")
        return value

    def fit(self, X, y=None, *, partial_labels=None, groups=None, eigvecs=None, resume=False,
            graph=None):
        """Train F_theta on X and cluster its embedding.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Or an ``h5py.Dataset`` / ``streaming.Rows`` on disk (with an
            ``encoder`` streamed through it a chunk at a time), or a
            ``tf.data.Dataset`` of rows or batches of rows, read once.
        y : None
            Ignored, as by every scikit-learn clusterer.
        partial_labels : array-like of shape (n_samples,), optional
            Semi-supervised labels: a cluster in ``[0, n_clusters)`` for the
            labeled points, -1 for the others (``constraints.LabelConstraint``;
            they also enrich the Siamese pairs, paper Sec. 5.3).
        groups : array-like of int of shape (n_samples,), optional
            Points known to be views of one item share an id (must-link,
            without a class; ``constraints.GroupConstraint``).
            ``group_labels_`` then gives each group one cluster.
        eigvecs : array of shape (n_samples, n_clusters), optional
            The true Laplacian eigenvectors of X: the history records the
            Grassmann distance to them after each epoch.
        resume : bool, default=False
            Continue from the checkpoints in ``checkpoint_dir`` (the same X,
            labels and parameters); without it, existing checkpoints are an
            error, never silently reused.
        graph : sparse matrix or array of shape (n_samples, n_samples), optional
            With ``affinity="precomputed"`` only: the affinity between the
            rows of X, symmetric and non-negative (``affinity.check_graph``).

        Returns
        -------
        self
        """
        # A failed fit keeps the input width of the model it leaves in place.
        before = {k: self.__dict__[k] for k in ("n_features_in_", "feature_names_in_")
                  if k in self.__dict__}
        try:
            if is_dataset(X) and self.encoder is not None:
                # Streamed through the encoder as an HDF5 file is: spooled to disk first.
                with tempfile.TemporaryDirectory() as folder, spooled(X, folder) as rows:
                    return self._fit(rows, partial_labels, groups, eigvecs, resume, graph)
            return self._fit(X, partial_labels, groups, eigvecs, resume, graph)
        except BaseException:
            for key in ("n_features_in_", "feature_names_in_"):
                self.__dict__.pop(key, None)
            self.__dict__.update(before)
            raise

    def _fit(self, X, partial_labels, groups, eigvecs, resume, graph):
        X = self._validate_X(X, reset=True)
        if self.encoder is None and is_lazy(X):
            X = check_array(map_batches(None, X))  # trained on in memory
        plan = self.plan(len(X), X.shape[1])
        labels, groups, graph = self._check_fit_inputs(X, plan, partial_labels, groups, eigvecs,
                                                       graph)
        for stale in ("siamese_", "siamese_history_", "eigenvalues_", "n_clusters_chooser_"):
            self.__dict__.pop(stale, None)
        self._check_log_dir()
        checkpointers = self._checkpointers(resume, lambda: fingerprint(
            X, self._fingerprint_params(), partial_labels=None if partial_labels is None else labels,
            groups=groups,
            graph=None if graph is None else np.r_[graph.indptr, graph.indices, graph.data]))
        seeds = np.random.default_rng(_seed(self.random_state)).integers(0, 2**31 - 1, size=5)
        split_seed, scale_seed, net_seed, train_seed, siamese_seed = (int(s) for s in seeds)
        start = time.perf_counter()  # code space: encode once, train on the codes
        Z = X if self.encoder is None else check_array(
            dist.map_rows(self.encoder, X, self._strategy()), "encoder(X)")
        encode_seconds = time.perf_counter() - start
        perm = np.random.default_rng(split_seed).permutation(len(X))
        val, train = perm[:plan.n_val], perm[plan.n_val:]
        self.affinity_embedding_ = self._fit_embedding(plan.affinity_embedding, X, Z, train,
                                                       labels, groups, siamese_seed,
                                                       checkpointers.get("siamese"))
        affinity = self._fit_affinity(plan, Z, train, labels, graph, scale_seed)
        data = Data(Z[train], Z[val], affinity.coordinates(Z[train], train),
                    affinity.coordinates(Z[val], val))
        k = self._choose_k(plan.n_clusters, affinity, data.c_train, plan.batch_size, scale_seed,
                           eigvecs)
        # The warm start of the same seed solves this graph (``SpectralInit``).
        subsample = affinity.subsample_graph(data.c_train, plan.batch_size, train_seed)
        warn_of_pieces(affinity.pieces(data.c_train, subsample), k)
        with self._strategy().scope():  # mirrored variables under a strategy
            spectral_model = build_spectralnet(
                Z.shape[1], k, plan.hidden_units, seed=net_seed,
                output_activation=self.output_activation, dtype_policy=self.dtype_policy,
                scaling=input_scaling(data.x_train))
        self.history_ = self._train(spectral_model, plan, data, labels[np.r_[train, val]],
                                    None if groups is None else groups[train], train_seed,
                                    checkpointers.get("spectral"), Z, eigvecs, subsample)
        if self.encoder is not None:
            self.history_["encode_seconds"] = encode_seconds
        self.model_ = (spectral_model if self.encoder is None
                       else compose_embedder(self.encoder, spectral_model))
        self.codes_ = None if self.encoder is None else Z  # callers need not encode X again
        embed_start = time.perf_counter()
        self._cluster(dist.map_rows(spectral_model, Z, self._strategy()), Z, plan.batch_size, k,
                      labels, groups, train_seed)
        if self._writes_logs():
            write_phase_seconds(self.log_dir, {
                "encode": encode_seconds,
                "siamese": getattr(self, "siamese_history_", {}).get("seconds", 0.0),
                "spectralnet": self.history_["seconds"],
                "init": self.history_.get("init_seconds", 0.0),
                "embed_and_kmeans": time.perf_counter() - embed_start})
        return self

    def _check_fit_inputs(self, X, plan, partial_labels, groups, eigvecs, graph):
        """``fit``'s arguments beside X, checked against it and the plan:
        (labels, groups, graph), each as training uses it."""
        n = len(X)
        if plan.affinity.takes_graph != (graph is not None):
            raise ValueError(
                "fit(X, graph=W) goes with affinity='precomputed' (a PrecomputedAffinity) and "
                f"only with it, got affinity={self.affinity!r} and graph="
                f"{'None' if graph is None else type(graph).__name__}.")
        if graph is not None:
            graph = check_graph(graph, n)
        chooses = plan.n_clusters.chooses
        if chooses and partial_labels is not None:
            raise ValueError(
                "n_clusters='auto' chooses k from the graph alone; with partial_labels give "
                f"n_clusters as an integer, got n_clusters={self.n_clusters!r}.")
        labels = check_partial_labels(partial_labels, n, plan.n_clusters.max_clusters)
        if groups is not None:
            groups = check_groups(groups, n)
        if eigvecs is not None and not chooses and np.shape(eigvecs) != (n, self.n_clusters):
            raise ValueError(
                f"eigvecs must have shape (n_samples, n_clusters) = ({n}, {self.n_clusters}), "
                f"got eigvecs.shape={np.shape(eigvecs)}.")
        if not is_lazy(X) and graph is None:
            k = plan.n_clusters.max_clusters
            distinct = count_distinct_rows(X, k)
            if distinct < k:
                raise ValueError(
                    f"X has {distinct} distinct rows, fewer than n_clusters={self.n_clusters!r}"
                    + ("" if not chooses else f" (max_clusters={k})")
                    + ": each cluster needs a point of its own.")
            check_spread(X)
        return labels, groups, graph

    def _fit_embedding(self, embedding, X, Z, train, labels, groups, seed, checkpointer):
        """The learned distance, fitted on the training points' codes (a
        copy: the parameter stays unfitted); None without one."""
        if embedding is None or not embedding.trains:
            return embedding
        drawn = embedding.sample_rows(len(train), seed)  # the rows the pairs are built on
        rows = train[drawn]
        start = time.perf_counter()
        # Views transform the input: made from X, encoded as Z was.
        view_coords = embedding.view_coordinates(X, seed, encode=self.encoder, rows=rows,
                                                 strategy=self._strategy())
        view_seconds = time.perf_counter() - start
        known = labels[rows]
        embedding.fit(Z[rows], labels=known if (known >= 0).any() else None,
                      groups=None if groups is None else groups[rows], view_coords=view_coords,
                      seed=seed, verbose=self.verbose, checkpointer=checkpointer,
                      strategy=self._strategy(), log_dir=self._log_dir())
        self.siamese_, self.siamese_history_ = embedding.model_, embedding.history_
        if view_coords is not None:
            self.siamese_history_["view_seconds"] = view_seconds
        return embedding

    def _fit_affinity(self, plan, Z, train, labels, graph, seed):
        """``affinity_``: the affinity fitted on the training points (its
        scale), with the learned distance as its embedding, and with labels
        the label classifier's scores where they help (``labelscores``,
        ``label_check_``); a given graph over all of X's rows."""
        affinity = plan.affinity
        if self.affinity_embedding_ is not None:
            affinity.set_params(embedding=self.affinity_embedding_.model_)
        self.label_check_ = None
        if affinity.takes_graph:
            self.affinity_ = affinity.fit(Z, plan.batch_size, graph=graph)
            return self.affinity_
        self.affinity_ = affinity.fit(Z[train], plan.batch_size, seed=seed)
        scores, self.label_check_ = label_coordinates(
            affinity, Z, labels, Z[train], batch_size=plan.batch_size,
            laplacian=self.laplacian, n_clusters=plan.n_clusters.max_clusters, seed=seed)
        if scores is not None:
            affinity.set_params(embedding=scores)
        return self.affinity_

    def _choose_k(self, chooser, affinity, coords, batch_size, seed, eigvecs):
        """``n_clusters_``: the given k, or the one the chooser finds in the
        training graph (the same on every worker: rounding may tip a near-tie)."""
        chooser.fit(affinity, coords, batch_size, seed=seed)
        k = int(dist.from_chief(np.array([chooser.n_clusters_], np.int32), self._strategy())[0])
        if chooser.chooses:
            self.n_clusters_chooser_, self.eigenvalues_ = chooser, chooser.eigenvalues_
            if eigvecs is not None and np.shape(eigvecs)[1] != k:
                raise ValueError(f"eigvecs has {np.shape(eigvecs)[1]} columns, but "
                                 f"n_clusters={self.n_clusters!r} chose k={k}.")
        self.n_clusters_ = k
        return k

    def _train(self, model, plan, data, labels, groups, seed, checkpointer, Z, eigvecs,
               subsample):
        """Algorithm 1 (``train.train_spectralnet``) with this estimator's
        constraints, initializer and callbacks; returns the history."""
        n_train = len(data.x_train)
        constraints = []
        if groups is not None:
            constraints.append(GroupConstraint(groups, self.group_weight))
        if (labels[:n_train] >= 0).any():
            constraints.append(LabelConstraint(labels, n_train, self.label_weight,
                                               self.labeled_share))
        initializer = make_initializer(self.init)
        stops = plan.schedule.callbacks()
        callbacks = [*initializer.callbacks(stops["schedule"]), IterationCount()]
        if eigvecs is not None:
            callbacks.append(GrassmannMonitor(Z, eigvecs))
        callbacks += [*stops.values(), ProgressBar(self.verbose)]
        if self._writes_logs():
            callbacks.append(TensorBoardLog(self._log_dir(), "spectralnet"))
        if checkpointer is not None:
            callbacks.append(Checkpoint(checkpointer, stops))
        config = Config(self.laplacian, plan.batch_size, plan.batch_size,
                        plan.schedule.learning_rate,
                        plan.max_epochs, plan.steps_per_epoch, "projected", seed)
        return train_spectralnet(model, self.affinity_, data, config, constraints=constraints,
                                 initializer=initializer, callbacks=callbacks,
                                 strategy=self._strategy(),
                                 resuming=checkpointer is not None
                                 and checkpointer.latest() is not None, subsample=subsample)

    def _cluster(self, embedding, Z, batch_size, k, labels, groups, seed):
        """k-means on the embedding (``embedding_``, ``cluster_centers_``,
        ``labels_``, ``group_labels_``); after a semi-supervised fit the
        clusters take the ids of the labeled classes they hold.

        Without labels or groups (which train on the graph as they reshape
        it), the training points' clusters come from the graph too, where
        it is small enough to build whole (``REFINE_MAX_EDGES``; the user's
        own graph always): k-means of the embedding refined on the graph the
        minibatches sample (``spectral.refine``), each centroid the mean of
        its cluster's unit-length embedding rows, so that a new point, which
        has only its features, goes through the net to the nearest of them."""
        self.embedding_ = embedding
        self.normalize_rows_ = NORMALIZE_ROWS
        known = labels >= 0
        clusters = None
        graph = (None if known.any() or groups is not None
                 else self.affinity_.full_graph(Z, batch_size, REFINE_MAX_EDGES))
        if graph is not None:
            clusters, self.cluster_centers_ = self._graph_clusters(graph, embedding, k, seed)
        if clusters is None:
            self.cluster_centers_ = fit_centroids(embedding, k, seed, self.normalize_rows_)
            clusters = self._assign(embedding)
        perm = (label_permutation(labels[known], clusters[known], k) if known.any()
                else np.arange(k))
        self.cluster_centers_ = self.cluster_centers_[np.argsort(perm)]
        self.labels_ = perm[clusters]
        self.group_labels_ = None
        if groups is not None:
            # A group's points are views of one item, so one class: their
            # cluster is the nearest centroid of their mean row.
            ids, means = group_means(self._clustered_rows(embedding), groups)
            self.group_labels_ = self._assign(means)[ids]

    def _graph_clusters(self, graph, embedding, k, seed):
        """``(clusters, centroids)`` of the graph's nodes: k-means of the
        embedding refined on the graph, and each cluster's mean unit-length
        row; ``(None, None)`` where k-means left a cluster empty."""
        clusters = kmeans_labels(refine(graph, embedding, self.laplacian), k, seed,
                                 self.normalize_rows_)
        means = group_means(self._clustered_rows(embedding), clusters)[1]
        return (clusters, means) if len(means) == k else (None, None)

    def _writes_logs(self):
        """A ``log_dir`` is set and this process writes (not a non-chief worker)."""
        return self.log_dir is not None and dist.is_chief(self._strategy())

    def _log_dir(self):
        """Where this process writes TensorBoard logs, or None."""
        return os.fspath(self.log_dir) if self._writes_logs() else None

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X, **fit_params)``, then the embedding of X (``embedding_``)."""
        return self.fit(X, **fit_params).embedding_

    def _validate_X(self, X, reset):
        """X as float32 (an on-disk row source stays on disk), with
        ``n_features_in_`` (and ``feature_names_in_``) set when ``reset`` and
        checked against them otherwise (scikit-learn's ``validate_data``).
        A ``tf.data.Dataset`` is read into memory first (``dataset_rows``)."""
        if is_dataset(X):
            X = dataset_rows(X)
        if is_lazy(X):
            X = check_rows(X)
            if reset:
                self.n_features_in_ = X.shape[1]
                self.__dict__.pop("feature_names_in_", None)
            elif X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but SpectralNet is expecting "
                    f"{self.n_features_in_} features as input."
                )
            return X
        try:
            X = validate_data(self, X, reset=reset, dtype=np.float32, ensure_all_finite=False,
                              ensure_min_samples=2 if reset else 1)
        except ValueError as err:
            if str(err).startswith("X "):
                raise
            raise ValueError(f"X: {err}") from None  # name the argument
        return check_array(X)  # names a NaN or inf element, unlike validate_data

    @property
    def _n_features_out(self):
        """Embedding width, for ``get_feature_names_out`` (spectralnet0, ...)."""
        return getattr(self, "n_clusters_", self.n_clusters)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float32"]  # TensorFlow computes in float32
        return tags

    def _strategy(self):
        return dist.get(self.distribute)

    def _check_log_dir(self):
        """Make ``log_dir`` (where this process writes logs) before any work,
        or a ValueError naming it."""
        if not self._writes_logs():
            return
        try:
            os.makedirs(self.log_dir, exist_ok=True)
            if not os.access(self.log_dir, os.W_OK):
                raise PermissionError("not writable")
        except OSError as err:
            raise ValueError(f"log_dir={os.fspath(self.log_dir)!r} cannot hold TensorBoard's "
                             f"files: {err}.") from None

    #: Parameters a resume may change: where and how the fit runs and reports,
    #: and the schedule's epoch cap (a resume may train on for longer).
    RESUME_MAY_CHANGE = ("verbose", "checkpoint_dir", "log_dir", "distribute")

    def _fingerprint_params(self):
        """The parameters a resumed fit must share with the first (JSON):
        all but ``RESUME_MAY_CHANGE``; an encoder by a hash of its weights; a
        random_state that is not an integer as "not an integer" (it draws
        its seed from a stream, which no record can compare)."""
        params = {key: part_to_json(value) for key, value in self.get_params(deep=False).items()
                  if key not in self.RESUME_MAY_CHANGE}
        params.pop("schedule")  # by its values, so that a refusal names the one that differs
        params.update((f"schedule__{key}", value) for key, value
                      in make_spectral_schedule(self.schedule).get_params().items()
                      if key != "max_epochs")
        for key, value in params.items():
            if isinstance(value, np.generic):
                params[key] = value.item()
        if not isinstance(self.random_state, numbers.Integral):
            params["random_state"] = (None if self.random_state is None
                                      else "not an integer")
        if self.encoder is not None:
            params["encoder"] = digest(np.concatenate(
                [np.ravel(w) for w in self.encoder.get_weights()]))
        if not isinstance(self.affinity_embedding, (type(None), str, BaseEstimator)):
            params["affinity_embedding"] = type(self.affinity_embedding).__name__  # a callable
        return params

    def _checkpointers(self, resume, found=None):
        """Checkpointer per training phase; refuse to reuse checkpoints unasked,
        and to resume those of another fit (``checkpoint.check_fingerprint``:
        ``found()`` is this fit's fingerprint). Only the chief of a
        multi-worker strategy writes; the others only read, on resume."""
        if self.checkpoint_dir is None:
            if resume:
                raise ValueError("resume=True needs checkpoint_dir, got checkpoint_dir=None.")
            return {}
        chief = dist.is_chief(self._strategy())
        phases = {name: Checkpointer(os.path.join(self.checkpoint_dir, name), write=chief)
                  for name in ("siamese", "spectral")}

        def preflight():  # on the chief; its verdict stops every worker alike
            existing = [c.directory for c in phases.values() if c.latest() is not None]
            if existing and not resume:
                raise ValueError(
                    f"checkpoint_dir={self.checkpoint_dir!r} holds checkpoints of an earlier "
                    f"fit ({', '.join(existing)}); pass resume=True to continue it, or use "
                    "an empty directory."
                )
            if found is not None:  # a resume with nothing to resume starts afresh
                check_fingerprint(os.fspath(self.checkpoint_dir), found(),
                                  resume and bool(existing))

        dist.chief_check(preflight, (ValueError,), self._strategy())
        if not (chief or resume):
            return {}
        return phases

    # ------------------------------------------------------- after fitting
    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise NotFittedError(
                "This SpectralNet instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )

    def _check_fitted_X(self, X):
        self._check_fitted()
        return self._validate_X(X, reset=False)

    def _unit_rows(self):
        # An estimator pickled before unit rows has centroids of the rows as they are.
        return getattr(self, "normalize_rows_", False)

    def _assign(self, embedding):
        return assign(embedding, self.cluster_centers_, self._unit_rows())

    def _clustered_rows(self, embedding):
        """Embedding rows as k-means saw them (unit length where it clustered
        those): the rows that may be averaged before ``_assign``."""
        if not self._unit_rows():
            return np.asarray(embedding, np.float32)
        return unit_rows(embedding).numpy()

    def transform(self, X):
        """Embed X with F_theta: (n_samples, n_clusters). X may also be an
        on-disk row source or a ``tf.data.Dataset`` (read a batch at a time)."""
        if is_dataset(X):
            self._check_fitted()
            out = [self.transform(batch) for batch in dataset_batches(X)]
            return (np.concatenate(out) if out
                    else np.empty((0, self.n_clusters_), np.float32))
        X = self._check_fitted_X(X)
        return dist.map_rows(self.model_, X, self._strategy())

    def predict(self, X):
        """Cluster of each point: the nearest k-means centroid of its
        embedding (its row scaled to unit length, as k-means saw them)."""
        return self._assign(self.transform(X))

    # --------------------------------------------------------- persistence
    def export(self, base_dir="export", name="spectralnet", serving_root="/models"):
        """Export the fitted embedder and centroids as a SavedModel for TF-Serving.

        Writes the next integer version ``base_dir/name/<version>/`` atomically
        (through Keras 3's ``ExportArchive``) and returns its path. Signature
        ``serving_default``: input ``x`` (float32, [None, n_features_in_]);
        outputs ``embedding`` (float32, [None, k]), ``cluster`` (int64,
        [None]), ``distances`` (float32, [None, n_clusters]). Then rewrites
        ``base_dir/models.config`` for every model in ``base_dir``, with base
        paths under ``serving_root`` (where the server sees ``base_dir``).
        """
        self._check_fitted()
        return export_saved_model(self.model_, self.cluster_centers_, base_dir, name,
                                  serving_root=serving_root,
                                  normalize_rows=self._unit_rows())

    def save(self, path):
        """Save the fitted estimator to the new directory ``path``.

        ``path/embedder.keras`` is a standard Keras file of ``model_``, the
        encoder included. ``keras.models.load_model`` opens it once the
        Orthonorm layer is registered: ``from spectralnet_tf import
        Orthonorm`` (or ``SpectralNet``) first. A bare ``import
        spectralnet_tf`` is lazy and registers it only if Keras was imported
        before it. ``siamese.keras`` (only with a ``SiameseEmbedding``),
        ``arrays.npz`` and ``estimator.json`` hold the Siamese net, the
        embedding, labels and centroids, the parameters (the affinity and the
        Siamese embedding by class and parameters; format 4, and ``load``
        also reads formats 2 and 3), the affinity's scale and the histories.
        """
        self._check_fitted()
        return save_estimator(self, path)

    @classmethod
    def load(cls, path):
        """Load an estimator written by ``save``: ``transform`` and ``predict``
        give the original's outputs, and ``fit`` retrains it as the original's
        would (same parameters, encoder included)."""
        return load_estimator(cls, path)
