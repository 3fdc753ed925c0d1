import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from sklearn.base import BaseEstimator

from spectralnet_tf import GaussianKNNAffinity, Schedule, SiameseEmbedding, SpectralNet
from spectralnet_tf.autoencoder import load_encoder
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.networks import build_spectralnet

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MNIST_AE = os.path.join(ROOT, "pretrained_ae", "ae_mnist_shift2_seed1_weights.h5")  # AE_ALL
SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")


@pytest.fixture(scope="module")
def fitted():
    x, _, k = load_dataset("moons", n=400)
    net = SpectralNet(k, hidden_units=(32, 32), schedule=Schedule(max_epochs=3),
                      random_state=0).fit(x)
    return net, x


@pytest.fixture(scope="module")
def fitted_with_encoder():
    """The MNIST code-space model: the committed VaDE encoder in front of F_theta
    (fitted on random pixel rows: the test is about the export, not the clusters)."""
    x = np.random.default_rng(0).uniform(size=(300, 784)).astype(np.float32)
    net = SpectralNet(3, hidden_units=(16,), schedule=Schedule(max_epochs=1, steps_per_epoch=5),
                      encoder=load_encoder(MNIST_AE), random_state=0).fit(x)
    return net, x


def _tree_digest(path):
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(path)):
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as f:
                h.update(name.encode() + f.read())
    return h.hexdigest()


#: Serve x.npy through both loaders and save their outputs: TF2's
#: tf.saved_model.load, and the session path of TF-Serving and saved_model_cli
#: run (restore the variables through the SaverDef, run the signature's tensors).
BOTH_LOADERS = """
import sys, numpy as np, tensorflow as tf
path, x = sys.argv[1], np.load("x.npy")
sig = tf.saved_model.load(path).signatures["serving_default"]
np.savez("tf2.npz", **{k: v.numpy() for k, v in sig(x=tf.constant(x)).items()})
with tf.compat.v1.Session(graph=tf.Graph()) as sess:
    meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
    sig = meta.signature_def["serving_default"]
    out = sess.run({k: v.name for k, v in sig.outputs.items()}, {sig.inputs["x"].name: x})
np.savez("session.npz", **out)
"""


#: Load the estimator's .keras file with Keras alone (safe_mode=True), as
#: a user's fresh process does: importing the package registers its layers.
KERAS_LOAD = """
import numpy as np, keras, spectralnet_tf
m = keras.models.load_model('est/embedder.keras')
np.save('y.npy', np.asarray(m(np.load('x.npy'))))
"""

#: Run the requests listed in the JSON file ``sys.argv[1]``, each
#: ``[script, folder, argv, serving]``: in its folder, with ``sys.argv`` set to
#: ``argv`` and its standard output in ``stdout.txt`` there. A serving request
#: finds no module of the package imported, as in a model server; they come
#: before the Keras load, which imports it.
FRESH_PROCESS = """
import contextlib, json, os, sys
for script, folder, argv, serving in json.load(open(sys.argv[1])):
    assert not (serving and "spectralnet_tf" in sys.modules), folder
    os.chdir(folder)
    sys.argv = argv
    with open("stdout.txt", "w") as out, contextlib.redirect_stdout(out):
        exec(compile(script, os.path.join(folder, "request.py"), "exec"), {"__name__": "__main__"})
"""


