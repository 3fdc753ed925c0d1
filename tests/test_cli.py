"""The ``spectralnet`` command on the user's own files: fit, predict,
transform and export on .npy, .csv and .h5; every bad input as one line on
stderr and exit status 2, with nothing left in DIR; ``--help`` fast and free
of TensorFlow's log lines."""

import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from spectralnet_tf import cli, datafiles

TINY = ["--hidden", "16,16", "--epochs", "2", "--quiet"]
N, D, K = 240, 2, 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(argv, capsys):
    """``main(argv)`` in this process: (exit status, stdout, stderr)."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse's --help / --version
        rc = exit_.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, out, err, expected):
    assert rc == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("spectralnet: error: "), err
    assert expected in err, err
    assert "Traceback" not in err


def lines(text):
    return [int(v) for v in text.split()]


def predicted(model, x):
    """What ``predict`` gives x in Python, from the saved model. On the
    training rows that is the net's own clusters, which ``labels.csv``
    refines on the graph (docs/python.md): the two may differ in a few rows."""
    from spectralnet_tf import SpectralNet

    return SpectralNet.load(str(model)).predict(x).tolist()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    x, y = make_blobs(N, centers=K, n_features=D, cluster_std=0.5, random_state=0)
    x = x.astype(np.float32)
    np.save(folder / "x.npy", x)
    np.savetxt(folder / "y.txt", y, fmt="%d")
    return folder, x, y


@pytest.fixture(scope="module")
def fitted(data, tmp_path_factory):
    """One fit on the .npy file, shared by the predict/transform/export tests."""
    folder, x, _ = data
    out = tmp_path_factory.mktemp("fit") / "model"
    assert cli.main(["fit", str(folder / "x.npy"), "--n-clusters", str(K), "--out", str(out),
                     *TINY]) == 0
    return out


def test_fit_writes_the_model_labels_summary_and_plots(fitted, data):
    from spectralnet_tf import SpectralNet

    _, x, _ = data
    names = set(os.listdir(fitted))
    assert {"labels.csv", "summary.json", "embedding.png", "spectrum.png"} <= names
    assert not [n for n in os.listdir(fitted.parent) if n.startswith(".tmp-")]
    net = SpectralNet.load(str(fitted))
    labels = lines((fitted / "labels.csv").read_text())
    assert len(labels) == N and labels == net.labels_.tolist()
    summary = json.loads((fitted / "summary.json").read_text())
    assert (summary["n"], summary["n_features"], summary["k"]) == (N, D, K)
    assert summary["epochs"] == 2 == len(net.history_["loss"])
    assert summary["final_loss"] == net.history_["loss"][-1]
    assert summary["final_val_loss"] == net.history_["val_loss"][-1]
    assert {"load", "fit", "save", "plots", "total"} <= set(summary["seconds"])
    assert sum(summary["cluster_sizes"]) == N
    assert "acc" not in summary and "nmi" not in summary  # nothing scored without --labels
    for png in ("embedding.png", "spectrum.png"):
        assert (fitted / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert oct(os.stat(fitted).st_mode & 0o777) != oct(0o700)  # not the temporary dir's mode


def test_predict_on_the_training_file_gives_the_nets_labels(fitted, data, capsys, tmp_path):
    folder, x, _ = data
    rc, out, err = run(["predict", fitted, folder / "x.npy"], capsys)
    assert (rc, err) == (0, "")
    assert lines(out) == predicted(fitted, x)
    rc, out, _ = run(["predict", fitted, folder / "x.npy", "-o", tmp_path / "p.txt"], capsys)
    assert (rc, out) == (0, "")
    assert lines((tmp_path / "p.txt").read_text()) == predicted(fitted, x)


def test_transform_writes_npy_csv_or_stdout(fitted, data, capsys, tmp_path):
    from spectralnet_tf import SpectralNet

    folder, x, _ = data
    expected = SpectralNet.load(str(fitted)).transform(x)
    assert run(["transform", fitted, folder / "x.npy", "-o", tmp_path / "e.npy"], capsys)[0] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "e.npy"), expected)
    assert run(["transform", fitted, folder / "x.npy", "-o", tmp_path / "e.csv"], capsys)[0] == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "e.csv", delimiter=","), expected, rtol=1e-6)
    rc, out, _ = run(["transform", fitted, folder / "x.npy"], capsys)
    assert rc == 0
    np.testing.assert_allclose(np.loadtxt(out.splitlines(), delimiter=","), expected, rtol=1e-6)
    assert_one_line_error(*run(["transform", fitted, folder / "x.npy", "-o", tmp_path / "e.bin"],
                               capsys), "unknown output type '.bin'")


def test_export_writes_a_saved_model(fitted, capsys, tmp_path):
    rc, out, _ = run(["export", fitted, tmp_path / "serving", "--name", "blobs"], capsys)
    assert rc == 0
    assert out.strip() == str(tmp_path / "serving" / "blobs" / "1")
    assert os.path.exists(tmp_path / "serving" / "blobs" / "1" / "saved_model.pb")
    assert os.path.exists(tmp_path / "serving" / "models.config")
    assert_one_line_error(*run(["export", fitted, tmp_path / "serving", "--name", "a b"], capsys),
                          "name")


def test_csv_with_header_and_labels_then_predict_on_csv_without_header(data, capsys, tmp_path):
    _, x, y = data
    np.savetxt(tmp_path / "x.csv", x, delimiter=",", header="a,b", comments="")
    np.savetxt(tmp_path / "plain.csv", x, delimiter=",")  # %.18e: the same float32 values
    rc, _, err = run(["fit", tmp_path / "x.csv", "-k", K, "-o", tmp_path / "m",
                      "--labels", data[0] / "y.txt", *TINY], capsys)
    assert (rc, err) == (0, "")
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summary["n"] == N and summary["acc"] > 0.9 and 0 < summary["nmi"] <= 1
    rc, out, _ = run(["predict", tmp_path / "m", tmp_path / "plain.csv"], capsys)
    assert rc == 0 and lines(out) == predicted(tmp_path / "m", x)


def test_hdf5_dataset_fit_predict_transform(data, capsys, tmp_path):
    _, x, _ = data
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("group/rows", data=x)
    spec = f"{tmp_path / 'x.h5'}:group/rows"
    rc, _, err = run(["fit", spec, "-k", K, "-o", tmp_path / "m", *TINY], capsys)
    assert (rc, err) == (0, "")
    labels = (tmp_path / "m" / "labels.csv").read_text()
    assert len(labels.split()) == N
    rc, out, _ = run(["predict", tmp_path / "m", spec], capsys)
    assert rc == 0 and lines(out) == predicted(tmp_path / "m", x)
    rc, _, _ = run(["transform", tmp_path / "m", spec, "-o", tmp_path / "e.npy"], capsys)
    assert rc == 0 and np.load(tmp_path / "e.npy").shape == (N, K)


def test_encoder_clusters_the_codes_of_an_hdf5_dataset(data, capsys, tmp_path):
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.autoencoder import build_autoencoder, save_ae_weights

    _, x, _ = data
    autoencoder, _ = build_autoencoder(input_dim=D, hidden=(8, 8, 8), code_dim=3)
    save_ae_weights(autoencoder, str(tmp_path / "ae.h5"))
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f.create_dataset("rows", data=x)
    rc, _, err = run(["fit", f"{tmp_path / 'x.h5'}:rows", "-k", K, "-o", tmp_path / "m",
                      "--encoder", tmp_path / "ae.h5", *TINY], capsys)
    assert (rc, err) == (0, "")
    net = SpectralNet.load(str(tmp_path / "m"))
    assert net.encoder is not None and net.n_features_in_ == D
    assert (tmp_path / "m" / "spectrum.png").exists()  # drawn in code space
    rc, out, _ = run(["predict", tmp_path / "m", tmp_path / "x.h5:rows"], capsys)
    assert rc == 0 and lines(out) == predicted(tmp_path / "m", x)


# -- bad input ------------------------------------------------------------------
def _bad_files(folder, x):
    nan = x.copy()
    nan[2, 1] = np.nan
    np.save(folder / "nan.npy", nan)
    with open(folder / "inf.csv", "w") as f:
        f.write("a,b\n1,2\n3,inf\n")
    (folder / "junk.npy").write_bytes(b"not a numpy file")
    (folder / "x.txt").write_text("1 2\n")
    np.savez(folder / "two.npz", a=x, b=x)
    with h5py.File(folder / "x.h5", "w") as f:
        f.create_dataset("rows", data=x)
    np.save(folder / "wide.npy", np.c_[x, x])
    np.save(folder / "small.npy", x[:5])
    np.savetxt(folder / "bad_partial.txt", np.r_[[7], -np.ones(N - 1)], fmt="%d")
    np.savetxt(folder / "one_class.txt", np.r_[[1, 1, 1], -np.ones(N - 3)], fmt="%d")
    np.savetxt(folder / "short_labels.txt", np.zeros(N - 1), fmt="%d")
    ring = sp.diags([np.ones(N - 1), np.ones(N - 1)], [1, -1], format="csr")
    sp.save_npz(folder / "graph.npz", ring)
    sp.save_npz(folder / "small_graph.npz", ring[:5, :5])
    asymmetric = ring.tolil()
    asymmetric[0, 1] = 2.0
    sp.save_npz(folder / "asymmetric.npz", asymmetric.tocsr())
    (folder / "truncated.npz").write_bytes((folder / "graph.npz").read_bytes()[:40])
    (folder / "empty.npz").write_bytes(b"")


BAD_FIT = {
    "missing file": (["{d}/none.npy"], "{d}/none.npy: no such file."),
    "directory as data": (["{d}"], "is a directory, not a data file."),
    "unreadable npy": (["{d}/junk.npy"], "{d}/junk.npy: cannot read it as .npy"),
    "nan": (["{d}/nan.npy"], "{d}/nan.npy: row 3, column 2 is nan;"),
    "inf in csv": (["{d}/inf.csv"], "{d}/inf.csv: row 2, column 2 is inf;"),
    "unknown extension": (["{d}/x.txt"], "{d}/x.txt: unknown file type '.txt'"),
    "npz needs a key": (["{d}/two.npz"], "holds 2 arrays (a, b); name one with --key"),
    "missing npz key": (["{d}/two.npz", "--key", "c"], "{d}/two.npz: no array 'c'; it holds a, b."),
    "missing h5 dataset": (["{d}/x.h5:nope"], "{d}/x.h5: no dataset 'nope'; it holds rows."),
    "h5 without dataset": (["{d}/x.h5"], "name the HDF5 dataset, as {d}/x.h5:DATASET."),
    "K < 2": (["{d}/x.npy", "-k", "1"], "argument -k/--n-clusters: must be an integer >= 2 or "
              "'auto', got '1' (see spectralnet fit"),
    "graph not sparse npz": (["{d}/x.npy", "--graph", "{d}/junk.npy"],
                             "{d}/junk.npy: not a scipy.sparse .npz file"),
    "graph of another size": (["{d}/x.npy", "--graph", "{d}/small_graph.npz"],
                              f"a graph of shape (5, 5), but DATA has {N} rows"),
    "asymmetric graph": (["{d}/x.npy", "--graph", "{d}/asymmetric.npz"],
                         "graph must be symmetric, got graph["),
    "graph and kNN flags": (["{d}/x.npy", "--graph", "{d}/graph.npz", "--n-nbrs", "5"],
                            "give one or the other."),
    "graph and views": (["{d}/x.npy", "--graph", "{d}/graph.npz", "--views", "shift"],
                        "--graph {d}/graph.npz is taken as given; --views shift learns the "
                        "distances of a Gaussian graph: give one or the other."),
    "graph and a Siamese sample": (["{d}/x.npy", "--graph", "{d}/graph.npz",
                                    "--siamese-max-samples", "50"],
                                   "--graph {d}/graph.npz is taken as given; "
                                   "--siamese-max-samples 50 learns the distances of a "
                                   "Gaussian graph: give one or the other."),
    "Siamese sample of one row": (["{d}/x.npy", "--siamese-max-samples", "1"],
                                  "argument --siamese-max-samples: must be an integer >= 2"),
    "shifts of rows that are not images": (["{d}/x.npy", "--views", "shift"],
                                           "Shift needs square images: rows of side**2 pixels, "
                                           f"got {D} columns; give side for other shapes."),
    "truncated graph": (["{d}/x.npy", "--graph", "{d}/truncated.npz"],
                        "{d}/truncated.npz: not a scipy.sparse .npz file"),
    "empty graph file": (["{d}/x.npy", "--graph", "{d}/empty.npz"],
                         "{d}/empty.npz: not a scipy.sparse .npz file"),
    "tensorboard into a file": (["{d}/x.npy", "--tensorboard", "{d}/x.txt"],
                                "cannot hold TensorBoard's files"),
    "K > n": (["{d}/small.npy", "-k", "6"], "--n-clusters 6 is more than the 5 rows of"),
    "labels of another length": (["{d}/x.npy", "--labels", "{d}/short_labels.txt"],
                                 f"{N - 1} labels for the {N} rows of the data."),
    # The estimator's own ValueErrors, as one line.
    "partial label out of range": (["{d}/x.npy", "--partial-labels", "{d}/bad_partial.txt"],
                                   "partial_labels"),
    "partial labels of one class": (["{d}/x.npy", "--partial-labels", "{d}/one_class.txt"],
                                    "partial_labels must label points of two classes or more, "
                                    "got only class 1 (3 labeled points)"),
    "batch larger than the data": (["{d}/x.npy", "--batch-size", "100000"], "batch_size=100000"),
    "missing encoder": (["{d}/x.npy", "--encoder", "{d}/none.h5"],
                        "--encoder {d}/none.h5: no such file."),
    "corrupt encoder": (["{d}/x.npy", "--encoder", "{d}/junk.npy"], "--encoder {d}/junk.npy: "),
}


@pytest.fixture(scope="module")
def bad(data):
    folder, x, _ = data
    _bad_files(folder, x)
    np.save(folder / "x.npy", x)
    return folder


@pytest.mark.parametrize("case", BAD_FIT)
def test_bad_fit_input_is_one_line_exit_2_and_no_directory(case, bad, capsys, tmp_path):
    argv, expected = BAD_FIT[case]
    argv = [a.format(d=bad) for a in argv]
    if "-k" not in argv:
        argv += ["-k", str(K)]
    out = tmp_path / "m"
    assert_one_line_error(*run(["fit", *argv, "-o", out, *TINY], capsys), expected.format(d=bad))
    assert os.listdir(tmp_path) == []  # no DIR, no temporary sibling


def test_auto_k_and_an_own_graph(data, capsys, tmp_path):
    """``-k auto`` records the choice and its spectrum; ``--graph`` trains on
    the user's graph: here the kNN graph of the blobs, as a scipy .npz."""
    folder, x, y = data
    rc, _, err = run(["fit", folder / "x.npy", "-k", "auto", "-o", tmp_path / "a", *TINY], capsys)
    assert rc == 0, err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["k"] == summary["n_clusters_auto"]["chosen"] == K
    assert len(summary["n_clusters_auto"]["eigenvalues"]) == 21
    assert os.path.getsize(tmp_path / "a" / "spectrum.png") > 0
    from sklearn.neighbors import kneighbors_graph

    knn = kneighbors_graph(x, 10, mode="connectivity")
    sp.save_npz(tmp_path / "g.npz", (knn + knn.T).tocsr())
    rc, _, err = run(["fit", folder / "x.npy", "-k", K, "--graph", tmp_path / "g.npz",
                      "--labels", folder / "y.txt", "-o", tmp_path / "g", *TINY], capsys)
    assert rc == 0, err
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["params"]["affinity"] == "precomputed" and summary["acc"] == 1.0


