"""The Siamese network that learns the affinity's distance (paper Sec. 3.2).

Pairs are built without labels: each point with its ``n_nbrs`` nearest
neighbours (positives) and as many random non-neighbours (negatives). The net is
trained with the contrastive loss (margin 1) by RMSprop under the same
validation-loss learning-rate schedule as SpectralNet. Each epoch runs as one
compiled ``tf.function``.
"""

import keras
import numpy as np
import tensorflow as tf

from .losses import contrastive_loss
from .neighbors import make_neighbors
from .networks import dense_stack
from .train import PlateauSchedule, run_epochs


def make_pairs(x, n_nbrs=2, neighbors="auto", seed=0):
    """Unsupervised pairs: ``(first, second, is_positive)`` index arrays.

    Positives: (i, j) for each of i's ``n_nbrs`` nearest neighbours j.
    Negatives: as many (i, j) with j drawn uniformly among the points that are
    not i and not among i's neighbours.
    """
    n = len(x)
    backend = make_neighbors(neighbors, n_samples=n, random_state=seed)
    _, nbrs = backend.kneighbors(x, n_nbrs)
    first = np.repeat(np.arange(n), n_nbrs)
    pos_second = nbrs.ravel()
    rng = np.random.default_rng(seed)
    neg_second = rng.integers(0, n, size=first.size)
    # Redraw the few draws that hit the point itself or one of its neighbours.
    bad = (neg_second == first) | (nbrs[first] == neg_second[:, None]).any(axis=1)
    while bad.any():
        neg_second[bad] = rng.integers(0, n, size=int(bad.sum()))
        bad = (neg_second == first) | (nbrs[first] == neg_second[:, None]).any(axis=1)
    return (
        np.concatenate([first, first]),
        np.concatenate([pos_second, neg_second]),
        np.concatenate([np.ones(first.size, np.float32), np.zeros(first.size, np.float32)]),
    )


def build_siamese(input_dim, hidden_units=(1024, 1024, 512, 10), seed=0):
    """The Siamese branch G: ReLU layers (paper Table 3); both sides share it."""
    return keras.Sequential(
        [keras.Input((input_dim,), name="x"), *dense_stack(hidden_units, "relu", seed, "siamese")],
        name="siamese",
    )


def train_siamese(net, x, pairs, *, batch_size=128, learning_rate=1e-3, patience=10,
                  min_lr=1e-8, epochs=100, validation_fraction=0.1, seed=0, verbose=1):
    """Train ``net`` on ``pairs`` (from ``make_pairs``); returns the history dict."""
    first, second, positive = pairs
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(first))
    n_val = max(1, int(round(validation_fraction * len(first))))
    val, tr = perm[:n_val], perm[n_val:]
    x_all = tf.constant(np.asarray(x, dtype=np.float32))
    tr_pairs = [tf.constant(a[tr]) for a in (first, second, positive)]
    val_pairs = [tf.constant(a[val]) for a in (first, second, positive)]
    n_pairs = len(tr)
    steps = max(1, n_pairs // batch_size)
    generator = tf.random.Generator.from_seed(seed)
    optimizer = keras.optimizers.RMSprop(learning_rate)
    optimizer.build(net.trainable_variables)
    schedule = PlateauSchedule(optimizer, patience=patience, min_lr=min_lr)

    def pair_loss(i, j, pos):
        return contrastive_loss(net(tf.gather(x_all, i), training=True),
                                net(tf.gather(x_all, j), training=True), pos)

    @tf.function
    def run_epoch():
        order = tf.argsort(generator.uniform([n_pairs]))
        total = tf.constant(0.0)
        for s in tf.range(steps):
            idx = order[s * batch_size:(s + 1) * batch_size]
            i, j, pos = (tf.gather(a, idx) for a in tr_pairs)
            with tf.GradientTape() as tape:
                loss = pair_loss(i, j, pos)
            grads = tape.gradient(loss, net.trainable_variables)
            optimizer.apply_gradients(zip(grads, net.trainable_variables))
            total += loss
        return total / tf.cast(steps, tf.float32)

    @tf.function
    def validation_loss():
        i, j, pos = val_pairs
        return contrastive_loss(net(tf.gather(x_all, i)), net(tf.gather(x_all, j)), pos)

    return run_epochs(run_epoch, validation_loss, schedule, epochs, verbose, name="Siamese")
