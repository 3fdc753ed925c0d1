"""Training: Algorithm 1 of the paper, and the learning-rate schedule it uses.

``train_spectralnet`` reads top to bottom as Algorithm 1. One epoch of
iterations (ortho step, then gradient step, each on a fresh random minibatch)
runs inside one compiled ``tf.function``; Python only runs between epochs, for
the validation loss, the schedule, the history and the progress bar.
"""

import functools
import time

import keras
import numpy as np
import tensorflow as tf

from . import distribute
from .affinity import apply_labels
from .groups import GroupTable, apply_groups, group_pairs
from .losses import label_loss, spectral_loss
from .metrics import grassmann
from .orthonorm import gram, tangent_projection
from .spectral import cluster_graph, laplacian_eigenvectors, poisson_labels
from .streaming import map_batches

GRADIENTS = ("projected", "plain")
#: How F_theta starts: "spectral" (``spectral_warm_start``) or "random" (the
#: paper's: Glorot weights only).
INITS = ("random", "spectral")
#: Points of the subsample whose exact eigenvectors start F_theta (at least
#: one minibatch).
WARM_START_POINTS = 4096
#: Regression steps that fit F_theta to them, and their RMSprop rate (its
#: own: Algorithm 1's may be far smaller, e.g. 5e-5 on Reuters).
WARM_START_STEPS = 500
WARM_START_LR = 1e-3
#: RMS of the regression targets: inside tanh's range; Orthonorm undoes the scale.
WARM_START_RMS = 0.25
#: Algorithm 1 must refine the warm start, not leave it. An epoch that takes
#: F_theta farther than this (Grassmann distance) from the subsample
#: eigenvectors it was fitted to has left the start: half of the one whole
#: direction by which a saddle is off (distance >= 1).
START_KEPT_MAX = 0.5


class PlateauSchedule:
    """Divide the learning rate by 10 after ``patience`` epochs without
    improvement of the validation loss; stop once it reaches ``min_lr``
    (paper Appendix C, Table 4)."""

    def __init__(self, optimizer, patience=10, factor=0.1, min_lr=1e-8):
        self.optimizer = optimizer
        self.patience = patience
        self.factor = factor
        self.min_lr = min_lr
        self.best = np.inf
        self.wait = 0

    @property
    def lr(self):
        return float(self.optimizer.learning_rate.numpy())

    def update(self, val_loss):
        """Record one epoch's validation loss; return True when training should stop."""
        if val_loss < self.best:
            self.best, self.wait = val_loss, 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.cut()
        return self.reaches_min(self.lr)

    def cut(self):
        """Divide the rate by ``factor``; the patience count starts again."""
        self.optimizer.learning_rate.assign(self.lr * self.factor)
        self.wait = 0

    def reaches_min(self, lr):
        """Whether a rate ``lr`` is at ``min_lr`` (to rounding) or under it."""
        return lr <= self.min_lr * (1 + 1e-6)


def run_epochs(run_epoch, validation_loss, schedule, epochs, verbose=1, monitor=None,
               name="training", checkpointer=None, objects=None, started=None, log=None,
               strategy=None):
    """The epoch loop shared by every training: one compiled ``run_epoch`` call,
    the validation loss, the learning-rate schedule, the history and a Keras
    progress bar. ``monitor(epoch)`` may add values to the history, and
    ``started`` (name -> value) entries from before the first epoch.
    ``log(epoch, values)`` receives each epoch's values and its seconds (e.g.
    ``summaries.EpochLog``, for TensorBoard). Under a multi-worker
    ``strategy`` each epoch's values are first agreed on by all workers
    (``distribute.agree``), so that every branch of the schedule is taken on
    every worker.

    With a ``checkpointer``, ``objects`` (name -> trackable: the model's
    variables as a list, which includes non-trainable ones such as the
    Orthonorm kernel; the optimizer; the RNG) are saved after each epoch with the schedule and history, and a
    previous checkpoint in its directory is resumed from: same weights,
    optimizer slots, learning rate and RNG stream.
    """
    history = {"loss": [], "val_loss": [], "lr": [], **(started or {})}
    first_epoch, earlier_seconds = 0, 0.0
    if checkpointer is not None:
        state = checkpointer.restore(objects)
        if state is not None:
            history, first_epoch = state["history"], state["epoch"]
            schedule.best, schedule.wait = state["best"], state["wait"]
            earlier_seconds = state["seconds"]
            if state["stopped"] or first_epoch >= epochs:
                return {**history, "seconds": earlier_seconds}
    # It counts epochs, so its rate is seconds per epoch (Keras says "step").
    progbar = keras.utils.Progbar(epochs, verbose=verbose, unit_name="epoch")
    start = time.perf_counter()
    for epoch in range(first_epoch, epochs):
        epoch_start = time.perf_counter()
        try:
            loss = float(run_epoch())
        except tf.errors.InvalidArgumentError as err:
            raise FloatingPointError(
                f"{name} failed in epoch {epoch + 1}: {err.message}"
            ) from err
        seconds = time.perf_counter() - epoch_start
        history.setdefault("epoch_seconds", []).append(seconds)
        values = {"loss": loss, "val_loss": float(validation_loss()), "lr": schedule.lr}
        values.update(monitor(epoch) if monitor else {})
        values = distribute.agree(values, strategy)
        for key, value in values.items():
            history.setdefault(key, []).append(value)
        if log is not None:
            log(epoch, {**values, "epoch_seconds": seconds})
        stop = schedule.update(values["val_loss"])
        finished = stop or epoch + 1 == epochs
        progbar.stateful_metrics = set(values)
        progbar.update(epoch + 1, list(values.items()), finalize=finished)
        if checkpointer is not None and (finished or (epoch + 1) % checkpointer.every == 0):
            checkpointer.save(epoch + 1, objects, {
                "history": history, "best": schedule.best, "wait": schedule.wait,
                "stopped": stop,
                "seconds": earlier_seconds + time.perf_counter() - start})
        if stop:
            break
    history["seconds"] = earlier_seconds + time.perf_counter() - start
    return history


