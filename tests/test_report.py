"""BENCHMARKS.md and README.md figures are rendered from the committed result
records (``scripts/bench.py report``), and stay so."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")


@pytest.fixture
def bench():
    from harness import report

    return report


@pytest.mark.slow  # TensorFlow starts in a subprocess
def test_committed_files_match_their_records():
    out = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench.py"), "report", "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "up to date: BENCHMARKS.md, README.md" in out.stdout


def test_a_block_is_rendered_from_its_record_and_a_stale_one_is_replaced(bench):
    block = "<!-- report: vc 2026-11-23-issue18-vc-check.json -->\n{}\n<!-- /report -->"
    filled = bench.fill("intro\n" + block.format("| stale | figures |") + "\noutro\n", "t.md")
    assert "stale" not in filled and filled.startswith("intro\n") and filled.endswith("\noutro\n")
    assert "| 4 | 40 | 0.166 (0.9 × proof's) | 16 | 16 | 16 | 16 |" in filled
    assert "`python scripts/vc_check.py --m 2 3 4 5 6 7 8 --sigmas 0.3 0.5 1.0`" in filled
    assert bench.fill(filled, "t.md") == filled  # rendering is stable


def test_mnist_records_make_one_table_and_the_status_lines(bench):
    table = bench.render("saddle", [os.path.join(bench.RESULTS, f)
                                    for f in ("2026-11-23-issue12-mnist-seed0.json",
                                              "2026-11-23-issue12-mnist-seed1.json")])
    assert "| 0 | oneDNN default, default threads | c304265 | spectral | 0.9754 | 0.9337 | 0.0042 | 0.9750 | — |" in table
    assert "- ACC over 2 runs: min 0.9749, median 0.9751, max 0.9754" in table
    status = bench.render("mnist-status", [os.path.join(bench.RESULTS, "2026-11-23-issue12-mnist-seed0.json")])
    assert "ACC min / median / max 0.9754 / 0.9754 / 0.9754" in status


def test_a_pattern_without_records_and_an_unknown_renderer_are_errors(bench):
    with pytest.raises(SystemExit, match=r"t.md: no record in benchmarks/results/ matches 'nothing-\*.json'"):
        bench.fill("<!-- report: vc nothing-*.json -->\n<!-- /report -->", "t.md")
    with pytest.raises(ValueError, match="unknown renderer 'bogus'"):
        bench.fill("<!-- report: bogus 2026-11-23-issue18-vc-check.json -->\n<!-- /report -->", "t.md")


def test_mnist_table_names_a_mixed_precision_variant(bench, tmp_path):
    with open(os.path.join(bench.RESULTS, "2026-11-23-issue12-mnist-seed0.json")) as f:
        record = json.load(f)
    record["results"]["config"].update(dtype_policy="mixed_bfloat16",
                                       siamese_dtype_policy="mixed_bfloat16")
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(record))
    table = bench.render("saddle", [str(path)])
    assert ("| 0 | oneDNN default, default threads, SpectralNet mixed_bfloat16, "
            "Siamese mixed_bfloat16 | c304265 |") in table
    assert "Siamese mixed_bfloat16" in bench.render("mnist-status", [str(path)])
    record["results"]["config"]["affinity_embedding"] = None  # no Siamese net: not named
    path.write_text(json.dumps(record))
    assert ("default threads, SpectralNet mixed_bfloat16 | c304265 |"
            in bench.render("saddle", [str(path)]))


def test_split_records_add_the_test_columns_and_status(bench, tmp_path):
    with open(os.path.join(bench.RESULTS, "2026-11-23-issue12-mnist-seed0.json")) as f:
        record = json.load(f)
    record["results"].update(test_acc=0.98125, test_nmi=0.95)
    path = tmp_path / "split.json"
    path.write_text(json.dumps(record))
    table = bench.render("saddle", [str(path)])
    header = table.splitlines()[0]
    assert "| ACC | NMI | test ACC | test NMI | Grassmann |" in header
    assert header.count("|") - 1 == table.splitlines()[1].count("---")
    assert f"| {record['results']['nmi']:.4f} | 0.9812 | 0.9500 |" in table
    assert "- Test ACC over 1 runs: min 0.9812" in table
    status = bench.render("mnist-status", [str(path)])
    assert status.startswith("Trained on the 60k, tested on the 10k, 1 run (seeds 0;")
    assert "test ACC min / median / max 0.9812 / 0.9812 / 0.9812, test NMI 0.9500" in status
    plain = bench.render("saddle", [os.path.join(bench.RESULTS, "2026-11-23-issue12-mnist-seed0.json")])
    assert "test ACC" not in plain
    mixed = [str(path), os.path.join(bench.RESULTS, "2026-11-23-issue12-mnist-seed0.json")]
    for renderer in ("saddle", "mnist-status"):
        with pytest.raises(ValueError, match="records mix --split runs with runs on all 70k"):
            bench.render(renderer, mixed)


def test_the_machine_line_names_the_vector_units(bench):
    from harness.records import vector_isa

    assert vector_isa({"fma", "avx2", "avx512f", "avx512_bf16"}) == " (AVX-512, BF16)"
    assert vector_isa({"fma", "avx2"}) == " (AVX2)"
    assert vector_isa({"sse4_2"}) == ""


def test_the_machine_line_names_tensorflows_cpu_settings_that_were_set():
    from harness.records import cpu_settings

    assert cpu_settings({"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPU_ALLOCATOR_USE_BFC": "true"}) == (
        ", oneDNN on, BFC pool")
    assert cpu_settings({"TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPU_ALLOCATOR_USE_BFC": "false"}) == (
        ", oneDNN off")
    assert cpu_settings({}) == ""  # TensorFlow's own defaults: not named


def test_a_record_names_the_tree_its_process_started_from(tmp_path, monkeypatch):
    # A long run's record is written at its end, when the tree may have moved on.
    from harness import records

    trees = iter(["aaa1111", "bbb2222", "ccc3333"])
    monkeypatch.setattr(records, "commit", lambda: next(trees))
    monkeypatch.setattr(records, "_AT_START", [])
    records.note_start()  # the start of main
    records.note_start()  # a second call keeps the first
    assert records.machine_and_commit()[1] == "aaa1111"
    assert records.machine_and_commit(now=True)[1] == "bbb2222"  # preset.py: a new run.py
    path = records.save_record("t", {"kind": "rows"}, group="test", folder=str(tmp_path))
    with open(path) as f:
        assert json.load(f)["commit"] == "aaa1111"


def test_scale_table_names_a_deformation_pairs_run_and_a_seed_other_than_0(bench, tmp_path):
    base = os.path.join(bench.RESULTS, "2026-11-24-issue14-scale-n70000.json")
    with open(base) as f:
        record = json.load(f)
    record["deformation_pairs"] = True
    paths = [base]
    for seed in (1, 0):
        record["config"]["seed"] = seed
        paths.append(str(tmp_path / f"pairs{seed}.json"))
        with open(paths[-1], "w") as f:
            json.dump(record, f)
    table = bench.render("scale", paths)
    rows = [line for line in table.splitlines() if line.startswith("| 70,000")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| 70,000", "| 70,000, deformation pairs", "| 70,000, deformation pairs, seed 1"]


def test_scale_table_gives_group_and_view_figures_with_each_digit_alone_beside(bench, tmp_path):
    base = os.path.join(bench.RESULTS, "2026-12-04-scale-infinv-accept-s0-n1000000.json")
    with open(base) as f:
        record = json.load(f)
    before = next(line for line in bench.render("scale", [base]).splitlines()
                  if line.startswith("| 1,000,000"))
    assert f"| {record['fresh']['acc']:.4f} | " in before and "views;" not in before
    record["fresh"].update(acc=0.97123, views=9, acc_alone=0.96412, n=10000,
                           points_per_s=10000.0, views_seconds=4.0)
    record.update(acc=0.97234, nmi=0.93111, acc_alone=0.96345, nmi_alone=0.91012)
    path = str(tmp_path / "views.json")
    with open(path, "w") as f:
        json.dump(record, f)
    row = next(line for line in bench.render("scale", [path]).splitlines()
               if line.startswith("| 1,000,000"))
    # The speed with the views: 10,000 digits in 1 s alone plus 4 s of views.
    assert "| 0.9712 (9 views; each digit alone 0.9641) | 2000 (each digit alone 10000) | " in row
    assert row.startswith("| 1,000,000 | 0.9723 / 0.9311 (each digit alone 0.9635 / 0.9101) | ")


@pytest.mark.parametrize("tag", ["scale", "accept", "a/b"])
def test_a_scale_tag_that_would_join_the_main_tables_or_leave_the_folder_is_refused(tag):
    out = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench.py"), "scale", "--one",
                          "1000", "--tag", tag], capture_output=True, text=True)
    assert out.returncode == 2
    assert f"--tag must be a name of letters, digits, '_', '.' or '-' other than 'scale' and " \
           f"'accept' (the main tables' records), got --tag '{tag}'" in out.stderr


def test_settled_epoch_is_where_the_loss_stays_within_the_tolerance_of_its_best(bench):
    losses = [4.0, 2.0, 1.05, 1.2, 1.005, 1.0]
    assert bench.settled_epoch(losses) == 5  # 1.2 is the last above 1.01
    assert bench.settled_epoch(losses, within=0.001) == 6  # 1.005 is above 1.001
    assert bench.settled_epoch([1.0, 1.0]) == 1
    assert bench.settled_epoch([2.0, 1.0, 1.5]) is None  # the last epoch is not within 1%
    assert bench.settled_epoch([-1.0, -2.0, -1.995]) == 2  # within 1% of |best|


def test_budget_table_reads_the_histories_of_scale_records_that_kept_them(bench, tmp_path):
    with open(os.path.join(bench.RESULTS, "2026-11-24-issue14-scale-n70000.json")) as f:
        record = json.load(f)
    for key in ("history", "siamese_history"):
        record.pop(key, None)
    paths = [str(tmp_path / "without.json"), str(tmp_path / "with.json"),
             str(tmp_path / "short.json")]
    with open(paths[0], "w") as f:
        json.dump(record, f)
    record["config"].update(max_epochs=30, siamese_max_epochs=25, siamese_steps_per_epoch=None)
    lr = [1e-3] * 15 + [1e-4] * 10
    # Within 1% of the best from epoch 23 (1.02 is the last above), 0.1% from 25.
    record["siamese_history"] = {"val_loss": [2.0] * 20 + [1.5, 1.02, 1.01, 1.005, 1.0],
                                 "lr": lr}
    record["history"] = {"val_loss": [3.0] * 23 + [2.0, 2.1], "lr": lr[:-1] + [1e-5]}
    with open(paths[1], "w") as f:
        json.dump(record, f)
    record["config"]["seed"] = 1
    record["siamese_history"] = {"val_loss": [1.0] * 5, "lr": [1e-3] * 5}  # under 20 epochs
    del record["history"]  # a run without the spectral history: its Siamese row alone
    with open(paths[2], "w") as f:
        json.dump(record, f)
    table = bench.render("budgets", paths)
    headings = [line for line in table.splitlines() if line.startswith("- ")]
    assert len(headings) == 2  # the record without histories is left out
    rows = [line for line in table.splitlines() if line.startswith("| 70,000")]
    spectral_steps = record["config"]["steps_per_epoch"]
    assert rows == [
        "| 70,000 | Siamese | 25 / 25 | auto | 1 (16), 1e-04 | 1.00000 (25) | 1.00000 | 23 | 25 "
        "| -22.32% |",  # 1.5535 against 2.0
        f"| 70,000 | SpectralNet | 25 / 30 | {spectral_steps} | 2 (25), 1e-05 | 2.00000 (24) "
        "| 2.10000 | not at the end | not at the end | -6.33% |",  # 2.81 against 3.0
        "| 70,000, seed 1 | Siamese | 5 / 25 | auto | 0, 1e-03 | 1.00000 (1) | 1.00000 | 1 | 1 "
        "| — |"]


def test_graph_table_reads_the_exact_references_diagnostics(bench, tmp_path):
    with open(os.path.join(bench.RESULTS, "2026-11-24-issue14-scale-n70000.json")) as f:
        record = json.load(f)
    paths = [str(tmp_path / "without.json"), str(tmp_path / "with.json")]
    with open(paths[0], "w") as f:
        json.dump(record, f)  # no diagnostics: left out
    record.update(exact_acc_plain=0.9, exact_eigenvalues_plain=[0.0] * 9 + [0.03, 0.04],
                  exact_cluster_sizes_plain=[30000, 20000, 5],
                  exact_edge_purity_plain={"all": 0.95, "original": 0.98, "deformed": 0.925})
    record["by_part"] = {"original": {"acc": 0.97, "exact_acc_plain": 0.91},
                         "deformed": {"acc": 0.95, "exact_acc_plain": 0.875}}
    with open(paths[1], "w") as f:
        json.dump(record, f)
    table = bench.render("graphs", paths)
    assert len([line for line in table.splitlines() if line.startswith("- ")]) == 1
    rows = [line for line in table.splitlines() if line.startswith("| 70,000")]
    assert rows == ["| 70,000 | 0.9000 | 0.9100 / 0.8750 | 3.000e-02 | 4.000e-02 | 0.2500 "
                    "| 5 / 30,000 | 0.9500 | 0.9800 / 0.9250 |"]
    # More than k components (no gap to divide by), no parts, no edges in a part.
    record.update(exact_eigenvalues_plain=[0.0] * 11,
                  exact_edge_purity_plain={"all": 0.95, "original": None, "deformed": 0.9})
    del record["by_part"]
    with open(paths[1], "w") as f:
        json.dump(record, f)
    rows = [line for line in bench.render("graphs", paths[1:]).splitlines()
            if line.startswith("| 70,000")]
    assert rows == ["| 70,000 | 0.9000 | — | 0.000e+00 | 0.000e+00 | — | 5 / 30,000 | 0.9500 "
                    "| — / 0.9000 |"]


def test_a_split_run_row_keeps_its_test_acc_and_test_nmi(monkeypatch):
    """``bench.py run`` keeps a --split run's test NMI beside its test ACC,
    each under its own column, and the ACC of k-means on the rows as they are
    beside them; a run without test digits leaves its test columns empty."""
    from harness import bench, reproduce

    kept = []
    seconds = {"data": 1.0, "train": 59.0, "total": 60.0}
    results = {"dataset": "mnist", "space": "code", "affinity": "siamese", "n": 60000,
               "acc": 0.98261, "nmi": 0.95204, "test_acc": 0.98342, "test_nmi": 0.95531,
               "raw_rows_acc": 0.97136, "raw_rows_test_acc": 0.97241,
               "seconds": seconds, "peak_rss_gib": 1.9, "config": {"schedule__max_epochs": 18}}
    monkeypatch.setattr(bench, "matmul_rate", lambda: 100.0)
    configs = []
    monkeypatch.setattr(bench, "append", lambda title, header, rows, command, extra=None:
                        kept.append(dict(zip(header, rows[0]))) or configs.append(extra))
    monkeypatch.setattr(reproduce, "run_command", lambda argv: dict(results))
    bench.bench_run(type("Args", (), {"rest": []})(), "python scripts/bench.py run")
    assert (kept[0]["test ACC"], kept[0]["test NMI"]) == ("0.9834", "0.9553")
    assert (kept[0]["ACC, rows as they are"], kept[0]["test ACC, rows as they are"]) == (
        "0.9714", "0.9724")
    assert (kept[0]["ACC"], kept[0]["NMI"], kept[0]["total min at 200 GFLOP/s"]) == (
        "0.9826", "0.9520", "0.5")
    # The run's config, for current.py.
    assert configs[0] == {"config": {"schedule__max_epochs": 18}}
    del results["test_acc"], results["test_nmi"], results["raw_rows_test_acc"]
    bench.bench_run(type("Args", (), {"rest": []})(), "python scripts/bench.py run")
    assert (kept[1]["test ACC"], kept[1]["test NMI"], kept[1]["test ACC, rows as they are"]) == (
        "", "", "")


#: A Current-figures table of one row, naming one record.
ONE_ROW = ("## Current figures\n\n| question | figure | record |\n| --- | --- | --- |\n"
           "| MNIST, all 70k | ACC 0.98 | `2026-01-01-bench-run-000000.json` |\n\n## Accuracy\n")
ONE_ENTRY = ({"row": "MNIST, all 70k", "argv": ["--dset", "mnist"],
              "records": ["2026-01-01-bench-run-000000.json"]},)


def _run_record(tmp_path, config):
    path = tmp_path / "2026-01-01-bench-run-000000.json"
    record = {"command": "python scripts/bench.py run -- --dset mnist", "kind": "rows"}
    if config is not None:
        record["config"] = config
    path.write_text(json.dumps(record))


def test_a_current_row_whose_record_ran_another_config_fails_naming_the_key(tmp_path):
    from harness import current

    shipped = current.shipped_config(["--dset", "mnist"])
    assert shipped["encoder"] == "ae_mnist_shift2_seed1_weights.h5"
    assert "seed" not in shipped and "random_state" not in shipped
    # As results.json keeps it: the run's own keys beside, the encoder as a path.
    ran = {**shipped, "encoder": "/elsewhere/pretrained_ae/ae_mnist_shift2_seed1_weights.h5",
           "seed": 3, "random_state": 3, "scale_": None, "verbose": 1, "distribute": None,
           "checkpoint_dir": "/tmp/run/checkpoints", "log_dir": None}
    _run_record(tmp_path, ran)
    assert current.check(ONE_ROW, ONE_ENTRY, str(tmp_path)) == ([], [])
    current.report_check(ONE_ROW, ONE_ENTRY, str(tmp_path))  # passes: no exit
    epochs = shipped["schedule__max_epochs"]
    _run_record(tmp_path, {**ran, "schedule__max_epochs": epochs + 12})  # a stale row
    warnings, failures = current.check(ONE_ROW, ONE_ENTRY, str(tmp_path))
    assert warnings == [] and len(failures) == 1
    assert failures[0].startswith("MNIST, all 70k: 2026-01-01-bench-run-000000.json ran another "
                                  "config than `run.py --dset mnist` resolves to today: "
                                  f"schedule__max_epochs is {epochs + 12} there, "
                                  f"{epochs} today")
    with pytest.raises(SystemExit,
                       match="current figures: stale:\n- MNIST, all 70k: .*schedule__max_epochs"):
        current.report_check(ONE_ROW, ONE_ENTRY, str(tmp_path))
    # A parameter the record lacks is a difference too, unless current.ADDED reads it.
    _run_record(tmp_path, {key: v for key, v in ran.items() if key != "affinity__n_nbrs"})
    assert "affinity__n_nbrs is '<absent>' there, 10 today" in current.check(
        ONE_ROW, ONE_ENTRY, str(tmp_path))[1][0]
    _run_record(tmp_path, {key: v for key, v in ran.items()
                           if key != "affinity_embedding__graph_views"})
    assert current.check(ONE_ROW, ONE_ENTRY, str(tmp_path)) == ([], [])


def test_a_row_of_the_defaults_fails_once_a_default_changes(tmp_path):
    from harness import current
    from spectralnet_tf import GaussianKNNAffinity, SpectralNet

    today = current.defaults_config()
    assert "n_clusters" not in today and today["affinity"] == "GaussianKNNAffinity"
    assert today["affinity__n_nbrs"] == GaussianKNNAffinity().n_nbrs
    assert today["laplacian"] == SpectralNet(2).laplacian
    entry = ({"row": "MNIST, all 70k", "defaults": True,
              "records": ["2026-01-01-bench-run-000000.json"]},)
    _run_record(tmp_path, {**today, "random_state": 4})
    assert current.check(ONE_ROW, entry, str(tmp_path)) == ([], [])
    _run_record(tmp_path, {**today, "affinity__n_nbrs": today["affinity__n_nbrs"] + 1})
    assert current.check(ONE_ROW, entry, str(tmp_path))[1] == [
        "MNIST, all 70k: 2026-01-01-bench-run-000000.json ran another config than the defaults "
        f"are today: affinity__n_nbrs is {today['affinity__n_nbrs'] + 1} there, "
        f"{today['affinity__n_nbrs']} today (re-measure, or rewrite the row)"]


def test_a_view_recorded_by_name_reads_as_the_object_it_named():
    from harness import current

    today = {"affinity_embedding__views": "Redraw", "affinity_embedding__views__data_dir": None}
    assert current.first_difference({"affinity_embedding__views": "redraw"}, today) is None
    # Another name, or the object with another setting, is still a difference.
    assert current.first_difference({"affinity_embedding__views": "shift"}, today) == (
        "affinity_embedding__views", "shift", "Redraw")
    moved = {"affinity_embedding__views": "redraw", "affinity_embedding__views__data_dir": "/d"}
    assert current.first_difference(moved, today) == (
        "affinity_embedding__views__data_dir", "/d", None)


def test_a_record_without_config_warns_and_a_row_without_entry_fails(tmp_path):
    from harness import current

    _run_record(tmp_path, None)
    warnings, failures = current.check(ONE_ROW, ONE_ENTRY, str(tmp_path))
    assert failures == [] and warnings == [
        "MNIST, all 70k: records carry no config: re-measure (2026-01-01-bench-run-000000.json)"]
    extra = ONE_ROW.replace("\n\n## Accuracy", "\n| Something else | 1.0 | "
                            "`2026-01-01-bench-run-000000.json` |\n\n## Accuracy")
    failures = current.check(extra, ONE_ENTRY, str(tmp_path))[1]
    assert failures == ["row 'Something else' has no entry in harness/current.py"]
    # The row names a record its entry does not, and an entry has no row.
    other = ({**ONE_ENTRY[0], "records": []}, {"row": "Gone", "exempt": "a reason"})
    failures = current.check(ONE_ROW, other, str(tmp_path))[1]
    assert failures == ["MNIST, all 70k: names 2026-01-01-bench-run-000000.json, which its entry "
                        "does not", "Gone: entry without a row in Current figures"]


def test_every_current_row_has_an_entry_and_no_record_ran_a_stale_config():
    from harness import current

    warnings, failures = current.check()
    assert failures == []
    # Each row is of a shipped command, of the defaults, or exempt, and one of them only.
    assert all(sum(key in entry for key in ("exempt", "argv", "defaults")) == 1
               for entry in current.ENTRIES)
    assert all(entry["exempt"] for entry in current.ENTRIES if "exempt" in entry)
    # Both MNIST rows and the defaults' rows are of records that keep their config.
    checked = ("MNIST, all 70k", "MNIST, train 60k, test 10k",
               "The development suite: the defaults against what users pick instead",
               "A default fit of 5,000 × 100")
    assert not [line for line in warnings if line.startswith(checked)]
    assert {entry["row"] for entry in current.ENTRIES if entry.get("defaults")} >= set(checked[2:])


def test_runs_renders_the_seeds_of_one_command_as_one_table(bench, tmp_path):
    paths = []
    for seed, acc in ((0, "0.98"), (1, "0.97")):
        record = {"kind": "rows", "command": f"python scripts/bench.py run -- --seed {seed}",
                  "commit": "abc1234", "date": "2026-12-07", "machine": "2 cores",
                  "header": ["seed", "ACC"], "rows": [[str(seed), acc]]}
        paths.append(str(tmp_path / f"r{seed}.json"))
        with open(paths[-1], "w") as f:
            json.dump(record, f)
    assert bench.render("runs", paths) == (
        "- `python scripts/bench.py run -- --seed 0`, commit abc1234, 2026-12-07, 2 cores\n"
        "- `python scripts/bench.py run -- --seed 1`, commit abc1234, 2026-12-07, 2 cores\n\n"
        "| seed | ACC |\n| --- | --- |\n| 0 | 0.98 |\n| 1 | 0.97 |")
    record["header"] = ["seed", "NMI"]
    with open(paths[-1], "w") as f:
        json.dump(record, f)
    with pytest.raises(ValueError, match="another header"):
        bench.render("runs", paths)
