"""The Siamese network that learns the affinity's distance (paper Sec. 3.2).

Pairs are built without labels: each point with its ``n_nbrs`` nearest
neighbours and with transformed copies of itself, its views (positives), and
as many random non-neighbours (negatives). The net is
trained with the contrastive loss (margin 1) by RMSprop under the same
validation-loss learning-rate schedule as SpectralNet. Each epoch runs as one
compiled ``tf.function``.
"""

import time

import keras
import numpy as np
import tensorflow as tf
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

import numbers

from . import distribute
from .callbacks import Checkpoint, ProgressBar, TensorBoardLog, Training, repeat, run_epochs
from .checks import Callable, HasMethods, Interval, Options, Units, validate_params
from .groups import random_members
from .losses import contrastive_loss
from .neighbors import BACKENDS, make_neighbors
from .networks import DTYPE_POLICIES, dense_stack
from .parts import PartsMixin, checked
from .schedule import Schedule, make_schedule
from .sampling import sample_rows
from .streaming import CHUNK_ROWS, Rows, map_batches
from .views import ViewRows, make_view, view_seeds

#: Draws ``SiameseEmbedding.sample_rows`` from a stream apart from the pairs'.
_SAMPLE_STREAM = 1

#: The validation loss is taken on at most this many of the held-out pairs
#: (MNIST: 63,000), so an epoch's cost does not grow with n.
VALIDATION_MAX_PAIRS = 65536
#: The Siamese net's schedule by default (``schedule=None``): at most 100
#: epochs, stopped by the plateau cuts alone (paper Appendix C).
SIAMESE_SCHEDULE = {"max_epochs": 100, "tol": 0.0}


def make_siamese_schedule(schedule):
    """The Siamese net's unfitted ``Schedule``: ``SIAMESE_SCHEDULE`` for
    None, else a copy of the object."""
    return make_schedule(schedule, **SIAMESE_SCHEDULE)


def make_pairs(x, n_nbrs=2, neighbors="auto", seed=0, labels=None, positives_per_point=None,
               groups=None, n_views=0):
    """Training pairs: ``(first, second, is_positive)`` arrays (int32 indices).

    Positives: (i, j) for each of i's ``n_nbrs`` nearest neighbours j (paper,
    MNIST: 2), or, with ``positives_per_point=p``, for p of them drawn at random
    (paper, Reuters: 1 of the 100 nearest). With ``n_views=V``, also (i, n + v n
    + i) for v < V: point i and its v-th view, rows that follow the n points in
    the array the pairs index (``SiameseEmbedding``'s ``views``).
    Negatives: one for each of these positives, (i, j) with j drawn uniformly
    among the n points that are not i and not among i's neighbours. With
    ``n_nbrs=0`` (views only) no neighbours are searched: building the pairs
    then costs the same per point at any n. With ``labels`` (-1: unknown),
    each labeled point also gets a positive pair with a random point of its
    label and a negative pair with a random point of another label (paper
    Sec. 5.3). With ``groups`` (an id per point; points with one id are views
    of one item, e.g. deformations of one digit), each point whose group has
    another member also gets a positive pair with a random one of them.
    """
    n = len(x)
    low = 0 if n_views else 1
    if not low <= n_nbrs <= n - 2:
        raise ValueError(
            f"n_nbrs must be in [{low}, n_samples - 2] = [{low}, {n - 2}] so that "
            f"non-neighbours exist for the negative pairs (0 only with views), got "
            f"n_nbrs={n_nbrs}."
        )
    if positives_per_point is not None and not 1 <= positives_per_point <= n_nbrs:
        raise ValueError(
            f"positives_per_point must be None or in [1, n_nbrs={n_nbrs}], got "
            f"positives_per_point={positives_per_point!r}."
        )
    index = np.int32 if n * (1 + n_views) < 2**31 else np.int64
    rng = np.random.default_rng(seed)
    nbrs = np.empty((n, 0), np.int64)
    if n_nbrs:
        _, nbrs = make_neighbors(neighbors, n_samples=n, random_state=seed).kneighbors(x, n_nbrs)
    if positives_per_point is None:
        first, pos_second = np.repeat(np.arange(n, dtype=index), n_nbrs), nbrs.ravel()
    else:
        cols = np.argsort(rng.uniform(size=nbrs.shape), axis=1)[:, :positives_per_point]
        first = np.repeat(np.arange(n, dtype=index), positives_per_point)
        pos_second = np.take_along_axis(nbrs, cols, axis=1).ravel()
    if n_views:  # point i, then each of its views (row n + v n + i)
        own = np.tile(np.arange(n, dtype=index), n_views)
        first = np.concatenate([first.astype(index), own])
        pos_second = np.concatenate([pos_second.astype(index),
                                     own + n * np.repeat(np.arange(1, n_views + 1, dtype=index), n)])
    neg_second = rng.integers(0, n, size=first.size)
    # Redraw the few draws that hit the point itself or one of its neighbours.
    bad = _is_neighbour(nbrs, first, neg_second)
    while bad.any():
        neg_second[bad] = rng.integers(0, n, size=int(bad.sum()))
        bad[bad] = _is_neighbour(nbrs, first[bad], neg_second[bad])
    firsts, seconds = [first, first], [pos_second, neg_second]
    flags = [np.ones(first.size, np.float32), np.zeros(first.size, np.float32)]
    extra = [make(given, rng) for make, given in ((_labeled_pairs, labels), (random_members, groups))
             if given is not None]
    for pairs in extra:
        for arrays, part in zip((firsts, seconds, flags), pairs):
            arrays.extend(part)
    # int32 indices: 8 bytes a pair instead of 16 (10 pairs a point on MNIST).
    return (np.concatenate(firsts).astype(index), np.concatenate(seconds).astype(index),
            np.concatenate(flags))