def test_existing_non_empty_directory_is_refused_and_left_untouched(data, capsys, tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert_one_line_error(*run(["fit", data[0] / "x.npy", "-k", K, "-o", out, *TINY], capsys),
                          f"--out {out} already exists and is not an empty directory")
    assert os.listdir(tmp_path) == ["m"] and os.listdir(out) == ["mine.txt"]
    assert (out / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize("command", ["predict", "transform"])
def test_width_and_model_errors_at_predict_and_transform(command, fitted, bad, capsys, tmp_path):
    assert_one_line_error(*run([command, fitted, bad / "wide.npy"], capsys),
                          f"{bad}/wide.npy has 4 columns, but the model in {fitted} was fitted on 2.")
    assert_one_line_error(*run([command, fitted, bad / "nan.npy"], capsys),
                          "row 3, column 2 is nan")
    assert_one_line_error(*run([command, tmp_path / "none", bad / "x.npy"], capsys),
                          f"{tmp_path}/none: no such model directory")
    assert_one_line_error(*run([command, tmp_path, bad / "x.npy"], capsys),
                          "is not a saved SpectralNet: missing")
    out = tmp_path / "out.txt"
    run([command, fitted, bad / "wide.npy", "-o", out], capsys)
    assert not out.exists()


def test_paper_reproduction_flags_point_to_scripts_run(capsys):
    assert_one_line_error(*run(["--dset", "mnist"], capsys),
                          "`python scripts/run.py --dset mnist` in the repository")


def test_flags_map_to_estimator_parameters_only_when_given():
    from spectralnet_tf.affinity import GaussianKNNAffinity

    parser = cli.build_parser()
    args = parser.parse_args(["fit", "x.npy", "-k", "3", "-o", "m"])
    assert cli.estimator_params(args) == {"n_clusters": 3, "random_state": 0}
    args = parser.parse_args(["fit", "x.npy", "-k", "3", "-o", "m", "--hidden", "64,32",
                              "--epochs", "5", "--batch-size", "128", "--lr", "0.01",
                              "--laplacian", "normalized", "--n-nbrs", "5", "--scale", "local",
                              "--siamese", "--seed", "7", "--verbose", "--tensorboard", "tb"])
    params = cli.estimator_params(args)
    affinity = params.pop("affinity")
    assert params == {"n_clusters": 3, "random_state": 7, "hidden_units": (64, 32),
                      "schedule__max_epochs": 5, "batch_size": 128,
                      "schedule__learning_rate": 0.01,
                      "laplacian": "normalized", "affinity_embedding": "siamese", "verbose": 1,
                      "log_dir": "tb"}
    assert isinstance(affinity, GaussianKNNAffinity)
    assert (affinity.n_nbrs, affinity.scale) == (5, "local")
    assert affinity.scale_nbr == GaussianKNNAffinity().scale_nbr  # not given: its default
    args = parser.parse_args(["fit", "x.npy", "-k", "3", "-o", "m", "--views", "shift",
                              "--siamese-max-samples", "500"])
    embedding = cli.estimator_params(args)["affinity_embedding"]
    assert (embedding.views, embedding.max_samples) == ("shift", 500)
    args = parser.parse_args(["fit", "x.npy", "-k", "3", "-o", "m", "--siamese-max-samples", "9"])
    embedding = cli.estimator_params(args)["affinity_embedding"]
    assert (embedding.views, embedding.max_samples) == (None, 9)


def test_csv_header_is_detected(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.savetxt(tmp_path / "h.csv", x, delimiter=",", header="first,second", comments="")
    np.savetxt(tmp_path / "n.csv", x, delimiter=",")
    np.savetxt(tmp_path / "t.tsv", x, delimiter="\t", header="a\tb", comments="")
    for name in ("h.csv", "n.csv", "t.tsv"):
        np.testing.assert_array_equal(datafiles.read_matrix(str(tmp_path / name)), x)


# -- the command as installed ---------------------------------------------------
TF_LOG_MARKERS = ("tensorflow", "absl", "oneDNN", "cpu_feature_guard", "I0000", "W0000", "E0000")


def _command():
    found = shutil.which("spectralnet")
    if found is None:
        pytest.skip("the spectralnet command is not installed (pip install -e .)")
    return found


@pytest.mark.parametrize("argv", [["--help"], ["fit", "--help"], ["predict", "--help"],
                                  ["transform", "--help"], ["export", "--help"]])
def test_help_is_fast_and_prints_no_tensorflow_logs(argv):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    start = time.perf_counter()
    done = subprocess.run([_command(), *argv], capture_output=True, text=True, env=env, timeout=60)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    assert seconds < 3, f"spectralnet {' '.join(argv)} took {seconds:.1f} s"
    assert done.stderr == ""
    assert done.stdout.startswith(f"usage: spectralnet{' ' + argv[0] if len(argv) > 1 else ''}")
    assert not any(marker in done.stdout for marker in TF_LOG_MARKERS if marker != "tensorflow")


def test_the_installed_entry_flushes_what_main_wrote_before_it_exits():
    # run() ends with os._exit, which flushes nothing itself: a pipe's buffered
    # stdout is lost unless run() flushes it first.
    from importlib.metadata import entry_points

    assert entry_points(group="console_scripts")["spectralnet"].value == "spectralnet_tf.cli:run"
    done = subprocess.run(
        [sys.executable, "-c", "import spectralnet_tf.cli as c\n"
                               "c.main = lambda: print('written', end='') or 2\nc.run()"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert (done.returncode, done.stdout) == (2, "written"), done.stderr


def test_importing_the_cli_does_not_import_tensorflow():
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, spectralnet_tf.cli, spectralnet_tf.datafiles\n"
                               "print(sorted(m for m in ('tensorflow', 'keras', 'matplotlib') "
                               "if m in sys.modules))"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"


@pytest.mark.slow
def test_installed_command_end_to_end_is_quiet(data, tmp_path):
    folder, x, _ = data
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    fit = subprocess.run([_command(), "fit", str(folder / "x.npy"), "-k", str(K),
                          "-o", str(tmp_path / "m"), "--hidden", "16,16", "--epochs", "2"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert fit.returncode == 0, fit.stderr
    assert fit.stdout == ""
    assert not any(marker in fit.stderr for marker in TF_LOG_MARKERS), fit.stderr
    assert f"wrote {tmp_path / 'm'}" in fit.stderr
    predict = subprocess.run([_command(), "predict", str(tmp_path / "m"), str(folder / "x.npy")],
                             capture_output=True, text=True, env=env, timeout=300)
    assert predict.returncode == 0, predict.stderr
    assert lines(predict.stdout) == predicted(tmp_path / "m", x)


def test_predict_refuses_the_views_it_no_longer_takes(fitted, data, capsys):
    assert_one_line_error(*run(["predict", fitted, data[0] / "x.npy", "--views", "shift"], capsys),
                          "unrecognized arguments: --views shift")