def warm_up(optimizer, learning_rate, steps):
    """Raise the rate linearly to ``learning_rate`` over the first ``steps``
    updates (in a compiled loop, before each one). RMSprop's first updates
    are about 3 learning rates per weight whatever the gradient (its
    squared-gradient average starts at 0); from a warm start those first
    updates would carry the net far from the eigenvectors it was fitted to
    before the average settles."""
    done = tf.cast(optimizer.iterations, tf.float32)
    if done < steps:
        optimizer.learning_rate.assign(learning_rate * (done + 1.0) / steps)


#: The validation loss is taken on at most this many minibatches of the
#: hold-out (MNIST's 7,000 points make 7), so an epoch's cost does not grow with n.
VALIDATION_MAX_BATCHES = 16
#: Up to this many rows, a minibatch is the top m of n uniforms: O(n) per
#: draw, the stream of every recorded run (MNIST: 63,000 rows). Above, O(m)
#: draws (``distinct_draws``), so a step costs the same at any n.
TOPK_SAMPLING_MAX_N = 1 << 17


def sample_rows(generator, n, m, preferred=None, m_preferred=0):
    """m distinct indices drawn uniformly from range(n). With ``preferred``
    (row indices) and ``m_preferred`` > 0, that many are drawn from
    ``preferred`` and the rest uniformly from all other rows (oversampling).
    ``n`` is a Python int: the method is chosen when the step is traced."""
    pick = None
    if preferred is not None and m_preferred > 0:
        pick = tf.math.top_k(generator.uniform(tf.shape(preferred)), k=m_preferred).indices
        pick = tf.gather(preferred, pick)
    if n > TOPK_SAMPLING_MAX_N:
        return distinct_draws(generator, n, m, pick)
    scores = generator.uniform([n])
    if pick is not None:
        scores = tf.tensor_scatter_nd_add(scores, pick[:, None], tf.ones([m_preferred]))
    return tf.math.top_k(scores, k=m).indices


def distinct_draws(generator, n, m, first=None):
    """m distinct indices of range(n) (int32), ``first`` (distinct) leading:
    uniform draws with replacement, each repeat dropped (``tf.unique`` keeps
    first occurrences in order), which is sampling without replacement; 2m
    draws, and more in the rare case that they hold fewer than m distinct."""
    def more(rows, count):
        draws = generator.uniform([count], minval=0, maxval=n, dtype=tf.int64)
        return tf.unique(tf.concat([rows, tf.cast(draws, tf.int32)], axis=0))[0]

    rows = more(tf.zeros([0], tf.int32) if first is None else tf.cast(first, tf.int32), 2 * m)
    rows = tf.while_loop(lambda r: tf.shape(r)[0] < m, lambda r: [more(r, m)], [rows],
                         shape_invariants=[tf.TensorShape([None])])[0]
    return rows[:m]


def validation_batches(x_val, z_val, y_val, batch_size, affinity, n_classes):
    """Fixed validation minibatches ``(x, W, targets)``, W computed once; the
    targets are the labeled points' one-hot rows (zeros for the others)."""
    n_batches = max(1, int(np.ceil(len(x_val) / batch_size)))
    split = functools.partial(np.array_split, indices_or_sections=n_batches)
    return [
        (tf.constant(xb), apply_labels(affinity.kernel_matrix(tf.constant(zb)), tf.constant(yb)),
         tf.one_hot(yb, n_classes))
        for xb, zb, yb in zip(split(x_val), split(z_val), split(y_val))
    ]


def subsample_size(n, batch_size):
    """Points of a subsample solved exactly (the warm start's eigenvectors,
    the label targets): ``WARM_START_POINTS``, at least one minibatch, all n
    if there are fewer."""
    return min(n, max(WARM_START_POINTS, batch_size))


