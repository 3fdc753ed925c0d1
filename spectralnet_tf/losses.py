"""Losses: the SpectralNet loss (paper Eq. 3 and its normalized form), the
Siamese contrastive loss (paper Sec. 3.2), and NT-Xent for an autoencoder's
codes that should not see a deformation."""

import tensorflow as tf

LAPLACIANS = ("unnormalized", "normalized")


def spectral_loss(w, y, laplacian="unnormalized", y_cols=None, d_cols=None):
    """SpectralNet loss ``sum_ij W_ij ||y_i - y_j||^2 / m`` in trace form.

    ``sum_ij W_ij ||y_i - y_j||^2 = 2 tr(Y^T (D - W) Y)``, computed as
    ``2 (sum_i d_i ||y_i||^2 - sum(Y * (W @ Y)))``: O(m^2 k), with no m×m×k
    broadcast. The 1/m factor (instead of 1/m^2) follows the paper's appendix.

    With ``laplacian="normalized"`` each ``y_i`` is replaced by ``y_i/sqrt(d_i)``,
    which turns ``D - W`` into ``I - D^-1/2 W D^-1/2``.

    Parameters
    ----------
    w : (m, m) symmetric affinity matrix.
    y : (m, k) network outputs.
    laplacian : {"unnormalized", "normalized"}
    y_cols, d_cols : (m, k) and (m,), optional
        Given when ``w`` holds only some rows of W (a replica's, under
        tf.distribute) and ``y`` those rows' outputs: the outputs and degrees
        of all m points. The result is then those rows' part of the loss.
    """
    d = tf.reduce_sum(w, axis=1)
    if laplacian not in LAPLACIANS:
        raise ValueError(
            f"laplacian must be one of {LAPLACIANS}, got laplacian={laplacian!r}."
        )
    if laplacian == "normalized":
        # Isolated points (d=0) have no edges, so their term is 0 either way.
        y = y * tf.math.rsqrt(tf.maximum(d, 1e-12))[:, None]
        if y_cols is not None:
            y_cols = y_cols * tf.math.rsqrt(tf.maximum(d_cols, 1e-12))[:, None]
    y_cols = y if y_cols is None else y_cols
    m = tf.cast(tf.shape(y_cols)[0], y.dtype)
    degree_term = tf.reduce_sum(d * tf.reduce_sum(tf.square(y), axis=1))
    cross_term = tf.reduce_sum(y * tf.matmul(w, y_cols))
    return 2.0 * (degree_term - cross_term) / m


def contrastive_loss(z1, z2, is_positive, margin=1.0):
    """Contrastive loss of Hadsell et al., as in the paper's Sec. 3.2.

    ``||z1 - z2||^2`` for positive pairs, ``max(margin - ||z1 - z2||, 0)^2`` for
    negative pairs, averaged over the pairs.
    """
    sq = tf.reduce_sum(tf.square(z1 - z2), axis=1)
    dist = tf.sqrt(sq + 1e-12)
    pos = tf.cast(is_positive, sq.dtype)
    neg_term = tf.square(tf.nn.relu(margin - dist))
    return tf.reduce_mean(pos * sq + (1.0 - pos) * neg_term)


def nt_xent(z1, z2, temperature=0.5):
    """NT-Xent (normalized temperature-scaled cross-entropy; Chen et al. 2020,
    SimCLR): rows i of ``z1`` and ``z2`` are two views of one point. Each of
    the 2m rows picks its partner among the other 2m - 1 by a softmax over
    their cosine similarities divided by ``temperature``; the loss is the
    cross-entropy of that choice, averaged over the 2m rows. At least log(1)
    = 0; log(2m - 1) when all rows point the same way."""
    z = tf.math.l2_normalize(tf.concat([z1, z2], axis=0), axis=1)
    m = tf.shape(z1)[0]
    logits = tf.matmul(z, z, transpose_b=True) / temperature
    # A row is not its own partner: its logit is dropped from the softmax.
    logits = tf.where(tf.eye(2 * m, dtype=tf.bool), tf.constant(-1e9, logits.dtype), logits)
    partner = tf.concat([tf.range(m, 2 * m), tf.range(m)], axis=0)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(partner, logits))


def label_loss(y, targets):
    """Cross-entropy of the points of a minibatch that have a class target
    (paper Sec. 5.3's closing remark), with no extra weights.

    ``targets`` (m, k): each row a distribution over the k classes (a one-hot
    row: a labeled point's class, or the class ``constraints.label_targets`` gives
    an unlabeled one), or zeros for a point without one. Each class's
    prototype is the mean output of the batch weighted by its column, and a
    point's logits are minus its squared distances to the prototypes. The
    clusters are read the same way (nearest centroid), so this asks each
    point to be nearest the classes its target names. Classes without weight
    in the batch are left out; the mean runs over the rows with a target, and
    is 0 if no row has one.
    """
    targets = tf.cast(targets, y.dtype)
    counts = tf.reduce_sum(targets, axis=0)
    has_class = counts > 0
    prototypes = tf.matmul(targets, y, transpose_a=True) / tf.where(has_class, counts, 1.0)[:, None]
    d2 = (tf.reduce_sum(tf.square(y), axis=1, keepdims=True)
          - 2.0 * tf.matmul(y, prototypes, transpose_b=True)
          + tf.reduce_sum(tf.square(prototypes), axis=1)[None, :])
    logits = tf.where(has_class[None, :], -d2, tf.constant(-1e9, y.dtype))
    per_point = tf.nn.softmax_cross_entropy_with_logits(targets, logits)
    has_target = tf.reduce_sum(targets, axis=1)
    return tf.reduce_sum(per_point * has_target) / tf.maximum(tf.reduce_sum(has_target), 1e-12)
