"""Command-line runs on several devices and workers: ``scripts/run.py`` with
``--devices`` and under ``TF_CONFIG`` (a worker killed, then resumed), and
``scripts/pretrain_ae.py`` on two devices and two workers against one.
Each is a subprocess (a strategy must be set up before TensorFlow starts)."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cluster_runs import ROOT, finish as _finish, run_env as _env, start_workers as _workers

#: Every test here runs a research command (scripts/run.py, scripts/pretrain_ae.py) end to end.
pytestmark = [pytest.mark.slow, pytest.mark.research]

RUN = os.path.join(ROOT, "scripts", "run.py")
SMALL_RUN = ["--dset", "moons", "--seed", "2", "--hidden", "64,64", "--steps-per-epoch", "20",
             "--no-exact", "--no-plots", "--quiet"]


def _cli(argv, timeout=300):
    return subprocess.run([sys.executable, RUN, *argv], env=_env(), capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_cli_devices_two_runs_and_records_the_strategy(tmp_path):
    out = tmp_path / "run"
    proc = _cli([*SMALL_RUN, "--epochs", "2", "--devices", "2", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["distribute"] == {"strategy": "MirroredStrategy", "replicas": 2}
    assert results["iterations"] == 40 and results["acc"] > 0.5


@pytest.mark.slow
def test_cli_refuses_a_batch_that_does_not_split_over_the_devices(tmp_path):
    out = tmp_path / "run"
    proc = _cli([*SMALL_RUN, "--devices", "2", "--batch-size", "255", "--out", str(out)])
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "run.py: error: batch_size must be a multiple of the number of replicas (2) so "
        "that every replica holds an equal shard of the global minibatch, got batch_size=255.")
    assert not out.exists()


@pytest.mark.slow
def test_cli_worker_killed_fails_the_run_in_one_line_and_resume_finishes(tmp_path):
    out = tmp_path / "run"
    argv = [sys.executable, RUN, *SMALL_RUN, "--epochs", "8", "--out", str(out)]
    chief, other = _workers(argv)
    pointer = out / "checkpoints" / "spectral" / "latest"
    deadline = time.monotonic() + 240
    while not pointer.exists() and time.monotonic() < deadline and chief.poll() is None:
        time.sleep(0.2)
    assert pointer.exists(), chief.communicate()[1][-3000:]
    other.send_signal(signal.SIGKILL)
    _, err = chief.communicate(timeout=120)
    other.communicate()
    assert chief.returncode == 1
    last = err.strip().splitlines()[-1]
    # TensorFlow names the lost worker when its message says "remote target ..."
    # (here, usually), else the line says "a worker of the cluster".
    assert last.startswith(("run.py: error: worker /job:worker/replica:0/task:1 failed or "
                            "stopped answering (", "run.py: error: a worker of the cluster "
                            "failed or stopped answering (")), last
    assert last.endswith(f"; start every worker again with --resume {out}")
    assert not (out / "results.json").exists()
    done_epochs = int(pointer.read_text().split("-")[-1])

    outs = _finish(_workers([sys.executable, RUN, "--resume", str(out)]))
    results = json.loads((out / "results.json").read_text())
    assert results["epochs"] == 8 and done_epochs < 8
    assert results["config"]["distribute"] == {"strategy": "MultiWorkerMirroredStrategy",
                                               "replicas": 2}
    # Both workers trained the same model: their summaries agree but for the
    # wall time each one took (" | 18s -> ...").
    summaries = [re.sub(r" \| \d+s -> ", " | -> ", o.strip().splitlines()[-1]) for o, _ in outs]
    assert summaries[0] == summaries[1] and "ACC=" in summaries[0]


@pytest.mark.slow
@pytest.mark.parametrize("augmentation", [
    [],
    # NT-Xent against fresh deformations over the global batch: codes gathered.
    pytest.param(["--dset", "infimnist", "--invariance-weight", "1"], marks=pytest.mark.skipif(
        not os.environ.get("SPECTRALNET_DATA_DIR"), reason="needs mnist.npz")),
], ids=["plain", "invariance"])
def test_autoencoder_pretraining_on_two_devices_and_two_workers_equals_one(tmp_path,
                                                                           augmentation):
    """Shifted batches, and a last batch of 209 rows (unequal shards); plain
    reconstruction, or with the invariance term (its codes gathered in every
    step)."""
    from spectralnet_tf.autoencoder import build_autoencoder, read_ae_weights, save_ae_weights

    argv = [sys.executable, os.path.join(ROOT, "scripts", "pretrain_ae.py"), "--limit", "2001",
            "--epochs", "1", "--max-shift", "2", *augmentation, "--quiet"]

    def files(name):
        return ["--out", str(tmp_path / f"{name}.h5"), "--checkpoint-dir", str(tmp_path / name)]

    for devices in ("1", "2"):
        subprocess.run([*argv, "--devices", devices, *files(f"dev{devices}")], env=_env(),
                       check=True, capture_output=True, timeout=300)
    _finish(_workers([*argv, *files("workers")]))
    names = ["init", "dev1", "dev2", "workers"]
    save_ae_weights(build_autoencoder(784, seed=0)[0], str(tmp_path / "init.h5"))
    weights = {name: [np.asarray(w) for layer in read_ae_weights(str(tmp_path / f"{name}.h5"))
                      for w in layer] for name in names}
    # Two replicas in one process or in two: the same shards, the same arithmetic.
    for two, workers in zip(weights["dev2"], weights["workers"]):
        np.testing.assert_array_equal(workers, two)
    # One device against two: summing the replicas' gradients rounds unlike one
    # batch's gradient, and Adam turns a rounding difference in a near-zero
    # gradient into a step of up to the learning rate. So the weights are held
    # to how far training moved them (measured: within 1e-6 elementwise on an
    # AVX2 CPU, 2e-3 of the movement on an AVX-512 one). Training with a learning
    # rate 10% off differs by 8-14% of it (measured), a lost shard by more.
    for i, (start, one, two) in enumerate(zip(weights["init"], weights["dev1"], weights["dev2"])):
        moved = np.linalg.norm(one - start)
        assert moved > 0 and np.linalg.norm(two - one) <= 1e-2 * moved, i
    assert (tmp_path / "workers.json").exists()  # the chief finished its provenance