def subsample_graph(affinity, z_sub, batch_size):
    """Dense W on the subsample coordinates ``z_sub`` of the graph the
    minibatches sample (``Affinity.for_full_data`` at the subsample's size)."""
    return affinity.for_full_data(len(z_sub), batch_size).kernel_matrix(tf.constant(z_sub))


def label_subsample(labels, size, seed):
    """The sorted rows of a subsample of ``size`` points (of ``labels``, -1:
    unknown) that holds every labeled point it has room for, the rest drawn
    at random: the points ``label_targets`` and ``check_label_classifier``
    solve the graph on. The same rows for the same ``seed``."""
    labeled = np.flatnonzero(labels >= 0)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(labeled)[:size]
    unlabeled = np.flatnonzero(labels < 0)
    return np.sort(np.r_[rows, rng.choice(unlabeled, size - len(rows), replace=False)])


def check_label_classifier(affinity, z, labels, *, batch_size, seed=0,
                           laplacian="unnormalized", n_clusters=None):
    """Whether the label classifier should reshape the graph: whether the
    graph it reshapes knows more of the labels it did not see than the graph
    as it is.

    The classifier of the labels alone (``affinity.label_classifier_``, set
    by ``fit_labels``) reaches the fit only through the graph it reshapes:
    the minibatches' affinity and the label term's classes
    (``label_targets``) are read from it. Where the graph already tells the
    classes apart, the reshaping can only carry the classifier's errors into
    it, and with many classes its cuts can leave the graph nearly
    disconnected, where Poisson learning's classes follow the near-null
    modes rather than the labels. So both graphs are asked for labels they
    did not see. The graph is the one the minibatches sample, on a
    subsample that holds the labeled points (``label_subsample``). Over
    stratified folds of its labeled points, drawn as those the classifier's
    C and gamma were chosen on (``labelscores.label_folds``), the classifier
    is refitted on the other folds with those C and gamma and reshapes the
    graph as the affinity would (its strength and width). Each graph answers
    for the held-out fold in two ways, and scores the better of them:
    Poisson learning (``spectral.poisson_labels``) with the other folds'
    labels as sources (a point no label reaches counts as wrong), and its
    own cut (``graph_cut``: what the graph says with no labels, the
    unsupervised fit's reading) with each cluster named by the other folds'
    labels in it (``named_cut``). The reshaped graph is kept only where it
    scores strictly higher (``keep``); a tie goes to the graph as it is,
    which holds what the labels say without the classifier's errors.

    ``z`` are the rows ``fit_labels`` was given and ``labels`` theirs (-1:
    unknown); ``laplacian`` and ``n_clusters`` are the fit's (None: one
    more than the largest label), the cuts' k. Returns None when there is nothing
    to check (no classifier, or a class with a single label in the
    subsample, where there are no folds), else a dict of held-out
    accuracies: ``classifier`` (the refitted classifier itself, for the
    record), ``reshaped`` and ``graph`` (each the better of its two
    readings), ``reshaped_poisson``, ``reshaped_cut``, ``poisson``, ``cut``;
    ``labeled`` (the labeled points asked), ``keep``, and ``params``, the C
    and gamma of the classifier checked (``labelscores.machine_params``): with
    a dozen labels the setting depends on the draw of the folds, and the
    record says which one this fit drew.
    """
    from sklearn.base import clone

    from .labelscores import LabelScores, label_folds, machine_params

    classifier = getattr(affinity, "label_classifier_", None)
    if classifier is None:
        return None
    labels = np.asarray(labels)
    size = subsample_size(len(z), batch_size)
    rows = label_subsample(labels, size, seed)
    sub = labels[rows]
    labeled = np.flatnonzero(sub >= 0)
    folds = label_folds(sub[labeled], seed)
    if folds is None:
        return None
    scores = affinity.label_scores_
    plain = affinity.for_full_data(size, batch_size)
    plain.forget_labels()  # the graph as it is without the classifier
    e = plain.embed_all(np.asarray(z)[rows])
    w = plain.kernel_matrix(tf.constant(e)).numpy()
    k = int(labels.max()) + 1 if n_clusters is None else n_clusters
    cut = graph_cut(w, k, laplacian, seed)
    right = dict.fromkeys(["classifier", "reshaped_poisson", "reshaped_cut", "poisson", "cut"], 0)
    for train, test in folds.split(labeled, sub[labeled]):
        seen, asked = labeled[train], labeled[test]
        fold = clone(classifier).fit(e[seen], sub[seen])
        reshaped = LabelScores(None, fold, scores.strength, scores.scale)(e)
        w_fold = plain.kernel_matrix(tf.constant(reshaped)).numpy()
        hidden = sub.copy()
        hidden[asked] = -1
        answers = {"classifier": fold.predict(e[asked]),
                   "reshaped_poisson": poisson_labels(w_fold, hidden, k)[asked],
                   "reshaped_cut": named_cut(graph_cut(w_fold, k, laplacian, seed), seen,
                                             sub[seen], k)[asked],
                   "poisson": poisson_labels(w, hidden, k)[asked],
                   "cut": named_cut(cut, seen, sub[seen], k)[asked]}
        for name, answer in answers.items():
            right[name] += int(np.sum(answer == sub[asked]))
    right["reshaped"] = max(right["reshaped_poisson"], right["reshaped_cut"])
    right["graph"] = max(right["poisson"], right["cut"])
    out = {name: round(count / labeled.size, 4) for name, count in right.items()}
    return {**out, "labeled": int(labeled.size), "keep": right["reshaped"] > right["graph"],
            "params": machine_params(classifier)}


