"""What a fit knows about pairs of points beyond the affinity: labels and groups.

Each is a ``Constraint`` with one small interface, which Algorithm 1
(``train.train_spectralnet``) calls without knowing which it holds:

- ``prepare(setup)``: once, before training (e.g. the weight of a group pair);
- ``draw(generator, draw, m)``: the rows of a gradient minibatch, given
  ``draw(count)``, the draw of the constraints after it (uniform at the end);
- ``apply(w, rows)``: the minibatch's affinity with the constraint's pairs set;
- ``loss(y, rows)``: a term added to the minibatch's loss, or None;
- ``subsample(rng, n, size)``: the rows of a subsample solved exactly (the
  warm start's), or None to leave it uniform;
- ``record()``: values for the training history.

``rows`` index the fit's points: the training points, then the validation
hold-out (``apply`` and ``loss`` see both; draws are of training rows only).
Several constraints compose in order: the first one's ``draw`` is outermost,
and ``apply`` runs first to last (so labels, last, override a group's pair).
"""

import functools

import numpy as np
import tensorflow as tf

from . import distribute
from .checks import check_labels
from .groups import GroupTable, apply_groups, group_pairs
from .losses import label_loss, spectral_loss
from .sampling import sample_rows, subsample_size, uniform_subsample
from .spectral import poisson_labels


class Constraint:
    """Knowledge about pairs of points that the affinity does not hold."""

    def prepare(self, setup):
        """Once before training; ``setup`` is ``train.Setup``."""

    def draw(self, generator, draw, m):
        return draw(m)

    def apply(self, w, rows):
        return w

    def loss(self, y, rows):
        return None

    def subsample(self, rng, n, size):
        return None

    def record(self):
        return {}


def draw_rows(constraints, generator, draw, m):
    """A gradient minibatch of m rows: ``draw`` (count -> rows) shaped by
    each constraint, the first one outermost."""
    for constraint in reversed(constraints):
        draw = functools.partial(constraint.draw, generator, draw)
    return draw(m)


def apply_all(constraints, w, rows):
    for constraint in constraints:
        w = constraint.apply(w, rows)
    return w


def extra_loss(constraints, y, rows):
    """The sum of the constraints' loss terms (None where none has one)."""
    terms = [t for t in (c.loss(y, rows) for c in constraints) if t is not None]
    return tf.add_n(terms) if terms else None


def subsample_rows(constraints, rng, n, size):
    """The rows of a subsample of ``size`` of the n training points: the
    first constraint's that shapes it, else ``size`` drawn uniformly (sorted)."""
    for constraint in constraints:
        rows = constraint.subsample(rng, n, size)
        if rows is not None:
            return rows
    return uniform_subsample(rng, n, size)


def check_partial_labels(partial_labels, n, n_clusters):
    """``fit``'s ``partial_labels`` as int64 (-1: unlabeled; all -1 if
    None), labelling two classes or more where they label any point."""
    labels = check_labels(partial_labels, n, n_clusters)
    check_two_classes(labels)
    return labels


def check_two_classes(labels):
    """Refuse labels (-1: unlabeled) of one class only: a boundary, and
    Poisson learning, need two sides. No labeled point passes."""
    known = labels[labels >= 0]
    if known.size and (known == known[0]).all():
        raise ValueError(
            f"partial_labels must label points of two classes or more, got only class "
            f"{int(known[0])} ({known.size} labeled points); leave partial_labels out "
            "to cluster without labels.")


def apply_labels(w, labels):
    """Semi-supervised affinity (paper Sec. 5.3): pairs of labeled points get 1
    (same label) or 0 (different labels); other pairs keep ``w``. ``labels``
    holds -1 for unlabeled points. The diagonal stays 0. In a replica of a
    ``tf.distribute`` strategy ``w`` holds this replica's rows of W
    (``kernel_matrix``) and ``labels`` those of the whole minibatch."""
    rows = distribute.local_part(labels)
    both = tf.logical_and(rows[:, None] >= 0, labels[None, :] >= 0)
    same = tf.cast(tf.equal(rows[:, None], labels[None, :]), w.dtype)
    off_diag = 1.0 - distribute.local_eye(labels.shape[0] or tf.shape(labels)[0], w.dtype)
    return tf.where(both, same * off_diag, w)


