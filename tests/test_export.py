import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf import SpectralNet
from spectralnet_tf.datasets import load_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def fitted():
    x, _, k = load_dataset("moons", n=400)
    net = SpectralNet(k, hidden_units=(32, 32), max_epochs=3, random_state=0).fit(x)
    return net, x


def _run_fresh(code, tmp_path):
    """Run code in a fresh Python process (no training code imported by it)."""
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _tree_digest(path):
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(path)):
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


def test_saved_model_serves_the_same_embedding_and_clusters(fitted, tmp_path):
    net, x = fitted
    path = net.export(str(tmp_path / "export"), name="moons")
    assert path == str(tmp_path / "export" / "moons" / "1")
    np.save(tmp_path / "x.npy", x)
    _run_fresh(
        "import numpy as np, tensorflow as tf\n"
        f"m = tf.saved_model.load({path!r})\n"
        "out = m.signatures['serving_default'](x=tf.constant(np.load('x.npy')))\n"
        "np.savez('out.npz', **{k: v.numpy() for k, v in out.items()})\n",
        tmp_path,
    )
    served = np.load(tmp_path / "out.npz")
    assert served["embedding"].dtype == np.float32 and served["cluster"].dtype == np.int64
    assert np.max(np.abs(served["embedding"] - net.transform(x))) <= 1e-5
    np.testing.assert_array_equal(served["cluster"], net.predict(x))
    assert served["distances"].shape == (len(x), net.n_clusters)


def test_saved_model_cli_lists_the_documented_signature(fitted, tmp_path):
    net, _ = fitted
    path = net.export(str(tmp_path))
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    out = subprocess.run([cli, "show", "--dir", path, "--all"], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-2000:]
    sig = out.stdout.split("signature_def['serving_default']")[1].split("signature_def[")[0]
    assert "inputs['x'] tensor_info:" in sig
    expected = {"x": ("DT_FLOAT", "(-1, 2)"), "embedding": ("DT_FLOAT", "(-1, 2)"),
                "cluster": ("DT_INT64", "(-1)"), "distances": ("DT_FLOAT", "(-1, 2)")}
    for name, (dtype, shape) in expected.items():
        block = sig.split(f"['{name}'] tensor_info:")[1]
        assert f"dtype: {dtype}" in block.split("name:")[0]
        assert f"shape: {shape}" in block.split("name:")[0]


def test_predict_request_for_the_signature_serializes(fitted):
    from tensorflow_serving.apis import predict_pb2

    _, x = fitted
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "spectralnet"
    request.model_spec.signature_name = "serving_default"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(x[:3], dtype=tf.float32))
    parsed = predict_pb2.PredictRequest.FromString(request.SerializeToString())
    np.testing.assert_array_equal(tf.make_ndarray(parsed.inputs["x"]), x[:3])
    assert parsed.model_spec.signature_name == "serving_default"


def test_wrong_input_width_is_refused(fitted, tmp_path):
    net, _ = fitted
    serve = tf.saved_model.load(net.export(str(tmp_path))).signatures["serving_default"]
    with pytest.raises((ValueError, TypeError, tf.errors.InvalidArgumentError), match=r"2|shape"):
        serve(x=tf.zeros((4, 3)))
    with pytest.raises(ValueError, match="X has 3 features"):
        net.predict(np.zeros((4, 3)))


def test_second_export_is_version_2_and_leaves_version_1_untouched(fitted, tmp_path):
    net, _ = fitted
    first = net.export(str(tmp_path))
    before = _tree_digest(first)
    second = net.export(str(tmp_path))
    assert os.path.basename(second) == "2"
    assert _tree_digest(first) == before
    assert sorted(os.listdir(tmp_path / "spectralnet")) == ["1", "2"]


def test_interrupted_export_leaves_no_version_behind(fitted, tmp_path, monkeypatch):
    net, _ = fitted

    def save_then_fail(obj, export_dir, signatures=None):
        with open(os.path.join(export_dir, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        raise KeyboardInterrupt("simulated crash during the write")

    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    with pytest.raises(KeyboardInterrupt):
        net.export(str(tmp_path))
    assert os.listdir(tmp_path / "spectralnet") == []


def test_keras_file_loads_in_a_fresh_process_with_identical_outputs(fitted, tmp_path):
    net, x = fitted
    net.save(str(tmp_path / "est"))
    np.save(tmp_path / "x.npy", x)
    _run_fresh(
        "import numpy as np, keras, spectralnet_tf\n"
        "m = keras.models.load_model('est/embedder.keras')\n"  # safe_mode=True
        "np.save('y.npy', np.asarray(m(np.load('x.npy'))))\n",
        tmp_path,
    )
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), net.transform(x))


def test_estimator_save_load_round_trip(fitted, tmp_path):
    net, x = fitted
    path = net.save(str(tmp_path / "est"))
    loaded = SpectralNet.load(path)
    np.testing.assert_array_equal(loaded.predict(x), net.predict(x))
    np.testing.assert_array_equal(loaded.transform(x), net.transform(x))
    np.testing.assert_array_equal(loaded.labels_, net.labels_)
    assert loaded.get_params() == net.get_params()
    with pytest.raises(FileExistsError, match="already exists"):
        net.save(path)
    with pytest.raises(FileNotFoundError, match="missing embedder.keras, estimator.json"):
        SpectralNet.load(str(tmp_path / "nothing"))
    assert json.load(open(os.path.join(path, "estimator.json")))["n_features_in_"] == 2
