"""The Orthonorm output layer (paper Sec. 3.1, Algorithm 1, Appendix B).

The layer is linear, ``y = ỹ @ kernel``, with a non-trainable k×k kernel. An
orthogonalization step sets the kernel to ``sqrt(m) * inv(L).T`` where
``L @ L.T = Ỹ.T @ Ỹ`` on a minibatch, so that ``Y.T @ Y / m = I`` on it.
Gradient steps see the kernel as a constant (coordinate descent, as in the
paper): no gradient flows through the Cholesky factorization.

``tangent_projection`` projects a gradient with respect to Y onto the tangent
space of the constraint ``Y.T @ Y / m = I``. With the kernel held constant, the
plain gradient of the SpectralNet loss also rewards shrinking Y and merging its
columns (the loss is quadratic in Y); each ortho step undoes it by inflating
the kernel, the network output degenerates and the subspace wanders (see
README, "Why the gradient is projected"). The projected gradient only rotates
Y, so the ortho step is the retraction of a constrained (Riemannian) gradient
step: still coordinate descent, still no gradient through the Cholesky.
"""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="spectralnet_tf")
class Orthonorm(keras.layers.Layer):
    """Linear layer whose k×k weight orthonormalizes a minibatch.

    Parameters
    ----------
    jitter : float, default=1e-6
        First ridge tried when ``Ỹ.T @ Ỹ`` is rank deficient, relative to its
        mean eigenvalue. Each retry multiplies it by 10.
    max_tries : int, default=8
        Number of jitter levels tried before giving up with a clear error.
    rcond : float, default=1e-10
        ``Ỹ.T @ Ỹ (+ ridge)`` counts as positive definite when its smallest
        eigenvalue exceeds ``rcond`` times its largest.

    Examples
    --------
    >>> import numpy as np
    >>> layer = Orthonorm()
    >>> y_tilde = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
    >>> _ = layer.orthogonalize(y_tilde)
    >>> y = layer(y_tilde).numpy()
    >>> bool(np.allclose(y.T @ y / 64, np.eye(3), atol=1e-4))
    True
    """

    def __init__(self, jitter=1e-6, max_tries=8, rcond=1e-10, **kwargs):
        super().__init__(**kwargs)
        self.jitter = jitter
        self.max_tries = max_tries
        self.rcond = rcond

    def build(self, input_shape):
        k = input_shape[-1]
        # Under tf.distribute every replica computes the same kernel from the
        # all-reduced Gram matrix; the first replica's copy is written to all.
        self.kernel = self.add_weight(
            shape=(k, k),
            initializer="identity",
            trainable=False,
            aggregation="only_first_replica",
            name="kernel",
        )

    def call(self, inputs):
        return ops.matmul(inputs, ops.cast(self.kernel, inputs.dtype))

    def compute_output_shape(self, input_shape):
        return input_shape

    def orthogonalize(self, y_tilde):
        """Set the kernel so that the layer orthonormalizes ``y_tilde``.

        ``y_tilde`` is the (m, k) input of this layer on the ortho minibatch.
        Returns the new kernel.
        """
        y_tilde = tf.convert_to_tensor(y_tilde)
        return self.orthogonalize_gram(gram(y_tilde), tf.shape(y_tilde)[0], y_tilde.dtype)

    def orthogonalize_gram(self, gram, m, dtype="float32"):
        """Set the kernel from the float64 Gram matrix ``Ỹ.T @ Ỹ`` of m rows
        (``gram(y_tilde)``, or its sum over the replicas of a global
        minibatch). Returns the new kernel."""
        if not self.built:
            self.build(gram.shape)
        kernel = kernel_from_gram(gram, m, self.jitter, self.max_tries, self.rcond)
        kernel = tf.cast(kernel, dtype)
        self.kernel.assign(kernel)
        return kernel

    def get_config(self):
        config = super().get_config()
        config.update(
            {"jitter": self.jitter, "max_tries": self.max_tries, "rcond": self.rcond}
        )
        return config


def gram(y_tilde):
    """``Ỹ.T @ Ỹ`` in float64 (k×k): the only statistic of the ortho
    minibatch that the kernel needs, and a sum over rows, so replicas holding
    shards of one minibatch add theirs up (``distribute.all_sum``)."""
    y64 = tf.cast(y_tilde, tf.float64)
    return tf.matmul(y64, y64, transpose_a=True)


