import numpy as np
import pytest

import keras

from spectralnet_tf.networks import Standardize, build_spectralnet, input_scaling, orthonorm_input


def _pre_orthonorm(output_activation):
    """Outputs of the size-k layer and of the layer before it, for large inputs."""
    model = build_spectralnet(3, 2, (8, 8), seed=0, output_activation=output_activation)
    body = orthonorm_input(model)
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
    f32 = build_spectralnet(3, 2, (64, 64), seed=0, output_activation="linear")
    bf16 = build_spectralnet(3, 2, (64, 64), seed=0, output_activation="linear",
                             dtype_policy="mixed_bfloat16")
    body = orthonorm_input(bf16)
    assert [layer.compute_dtype for layer in bf16.layers] == [
        "float32", "bfloat16", "bfloat16", "float32", "float32"]  # scaling, ..., Orthonorm
    # Same float32 weights (same seeds); only the hidden computation is rounded.
    for a, b in zip(f32.weights, bf16.weights):
        assert b.dtype == "float32"
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    y32, y16 = f32(x).numpy(), bf16(x).numpy()
    assert y16.dtype == np.float32 and body(x).dtype == "float32"
    # bfloat16 keeps 8 significant bits: relative error a few 2**-8, not zero.
    err = np.abs(y16 - y32).max() / np.abs(y32).max()
    assert 0 < err < 0.05


def test_auto_dtype_policy_follows_the_hardwares_bfloat16_units(monkeypatch, tmp_path):
    from spectralnet_tf import hardware

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert hardware.cpu_flags(str(cpuinfo)) == {"fpu", "sse2", "avx2", "avx512f"}
    assert hardware.cpu_flags(str(tmp_path / "missing")) == set()
    for units, policy in ((True, "mixed_bfloat16"), (False, "float32")):
        monkeypatch.setattr(hardware, "has_bfloat16_units", lambda: units)
        assert hardware.resolve_dtype_policy("auto") == policy
        assert hardware.resolve_dtype_policy("float32") == "float32"
        assert hardware.resolve_dtype_policy("mixed_bfloat16") == "mixed_bfloat16"
        model = build_spectralnet(3, 2, (8,), dtype_policy="auto")
        assert model.get_layer("dense1").dtype_policy.name == policy
        assert model.get_layer("dense_out").dtype_policy.name == "float32"


def test_cpu_defaults_fill_only_unset_variables_and_only_before_tensorflow(monkeypatch):
    import sys

    from spectralnet_tf import hardware

    monkeypatch.delitem(sys.modules, "tensorflow")  # as if not yet imported
    environ = {"TF_ENABLE_ONEDNN_OPTS": "0", "OTHER": "x"}  # the user's choice stays
    assert hardware.tensorflow_cpu_defaults(environ) == {}
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "0", "OTHER": "x"}
    environ = {}
    assert hardware.tensorflow_cpu_defaults(environ) == {"TF_ENABLE_ONEDNN_OPTS": "1"} == environ
    monkeypatch.setitem(sys.modules, "tensorflow", object())  # already imported: too late
    environ = {}
    assert hardware.tensorflow_cpu_defaults(environ) == {} and environ == {}


def test_importing_the_package_sets_the_cpu_defaults_before_tensorflow_starts():
    import os
    import subprocess
    import sys

    from spectralnet_tf import hardware

    env = {k: v for k, v in os.environ.items()
           if k not in (*hardware.CPU_DEFAULTS, "TF_CPP_MIN_LOG_LEVEL")}
    done = subprocess.run(
        [sys.executable, "-c", "import os, sys, spectralnet_tf\n"
         "print(os.environ['TF_ENABLE_ONEDNN_OPTS'], 'tensorflow' in sys.modules)"],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # Set, and TensorFlow not yet started: it reads it when it starts.
    assert done.stdout.split() == ["1", "False"]


def test_cpu_without_bf16_flags_has_no_bfloat16_units(monkeypatch):
    import tensorflow as tf

    from spectralnet_tf import hardware

    if tf.config.list_physical_devices("GPU"):
        pytest.skip("a GPU decides there; this checks the CPU rule")
    hardware.has_bfloat16_units.cache_clear()
    for flags, expected in (({"avx2", "avx512f"}, False), ({"avx512f", "avx512_bf16"}, True),
                            ({"amx_bf16"}, True)):
        monkeypatch.setattr(hardware, "cpu_flags", lambda flags=flags: flags)
        hardware.has_bfloat16_units.cache_clear()
        assert hardware.has_bfloat16_units() is expected
    hardware.has_bfloat16_units.cache_clear()


def test_inputs_in_tiny_units_are_standardized_like_any_others():
    # Features of spread 1, 1e-9 and 0 (constant): the first two reach the net
    # with unit spread, the constant one unscaled, about its value. (Keras's
    # Normalization floors the spread at 1e-7 and would pass the second at 1e-2.)
    rng = np.random.default_rng(0)
    x = np.c_[rng.normal(size=200), 1e-9 * rng.normal(size=200), np.full(200, 4.0)].astype(np.float32)
    mean, variance = input_scaling(x)
    assert variance[1] == pytest.approx(np.var(x[:, 1].astype(np.float64)), rel=1e-12)
    assert variance[2] == 1.0
    out = Standardize(mean, variance, dtype="float32")(x).numpy()
    np.testing.assert_allclose(out.std(0), [1.0, 1.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(out.mean(0), [0.0, 0.0, 0.0], atol=1e-5)
    layer = Standardize(mean, variance, dtype="float32", name="scaling")
    again = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(again, Standardize) and again.get_config() == layer.get_config()
    np.testing.assert_array_equal(again(x).numpy(), out)