def _is_neighbour(nbrs, first, second, chunk=65536):
    """``second[p]`` is ``first[p]`` or one of its neighbours; by chunks, so
    that no (pairs × n_nbrs) array is ever whole."""
    out = second == first
    if not nbrs.shape[1]:
        return out
    for start in range(0, len(first), chunk):
        rows = slice(start, start + chunk)
        out[rows] |= (nbrs[first[rows]] == second[rows, None]).any(axis=1)
    return out


def _labeled_pairs(labels, rng):
    """One same-label and one other-label partner for each labeled point."""
    labels = np.asarray(labels)
    idx = np.flatnonzero(labels >= 0)
    first, second, flag = [], [], []
    for i in idx:
        same = idx[(labels[idx] == labels[i]) & (idx != i)]
        other = idx[labels[idx] != labels[i]]
        for pool, positive in ((same, 1.0), (other, 0.0)):
            if pool.size:
                first.append(i)
                second.append(rng.choice(pool))
                flag.append(positive)
    return ([np.asarray(first, np.int64)], [np.asarray(second, np.int64)],
            [np.asarray(flag, np.float32)])


#: Activations of the Siamese output layer: ours, and the paper's Table 3.
SIAMESE_OUTPUT_ACTIVATIONS = ("linear", "relu")


def build_siamese(input_dim, hidden_units=(1024, 1024, 512, 10), seed=0, output_activation="linear",
                  dtype_policy=None):
    """The Siamese branch G, shared by both sides of a pair: ReLU layers and an
    output layer of size ``hidden_units[-1]``, linear unless
    ``output_activation="relu"`` (the paper's, ``--preset paper``).

    The paper's Table 3 ends in a ReLU. On MNIST codes that left some output
    units dead (0 for every input), and the embedding's nearest neighbours
    agreed less often on the label than the codes' own; a linear output keeps
    every unit (measured by ``scripts/ablations.py siamese``).
    """
    *hidden, out = hidden_units
    layers = dense_stack(hidden, "relu", seed, "siamese", dtype_policy)
    layers.append(keras.layers.Dense(  # float32: the distances of the affinity
        out, activation=None if output_activation == "linear" else output_activation,
        kernel_initializer=keras.initializers.GlorotUniform(seed=seed + len(hidden)),
        dtype="float32", name="siamese_out"))
    return keras.Sequential([keras.Input((input_dim,), name="x"), *layers], name="siamese")


