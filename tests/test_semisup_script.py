"""scripts/semisup.py reads its committed records back into the tables of BENCHMARKS.md."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.svm import SVC

from harness.semisup import rings_bayes_accuracy
from spectralnet_tf.datasets import rings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "benchmarks", "results", "2026-11-22-issue17-ablate-dev-n5000.json")


def _table(record):
    """The output of ``semisup.py table RECORD``, run as a user runs it."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "semisup.py"), "table",
                           str(record)], capture_output=True, text=True, check=True).stdout


@pytest.mark.slow  # TensorFlow starts in a subprocess
@pytest.mark.research
def test_table_of_a_committed_record():
    out = _table(RECORD)
    assert "| cross-entropy, no oversampling | 5000 | 2.0 | 0.22 | 0.02 | 0.988" in out
    assert "| 100 101 102 | 0.987 0.989 0.986 | 0.9864 |" in out


def test_rings_and_the_bayes_accuracy_of_thresholding_the_radius():
    x, y = rings(2000, noise=0.05, seed=0, radii=(1.0, 2.0))
    radius = np.hypot(x[:, 0], x[:, 1])
    assert (y == 0).sum() == 1000 and np.all((radius > 1.5) == (y == 1))
    # Far apart: no error; at noise 0.22, the 0.988 of the grid in BENCHMARKS.md.
    assert rings_bayes_accuracy(0.05, (1.0, 2.0)) == 1.0
    assert abs(rings_bayes_accuracy(0.22, (1.0, 2.0)) - 0.988) < 0.002
    # The Bayes rule thresholds the radius near the middle for equal priors.
    assert abs(rings_bayes_accuracy(0.11, (1.0, 1.5)) - np.mean(
        (np.hypot(*rings(400000, 0.11, seed=12345, radii=(1.0, 1.5))[0].T) > 1.25)
        == rings(400000, 0.11, seed=12345, radii=(1.0, 1.5))[1])) < 0.002


def test_table_of_the_mnist_record():
    record = os.path.join(ROOT, "benchmarks", "results", "2026-11-22-issue17-mnist-labels-seed0.json")
    out = _table(record)
    assert "| 0.001 | 67 | 0.9746 | 0.9324 | 0.7426 | 100 | 903 | 1109 | 34.0 | 267 |" in out
    assert "labeled fraction | labeled points | ACC | NMI" in out


def test_mnist_table_shows_the_references_a_record_has(tmp_path, capsys):
    """Each reference column appears once any run has it; a run without it
    (the one without labels has no SVM or harmonic function) shows a dash."""
    from harness import semisup

    seconds = {"siamese": 100.0, "spectral": 110.0, "total": 240.0}
    run = {"nmi": 0.95, "kmeans_acc": 0.8671, "epochs": 30, "seconds": seconds}
    trials = [{**run, "fraction": 0.01, "labeled": 711, "acc": 0.9844, "svm_acc": 0.9811,
               "exact_acc_plain": 0.9705, "harmonic_acc_plain": 0.9851},
              {**run, "fraction": 0.0, "labeled": 0, "acc": 0.9718, "exact_acc_plain": 0.9722}]
    record = tmp_path / "mnist.json"
    record.write_text(json.dumps({"kind": "mnist", "command": "semisup.py mnist", "commit": "abc",
                                  "date": "2026-11-28", "machine": "m", "matmul_gflops": 200.0,
                                  "trials": trials}))
    semisup.main(["table", str(record)])
    out = capsys.readouterr().out
    assert ("| SVM ACC (codes, labels alone) | exact SC ACC (its graph, no labels) "
            "| harmonic ACC (its graph, the labels) | epochs |") in out
    assert "| 0.01 | 711 | 0.9844 | 0.9500 | 0.8671 | 0.9811 | 0.9705 | 0.9851 | 30 | 100 |" in out
    assert "| 0 | 0 | 0.9718 | 0.9500 | 0.8671 | – | 0.9722 | – | 30 | 100 | 110 | 4.0 | 48 |" in out
    assert out.count(" --- |") == 13
    # The label classifier's check, once a run has one.
    trials[0]["label_check"] = {"classifier": 0.93, "graph": 0.9714, "labeled": 70, "keep": False}
    record.write_text(json.dumps({**json.loads(record.read_text()), "trials": trials}))
    semisup.main(["table", str(record)])
    out = capsys.readouterr().out
    assert ("| 0.9811 | 0.9705 | 0.9851 | 0.9300 / 0.9714 (no) | 30 |") in out
    assert "| 0.9722 | – | – | 30 | 100 | 110 | 4.0 | 48 |" in out
    assert out.count(" --- |") == 14
    # The newer check scores the graph the classifier reshapes.
    trials[0]["label_check"] = {"classifier": 0.93, "reshaped": 0.95, "graph": 0.9714,
                                "labeled": 70, "keep": False}
    record.write_text(json.dumps({**json.loads(record.read_text()), "trials": trials}))
    semisup.main(["table", str(record)])
    out = capsys.readouterr().out
    assert "| held-out labels right: reshaped graph / graph (reshaped?) |" in out
    assert "| 0.9851 | 0.9500 / 0.9714 (no) | 30 |" in out