def graph_cut(w, k, laplacian="unnormalized", seed=0):
    """The graph's own k clusters, no labels used: exact spectral clustering
    of the affinity ``w`` (``spectral.cluster_graph``), its eigenvectors'
    rows rounded as ``fit`` rounds the net's (``centroids.NORMALIZE_ROWS``)."""
    from .centroids import NORMALIZE_ROWS

    return cluster_graph(w, k, laplacian, seed, normalize_rows=NORMALIZE_ROWS)[0]


def named_cut(clusters, rows, classes, k):
    """Each point's class by its cluster: the class most of the labeled
    ``rows`` (with ``classes``) in that cluster have (ties: the lowest); -1
    in a cluster that holds none of them."""
    counts = np.zeros((int(clusters.max()) + 1, k), np.int64)
    np.add.at(counts, (clusters[rows], classes), 1)
    names = np.where(counts.sum(axis=1) > 0, counts.argmax(axis=1), -1)
    return names[clusters]


def label_targets(affinity, z_train, labels, k, *, batch_size, seed=0, strategy=None):
    """The class targets of the label term (``losses.label_loss``), (n, k)
    one-hot rows: the labeled points' own classes; on the unlabeled points of
    a subsample, the class that Poisson learning on the graph SpectralNet's
    minibatches sample gives them (``spectral.poisson_labels`` of
    ``Affinity.for_full_data`` on the subsample: the largest of the k
    functions); zero rows on the other points.

    Through the labeled points alone, a few labels are a few percent of a
    minibatch's loss, and the net can end far from what the graph and the
    labels say together where the graph makes a wrong cut cheaper than the
    labeled one. The targets ask every point of the subsample for that
    class. Poisson learning, not the harmonic function (the minimiser of the
    Laplacian quadratic form with the labels held, ``harmonic_scores``),
    because the harmonic function flattens away from the labels when they
    are few, and its largest component then leans to the class with more
    labels wherever the graph puts a point; the Poisson solution, the same
    Laplacian with the labels as centred sources, keeps its shape
    (docs/semisupervised.md). Classes, not the values: a point's u says
    which class leads there, but it is not a distribution over the classes.

    The subsample (``WARM_START_POINTS`` points, at least one minibatch, all
    of them if there are fewer) holds every labeled point it has room for,
    the rest drawn at random; ``z_train`` are the points' affinity
    coordinates. A point in a part of the subsample's graph that no label
    reaches gets no target. The same targets for the same ``seed``.
    """
    n = len(z_train)
    targets = np.zeros((n, k), np.float32)
    labeled = np.flatnonzero(labels >= 0)
    targets[labeled, labels[labeled]] = 1.0
    rows = label_subsample(labels, subsample_size(n, batch_size), seed)
    if (labels[rows] < 0).any():
        w = subsample_graph(affinity, z_train[rows], batch_size)
        classes = poisson_labels(w.numpy(), labels[rows], k)  # labeled rows keep theirs
        reached = classes >= 0
        targets[rows[reached]] = np.eye(k, dtype=np.float32)[classes[reached]]
    return distribute.run(distribute.get(strategy), distribute.from_first,
                          tf.constant(targets)).numpy()


def minibatch_loss(w, y, laplacian="unnormalized", targets=None, label_weight=0.0):
    """The loss of one minibatch: the SpectralNet loss, plus ``label_weight``
    times the cross-entropy of the points' class ``targets``
    (``losses.label_loss``) when they are given. Training and validation
    both use it.

    In a replica of a ``tf.distribute`` strategy, ``w`` holds this replica's
    rows of W (``affinity.kernel_matrix``) and ``y`` the gathered outputs of
    the whole minibatch; the result is this replica's part of the loss, and
    the parts sum to the loss of the global minibatch.
    """
    rows, cols, degrees = y, None, None
    if distribute.sharded():  # w holds this replica's rows of W
        rows, cols = distribute.local_part(y), y
        if laplacian == "normalized":
            degrees = distribute.all_gather(tf.reduce_sum(w, axis=1))
    loss = spectral_loss(w, rows, laplacian, y_cols=cols, d_cols=degrees)
    if targets is not None and label_weight > 0:
        # Computed in full on every replica: each adds its share.
        loss += distribute.even_share(label_weight * label_loss(y, targets))
    return loss


