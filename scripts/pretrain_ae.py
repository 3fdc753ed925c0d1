#!/usr/bin/env python
"""Train the VaDE-architecture autoencoder (784-500-500-2000-10) on MNIST and write
its weights in the Keras 1 HDF5 layout, plus a provenance JSON beside them.

    python scripts/pretrain_ae.py                   # all 70k -> pretrained_ae/ae_mnist_weights.h5
    python scripts/pretrain_ae.py --split train     # first 60k only -> ae_mnist_train60k_weights.h5
"""

import argparse
import datetime
import hashlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from spectralnet_tf.atomic import atomic_file  # noqa: E402
from spectralnet_tf.autoencoder import build_autoencoder, save_ae_weights  # noqa: E402
from spectralnet_tf.centroids import fit_centroids  # noqa: E402
from spectralnet_tf.datasets import DATA_DIR_ENV, MNIST_N_TRAIN, mnist  # noqa: E402
from spectralnet_tf.metrics import acc, nmi  # noqa: E402

DEFAULT_OUT = {
    "all": os.path.join(ROOT, "pretrained_ae", "ae_mnist_weights.h5"),
    "train": os.path.join(ROOT, "pretrained_ae", "ae_mnist_train60k_weights.h5"),
}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", choices=["all", "train"], default="all",
                   help="all 70k, or the 60k training split only (for --split runs)")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", help=f"folder with mnist.npz (default: ${DATA_DIR_ENV})")
    p.add_argument("--out", help="weight file (default: pretrained_ae/ae_mnist[_train60k]_weights.h5)")
    p.add_argument("--limit", type=int, help="use only the first N points (for tests)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    out = args.out or DEFAULT_OUT[args.split]
    keras.utils.set_random_seed(args.seed)
    x, y = mnist(data_dir=args.data_dir)
    if args.split == "train":
        x, y = x[:MNIST_N_TRAIN], y[:MNIST_N_TRAIN]
    if args.limit:
        x, y = x[: args.limit], y[: args.limit]
    autoencoder, encoder = build_autoencoder(seed=args.seed)
    autoencoder.compile(optimizer=keras.optimizers.Adam(args.lr), loss="mse")
    start = time.perf_counter()
    history = autoencoder.fit(x, x, batch_size=args.batch_size, epochs=args.epochs,
                              shuffle=True, verbose=2)
    seconds = time.perf_counter() - start
    save_ae_weights(autoencoder, out)

    codes = encoder.predict(x, batch_size=4096, verbose=0)
    centers = fit_centroids(codes, 10, args.seed)
    labels = np.argmin(((codes[:, None] - centers[None]) ** 2).sum(-1), axis=1)
    data_dir = args.data_dir or os.environ.get(DATA_DIR_ENV, "")
    npz = os.path.join(data_dir, "mnist.npz")
    provenance = {
        "weights": os.path.basename(out),
        "data": {"file": "mnist.npz", "points": int(len(x)),
                 "split": "first 60,000 (training split)" if args.split == "train" else "all 70,000",
                 "sha256": sha256(npz) if os.path.exists(npz) else None},
        "architecture": "784-500-500-2000-10 ReLU, linear code, mirrored decoder, sigmoid output",
        "loss": "mse", "optimizer": f"Adam(lr={args.lr})", "batch_size": args.batch_size,
        "epochs": args.epochs, "seed": args.seed,
        "final_loss": float(history.history["loss"][-1]),
        "kmeans_on_code": {"acc": acc(y, labels), "nmi": nmi(y, labels)},
        "train_seconds": round(seconds, 1),
        "command": "python scripts/pretrain_ae.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
    }
    with atomic_file(os.path.splitext(out)[0] + ".json") as f:
        json.dump(provenance, f, indent=2)
    print(json.dumps(provenance, indent=2))
    return provenance


if __name__ == "__main__":
    main()
