"""Helpers of the distributed tests: the environment of their subprocesses
and a cluster of worker processes on 127.0.0.1."""

import os
import subprocess

from harness import cluster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_env(**extra):
    """The environment of a subprocess of these tests, with ``extra`` set.

    oneDNN is off (TensorFlow's default on CPUs without AVX-512, such as some
    of this project's machines): oneDNN rounds a replica's (m/R)×m distance
    product unlike the m×m one, far more than Eigen does (BENCHMARKS.md,
    "Data-parallel training"), beyond the equality tests' elementwise
    tolerances."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT, TF_ENABLE_ONEDNN_OPTS="0")
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


def start_workers(argv, n=2, cwds=None):
    """Start ``n`` processes of ``argv`` as the workers of one cluster on 127.0.0.1."""
    return [subprocess.Popen(argv, env=run_env(TF_CONFIG=config), cwd=cwds[i] if cwds else None,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, config in enumerate(cluster.localhost_cluster(n))]


def finish(procs, timeout=300):
    outs = [p.communicate(timeout=timeout) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    return outs