def gradient_step(model, optimizer, x_batch, w, laplacian="unnormalized", gradient="projected",
                  targets=None, label_weight=0.0):
    """One gradient step of Algorithm 1 on a minibatch and its affinity ``w``;
    the Orthonorm kernel is non-trainable, so it is a constant here. With
    class ``targets`` and ``label_weight`` > 0 the loss adds that multiple of
    their cross-entropy (``losses.label_loss``). Returns the loss.

    Under a strategy, ``x_batch`` is this replica's shard of the global
    minibatch, ``w`` its rows of W and ``targets`` those of the global batch:
    the outputs are gathered, the gradients of the replicas' parts of the
    loss with respect to Y are summed, so every replica holds the global
    batch's ∂L/∂Y (and projects it), and each back-propagates its own rows.
    """
    with tf.GradientTape() as tape:
        y_local = tf.cast(model(x_batch, training=True), tf.float32)  # no-op unless mixed precision
    y = distribute.all_gather(y_local)
    with tf.GradientTape() as loss_tape:
        loss_tape.watch(y)
        loss = minibatch_loss(w, y, laplacian, targets, label_weight)
    grad_y = distribute.all_sum(loss_tape.gradient(loss, y))
    if gradient == "projected":
        grad_y = tangent_projection(y, grad_y)
    grads = tape.gradient(y_local, model.trainable_variables,
                          output_gradients=distribute.local_part(grad_y))
    # Summed over replicas by the optimizer (distribute.py).
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return distribute.all_sum(loss)


