import numpy as np

from spectralnet_tf.networks import build_spectralnet


def _pre_orthonorm(output_activation):
    """Outputs of the size-k layer and of the layer before it, for large inputs."""
    model, body = build_spectralnet(3, 2, (8, 8), seed=0, output_activation=output_activation)
    x = np.random.default_rng(0).normal(scale=50.0, size=(64, 3)).astype("float32")
    dense_out = model.layers[-2]
    hidden = x
    for layer in model.layers[:-2]:
        hidden = layer(hidden)
    pre_activation = np.asarray(hidden) @ dense_out.kernel.numpy() + dense_out.bias.numpy()
    return body(x).numpy(), pre_activation


def test_tanh_output_layer_squashes_and_linear_one_does_not():
    y_tanh, pre_tanh = _pre_orthonorm("tanh")
    np.testing.assert_allclose(y_tanh, np.tanh(pre_tanh), rtol=1e-5, atol=1e-6)
    y_linear, pre_linear = _pre_orthonorm("linear")
    np.testing.assert_allclose(y_linear, pre_linear, rtol=1e-5, atol=1e-4)
    assert np.abs(y_linear).max() > 1.0  # scale 50 inputs leave the tanh range