@pytest.fixture(scope="module")
def fresh(fitted, fitted_with_encoder, tmp_path_factory):
    """The fresh-process requests of the slow tests below, run in one new
    Python process, so that TensorFlow starts once for all of them: both
    loaders on each model's export, a request with NaN and inf, and the
    .keras file loaded by Keras. Each request has a folder of its own, with
    its input ``x.npy`` and what it wrote; returns ``name -> (folder, path
    of the export or None)``."""
    root = tmp_path_factory.mktemp("fresh")
    cases, requests = {}, []
    for name, (net, x) in (("fitted", fitted), ("fitted_with_encoder", fitted_with_encoder)):
        folder = root / name
        path = net.export(str(folder / "export"), name="m")
        cases[name] = (folder, path)
        requests.append((BOTH_LOADERS, folder, path, x, True))
    net, x = fitted
    folder = root / "nan"
    bad = x[:5].copy()
    bad[3, 1] = np.nan
    bad[4, 0] = np.inf
    cases["nan"] = (folder, net.export(str(folder / "export")))
    requests.append((NAN_REQUEST, folder, cases["nan"][1], bad, True))
    folder = root / "keras"
    net.save(str(folder / "est"))
    cases["keras"] = (folder, None)
    requests.append((KERAS_LOAD, folder, None, x, False))
    listed = []
    for script, folder, path, x, serving in requests:
        np.save(folder / "x.npy", x)
        listed.append([script, str(folder), ["request.py", *([path] if path else [])], serving])
    (root / "requests.json").write_text(json.dumps(listed))
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-c", FRESH_PROCESS, str(root / "requests.json")],
                         cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return cases


@pytest.mark.slow  # TensorFlow starts in a subprocess
@pytest.mark.parametrize("model", ["fitted", "fitted_with_encoder"])
def test_both_loaders_serve_the_estimators_embedding_and_clusters(model, request, fresh):
    net, x = request.getfixturevalue(model)
    folder, path = fresh[model]
    assert path == str(folder / "export" / "m" / "1")
    embedding, labels = net.transform(x), net.predict(x)
    for loader in ("tf2", "session"):
        served = np.load(folder / f"{loader}.npz")
        assert sorted(served.files) == ["cluster", "distances", "embedding"]
        assert served["embedding"].dtype == np.float32 and served["cluster"].dtype == np.int64
        assert np.max(np.abs(served["embedding"] - embedding)) <= 1e-5, loader
        np.testing.assert_array_equal(served["cluster"], labels)
        assert served["distances"].shape == (len(x), net.n_clusters)
        np.testing.assert_array_equal(np.argmin(served["distances"], axis=1), labels)


