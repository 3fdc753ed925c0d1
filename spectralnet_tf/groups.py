"""Groups: points known to be views of one item (``fit``'s ``groups``).

A group id per point says which points show one item under a transformation
the classes survive, without saying the item's class: the deformations of one
digit share an id. That is supervision without labels, and it enters in two
places. The Siamese net gets, for each point whose group has another member,
a positive pair with a random one of them (``random_members``). SpectralNet's
gradient minibatches are drawn as pairs, a point and a random other member of
its group (``GroupTable.partners``), and such pairs get one affinity,
``group_weight`` (``apply_groups``): by default the weight that makes the
pairs' term of the loss equal to the rest of it at initialisation
(``constraints.GroupConstraint.balanced_weight``).

Both draws work on one layout (``layout``): the points sorted by group, each
point's group as a start and a size in that order, and its place inside it.
Building it sorts once (O(n log n)); a draw then costs the same per point at
any n.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from . import distribute


def check_groups(groups, n):
    """``fit``'s ``groups``: one integer id per point, as int64."""
    out = np.asarray(groups)
    if out.shape != (n,):
        raise ValueError(f"groups must have shape (n_samples,) = ({n},), got "
                         f"groups.shape={out.shape}.")
    if not np.issubdtype(out.dtype, np.integer) or out.dtype == bool:
        raise ValueError(f"groups must hold integer ids, got dtype={out.dtype} "
                         f"(e.g. groups[0]={out.flat[0].item()!r}).")
    return out.astype(np.int64, copy=False)


class Layout(NamedTuple):
    """The points sorted by group (``order``), and for each point (by row):
    its group as a dense id in ``[0, n_groups)``, that group's start in
    ``order`` and its size, and the point's place inside it."""
    order: np.ndarray
    ids: np.ndarray
    start: np.ndarray
    size: np.ndarray
    within: np.ndarray


def layout(groups):
    """The ``Layout`` of ``groups`` (int32 indices below 2**31 points: half
    the memory at millions of points)."""
    groups = np.asarray(groups)
    n = len(groups)
    index = np.int32 if n < 2**31 else np.int64
    order = np.argsort(groups, kind="stable").astype(index)
    sorted_groups = groups[order]
    new = np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]
    del sorted_groups
    starts = np.flatnonzero(new).astype(index)
    sizes = np.diff(np.r_[starts, index(n)])
    ids_sorted = (np.cumsum(new) - 1).astype(index)
    ids = np.empty(n, index)
    ids[order] = ids_sorted
    start = starts[ids]
    within = np.empty(n, index)
    within[order] = np.arange(n, dtype=index) - starts[ids_sorted]
    return Layout(order, ids, start, sizes[ids], within)


def group_means(rows, groups):
    """``(ids, means)``: each point's group as a dense id, and the mean of
    each group's rows (float32 (n_groups, d), row ``g`` for id ``g``)."""
    ids = np.unique(np.asarray(groups), return_inverse=True)[1].reshape(-1)
    rows = np.asarray(rows, np.float32)
    counts = np.bincount(ids)
    sums = np.stack([np.bincount(ids, weights=rows[:, j], minlength=len(counts))
                     for j in range(rows.shape[1])], axis=1)
    return ids, (sums / counts[:, None]).astype(np.float32)


def random_members(groups, rng):
    """For each point whose group has another member, that point and a
    uniformly drawn other member, as Siamese positives (``make_pairs``'
    layout of ``(firsts, seconds, flags)`` lists)."""
    table = layout(groups)
    size = table.size[table.order]  # in group order: the draws' order
    keep = size > 1
    first = table.order[keep]
    size = size[keep]
    # An offset in [1, size): any member but the point itself, uniformly.
    within = (table.within[first] + rng.integers(1, size, dtype=size.dtype)) % size
    return [first], [table.order[table.start[first] + within]], [np.ones(first.size, np.float32)]


class GroupTable:
    """A ``layout`` as constant tensors, for drawing partners inside a
    compiled training step. ``n`` points; made once, before training."""

    def __init__(self, groups):
        table = layout(groups)
        self.n = len(table.order)
        as_tensor = lambda a: tf.constant(a.astype(np.int32))  # noqa: E731
        self.order, self.ids, self.start, self.size, self.within = map(as_tensor, table)

    def partners(self, generator, rows):
        """For each of ``rows``, a uniformly drawn other member of its group,
        or a uniformly drawn row where it is alone in its group."""
        size = tf.gather(self.size, rows)
        u = generator.uniform(tf.shape(rows), dtype=tf.float32)
        offset = 1 + tf.minimum(tf.cast(u * tf.cast(size - 1, tf.float32), tf.int32),
                                tf.maximum(size - 2, 0))
        place = (tf.gather(self.within, rows) + offset) % size
        member = tf.gather(self.order, tf.gather(self.start, rows) + place)
        anyone = generator.uniform(tf.shape(rows), maxval=self.n, dtype=tf.int32)
        return tf.where(size > 1, member, anyone)

    def minibatch(self, generator, draw, m):
        """m rows as pairs: ``draw(count)`` rows (``m - m // 2`` of them),
        then a partner for each of the first ``m // 2``."""
        first = draw(m - m // 2)
        return tf.concat([first, self.partners(generator, first[:m // 2])], axis=0)


def group_pairs(ids, dtype=tf.float32):
    """1 for each pair of one group off the diagonal, else 0: the rows of
    this replica (all, outside one) against the minibatch of group ``ids``."""
    rows = distribute.local_part(ids)
    same = tf.cast(tf.equal(rows[:, None], ids[None, :]), dtype)
    return same * (1.0 - distribute.local_eye(ids.shape[0] or tf.shape(ids)[0], dtype))


def apply_groups(w, ids, weight=1.0):
    """Affinity ``weight`` for each pair of one group, off the diagonal;
    other pairs keep ``w``. ``ids`` holds the minibatch's group ids; in a
    replica of a ``tf.distribute`` strategy ``w`` holds this replica's rows
    of W, as in ``affinity.apply_labels``."""
    same = group_pairs(ids, w.dtype)
    return same * tf.cast(weight, w.dtype) + (1.0 - same) * w