def orthonormalizer(y_tilde, jitter=1e-6, max_tries=8, rcond=1e-10):
    """Return ``sqrt(m) * inv(L).T`` with ``L @ L.T = Ỹ.T @ Ỹ + ridge * I``
    (``kernel_from_gram`` of ``gram(y_tilde)``), in the dtype of ``y_tilde``."""
    y_tilde = tf.convert_to_tensor(y_tilde)
    kernel = kernel_from_gram(gram(y_tilde), tf.shape(y_tilde)[0], jitter, max_tries, rcond)
    return tf.cast(kernel, y_tilde.dtype)


def kernel_from_gram(gram, m, jitter=1e-6, max_tries=8, rcond=1e-10):
    """Return ``sqrt(m) * inv(L).T`` (float64) with ``L @ L.T = gram + ridge * I``,
    ``gram`` the float64 ``Ỹ.T @ Ỹ`` of m rows.

    If ``gram`` is not positive definite to ``rcond``, a ridge of ``jitter * mean eigenvalue``,
    then 10×, 100×, ... is added, up to ``max_tries`` levels. Outputs that are
    not finite, or all zero, raise ``InvalidArgumentError`` with a message
    that says so instead of an opaque Cholesky failure.
    """
    m = tf.cast(m, tf.float64)
    k = tf.shape(gram)[0]
    finite = tf.debugging.assert_all_finite(
        gram,
        "Orthonorm: the network outputs on the ortho minibatch are not finite "
        "(NaN or inf); training diverged. Lower learning_rate.",
    )
    with tf.control_dependencies([finite]):
        eigvals = tf.linalg.eigvalsh(gram)  # ascending; k×k, cheap
    scale = tf.reduce_sum(eigvals) / tf.cast(k, tf.float64)
    tf.debugging.assert_positive(
        scale,
        "Orthonorm: the network outputs on the ortho minibatch are all zero, so "
        "they cannot be orthonormalized.",
    )
    # Ridge levels: 0, then jitter * scale * 10**i. The eigenvalues of
    # gram + r*I are eigvals + r, so each retry is checked without refactoring.
    levels = tf.concat(
        [[0.0], jitter * 10.0 ** tf.range(max_tries, dtype=tf.float64)], axis=0
    ) * scale
    ok = eigvals[0] + levels > rcond * (eigvals[-1] + levels)
    tf.debugging.Assert(
        tf.reduce_any(ok),
        [
            "Orthonorm: the Gram matrix of the ortho minibatch outputs stays "
            "rank deficient after max_tries ridge levels; eigenvalues:",
            eigvals,
        ],
    )
    # A gather, not a slice: XLA takes a slice's start as a compile-time
    # constant and would recompile for every minibatch.
    ridge = tf.gather(levels, tf.argmax(tf.cast(ok, tf.int32)))
    chol = tf.linalg.cholesky(gram + ridge * tf.eye(k, dtype=tf.float64))
    inv_l = tf.linalg.triangular_solve(chol, tf.eye(k, dtype=tf.float64), lower=True)
    return tf.sqrt(m) * tf.transpose(inv_l)


def tangent_projection(y, grad):
    """Project ``grad`` (m, k) onto the tangent space of ``{Y : Y.T Y = const}`` at y.

    Removes ``Y @ A``, A symmetric, with ``sym(Y.T (grad - Y A)) = 0``: the part
    of the gradient that changes the Gram matrix ``C = Y.T Y`` (scale and
    mixing of the columns). A solves the Lyapunov equation
    ``C A + A C = Y.T grad + grad.T Y``, in C's eigenbasis (k×k, cheap).
    """
    gram = tf.matmul(y, y, transpose_a=True)
    lam, v = tf.linalg.eigh(gram)
    s = tf.matmul(y, grad, transpose_a=True)
    s = s + tf.transpose(s)
    s_eig = tf.matmul(v, tf.matmul(s, v), transpose_a=True)
    a_eig = s_eig / tf.maximum(lam[:, None] + lam[None, :], 1e-12)
    a = tf.matmul(v, tf.matmul(a_eig, v, transpose_b=True))
    return grad - tf.matmul(y, a)