def test_rayleigh_is_the_cut_cost_of_a_split():
    from harness.semisup import rayleigh

    # Two 4-cliques joined by one edge of weight 0.5.
    w = np.zeros((8, 8))
    w[:4, :4] = w[4:, 4:] = 1.0
    np.fill_diagonal(w, 0.0)
    w[0, 4] = w[4, 0] = 0.5
    side = np.arange(8) >= 4
    # f = +-1, centred already: f^T L f = sum over edges of w (f_i - f_j)^2 = 0.5 * 4.
    assert rayleigh(w, side) == 2.0 / 8
    f = np.where(np.arange(8) % 2 == 0, 1.0, -1.0)
    lap = np.diag(w.sum(1)) - w
    assert np.isclose(rayleigh(w, np.arange(8) % 2 == 0), f @ lap @ f / 8)


def test_harmonic_reference_uses_the_sampled_graph_and_the_grid_labels(tmp_path, capsys):
    import json

    from harness import semisup
    from harness.semisup import harmonic_acc, partial_labels, sampled_graph, supervised_acc

    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    x, y = rings(400, noise=0.11, seed=0, radii=(1.0, 1.5))
    y = y.astype(np.int64)
    known = partial_labels(y, 0.02, 0)
    w, _, m = sampled_graph(x.astype(np.float32), 0)
    assert m == 360 and w.shape == (400, 400)
    expected = round(acc(y, harmonic_labels(w, known, 2)), 4)
    # Heavy noise, few labels: the reference is imperfect, so a different
    # graph or different labels would show.
    assert harmonic_acc(x, y, known, 0) == expected < 1.0
    # The command reads a grid record and writes the reference beside each trial.
    grid = tmp_path / "grid.json"
    trial = {"n": 400, "outer_radius": 1.5, "noise": 0.11, "seed": 0, "fraction": 0.02, "acc": 0.5}
    grid.write_text(json.dumps({"trials": [trial, {**trial, "fraction": 0.0}]}))
    semisup.main(["harmonic", str(grid), "--tag", "t", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*-semisup-t.json")
    record = json.loads(path.read_text())
    assert record["kind"] == "harmonic" and len(record["trials"]) == 1
    assert record["trials"][0]["harmonic_acc"] == expected and record["trials"][0]["acc"] == 0.5
    svm = supervised_acc(x, y, known)
    assert record["trials"][0]["supervised_acc"] == svm
    capsys.readouterr()
    semisup.main(["table", str(path)])
    out = capsys.readouterr().out
    assert (f"| 400 | 1.5 | 0.11 | 0.02 | 0 | 0.500 | 0.5000 | {expected:.3f} | {expected:.4f} "
            f"| {svm:.3f} | {svm:.4f} | 0 / {int(expected >= 0.95)} / {int(svm >= 0.95)} |") in out
    # Without records: the same data and labels from the setting and seed,
    # the same references, and no SpectralNet column (nothing is trained).
    semisup.main(["harmonic", "--n", "400", "--settings", "1.5/0.11", "--seeds", "0",
                  "--tag", "u", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*-semisup-u.json")
    fresh = json.loads(path.read_text())["trials"]
    assert fresh == [{k: v for k, v in record["trials"][0].items() if k != "acc"}]
    capsys.readouterr()
    semisup.main(["table", str(path)])
    assert (f"| 400 | 1.5 | 0.11 | 0.02 | 0 | {expected:.3f} | {expected:.4f} | {svm:.3f} "
            f"| {svm:.4f} | {int(expected >= 0.95)} / {int(svm >= 0.95)} |") in capsys.readouterr().out


def test_supervised_reference_learns_from_the_labeled_points_alone():
    from harness.semisup import partial_labels, supervised_acc

    x, y = rings(1000, noise=0.02, seed=0, radii=(1.0, 1.5))
    y = y.astype(np.int64)
    # Thin rings: 5% labels cover both circles and place the boundary between
    # them; 2% (about 20 points) leave arcs without one, where it wanders.
    assert supervised_acc(x, y, partial_labels(y, 0.05, 0)) == 1.0
    known = partial_labels(y, 0.02, 0)
    assert supervised_acc(x, y, known) < 0.95
    # One labeled point of a class: no folds to choose C and gamma with, so
    # scikit-learn's defaults.
    from sklearn.svm import SVC

    from spectralnet_tf.metrics import acc

    few = np.full_like(known, -1)
    few[[np.flatnonzero(y == 0)[0], *np.flatnonzero(y == 1)[:3]]] = [0, 1, 1, 1]
    lab = few >= 0
    assert supervised_acc(x, y, few) == round(acc(y, SVC().fit(x[lab], few[lab]).predict(x)), 4)
    # One class labeled: no classifier to fit.
    with pytest.raises(ValueError, match=r"two classes or more, got only class 1 \(3 labeled points\)"):
        supervised_acc(x, y, np.where(lab & (y == 1), few, -1))


def test_grid_table_sets_each_seed_against_the_better_reference(tmp_path, capsys):
    import json

    from harness import semisup

    trial = {"n": 1500, "outer_radius": 1.5, "noise": 0.11, "fraction": 0.01, "seconds": 10.0,
             "label_spreading_acc": 0.7}
    trials = [{**trial, "seed": 0, "acc": 0.97, "supervised_acc": 0.972, "harmonic_acc": 0.9},
              {**trial, "seed": 1, "acc": 0.96, "supervised_acc": 0.8, "harmonic_acc": 0.966}]
    record = tmp_path / "grid.json"
    record.write_text(json.dumps({"kind": "grid", "command": "semisup.py grid", "commit": "abc",
                                  "date": "2026-11-26", "machine": "m", "bayes": {"1.5/0.11": 0.9885},
                                  "matmul_gflops": 100.0, "trials": trials}))
    assert semisup.target_acc(trials[0]) == 0.967 and semisup.target_acc(trials[1]) == 0.961
    semisup.main(["table", str(record)])
    out = capsys.readouterr().out
    # Seed 0 clears max(SVM, harmonic) - 0.005 = 0.967; seed 1 falls short of 0.961.
    assert ("| 1500 | 1.5 | 0.11 | 0.01 | 0.9885 | 0 1 | 0.970 0.960 | 0.9600 | 0.700 0.700 "
            "| 0.900 0.966 | 0.972 0.800 | 0.967 0.961 | 1 of 2 | 10 | 1.00 |") in out


def test_grid_table_shows_the_fits_own_svm_where_the_record_has_it(tmp_path, capsys):
    import json

    from harness import semisup
    from harness.semisup import own_supervised_acc, rings_and_labels

    trial = {"n": 1500, "outer_radius": 1.5, "noise": 0.11, "fraction": 0.01, "seconds": 10.0,
             "label_spreading_acc": 0.7, "supervised_acc": 0.972, "harmonic_acc": 0.9}
    trials = [{**trial, "seed": 0, "acc": 0.97, "own_supervised_acc": 0.731},
              {**trial, "seed": 1, "acc": 0.96}]  # no classifier checked: no own SVM
    record = tmp_path / "grid.json"
    record.write_text(json.dumps({"kind": "grid", "command": "semisup.py grid", "commit": "abc",
                                  "date": "2026-12-04", "machine": "m", "bayes": {"1.5/0.11": 0.9885},
                                  "matmul_gflops": 100.0, "trials": trials}))
    semisup.main(["table", str(record)])
    out = capsys.readouterr().out
    assert "| seeds ≥ target | the fit's own SVM ACC | s per fit (median) |" in out
    assert "| 0.967 0.967 | 1 of 2 | 0.731 – | 10 | 1.00 |" in out
    # The fit's own SVM: the chosen C and gamma refitted on the labeled points.
    x, y, known = rings_and_labels(300, 1.5, 0.1, 0, 0.1)
    lab = known >= 0
    svm = SVC(C=10.0, gamma=2.0).fit(x[lab].astype(np.float64), known[lab])
    assert own_supervised_acc(x, y, known, {"C": 10.0, "gamma": 2.0}) == round(
        float(np.mean(svm.predict(x) == y)), 4)


@pytest.mark.slow  # a harness command end to end (about 10 s)
@pytest.mark.research
def test_strengths_scores_each_strength_by_held_out_labels_and_renders(tmp_path, load_script):
    from harness.semisup import held_out_brier, rings_and_labels

    semisup = load_script("semisup")
    semisup.main(["strengths", "--n", "300", "--settings", "2.0/0.05", "--seeds", "0",
                  "--fractions", "0.1", "--strengths", "0", "8", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*strengths*.json")
    (trial,) = json.loads(path.read_text())["trials"]
    # Rings this far apart: every graph and every held-out label is right.
    assert trial["reshaped_acc"] == {"0": 1.0, "8": 1.0}
    assert trial["chosen"] == min(trial["brier"], key=trial["brier"].get)
    x, _, known = rings_and_labels(300, 2.0, 0.05, 0, 0.1)
    x = x.astype(np.float32)
    assert trial["brier"]["0"] == round(held_out_brier(x, known, [0.0], 0)[0.0], 4) < 0.05
    # Labels that contradict the rings cannot be predicted from the others.
    flipped = np.where(known >= 0, np.arange(len(known)) % 2, -1)
    assert held_out_brier(x, flipped, [0.0], 0)[0.0] > 0.4
    out = _table(path)
    assert "| strength 8 | 1 of 1 | 0 |" in out and "| chosen by held-out Brier score | 1 of 1 |" in out


@pytest.mark.slow  # a harness command end to end (about 10 s)
@pytest.mark.research
def test_draws_keeps_the_reference_as_draw_zero_and_renders(tmp_path, load_script):
    from harness.semisup import draw_accs, rings_and_labels, supervised_acc

    semisup = load_script("semisup")
    semisup.main(["draws", "--n", "300", "--settings", "2.0/0.05", "--seeds", "0",
                  "--fractions", "0.1", "--draws", "3", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*draws*.json")
    record = json.loads(path.read_text())
    (trial,) = record["trials"]
    assert record["strength"] == 8.0 and len(trial["svm_by_draw"]) == 3
    x, y, known = rings_and_labels(300, 2.0, 0.05, 0, 0.1)
    x = x.astype(np.float32)
    # Draw 0 is the grid's reference, fitted the same way.
    assert trial["supervised_acc"] == trial["svm_by_draw"][0] == supervised_acc(x, y, known)
    # Rings this far apart: every draw's graph is right.
    assert trial["reshaped_by_draw"] == [1.0, 1.0, 1.0]
    # Labels against the rings: the reshaped graph follows them, off the rings' ACC.
    flipped = np.where(known >= 0, np.arange(len(known)) % 2, -1)
    svm, reshaped = draw_accs(x, y, flipped, 0, 2, 8.0)
    assert max(reshaped) < 0.9 and len(svm) == 2
    out = _table(path)
    # The row counts what the record holds (other SVM draws against draw 0's target).
    other = sum(a >= trial["target"] for a in trial["svm_by_draw"][1:])
    spread = max(trial["svm_by_draw"]) - min(trial["svm_by_draw"])
    assert (f"| 0.1 | 1 | {other} of 2 | {int(other < 2)} | 3 of 3 | 1 / 0 / 0 "
            f"| {spread:.3f} / 0.000 |") in out


@pytest.mark.slow  # a harness command end to end (about 10 s)
@pytest.mark.research
def test_targets_scores_each_solver_on_the_reshaped_graph_and_renders(tmp_path, load_script):
    from harness.semisup import rings_and_labels, sampled_graph
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels, poisson_labels

    semisup = load_script("semisup")
    semisup.main(["targets", "--n", "300", "--settings", "1.5/0.1", "--seeds", "0",
                  "--fractions", "0.05", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*targets*.json")
    record = json.loads(path.read_text())
    (trial,) = record["trials"]
    strength = GaussianKNNAffinity().label_strength
    assert record["strength"] == strength
    x, y, known = rings_and_labels(300, 1.5, 0.1, 0, 0.05)
    w = sampled_graph(x.astype(np.float32), 0, known, strength)[0]
    assert trial["solver_acc"] == {"harmonic": round(acc(y, harmonic_labels(w, known, 2)), 4),
                                   "poisson": round(acc(y, poisson_labels(w, known, 2)), 4)}
    out = _table(path)
    for solver in ("harmonic", "poisson"):
        hit = int(trial["solver_acc"][solver] >= trial["target"])
        assert f"| 0.05 | {solver} | {hit} of 1 |" in out
        assert f"| all | {solver} | {hit} of 1 |" in out


@pytest.mark.research
def test_gate_solves_on_the_graph_the_check_leaves_and_renders(tmp_path, load_script):
    from harness.semisup import rings_and_labels, sampled_affinity
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import poisson_labels
    from spectralnet_tf.train import check_label_classifier

    semisup = load_script("semisup")
    semisup.main(["gate", "--n", "300", "--settings", "1.5/0.1", "2.0/0.08", "--seeds", "0",
                  "--fractions", "0.05", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*gate*.json")
    record = json.loads(path.read_text())
    kept = []
    for trial, r2, noise in zip(record["trials"], (1.5, 2.0), (0.1, 0.08)):
        x, y, known = rings_and_labels(300, r2, noise, 0, 0.05)
        x = x.astype(np.float32)
        aff, m = sampled_affinity(x, 0, known, record["strength"])
        assert trial["check"] == check_label_classifier(aff, x, known, batch_size=m, seed=0)
        reshaped = acc(y, poisson_labels(aff.for_full_data(300, m).graph(x), known, 2))
        aff.forget_labels()
        plain = acc(y, poisson_labels(aff.for_full_data(300, m).graph(x), known, 2))
        keep = trial["check"]["keep"]
        before = semisup.kept_before(trial["check"])
        assert trial["solver_acc"] == {"reshaped": round(reshaped, 4),
                                       "checked": round(reshaped if keep else plain, 4),
                                       "checked, classifier": round(reshaped if before
                                                                    else plain, 4)}
        kept.append(keep)
    assert kept == [True, False]  # noisy rings: the classifier; far-apart ones: the graph
    out = _table(path)
    hits = {g: sum(t["solver_acc"][g] >= t["target"] for t in record["trials"])
            for g in ("reshaped", "checked")}
    assert f"| 0.05 | always reshaped | {hits['reshaped']} of 2 |" in out
    assert f"| all | checked (1 dropped) | {hits['checked']} of 2 |" in out
    assert "checked by the classifier's own score (" in out


def _gate_table(tmp_path, trials, **fields):
    """``semisup.py table`` of a gate record holding ``trials`` (and any
    further record ``fields``)."""
    path = tmp_path / "gate.json"
    path.write_text(json.dumps({"kind": "gate", "command": "c", "commit": "x", "date": "d",
                                "machine": "m", "strength": 8.0, **fields, "trials": trials}))
    return _table(path)


def test_gate_table_renders_the_reading_a_record_picked(tmp_path):
    # A record of the change tried and not adopted: its table keeps the row of
    # the classes read as the check picked them.
    trials = [{"fraction": 0.01, "target": 0.8, "check": {"keep": keep, "reading": reading},
               "solver_acc": {"reshaped": 0.9, "checked": 0.9, "checked, read": read}}
              for keep, reading, read in ((False, "cut", 0.5), (True, "poisson", 0.9))]
    out = _gate_table(tmp_path, trials)
    assert "| 0.01 | checked (1 dropped) | 2 of 2 |" in out
    assert "| 0.01 | checked, read as the check picks (1 by the cut) | 1 of 2 |" in out


def test_gate_table_renders_the_classifiers_classes_a_record_followed(tmp_path):
    # A record of the change tried and not adopted: the check without it
    # ("checked, graphs") and with it ("checked") side by side.
    trials = [{"fraction": 0.01, "target": 0.8,
               "check": {"keep": keep, "follow": follow, "classifier": 0.9, "poisson": 0.8},
               "solver_acc": {"reshaped": 0.9, "checked, classifier": 0.9,
                              "checked, graphs": graphs, "checked": checked}}
              for keep, follow, graphs, checked in ((False, True, 0.85, 0.7),
                                                    (True, False, 0.9, 0.9),
                                                    (False, False, 0.75, 0.75))]
    out = _gate_table(tmp_path, trials)
    assert "| 0.01 | checked (2 dropped) | 2 of 3 |" in out
    assert "| 0.01 | the classifier's classes where it leads (1 followed) | 1 of 3 |" in out
    assert "\"The classifier's classes where it leads\" (a change tried, not adopted)" in out


def test_gate_table_renders_the_tie_break_and_the_poisson_check_a_record_tried(tmp_path):
    # Records of the graph's tie-break (tried, not adopted): their table names
    # the tie-break and keeps the row of the check on the reshaped graph's
    # Poisson score beside the check.
    trials = [{"fraction": 0.01, "target": 0.8,
               "check": {"keep": keep, "reshaped_poisson": rp, "graph": 0.8,
                         "classifier": 0.9, "poisson": 0.8},
               "solver_acc": {"reshaped": 0.9, "checked": checked, "checked, classifier": 0.9,
                              "checked, Poisson": on_poisson}}
              for keep, rp, checked, on_poisson in ((True, 0.7, 0.9, 0.75),
                                                    (True, 0.85, 0.9, 0.9),
                                                    (False, 0.6, 0.7, 0.7))]
    for tie_break, words in (("cut", "the one whose classes the graph as it is cuts least."),
                             ("grid", "in grid order, as the estimator picks them.")):
        out = _gate_table(tmp_path, trials, tie_break=tie_break)
        assert words in out
        assert "| 0.01 | checked (1 dropped) | 2 of 3 |" in out
        assert "| 0.01 | checked on the reshaped graph's Poisson score (2 dropped) | 1 of 3 |" in out
    assert "grid order" not in _gate_table(tmp_path, trials)  # records before the option


@pytest.mark.research
def test_gate_on_the_digits_sets_the_target_by_three_references(tmp_path, load_script):
    from harness.semisup import harmonic_acc, partial_labels, supervised_acc, unsupervised_acc
    from sklearn.datasets import load_digits

    semisup = load_script("semisup")
    semisup.main(["gate", "--data", "digits", "--fractions", "0.1", "--seeds", "0",
                  "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*gate*.json")
    (trial,) = json.loads(path.read_text())["trials"]
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    known = partial_labels(y, 0.1, 0)
    refs = (supervised_acc(x, y, known), harmonic_acc(x, y, known, 0, k=10),
            unsupervised_acc(x, y, 0, k=10))
    assert (trial["supervised_acc"], trial["harmonic_acc"], trial["unsupervised_acc"]) == refs
    assert trial["target"] == round(max(refs) - 0.005, 4) and trial["labeled"] == (known >= 0).sum()
    assert set(trial["solver_acc"]) == {"reshaped", "checked", "checked, classifier"}
    out = _table(path)
    assert "(max(SVM, harmonic, the graph alone) − 0.005)" in out


@pytest.mark.slow  # a harness command end to end (about 10 s)
@pytest.mark.research
def test_target_graphs_solves_on_each_graph_and_renders(tmp_path, load_script, monkeypatch):
    import spectralnet_tf.train as train
    from harness.semisup import rings_and_labels, sampled_affinity, sampled_graph
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import poisson_labels

    monkeypatch.setattr(train, "WARM_START_POINTS", 150)  # 400 points outgrow a subsample
    semisup = load_script("semisup")
    semisup.main(["target-graphs", "--n", "400", "--settings", "1.5/0.1", "--seeds", "0",
                  "--fractions", "0.05", "--results", str(tmp_path)])
    (path,) = tmp_path.glob("*target-graphs*.json")
    (trial,) = json.loads(path.read_text())["trials"]
    strength = GaussianKNNAffinity().label_strength
    x, y, known = rings_and_labels(400, 1.5, 0.1, 0, 0.05)
    x = x.astype(np.float32)
    w, aff, _ = sampled_graph(x, 0, known, strength)
    got = trial["graph_acc"]
    assert got["minibatch graph, all points"] == round(acc(y, poisson_labels(w, known, 2)), 4)
    own = sampled_affinity(x, 0, known, strength)[0].graph(x)
    assert got["own kNN graph, all points"] == round(acc(y, poisson_labels(own, known, 2)), 4)
    out = _table(path)
    for name in ("minibatch graph", "own kNN graph"):
        diff = got[f"{name}, subsample rows"] - got["subsample, subsample rows"]
        assert f"| 0.05 | {name} | {int(diff >= 0)} of 1 | {int(diff < 0)} |" in out
