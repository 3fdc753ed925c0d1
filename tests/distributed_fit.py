"""Fit SpectralNet on two moons under a tf.distribute strategy and save what
the distributed tests compare (run as a subprocess by tests/test_distribute.py,
because a strategy must be set up before TensorFlow initializes its devices).

    python tests/distributed_fit.py OUT.npz [--devices N] [--siamese]

``--devices N``: MirroredStrategy over N logical CPU devices; with
``TF_CONFIG`` set, MultiWorkerMirroredStrategy (one process per worker; only
the chief writes OUT). Otherwise one device.
"""

import argparse

from spectralnet_tf import distribute

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--devices", type=int, default=1)
parser.add_argument("--siamese", action="store_true")
args = parser.parse_args()
strategy = distribute.strategy_for(args.devices)  # before any TensorFlow op

import numpy as np  # noqa: E402
from sklearn.datasets import make_moons  # noqa: E402

from spectralnet_tf import SpectralNet  # noqa: E402

X, _ = make_moons(1100, noise=0.05, random_state=0)
extra = dict(affinity_embedding="siamese", siamese_hidden_units=(32, 8), siamese_max_epochs=2,
             siamese_batch_size=64) if args.siamese else {}
net = SpectralNet(2, hidden_units=(64, 64), batch_size=256, max_epochs=2, steps_per_epoch=10,
                  random_state=5, distribute=strategy, **extra).fit(X)
arrays = {f"weight{i}": w.numpy() for i, w in enumerate(net.model_.weights)}
arrays.update(loss=np.array(net.history_["loss"]), val_loss=np.array(net.history_["val_loss"]),
              embedding=net.embedding_, labels=net.labels_, predicted=net.predict(X[::3]),
              transformed=net.transform(X[::3]))
if args.siamese:
    arrays["siamese_loss"] = np.array(net.siamese_history_["loss"])
    arrays.update({f"siamese{i}": w.numpy() for i, w in enumerate(net.siamese_.weights)})
if distribute.is_chief(strategy):
    np.savez(args.out, **arrays)
