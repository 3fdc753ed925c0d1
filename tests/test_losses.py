import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf.losses import contrastive_loss, label_loss, nt_xent, spectral_loss


def _w_y(m=50, k=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.uniform(size=(m, m)) * (rng.uniform(size=(m, m)) < 0.2)
    w = (w + w.T) / 2
    np.fill_diagonal(w, 0)
    return w, rng.normal(size=(m, k))


def test_trace_identity_unnormalized():
    w, y = _w_y()
    brute = sum(w[i, j] * np.sum((y[i] - y[j]) ** 2) for i in range(50) for j in range(50))
    lap = np.diag(w.sum(1)) - w
    assert brute == pytest.approx(2 * np.trace(y.T @ lap @ y), rel=1e-10)
    assert spectral_loss(tf.constant(w), tf.constant(y)).numpy() == pytest.approx(brute / 50, rel=1e-10)


def test_normalized_loss_uses_y_over_sqrt_degree():
    w, y = _w_y(seed=1)
    d = w.sum(1)
    brute = sum(
        w[i, j] * np.sum((y[i] / np.sqrt(d[i]) - y[j] / np.sqrt(d[j])) ** 2)
        for i in range(50) for j in range(50)
    )
    lap_sym = np.eye(50) - np.diag(d ** -0.5) @ w @ np.diag(d ** -0.5)
    assert brute == pytest.approx(2 * np.trace(y.T @ lap_sym @ y), rel=1e-10)
    got = spectral_loss(tf.constant(w), tf.constant(y), "normalized").numpy()
    assert got == pytest.approx(brute / 50, rel=1e-10)


def test_unknown_laplacian_is_named_in_the_error():
    w, y = _w_y()
    with pytest.raises(ValueError, match="laplacian='sym'"):
        spectral_loss(tf.constant(w), tf.constant(y), "sym")


def test_contrastive_loss_matches_its_definition():
    z1 = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    z2 = np.array([[0.3, 0.4], [0.3, 0.4], [3.0, 4.0]])  # distances .5, .5, 5
    pos = np.array([1, 0, 0])
    expected = (0.25 + (1 - 0.5) ** 2 + 0.0) / 3
    got = contrastive_loss(tf.constant(z1), tf.constant(z2), tf.constant(pos)).numpy()
    assert got == pytest.approx(expected, rel=1e-6)


def test_label_loss_is_the_cross_entropy_of_distances_to_the_class_prototypes():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(12, 3)).astype(np.float32)
    labels = np.array([0, 0, 1, -1, 1, -1, 0, -1, 1, 1, -1, -1])  # class 2 has no labeled point
    # By hand: prototypes of classes 0 and 1, softmax over minus squared distances.
    protos = np.stack([y[labels == c].mean(axis=0) for c in (0, 1)])
    lab = np.flatnonzero(labels >= 0)
    logits = -((y[lab, None, :] - protos[None]) ** 2).sum(-1)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    expected = -log_p[np.arange(len(lab)), labels[lab]].mean()
    got = label_loss(tf.constant(y), tf.one_hot(labels, 3)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_soft_targets_weigh_the_prototypes_and_the_cross_entropy_by_their_rows():
    # Rows of probabilities (harmonic targets) and zero rows (no target):
    # prototypes are the column-weighted means, the mean runs over the rows
    # with a target, and one-hot rows give the labeled points' loss above.
    rng = np.random.default_rng(2)
    y = rng.normal(size=(6, 2)).astype(np.float32)
    t = np.array([[1, 0], [0, 1], [0.7, 0.3], [0.2, 0.8], [0, 0], [0, 0]], np.float32)
    protos = (t.T @ y) / t.sum(axis=0)[:, None]
    logits = -((y[:, None, :] - protos[None]) ** 2).sum(-1)
    log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    expected = -(t * log_p).sum(axis=1)[:4].mean()
    np.testing.assert_allclose(label_loss(tf.constant(y), tf.constant(t)).numpy(), expected,
                               rtol=1e-5)


def test_label_loss_is_zero_without_labels_and_falls_as_classes_separate():
    y = tf.constant(np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32))
    assert label_loss(y, tf.zeros([8, 2])).numpy() == 0.0
    labels = tf.one_hot([0, 0, 0, 0, 1, 1, 1, 1], 2)
    mixed = tf.constant([[0.0, 0.0], [2.0, 0.0]] * 4)  # each class spread over both places
    apart = tf.constant([[0.0, 0.0]] * 4 + [[2.0, 0.0]] * 4)
    assert label_loss(apart, labels).numpy() < 0.05 < np.log(2) - 1e-6 < label_loss(mixed, labels).numpy() + 1e-6


def test_nt_xent_matches_its_definition():
    rng = np.random.default_rng(4)
    z1, z2 = rng.normal(size=(2, 6, 3)).astype(np.float32)
    views = np.concatenate([z1, z2])
    views /= np.linalg.norm(views, axis=1, keepdims=True)
    total = 0.0
    for i in range(12):  # each row against the other 11, its partner 6 rows away
        others = [j for j in range(12) if j != i]
        sims = np.array([views[i] @ views[j] for j in others]) / 0.3
        partner = others.index((i + 6) % 12)
        total += np.log(np.exp(sims).sum()) - sims[partner]
    got = nt_xent(tf.constant(z1), tf.constant(z2), temperature=0.3).numpy()
    np.testing.assert_allclose(got, total / 12, rtol=1e-5)


def test_nt_xent_bounds():
    # Every row the same direction: 2m - 1 equal choices.
    same = tf.ones((5, 4))
    np.testing.assert_allclose(nt_xent(same, 3.0 * same).numpy(), np.log(9.0), rtol=1e-6)
    # Pairs on their own orthogonal axes, scale aside: near 0 at a low temperature.
    axes = tf.eye(4)
    assert nt_xent(axes, 2.0 * axes, temperature=0.05).numpy() < 1e-6
