"""A two-worker fit whose workers compute different validation losses (run
by tests/test_workers_agree.py, one process per worker, with TF_CONFIG).

    python tests/diverging_workers.py OUT_DIR

Each worker scales its own validation loss by a factor of its own, as
rounding on another CPU would change it, far more: left alone, the workers'
plateau tests would cut the learning rate at different epochs and stop at
different ones, and the one still training would wait in a collective for a
peer that left. Each worker writes ``OUT_DIR/worker<i>.json``: its history.
"""

import json
import os
import sys

from spectralnet_tf import distribute

strategy = distribute.strategy_for()  # before any TensorFlow op
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]

import numpy as np  # noqa: E402
from sklearn.datasets import make_moons  # noqa: E402

from spectralnet_tf import Schedule, SpectralNet, train  # noqa: E402

run_epochs = train.run_epochs


def diverging(training, run_epoch, validation_loss, callbacks):
    epoch = [0]

    def own_loss():  # worker 1 sees a loss that falls every epoch, worker 0 a flat one
        epoch[0] += 1
        value = float(validation_loss())
        return value * (1.0 if task == 0 else 0.5 ** epoch[0]) + (1.0 if task == 0 else 0.0)

    return run_epochs(training, run_epoch, own_loss, callbacks)


train.run_epochs = diverging
X, _ = make_moons(400, noise=0.05, random_state=0)
net = SpectralNet(2, hidden_units=(16,), batch_size=128,
                  schedule=Schedule(max_epochs=12, steps_per_epoch=2, patience=1, min_lr=1e-5,
                                    tol=0.0),
                  init="random", random_state=0, distribute=strategy).fit(X)
os.makedirs(sys.argv[1], exist_ok=True)
with open(os.path.join(sys.argv[1], f"worker{task}.json"), "w") as f:
    json.dump({key: net.history_[key] for key in ("lr", "val_loss", "loss")}, f)
