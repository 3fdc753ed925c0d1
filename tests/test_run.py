"""The spectralnet command (scripts/run.py) end to end on a small budget."""

import json


from spectralnet_tf import cli


def test_run_writes_results_and_plots(tmp_path):
    out = tmp_path / "cc"
    results = cli.run_command(["--dset", "cc", "--out", str(out), "--hidden", "64,64",
                        "--epochs", "3", "--quiet", "--grassmann"])
    saved = json.loads((out / "results.json").read_text())
    assert saved["dataset"] == "cc" and saved["n"] == 1500 and saved["n_clusters"] == 2
    for key in ("acc", "nmi", "grassmann", "exact_acc", "kmeans_acc"):
        assert 0.0 <= saved[key] <= 2.0
    assert saved["exact_acc"] == 1.0
    # The reference graph is the one 1,024-point minibatches of the 1,500 sample.
    assert saved["exact_graph"] == {"n_nbrs": round(10 * 1499 / 1023), "scale_nbr": round(3 * 1499 / 1023)}
    # Beside it, the paper's W_full: the same affinity on all points, ranks as set.
    assert saved["exact_graph_plain"] == {"n_nbrs": 10, "scale_nbr": 3}
    assert saved["exact_acc_plain"] == 1.0 and 0.0 <= saved["grassmann_plain"] <= 2.0
    assert set(saved["seconds"]) >= {"total", "data", "exact", "train", "kmeans", "plots",
                                     "grassmann_plain"}
    assert saved["config"]["hidden_units"] == [64, 64]
    assert saved["config"]["max_epochs"] == 3 and saved["config"]["seed"] == 0
    assert saved["acc"] == results["acc"]
    for png in ("clusters.png", "eigenvectors.png", "training.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flags_override_the_dataset_config():
    config = cli.build_config(cli.parse_args(
        ["--dset", "mnist", "--siamese-nbrs", "3", "--siamese-epochs", "7"]))
    assert config["siamese_n_nbrs"] == 3 and config["siamese_max_epochs"] == 7
    assert cli.build_config(cli.parse_args(["--dset", "mnist"]))["siamese_n_nbrs"] == 5
