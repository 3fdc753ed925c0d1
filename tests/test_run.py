"""The paper reproduction (scripts/run.py) end to end on a small budget."""

import json

import numpy as np
import pytest

from harness import reproduce as cli
from harness.infimnist import Deform, Redraw
from spectralnet_tf import Schedule
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.siamese import SiameseEmbedding


@pytest.mark.slow
def test_run_writes_results_and_plots(tmp_path):
    out = tmp_path / "cc"
    results = cli.run_command(["--dset", "cc", "--out", str(out), "--hidden", "64,64",
                        "--epochs", "3", "--quiet", "--grassmann"])
    saved = json.loads((out / "results.json").read_text())
    assert saved["dataset"] == "cc" and saved["n"] == 1500 and saved["n_clusters"] == 2
    for key in ("acc", "nmi", "grassmann", "exact_acc", "kmeans_acc", "raw_rows_acc"):
        assert 0.0 <= saved[key] <= 2.0
    assert saved["exact_acc"] == 1.0
    # The reference graph is the one 512-point minibatches of the 1,500 sample.
    assert saved["exact_graph"] == {"n_nbrs": round(20 * 1499 / 511), "scale_nbr": round(7 * 1499 / 511)}
    # Beside it, the paper's W_full: the same affinity on all points, ranks as set.
    assert saved["exact_graph_plain"] == {"n_nbrs": 20, "scale_nbr": 7}
    assert saved["exact_acc_plain"] == 1.0 and 0.0 <= saved["grassmann_plain"] <= 2.0
    assert set(saved["seconds"]) >= {"total", "data", "exact", "train", "raw_rows", "kmeans",
                                     "plots", "grassmann_plain"}
    # The peak so far after each timed phase (training's parts are inside
    # "train"): in order, never falling, at most the run's peak.
    after = saved["peak_rss_gib_after"]
    assert list(after) == [key for key in saved["seconds"] if key in after]
    assert set(after) >= {"data", "exact", "train", "kmeans", "plots", "grassmann_plain"}
    assert list(after.values()) == sorted(after.values())
    assert 0 < max(after.values()) <= saved["peak_rss_gib"]
    assert saved["config"]["hidden_units"] == [64, 64]
    assert saved["config"]["schedule__max_epochs"] == 3 and saved["config"]["seed"] == 0
    assert saved["acc"] == results["acc"]
    # The partition's sizes beside its ACC: k of each, every point counted once.
    y = load_dataset("cc", seed=0)[1]
    assert saved["class_sizes"] == np.bincount(y).tolist()
    assert len(saved["cluster_sizes"]) == 2 and sum(saved["cluster_sizes"]) == 1500
    assert "labeled" not in saved and "svm_acc" not in saved  # no labels, no labels-alone reference
    for png in ("clusters.png", "eigenvectors.png", "training.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_paper_preset_is_appendix_c_and_flags_still_override():
    config = cli.build_config(cli.parse_args(["--dset", "mnist", "--preset", "paper"]))
    # Tables 3 and 4, Appendix C (MNIST).
    siamese, affinity = config["affinity_embedding"], config["affinity"]
    assert config["hidden_units"] == (1024, 1024, 512) and config["output_activation"] == "tanh"
    assert siamese.hidden_units == (1024, 1024, 512, 10)
    assert siamese.output_activation == "relu" and siamese.n_nbrs == 2
    assert (affinity.n_nbrs, affinity.scale_nbr, affinity.scale) == (2, 1, "global")
    assert (config["batch_size"], siamese.batch_size) == (1024, 128)
    schedule = config["schedule"]
    assert schedule.learning_rate == siamese.schedule.learning_rate == 1e-3
    assert schedule.patience == 10 and schedule.min_lr == 1e-8 and config["init"] == "random"
    # the paper's, for both nets
    assert (siamese.schedule.patience, siamese.schedule.min_lr) == (10, 1e-8)
    over = cli.build_config(cli.parse_args(["--dset", "mnist", "--preset", "paper", "--n-nbrs", "5"]))
    assert over["affinity"].n_nbrs == 5 and over["affinity"].scale_nbr == 1
    # Without the preset, this package's MNIST config.
    assert cli.build_config(cli.parse_args(["--dset", "mnist"]))["output_activation"] == "linear"


def test_flags_override_the_dataset_config():
    config = cli.build_config(cli.parse_args(
        ["--dset", "mnist", "--siamese-nbrs", "3", "--siamese-epochs", "7",
         "--siamese-steps-per-epoch", "9", "--dtype-policy", "mixed_bfloat16",
         "--siamese-dtype-policy", "mixed_bfloat16"]))
    siamese = config["affinity_embedding"]
    assert siamese.n_nbrs == 3 and siamese.schedule.max_epochs == 7
    assert siamese.schedule.steps_per_epoch == 9
    assert config["dtype_policy"] == siamese.dtype_policy == "mixed_bfloat16"
    assert cli.build_config(cli.parse_args(["--dset", "mnist"]))["affinity_embedding"].n_nbrs == 5
    # Infinite MNIST: MNIST's settings (its precision by the hardware too) with
    # its epoch lengths as step budgets, its own views, the Siamese pairs on a
    # sample of MNIST's size, and the sources' pairs left to the graph.
    infi = cli.build_config(cli.parse_args(["--dset", "infimnist"]))
    lean = cli.build_config(cli.parse_args(["--dset", "mnist"]))

    def flat(config):  # the parts' parameters under nested keys, as get_params(deep=True)
        # (a part's Schedule object itself left out: its parameters are listed)
        return {**{k: v for k, v in config.items() if not hasattr(v, "get_params")},
                **{f"{k}__{p}": w for k, v in config.items() if hasattr(v, "get_params")
                   for p, w in v.get_params().items() if not isinstance(w, Schedule)}}

    assert flat(infi) == {**flat(lean),
                          "schedule__steps_per_epoch": 61,
                          "affinity_embedding__schedule__steps_per_epoch": 1107,
                          "schedule__max_epochs": 60,
                          "affinity_embedding__schedule__max_epochs": 60,
                          "affinity_embedding__views": infi["affinity_embedding"].views,
                          "affinity_embedding__views__data_dir": None,
                          "affinity_embedding__max_samples": 70_000,
                          "affinity_embedding__group_pairs": False}
    assert isinstance(infi["affinity_embedding"].views, Redraw)  # infinite MNIST's own law
    # --split trains the all-70k job's recipe on the 60k: the same config.
    split = cli.build_config(cli.parse_args(["--dset", "mnist", "--split"]))
    assert flat(split) == flat(lean)
    deformed = cli.build_config(cli.parse_args(["--dset", "mnist", "--split", "--views",
                                                "deform"]))
    assert isinstance(deformed["affinity_embedding"].views, Deform)
    assert cli.build_config(cli.parse_args(
        ["--dset", "mnist", "--views", "none"]))["affinity_embedding"].views is None
    # A config without views (the paper's preset) stays without them.
    preset = cli.build_config(cli.parse_args(["--dset", "mnist", "--split", "--preset", "paper"]))
    assert preset["affinity_embedding"].views is None
    assert cli.build_config(cli.parse_args(
        ["--dset", "mnist", "--split", "--affinity", "euclidean"]))["affinity_embedding"] is None
    # --affinity siamese names the distance the config already has: its
    # Siamese net (views, budgets, graph views) stays as configured.
    named = cli.build_config(cli.parse_args(["--dset", "mnist", "--split", "--affinity", "siamese"]))
    assert flat(named) == flat(split)
    paper = cli.build_config(cli.parse_args(["--dset", "cc", "--affinity", "siamese"]))
    assert isinstance(paper["affinity_embedding"], SiameseEmbedding)
    drawn = cli.build_config(cli.parse_args(["--dset", "mnist", "--siamese-max-samples", "500"]))
    assert drawn["affinity_embedding"].max_samples == 500
    # MNIST's own budgets, set by the 5-minute target in float32: 60 quarter
    # passes of Siamese pairs, 18 SpectralNet epochs; bfloat16 hidden layers
    # where the hardware has the units.
    siamese = lean["affinity_embedding"]
    assert ((siamese.schedule.steps_per_epoch, siamese.schedule.max_epochs,
             lean["schedule"].max_epochs) == (277, 60, 18))
    assert lean["dtype_policy"] == siamese.dtype_policy == "auto"


@pytest.mark.slow
def test_exact_knn_reports_the_plain_graph_and_a_time_limit_passed(tmp_path, monkeypatch):
    """--exact-knn: exact SC on the kNN graph of all points (ranks as set), the
    same figure --grassmann reports as *_plain; past --exact-time-limit the
    run still finishes and says so."""
    small = ["--dset", "cc", "--hidden", "16", "--epochs", "1", "--steps-per-epoch", "5",
             "--quiet", "--no-plots", "--no-exact"]
    grassmann = cli.run_command([*small, "--out", str(tmp_path / "g"), "--grassmann"])
    knn = cli.run_command([*small, "--out", str(tmp_path / "k"), "--exact-knn"])
    assert knn["exact_graph_plain"] == {"n_nbrs": 20, "scale_nbr": 7}
    assert knn["exact_acc_plain"] == grassmann["exact_acc_plain"] == 1.0
    assert "exact_plain" in knn["seconds"] and "exact_acc" not in knn
    # Without labels: k + 1 eigenvalues, ascending, the first 0; the clusters'
    # sizes, here the two rings' (ACC 1). With labels: the graph's edge purity.
    vals = knn["exact_eigenvalues_plain"]
    assert len(vals) == 3 and vals == sorted(vals) and abs(vals[0]) < 1e-8
    _, y, _ = load_dataset("cc")
    assert knn["exact_cluster_sizes_plain"] == sorted(np.bincount(y).tolist(), reverse=True)
    assert set(knn["exact_edge_purity_plain"]) == {"all"}
    assert 0.5 < knn["exact_edge_purity_plain"]["all"] <= 1.0
    runs = knn["exact_kmeans_runs_plain"]
    assert [run["seed"] for run in runs] == list(range(cli.EXACT_KMEANS_RUNS))  # from --seed 0
    assert runs[0]["acc"] == knn["exact_acc_plain"]
    # Two components (two zero eigenvalues): the unit-length rows of each
    # coincide, so k-means' inertia on them is 0 from every seed.
    assert abs(vals[1]) < 1e-8 and all(run["inertia"] == pytest.approx(0, abs=1e-6) for run in runs)

    import spectralnet_tf.spectral as spectral

    monkeypatch.setattr(spectral, "DENSE_MAX_N", 50)  # the AMG path, which has the limit
    monkeypatch.setattr(spectral, "AMG_MIN_N", 100)
    monkeypatch.setattr(spectral, "LOBPCG_ROUND", 1)
    late = cli.run_command([*small, "--out", str(tmp_path / "t"), "--exact-knn",
                            "--exact-time-limit", "1e-6"])
    assert "did not converge" in late["exact_plain_timeout"] and "exact_acc_plain" not in late
    assert 0.0 <= late["acc"] <= 1.0


def test_exact_reference_reports_edge_purity_per_part_and_kmeans_runs():
    """The mean edge purity of all points is the size-weighted mean of the
    parts'; k-means runs are recorded only when more than one is asked for."""
    from types import SimpleNamespace

    from spectralnet_tf.affinity import GaussianKNNAffinity

    x, y, k = load_dataset("cc")
    net = SimpleNamespace(n_clusters=k, laplacian="unnormalized")
    parts = {"first": slice(0, 1000), "rest": slice(1000, None)}
    aff = GaussianKNNAffinity(n_nbrs=8, scale_nbr=2)
    labels, vecs, one = cli.exact_reference(net, aff, x, y, 0, len(x), parts=parts)
    assert vecs.shape == (len(x), k) and "exact_kmeans_runs" not in one
    purity = one["exact_edge_purity"]
    assert (1000 * purity["first"] + (len(x) - 1000) * purity["rest"]) / len(x) == \
        pytest.approx(purity["all"], abs=1e-12)
    _, _, three = cli.exact_reference(net, aff, x, y, 0, len(x), kmeans_runs=3)
    assert [run["seed"] for run in three["exact_kmeans_runs"]] == [0, 1, 2]
    assert three["exact_kmeans_runs"][0]["acc"] == three["exact_acc"] == one["exact_acc"]


def test_exact_reference_with_labels_reports_the_harmonic_function_of_its_graph():
    """Given a run's partial labels: the ACC of the harmonic function of the
    very graph exact SC cut (the same W, the same labels); nothing without a
    labeled point. Labels against the two Cs drag it off them."""
    from types import SimpleNamespace

    from harness.semisup import partial_labels
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    x, y, k = load_dataset("cc")
    net = SimpleNamespace(n_clusters=k, laplacian="unnormalized")
    aff = GaussianKNNAffinity(n_nbrs=8, scale_nbr=2)
    known = partial_labels(y, 0.02, 0)
    _, _, plain = cli.exact_reference(net, aff, x, y, 0, len(x))
    _, _, none = cli.exact_reference(net, aff, x, y, 0, len(x), partial_labels=np.full(len(x), -1))
    _, _, right = cli.exact_reference(net, aff, x, y, 0, len(x), partial_labels=known)
    assert "harmonic_acc" not in plain and "harmonic_acc" not in none
    w = aff.for_full_data(len(x), len(x)).graph(x, "exact")
    assert right["harmonic_acc"] == acc(y, harmonic_labels(w, known, k)) == 1.0
    # Half the labels swapped: a cut the graph does not hold.
    wrong = np.where((known >= 0) & (np.arange(len(x)) % 2 == 0), 1 - known, known)
    _, _, off = cli.exact_reference(net, aff, x, y, 0, len(x), partial_labels=wrong)
    assert off["harmonic_acc"] == acc(y, harmonic_labels(w, wrong, k)) < 0.9
    assert off["exact_acc"] == right["exact_acc"] == 1.0  # exact SC sees no labels


@pytest.mark.slow
def test_labeled_run_reports_the_labels_alone(tmp_path):
    """With --labeled-fraction, beside the fit: the SVM of the labeled points
    alone in the space SpectralNet clusters, on the run's own labels."""
    from harness.semisup import partial_labels, supervised_acc

    results = cli.run_command(["--dset", "cc", "--hidden", "16", "--epochs", "1",
                               "--steps-per-epoch", "5", "--quiet", "--no-plots", "--no-exact",
                               "--labeled-fraction", "0.05", "--out", str(tmp_path / "l")])
    x, y, _ = load_dataset("cc")
    known = partial_labels(y, 0.05, 0)
    assert results["labeled"] == int((known >= 0).sum()) > 0
    # The two Cs are apart: labeled points spread over both place the boundary
    # (a draw from the generator's own stream picked one end of a C, and failed).
    assert results["svm_acc"] == supervised_acc(x, y, known) >= 0.99
    assert "svm" in results["seconds"]
