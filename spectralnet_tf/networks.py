"""Network builders: the SpectralNet map F_theta (paper Table 3)."""

import keras
import numpy as np
from keras import ops

from .hardware import resolve_dtype_policy
from .orthonorm import Orthonorm


#: Keras dtype policies of the hidden layers. "mixed_bfloat16" computes them
#: in bfloat16 with float32 weights; "auto" is that where the hardware has
#: bfloat16 units and float32 elsewhere (``hardware.resolve_dtype_policy``);
#: float16 is left out, as it needs loss scaling in the custom training loops.
DTYPE_POLICIES = ("float32", "mixed_bfloat16", "auto")


def dense_stack(hidden_units, activation, seed, prefix, dtype_policy=None):
    """Dense layers of ``hidden_units`` in ``dtype_policy`` ("auto" resolved here)."""
    dtype_policy = resolve_dtype_policy(dtype_policy)
    return [
        keras.layers.Dense(
            units,
            activation=activation,
            kernel_initializer=keras.initializers.GlorotUniform(seed=seed + i),
            dtype=dtype_policy,
            name=f"{prefix}{i + 1}",
        )
        for i, units in enumerate(hidden_units)
    ]


#: Activations allowed on the k-unit layer before Orthonorm.
OUTPUT_ACTIVATIONS = ("tanh", "linear")


@keras.saving.register_keras_serializable(package="spectralnet_tf")
class Standardize(keras.layers.Layer):
    """``(x - mean) / sqrt(variance)`` per feature, with a fixed ``mean`` and
    ``variance`` (``input_scaling`` of the training inputs): F_theta's first
    layer, so that new points are scaled as the training points were.

    Keras's ``Normalization`` does the same but floors the standard deviation
    at its epsilon, 1e-7, so a feature measured in tiny units (a spread of
    1e-9) would reach the net at a hundredth of its spread or less; here no
    floor is needed, because ``input_scaling`` gives a constant feature
    variance 1. The mean and variance are constants of the config, not
    weights: nothing trains or assigns them.

    Examples
    --------
    >>> import numpy as np
    >>> layer = Standardize(mean=[1e-9], variance=[4e-18])
    >>> float(layer(np.array([[3e-9]], "float32"))[0, 0])
    1.0
    """

    def __init__(self, mean, variance, **kwargs):
        super().__init__(**kwargs)
        self.mean = [float(v) for v in np.ravel(mean)]
        self.variance = [float(v) for v in np.ravel(variance)]

    def build(self, input_shape):
        self._shift = ops.reshape(ops.convert_to_tensor(self.mean, self.compute_dtype), (1, -1))
        self._scale = ops.sqrt(
            ops.reshape(ops.convert_to_tensor(self.variance, self.compute_dtype), (1, -1)))

    def call(self, inputs):
        return ops.divide(ops.subtract(inputs, self._shift), self._scale)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "mean": self.mean, "variance": self.variance}


def build_spectralnet(input_dim, n_outputs, hidden_units=(1024, 1024, 512), seed=0,
                      output_activation="tanh", dtype_policy=None, scaling=None):
    """F_theta: the inputs standardized, ReLU layers, a k-unit layer (tanh as
    in the paper's Table 3, or linear), then Orthonorm.

    ``scaling`` is ``(mean, variance)`` of the training inputs per feature
    (``input_scaling``; None: none, the inputs as they are): a fixed
    ``Standardize`` layer, part of the model, so that new points
    are scaled as the training points were. It changes what the net can
    represent not at all (the first Dense layer absorbs an affine map of its
    input) but how it starts: with inputs of a few units' spread, Glorot
    weights and the warm start's first RMSprop steps keep the tanh layer out
    of saturation, where inputs such as pixel values in [0, 16] drive every
    output to +-1 at once and the gradient vanishes.

    ``dtype_policy`` applies to the ReLU layers only (None: Keras's global
    policy): the k-unit layer and Orthonorm stay float32, so ỹ, the Gram
    matrix and the loss keep float32 precision (Keras casts the bfloat16
    activations on the way in).

    Returns the model, which maps x to the orthonormal embedding y
    (``orthonorm_input`` gives the map to ỹ, the input of Orthonorm).
    """
    mean, variance = (np.zeros(input_dim), np.ones(input_dim)) if scaling is None else scaling
    layers = [Standardize(mean, variance, dtype="float32", name="scaling")]
    layers += dense_stack(hidden_units, "relu", seed, "dense", dtype_policy)
    layers.append(
        keras.layers.Dense(
            n_outputs,
            activation=output_activation,
            kernel_initializer=keras.initializers.GlorotUniform(seed=seed + len(hidden_units)),
            dtype="float32",
            name="dense_out",
        )
    )
    model = keras.Sequential(
        [keras.Input((input_dim,), name="x"), *layers,
         Orthonorm(dtype="float32", name="orthonorm")],
        name="spectralnet",
    )
    return model


#: A feature whose spread is below this many float32 steps of its largest
#: value is constant to rounding (``input_scaling``).
CONSTANT_ULPS = 8


def input_scaling(z):
    """``(mean, variance)`` of the rows ``z`` per feature, for
    ``build_spectralnet``; a constant feature keeps variance 1 (it carries
    nothing to scale, and a new point's other value must not blow up).
    Constant means constant to float32 rounding of the feature's own values
    (a spread below ``CONSTANT_ULPS`` float32 steps of its largest value),
    whatever the units: a feature of spread 1e-9 is scaled like any other."""
    z = np.asarray(z, np.float64)
    mean, variance = z.mean(axis=0), z.var(axis=0)
    rounding = CONSTANT_ULPS * np.finfo(np.float32).eps * np.abs(z).max(axis=0, initial=0.0)
    return mean, np.where(variance > rounding ** 2, variance, 1.0)


def orthonorm_input(model):
    """The model that maps x to ỹ, the input of ``model``'s Orthonorm layer
    (its last), sharing ``model``'s layers."""
    return keras.Model(model.inputs[0], model.layers[-2].output, name="spectralnet_body")


def compose_embedder(encoder, spectral_model):
    """Raw input -> code (fixed encoder) -> SpectralNet embedding, as one model."""
    return keras.Sequential(
        [keras.Input(encoder.input_shape[1:], name="x"), encoder, spectral_model],
        name="spectralnet_embedder",
    )
