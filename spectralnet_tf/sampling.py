"""Draws of rows: minibatches inside the compiled training step, and the
subsamples that are solved exactly (their size and their uniform draw)."""

import numpy as np
import tensorflow as tf

#: Points of a subsample whose graph is solved exactly (the warm start's
#: eigenvectors, the label targets): at least one minibatch.
SUBSAMPLE_POINTS = 4096


def subsample_size(n, batch_size):
    """Points of a subsample solved exactly: ``SUBSAMPLE_POINTS``, at least
    one minibatch, all n if there are fewer."""
    return min(n, max(SUBSAMPLE_POINTS, batch_size))


def uniform_subsample(seed_or_rng, n, size):
    """``size`` distinct rows of n drawn uniformly, sorted: the subsample of
    a fit's graph and of its warm start without constraints, the same rows
    for the same seed."""
    return np.sort(np.random.default_rng(seed_or_rng).choice(n, size, replace=False))


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
