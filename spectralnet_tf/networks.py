"""Network builders: the SpectralNet map F_theta (paper Table 3)."""

import keras

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


def build_spectralnet(input_dim, n_outputs, hidden_units=(1024, 1024, 512), seed=0,
                      output_activation="tanh", dtype_policy=None):
    """F_theta: ReLU layers, a k-unit layer (tanh as in the paper's Table 3, or
    linear), then Orthonorm.

    ``dtype_policy`` applies to the ReLU layers only (None: Keras's global
    policy): the k-unit layer and Orthonorm stay float32, so ỹ, the Gram
    matrix and the loss keep float32 precision (Keras casts the bfloat16
    activations on the way in).

    Returns the model, which maps x to the orthonormal embedding y
    (``orthonorm_input`` gives the map to ỹ, the input of Orthonorm).
    """
    layers = dense_stack(hidden_units, "relu", seed, "dense", dtype_policy)
    layers.append(
        keras.layers.Dense(
            n_outputs,
            activation=output_activation,
            kernel_initializer=keras.initializers.GlorotUniform(seed=seed + len(layers)),
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