def test_saved_model_stores_each_weight_once(fitted, tmp_path):
    net, _ = fitted
    path = net.export(str(tmp_path))
    stored = [shape for name, shape in tf.train.list_variables(os.path.join(path, "variables", "variables"))
              if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert sorted(map(tuple, stored)) == sorted(tuple(v.shape) for v in net.model_.variables)


@pytest.mark.slow  # TensorFlow starts in a subprocess
def test_saved_model_cli_run_serves_the_export(fitted, tmp_path):
    """The command of the bug report: it failed with 'Could not find variable'."""
    net, x = fitted
    path = net.export(str(tmp_path / "export"))
    np.save(tmp_path / "x.npy", x[:50])
    out = subprocess.run(
        [SAVED_MODEL_CLI, "run", "--dir", path, "--tag_set", "serve", "--signature_def",
         "serving_default", "--inputs", f"x={tmp_path / 'x.npy'}", "--outdir", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert out.returncode == 0, out.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "cluster.npy"), net.predict(x[:50]))
    assert np.max(np.abs(np.load(tmp_path / "o" / "embedding.npy") - net.transform(x[:50]))) <= 1e-5


@pytest.mark.slow  # TensorFlow starts in a subprocess
def test_saved_model_cli_lists_the_documented_signature(fitted, tmp_path):
    net, _ = fitted
    path = net.export(str(tmp_path))
    out = subprocess.run([SAVED_MODEL_CLI, "show", "--dir", path, "--all"], capture_output=True,
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


def test_predict_request_built_from_the_signature_matches_it(fitted, tmp_path):
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow_serving.apis import predict_pb2

    net, x = fitted
    path = net.export(str(tmp_path))
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved = saved_model_pb2.SavedModel.FromString(f.read())
    sig = saved.meta_graphs[0].signature_def["serving_default"]
    assert set(sig.inputs) == {"x"} and set(sig.outputs) == {"embedding", "cluster", "distances"}
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "spectralnet"
    request.model_spec.signature_name = "serving_default"
    for name, info in sig.inputs.items():
        request.inputs[name].CopyFrom(
            tf.make_tensor_proto(x[:3], dtype=tf.dtypes.as_dtype(info.dtype)))
    request.output_filter.extend(sorted(sig.outputs))
    parsed = predict_pb2.PredictRequest.FromString(request.SerializeToString())
    np.testing.assert_array_equal(tf.make_ndarray(parsed.inputs["x"]), x[:3])
    assert parsed.inputs["x"].dtype == sig.inputs["x"].dtype == tf.float32.as_datatype_enum
    assert list(parsed.output_filter) == ["cluster", "distances", "embedding"]
    dtypes = {name: tf.dtypes.as_dtype(info.dtype) for name, info in sig.outputs.items()}
    assert dtypes == {"embedding": tf.float32, "cluster": tf.int64, "distances": tf.float32}
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

    def save_then_fail(obj, export_dir, signatures=None, options=None):
        with open(os.path.join(export_dir, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        raise KeyboardInterrupt("simulated crash during the write")

    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    with pytest.raises(KeyboardInterrupt):
        net.export(str(tmp_path))
    assert os.listdir(tmp_path / "spectralnet") == []


def test_export_writes_models_config_for_the_models_present(fitted, tmp_path):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    net, _ = fitted
    net.export(str(tmp_path), name="moons")
    net.export(str(tmp_path), name="moons")
    os.makedirs(tmp_path / "empty")  # no version inside: nothing to serve
    net.export(str(tmp_path), name="cc", serving_root="/srv/export/")
    config = model_server_config_pb2.ModelServerConfig()
    text_format.Parse((tmp_path / "models.config").read_text(), config)
    got = [(c.name, c.base_path, c.model_platform) for c in config.model_config_list.config]
    assert got == [("cc", "/srv/export/cc", "tensorflow"), ("moons", "/srv/export/moons", "tensorflow")]


def test_committed_export_folder_names_no_model(tmp_path):
    """A fresh checkout has no exported model, so it commits no models.config that names one."""
    tracked = subprocess.run(["git", "ls-files", "export"], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    assert "export/models.config" not in tracked


@pytest.mark.parametrize("name", ["", "../up", "a/b", "-x", 3])
def test_bad_model_name_is_refused_before_writing(fitted, tmp_path, name):
    net, _ = fitted
    with pytest.raises(ValueError, match=f"got name={name!r}"):
        net.export(str(tmp_path), name=name)
    assert os.listdir(tmp_path) == []


@pytest.mark.slow  # TensorFlow starts in a subprocess
def test_keras_file_loads_in_a_fresh_process_with_identical_outputs(fitted, fresh):
    net, x = fitted
    folder, _ = fresh["keras"]
    np.testing.assert_array_equal(np.load(folder / "y.npy"), net.transform(x))


def _comparable(params):
    """``get_params`` with each part (an estimator object, equal to another
    only if the same object) as its class and its own parameters."""
    return {key: (type(value), _comparable(value.get_params()))
            if isinstance(value, BaseEstimator) else value for key, value in params.items()}


def _assert_same_fitted_state(loaded, net, x):
    np.testing.assert_array_equal(loaded.predict(x), net.predict(x))
    np.testing.assert_array_equal(loaded.transform(x), net.transform(x))
    for name in ("labels_", "embedding_", "cluster_centers_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(net, name))
    assert loaded.history_ == net.history_
    assert loaded.n_features_in_ == net.n_features_in_
    assert loaded.affinity_.scale_ == net.affinity_.scale_
    assert type(loaded.affinity_) is type(net.affinity_)


def test_estimator_save_load_round_trip(fitted, tmp_path):
    net, x = fitted
    path = net.save(str(tmp_path / "est"))
    loaded = SpectralNet.load(path)
    _assert_same_fitted_state(loaded, net, x)
    assert _comparable(loaded.get_params()) == _comparable(net.get_params())
    with pytest.raises(FileExistsError, match="already exists"):
        net.save(path)
    with pytest.raises(FileNotFoundError, match="missing embedder.keras, estimator.json, arrays.npz"):
        SpectralNet.load(str(tmp_path / "nothing"))
    assert json.load(open(os.path.join(path, "estimator.json")))["n_features_in_"] == 2


@pytest.mark.slow
def test_round_trip_keeps_encoder_and_siamese_and_refits_the_same(tmp_path):
    x = np.random.default_rng(1).uniform(size=(400, 784)).astype(np.float32)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=5),
                  affinity=GaussianKNNAffinity(n_nbrs=5, scale_nbr=2),
                  affinity_embedding=SiameseEmbedding(hidden_units=(16, 4),
                                                      schedule=Schedule(max_epochs=2, tol=0.0)),
                  random_state=0)
    net = SpectralNet(3, encoder=load_encoder(MNIST_AE), **params).fit(x)
    loaded = SpectralNet.load(net.save(str(tmp_path / "est")))
    _assert_same_fitted_state(loaded, net, x)
    assert loaded.siamese_history_ == net.siamese_history_
    for part in ("affinity", "affinity_embedding", "schedule"):  # the same class and parameters
        assert type(loaded.get_params()[part]) is type(net.get_params()[part])
        assert (_comparable(loaded.get_params()[part].get_params())
                == _comparable(net.get_params()[part].get_params()))
    assert loaded.affinity_embedding_.history_ == net.affinity_embedding_.history_
    codes = net.encoder.predict(x[:50], verbose=0)
    np.testing.assert_array_equal(loaded.encoder.predict(x[:50], verbose=0), codes)
    np.testing.assert_array_equal(np.asarray(loaded.siamese_(codes)), np.asarray(net.siamese_(codes)))
    np.testing.assert_array_equal(np.asarray(loaded.affinity_(codes)), np.asarray(net.affinity_(codes)))
    # A new fit of the loaded estimator is the original's new fit: same parameters, same encoder.
    refit, again = loaded.fit(x), net.fit(x)
    np.testing.assert_array_equal(refit.labels_, again.labels_)
    np.testing.assert_array_equal(refit.embedding_, again.embedding_)


def test_mixed_bfloat16_estimator_round_trips_and_exports_float32(tmp_path):
    x, _, k = load_dataset("moons", n=400)
    net = SpectralNet(k, hidden_units=(32, 32), schedule=Schedule(max_epochs=2, steps_per_epoch=5),
                      random_state=0, dtype_policy="mixed_bfloat16",
                      affinity_embedding=SiameseEmbedding(hidden_units=(16, 4),
                                                          schedule=Schedule(max_epochs=2, tol=0.0),
                                                          dtype_policy="mixed_bfloat16")).fit(x)
    assert net.siamese_.layers[0].compute_dtype == "bfloat16"
    loaded = SpectralNet.load(net.save(str(tmp_path / "est")))
    assert loaded.get_params()["dtype_policy"] == "mixed_bfloat16"
    _assert_same_fitted_state(loaded, net, x)
    sig = tf.saved_model.load(net.export(str(tmp_path / "export"), name="m")).signatures[
        "serving_default"]
    served = sig(x=tf.constant(x))
    assert served["embedding"].dtype == tf.float32
    # The served graph and eager execution may round bfloat16 differently (fused
    # kernels; CPUs with native bfloat16 such as AVX-512 BF16): each is a bfloat16
    # rounding of the same float32 net, so they differ by at most twice the eager
    # net's own distance to its float32 twin (same weights, float32 compute).
    scaling = net.model_.get_layer("scaling").get_config()
    twin = build_spectralnet(x.shape[1], k, hidden_units=(32, 32),
                             output_activation=net.output_activation, dtype_policy="float32",
                             scaling=(scaling["mean"], scaling["variance"]))
    twin.set_weights(net.model_.get_weights())
    eager = net.transform(x)
    rounding = np.abs(eager - twin.predict(x, verbose=0)).max()
    assert 0 < rounding < 0.05
    assert np.abs(served["embedding"].numpy() - eager).max() <= 2 * rounding
    np.testing.assert_array_equal(served["cluster"].numpy(), net.predict(x))


def test_a_save_from_before_unit_rows_assigns_on_the_rows_as_they_are(fitted, tmp_path):
    """A format-3 save's centroids were fitted on the rows as they are: it
    loads, predicts and serves that way; a new save serves unit rows."""
    from spectralnet_tf.centroids import assign, centroid_distances

    net, x = fitted
    path = net.save(str(tmp_path / "est"))
    state_file = os.path.join(path, "estimator.json")
    with open(state_file) as f:
        state = json.load(f)
    assert state.pop("normalize_rows_") is True
    state["format"] = 3
    with open(state_file, "w") as f:
        json.dump(state, f)
    assert SpectralNet.load(net.save(str(tmp_path / "again"))).normalize_rows_ is True
    loaded = SpectralNet.load(path)
    assert loaded.normalize_rows_ is False
    embedding = net.transform(x)
    np.testing.assert_array_equal(loaded.predict(x), assign(embedding, net.cluster_centers_))
    for model, unit in ((net, True), (loaded, False)):
        served = tf.saved_model.load(model.export(str(tmp_path / f"export-{unit}"))).signatures[
            "serving_default"](x=tf.constant(x))
        want = centroid_distances(embedding, net.cluster_centers_, unit).numpy()
        np.testing.assert_allclose(served["distances"].numpy(), want, atol=1e-5)
        np.testing.assert_array_equal(served["cluster"].numpy(), model.predict(x))


def _as_format_2(path, flat):
    """Rewrite a fresh save's estimator.json as format 2 wrote it: the
    estimator's parameters flat (``n_nbrs``, ``scale_nbr``, ``scale``,
    ``siamese_*``, ``neighbors``), tuples as lists."""
    state_file = os.path.join(path, "estimator.json")
    with open(state_file) as f:
        state = json.load(f)
    state["format"] = 2
    state["params"] = flat
    with open(state_file, "w") as f:
        json.dump(state, f)


@pytest.mark.slow  # trains end to end
def test_a_format_2_save_loads_into_the_objects_and_refits_as_it_was_trained(tmp_path):
    x, _, k = load_dataset("moons", n=400)
    net = SpectralNet(k, hidden_units=(16,), batch_size=128,
                      schedule=Schedule(max_epochs=2, steps_per_epoch=5, tol=0.0),  # format 2's
                      laplacian="unnormalized", init="random",
                      affinity=GaussianKNNAffinity(n_nbrs=6, scale_nbr=2, scale="local"),
                      affinity_embedding=SiameseEmbedding(
                          hidden_units=(8, 4), n_nbrs=3, batch_size=64,
                          schedule=Schedule(max_epochs=2, steps_per_epoch=3, tol=0.0),
                          neighbors="exact"),
                      random_state=0).fit(x)
    # As format 2's fits were: centroids of the rows as they are.
    from spectralnet_tf.centroids import assign, fit_centroids

    net.normalize_rows_ = False
    net.cluster_centers_ = fit_centroids(net.embedding_, k, 0)
    net.labels_ = assign(net.embedding_, net.cluster_centers_)
    path = net.save(str(tmp_path / "v2"))
    # Every parameter of the format-2 SpectralNet, as its save_estimator wrote them.
    _as_format_2(path, {
        "n_clusters": k, "hidden_units": [16], "output_activation": "tanh", "affinity": "knn",
        "n_nbrs": 6, "scale_nbr": 2, "scale": "local", "laplacian": "unnormalized",
        "batch_size": 128, "ortho_batch_size": None, "learning_rate": 0.001, "patience": 10,
        "min_lr": 1e-08, "max_epochs": 2, "steps_per_epoch": 5, "gradient": "projected",
        "init": "random", "dtype_policy": "float32", "validation_fraction": 0.1,
        "label_weight": 1.0, "labeled_share": 0.0, "affinity_embedding": "siamese",
        "encoder": None, "siamese_hidden_units": [8, 4], "siamese_output_activation": "linear",
        "siamese_n_nbrs": 3, "siamese_positives_per_point": None, "siamese_batch_size": 64,
        "siamese_learning_rate": 0.001, "siamese_max_epochs": 2, "siamese_steps_per_epoch": 3,
        "siamese_dtype_policy": "float32", "neighbors": "exact", "checkpoint_dir": None,
        "distribute": None, "random_state": 0, "verbose": 0})
    loaded = SpectralNet.load(path)
    _assert_same_fitted_state(loaded, net, x)
    assert loaded.affinity.get_params() == net.affinity.get_params()
    assert type(loaded.affinity_embedding.schedule) is Schedule
    assert (_comparable(loaded.affinity_embedding.get_params())
            == _comparable(net.affinity_embedding.get_params()))
    assert type(loaded.schedule) is Schedule
    assert loaded.schedule.get_params() == net.schedule.get_params()
    assert loaded.hidden_units == (16,) and loaded.schedule.max_epochs == 2
    np.testing.assert_array_equal(np.asarray(loaded.affinity_(x[:20])), np.asarray(net.affinity_(x[:20])))
    # A refit trains exactly as the original's (the format-2 settings, moved into the objects).
    np.testing.assert_array_equal(loaded.fit(x).embedding_, net.fit(x).embedding_)


@pytest.mark.parametrize("version", [1, 99, None])
def test_an_unreadable_format_fails_in_one_line_naming_it(fitted, tmp_path, version):
    net, _ = fitted
    path = net.save(str(tmp_path / "old"))
    state_file = os.path.join(path, "estimator.json")
    state = json.load(open(state_file))
    state["format"] = version
    json.dump(state, open(state_file, "w"))
    with pytest.raises(ValueError) as err:
        SpectralNet.load(path)
    message = str(err.value)
    assert "\n" not in message
    assert f"was saved in format {version!r}; this version reads formats 2, 3, 4" in message
    assert "fit it again" in message


def test_the_saved_parameters_are_json_with_the_parts_by_class(tmp_path):
    x, _, k = load_dataset("moons", n=300)
    net = SpectralNet(k, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                      random_state=0,
                      affinity=GaussianKNNAffinity(n_nbrs=4, scale="local")).fit(x)
    state = json.load(open(os.path.join(net.save(str(tmp_path / "s")), "estimator.json")))
    assert state["format"] == 6
    assert state["params"]["affinity"] == {"class": "GaussianKNNAffinity", "params": {
        "n_nbrs": 4, "scale_nbr": 7, "scale": "local", "n_scale_batches": 10}}
    assert state["params"]["affinity_embedding"] is None
    assert state["params"]["schedule"] == {"class": "Schedule", "params": {
        "learning_rate": 0.001, "max_epochs": 1, "steps_per_epoch": 2, "patience": 10,
        "min_lr": 1e-08, "tol": 0.001}}


def test_an_initializer_object_saves_and_loads_with_its_parameters(tmp_path):
    from spectralnet_tf.initializers import SpectralInit

    x, _, k = load_dataset("moons", n=300)
    net = SpectralNet(k, hidden_units=(8,), random_state=0, init=SpectralInit(steps=60, rms=0.2),
                      schedule=Schedule(max_epochs=1, steps_per_epoch=2)).fit(x)
    loaded = SpectralNet.load(net.save(str(tmp_path / "s")))
    assert type(loaded.init) is SpectralInit
    assert loaded.init.get_params() == {**SpectralInit().get_params(), "steps": 60, "rms": 0.2}
    np.testing.assert_array_equal(loaded.predict(x), net.predict(x))


def test_a_format_5_save_loads_its_flat_schedules_into_schedule_parts(tmp_path):
    """Format 5 kept the schedules flat on SpectralNet and on the Siamese
    net: they load as ``Schedule`` parts of the same values (the Siamese
    one, which never stopped early, with ``tol=0``), and refit alike."""
    x, _, k = load_dataset("moons", n=300)
    flat = {"learning_rate": 0.002, "max_epochs": 1, "steps_per_epoch": 2, "patience": 7,
            "min_lr": 1e-6, "tol": 0.0}
    siamese_flat = {"learning_rate": 0.003, "max_epochs": 1, "steps_per_epoch": 3,
                    "patience": 5, "min_lr": 1e-7}
    net = SpectralNet(k, hidden_units=(8,), random_state=0, schedule=Schedule(**flat),
                      affinity_embedding=SiameseEmbedding(
                          hidden_units=(8, 2), schedule=Schedule(**siamese_flat, tol=0.0))).fit(x)
    path = net.save(str(tmp_path / "s"))
    state_file = os.path.join(path, "estimator.json")
    state = json.load(open(state_file))
    state["format"] = 5
    params = state["params"]
    params.update(params.pop("schedule")["params"])
    siamese = params["affinity_embedding"]["params"]
    siamese.update({key: value for key, value in siamese.pop("schedule")["params"].items()
                    if key != "tol"})
    json.dump(state, open(state_file, "w"))
    loaded = SpectralNet.load(path)
    assert type(loaded.schedule) is Schedule and loaded.schedule.get_params() == flat
    assert loaded.affinity_embedding.schedule.get_params() == {**siamese_flat, "tol": 0.0}
    np.testing.assert_array_equal(loaded.predict(x), net.predict(x))


NAN_REQUEST = """
import sys, numpy as np, tensorflow as tf
path, x = sys.argv[1], np.load("x.npy")
refused = []
try:
    tf.saved_model.load(path).signatures["serving_default"](x=tf.constant(x))
except tf.errors.InvalidArgumentError as err:
    refused.append("tf2: " + " ".join(err.message.split()))
with tf.compat.v1.Session(graph=tf.Graph()) as sess:
    meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
    sig = meta.signature_def["serving_default"]
    try:
        sess.run({k: v.name for k, v in sig.outputs.items()}, {sig.inputs["x"].name: x})
    except tf.errors.InvalidArgumentError as err:
        refused.append("session: " + " ".join(err.message.split()))
print("\\n".join(refused))
"""


@pytest.mark.slow
def test_a_request_with_nan_or_inf_is_refused_by_both_loaders_and_saved_model_cli(fresh,
                                                                                   tmp_path):
    from spectralnet_tf.export import NON_FINITE_INPUT

    folder, path = fresh["nan"]  # x[:5] of the fitted moons, with a NaN and an inf
    bad = np.load(folder / "x.npy")
    assert np.isnan(bad[3, 1]) and np.isinf(bad[4, 0])
    stdout = (folder / "stdout.txt").read_text()
    lines = stdout.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["tf2", "session"], stdout
    assert all(NON_FINITE_INPUT in line for line in lines), stdout
    cli = subprocess.run(
        [SAVED_MODEL_CLI, "run", "--dir", path, "--tag_set", "serve", "--signature_def",
         "serving_default", "--inputs", f"x={folder / 'x.npy'}", "--outdir", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert cli.returncode != 0 and NON_FINITE_INPUT in cli.stderr, cli.stderr[-3000:]
    assert not (tmp_path / "o").exists()
