"""The development suite's harness (harness/suite.py, peers.py, peer_worker.py):
its data sets, its arithmetic, the worker's contract. Fast: no TensorFlow
training and no peers' environment (the worker's k-means runs in this one)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.datasets import make_moons

from harness import peers, suite, suite_sets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "harness", "peer_worker.py")

#: (set, n, d, k, scored) as each builder's docstring states them.
SHAPES = [("iris", 150, 4, 3, 150), ("wine", 178, 13, 3, 178),
          ("breast_cancer", 569, 30, 2, 569), ("digits", 1797, 64, 10, 1797),
          ("blobs_outliers", 2000, 2, 4, 1900), ("unequal", 2000, 2, 3, 2000),
          ("noise_dims", 2000, 53, 4, 2000), ("anisotropic", 1500, 2, 3, 1500),
          ("moons_outliers", 2000, 2, 2, 1900), ("wide_blobs", 5000, 100, 5, 5000),
          ("high_dims", 1000, 1000, 4, 1000)]
DRAWN = ["blobs_outliers", "unequal", "noise_dims", "anisotropic", "moons_outliers",
         "wide_blobs", "high_dims"]


@pytest.mark.parametrize("name,n,d,k,scored", SHAPES)
def test_set_shape_classes_and_determinism(name, n, d, k, scored):
    s = suite_sets.SETS[name][0](seed=3)
    again = suite_sets.SETS[name][0](seed=3)
    assert s.x.dtype == np.float32 and s.x.shape == (n, d) and s.k == k
    assert int(s.scored.sum()) == scored and s.scored.shape == (n,)
    assert sorted(np.unique(s.y[s.scored])) == list(range(k))
    np.testing.assert_array_equal(s.x, again.x)
    np.testing.assert_array_equal(s.y, again.y)
    np.testing.assert_array_equal(s.scored, again.scored)
    if name in DRAWN:  # another seed, another draw
        assert not np.array_equal(s.x, suite_sets.SETS[name][0](seed=4).x)


@pytest.mark.parametrize("name", ["iris", "wine", "breast_cancer"])
def test_real_sets_are_standardised(name):
    x = suite_sets.SETS[name][0]().x
    np.testing.assert_allclose(x.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(x.std(axis=0), 1, atol=1e-4)


def test_digits_are_as_they_are():
    x = suite_sets.digits().x
    assert x.min() == 0 and x.max() == 16 and np.all(x == np.round(x))


def test_unequal_sizes_and_spreads():
    s = suite_sets.unequal(seed=1)
    assert np.bincount(s.y).tolist() == [200, 600, 1200]
    spreads = [s.x[s.y == j].std(axis=0).mean() for j in range(3)]
    np.testing.assert_allclose(spreads, [0.5, 1.0, 2.0], rtol=0.1)


def test_noise_dims_informative_and_noise_columns():
    s = suite_sets.noise_dims(seed=0)
    noise = s.x[:, 3:]
    np.testing.assert_allclose(noise.std(axis=0).mean(), 1.0, atol=0.03)
    # the 3 informative dimensions separate the blobs: k-means there is near perfect
    from spectralnet_tf import acc

    labels = KMeans(4, n_init=4, random_state=0).fit_predict(s.x[:, :3])
    assert acc(s.y, labels) > 0.98


@pytest.mark.parametrize("name", ["blobs_outliers", "moons_outliers"])
def test_outlier_masks_leave_out_exactly_the_outliers(name):
    s = suite_sets.SETS[name][0](seed=2)
    outliers = ~s.scored
    assert outliers.sum() == 100 == round(0.05 * len(s.y))
    np.testing.assert_array_equal(outliers, s.y == -1)
    np.testing.assert_array_equal(np.flatnonzero(outliers), np.arange(1900, 2000))
    low, high = ((-4, -4), (12, 12)) if name == "blobs_outliers" else ((-1.5, -1), (2.5, 1.5))
    assert np.all(s.x[outliers] >= np.array(low, np.float32))
    assert np.all(s.x[outliers] <= np.array(high, np.float32))
    if name == "moons_outliers":  # the inliers are make_moons' points, as they are
        x, y = make_moons(1900, noise=0.05, random_state=2)
        np.testing.assert_array_equal(s.x[s.scored], x.astype(np.float32))
        np.testing.assert_array_equal(s.y[s.scored], y)


def test_sbm_blocks_split_and_graph():
    g = suite_sets.sbm(seed=0)
    again = suite_sets.sbm(seed=0)
    assert (g.graph != again.graph).nnz == 0
    np.testing.assert_array_equal(g.features, again.features)
    assert g.features.shape == (1200, 4) and g.k == 4
    assert np.bincount(g.y).tolist() == [300] * 4
    assert len(g.train) == 960 and len(g.held) == 240
    np.testing.assert_array_equal(np.sort(np.concatenate([g.train, g.held])), np.arange(1200))
    w = g.graph
    assert w.shape == (960, 960) and (w != w.T).nnz == 0 and w.diagonal().sum() == 0
    y = g.y[g.train]
    coo = w.tocoo()
    same = y[coo.row] == y[coo.col]
    pairs_in = sum(c * (c - 1) for c in np.bincount(y))   # ordered pairs inside blocks
    pairs_out = 960 * 959 - pairs_in
    assert abs(same.sum() / pairs_in - 0.05) < 0.005
    assert abs((~same).sum() / pairs_out - 0.005) < 0.001
    from spectralnet_tf import acc

    assert 0.68 < acc(g.y, suite_sets.bayes_rule(g, np.arange(1200))) < 0.77


@pytest.mark.parametrize("name,k,d,bayes", [("sbm_strong", 4, 4, (0.92, 0.98)),
                                             ("sbm_hex", 6, 10, (0.6, 0.74))])
def test_the_other_block_models(name, k, d, bayes):
    g = suite_sets.SETS[name][0](seed=0)
    assert g.features.shape == (1200, d) and g.k == k
    assert np.bincount(g.y).tolist() == [1200 // k] * k
    assert len(g.train) == 960 and g.graph.shape == (960, 960)
    assert (g.graph != g.graph.T).nnz == 0 and g.graph.diagonal().sum() == 0
    assert suite_sets.GROUPS["graph"] == ["sbm", "sbm_strong", "sbm_hex"]
    from spectralnet_tf import acc

    assert bayes[0] < acc(g.y, suite_sets.bayes_rule(g, np.arange(1200))) < bayes[1]


def test_resolve_sets_groups_and_default():
    assert "mnist" not in suite_sets.DEFAULT_SETS and "sbm" in suite_sets.DEFAULT_SETS
    assert suite_sets.resolve_sets(["traps", "iris", "anisotropic"]) == [
        "blobs_outliers", "unequal", "noise_dims", "anisotropic", "moons_outliers",
        "wide_blobs", "high_dims", "iris"]
    assert suite_sets.resolve_sets(["all"])[-1] == "mnist"
    with pytest.raises(ValueError, match="unknown set or group 'mnits'"):
        suite_sets.resolve_sets(["mnits"])


def _row(name, method, seed, acc, nmi, seconds, error=None, held=None):
    return {"set": name, "method": method, "seed": seed, "acc": acc, "nmi": nmi,
            "held_acc": held, "seconds": seconds, "error": error}


def test_sc_ratios_and_summary_on_a_planted_table():
    rows = [_row("a", "sc", 0, 0.9, 0.8, 2.0), _row("a", "ours", 0, 0.6, 0.5, 5.0),
            _row("a", "sc", 1, 0.7, 0.6, 4.0), _row("a", "ours", 1, 1.0, 0.9, 2.0),
            _row("a", "ours", 2, None, None, None, error="ValueError: boom"),
            _row("b", "ours", 0, 0.5, 0.4, 3.0, held=0.25),   # no SC on b: no ratio
            _row("b", "ours", 1, 0.7, 0.2, 1.0, held=0.75)]
    suite.add_sc_ratios(rows)
    assert [r["ratio"] for r in rows] == [1.0, 2.5, 1.0, 0.5, None, None, None]
    summary = {(s["set"], s["method"]): s for s in suite.summarize(rows)}
    assert list(summary) == [("a", "sc"), ("a", "ours"), ("b", "ours")]
    ours = summary["a", "ours"]
    assert (ours["seeds"], ours["failed"]) == (3, 1)
    assert ours["acc_mean"] == pytest.approx(0.8) and ours["acc_min"] == 0.6
    assert ours["nmi_mean"] == pytest.approx(0.7)
    assert ours["seconds_mean"] == pytest.approx(3.5) and ours["ratio_mean"] == pytest.approx(1.5)
    sc = summary["a", "sc"]
    assert sc["acc_mean"] == pytest.approx(0.8) and sc["seconds_mean"] == 3.0
    assert sc["ratio_mean"] == 1.0
    b = summary["b", "ours"]
    assert b["ratio_mean"] is None and b["held_acc_mean"] == 0.5 and b["held_acc_min"] == 0.25
    assert suite.summary_cells(ours)[:5] == ["a", "ours", "3 (1 failed)", "0.8000", "0.6000"]
    assert suite.summary_cells(ours)[8:10] == ["3.50", "1.50×"]


def test_cluster_sizes_largest_first_without_empty_ones():
    assert suite.cluster_sizes([3, 3, 0, 3, 0, 1]) == [3, 2, 1]


def test_run_one_scores_inliers_and_sizes_all_points():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 20, [[10, 10]]])
    y = np.array([0] * 50 + [1] * 50 + [-1])
    s = suite_sets.SuiteSet(x.astype(np.float32), y, 2, y >= 0)
    row = suite.run_one("planted", "kmeans", s, 0, {})
    assert row["error"] is None and (row["n"], row["scored"]) == (101, 100)
    assert row["acc"] == 1.0 and row["nmi"] == pytest.approx(1.0)
    assert sum(row["cluster_sizes"]) == 101   # the outlier is clustered, not scored
    assert row["seconds"] >= 0


def test_run_one_keeps_a_failure_as_a_row(monkeypatch):
    def fail(*args):
        raise RuntimeError("peer authors failed (exit 1):\nRuntimeError: linalg.qr")

    monkeypatch.setattr(suite, "run_point_method", fail)
    row = suite.run_one("iris", "authors", suite_sets.iris(), 0, {})
    assert row["acc"] is None and row["error"].startswith("RuntimeError: peer authors failed")
    assert suite.seed_cells(row)[-1].startswith("failed: RuntimeError")


def test_run_suite_writes_a_self_describing_record(monkeypatch, capsys):
    saved = {}
    monkeypatch.setattr(suite, "matmul_rate", lambda: 100.0)
    monkeypatch.setattr(suite, "save_record",
                        lambda tag, extra, group: saved.update(tag=tag, record=extra, group=group))
    args = suite.parse_args(["--sets", "iris", "sbm", "--seeds", "0", "1",
                             "--methods", "sc", "kmeans", "two-stage"])
    suite.run_suite(args)
    record = saved["record"]
    assert saved["group"] == "bench" and saved["tag"].startswith("suite-")
    assert record["kind"] == "rows" and record["title"]
    assert all(len(row) == len(record["header"]) for row in record["rows"])
    assert all(len(row) == len(record["seed_header"]) for row in record["seed_rows"])
    # iris: sc and kmeans, 2 seeds; sbm: sc, two-stage, kmeans (peers left out there)
    assert [(r["set"], r["method"]) for r in record["summary"]] == [
        ("iris", "sc"), ("iris", "kmeans"), ("sbm", "sc"), ("sbm", "kmeans"), ("sbm", "two-stage")]
    assert {r["ratio"] for r in record["runs"] if r["method"] == "sc"} == {1.0}
    assert record["versions"]["scikit-learn"] and record["versions"]["tensorflow"]
    assert "peers" not in record["versions"]   # no peer ran: no peers' environment needed
    assert record["sets"]["sbm"]["train"] == 960 and record["sets"]["iris"]["for_choosing"]
    two_stage = [r for r in record["runs"] if r["method"] == "two-stage"]
    assert all(r["held_acc"] is not None for r in two_stage)
    assert "for choosing" in capsys.readouterr().out


def test_parse_args_rejects_bad_options():
    with pytest.raises(SystemExit):
        suite.parse_args(["--ours-params", "[1, 2]"])
    with pytest.raises(SystemExit):
        suite.parse_args(["--sets", "nope"])
    assert suite.parse_args(["--ours-params", '{"affinity__scale": "local"}']).ours_params == {
        "affinity__scale": "local"}


def test_bench_dispatches_suite(capsys):
    from harness import bench

    with pytest.raises(SystemExit) as exit_:
        bench.main(["suite", "--help"])
    assert exit_.value.code == 0
    assert "--ours-params" in capsys.readouterr().out


def _worker(tmp_path, *args):
    return subprocess.run([sys.executable, WORKER, *args], capture_output=True, text=True,
                          cwd=tmp_path)


def test_worker_kmeans_contract_and_imports(tmp_path):
    x = np.random.default_rng(1).normal(size=(60, 3)).astype(np.float32)
    x[:30] += 8
    data, out = tmp_path / "data.npz", tmp_path / "out.json"
    peers.write_data(data, x, 2)
    # run as __main__ in a fresh interpreter, then list what it imported
    code = ("import runpy, sys, json\n"
            f"sys.argv = ['peer_worker.py', 'kmeans', {str(data)!r}, {str(out)!r}, '--seed', '5']\n"
            f"runpy.run_path({WORKER!r}, run_name='__main__')\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    imported = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not imported & {"tensorflow", "spectralnet_tf", "harness", "keras", "torch"}
    result = peers.read_result(out)
    assert result["method"] == "kmeans" and result["seed"] == 5
    assert (result["n"], result["d"], result["k"]) == (60, 3, 2)
    np.testing.assert_array_equal(result["labels"],
                                  KMeans(2, n_init=10, random_state=5).fit_predict(x))
    assert result["fit_seconds"] >= 0 and result["startup_seconds"] >= 0
    assert result["versions"]["scikit-learn"] and result["params"]["random_state"] == 5


def test_run_peer_reads_labels_back(tmp_path):
    x = np.random.default_rng(0).normal(size=(40, 2)).astype(np.float32)
    out = peers.run_peer("kmeans", x, 3, 1, python=sys.executable)
    assert out["labels"].dtype == np.int64 and len(out["labels"]) == 40
    assert set(out["labels"].tolist()) == {0, 1, 2}


def test_run_peer_reports_the_workers_error(tmp_path):
    x = np.zeros((5, 2), np.float32)
    with pytest.raises(RuntimeError, match=r"peer kmeans failed \(exit 1\)"):
        peers.run_peer("kmeans", x, 9, 0, python=sys.executable)   # k > n


def test_worker_argument_errors(tmp_path):
    peers.write_data(tmp_path / "d.npz", np.zeros((4, 2), np.float32), 2)
    bad_json = _worker(tmp_path, "authors", "d.npz", "o.json", "--options", "{not json")
    assert bad_json.returncode == 2 and "--options" in bad_json.stderr
    not_object = _worker(tmp_path, "authors", "d.npz", "o.json", "--options", "[1]")
    assert not_object.returncode == 2 and "JSON object" in not_object.stderr
    wrong_method = _worker(tmp_path, "kmeans", "d.npz", "o.json", "--options", '{"a": 1}')
    assert wrong_method.returncode == 2 and "authors' package only" in wrong_method.stderr
    unknown = _worker(tmp_path, "dbscan", "d.npz", "o.json")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    assert not (tmp_path / "o.json").exists()


def test_ensure_reuses_a_marked_environment(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    marker = {"requirements": list(peers.PEERS_REQUIREMENTS), "versions": {"torch": "2.13.0"}}
    (venv / "peers-installed.json").write_text(json.dumps(marker))
    calls = []
    monkeypatch.setattr(peers.subprocess, "run", lambda *a, **k: calls.append(a))
    assert peers.ensure(str(venv), quiet=True) == marker and calls == []
    # a marker of other requirements: it installs the pinned ones again
    (venv / "peers-installed.json").write_text(json.dumps({**marker, "requirements": ["torch"]}))

    def record_and_stop(cmd, **kwargs):
        calls.append(cmd)
        raise subprocess.CalledProcessError(1, cmd)

    monkeypatch.setattr(peers.subprocess, "run", record_and_stop)
    with pytest.raises(subprocess.CalledProcessError):
        peers.ensure(str(venv), quiet=True)
    assert calls[0][1:4] == ["-m", "pip", "install"] and "torch==2.13.0" in calls[0]
    assert "spectralnet==1.1.0" in calls[0]


def test_peer_packages_stay_out_of_the_requirements():
    for name in ("requirements.txt", "pyproject.toml"):
        with open(os.path.join(ROOT, name)) as f:
            text = f.read().lower()
        for package in ("torch", "umap-learn", "spectralnet=="):
            assert package not in text, (name, package)
