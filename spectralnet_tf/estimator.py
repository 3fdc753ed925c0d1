"""``SpectralNet``: the scikit-learn style estimator."""

import numbers
import os
import tempfile
import time
from typing import NamedTuple

import numpy as np
import tensorflow as tf
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin,
                          TransformerMixin)
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from . import distribute as dist
from .checks import check_choice, check_int, check_positive, check_real, check_units
from .affinity import (AFFINITIES, GaussianAffinity, PrecomputedAffinity, check_graph,
                       check_labels)
from .checkpoint import Checkpointer, check_fingerprint, digest, fingerprint
from .centroids import NORMALIZE_ROWS, assign, fit_centroids, unit_rows
from .export import export_saved_model, load_estimator, part_to_json, save_estimator
from .labelscores import check_two_classes
from .losses import LAPLACIANS
from .metrics import label_permutation
from .nclusters import Eigengap
from .networks import DTYPE_POLICIES, OUTPUT_ACTIVATIONS, build_spectralnet, compose_embedder
from .groups import check_groups, group_means
from .siamese import SiameseEmbedding
from .streaming import (dataset_batches, dataset_rows, is_dataset, is_lazy, map_batches,
                        spooled)
from .summaries import EpochLog, write_phase_seconds
from .train import GRADIENTS, INITS, check_label_classifier, train_spectralnet
from .views import ViewRows, make_view, view_seeds

#: Default minibatch size (paper: 1024 on MNIST); clipped for small data.
DEFAULT_BATCH_SIZE = 1024
#: Copies per point ``predict(views=...)`` averages beside the point: ten
#: embeddings, as Krizhevsky, Sutskever & Hinton (2012) averaged ten crops.
DEFAULT_N_VIEWS = 9
#: Rows whose copies ``predict(views=...)`` embeds at once (with the copies:
#: this times n_views + 1 embeddings in memory).
VIEW_CHUNK = 65536
#: Fewest iterations per epoch when steps_per_epoch is None.
MIN_STEPS_PER_EPOCH = 50
#: max_epochs="auto": epochs for this many iterations, within these bounds.
AUTO_ITERATIONS = 2500
MIN_AUTO_EPOCHS, MAX_AUTO_EPOCHS = 20, 100
#: hidden_units="auto": the widest first layer (the paper's net) and the narrowest.
MAX_AUTO_WIDTH, MIN_AUTO_WIDTH = 1024, 32


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


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


def _seed(random_state):
    """The seed of the estimator's random streams. An integer seeds them
    directly (so a recorded seed keeps giving its recorded result); None or a
    RandomState goes through ``check_random_state`` (None: numpy's global
    RandomState) and one integer is drawn from it."""
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be >= 0, got random_state={random_state!r}.")
        return int(random_state)
    try:
        return int(check_random_state(random_state).randint(0, 2**31 - 1))
    except ValueError:
        raise ValueError(
            "random_state must be None, an integer >= 0 or a numpy RandomState, got "
            f"random_state={random_state!r}."
        ) from None


def graph_views(embedding):
    """Views of each training point that join F_theta's training set: the
    Siamese ``embedding``'s ``graph_views`` (0 for any other)."""
    return embedding.graph_views if isinstance(embedding, SiameseEmbedding) else 0


class Plan(NamedTuple):
    """What ``SpectralNet.fit`` would train with on n points (``SpectralNet.plan``):
    every "auto" or None parameter resolved, the parts as unfitted objects."""

    n_val: int
    n_train: int
    batch_size: int
    ortho_batch_size: int
    steps_per_epoch: int
    max_epochs: int
    hidden_units: tuple
    affinity: object
    affinity_embedding: object
    n_clusters: object


