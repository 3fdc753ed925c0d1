"""Fit SpectralNet on two moons under a tf.distribute strategy and save what
the distributed tests compare (run as a subprocess by tests/test_distribute.py,
because a strategy must be set up before TensorFlow initializes its devices).

    python tests/distributed_fit.py OUT_DIR [--devices N] [--variants V ...] [--draw D]

Writes ``OUT_DIR/V.npz`` per variant. ``--devices N``: MirroredStrategy over
N logical CPU devices; with ``TF_CONFIG`` set, MultiWorkerMirroredStrategy
(one process per worker; only the chief writes). Otherwise one device.
``--draw D``: the moons' random_state (the tests use 0; the tolerances in
``test_distribute.py`` were sized over several draws).
"""

import argparse
import os

import numpy as np

from spectralnet_tf import (FullGaussianAffinity, GaussianKNNAffinity, Schedule, SiameseEmbedding,
                            distribute)
from spectralnet_tf.initializers import SpectralInit
from spectralnet_tf.views import row_uniforms


def nudge(x, index, seed):
    """A view of the moons: each point moved by a small offset drawn from (index, seed)."""
    return x + 0.1 * (row_uniforms(index, seed, x.shape[1]) - 0.5).astype(np.float32)


def knn(scale):
    """The paper's kNN graph (10 neighbours, the scale at the 3rd), which these
    comparisons were sized on: how far float32 rounding between layouts grows
    in training depends on the graph, not on which graph is the default."""
    return GaussianKNNAffinity(n_nbrs=10, scale_nbr=3, scale=scale)


#: Variant -> (SpectralNet parameters, whether 3% of the points are labeled).
VARIANTS = {
    "knn": ({}, False),
    "labels": ({}, True),
    "normalized-local": ({"laplacian": "normalized",
                          "affinity": knn("local")}, False),
    "full": ({"affinity": FullGaussianAffinity(scale_nbr=3, scale="global")}, True),
    "spectral-init": ({"init": "spectral", "affinity": knn("local")}, True),
    # A rate far too large for the warm start: its one epoch is undone and the rate cut.
    # (A second epoch at the cut rate, still large, would grow the layouts' rounding
    # differences far past rounding level: one epoch compares the undo itself.)
    # (Its schedule replaces BASE's; its ten steps let the rate diverge.)
    "spectral-undo": ({"init": "spectral", "affinity": knn("local"),
                       "schedule": Schedule(learning_rate=1.0, max_epochs=1, steps_per_epoch=10,
                                            tol=0.0)}, False),
    "siamese": ({"affinity_embedding": SiameseEmbedding(
        hidden_units=(32, 8), schedule=Schedule(max_epochs=2, tol=0.0), batch_size=64)}, False),
    # Groups of five points: minibatches in pairs, the balanced weight, the warm start's graph.
    "groups": ({"init": "spectral", "affinity": knn("local")}, False),
    # The Siamese net with two view positives per point, made alike on every replica.
    "siamese-views": ({"affinity_embedding": SiameseEmbedding(
        hidden_units=(32, 8), schedule=Schedule(max_epochs=2, tol=0.0), batch_size=64,
        views=nudge, n_views=2)}, True),
    # The warm start's default rows a step (128), which fit rounds down to 126
    # under three replicas so the shards are equal, and 126 and 123 asked for;
    # a minibatch that splits three ways for Algorithm 1.
    **{f"rows-{name}": ({"init": SpectralInit(steps=50, learning_rate=1e-3, **rows),
                         "affinity": knn("local"), "batch_size": 255}, False)
       for name, rows in (("default", {}), ("126", {"batch_size": 126}),
                          ("123", {"batch_size": 123}))},
}

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--devices", type=int, default=1)
parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=["knn"])
parser.add_argument("--draw", type=int, default=0)
args = parser.parse_args()
strategy = distribute.strategy_for(args.devices)  # before any TensorFlow op

import functools  # noqa: E402

from spectralnet_tf import initializers  # noqa: E402

# The warm start's RMSprop steps grow float32 rounding differences between
# layouts: 500 at 1e-3 to ~4e-4 in the outputs (1.5e-7 after 100 steps), and
# a higher rate faster; 50 at 1e-3 keep the comparison at rounding level.
# (init="spectral" names the class; the fit builds it with its defaults.)
initializers.INITIALIZERS["spectral"] = functools.partial(initializers.SpectralInit, steps=50,
                                                          learning_rate=1e-3)

from sklearn.datasets import make_moons  # noqa: E402

from spectralnet_tf import SpectralNet  # noqa: E402


X, y = make_moons(1100, noise=0.05, random_state=args.draw)
known = np.where(np.arange(len(y)) % 33 == 0, y, -1)
#: What every variant starts from (each changes what it tests): random weights,
#: the paper's Laplacian and graph, all the epochs; two epochs of three steps, so that
#: six iterations are compared (test_distribute.py says why so few).
BASE = {"init": "random", "laplacian": "unnormalized",
        "schedule": Schedule(max_epochs=2, steps_per_epoch=3, tol=0.0),
        "affinity": knn("global"), "batch_size": 256}
for variant in args.variants:
    params, labeled = VARIANTS[variant]
    net = SpectralNet(2, hidden_units=(64, 64), random_state=5,
                      distribute=strategy, **{**BASE, **params})
    net.fit(X, partial_labels=known if labeled else None,
            groups=np.arange(len(X)) // 5 if variant == "groups" else None)
    arrays = {f"weight{i}": w.numpy() for i, w in enumerate(net.model_.weights)}
    arrays.update(loss=np.array(net.history_["loss"]), val_loss=np.array(net.history_["val_loss"]),
                  embedding=net.embedding_, labels=net.labels_, predicted=net.predict(X[::3]),
                  transformed=net.transform(X[::3]))
    if "init_grassmann" in net.history_:  # the warm start ran
        for key in ("init_grassmann", "start_distance", "undone", "lr"):
            arrays[key] = np.array(net.history_[key])
    if "group_weight" in net.history_:
        arrays["group_weight"] = np.array(net.history_["group_weight"])
    if variant in ("siamese", "siamese-views"):
        arrays["siamese_loss"] = np.array(net.siamese_history_["loss"])
        arrays.update({f"siamese{i}": w.numpy() for i, w in enumerate(net.siamese_.weights)})
    if distribute.is_chief(strategy):
        os.makedirs(args.out, exist_ok=True)
        np.savez(os.path.join(args.out, f"{variant}.npz"), **arrays)
