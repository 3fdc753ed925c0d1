"""MNIST end to end on a small subset, in the committed autoencoder's code space."""

import os

import numpy as np
import pytest

from spectralnet_tf.autoencoder import load_encoder
from spectralnet_tf.datasets import DATA_DIR_ENV, load_dataset
from harness.reproduce import AE_ALL

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AE = os.path.join(ROOT, "pretrained_ae", AE_ALL)  # run.py --dset mnist's file

pytestmark = [
    pytest.mark.skipif(not os.environ.get(DATA_DIR_ENV),
                       reason=f"${DATA_DIR_ENV} is not set (CI sets it)"),
    pytest.mark.slow,
]


def test_committed_autoencoder_loads_and_reconstructs_codes():
    x, _, _ = load_dataset("mnist")
    codes = load_encoder(AE).predict(x[:100], verbose=0)
    assert codes.shape == (100, 10) and np.isfinite(codes).all()


VARIANT = os.path.join(ROOT, "tests", "mnist_variant.py")


def test_mnist_subset_matches_exact_spectral_clustering_under_two_numeric_variants():
    """The main job's recipe can stop on a saddle on one CPU kind, far from
    exact spectral clustering of its own graph. Here a subset runs under
    oneDNN off and on (one thread each, in parallel), and in both the net
    must land on the eigenvectors. A saddle is about one output direction
    orthogonal to them (Grassmann distance near 1); the bar is a tenth of
    that. From random weights this seed stopped on one under both variants;
    the warm start does not (``python scripts/saddle.py subset``; the
    figures, and why the bar holds for this seed, are in BENCHMARKS.md)."""
    import json
    import subprocess
    import sys

    procs = []
    for onednn in ("0", "1"):
        env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": onednn, "TF_NUM_INTRAOP_THREADS": "1",
               "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2",
               "PYTHONPATH": ROOT}  # this checkout, whatever is installed
        procs.append(subprocess.Popen([sys.executable, VARIANT, "4000"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        # 107 s for both here (2 cores); the timeout only stops a hung run.
        results = [proc.communicate(timeout=900) + (proc.returncode,) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for out, err, returncode in results:
        assert returncode == 0, err[-2000:]
        got = json.loads(out.strip().splitlines()[-1])
        print(got)
        assert got["grassmann"] <= 0.1
        assert got["acc"] >= got["exact_acc"] - 0.02