def auto_hidden_units(n_samples, n_features):
    """``hidden_units="auto"``: ``(w, w, w // 2)``. w follows the input width
    d (the encoder's output width, with an encoder): 256 up to 32 features,
    512 up to 256, 1024 above (the paper's net, and the cap). It is then
    lowered to the power of two at or above n/4 (at least 32), so that a
    few hundred points do not get a net of a million weights."""
    width = 256 if n_features <= 32 else 512 if n_features <= 256 else MAX_AUTO_WIDTH
    width = min(width, max(MIN_AUTO_WIDTH, 1 << max(0, int(np.ceil(np.log2(n_samples / 4))))))
    return (width, width, width // 2)


def auto_max_epochs(steps_per_epoch):
    """``max_epochs="auto"``: the epochs that give ``AUTO_ITERATIONS``
    iterations at ``steps_per_epoch``, within [``MIN_AUTO_EPOCHS``, 100]."""
    return int(np.clip(-(-AUTO_ITERATIONS // steps_per_epoch), MIN_AUTO_EPOCHS, MAX_AUTO_EPOCHS))


def make_affinity(affinity, embedding=None):
    """An unfitted affinity object from ``SpectralNet``'s ``affinity``: a name
    ("knn", "full": the class with its defaults) or a copy of an affinity
    object, with ``embedding`` set when one is given. ValueError otherwise."""
    if isinstance(affinity, str):
        if affinity not in AFFINITIES:
            raise ValueError(f"affinity must be one of {tuple(AFFINITIES)} or an affinity object "
                             f"such as GaussianKNNAffinity(), got affinity={affinity!r}.")
        part = AFFINITIES[affinity]()
    elif isinstance(affinity, (GaussianAffinity, PrecomputedAffinity)):
        part = _unfitted_copy(affinity)
    else:
        raise ValueError(
            f"affinity must be one of {tuple(AFFINITIES)} or an affinity object (e.g. "
            f"GaussianKNNAffinity(n_nbrs=10)), got affinity={affinity!r}.")
    if embedding is not None:
        part.set_params(embedding=embedding)
    return part


def make_affinity_embedding(embedding):
    """``SpectralNet``'s ``affinity_embedding`` as used by ``fit``: None, an
    unfitted ``SiameseEmbedding`` ("siamese": the defaults; an object: a
    copy), or the callable itself. ValueError otherwise."""
    if embedding is None:
        return None
    if isinstance(embedding, str):
        if embedding != "siamese":
            raise ValueError("affinity_embedding must be None, 'siamese', a SiameseEmbedding or a "
                             f"callable, got affinity_embedding={embedding!r}.")
        return SiameseEmbedding()
    if isinstance(embedding, SiameseEmbedding):
        return _unfitted_copy(embedding)
    if callable(embedding):
        return embedding
    raise ValueError("affinity_embedding must be None, 'siamese', a SiameseEmbedding or a "
                     f"callable, got affinity_embedding={embedding!r}.")


def _unfitted_copy(part):
    """A new object with ``part``'s parameters (shared, not copied: an
    embedding stays the same net), without its fitted state."""
    return type(part)(**part.get_params(deep=False))


def make_n_clusters(n_clusters):
    """``SpectralNet``'s ``n_clusters`` as used by ``fit``: an int as it is,
    or an unfitted ``Eigengap`` ("auto": the defaults; an object: a copy).
    ValueError otherwise."""
    if isinstance(n_clusters, str) and n_clusters == "auto":
        return Eigengap()
    if isinstance(n_clusters, Eigengap):
        return _unfitted_copy(n_clusters)
    check_int("n_clusters", n_clusters, 1)
    return n_clusters


#: Parameters that hold an object with parameters of its own (nested keys).
PARTS = {"affinity": make_affinity, "affinity_embedding": make_affinity_embedding,
         "n_clusters": make_n_clusters}


class SpectralNet(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin,
                  BaseEstimator):
    """Spectral clustering with a deep network (Shaham et al., ICLR 2018).

    A network F_theta maps each point to an approximation of the k smallest
    eigenvectors of the graph Laplacian of the data; it is trained by
    Algorithm 1 of the paper (alternating orthogonalization and gradient steps
    on random minibatches). k-means on the embedding gives the clusters; new
    points are assigned to the nearest k-means centroid (out-of-sample
    extension).

    The affinity and the learned distance it may use are objects with
    parameters of their own (``GaussianKNNAffinity``, ``SiameseEmbedding``).
    Their parameters are reached with nested keys, as in scikit-learn
    pipelines: ``set_params(affinity__n_nbrs=5)``, a ``GridSearchCV`` or
    ``ParameterGrid`` over ``{"affinity__n_nbrs": [5, 10]}``. Such a key
    never changes the object that was passed in: the part is replaced by a
    copy with the new value, and a name ("knn", "siamese") is first replaced
    by the object it names, with its defaults.

    Parameters
    ----------
    n_clusters : int, "auto" or Eigengap, default=2
        Number of clusters k (>= 1), also the embedding dimension. "auto"
        (``Eigengap()``) or an ``Eigengap(...)``: k is chosen in ``fit``,
        before F_theta is built, by the largest eigengap of the training
        graph's normalized Laplacian on a subsample (``nclusters``); the
        choice is ``n_clusters_``, its spectrum ``eigenvalues_``.
    hidden_units : tuple of int or "auto", default="auto"
        ReLU layers of F_theta; a layer of size k and Orthonorm follow.
        "auto": ``(w, w, w/2)`` with w from the input width d and n
        (``auto_hidden_units``): 256 up to 32 features, 512 up to 256, 1024
        (the paper's net) above; no wider than the power of two at or above
        n/4, for small data.
    output_activation : {"tanh", "linear"}, default="tanh"
        Activation of that size-k layer. "tanh" is the paper's (Table 3);
        "linear" leaves the outputs unbounded. The MNIST configuration uses
        "linear": on MNIST's codes it clustered far more accurately.
    affinity : {"knn", "full", "precomputed"} or affinity object, default="knn"
        How a minibatch's affinity matrix W is built. "knn":
        ``GaussianKNNAffinity()``, the Gaussian kernel on the kNN graph of a
        minibatch (paper Eq. 4; 10 neighbours, scale: the median distance to
        the 3rd neighbour); "full": ``FullGaussianAffinity()``, between all
        pairs; "precomputed": ``PrecomputedAffinity()``, the user's own graph
        over the training points, ``fit(X, graph=W)``, each minibatch using
        W's submatrix. An object sets its parameters, e.g.
        ``GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local")``; it is
        copied, never fitted itself (the fitted copy is ``affinity_``). Its
        ``embedding`` must be None when ``affinity_embedding`` is set.
    laplacian : {"unnormalized", "normalized"}, default="unnormalized"
        ``D - W`` (paper Eq. 3), or ``I - D^-1/2 W D^-1/2`` (paper Eq. 5).
    batch_size : int or None, default=None
        Minibatch size m of the gradient steps. None: min(1024, n_train), with
        n_train the points left after the validation hold-out. A value larger
        than n_train is refused with a ValueError (not clipped).
    ortho_batch_size : int or None, default=None
        Minibatch size of the orthogonalization steps; None: batch_size.
    learning_rate : float, default=1e-3
        Initial RMSprop learning rate.
    patience : int, default=10
        Epochs without validation improvement before the rate is divided by 10.
    min_lr : float, default=1e-8
        Training stops when the rate reaches it: the validation loss has
        stopped improving through that many divisions.
    max_epochs : int or "auto", default="auto"
        Upper bound on the number of epochs. "auto": as many as give 2,500
        iterations (``AUTO_ITERATIONS``) at the resolved ``steps_per_epoch``,
        at least 20 and at most 100 (``auto_max_epochs``): small data sets,
        whose epochs are the 50-step floor, get 50 epochs; large ones, whose
        epochs are passes over the data, 20 passes or more.
    steps_per_epoch : int or None, default=None
        Iterations (ortho + gradient step) per epoch. None:
        max(n_train * (1 + graph_views) // batch_size, 50), with the Siamese
        ``graph_views`` (0 without them): a pass over the data, and on small
        data sets enough steps that ``patience`` spans hundreds of
        iterations, so that the schedule does not stop a net that is still
        leaving a saddle.
    gradient : {"projected", "plain"}, default="projected"
        How gradient steps treat the orthonormality constraint. Both hold the
        Orthonorm weight constant (no gradient through the Cholesky).
        "projected" projects the gradient onto the constraint's tangent space;
        "plain" is Algorithm 1 as printed, whose outputs shrink towards 0.
    init : {"random", "spectral"}, default="random"
        How F_theta starts. "random": Glorot weights, as in the paper.
        "spectral": then fitted by least squares to the exact eigenvectors of
        the graph on a random subsample of 4,096 training points (at least
        one minibatch; all of them if there are fewer), so that Algorithm 1
        starts near the minimum of its loss rather than where it can stop on
        a saddle (``train.spectral_warm_start``). An epoch of Algorithm 1
        that ends more than half a direction from that start, and farther
        than it began, is undone and the learning rate cut by 10, unless
        that would reach ``min_lr`` (``train.near_the_start``). ``history_`` then holds
        "init_grassmann" and "init_seconds", and per epoch "start_distance"
        and "undone".
    dtype_policy : {"float32", "mixed_bfloat16", "auto"}, default="float32"
        Keras dtype policy of F_theta's ReLU layers. "mixed_bfloat16" computes
        them in bfloat16 (weights stay float32); the size-k layer, Orthonorm,
        the Cholesky and the loss stay in float32/float64. Faster where the
        CPU or accelerator has bfloat16 units, slower where it emulates them.
        "auto": "mixed_bfloat16" where the GPUs (compute capability 8.0 on)
        or, without a GPU, the CPU (AVX-512 BF16 or AMX) have those units,
        "float32" elsewhere. This parameter, not Keras's global policy,
        decides (a given ``encoder`` keeps its own).
    validation_fraction : float, default=0.1
        Fraction of X held out at random for the validation loss; at least
        one more point than the affinity's neighbours (small data only).
    label_weight : float, default=1.0
        Semi-supervised only (``fit(X, partial_labels=...)``): weight of the
        cross-entropy of the class targets in the loss (paper Sec. 5.3's
        closing remark; ``losses.label_loss``: softmax over minus the squared
        distances to each class's mean output in the minibatch). The targets
        are the labels, and on a subsample of the unlabeled points the class
        Poisson learning on the graph gives them (``train.label_targets``).
        0 turns it off. It helps where the labeled pairs alone leave the cut
        wrong.
    labeled_share : float, default=0.0
        Semi-supervised only: this share of each gradient minibatch is drawn
        from the labeled points (all of them if there are fewer), the rest
        uniformly from the others. 0: uniform minibatches. Meant for n much
        larger than the minibatch, where few labeled points would otherwise
        fall in a minibatch.
    affinity_embedding : None, "siamese", SiameseEmbedding or callable, default=None
        None: affinities use Euclidean distances between points (in code space
        if ``encoder`` is set). "siamese" (``SiameseEmbedding()``) or a
        ``SiameseEmbedding(...)``: a copy of it, a Siamese net, is trained
        first on unlabeled nearest-neighbour pairs (paper Sec. 3.2) and
        distances are taken between its outputs. A callable (e.g. a trained
        Keras net, kept fixed): distances between its outputs.
    encoder : keras.Model or None, default=None
        A fixed map from raw input to a code space (e.g. the VaDE encoder);
        SpectralNet and the Siamese net are trained on the codes, computed once.
        ``model_``, ``transform``, ``predict`` and the exports take raw input.
    checkpoint_dir : str or None, default=None
        If set, the Siamese and SpectralNet trainings checkpoint after every
        epoch into ``checkpoint_dir/siamese`` and ``checkpoint_dir/spectral``
        (weights, optimizer state, learning-rate stage, RNG stream; written
        atomically). ``fit(..., resume=True)`` continues from them. Under a
        multi-worker strategy only the chief writes them; the other workers
        read them on resume (the directory must be shared).
    log_dir : str or None, default=None
        If set, TensorBoard event files (``tf.summary``): per epoch, the
        loss, validation loss, learning rate and seconds of the Siamese
        training (``log_dir/siamese``) and of SpectralNet's
        (``log_dir/spectralnet``, with the Grassmann distance when ``fit``
        gets ``eigvecs``); at the end the seconds of each phase of ``fit``
        (``log_dir/phases``). ``tensorboard --logdir log_dir`` shows them.
        Under a multi-worker strategy only the chief writes.
    distribute : tf.distribute.Strategy or None, default=None
        Data-parallel training: each step of Algorithm 1 (and of the Siamese
        training) runs on the replicas of this strategy, every replica
        holding an equal shard of the same global minibatch (``batch_size``
        and ``ortho_batch_size`` must divide by the replica count), and
        ``transform``/``predict`` embed the rows shard by shard. The global
        minibatches, and so the result up to float32 rounding, are those of
        one device. None: the strategy in scope (``with strategy.scope():
        net.fit(X)``), TensorFlow's default single-device one outside any.
        A multi-worker strategy must be created, with the same seed and data,
        in every worker process. Not saved by ``save``.
    random_state : int, RandomState instance or None, default=None
        Seeds the split, the scale estimate, the weights, the minibatches and
        k-means (through ``sklearn.utils.check_random_state``; None draws
        from numpy's global RandomState). Equal integer seeds give equal
        results on the same machine.
    verbose : int, default=0
        0: silent; 1: a Keras progress bar over epochs.

    Attributes
    ----------
    n_clusters_ : int
        The number of clusters: ``n_clusters``, or the one it chose.
    eigenvalues_ : ndarray of shape (max_clusters + 1,)
        Only with an ``Eigengap``: the smallest eigenvalues it chose k from
        (its fitted copy is ``n_clusters_chooser_``).
    model_ : keras.Model
        The trained embedder F_theta, ending in the Orthonorm layer.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        F_theta of the training data.
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training point. After a semi-supervised fit the
        clusters carry the ids of ``partial_labels``: each takes the class
        of the labeled points it holds (a one-to-one matching that agrees
        with the most labeled points), so that ``labels_`` and ``predict``
        answer in the user's classes.
    group_labels_ : ndarray of shape (n_samples,) or None
        Only after ``fit(X, groups=...)`` (else None): each training point's
        cluster from its group's mean row of the embedding (rows scaled to
        unit length where ``normalize_rows_``), so that the views of one item
        share one cluster.
    cluster_centers_ : ndarray of shape (n_clusters, n_clusters)
        k-means centroids in the embedding space, in that order: of its rows
        scaled to unit length where ``normalize_rows_``.
    normalize_rows_ : bool
        Whether k-means clustered the embedding's rows scaled to unit length
        (why: ``centroids``), and ``predict`` and the exported model scale new
        points' rows the same way: True for every fit
        (``centroids.NORMALIZE_ROWS``); False for a save from before, whose
        centroids are of the rows as they are. The paper's k-means on the
        rows as they are: ``KMeans(k).fit(embedding_)``.
    affinity_ : affinity object
        The fitted copy of ``affinity`` (with its scale, and the trained
        embedding as its ``embedding``).
    label_check_ : dict or None
        Semi-supervised only (``train.check_label_classifier``): held-out
        accuracies on the labeled points of the graph the label classifier
        reshapes ("reshaped") and of the graph without it ("graph"), each
        the better of Poisson learning ("reshaped_poisson", "poisson") and
        its own cut named by the labels ("reshaped_cut", "cut"); of the
        classifier itself ("classifier"); its C and gamma ("params"); and
        whether the classifier reshaped the graph ("keep": only where
        "reshaped" scored strictly higher).
        None where nothing was checked (no classifier, or a class with a
        single label in the subsample checked). Not saved by ``save``.
    affinity_embedding_ : SiameseEmbedding, callable or None
        The fitted copy of ``affinity_embedding`` (or the callable itself).
    history_ : dict
        Per epoch: "iteration", "loss", "val_loss", "lr" (and "grassmann" when
        ``fit`` got ``eigvecs``); "seconds" of training. With
        ``init="spectral"`` also "init_grassmann" (the fitted start against
        its subsample's eigenvectors), "init_seconds", per epoch
        "start_distance" (that distance after the epoch) and "undone" (1
        where the epoch was undone and the rate cut) and, with ``eigvecs``,
        "start_grassmann". With an ``encoder``, "encode_seconds": its pass
        over X; with the Siamese ``graph_views``, "graph_view_seconds":
        joining them to the training set, and making them where they are not
        made with the Siamese net's views (when it draws ``max_samples``
        rows and takes more views than the graph).
    codes_ : ndarray of shape (n_samples, code_size) or None
        The ``encoder``'s output for the training data, on which F_theta was
        trained (None without an encoder). Not saved by ``save``: absent
        from a loaded estimator.
    siamese_ : keras.Model
        The Siamese net (only with a ``SiameseEmbedding``; its ``model_``),
        and ``siamese_history_`` its training history.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Column names of X, when X was a DataFrame with string column names.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from spectralnet_tf import GaussianKNNAffinity, SpectralNet
    >>> X, y = make_moons(1000, noise=0.05, random_state=0)
    >>> net = SpectralNet(n_clusters=2, random_state=0)
    >>> labels = net.fit(X).labels_        # doctest: +SKIP
    >>> net.predict(X[:5]).shape           # doctest: +SKIP
    (5,)
    >>> net.plan(1000, 2).hidden_units     # the "auto" net for 1,000 2-D points
    (256, 256, 128)
    >>> net = SpectralNet(2, affinity=GaussianKNNAffinity(n_nbrs=10, scale="local"))
    >>> net.set_params(affinity__n_nbrs=5).affinity.n_nbrs
    5

    Semi-supervised: ``fit(X, partial_labels=labels)`` with -1 for unknown.
    ``y`` is ignored, as by every scikit-learn clusterer.
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        hidden_units="auto",
        output_activation="tanh",
        affinity="knn",
        laplacian="unnormalized",
        batch_size=None,
        ortho_batch_size=None,
        learning_rate=1e-3,
        patience=10,
        min_lr=1e-8,
        max_epochs="auto",
        steps_per_epoch=None,
        gradient="projected",
        init="random",
        dtype_policy="float32",
        validation_fraction=0.1,
        label_weight=1.0,
        labeled_share=0.0,
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
        self.ortho_batch_size = ortho_batch_size
        self.learning_rate = learning_rate
        self.patience = patience
        self.min_lr = min_lr
        self.max_epochs = max_epochs
        self.steps_per_epoch = steps_per_epoch
        self.gradient = gradient
        self.init = init
        self.dtype_policy = dtype_policy
        self.validation_fraction = validation_fraction
        self.label_weight = label_weight
        self.labeled_share = labeled_share
        self.affinity_embedding = affinity_embedding
        self.encoder = encoder
        self.checkpoint_dir = checkpoint_dir
        self.log_dir = log_dir
        self.distribute = distribute
        self.random_state = random_state
        self.verbose = verbose

    def set_params(self, **params):
        """Set parameters, as scikit-learn's ``set_params``; nested keys
        (``affinity__n_nbrs``, ``affinity_embedding__max_epochs``) replace the
        part by a copy with the new values (a name by the object it names)
        instead of changing the object in place. Returns self."""
        nested = {}
        for key in list(params):
            name, sep, sub = key.partition("__")
            if sep and name in PARTS:
                nested.setdefault(name, {})[sub] = params.pop(key)
        super().set_params(**params)
        for name, values in nested.items():
            current = getattr(self, name)
            part = PARTS[name](current)
            if not hasattr(part, "set_params"):
                keys = ", ".join(f"{name}__{sub}" for sub in values)
                raise ValueError(
                    f"{keys}: nested parameters need {name} to be an object with parameters "
                    f"(or a name of one), got {name}={current!r}.")
            setattr(self, name, part.set_params(**values))
        return self

    # ------------------------------------------------------------------ fit
    def make_affinity(self, embedding=None):
        """A new unfitted affinity object from the ``affinity`` parameter (a
        copy of the object, or the class a name stands for), with
        ``embedding`` as its distance's embedding when given. ``fit`` fits
        one as ``affinity_``; ``exact_reference``-style callers fit their
        own."""
        return make_affinity(self.affinity, embedding)

    def plan(self, n_samples, n_features):
        """Check the parameters against n points of ``n_features`` input
        features (the encoder's input, with an encoder) and resolve what they
        leave to ``fit``: the hold-out, the batch sizes, the steps per epoch,
        the epoch cap and the net ("auto" and None values). Returns a
        ``Plan``; raises the ValueError that ``fit`` would, before any work.
        """
        n = n_samples
        n_clusters = make_n_clusters(self.n_clusters)
        if isinstance(n_clusters, Eigengap):
            try:
                n_clusters.check_params()
            except ValueError as err:
                raise ValueError(f"n_clusters={self.n_clusters!r}: {err}") from None
        k = self._most_clusters(n_clusters)
        if n < k:
            raise ValueError(f"X has n_samples={n}, fewer than n_clusters={self.n_clusters!r}"
                             + ("" if k == self.n_clusters else f" (max_clusters={k})") + ".")
        affinity = self.make_affinity()
        try:
            affinity.check_params()
        except ValueError as err:
            raise ValueError(f"affinity={self.affinity!r}: {err}") from None
        embedding = make_affinity_embedding(self.affinity_embedding)
        if embedding is not None and affinity.embedding is not None:
            raise ValueError(
                "affinity has an embedding of its own and affinity_embedding is set too; set "
                f"one of them, got affinity={self.affinity!r} and "
                f"affinity_embedding={self.affinity_embedding!r}.")
        if embedding is not None and isinstance(affinity, PrecomputedAffinity):
            raise ValueError(
                "affinity='precomputed' takes the graph as given; a learned distance does not "
                f"apply to it: set affinity_embedding=None, got affinity_embedding="
                f"{self.affinity_embedding!r}.")
        check_choice("laplacian", self.laplacian, LAPLACIANS)
        check_choice("gradient", self.gradient, GRADIENTS)
        check_choice("init", self.init, INITS)
        check_choice("output_activation", self.output_activation, OUTPUT_ACTIVATIONS)
        check_choice("dtype_policy", self.dtype_policy, DTYPE_POLICIES)
        if not (self.distribute is None or isinstance(self.distribute, tf.distribute.Strategy)):
            raise ValueError(
                "distribute must be a tf.distribute.Strategy or None, got "
                f"distribute={self.distribute!r}."
            )
        if (isinstance(self._strategy(), tf.distribute.MultiWorkerMirroredStrategy)
                and not isinstance(self.random_state, numbers.Integral)):
            raise ValueError(
                "Under a multi-worker strategy every worker must draw the same split and "
                "minibatches: random_state must be an int, got "
                f"random_state={self.random_state!r}."
            )
        check_int("patience", self.patience, 1)
        if not _is_auto(self.max_epochs):
            check_int("max_epochs", self.max_epochs, 1)
        if not _is_auto(self.hidden_units):
            check_units("hidden_units", self.hidden_units,
                        "'auto' or a non-empty tuple of positive integers")
        check_real("validation_fraction", self.validation_fraction, lambda v: 0 < v < 1, "in (0, 1)")
        if not (self.log_dir is None or isinstance(self.log_dir, (str, os.PathLike))):
            raise ValueError(f"log_dir must be a path or None, got log_dir={self.log_dir!r}.")
        if self.encoder is not None and not hasattr(self.encoder, "predict"):
            raise ValueError(f"encoder must be a Keras model or None, got encoder={self.encoder!r}.")
        check_positive("learning_rate", self.learning_rate)
        check_real("label_weight", self.label_weight, lambda v: 0 <= v < np.inf, "a number >= 0")
        check_real("labeled_share", self.labeled_share, lambda v: 0 <= v <= 1, "in [0, 1]")
        check_positive("min_lr", self.min_lr)
        if isinstance(embedding, SiameseEmbedding):
            try:
                embedding.check_params(self._strategy())
            except ValueError as err:
                raise ValueError(f"affinity_embedding={self.affinity_embedding!r}: {err}") from None
        # The validation hold-out is one minibatch at least: its affinity
        # needs the neighbours too (this matters for small data only).
        needed = affinity.n_neighbors_needed()
        ranks = ", ".join(f"{key}={value}" for key, value in affinity.ranks().items())
        n_val = max(needed + 1, int(round(self.validation_fraction * n)))
        n_train = n - n_val
        if n_train <= needed:
            raise ValueError(
                f"The affinity needs {needed} neighbours per point ({ranks}) in a minibatch "
                f"and in the validation hold-out, but n_samples={n} leaves {n_train} training "
                f"points beside a hold-out of {n_val}; lower them or give more data."
            )
        batch_size = self._check_batch("batch_size", self.batch_size, n_train, n, k)
        ortho = self._check_batch("ortho_batch_size", self.ortho_batch_size, n_train, n, k)
        ortho = batch_size if self.ortho_batch_size is None else ortho
        # Fail now, not after Siamese training, if a minibatch is too small.
        if batch_size <= needed:
            raise ValueError(
                f"The affinity needs {needed} neighbours per point ({ranks}) but a minibatch "
                f"has batch_size={batch_size} points; lower them or raise batch_size."
            )
        if self.steps_per_epoch is None:
            # An epoch passes over the training points and their graph views.
            steps = max(n_train * (1 + graph_views(embedding)) // batch_size,
                        MIN_STEPS_PER_EPOCH)
        else:
            check_int("steps_per_epoch", self.steps_per_epoch, 1)
            steps = self.steps_per_epoch
        epochs = auto_max_epochs(steps) if _is_auto(self.max_epochs) else self.max_epochs
        if _is_auto(self.hidden_units):
            width = (int(self.encoder.output_shape[-1]) if self.encoder is not None
                     else n_features)
            units = auto_hidden_units(n, width)
        else:
            units = tuple(self.hidden_units)
        return Plan(n_val, n_train, batch_size, ortho, steps, epochs, units, affinity, embedding,
                    n_clusters)

    @staticmethod
    def _most_clusters(n_clusters):
        """k, or the largest k an ``Eigengap`` may choose."""
        return n_clusters.max_clusters if isinstance(n_clusters, Eigengap) else n_clusters

    def _check_batch(self, name, value, n_train, n, k):
        if value is None:  # rounded down to equal shards under a strategy
            default = min(DEFAULT_BATCH_SIZE, n_train)
            return default - default % dist.n_replicas(self._strategy())
        check_int(name, value, k)
        dist.check_divisible(name, value, self._strategy())
        if value > n_train:
            raise ValueError(
                f"{name}={value} is larger than the {n_train} training points "
                f"(n_samples={n} minus the validation_fraction="
                f"{self.validation_fraction} hold-out)."
            )
        return value

    def fit(self, X, y=None, *, partial_labels=None, groups=None, eigvecs=None, resume=False,
            graph=None):
        """Train F_theta on X and cluster its embedding.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Or an ``h5py.Dataset`` / ``streaming.Rows`` on disk: with an
            ``encoder`` it is streamed through it a chunk at a time and never
            held in memory (e.g. the 685,000 Reuters documents). Or a
            ``tf.data.Dataset`` of rows or batches of rows (or of tuples
            whose first component they are, as Keras reads ``(x, y)``),
            read once, in order: into memory, or, with an ``encoder``, a
            batch at a time into a temporary HDF5 file, streamed from there.
        y : None
            Ignored, as by every scikit-learn clusterer (pipelines and
            ``cross_val_score`` pass true labels here). Semi-supervised labels
            go in ``partial_labels``.
        partial_labels : array-like of shape (n_samples,), optional
            Semi-supervised labels: a cluster in ``[0, n_clusters)`` for the
            few labeled points, -1 for all others (integers, or whole numbers
            stored as floats). Labeled pairs get affinity 1 (same label) or 0
            (different labels) and enrich the Siamese training pairs (paper
            Sec. 5.3); labeled points add a cross-entropy term
            (``label_weight``) and may be oversampled into every minibatch
            (``labeled_share``). With every point labeled, the affinity of a
            minibatch is the label graph (1 within a class, 0 across), so
            F_theta learns the class indicators: supervised training of the
            embedding, after which k-means recovers the classes.
        groups : array-like of int of shape (n_samples,), optional
            Points known to be views of one item, without its class: one id
            per point, equal for e.g. the deformations of one digit.
            Unsupervised (ids, not labels). Each gradient minibatch is drawn
            as pairs, a point and a random other member of its group (a
            random point where it has none), and a pair of one group gets
            the affinity's ``group_weight`` (by default the weight that makes
            their term of the loss equal to the rest at initialisation), so
            that F_theta maps the views of one item together (``groups``).
            With a Siamese ``affinity_embedding`` (and its ``group_pairs``),
            each point whose group has another member also gets a positive
            Siamese pair with a random member, so that the learned distance
            ignores what varies within a group. After training,
            ``group_labels_`` gives each group one cluster; ``labels_`` (and
            ``fit_predict``) keep each point's own.
        eigvecs : array of shape (n_samples, n_clusters), optional
            True Laplacian eigenvectors of X; if given, the history records
            the Grassmann distance to them after each epoch.
        resume : bool, default=False
            Continue from the checkpoints in ``checkpoint_dir`` (same X,
            labels and parameters). Without it, existing checkpoints there are
            an error, never silently reused.
        graph : sparse matrix or array of shape (n_samples, n_samples), optional
            With ``affinity="precomputed"`` (and only then): the affinity
            between the rows of X, symmetric, non-negative, every point with
            an edge to another (``affinity.check_graph``); its diagonal is
            ignored. F_theta maps X; each minibatch's W is this graph's
            submatrix.

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
        n = len(X)
        plan = self.plan(n, X.shape[1])
        precomputed = isinstance(plan.affinity, PrecomputedAffinity)
        if precomputed != (graph is not None):
            raise ValueError(
                "fit(X, graph=W) goes with affinity='precomputed' (a PrecomputedAffinity) and "
                f"only with it, got affinity={self.affinity!r} and graph="
                f"{'None' if graph is None else type(graph).__name__}.")
        if precomputed:
            graph = check_graph(graph, n)
        choose_k = isinstance(plan.n_clusters, Eigengap)
        if choose_k and partial_labels is not None:
            raise ValueError(
                "n_clusters='auto' chooses k from the graph alone; with partial_labels give "
                f"n_clusters as an integer, got n_clusters={self.n_clusters!r}.")
        labels = check_labels(partial_labels, n, self._most_clusters(plan.n_clusters))
        check_two_classes(labels)
        siamese = isinstance(plan.affinity_embedding, SiameseEmbedding)
        if groups is not None:
            groups = check_groups(groups, n)
        if eigvecs is not None and not choose_k and np.shape(eigvecs) != (n, plan.n_clusters):
            raise ValueError(
                f"eigvecs must have shape (n_samples, n_clusters) = ({n}, {plan.n_clusters}), "
                f"got eigvecs.shape={np.shape(eigvecs)}."
            )
        for stale in ("siamese_", "siamese_history_", "eigenvalues_", "n_clusters_chooser_"):
            self.__dict__.pop(stale, None)
        self._check_log_dir()
        checkpointers = self._checkpointers(resume, lambda: fingerprint(
            X, self._fingerprint_params(), partial_labels=None if partial_labels is None else labels,
            groups=groups,
            graph=None if graph is None else np.r_[graph.indptr, graph.indices, graph.data]))
        seeds = np.random.default_rng(_seed(self.random_state)).integers(0, 2**31 - 1, size=5)
        split_seed, scale_seed, net_seed, train_seed, siamese_seed = (int(s) for s in seeds)
        # Code space: encode once; everything below trains on the codes.
        start = time.perf_counter()
        Z = X if self.encoder is None else check_array(
            dist.map_rows(self.encoder, X, self._strategy()), "encoder(X)")
        encode_seconds = time.perf_counter() - start

        perm = np.random.default_rng(split_seed).permutation(n)
        z_val, z_train = Z[perm[:plan.n_val]], Z[perm[plan.n_val:]]
        labels_val, labels_train = labels[perm[:plan.n_val]], labels[perm[plan.n_val:]]
        embedding = plan.affinity_embedding
        graph_coords = None  # F_theta's views of the training rows (graph_views)

        def views_of(rows, n_views=None):  # views of X's rows, encoded as Z was
            return embedding.view_coordinates(X, siamese_seed, encode=self.encoder, rows=rows,
                                              strategy=self._strategy(), n_views=n_views)

        if siamese:  # a copy, fitted here: the parameter itself stays unfitted
            # The training rows the pairs are built on (at most max_samples).
            drawn = embedding.sample_rows(len(z_train), siamese_seed)
            rows, labels_pairs = perm[plan.n_val:][drawn], labels_train[drawn]
            # Views transform the input: made from X, encoded as Z was. The
            # graph views (F_theta's, of every training row) are the Siamese
            # net's first ones and more, by the same seeds: where the Siamese
            # net takes every training row, or the graph as many views, one
            # pass makes both.
            start = time.perf_counter()
            n_views = embedding.resolved_n_views()
            n_graph = graph_views(embedding)
            if n_graph and (isinstance(drawn, slice) or n_graph >= n_views):
                graph_coords = views_of(perm[plan.n_val:], max(n_views, n_graph))
                view_coords = graph_coords[:n_views, drawn]
            else:
                view_coords = views_of(rows)
            view_seconds = time.perf_counter() - start
            embedding.fit(z_train[drawn],
                          labels=labels_pairs if (labels_pairs >= 0).any() else None,
                          groups=None if groups is None else groups[rows],
                          view_coords=view_coords, seed=siamese_seed, verbose=self.verbose,
                          checkpointer=checkpointers.get("siamese"), strategy=self._strategy(),
                          log=self._epoch_log("siamese"))
            self.siamese_, self.siamese_history_ = embedding.model_, embedding.history_
            if view_coords is not None:
                self.siamese_history_["view_seconds"] = view_seconds
            del view_coords  # trained on; the graph views, if any, stay until joined
        self.affinity_embedding_ = embedding
        # F_theta's training set: the training points, and with graph_views
        # their views, each in one group with its point.
        z_fit, labels_fit = z_train, labels_train
        groups_fit = None if groups is None else groups[perm[plan.n_val:]]
        graph_view_seconds = None
        if graph_views(embedding):
            start = time.perf_counter()
            if graph_coords is None:  # the Siamese net drew fewer rows, with more views
                graph_coords = views_of(perm[plan.n_val:], embedding.graph_views)
            z_fit, labels_fit, groups_fit = self._with_graph_views(
                graph_coords[:embedding.graph_views], perm[plan.n_val:], z_train, labels_train,
                groups_fit)
            graph_view_seconds = time.perf_counter() - start
        del graph_coords  # copied into z_fit
        affinity = plan.affinity
        if embedding is not None:
            affinity.set_params(embedding=self.siamese_ if siamese else embedding)
        self.label_check_ = None
        if precomputed:  # the affinity's coordinates: each point's row in X (and W)
            coords = affinity.coordinates(n)
            self.affinity_ = affinity.fit(coords, plan.batch_size, graph=graph)
            c_val, c_train = coords[perm[:plan.n_val]], coords[perm[plan.n_val:]]
        else:
            self.affinity_ = affinity.fit(z_fit, plan.batch_size, seed=scale_seed)
            c_val = c_train = None
            # The labels alone, as coordinates of the graph (nothing without labels),
            # where on held-out labels the graph they reshape knows more than the graph.
            self.affinity_.fit_labels(Z, labels, z_fit, seed=scale_seed)
            self.label_check_ = check_label_classifier(self.affinity_, Z, labels,
                                                       batch_size=plan.batch_size,
                                                       seed=scale_seed,
                                                       laplacian=self.laplacian,
                                                       n_clusters=plan.n_clusters)
            if self.label_check_ is not None and not self.label_check_["keep"]:
                self.affinity_.forget_labels()
        k = plan.n_clusters
        if choose_k:
            # k is the data's: chosen from the points alone, not their views.
            chooser = plan.n_clusters.fit(self.affinity_, z_train if c_train is None else c_train,
                                          plan.batch_size, seed=scale_seed)
            # Every worker of a cluster builds the chief's k: rounding may tip a near-tie.
            k = int(dist.from_chief(np.array([chooser.n_clusters_], np.int32),
                                    self._strategy())[0])
            self.n_clusters_chooser_, self.eigenvalues_ = chooser, chooser.eigenvalues_
            if eigvecs is not None and np.shape(eigvecs)[1] != k:
                raise ValueError(f"eigvecs has {np.shape(eigvecs)[1]} columns, but "
                                 f"n_clusters={self.n_clusters!r} chose k={k}.")
        self.n_clusters_ = k
        with self._strategy().scope():  # mirrored variables under a strategy
            spectral_model, body = build_spectralnet(
                Z.shape[1], k, plan.hidden_units, seed=net_seed,
                output_activation=self.output_activation, dtype_policy=self.dtype_policy,
            )
        self.history_ = train_spectralnet(
            spectral_model, body, self.affinity_, z_fit, z_val,
            laplacian=self.laplacian, batch_size=plan.batch_size,
            ortho_batch_size=plan.ortho_batch_size, learning_rate=self.learning_rate,
            patience=self.patience, min_lr=self.min_lr, epochs=plan.max_epochs,
            steps_per_epoch=plan.steps_per_epoch, seed=train_seed, verbose=self.verbose,
            gradient=self.gradient, y_train=labels_fit, y_val=labels_val,
            labeled_share=self.labeled_share, label_weight=self.label_weight,
            checkpointer=checkpointers.get("spectral"),
            x_eval=Z if eigvecs is not None else None, eigvecs=eigvecs,
            strategy=self._strategy(), init=self.init, z_train=c_train, z_val=c_val,
            groups_train=groups_fit,
            group_weight=self.affinity_.group_weight,
            log=self._epoch_log("spectralnet"),
        )
        if self.encoder is not None:
            self.history_["encode_seconds"] = encode_seconds
        if graph_view_seconds is not None:
            self.history_["graph_view_seconds"] = graph_view_seconds
        self.model_ = (spectral_model if self.encoder is None
                       else compose_embedder(self.encoder, spectral_model))
        # Kept so callers need not run the encoder over X a second time.
        self.codes_ = None if self.encoder is None else Z
        embed_start = time.perf_counter()
        self.embedding_ = dist.map_rows(spectral_model, Z, self._strategy())
        self.normalize_rows_ = NORMALIZE_ROWS
        self.cluster_centers_ = fit_centroids(self.embedding_, k, train_seed,
                                              self.normalize_rows_)
        known = labels >= 0
        if known.any():  # clusters take the ids of the labelled classes they hold
            perm = label_permutation(labels[known], self._assign(self.embedding_[known]), k)
            self.cluster_centers_ = self.cluster_centers_[np.argsort(perm)]
        self.labels_ = self._assign(self.embedding_)
        self.group_labels_ = None
        if groups is not None:
            # A group's points are views of one item, so one class: their
            # cluster is the nearest centroid of their mean row.
            ids, means = group_means(self._clustered_rows(self.embedding_), groups)
            self.group_labels_ = self._assign(means)[ids]
        if self._writes_logs():
            phases = {"encode": encode_seconds,
                      "siamese": getattr(self, "siamese_history_", {}).get("seconds", 0.0),
                      "spectralnet": self.history_["seconds"],
                      "init": self.history_.get("init_seconds", 0.0),
                      "embed_and_kmeans": time.perf_counter() - embed_start}
            if "graph_view_seconds" in self.history_:
                phases["graph_views"] = self.history_["graph_view_seconds"]
            write_phase_seconds(self.log_dir, phases)
        return self

    def _writes_logs(self):
        """A ``log_dir`` is set and this process writes (not a non-chief worker)."""
        return self.log_dir is not None and dist.is_chief(self._strategy())

    def _epoch_log(self, run):
        """TensorBoard's ``log`` for a training phase, or None."""
        return EpochLog(os.fspath(self.log_dir), run) if self._writes_logs() else None

    @staticmethod
    def _with_graph_views(views, rows, z_train, labels_train, groups_train):
        """F_theta's training set with the Siamese embedding's graph views
        ``views`` (V, m, d): the training points (X's ``rows``, coded as
        ``z_train``), then each view of them in turn. A view takes its
        point's label (the classes survive views) and group: the user's group
        id, or else its point's row number."""
        ids = rows if groups_train is None else groups_train
        copies = 1 + len(views)
        return (np.concatenate([z_train, views.reshape(-1, views.shape[-1]).astype(
                    z_train.dtype, copy=False)]),
                np.tile(labels_train, copies), np.tile(ids, copies))

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
    #: and the epoch cap (a resume may train on for longer).
    RESUME_MAY_CHANGE = ("verbose", "checkpoint_dir", "log_dir", "distribute", "max_epochs")

    def _fingerprint_params(self):
        """The parameters a resumed fit must share with the first (JSON):
        all but ``RESUME_MAY_CHANGE``; an encoder by a hash of its weights; a
        random_state that is not an integer as "not an integer" (it draws
        its seed from a stream, which no record can compare)."""
        params = {key: part_to_json(value) for key, value in self.get_params(deep=False).items()
                  if key not in self.RESUME_MAY_CHANGE}
        for key, value in params.items():
            if isinstance(value, np.generic):
                params[key] = value.item()
        if not isinstance(self.random_state, numbers.Integral):
            params["random_state"] = (None if self.random_state is None
                                      else "not an integer")
        if self.encoder is not None:
            params["encoder"] = digest(np.concatenate(
                [np.ravel(w) for w in self.encoder.get_weights()]))
        if callable(self.affinity_embedding) and not isinstance(self.affinity_embedding,
                                                                SiameseEmbedding):
            params["affinity_embedding"] = type(self.affinity_embedding).__name__
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

    def predict(self, X, *, views=None, n_views=None, index=None, seed=None):
        """Cluster of each point: the nearest k-means centroid of its embedding.

        With ``views``, test-time augmentation: the centroid nearest the mean
        of the point's embedding and the embeddings of ``n_views`` transformed
        copies of it, each row taken as k-means saw it (scaled to unit length
        where ``normalize_rows_``). A transformation the classes survive
        keeps a copy in the point's class, so the copies outvote the point
        where it alone lies near a boundary (Krizhevsky, Sutskever & Hinton
        2012 averaged the predictions of ten crops). The exported SavedModel
        predicts the point alone.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), row source or tf.data.Dataset
            The points. With ``views``, a ``tf.data.Dataset`` is read whole
            into memory first; a row source is read a chunk at a time.
        views : {"shift", "deform", "redraw"} or callable, default=None
            A view as ``SiameseEmbedding(views=...)`` takes it:
            ``view(x, index, seed) -> x_view`` (``spectralnet_tf.views``).
            None: each point alone.
        n_views : int, default=None
            Transformed copies per point, beside the point itself (None: 9).
            Only with ``views``, as are ``index`` and ``seed``.
        index : array-like of int of shape (n_samples,), default=None
            The rows' numbers as the view reads them (default ``0 .. n - 1``):
            ``Redraw`` finds an infinite MNIST row's source digit by it, so
            rows from ``start`` on need ``start + arange(n)``.
        seed : int, default=None
            Seeds the copies (one seed per copy, ``views.view_seeds``; None: 0).

        Returns
        -------
        labels : ndarray of shape (n_samples,)

        Examples
        --------
        >>> from spectralnet_tf.views import Shift
        >>> net.predict(X_images, views=Shift(max_shift=2))  # doctest: +SKIP
        """
        if views is None:
            given = {name: value for name, value in
                     (("n_views", n_views), ("index", index), ("seed", seed)) if value is not None}
            if given:
                name = next(iter(given))
                raise ValueError(f"{name} goes with views, got {name}={given[name]!r} and "
                                 f"views=None.")
            return self._assign(self.transform(X))
        self._check_fitted()
        n_views = DEFAULT_N_VIEWS if n_views is None else n_views
        seed = 0 if seed is None else seed
        check_int("n_views", n_views, 1)
        check_int("seed", seed, 0)
        view = make_view(views)
        X = self._check_fitted_X(X)
        n = len(X)
        if index is None:
            index = np.arange(n, dtype=np.int64)
        index = np.asarray(index)
        if index.shape != (n,) or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(f"index must hold one integer row number per row of X, shape "
                             f"({n},), got index.shape={index.shape} and "
                             f"index.dtype={index.dtype}.")
        seeds = view_seeds(seed, n_views)
        labels = []
        for start in range(0, n, VIEW_CHUNK):
            rows = np.asarray(X[start:start + VIEW_CHUNK], np.float32)
            copies = ViewRows(rows, view, seeds, index=index[start:start + VIEW_CHUNK])
            embedded = np.concatenate([
                dist.map_rows(self.model_, rows, self._strategy())[:, None],
                dist.map_rows(self.model_, copies, self._strategy()).reshape(
                    len(rows), n_views, -1)], axis=1)
            k = embedded.shape[-1]
            mean = self._clustered_rows(embedded.reshape(-1, k)).reshape(embedded.shape)
            labels.append(self._assign(mean.mean(axis=1)))
        return np.concatenate(labels)

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
