"""Data-parallel training on tf.distribute (issue 15).

A strategy over several logical devices must be set up before TensorFlow
initializes its devices, so the distributed runs are subprocesses
(``tests/distributed_fit.py``, ``scripts/run.py``); the collectives' no-op
behaviour without a strategy and the errors are checked in-process.

Tolerances of the equality tests: the distributed run draws the same global
minibatches and computes the same quantities; only float32 sums are formed in
per-replica parts (the Gram matrix, the parameter gradients) and the network
runs on shards, so the two runs differ by rounding, which training amplifies.
Measured here after the 20 iterations compared (kNN, labels, normalized
Laplacian with local scales, all pairs): weights (|w| <= 0.31) differ by
<= 6.4e-7, the Orthonorm kernel by <= 5.6e-7 relative, the loss by <= 2.6e-6
relative; the tolerances below are 15-40x that. An ortho step on
each replica's own half of the minibatch instead of the all-reduced Gram
matrix moves the weights by 7.8e-3 (tried by hand). Over more iterations
the difference grows as between two single-device runs with oneDNN on and off
(BENCHMARKS.md), so longer runs are not compared elementwise.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from harness import cluster
from spectralnet_tf import SpectralNet, distribute
from spectralnet_tf.orthonorm import Orthonorm, gram

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIT = os.path.join(ROOT, "tests", "distributed_fit.py")
RUN = os.path.join(ROOT, "scripts", "run.py")
SMALL_RUN = ["--dset", "moons", "--seed", "2", "--hidden", "64,64", "--steps-per-epoch", "20",
             "--no-exact", "--no-plots", "--quiet"]
WEIGHT_ATOL, KERNEL_RTOL, LOSS_RTOL = 1e-5, 1e-5, 1e-4


# ------------------------------------------------------------ in-process
def test_collectives_are_no_ops_without_a_strategy():
    x = tf.reshape(tf.range(12.0), (6, 2))

    def step(t):
        return (distribute.all_sum(t), distribute.all_gather(t), distribute.local_part(t),
                distribute.replica_share(t, 6), distribute.even_share(t),
                distribute.all_gather_rows(t, 6, 8))

    for out in distribute.run(None, step, x):
        np.testing.assert_array_equal(out.numpy(), x.numpy())
    eye = distribute.run(None, distribute.local_eye, 5)
    np.testing.assert_array_equal(eye.numpy(), np.eye(5))
    assert distribute.n_replicas() == 1 and distribute.is_chief() and not distribute.sharded()
    assert distribute.describe(None) is None


def test_gram_of_shards_sums_to_the_gram_of_the_batch_and_sets_the_same_kernel():
    y = np.random.default_rng(0).normal(size=(256, 3)).astype("float32")
    whole, halves = Orthonorm(), Orthonorm()
    whole.orthogonalize(y)
    halves.orthogonalize_gram(gram(y[:128]) + gram(y[128:]), 256)
    np.testing.assert_allclose(halves.kernel.numpy(), whole.kernel.numpy(), rtol=1e-6)
    out = whole(y).numpy().astype(np.float64)
    np.testing.assert_allclose(out.T @ out / 256, np.eye(3), atol=1e-5)


def test_indivisible_batch_is_refused_with_the_replica_count():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])  # one replica: everything divides
    distribute.check_divisible("batch_size", 255, strategy)

    class Two:
        num_replicas_in_sync = 2

    with pytest.raises(ValueError) as err:
        distribute.check_divisible("batch_size", 255, Two())
    assert str(err.value) == (
        "batch_size must be a multiple of the number of replicas (2) so that every replica "
        "holds an equal shard of the global minibatch, got batch_size=255.")


def test_distribute_must_be_a_strategy():
    X = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.raises(ValueError, match="distribute must be a tf.distribute.Strategy or None, "
                                         "got distribute='mirrored'"):
        SpectralNet(2, distribute="mirrored").fit(X)


def test_bad_tf_config_is_named(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "[1, 2")
    with pytest.raises(ValueError, match=r"TF_CONFIG is not a JSON object, got TF_CONFIG='\[1, 2'"):
        distribute.cluster_from_env()
    monkeypatch.setenv("TF_CONFIG", "")
    assert distribute.cluster_from_env() is None


def test_peer_failure_names_the_worker_or_says_a_worker():
    assert distribute.is_peer_failure(tf.errors.InternalError(None, None, "Collective ops is aborted"))
    assert not distribute.is_peer_failure(tf.errors.InternalError(None, None, "Cholesky failed"))
    assert distribute.peer_failure(tf.errors.CancelledError(None, None, "cancelled")) == (
        "a worker of the cluster failed or stopped answering (CancelledError in a collective op)")
    err = tf.errors.UnavailableError(
        None, None, "Additional GRPC error information from remote target "
        "/job:worker/replica:0/task:1 while calling /tensorflow.WorkerService/RecvBuf: x")
    assert distribute.peer_failure(err) == (
        "worker /job:worker/replica:0/task:1 failed or stopped answering "
        "(UnavailableError in a collective op)")


def _ports(configs):
    clusters = [json.loads(c) for c in configs]
    assert [c["task"] for c in clusters] == [{"type": "worker", "index": i}
                                             for i in range(len(configs))]
    assert all(c["cluster"] == clusters[0]["cluster"] for c in clusters)
    return [int(w.rsplit(":", 1)[1]) for w in clusters[0]["cluster"]["worker"]]


def test_localhost_cluster_ports_are_distinct_free_and_outside_the_ephemeral_range():
    low = cluster.ephemeral_low()
    if sys.platform.startswith("linux"):
        assert low is not None  # else the draw below the range is silently off
    ports = _ports(cluster.localhost_cluster(3))
    assert len(set(ports)) == 3 and all(cluster.bindable(p) for p in ports)
    span = cluster.cluster_port_range(3)
    if span is not None:  # nobody binding port 0 can be handed them
        assert span == (cluster.CLUSTER_PORTS_LOW, low)
        assert all(span[0] <= p < span[1] for p in ports)
    elif low is not None:  # a range starting too low to draw under: the kernel's
        assert all(p >= low for p in ports)


def test_localhost_cluster_without_an_ephemeral_range_takes_the_kernels_ports(monkeypatch):
    low = cluster.ephemeral_low()
    monkeypatch.setattr(cluster, "ephemeral_low", lambda: None)
    assert cluster.cluster_port_range(2) is None
    ports = _ports(cluster.localhost_cluster(2))
    assert len(set(ports)) == 2 and all(1024 <= p < 65536 for p in ports)
    if low is not None:  # handed out by the kernel, so from its ephemeral range
        assert all(p >= low for p in ports)


def test_localhost_cluster_range_too_small_to_draw_apart_is_not_used(monkeypatch):
    room = cluster.CLUSTER_PORTS_PER_WORKER * 2
    monkeypatch.setattr(cluster, "ephemeral_low", lambda: cluster.CLUSTER_PORTS_LOW + room)
    assert cluster.cluster_port_range(2) == (cluster.CLUSTER_PORTS_LOW,
                                                cluster.CLUSTER_PORTS_LOW + room)
    assert cluster.cluster_port_range(3) is None


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_localhost_cluster_needs_a_positive_worker_count(n):
    with pytest.raises(ValueError) as err:
        cluster.localhost_cluster(n)
    assert str(err.value) == f"n must be a positive number of workers, got n={n!r}."


# ------------------------------------------------------------ subprocesses
def _env(**extra):
    # oneDNN off (TensorFlow's default on CPUs without AVX-512, such as some of
    # this project's machines): oneDNN rounds a replica's (m/R)×m distance product unlike
    # the m×m one, 400x more than Eigen does here (BENCHMARKS.md,
    # "Data-parallel training"), beyond these elementwise tolerances.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT, TF_ENABLE_ONEDNN_OPTS="0")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def _workers(argv, n=2, cwds=None):
    """Start ``n`` processes of ``argv`` as the workers of one cluster on 127.0.0.1."""
    return [subprocess.Popen(argv, env=_env(TF_CONFIG=config), cwd=cwds[i] if cwds else None,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, config in enumerate(cluster.localhost_cluster(n))]


def _finish(procs, timeout=300):
    outs = [p.communicate(timeout=timeout) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    return outs


VARIANTS = ["knn", "labels", "normalized-local", "full", "spectral-init", "siamese"]


def _fit(out, *flags):
    """Run ``distributed_fit.py`` into the folder ``out``; its arrays by variant."""
    subprocess.run([sys.executable, FIT, str(out), *flags], env=_env(), check=True,
                   capture_output=True, timeout=600)
    return {name[:-4]: np.load(out / name) for name in os.listdir(out)}


def _assert_same_training(one, many):
    weights = sorted((k for k in one.files if k.startswith("weight")), key=lambda k: int(k[6:]))
    for key in weights[:-1]:
        np.testing.assert_allclose(many[key], one[key], atol=WEIGHT_ATOL, err_msg=key)
    np.testing.assert_allclose(many[weights[-1]], one[weights[-1]], rtol=KERNEL_RTOL)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(many[key], one[key], rtol=LOSS_RTOL, err_msg=key)
    for key in ("labels", "predicted"):
        np.testing.assert_array_equal(many[key], one[key], err_msg=key)
    np.testing.assert_allclose(many["transformed"], one["transformed"], atol=1e-4)
    assert ("init_grassmann" in one.files) == ("init_grassmann" in many.files)
    if "init_grassmann" in one.files:
        np.testing.assert_allclose(many["init_grassmann"], one["init_grassmann"], rtol=LOSS_RTOL)


@pytest.fixture(scope="module")
def single_device(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("one"), "--variants", *VARIANTS)


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("two"), "--devices", "2", "--variants", *VARIANTS)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS[:-1])
def test_two_logical_cpus_equal_single_device_training(variant, single_device, two_devices):
    if variant == "spectral-init":
        assert "init_grassmann" in single_device[variant].files  # the warm start ran
    """kNN; with labels; normalized Laplacian and local scales; all pairs with labels;
    the spectral warm start (with labels), whose learning-rate ramp is assigned
    in the compiled loop."""
    _assert_same_training(single_device[variant], two_devices[variant])


@pytest.mark.slow
def test_siamese_training_is_data_parallel_and_equal(single_device, two_devices):
    one, two = single_device["siamese"], two_devices["siamese"]
    for key in [k for k in one.files if k.startswith("siamese")]:
        np.testing.assert_allclose(two[key], one[key], atol=WEIGHT_ATOL, rtol=LOSS_RTOL,
                                   err_msg=key)


@pytest.mark.slow
def test_four_logical_cpus_equal_single_device_training(single_device, tmp_path):
    _assert_same_training(single_device["knn"], _fit(tmp_path, "--devices", "4")["knn"])


@pytest.mark.slow
def test_multiworker_two_processes_equal_single_device_and_only_the_chief_writes(
        single_device, tmp_path):
    cwds = [tmp_path / "worker0", tmp_path / "worker1"]
    for cwd in cwds:
        cwd.mkdir()
    # The same relative output path in different folders: what worker 1 wrote would show.
    _finish(_workers([sys.executable, FIT, "out"], cwds=cwds))
    assert os.listdir(cwds[1]) == []
    _assert_same_training(single_device["knn"], np.load(cwds[0] / "out" / "knn.npz"))


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
    ["--input-dropout", "0.1"],
    # NT-Xent against fresh deformations over the global batch: codes gathered.
    pytest.param(["--dset", "infimnist", "--invariance-weight", "1"], marks=pytest.mark.skipif(
        not os.environ.get("SPECTRALNET_DATA_DIR"), reason="needs mnist.npz")),
], ids=["masked", "invariance"])
def test_autoencoder_pretraining_on_two_devices_and_two_workers_equals_one(tmp_path,
                                                                           augmentation):
    """Shifted batches, and a last batch of 209 rows (unequal shards); masked,
    or with the invariance term (its codes gathered in every step)."""
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