class LabelConstraint(Constraint):
    """A few labels (``fit(X, partial_labels=...)``; -1: unknown).

    Pairs of labeled points get affinity 1 (same label) or 0 (different
    labels), as in the paper's Sec. 5.3. With ``weight`` > 0 the loss adds
    that multiple of the cross-entropy of each point's class target
    (``losses.label_loss``): a labeled point's own class, and on a subsample
    of the unlabeled ones the class Poisson learning on the graph gives them
    (``label_targets``), so that the labels reach the points around them, not
    only the labeled pairs of a minibatch. ``share`` of each gradient
    minibatch is drawn from the labeled points (all of them if there are
    fewer), the rest uniformly from the others.

    ``labels`` holds the training points' labels, then the hold-out's.
    """

    def __init__(self, labels, n_train, weight=1.0, share=0.0):
        self.labels = np.asarray(labels, np.int64)
        self.n_train = n_train
        self.weight = weight
        self.share = share

    def prepare(self, setup):
        train = self.labels[:self.n_train]
        self._labels = tf.constant(self.labels)
        self._labeled = tf.constant(np.flatnonzero(train >= 0), tf.int32)
        self._most_labeled = int(round(self.share * setup.config.batch_size))
        self._targets = None
        if self.weight > 0:
            k = setup.n_outputs
            # The graph holds every label the fit was given, the hold-out's too;
            # the hold-out's targets are its labels alone.
            targets = label_targets(setup.affinity, setup.coordinates(), self.labels, k,
                                    batch_size=setup.config.batch_size, seed=setup.config.seed,
                                    strategy=setup.strategy)
            val = self.labels[self.n_train:]
            self._targets = tf.constant(np.concatenate([
                targets[:self.n_train],
                np.eye(k, dtype=np.float32)[np.maximum(val, 0)] * (val >= 0)[:, None]]))

    def draw(self, generator, draw, m):
        n_preferred = min(int(self._labeled.shape[0]), self._most_labeled, m)
        if not n_preferred:
            return draw(m)
        return sample_rows(generator, self.n_train, m, preferred=self._labeled,
                           m_preferred=n_preferred)

    def apply(self, w, rows):
        return apply_labels(w, tf.gather(self._labels, rows))

    def loss(self, y, rows):
        if self._targets is None:
            return None
        return self.weight * label_loss(y, tf.gather(self._targets, rows))


def label_targets(affinity, coords, labels, k, *, batch_size, seed=0, strategy=None):
    """The class targets of the label term (``losses.label_loss``), (n, k)
    one-hot rows: the labeled points' own classes; on the unlabeled points of
    a subsample, the class that Poisson learning on the graph SpectralNet's
    minibatches sample gives them (``spectral.poisson_labels`` of
    ``Affinity.sampled_graph`` on the subsample: the largest of the k
    functions); zero rows on the other points.

    Poisson learning, not the harmonic function, because the harmonic
    function flattens away from the labels when they are few, and its largest
    component then leans to the class with more labels wherever the graph
    puts a point; the Poisson solution, the same Laplacian with the labels as
    centred sources, keeps its shape (docs/semisupervised.md).

    The subsample (``sampling.subsample_size`` points) holds every
    labeled point it has room for, the rest drawn at random; ``coords`` are
    the points' affinity coordinates. A point in a part of the subsample's
    graph that no label reaches gets no target. The same targets for the
    same ``seed``.
    """
    n = len(coords)
    targets = np.zeros((n, k), np.float32)
    labeled = np.flatnonzero(labels >= 0)
    targets[labeled, labels[labeled]] = 1.0
    rows = label_subsample(labels, subsample_size(n, batch_size), seed)
    if (labels[rows] < 0).any():
        w = affinity.sampled_graph(coords[rows], batch_size)
        classes = poisson_labels(w.numpy(), labels[rows], k)  # labeled rows keep theirs
        reached = classes >= 0
        targets[rows[reached]] = np.eye(k, dtype=np.float32)[classes[reached]]
    return distribute.run(distribute.get(strategy), distribute.from_first,
                          tf.constant(targets)).numpy()


