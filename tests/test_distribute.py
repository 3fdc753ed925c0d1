"""Data-parallel training on tf.distribute.

A strategy over several logical devices must be set up before TensorFlow
initializes its devices, so the distributed runs are subprocesses
(``tests/distributed_fit.py``); the collectives' no-op behaviour without a
strategy and the errors are checked in-process. The command-line runs
(``scripts/run.py``, ``scripts/pretrain_ae.py``) on several devices and
workers are in ``test_distribute_runs.py``, a file of their own so that the
suite's two workers (``--dist loadfile``) share the distributed tests.

Tolerances of the equality tests: the distributed run draws the same global
minibatches and computes the same quantities; only float32 sums are formed in
per-replica parts (the Gram matrix, the parameter gradients, the loss's sum
over m^2 pairs) and the network runs on shards, so the two runs differ by
rounding, which training amplifies. The tolerances were sized over eight
draws of the moons (``python tests/distributed_rounding.py OUT --draws 0 1 2
3 4 5 6 7``), not the one the tests use: after the 6 iterations compared, over the seven variants of
``test_two_logical_cpus_equal_single_device_training``, the weights differed
by <= 5.9e-7, the Orthonorm kernel by <= 4.0e-6 relative to its largest
entry, a loss by <= 7.5e-5 relative (a float32 sum of 65,536 terms in
another order), the warm start's distance by <= 9.6e-6. The tolerances below
are 13-25x those. An ortho step on each replica's own half of the minibatch
instead of the all-reduced Gram matrix (tried by hand) moves the weights by
7.8e-3-1.5e-2, the kernel by 1.4e-2-5.5e-2 and the loss by 2.3e-2-3.8e-2:
23-780x the tolerances. After 20 iterations, one draw in two left rounding
level in some variant (up to 4e-4 in the weights), so few iterations are
compared; over more the difference grows as between two single-device runs
with oneDNN on and off (BENCHMARKS.md), so longer runs are not compared
elementwise. The loss of an undone epoch, trained at a rate that diverges,
is not compared (it differed by up to 4.7e-2 over the draws); the decision
to undo, the cut rate and the restored weights are.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from cluster_runs import finish as _finish, run_env as _env, start_workers as _workers
from harness import cluster
from spectralnet_tf import SpectralNet, distribute
from spectralnet_tf.orthonorm import Orthonorm, gram

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIT = os.path.join(ROOT, "tests", "distributed_fit.py")
WEIGHT_ATOL, KERNEL_RTOL, LOSS_RTOL = 1e-5, 1e-4, 1e-3


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
    with pytest.raises(ValueError, match="distribute must be None or a tf.distribute.Strategy, "
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
VARIANTS = ["knn", "labels", "normalized-local", "full", "spectral-init", "spectral-undo",
            "groups", "siamese", "siamese-views"]


def _fit(out, *flags):
    """Run ``distributed_fit.py`` into the folder ``out``; its arrays by variant."""
    subprocess.run([sys.executable, FIT, str(out), *flags], env=_env(), check=True,
                   capture_output=True, timeout=600)
    return {name[:-4]: np.load(out / name) for name in os.listdir(out)}


def _assert_same_training(one, many):
    weights = sorted((k for k in one.files if k.startswith("weight")), key=lambda k: int(k[6:]))
    for key in weights[:-1]:
        np.testing.assert_allclose(many[key], one[key], atol=WEIGHT_ATOL, err_msg=key)
    # The Orthonorm kernel, a Cholesky inverse of the output Gram matrix, to
    # rounding relative to its size: a small off-diagonal entry is a difference
    # of large ones and carries their absolute rounding, not its own.
    kernel = one[weights[-1]]
    np.testing.assert_allclose(many[weights[-1]], kernel, rtol=0,
                               atol=KERNEL_RTOL * np.abs(kernel).max())
    kept = 1 - one["undone"] if "undone" in one.files else np.ones(len(one["loss"]), int)
    np.testing.assert_allclose(many["loss"] * kept, one["loss"] * kept, rtol=LOSS_RTOL)
    np.testing.assert_allclose(many["val_loss"], one["val_loss"], rtol=LOSS_RTOL)
    for key in ("labels", "predicted"):
        np.testing.assert_array_equal(many[key], one[key], err_msg=key)
    np.testing.assert_allclose(many["transformed"], one["transformed"], atol=1e-4)
    assert ("init_grassmann" in one.files) == ("init_grassmann" in many.files)
    if "init_grassmann" in one.files:
        np.testing.assert_allclose(many["init_grassmann"], one["init_grassmann"], rtol=LOSS_RTOL)
        np.testing.assert_allclose(many["start_distance"], one["start_distance"], rtol=LOSS_RTOL)
        for key in ("undone", "lr"):  # the same decisions, agreed by the replicas
            np.testing.assert_array_equal(many[key], one[key], err_msg=key)
    assert ("group_weight" in one.files) == ("group_weight" in many.files)
    if "group_weight" in one.files:
        np.testing.assert_allclose(many["group_weight"], one["group_weight"], rtol=LOSS_RTOL)


@pytest.fixture(scope="module")
def single_device(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("one"), "--variants", *VARIANTS)


@pytest.fixture(scope="module")
def two_devices(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("two"), "--devices", "2", "--variants", *VARIANTS)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS[:-2])
def test_two_logical_cpus_equal_single_device_training(variant, single_device, two_devices):
    if variant == "spectral-init":
        assert "init_grassmann" in single_device[variant].files  # the warm start ran
    if variant == "spectral-undo":  # an epoch was undone, the same way on both layouts
        assert single_device[variant]["undone"][0] == 1
    if variant == "groups":  # the balanced weight was measured, not left at 1
        assert single_device[variant]["group_weight"] != 1.0
    """kNN; with labels; normalized Laplacian and local scales; all pairs with labels;
    the spectral warm start (with labels), whose learning-rate ramp is assigned
    in the compiled loop; groups."""
    _assert_same_training(single_device[variant], two_devices[variant])


def _assert_same_siamese(one, two):
    for key in [k for k in one.files if k.startswith("siamese")]:
        np.testing.assert_allclose(two[key], one[key], atol=WEIGHT_ATOL, rtol=0,
                                   err_msg=key)


@pytest.mark.slow
def test_siamese_training_is_data_parallel_and_equal(single_device, two_devices):
    _assert_same_siamese(single_device["siamese"], two_devices["siamese"])


@pytest.mark.slow
def test_siamese_views_are_made_alike_on_two_devices(single_device, two_devices):
    """Two view positives per point in the Siamese net (with labels): the
    Siamese net equal to rounding, F_theta within what that rounding moves
    in its learned distances (views made otherwise on a replica would move
    its weights by orders more), and the same clusters. That rounding is
    relative, so the weights' bound is too (1e-3 of each weight, as the
    losses'), with 1e-3 absolute for the weights near 0."""
    one, two = single_device["siamese-views"], two_devices["siamese-views"]
    _assert_same_siamese(one, two)
    for key in [k for k in one.files if k.startswith("weight")]:
        np.testing.assert_allclose(two[key], one[key], rtol=1e-3, atol=1e-3, err_msg=key)
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(two[key], one[key], rtol=1e-3, err_msg=key)
    for key in ("labels", "predicted"):
        np.testing.assert_array_equal(two[key], one[key], err_msg=key)


@pytest.mark.slow
def test_four_logical_cpus_equal_single_device_training(single_device, tmp_path):
    _assert_same_training(single_device["knn"], _fit(tmp_path, "--devices", "4")["knn"])


@pytest.mark.slow
def test_warm_start_rows_round_down_to_equal_shards_on_three_devices(tmp_path):
    """Three replicas: the warm start's default 128 rows a step, which do not
    split three ways, train exactly as 126 asked for (the same layout in one
    process, so bit for bit), and not as 123, the multiple below."""
    fits = _fit(tmp_path, "--devices", "3", "--variants", "rows-default", "rows-126", "rows-123")
    default, asked, below = fits["rows-default"], fits["rows-126"], fits["rows-123"]
    assert "init_grassmann" in default.files
    for key in default.files:
        np.testing.assert_array_equal(default[key], asked[key], err_msg=key)
    assert default["init_grassmann"] != below["init_grassmann"]


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
