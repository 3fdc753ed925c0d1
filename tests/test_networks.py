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


def test_mixed_bfloat16_runs_the_hidden_layers_in_bfloat16_and_keeps_float32_outputs():
    x = np.random.default_rng(1).normal(size=(256, 3)).astype("float32")
    f32, _ = build_spectralnet(3, 2, (64, 64), seed=0, output_activation="linear")
    bf16, body = build_spectralnet(3, 2, (64, 64), seed=0, output_activation="linear",
                                   dtype_policy="mixed_bfloat16")
    assert [layer.compute_dtype for layer in bf16.layers] == [
        "bfloat16", "bfloat16", "float32", "float32"]
    # Same float32 weights (same seeds); only the hidden computation is rounded.
    for a, b in zip(f32.weights, bf16.weights):
        assert b.dtype == "float32"
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    y32, y16 = f32(x).numpy(), bf16(x).numpy()
    assert y16.dtype == np.float32 and body(x).dtype == "float32"
    # bfloat16 keeps 8 significant bits: relative error a few 2**-8, not zero.
    err = np.abs(y16 - y32).max() / np.abs(y32).max()
    assert 0 < err < 0.05
