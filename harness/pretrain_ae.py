#!/usr/bin/env python
"""Train the VaDE-architecture autoencoder and write its weights in the Keras 1
HDF5 layout, plus a provenance JSON beside them.

    python scripts/pretrain_ae.py                   # MNIST, all 70k -> pretrained_ae/ae_mnist_weights.h5
    python scripts/pretrain_ae.py --split train     # first 60k only -> ae_mnist_train60k_weights.h5
    python scripts/pretrain_ae.py --dset reuters    # 2000-500-500-2000-10, linear output,
                                                    # a random 10,000 documents (paper Sec. 5.2)
    python scripts/pretrain_ae.py --dset infimnist --n 300000   # infinite MNIST's first
                                                    # 300,000 digits (70k + deformations)

Every epoch is checkpointed into --checkpoint-dir; after a kill,
``--resume`` continues from the last one (same weights, optimizer state and
shuffling). The checkpoints are removed once the weights are written.

``--devices N`` trains data-parallel on N devices of this host (tf.distribute
MirroredStrategy: N GPUs, or the CPU split into N logical devices); with
``TF_CONFIG`` set every worker runs the same command and only the chief writes.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
from functools import partial

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import keras
import numpy as np

from spectralnet_tf import distribute
from spectralnet_tf.atomic import atomic_file
from spectralnet_tf.autoencoder import (build_autoencoder, equal_invariance_weight,
                                        load_ae_weights, save_ae_weights, train_autoencoder)
from spectralnet_tf.centroids import assign, fit_centroids
from spectralnet_tf.checkpoint import Checkpointer
from spectralnet_tf.datasets import DATA_DIR_ENV, MNIST_IMAGE_SHAPE, MNIST_N_TRAIN, mnist, reuters
from spectralnet_tf.metrics import acc, nmi
from spectralnet_tf.resources import sha256
from spectralnet_tf.streaming import Rows, map_batches

from . import infimnist
from .infimnist import REDEFORM_KEYS, redeform

OUT_DIR = os.path.join(ROOT, "pretrained_ae")
DEFAULT_OUT = {
    ("mnist", "all"): "ae_mnist_weights.h5",
    ("mnist", "train"): "ae_mnist_train60k_weights.h5",
    ("reuters", "all"): "ae_reuters_weights.h5",
    ("infimnist", "all"): "ae_infimnist_weights.h5",
}
#: Decoder output: pixels in [0, 1] (sigmoid); tf-idf values (linear).
OUTPUT_ACTIVATION = {"mnist": "sigmoid", "infimnist": "sigmoid", "reuters": None}
#: Points trained on by default (None: all); the paper's Reuters AE used 10,000.
DEFAULT_SUBSET = {"mnist": None, "infimnist": None, "reuters": 10000}
#: Infinite MNIST digits trained on by default (held in memory: 784 floats each).
INFIMNIST_DEFAULT_N = 300_000
#: NT-Xent's default temperature (SimCLR's for CIFAR-10).
TEMPERATURE = 0.5
#: ``--invariance-weight equal``: the rule, not a number (``equal_invariance_weight``).
EQUAL = "equal"


def invariance_weight(text):
    """argparse type: a number, or the rule ``equal``."""
    return EQUAL if text == EQUAL else float(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dset", choices=["mnist", "infimnist", "reuters"], default="mnist")
    p.add_argument("--n", type=int, default=None,
                   help=f"infimnist: its first N digits (default {INFIMNIST_DEFAULT_N:,})")
    p.add_argument("--split", choices=["all", "train"], default="all",
                   help="MNIST: all 70k, or the 60k training split only (for --split runs)")
    p.add_argument("--subset", type=int,
                   help="train on this many random points (default: all for MNIST, "
                        "10000 for Reuters)")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument("--max-shift", type=float, default=0.0,
                   help="MNIST augmentation: move each image by a random offset of up to "
                        "this many pixels along each axis (the committed 60k weights use 2)")
    p.add_argument("--invariance-weight", type=invariance_weight, default=0.0,
                   help="digits: also tie each digit's code to that of the digit warped "
                        "afresh each epoch (infinite MNIST's deformation law), told apart "
                        "from the batch's other codes: NT-Xent (SimCLR) with this weight "
                        "beside the reconstruction loss (0 = off); 'equal': the weight that "
                        "makes both terms equal at the start weights")
    p.add_argument("--temperature", type=float, default=TEMPERATURE,
                   help=f"NT-Xent's temperature for --invariance-weight (default {TEMPERATURE})")
    p.add_argument("--init-weights",
                   help="start from this autoencoder weight file instead of Glorot weights "
                        "(fine-tuning; the file's layer sizes must be the architecture's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", help=f"folder with mnist.npz / reuters.h5 (default: ${DATA_DIR_ENV})")
    p.add_argument("--out", help="weight file (default: pretrained_ae/ae_<dset>[_train60k]_weights.h5)")
    p.add_argument("--checkpoint-dir", help="per-epoch checkpoints (default: runs/pretrain_ae/<out name>)")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint-dir")
    p.add_argument("--limit", type=int, help="use only the first N points (for tests)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--devices", type=int, default=1,
                   help="train on N devices (tf.distribute.MirroredStrategy); with TF_CONFIG "
                        "set, every worker runs this command and only the chief writes")
    args = p.parse_args(argv)
    if args.dset != "mnist" and args.split != "all":
        p.error(f"--split {args.split} is for MNIST; --dset {args.dset} has no test split.")
    if args.n is not None and args.dset != "infimnist":
        p.error(f"--n {args.n}: only --dset infimnist takes a size.")
    for name in ("subset", "epochs", "batch_size", "limit", "devices", "n"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {value}.")
    if args.max_shift < 0:
        p.error(f"--max-shift must be >= 0, got {args.max_shift}.")
    if args.max_shift and args.dset == "reuters":
        p.error(f"--max-shift moves images; --dset {args.dset} has none.")
    if args.invariance_weight != EQUAL and not 0 <= args.invariance_weight < float("inf"):
        p.error(f"--invariance-weight must be a finite number >= 0, got "
                f"{args.invariance_weight}.")
    if not 0 < args.temperature < float("inf"):
        p.error(f"--temperature must be a finite number > 0, got {args.temperature}.")
    if args.temperature != TEMPERATURE and not args.invariance_weight:
        p.error(f"--temperature {args.temperature} is NT-Xent's; it needs --invariance-weight.")
    if args.init_weights is not None and not os.path.isfile(args.init_weights):
        p.error(f"--init-weights {args.init_weights}: no such file.")
    if args.invariance_weight and args.dset == "reuters":
        p.error(f"--invariance-weight warps images; --dset {args.dset} has none.")
    if args.invariance_weight and not 0 <= args.seed < REDEFORM_KEYS:
        p.error(f"--invariance-weight needs --seed in [0, {REDEFORM_KEYS - 1}], got {args.seed}.")
    return args


def load_data(args):
    """(x, y, description, data file) for the points the autoencoder trains on."""
    mnist_file = os.path.join(args.data_dir or os.environ.get(DATA_DIR_ENV, ""), "mnist.npz")
    if args.dset == "mnist":
        x, y = mnist(data_dir=args.data_dir)
        if args.split == "train":
            x, y = x[:MNIST_N_TRAIN], y[:MNIST_N_TRAIN]
        split = "first 60,000 (training split)" if args.split == "train" else "all 70,000"
        path = mnist_file
    elif args.dset == "infimnist":
        n = args.n or INFIMNIST_DEFAULT_N
        if args.limit:
            n = min(n, args.limit)
        source, y = infimnist.load(data_dir=args.data_dir, n=n)
        # Generated once and held for the epochs, a chunk at a time: warping a
        # chunk takes far more memory per digit than the digit itself.
        x = map_batches(None, source)
        split = f"first {n:,} (70,000 originals, then deformations)" if n > 70000 \
            else f"first {n:,}"
        path = mnist_file
    else:
        x, y = reuters(data_dir=args.data_dir)
        split = f"all {len(y):,}"
        path = x.file.filename
    if args.limit:
        x, y = x[: args.limit], y[: args.limit]
        split = f"first {len(y):,}"
    subset = args.subset if args.subset is not None else DEFAULT_SUBSET[args.dset]
    if subset is not None and subset < len(y):
        keep = np.sort(np.random.default_rng(args.seed).choice(len(y), subset, replace=False))
        x = Rows(x, keep)[:] if not isinstance(x, np.ndarray) else x[keep]
        y = y[keep]
        split = f"random {subset:,} of {split} (seed {args.seed})"
    return np.asarray(x, dtype=np.float32), y, split, path


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.devices > 1 and distribute.cluster_from_env():
            raise ValueError("--devices and TF_CONFIG exclude each other: a multi-worker run "
                             "uses one device per worker; drop --devices.")
        strategy = distribute.get(distribute.strategy_for(args.devices))  # before any TF op
    except (ValueError, RuntimeError) as err:
        raise SystemExit(f"pretrain_ae.py: {err}") from None
    chief = distribute.is_chief(strategy)
    out = args.out or os.path.join(OUT_DIR, DEFAULT_OUT[(args.dset, args.split)])
    ckpt_dir = args.checkpoint_dir or os.path.join(
        ROOT, "runs", "pretrain_ae", os.path.splitext(os.path.basename(out))[0])
    if args.init_weights and os.path.realpath(args.init_weights) == os.path.realpath(out):
        raise SystemExit(f"pretrain_ae.py: --init-weights {args.init_weights} is the file this "
                         "run writes; pass --out another path.")
    checkpointer = Checkpointer(ckpt_dir, write=chief)
    if checkpointer.latest() is not None and not args.resume and chief:
        raise SystemExit(
            f"pretrain_ae.py: {ckpt_dir} holds checkpoints of an earlier run; pass --resume "
            "to continue it, or remove the folder to start over."
        )
    if args.resume and checkpointer.latest() is None:
        raise SystemExit(f"pretrain_ae.py: --resume, but {ckpt_dir} holds no checkpoint.")
    keras.utils.set_random_seed(args.seed)
    x, y, split, data_file = load_data(args)
    with strategy.scope():
        autoencoder, encoder = build_autoencoder(
            x.shape[1], output_activation=OUTPUT_ACTIVATION[args.dset], seed=args.seed)
        init = None
        if args.init_weights:
            try:
                load_ae_weights(autoencoder, args.init_weights)
            except (OSError, ValueError, KeyError) as err:
                raise SystemExit(f"pretrain_ae.py: --init-weights {args.init_weights}: "
                                 f"{err}") from None
            # The file as read, before any weights are written.
            init = {"file": os.path.basename(args.init_weights),
                    "sha256": sha256(args.init_weights)}
    image_shape = None if args.dset == "reuters" else MNIST_IMAGE_SHAPE
    deform = partial(redeform, seed=args.seed) if args.invariance_weight else None
    weight, balance = args.invariance_weight, None
    if weight == EQUAL:  # at the start weights, so a resumed run computes the same
        weight, mse0, nt0 = equal_invariance_weight(
            autoencoder, x, deform, batch_size=args.batch_size, max_shift=args.max_shift,
            image_shape=image_shape, temperature=args.temperature, seed=args.seed)
        balance = {"rule": "equal loss terms at the start weights", "mse": mse0,
                   "nt_xent": nt0}
    history = train_autoencoder(
        autoencoder, x, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.lr, max_shift=args.max_shift, image_shape=image_shape,
        deform=deform, invariance_weight=weight, temperature=args.temperature,
        seed=args.seed,
        verbose=0 if args.quiet else 1, checkpointer=checkpointer if chief or args.resume else None,
        strategy=strategy)
    # Every worker predicts: under a strategy Keras's predict gathers across them.
    codes = encoder.predict(x, batch_size=4096, verbose=0)
    if not chief:  # the chief writes the weights and their provenance
        return None
    save_ae_weights(autoencoder, out)
    k = int(y.max()) + 1
    centers = fit_centroids(codes, k, args.seed)
    labels = assign(codes, centers)
    provenance = {
        "weights": os.path.basename(out),
        "data": {"file": os.path.basename(data_file), "points": int(len(x)), "split": split,
                 "sha256": sha256(data_file) if os.path.exists(data_file) else None},
        "architecture": "-".join(str(d) for d in (x.shape[1], 500, 500, 2000, 10))
        + f" ReLU, linear code, mirrored decoder, {OUTPUT_ACTIVATION[args.dset] or 'linear'} output",
        "loss": "mse" + (f" + {weight} nt_xent" if weight else ""),
        "max_shift": args.max_shift,
        "invariance_weight": weight,
        "invariance_balance": balance,
        "temperature": args.temperature if args.invariance_weight else None,
        "init_weights": init,
        "optimizer": f"Adam(lr={args.lr})", "batch_size": args.batch_size,
        "epochs": len(history["loss"]), "seed": args.seed,
        "final_loss": float(history["loss"][-1]),
        "kmeans_on_code": {"acc": acc(y, labels), "nmi": nmi(y, labels)},
        "train_seconds": round(history["seconds"], 1),
        "command": "python scripts/pretrain_ae.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
    }
    with atomic_file(os.path.splitext(out)[0] + ".json") as f:
        json.dump(provenance, f, indent=2)
    shutil.rmtree(ckpt_dir, ignore_errors=True)  # the weights file is the result now
    print(json.dumps(provenance, indent=2))
    return provenance


if __name__ == "__main__":
    main()
