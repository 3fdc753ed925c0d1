import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import rundir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(ROOT, "scripts", "run.py")
SMALL = ["--dset", "moons", "--hidden", "16,16", "--steps-per-epoch", "5", "--patience", "50",
         "--no-plots", "--no-exact", "--quiet"]


def test_new_run_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "old.txt").write_text("x")
    with pytest.raises(rundir.RunDirectoryError, match="already exists and is not empty"):
        with rundir.claim(str(tmp_path), ["--dset", "cc"]):
            pass


def test_a_directory_in_use_is_refused_and_a_dead_owners_lock_is_not(tmp_path):
    path = str(tmp_path / "run")
    with rundir.claim(path, ["--dset", "cc"]):
        with pytest.raises(rundir.RunDirectoryError, match="in use by process"):
            with rundir.claim(path, None, resume=True):
                pass
    with open(os.path.join(path, rundir.LOCK), "w") as f:
        f.write("999999999")  # left by a process that died: its flock is gone
    with rundir.claim(path, None, resume=True) as argv:
        assert argv == ["--dset", "cc"]


def test_a_finished_run_is_not_resumed(tmp_path):
    path = str(tmp_path / "run")
    with rundir.claim(path, ["--dset", "cc"]):
        pass
    (tmp_path / "run" / rundir.RESULTS).write_text("{}")
    with pytest.raises(rundir.RunDirectoryError, match="has finished"):
        with rundir.claim(path, None, resume=True):
            pass


def _env():
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.slow
@pytest.mark.research
def test_sigkill_during_training_then_resume_matches_an_uninterrupted_run(tmp_path):
    epochs = ["--epochs", "30"]
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    subprocess.run([sys.executable, RUN, *SMALL, *epochs, "--out", str(ref_dir)],
                   check=True, env=_env(), capture_output=True, timeout=300)
    proc = subprocess.Popen([sys.executable, RUN, *SMALL, *epochs, "--out", str(run_dir)],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pointer = run_dir / "checkpoints" / "spectral" / "latest"
    deadline = time.time() + 240
    while time.time() < deadline and not (pointer.exists() and pointer.read_text() >= "ckpt-000005"):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert pointer.exists(), "no checkpoint was written before the kill"
    assert not (run_dir / rundir.RESULTS).exists()
    done = subprocess.run([sys.executable, RUN, "--resume", str(run_dir)], env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ref = json.loads((ref_dir / rundir.RESULTS).read_text())
    got = json.loads((run_dir / rundir.RESULTS).read_text())
    # Training is deterministic on one machine, so resuming reproduces the run.
    assert got["history"]["val_loss"] == pytest.approx(ref["history"]["val_loss"], rel=1e-4)
    assert got["acc"] == ref["acc"]
    again = subprocess.run([sys.executable, RUN, "--resume", str(run_dir)], env=_env(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode != 0 and "has finished" in again.stderr
