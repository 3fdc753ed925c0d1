import numpy as np
import pytest
import tensorflow as tf
import keras

from spectralnet_tf.orthonorm import (Orthonorm, gram, kernel_from_gram, orthonormalizer,
                                      tangent_projection)


def _batch(m=256, k=4, seed=0):
    rng = np.random.default_rng(seed)
    # Correlated columns, as network outputs are.
    return (rng.normal(size=(m, k)) @ rng.normal(size=(k, k))).astype(np.float32)


def test_orthonormality_identity_on_the_ortho_batch():
    y_tilde = _batch()
    layer = Orthonorm()
    layer.orthogonalize(y_tilde)
    y = layer(y_tilde).numpy().astype(np.float64)
    np.testing.assert_allclose(y.T @ y / len(y), np.eye(4), atol=1e-4)


def test_cholesky_and_qr_give_the_same_orthonormal_y():
    y_tilde = _batch(m=300, k=5, seed=1)
    y_chol = y_tilde.astype(np.float64) @ orthonormalizer(y_tilde).numpy().astype(np.float64)
    q, r = np.linalg.qr(y_tilde.astype(np.float64))
    # Cholesky's R has a positive diagonal; fix QR's signs to match.
    y_qr = np.sqrt(len(y_tilde)) * q * np.sign(np.diag(r))
    np.testing.assert_allclose(y_chol, y_qr, atol=1e-4)


def test_kernel_is_not_trainable_and_gets_no_gradient():
    y_tilde = tf.constant(_batch())
    layer = Orthonorm()
    layer.orthogonalize(y_tilde)
    assert layer.trainable_weights == []
    assert len(layer.non_trainable_weights) == 1
    with tf.GradientTape() as tape:
        tape.watch(y_tilde)
        out = tf.reduce_sum(layer(y_tilde) ** 2)
    grad = tape.gradient(out, y_tilde)
    # d/dỸ sum((ỸK)^2) = 2 ỸK K^T with K held constant.
    k = layer.kernel.numpy()
    expected = 2 * y_tilde.numpy() @ k @ k.T
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-4, atol=1e-3)


def test_rank_deficient_batch_is_regularized_not_a_crash():
    rng = np.random.default_rng(0)
    col = rng.normal(size=(128, 1))
    collapsed = np.hstack([col, col, 2 * col]).astype(np.float32)  # rank 1
    layer = Orthonorm()
    kernel = layer.orthogonalize(collapsed).numpy()
    assert np.all(np.isfinite(kernel))
    assert np.isfinite(layer(collapsed).numpy()).all()


def test_xla_compiled_kernel_equals_the_graph_one_at_every_ridge_level():
    # The ridge level is picked by a data-dependent index; compiled by XLA
    # (jit_compile) the kernel must be the graph's, for a full-rank batch
    # (no ridge) and a rank-deficient one (a ridge level above zero).
    col = np.random.default_rng(0).normal(size=(256, 1))
    batches = [_batch(), np.hstack([col, col, 2 * col, -col]).astype(np.float32)]  # one shape
    def kernel(y):
        return kernel_from_gram(gram(y), tf.shape(y)[0])

    graph, xla = tf.function(kernel), tf.function(kernel, jit_compile=True)
    for y in batches:
        np.testing.assert_allclose(xla(tf.constant(y)).numpy(), graph(tf.constant(y)).numpy(),
                                   rtol=1e-6, atol=1e-8)


def test_constant_outputs_are_regularized():
    const = np.ones((64, 3), dtype=np.float32)
    kernel = Orthonorm().orthogonalize(const).numpy()
    assert np.all(np.isfinite(kernel))


def test_all_zero_outputs_raise_a_clear_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="all zero"):
        Orthonorm().orthogonalize(np.zeros((64, 3), dtype=np.float32))


def test_nan_outputs_raise_a_clear_error():
    y = _batch()
    y[3, 1] = np.nan
    with pytest.raises(tf.errors.InvalidArgumentError, match="not finite"):
        Orthonorm().orthogonalize(y)


def test_get_config_covers_init_arguments():
    layer = Orthonorm(jitter=1e-4, max_tries=3, rcond=1e-8, name="o")
    clone = Orthonorm.from_config(layer.get_config())
    assert (clone.jitter, clone.max_tries, clone.rcond, clone.name) == (1e-4, 3, 1e-8, "o")


def test_keras_file_round_trip_gives_identical_outputs(tmp_path):
    y_tilde = _batch()
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4), Orthonorm()])
    model.layers[-1].orthogonalize(model.layers[0](y_tilde))
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path)  # safe_mode=True by default
    assert isinstance(loaded.layers[-1], Orthonorm)
    np.testing.assert_array_equal(loaded(y_tilde).numpy(), model(y_tilde).numpy())


def test_tangent_projection_removes_gram_changes_and_is_idempotent():
    rng = np.random.default_rng(2)
    y = tf.constant(rng.normal(size=(200, 3)))
    g = tf.constant(rng.normal(size=(200, 3)))
    p = tangent_projection(y, g)
    s = y.numpy().T @ p.numpy()
    np.testing.assert_allclose(s + s.T, 0, atol=1e-9)  # Gram unchanged to 1st order
    np.testing.assert_allclose(tangent_projection(y, p).numpy(), p.numpy(), atol=1e-9)
    # A pure rescaling/mixing direction Y @ A (A symmetric) is removed entirely.
    a = np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.1], [0.0, 0.1, 0.5]])
    np.testing.assert_allclose(tangent_projection(y, y @ a).numpy(), 0, atol=1e-9)