def train_siamese(net, x, pairs, *, batch_size=128, schedule=None, validation_fraction=0.1,
                  seed=0, verbose=1, checkpointer=None, strategy=None, log_dir=None):
    """Train ``net`` on ``pairs`` (from ``make_pairs``); returns the history dict.
    The epochs run as SpectralNet's do (``callbacks.run_epochs``), under a
    ``Schedule`` (None: ``SIAMESE_SCHEDULE``); with ``log_dir``, TensorBoard
    curves in ``log_dir/siamese``; with a ``checkpointer``, a checkpoint each
    epoch.

    An epoch is one pass over the training pairs in random order, or, with
    the schedule's ``steps_per_epoch``, that many minibatches of distinct
    random pairs (a step budget that does not grow with the number of pairs).

    With a ``tf.distribute`` ``strategy`` (``net`` built in its scope) each
    minibatch of pairs is split over the replicas (``distribute``)."""
    strategy = distribute.get(strategy)
    distribute.check_divisible("batch_size", batch_size, strategy)
    first, second, positive = pairs
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(first))
    n_val = max(1, int(round(validation_fraction * len(first))))
    val, tr = perm[:min(n_val, VALIDATION_MAX_PAIRS)], perm[n_val:]
    x_all = tf.constant(np.asarray(x, dtype=np.float32))
    tr_pairs = [tf.constant(a[tr]) for a in (first, second, positive)]
    val_pairs = [tf.constant(a[val]) for a in (first, second, positive)]
    n_pairs = len(tr)
    schedule = make_siamese_schedule(schedule)
    full_passes = schedule.steps_per_epoch is None
    steps, epochs = schedule.budget(max(1, n_pairs // batch_size))
    generator = tf.random.Generator.from_seed(seed)
    with strategy.scope():
        optimizer = keras.optimizers.RMSprop(schedule.learning_rate)
        optimizer.build(net.trainable_variables)

    def pair_loss(i, j, pos):
        # One forward pass over both sides of the pairs.
        z = net(tf.gather(x_all, tf.concat([i, j], axis=0)), training=True)
        z1, z2 = tf.split(z, 2)
        return contrastive_loss(z1, z2, pos)

    def step(idx):
        i, j, pos = (tf.gather(a, distribute.local_part(idx)) for a in tr_pairs)
        with tf.GradientTape() as tape:
            loss = distribute.replica_share(pair_loss(i, j, pos), tf.shape(idx)[0])
        grads = tape.gradient(loss, net.trainable_variables)
        optimizer.apply_gradients(zip(grads, net.trainable_variables))  # summed over replicas
        return distribute.all_sum(loss)

    @tf.function(autograph=False)
    def run_epoch():
        if full_passes:  # decided at trace time
            order = tf.argsort(generator.uniform([n_pairs]))

        def one(s):
            batch = (order[s * batch_size:(s + 1) * batch_size] if full_passes
                     else sample_rows(generator, n_pairs, batch_size))
            return distribute.run(strategy, step, batch)

        return repeat(steps, one) / tf.cast(steps, tf.float32)

    @tf.function(autograph=False)
    def validation_loss():
        i, j, pos = val_pairs
        return contrastive_loss(net(tf.gather(x_all, i)), net(tf.gather(x_all, j)), pos)

    stops = schedule.callbacks()
    callbacks = [*stops.values(), ProgressBar(verbose)]
    if log_dir is not None:
        callbacks.append(TensorBoardLog(log_dir, "siamese"))
    if checkpointer is not None:
        callbacks.append(Checkpoint(checkpointer, stops))
    training = Training("Siamese", net, optimizer, generator, epochs, strategy)
    return run_epochs(training, run_epoch, validation_loss, callbacks)


def fit_siamese(z, *, hidden_units=(1024, 1024, 512, 10), output_activation="linear",
                n_nbrs=2, positives_per_point=None, batch_size=128, schedule=None,
                neighbors="auto", labels=None, groups=None, view_coords=None, seed=0, verbose=0,
                checkpointer=None, strategy=None, dtype_policy="float32", log_dir=None):
    """Pairs from ``z`` (``make_pairs``), a new Siamese net built (in
    ``strategy``'s scope) and trained on them: returns ``(net, history)``. The
    keywords are ``SiameseEmbedding``'s parameters (its ``fit`` calls this);
    ``view_coords`` (V, n, d), if given, are V views of each row of ``z``,
    each paired with its row as a positive."""
    n_views = 0 if view_coords is None else len(view_coords)
    pairs = make_pairs(z, n_nbrs, neighbors, seed=seed, labels=labels,
                       positives_per_point=positives_per_point, groups=groups, n_views=n_views)
    if n_views:  # the views follow the points, as make_pairs indexes them
        z = np.concatenate([np.asarray(z, np.float32),
                            np.asarray(view_coords, np.float32).reshape(-1, np.shape(z)[1])])
    with distribute.get(strategy).scope():
        net = build_siamese(np.shape(z)[1], tuple(hidden_units),
                            output_activation=output_activation, seed=seed,
                            dtype_policy=dtype_policy)
    history = train_siamese(net, z, pairs, batch_size=batch_size, schedule=schedule, seed=seed,
                            verbose=verbose, checkpointer=checkpointer, strategy=strategy,
                            log_dir=log_dir)
    return net, history


class SiameseEmbedding(PartsMixin, BaseEstimator):
    """A learned distance for the affinity (paper Sec. 3.2): a Siamese net
    trained on unlabeled nearest-neighbour pairs, whose outputs the affinity
    then measures distances between.

    ``SpectralNet(affinity_embedding=SiameseEmbedding(...))`` fits a copy on
    its training points before the affinity's scale (``affinity_embedding_``);
    this object itself is never changed by that. A scikit-learn estimator in
    the ``get_params`` sense: ``clone`` and ``set_params`` work, also nested
    (``SpectralNet.set_params(affinity_embedding__schedule__max_epochs=3)``).

    Parameters
    ----------
    hidden_units : tuple of int, default=(1024, 1024, 512, 10)
        Layers of the net (paper Table 3): ReLU, except the output layer
        (``output_activation``), whose size is the embedding's.
    output_activation : {"linear", "relu"}, default="linear"
        The output layer's activation. The paper's is ReLU, which can leave
        output units dead (always 0) and so lose distance information
        (``build_siamese``).
    n_nbrs : int, default=2
        Positive pairs per point: its nearest neighbours (paper: 2 on MNIST).
        0 (only with ``views``): no neighbour search, the views are the only
        positives, and building the pairs costs the same per point at any n.
    positives_per_point : int or None, default=None
        None: pair each point with all ``n_nbrs`` neighbours. An int p: with p
        of them drawn at random (paper, Reuters: 1 of the 100 nearest).
    batch_size : int, default=128
        Pairs per minibatch.
    schedule : Schedule or None, default=None
        The learning rate and the stops (``Schedule``); None:
        ``Schedule(max_epochs=100, tol=0)`` (``SIAMESE_SCHEDULE``), stopped
        by the plateau cuts reaching ``min_lr``. Its ``steps_per_epoch``
        None is a pass over all pairs; an int, that many minibatches of
        random pairs, a budget that does not grow with n.
    dtype_policy : {"float32", "mixed_bfloat16", "auto"}, default="float32"
        Keras dtype policy of the ReLU layers; the output layer stays float32.
        "auto": bfloat16 where the hardware has bfloat16 units (as
        ``SpectralNet``'s).
    neighbors : {"auto", "exact", "annoy"}, default="auto"
        Nearest-neighbour backend for the pairs: exact (scikit-learn) up to
        20,000 points, annoy above.
    views : "shift", callable or None, default=None
        A transformation the classes are known to survive (``views``): each
        point is paired, as a positive, with ``n_views`` transformed copies
        of itself, so that the learned distance ignores it. A callable
        ``view(x, index, seed)`` maps input rows, their row numbers and a
        seed to transformed rows, each a function of (row, index, seed)
        alone. "shift": ``views.Shift()``, square images moved by up to 2
        pixels. Views transform the input: under ``SpectralNet(encoder=...)``
        they are encoded like the points.
    n_views : int or "auto", default="auto"
        View positives per point; "auto": as many as ``n_nbrs`` (the
        neighbour positives), and 1 when ``n_nbrs=0``.
    max_samples : int or None, default=None
        Build the pairs on at most this many of the points, drawn at random
        (None: all): their neighbours among those drawn, their views, their
        negatives and any labelled pairs. Above it, building the pairs costs
        the same at any n; with ``steps_per_epoch`` training does too, and
        the net, a function of the input, still embeds every point.
    group_pairs : bool, default=True
        Whether ``fit``'s ``groups`` add Siamese positives: for each point
        whose group has another member, a pair with a random one of them.
        False: groups reach SpectralNet's graph only (``SpectralNet.fit``),
        as where ``views`` already pair each point with copies of its item.

    Attributes
    ----------
    model_ : keras.Model
        The trained net (``__call__`` and ``transform`` apply it).
    history_ : dict
        Per epoch "loss", "val_loss", "lr"; "seconds" of training.

    Examples
    --------
    >>> from spectralnet_tf import Schedule, SpectralNet, SiameseEmbedding
    >>> net = SpectralNet(n_clusters=10, affinity_embedding=SiameseEmbedding(
    ...     hidden_units=(256, 256, 10), n_nbrs=5, schedule=Schedule(max_epochs=50)))
    >>> net.set_params(affinity_embedding__batch_size=512).affinity_embedding.batch_size
    512
    """

    def __init__(self, hidden_units=(1024, 1024, 512, 10), output_activation="linear",
                 n_nbrs=2, positives_per_point=None, batch_size=128, schedule=None,
                 dtype_policy="float32", neighbors="auto", views=None, n_views="auto",
                 max_samples=None, group_pairs=True):
        self.hidden_units = hidden_units
        self.output_activation = output_activation
        self.n_nbrs = n_nbrs
        self.positives_per_point = positives_per_point
        self.batch_size = batch_size
        self.schedule = schedule
        self.dtype_policy = dtype_policy
        self.neighbors = neighbors
        self.views = views
        self.n_views = n_views
        self.max_samples = max_samples
        self.group_pairs = group_pairs

    #: Trained in ``fit`` (``FixedEmbedding``: given).
    trains = True

    #: The parameter that holds a part (nested keys: ``schedule__max_epochs``).
    _parts = {"schedule": make_siamese_schedule}

    _parameter_constraints = {
        "hidden_units": [Units()],
        "output_activation": [Options(*SIAMESE_OUTPUT_ACTIVATIONS)],
        "n_nbrs": [Interval(numbers.Integral, 0, None, closed="left")],
        "positives_per_point": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "schedule": [None, Schedule],
        "dtype_policy": [Options(*DTYPE_POLICIES)],
        "neighbors": [Options(*BACKENDS), HasMethods("kneighbors")],
        "views": [None, "shift", Callable()],
        "n_views": ["auto", Interval(numbers.Integral, 1, None, closed="left")],
        "max_samples": [None, Interval(numbers.Integral, 2, None, closed="left")],
        "group_pairs": [bool, np.bool_],
    }

    def check_params(self, strategy=None):
        """Raise a ValueError naming the first bad parameter; under a
        ``tf.distribute`` strategy ``batch_size`` must divide by its replicas."""
        validate_params(self, self._parameter_constraints)
        checked("schedule", self.schedule, make_siamese_schedule(self.schedule))
        if self.views is None and self.n_nbrs == 0:
            raise ValueError("n_nbrs must be an integer >= 1, got n_nbrs=0 (0 only with views, "
                             "whose copies are then the only positives).")
        distribute.check_divisible("batch_size", self.batch_size, distribute.get(strategy))

    def resolved_n_views(self):
        """View positives per point: 0 without ``views``; ``n_views``, or for
        "auto" as many as the neighbour positives (1 with none)."""
        if self.views is None:
            return 0
        return max(self.n_nbrs, 1) if self.n_views == "auto" else self.n_views

    def sample_rows(self, n, seed):
        """Which of n points ``fit`` builds pairs on: ``slice(None)`` (all)
        or, above ``max_samples``, that many row numbers, ascending, drawn
        from ``seed`` alone."""
        if self.max_samples is None or n <= self.max_samples:
            return slice(None)
        rng = np.random.default_rng([seed, _SAMPLE_STREAM])
        return np.sort(rng.choice(n, self.max_samples, replace=False))

    def view_coordinates(self, X, seed, encode=None, rows=None, strategy=None, n_views=None):
        """The views of X's rows that ``fit`` pairs them with: (V, m, d) for
        ``V = resolved_n_views()`` views (or ``n_views``, drawn from the same
        seeds: the first are those) of the m rows ``rows`` (default all)
        of X, mapped by ``encode`` (e.g. an encoder; default: as they are),
        each view's seed drawn from ``seed``; None without ``views``. X may be
        a lazy row source: views are made and encoded a chunk at a time."""
        self.check_params(strategy)
        if self.views is None:
            return None
        view = make_view(self.views)
        source, ordered = X, None
        if rows is not None:  # Rows reads increasing rows; put them back in the given order
            rows = np.asarray(rows, np.int64)
            ordered = np.sort(rows)
            back = np.searchsorted(ordered, rows)
            source = Rows(X, ordered)  # only these rows are transformed and encoded
        # All views of a row are made together, in chunks of whole rows' views,
        # so that each row is read once.
        seeds = view_seeds(seed, self.resolved_n_views() if n_views is None else n_views)
        made = ViewRows(source, view, seeds, index=ordered)
        chunk = len(seeds) * max(1, CHUNK_ROWS // len(seeds))
        coords = (map_batches(None, made, chunk) if encode is None
                  else distribute.map_rows(encode, made, strategy, chunk))
        coords = np.swapaxes(coords.reshape(len(source), len(seeds), coords.shape[-1]), 0, 1)
        return np.ascontiguousarray(coords) if rows is None else coords[:, back]

    def fit(self, X, y=None, *, labels=None, groups=None, view_coords=None, seed=0, verbose=0,
            checkpointer=None, strategy=None, log_dir=None):
        """Train a new net on the pairs of X (``make_pairs``): its nearest
        neighbours and its views, plus pairs from ``labels`` (-1: unknown) and
        ``groups`` (ids of views of one item; not with ``group_pairs=False``),
        if given; above
        ``max_samples`` points, on the rows ``sample_rows`` draws. ``y`` is
        ignored. ``view_coords`` (V, n, d) are the views in X's space, as
        ``view_coordinates`` makes them; by default made here from X itself.
        With a ``checkpointer`` it checkpoints each epoch and resumes from
        one; under a ``tf.distribute`` ``strategy`` each minibatch is split
        over its replicas; with ``log_dir`` it writes TensorBoard curves to
        ``log_dir/siamese``. Returns self."""
        self.check_params(strategy)
        if not self.group_pairs:
            groups = None
        if view_coords is not None:
            expected = (self.resolved_n_views(), len(X), np.shape(X)[1])
            if np.shape(view_coords) != expected:
                raise ValueError(f"view_coords must have shape (n_views, n_samples, n_features) "
                                 f"= {expected}, got {np.shape(view_coords)}.")
        for name, given in (("labels", labels), ("groups", groups)):
            if given is not None and len(given) != len(X):
                raise ValueError(f"{name} must have one entry per row of X ({len(X)}), got "
                                 f"len({name})={len(given)}.")
        rows = self.sample_rows(len(X), seed)
        drawn = not isinstance(rows, slice)
        view_seconds = 0.0
        if self.views is not None and view_coords is None:
            start = time.perf_counter()  # views of the drawn rows, by their row numbers
            view_coords = self.view_coordinates(X, seed, rows=rows if drawn else None,
                                                strategy=strategy)
            view_seconds = time.perf_counter() - start
        elif view_coords is not None and drawn:
            view_coords = np.asarray(view_coords)[:, rows]
        if drawn:
            X = np.asarray(X)[rows]
            labels, groups = (None if a is None else np.asarray(a)[rows] for a in (labels, groups))
        self.model_, self.history_ = fit_siamese(
            X, hidden_units=tuple(self.hidden_units), output_activation=self.output_activation,
            n_nbrs=self.n_nbrs, positives_per_point=self.positives_per_point,
            batch_size=self.batch_size, schedule=self.schedule, neighbors=self.neighbors,
            labels=labels, groups=groups, view_coords=view_coords, seed=seed, verbose=verbose,
            checkpointer=checkpointer, strategy=strategy, dtype_policy=self.dtype_policy,
            log_dir=log_dir)
        if view_seconds:
            self.history_["view_seconds"] = view_seconds
        return self

    def __call__(self, x):
        """The embedding of a batch x (a tensor), for the affinity."""
        return self.model_(x)

    def transform(self, X):
        """The embedding of every row of X (numpy float32, in batches)."""
        if not hasattr(self, "model_"):
            raise NotFittedError("This SiameseEmbedding is not fitted yet; call fit first.")
        return map_batches(self.model_, X)



class FixedEmbedding:
    """A given map from points to the coordinates the affinity measures
    distances in (e.g. a trained Keras model), kept fixed: the interface of
    ``SiameseEmbedding`` with nothing to train. ``SpectralNet`` holds one for
    an ``affinity_embedding`` that is a callable."""

    trains = False

    def __init__(self, model):
        self.model_ = model

    def check_params(self, strategy=None):
        pass

    def __call__(self, x):
        return self.model_(x)

    def transform(self, X):
        return map_batches(self.model_, X)
