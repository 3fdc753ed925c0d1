import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf.losses import contrastive_loss, spectral_loss


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
