"""The spectralnet command's user errors: one line on stderr, exit status 2, no
traceback, and no run directory left behind to refuse the next try."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from harness import reproduce as cli
from harness import rundir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["--hidden", "16", "--epochs", "1", "--steps-per-epoch", "2", "--no-plots",
         "--no-exact", "--quiet"]


def _fails(argv, capsys):
    """Run the command on argv; it must exit 2 with one line on stderr. Returns that line."""
    with pytest.raises(SystemExit) as exit_:
        cli.run_command(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run.py: error: "), err
    return lines[0]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--batch-size", "-5"], "argument --batch-size: must be an integer >= 1, got '-5'"),
        (["--seed", "x"], "argument --seed: must be an integer >= 0, got 'x'"),
        (["--hidden", "64,a"], "argument --hidden: must be comma-separated positive integers"),
        (["--lr", "0"], "argument --lr: must be a number > 0.0, got '0'"),
        (["--labeled-fraction", "1.5"], "argument --labeled-fraction: must be a number in [0, 1), got '1.5'"),
        (["--label-weight", "-1"], "argument --label-weight: must be a number >= 0.0, got '-1'"),
        (["--labeled-share", "2"], "argument --labeled-share: must be a number in [0, 1), got '2'"),
        (["--label-weight", "inf"], "label_weight must be a finite number >= 0, got label_weight=inf"),
        (["--kernel", "rbf"], "argument --kernel: invalid choice: 'rbf'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--batch-size", "5000"], "batch_size=5000 is larger than the 1350 training points"),
        (["--split"], "--split is defined for --dset mnist"),
        (["--n", "5000"], "--n 5000: only --dset infimnist takes a size"),
        (["--n", "0"], "argument --n: must be an integer >= 1, got '0'"),
        (["--space", "code"], "--space code needs an autoencoder"),
        (["--deformation-pairs"], "--deformation-pairs needs --dset infimnist with the Siamese "
                                  "affinity, got --dset moons --affinity euclidean"),
        (["--views", "shift"], "--views shift pairs views in the Siamese distance; it needs "
                               "--affinity siamese."),
        (["--n-views", "2"], "--n-views 2 pairs views in the Siamese distance; it needs "
                             "--affinity siamese."),
        (["--affinity", "siamese", "--views", "shift"],
         "--views shift: Shift needs square images: rows of side**2 pixels, got 2 columns"),
        (["--affinity", "siamese", "--siamese-nbrs", "0"],
         "n_nbrs must be an integer >= 1, got n_nbrs=0"),
        (["--preset", "paper"], "--preset paper: preset 'paper' has settings for ['mnist', "
                                "'reuters'] only, got dset='moons'"),
    ],
)
def test_bad_flag_values_are_one_line_and_make_no_run_directory(flags, message, tmp_path, capsys):
    out = tmp_path / "run"
    line = _fails(["--dset", "moons", "--out", str(out), *flags], capsys)
    assert message in line
    assert not out.exists()


def test_no_dset_is_a_usage_error(capsys):
    assert "--dset is required" in _fails([], capsys)


def test_missing_mnist_twice_gives_the_same_error_and_no_run_directory(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("SPECTRALNET_DATA_DIR", str(empty))
    out = tmp_path / "out"
    for _ in range(2):  # the second try is not refused over --out
        line = _fails(["--dset", "mnist", "--out", str(out)], capsys)
        assert f"{empty / 'mnist.npz'} does not exist" in line
        assert not out.exists()


def test_used_out_and_finished_resume_are_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert "already exists and is not empty" in _fails(["--dset", "moons", "--out", str(out)], capsys)
    assert (out / "notes.txt").read_text() == "mine"
    done = tmp_path / "done"
    with rundir.claim(str(done), ["--dset", "moons"]):
        (done / rundir.RESULTS).write_text("{}")
    assert "the run has finished" in _fails(["--resume", str(done)], capsys)
    assert "not a run directory" in _fails(["--resume", str(tmp_path / "nothing")], capsys)


def test_too_large_reference_graph_is_refused_before_the_directory_is_claimed(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    monkeypatch.setattr(cli, "MAX_REFERENCE_EDGES", 1000)
    line = _fails(["--dset", "cc", "--out", str(out), "--quiet"], capsys)
    assert "would have 88,500 edges (n=1500, 59 neighbours each)" in line
    assert not out.exists()
    # --grassmann checks it for data too large for the exact reference before training.
    line = _fails(["--dset", "moons", "--no-exact", "--grassmann", "--out", str(out)], capsys)
    assert "drop --grassmann" in line


def test_a_crash_before_the_first_checkpoint_leaves_no_run_directory(tmp_path, monkeypatch):
    out = tmp_path / "run"

    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash in training")

    monkeypatch.setattr(cli.SpectralNet, "fit", crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        cli.run_command(["--dset", "moons", "--out", str(out), *SMALL])
    assert not out.exists()
    monkeypatch.undo()
    assert cli.run_command(["--dset", "moons", "--out", str(out), *SMALL])["dataset"] == "moons"


def test_bad_autoencoder_file_is_one_line(tmp_path, capsys):
    images = np.zeros((20, 28, 28), dtype=np.uint8)
    labels = np.arange(20, dtype=np.uint8) % 10
    np.savez(tmp_path / "mnist.npz", x_train=images, y_train=labels, x_test=images, y_test=labels)
    bad = tmp_path / "ae.h5"
    bad.write_bytes(b"not hdf5")
    line = _fails(["--dset", "mnist", "--data-dir", str(tmp_path), "--ae-weights", str(bad),
                   "--out", str(tmp_path / "o")], capsys)
    assert line.startswith(f"run.py: error: --ae-weights {bad}: ")
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # TensorFlow starts in a subprocess
@pytest.mark.research
def test_the_script_exits_0_after_a_run(tmp_path):
    """scripts/run.py raises SystemExit(main()): main returns 0, not the results."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--dset", "moons", "--out", str(tmp_path / "o"), *SMALL],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "moons: n=1500" in proc.stdout and (tmp_path / "o" / "results.json").exists()