def warm_start_eigenvectors(affinity, x_train, k, *, batch_size, laplacian="unnormalized",
                            seed=0, labels=None, strategy=None, z_train=None, groups=None,
                            group_weight=1.0):
    """The start ``spectral_warm_start`` fits F_theta to: a random subsample
    of ``WARM_START_POINTS`` rows of ``x_train`` (at least one minibatch; all
    of them if there are fewer) and the ``k`` smallest eigenvectors of the graph
    SpectralNet's minibatches sample (``Affinity.for_full_data``) on it,
    computed exactly (under a strategy, the first replica's are used
    everywhere), scaled to RMS ``WARM_START_RMS``. Labeled pairs (``labels``,
    -1: unknown) override the subsample's affinity as in training
    (``affinity.apply_labels``). With ``groups`` (a ``GroupTable`` of the
    training rows) the subsample is drawn as the minibatches are, half of
    it rows and the other half a partner of one group for each (repeats
    dropped), and pairs of one group get affinity ``group_weight``. The
    same (rows, targets) for the same ``seed``: a resumed fit measures
    against them again (``near_the_start``)."""
    strategy = distribute.get(strategy)
    n = len(x_train)
    size = subsample_size(n, batch_size)
    rng = np.random.default_rng(seed)
    if groups is None or size == n:
        rows = np.sort(rng.choice(n, size, replace=False))
    else:
        first = rng.choice(n, size - size // 2, replace=False).astype(np.int32)
        partners = groups.partners(tf.random.Generator.from_seed(seed), first[:size // 2])
        rows = np.unique(np.r_[first, partners.numpy()])
    z_sub = affinity.embed_all(x_train[rows]) if z_train is None else z_train[rows]
    w = subsample_graph(affinity, z_sub, batch_size)
    if groups is not None:
        w = apply_groups(w, tf.gather(groups.ids, rows), group_weight)
    if labels is not None and (labels[rows] >= 0).any():
        w = apply_labels(w, tf.constant(labels[rows]))
    # float64: near-degenerate small eigenvalues must not drown in float32 rounding.
    vecs = laplacian_eigenvectors(w.numpy().astype(np.float64), k, laplacian)
    target = distribute.run(strategy, distribute.from_first,
                            tf.constant(WARM_START_RMS * np.sqrt(size) * vecs, tf.float32))
    return rows, target.numpy()


def start_distance(body, x_train, start, strategy=None):
    """The Grassmann distance between ``body``'s outputs on the warm start's
    subsample and its eigenvectors (``start``: ``warm_start_eigenvectors``'s
    rows and targets). No label enters beyond those the fit was given."""
    rows, target = start
    return grassmann(distribute.map_rows(body, x_train[rows], distribute.get(strategy)), target)


def spectral_warm_start(body, x_train, start, *, batch_size, seed=0, strategy=None):
    """Start F_theta near the minimum of the loss, not at a random point.

    Algorithm 1 from random weights can stop on a saddle: one output direction
    splits a cluster while two others stay merged, and the minibatch gradient
    does not rotate it out before the schedule decays. Here ``body`` (the
    input of Orthonorm) is fitted by least squares, in ``WARM_START_STEPS``
    minibatch steps, to the exact eigenvectors of the graph on a subsample
    (``start``: ``warm_start_eigenvectors``'s rows and targets). Algorithm 1
    then starts in the basin of the minimum. Uses its own random streams,
    seeded by ``seed``. Returns ``{"init_grassmann": ..., "init_seconds": ...}``:
    the ``start_distance`` of the fitted body (how well the net took the
    start) and the seconds of the fit.
    """
    begin = time.perf_counter()
    strategy = distribute.get(strategy)
    rows, target = start
    size = len(rows)
    x_sub, target = tf.constant(x_train[rows]), tf.constant(target)
    m = min(batch_size, size)  # a direct call may pass a batch larger than x_train
    generator = tf.random.Generator.from_seed(seed)
    with strategy.scope():
        optimizer = keras.optimizers.RMSprop(WARM_START_LR)
        optimizer.build(body.trainable_variables)

    def fit_step(batch):
        local = distribute.local_part(batch)
        with tf.GradientTape() as tape:
            out = tf.cast(body(tf.gather(x_sub, local), training=True), tf.float32)
            error = tf.reduce_mean(tf.square(out - tf.gather(target, local)))
            loss = distribute.replica_share(error, tf.shape(batch)[0])
        grads = tape.gradient(loss, body.trainable_variables)
        optimizer.apply_gradients(zip(grads, body.trainable_variables))  # summed over replicas

    @tf.function
    def fit():
        for _ in tf.range(WARM_START_STEPS):
            distribute.run(strategy, fit_step, sample_rows(generator, size, m))

    fit()
    return {"init_grassmann": start_distance(body, x_train, start, strategy),
            "init_seconds": time.perf_counter() - begin}


def near_the_start(run_epoch, distance, variables, schedule, strategy=None):
    """``run_epoch`` held near the warm start. An epoch after which
    ``distance()`` (``start_distance``, agreed by all workers) exceeds
    ``START_KEPT_MAX`` and is larger than before it, is undone (``variables``:
    the model's, the Orthonorm kernel among them; the optimizer's state
    stays) and the rate cut by the plateau schedule's own factor, which
    restarts its patience count as its own cuts do. Where that cut would
    reach ``min_lr``, the epoch stands instead: stopping stays the
    schedule's decision. A start that did not take (farther than
    ``START_KEPT_MAX`` to begin with) holds the net only against moving
    farther still. The epoch's loss is that of the weights undone; the
    validation loss is taken after, on the weights kept.

    RMSprop moves each weight by about its rate at every step, whatever the
    gradient, so near the minimum the noise of the minibatch graphs alone can
    carry the net off, at a rate that suits a random start, onto a saddle
    whose loss is higher than the minimum's. The warm start says where the
    minimum is; an epoch that leaves it is a step too long. Returns
    (epoch, last): the guarded epoch, and a dict that holds, after each
    call, that epoch's ``start_distance`` and whether it was ``undone``."""
    last, here = {}, None

    def measure():
        return distribute.agree({"d": distance()}, strategy)["d"]

    def epoch():
        nonlocal here
        if here is None:  # the first epoch of this fit, or of its resumption
            here = measure()
        saved = [v.numpy() for v in variables]
        loss = run_epoch()
        far = measure()
        undone = (far > START_KEPT_MAX and far > here
                  and not schedule.reaches_min(schedule.lr * schedule.factor))
        if undone:
            for v, value in zip(variables, saved):
                v.assign(value)
            schedule.cut()  # restarts the patience count, as the schedule's own cuts do
        else:
            here = far
        last.update(start_distance=far, undone=int(undone))
        return loss

    return epoch, last


#: Minibatches over which ``balanced_group_weight`` sums the loss's two terms.
GROUP_WEIGHT_BATCHES = 8


def balanced_group_weight(model, affinity, x_train, z_train, groups, batch_size, seed=0,
                          strategy=None):
    """The affinity of a pair of one group that makes the two terms of the
    loss equal at initialisation (the net's weights as built, before any
    warm start): ``L_rest / L_groups``, where over ``GROUP_WEIGHT_BATCHES``
    minibatches drawn in pairs as in training (``groups``: a ``GroupTable``)
    L_groups sums ||y_i - y_j||^2 over the pairs of two rows of one group,
    and L_rest sums W_ij ||y_i - y_j||^2 over all other pairs. 1 where no
    minibatch holds a pair of one group. Its own random stream, from
    ``seed``; agreed by all workers."""
    generator = tf.random.Generator.from_seed(seed)
    n = len(x_train)
    rest = within = 0.0
    for _ in range(GROUP_WEIGHT_BATCHES):
        rows = groups.minibatch(generator, functools.partial(sample_rows, generator, n),
                                batch_size)
        y = tf.constant(distribute.map_rows(model, x_train[rows.numpy()], strategy), tf.float32)
        # A row drawn twice is not a pair: its distance to itself is rounding.
        same = group_pairs(tf.gather(groups.ids, rows)) * tf.cast(
            tf.not_equal(rows[:, None], rows[None, :]), tf.float32)
        w = affinity.kernel_matrix(tf.gather(z_train, rows))
        rest += float(spectral_loss((1.0 - same) * w, y))  # the loss's two terms
        within += float(spectral_loss(same, y))
    weight = rest / within if within > 0 else 1.0
    return distribute.agree({"weight": weight}, strategy)["weight"]


def train_spectralnet(
    model,
    body,
    affinity,
    x_train,
    x_val,
    *,
    laplacian="unnormalized",
    batch_size=1024,
    ortho_batch_size=1024,
    learning_rate=1e-3,
    patience=10,
    min_lr=1e-8,
    epochs=100,
    steps_per_epoch=10,
    seed=0,
    verbose=1,
    gradient="projected",
    y_train=None,
    y_val=None,
    labeled_share=0.0,
    label_weight=0.0,
    x_eval=None,
    eigvecs=None,
    checkpointer=None,
    strategy=None,
    init="random",
    z_train=None,
    z_val=None,
    groups_train=None,
    group_weight="balanced",
    log=None,
):
    """Algorithm 1: train F_theta (``model``) with alternating ortho and
    gradient steps, then set the Orthonorm kernel on the whole training set.
    With ``init="spectral"`` the net is first fitted to exact eigenvectors on
    a subsample (``spectral_warm_start``; not repeated when a checkpoint is
    resumed), and an epoch that takes it away from that start is undone and
    the rate cut to a tenth (``near_the_start``).

    ``body`` maps x to the input of the Orthonorm layer (``model.layers[-1]``).
    ``gradient="projected"`` projects the loss gradient with respect to Y onto
    the tangent space of the orthonormality constraint before backpropagating
    it (see ``orthonorm.tangent_projection``); ``"plain"`` is the unprojected
    gradient of Algorithm 1 as printed, which degenerates (README).
    ``y_train``/``y_val`` hold known labels (-1: unknown) that override the
    affinity of labeled pairs (semi-supervised; ``affinity.apply_labels``).
    Then ``labeled_share`` of each gradient minibatch is drawn from the
    labeled points (as many as there are, up to that share), and
    ``label_weight`` weighs the cross-entropy of the class targets in the
    loss: the labels, and on a subsample the classes Poisson learning gives
    on the graph (``label_targets``).
    With ``eigvecs`` (the true eigenvectors on ``x_eval``), the history also
    holds the Grassmann distance after each epoch. ``z_train``/``z_val`` are
    the points' coordinates for the affinity, when they are not
    ``affinity.embed_all(x)`` (``PrecomputedAffinity``: row indices).
    With ``groups_train`` (a group id per training point: views of one item,
    ``groups``), each gradient minibatch is drawn as pairs, a point and a
    random other member of its group, and the pairs of one group get
    affinity ``group_weight`` (``groups.apply_groups``): a number, or
    "balanced" (``balanced_group_weight``); the history keeps the value.
    ``log(epoch, values)`` is called after each epoch (``run_epochs``).
    Returns the history dict.

    With a ``tf.distribute`` ``strategy`` (``model`` built in its scope), each
    step is data-parallel over the replicas, on the same global minibatches
    as without one (``distribute``). Without one, the strategy in scope is used
    (TensorFlow's default strategy outside any: one device).
    """
    strategy = distribute.get(strategy)
    distribute.check_divisible("batch_size", batch_size, strategy)
    distribute.check_divisible("ortho_batch_size", ortho_batch_size, strategy)
    orthonorm = model.layers[-1]
    x_train = np.asarray(x_train, dtype=np.float32)
    x_val = np.asarray(x_val, dtype=np.float32)
    x_tr = tf.constant(x_train)
    # Affinity coordinates (e.g. Siamese outputs), computed once, not per step.
    if z_train is None:
        z_tr = x_tr if affinity.embedder() is None else tf.constant(affinity.embed_all(x_train))
    else:
        z_tr = tf.constant(np.asarray(z_train, np.float32))
    n = int(x_tr.shape[0])
    unlabeled = functools.partial(np.full, fill_value=-1, dtype=np.int64)
    y_train = unlabeled(len(x_train)) if y_train is None else np.asarray(y_train, np.int64)
    y_val = unlabeled(len(x_val)) if y_val is None else np.asarray(y_val, np.int64)
    y_tr = tf.constant(y_train)
    semi_supervised = bool((y_train >= 0).any())  # decided once, at trace time
    labeled_rows = tf.constant(np.flatnonzero(y_train >= 0), tf.int32)
    grouped = groups_train is not None
    table = GroupTable(groups_train) if grouped else None
    # Labeled rows are oversampled among the rows drawn, not among their partners.
    m_drawn = batch_size - batch_size // 2 if grouped else batch_size
    m_labeled = min(int(labeled_rows.shape[0]), int(round(labeled_share * batch_size)), m_drawn)
    generator = tf.random.Generator.from_seed(seed)
    with strategy.scope():
        optimizer = keras.optimizers.RMSprop(learning_rate)
        optimizer.build(model.trainable_variables)
    schedule = PlateauSchedule(optimizer, patience=patience, min_lr=min_lr)
    keep = VALIDATION_MAX_BATCHES * batch_size
    x_val, y_val = x_val[:keep], y_val[:keep]
    z_val = affinity.embed_all(x_val) if z_val is None else np.asarray(z_val, np.float32)[:keep]
    if grouped and group_weight == "balanced":
        group_weight = balanced_group_weight(model, affinity, x_train, z_tr, table, batch_size,
                                             seed=seed, strategy=strategy)
    k = int(body.outputs[0].shape[-1])
    val_batches = validation_batches(x_val, z_val, y_val, batch_size, affinity, k)
    targets_tr = None
    if semi_supervised and label_weight > 0:
        # The graph holds every label the fit was given, the hold-out's too.
        targets_tr = tf.constant(label_targets(
            affinity, np.concatenate([z_tr.numpy(), z_val]), np.r_[y_train, y_val], k,
            batch_size=batch_size, seed=seed, strategy=strategy)[:n])

    def ortho_step(rows):
        # Orthogonalization step: the kernel from the Gram matrix of the whole minibatch.
        y_tilde = body(tf.gather(x_tr, distribute.local_part(rows)), training=False)
        orthonorm.orthogonalize_gram(distribute.all_sum(gram(y_tilde)), ortho_batch_size)

    def loss_step(rows):
        # Gradient step: W of the whole minibatch (this replica's rows of it),
        # from the gathered coordinates.
        local = distribute.local_part(rows)
        w = affinity.kernel_matrix(distribute.all_gather(tf.gather(z_tr, local)))
        if grouped:
            w = apply_groups(w, tf.gather(table.ids, rows), group_weight)
        targets = None
        if semi_supervised:
            w = apply_labels(w, tf.gather(y_tr, rows))
            if targets_tr is not None:
                targets = tf.gather(targets_tr, rows)
        return gradient_step(model, optimizer, tf.gather(x_tr, local), w, laplacian, gradient,
                             targets, label_weight)

    @tf.function
    def run_epoch(steps):
        total = tf.constant(0.0)
        for _ in tf.range(steps):
            if init == "spectral":  # decided at trace time
                warm_up(optimizer, learning_rate, steps_per_epoch)
            # Fresh minibatches, drawn once for all replicas.
            distribute.run(strategy, ortho_step, sample_rows(generator, n, ortho_batch_size))
            draw = functools.partial(sample_rows, generator, n, preferred=labeled_rows,
                                     m_preferred=m_labeled)
            rows = table.minibatch(generator, draw, batch_size) if grouped else draw(batch_size)
            total += distribute.run(strategy, loss_step, rows)
        return total / tf.cast(steps, tf.float32)

    @tf.function
    def validation_loss():
        losses = [minibatch_loss(w, model(xb), laplacian, yb if semi_supervised else None,
                                 label_weight) for xb, w, yb in val_batches]
        return tf.add_n(losses) / len(losses)

    one_epoch, guard = functools.partial(run_epoch, tf.constant(steps_per_epoch)), {}
    started = {}
    if init == "spectral":
        # Computed again on resume (same seed, same start), but not fitted to again.
        start = warm_start_eigenvectors(
            affinity, x_train, k, batch_size=batch_size,
            laplacian=laplacian, seed=seed, labels=y_train if semi_supervised else None,
            strategy=strategy, z_train=None if z_train is None else z_tr.numpy(), groups=table,
            group_weight=group_weight)
        if checkpointer is None or checkpointer.latest() is None:
            started = spectral_warm_start(body, x_train, start, batch_size=batch_size, seed=seed,
                                          strategy=strategy)
            # The start as a whole net: Orthonorm's kernel from the start's rows. An
            # epoch undone returns here, and the validation loss then reads orthonormal
            # outputs, not the fitted targets' scale, which it would keep as its best.
            orthonorm.orthogonalize(distribute.map_rows(body, x_train[start[0]], strategy))
            if eigvecs is not None:  # where Algorithm 1 starts, against the true eigenvectors
                started["start_grassmann"] = grassmann(map_batches(model, x_eval), eigvecs)
        one_epoch, guard = near_the_start(
            one_epoch, functools.partial(start_distance, body, x_train, start, strategy),
            list(model.variables), schedule, strategy)

    def monitor(epoch):
        extra = {"iteration": (epoch + 1) * steps_per_epoch, **guard}
        if eigvecs is not None:
            extra["grassmann"] = grassmann(map_batches(model, x_eval), eigvecs)
        return extra

    history = run_epochs(one_epoch, validation_loss, schedule, epochs,
                         verbose, monitor, name="SpectralNet", checkpointer=checkpointer,
                         objects={"model": list(model.variables), "optimizer": optimizer,
                                  "generator": generator}, started=started, log=log,
                         strategy=strategy)
    if grouped:
        history["group_weight"] = float(group_weight)
    # Final orthogonalization on all training points, so (1/n) Y^T Y = I holds
    # on the training set rather than on one minibatch.
    orthonorm.orthogonalize(distribute.map_rows(body, x_train, strategy))
    return history
