"""scripts/preset.py: run directories, read-back with --resume, and its table."""

import json
import os
import subprocess
import sys

import pytest

from harness import preset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_started_run_needs_resume_and_a_finished_one_is_read_back(tmp_path):
    out = tmp_path / "paper-code-siamese-s0"
    out.mkdir()
    (out / "args.json").write_text("{}")
    with pytest.raises(preset.RunsError, match=r"^--runs: .*paper-code-siamese-s0 is not empty; "
                                               r"pass --resume to go on with it\.$"):
        preset.run_dir(str(tmp_path), "code-siamese", "paper", 0, resume=False)
    results = {"acc": 0.97123, "nmi": 0.92456, "kmeans_acc": 0.8, "epochs": 41,
               "seconds": {"total": 600.0}, "siamese_history": {"loss": [1.0, 0.5, 0.4]}}
    (out / "results.json").write_text(json.dumps(results))
    (tmp_path / "log.jsonl").write_text(json.dumps({"run": str(out), "resumed": False,
                                                    "commit": "abc1234"}) + "\n")
    t = preset.run_one("code-siamese", "paper", 0, str(tmp_path), resume=True)
    assert t == {"row": "code-siamese", "config": "paper", "seed": 0, "acc": 0.9712,
                 "nmi": 0.9246, "kmeans_acc": 0.8, "epochs": 41, "siamese_epochs": 3,
                 "seconds": {"total": 600.0}, "commits": ["abc1234"], "run": str(out)}


def test_the_command_refuses_a_started_run_in_one_line(tmp_path):
    (tmp_path / "ours-code-siamese-s1").mkdir()
    (tmp_path / "ours-code-siamese-s1" / "args.json").write_text("{}")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "preset.py"), "run",
                           "--rows", "code-siamese", "--configs", "ours", "--seeds", "1",
                           "--runs", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"preset.py: --runs: {tmp_path}/ours-code-siamese-s1 is not empty; "
        "pass --resume to go on with it.")


def test_table_puts_the_paper_figures_beside_each_row(tmp_path, capsys):
    trials = [{"row": "code-siamese", "config": "paper", "seed": s, "acc": a, "nmi": 0.9,
               "epochs": 50, "seconds": {"total": 3600.0}} for s, a in ((0, 0.97), (1, 0.95))]
    record = {"command": "python scripts/preset.py run", "commit": "abc", "date": "2026-11-24",
              "machine": "m", "matmul_gflops": 200.0, "trials": trials}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    preset.cmd_table(preset.argparse.Namespace(record=str(path)))
    out = capsys.readouterr().out
    assert ("| code-siamese | paper | 0 1 | 0.9700 0.9500 | 0.960 ± 0.010 | 0.900 ± 0.000 "
            "| 0.971 ± 0.001 | 0.924 ± 0.001 | 50 50 | 60 60 |") in out


def test_a_failed_run_stops_the_command_in_one_line(tmp_path, monkeypatch, capsys):
    # run.py has printed its own error; preset.py names the run and how to go on.
    monkeypatch.setattr(preset, "matmul_rate", lambda: 100.0)
    real = subprocess.run  # git, for the commit, still runs

    def fake(cmd, **kwargs):
        if cmd[1].endswith("run.py"):
            return subprocess.CompletedProcess(cmd, 2)
        return real(cmd, **kwargs)

    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(SystemExit) as exit_:
        preset.main(["run", "--rows", "code-euclidean", "--configs", "ours", "--seeds", "0",
                     "--runs", str(tmp_path), "--results", str(tmp_path / "res")])
    assert exit_.value.code == (
        f"preset.py: {tmp_path}/ours-code-euclidean-s0: run.py exited with status 2; "
        "rerun with --resume to go on.")
    assert not (tmp_path / "res").exists()  # no record of unfinished runs