def test_help_groups_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.run_command(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for group in ("the run:", "hyper-parameters", "MNIST and Reuters", "semi-supervised:", "output:"):
        assert group in text


@pytest.mark.slow  # TensorFlow starts in a subprocess
@pytest.mark.research
def test_the_script_prints_no_traceback_for_a_user_error(tmp_path):
    env = {**os.environ, "SPECTRALNET_DATA_DIR": str(tmp_path), "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "run.py"), "--dset",
                           "mnist", "--out", str(tmp_path / "o")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("run.py: error: ")
    assert "mnist.npz does not exist" in proc.stderr


def test_a_run_whose_files_would_not_fit_on_disk_is_refused_before_any_work(
        tmp_path, capsys, monkeypatch):
    out, export = tmp_path / "run", tmp_path / "exp"
    argv = ["--dset", "moons", "--out", str(out), "--export", str(export), *SMALL]
    job = cli.Job(cli.parse_args(argv))
    needs = job.disk_needs(str(out))
    # F_theta 2-16-2 (82 weights) and Orthonorm's 2x2: checkpoints 8 B each, plus the copy.
    assert needs[str(out)] == 8 * 86 + 8 * 86 + cli.DISK_MARGIN
    assert needs[str(export)] == 4 * 86 + cli.DISK_MARGIN
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(cli.shutil, "disk_usage",
                        lambda path: usage._replace(free=cli.DISK_MARGIN))
    line = _fails(argv, capsys)
    assert f"--out {out}: the run writes about 64 MiB there" in line
    assert f"but {tmp_path} has only 64 MiB free" in line
    assert not out.exists() and not export.exists()