def label_subsample(labels, size, seed):
    """The sorted rows of a subsample of ``size`` points (of ``labels``, -1:
    unknown) that holds every labeled point it has room for, the rest drawn
    at random. The same rows for the same ``seed``."""
    labeled = np.flatnonzero(labels >= 0)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(labeled)[:size]
    unlabeled = np.flatnonzero(labels < 0)
    return np.sort(np.r_[rows, rng.choice(unlabeled, size - len(rows), replace=False)])


#: Minibatches over which the "balanced" group weight sums the loss's two terms.
GROUP_WEIGHT_BATCHES = 8


class GroupConstraint(Constraint):
    """Points known to be views of one item (``fit(X, groups=...)``): each
    gradient minibatch is drawn as pairs, a point and a random other member
    of its group (a random point where it has none), and a pair of one group
    gets affinity ``weight`` (``groups.apply_groups``), so that F_theta maps
    the views of one item together. ``weight="balanced"``: the weight that
    makes the pairs' term of the loss equal to the rest of it at
    initialisation (``balanced_weight``). The warm start's subsample is drawn
    in pairs too.

    ``groups`` holds the training points' ids; hold-out points are in no group.
    """

    def __init__(self, groups, weight="balanced"):
        self.groups = np.asarray(groups, np.int64)
        self.weight = weight

    def prepare(self, setup):
        self._seed = setup.config.seed
        self._table = GroupTable(self.groups)
        n_val = len(setup.data.x_val)
        # Hold-out points each in a group of their own: no group pair reaches them.
        alone = self.groups.min(initial=0) - 1 - np.arange(n_val)
        self._ids = tf.constant(np.r_[self.groups, alone].astype(np.int32))
        self.weight_ = (self.balanced_weight(setup) if self.weight == "balanced"
                        else float(self.weight))

    def draw(self, generator, draw, m):
        return self._table.minibatch(generator, draw, m)

    def apply(self, w, rows):
        return apply_groups(w, tf.gather(self._ids, rows), self.weight_)

    def subsample(self, rng, n, size):
        if size == n:
            return None
        first = rng.choice(n, size - size // 2, replace=False).astype(np.int32)
        partners = self._table.partners(tf.random.Generator.from_seed(self._seed),
                                        first[:size // 2])
        return np.unique(np.r_[first, partners.numpy()])

    def record(self):
        return {"group_weight": float(self.weight_)}

    def balanced_weight(self, setup):
        """``L_rest / L_groups`` at initialisation (the net as built): over
        ``GROUP_WEIGHT_BATCHES`` minibatches drawn in pairs as in training,
        L_groups sums ||y_i - y_j||^2 over the pairs of one group and L_rest
        sums W_ij ||y_i - y_j||^2 over all other pairs. 1 where no minibatch
        holds a pair of one group. Its own random stream; agreed by all
        workers."""
        generator = tf.random.Generator.from_seed(setup.config.seed)
        x, coords = setup.data.x_train, tf.constant(setup.data.c_train)
        n, m = len(x), setup.config.batch_size
        rest = within = 0.0
        for _ in range(GROUP_WEIGHT_BATCHES):
            rows = self._table.minibatch(generator, functools.partial(sample_rows, generator, n),
                                         m)
            y = tf.constant(distribute.map_rows(setup.model, x[rows.numpy()], setup.strategy),
                            tf.float32)
            # A row drawn twice is not a pair: its distance to itself is rounding.
            same = group_pairs(tf.gather(self._table.ids, rows)) * tf.cast(
                tf.not_equal(rows[:, None], rows[None, :]), tf.float32)
            w = setup.affinity.kernel_matrix(tf.gather(coords, rows))
            rest += float(spectral_loss((1.0 - same) * w, y))  # the loss's two terms
            within += float(spectral_loss(same, y))
        weight = rest / within if within > 0 else 1.0
        return distribute.agree({"weight": weight}, setup.strategy)["weight"]
