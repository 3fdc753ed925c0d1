#!/usr/bin/env python
"""Run SpectralNet on a data set, compare with exact spectral clustering and
k-means, and write results.json and PNG plots.

    python scripts/run.py --dset cc
    python scripts/run.py --dset digits --seed 1 --out runs/digits-seed1
"""

import argparse
import datetime
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402

from spectralnet_tf import SpectralNet, acc, grassmann, nmi  # noqa: E402
from spectralnet_tf.configs import config_for  # noqa: E402
from spectralnet_tf import rundir  # noqa: E402
from spectralnet_tf.atomic import atomic_file  # noqa: E402
from spectralnet_tf.autoencoder import load_encoder  # noqa: E402
from spectralnet_tf.datasets import DATASETS, MNIST_N_TRAIN, load_dataset  # noqa: E402
from spectralnet_tf.affinity import AFFINITIES, SCALES  # noqa: E402
from spectralnet_tf.losses import LAPLACIANS  # noqa: E402
from spectralnet_tf.networks import OUTPUT_ACTIVATIONS  # noqa: E402
from spectralnet_tf.train import GRADIENTS  # noqa: E402
from spectralnet_tf.streaming import Rows, is_lazy, map_batches  # noqa: E402
from spectralnet_tf.spectral import DENSE_MAX_N, spectral_clustering  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AE_ALL = os.path.join(ROOT, "pretrained_ae", "ae_mnist_weights.h5")
AE_TRAIN60K = os.path.join(ROOT, "pretrained_ae", "ae_mnist_train60k_weights.h5")
AE_REUTERS = os.path.join(ROOT, "pretrained_ae", "ae_reuters_weights.h5")
#: Largest exact reference graph (--grassmann): MNIST's is 70,000 x 684 = 48M edges.
MAX_REFERENCE_EDGES = 100_000_000
#: Data sets with an autoencoder code space (run in it by default).
CODE_SPACE = ("mnist", "reuters")
#: Reuters --split: the fraction held out at random (paper Sec. 5.2).
REUTERS_TEST_FRACTION = 0.1


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--dset", choices=sorted(DATASETS), help="data set (required unless --resume)")
    p.add_argument("--out", help="output directory (default: runs/DSET-DATE/); must be new or empty")
    p.add_argument("--resume", metavar="DIR",
                   help="continue the interrupted run in DIR from its last checkpoints, "
                        "with the arguments it was started with")
    p.add_argument("--seed", type=int, default=0, help="seeds data and training (default 0)")
    hp = p.add_argument_group("hyper-parameters (default: the data set's config, "
                              "else the SpectralNet default)")
    hp.add_argument("--hidden", help="hidden ReLU layer sizes, e.g. 1024,1024,512")
    hp.add_argument("--kernel", choices=sorted(AFFINITIES), dest="affinity",
                    help="Gaussian affinity on the kNN graph or between all pairs")
    hp.add_argument("--n-nbrs", type=int, help="neighbours per point in the kNN affinity")
    hp.add_argument("--scale-nbr", type=int, help="the scale is the distance to this neighbour")
    hp.add_argument("--scale", choices=SCALES)
    hp.add_argument("--laplacian", choices=LAPLACIANS)
    hp.add_argument("--batch-size", type=int)
    hp.add_argument("--ortho-batch-size", type=int)
    hp.add_argument("--lr", type=float, dest="learning_rate", help="initial learning rate")
    hp.add_argument("--patience", type=int, help="epochs without improvement before LR/10")
    hp.add_argument("--epochs", type=int, dest="max_epochs", help="maximum epochs")
    hp.add_argument("--steps-per-epoch", type=int)
    hp.add_argument("--gradient", choices=GRADIENTS)
    hp.add_argument("--output-activation", choices=OUTPUT_ACTIVATIONS,
                    help="activation of the size-k layer before Orthonorm (paper: tanh)")
    hp.add_argument("--siamese-epochs", type=int, dest="siamese_max_epochs",
                    help="maximum epochs of the Siamese net")
    hp.add_argument("--siamese-nbrs", type=int, dest="siamese_n_nbrs",
                    help="Siamese positive pairs come from each point's SIAMESE_NBRS "
                         "nearest neighbours")
    mn = p.add_argument_group("MNIST and Reuters (paper Table 1)")
    mn.add_argument("--data-dir", help="folder with mnist.npz or reuters.h5 "
                    "(default: $SPECTRALNET_DATA_DIR)")
    mn.add_argument("--space", choices=["input", "code"],
                    help="cluster raw pixels or autoencoder codes (default: code)")
    mn.add_argument("--affinity", choices=["siamese", "euclidean"], dest="distance",
                    help="distance in the affinity (default: siamese)")
    mn.add_argument("--ae-weights", help="autoencoder weight file (default: "
                    "pretrained_ae/ae_mnist_weights.h5, or the 60k variant with --split; "
                    "pretrained_ae/ae_reuters_weights.h5)")
    mn.add_argument("--split", action="store_true",
                    help="MNIST: train on the 60k training split, report test_acc/test_nmi on "
                         "the 10k; Reuters: the same with a random 10%% held out")
    mn.add_argument("--grassmann", action="store_true",
                    help="Grassmann distance to the true eigenvectors of the full-data "
                         "Laplacian: the kNN graph that the minibatches sample, with "
                         "neighbour ranks scaled by n / batch size (exact kNN, scipy LOBPCG)")
    p.add_argument("--labeled-fraction", type=float, default=0.0,
                   help="semi-supervised: reveal the labels of this random fraction of points")
    p.add_argument("--export", nargs="?", const="export", metavar="DIR",
                   help="after training, export a SavedModel for TF-Serving to "
                        "DIR/DSET/<version>/ (DIR defaults to export/)")
    p.add_argument("--no-exact", action="store_true",
                   help="skip exact spectral clustering (and the Grassmann distance)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG files")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def build_config(args):
    config = config_for(args.dset)
    if args.hidden:
        config["hidden_units"] = tuple(int(u) for u in args.hidden.split(","))
    for key in ("affinity", "n_nbrs", "scale_nbr", "scale", "laplacian", "batch_size",
                "ortho_batch_size", "learning_rate", "patience", "max_epochs",
                "steps_per_epoch", "gradient", "output_activation", "siamese_max_epochs",
                "siamese_n_nbrs"):
        value = getattr(args, key)
        if value is not None:
            config[key] = value
    return config


def split(args, x, y):
    """``x, y, x_test, y_test``: all data, or the training part and the held-out
    part for ``--split`` (MNIST: 60k/10k; Reuters: a random 10% held out)."""
    if not args.split:
        return x, y, None, None
    if args.dset == "mnist":
        return x[:MNIST_N_TRAIN], y[:MNIST_N_TRAIN], x[MNIST_N_TRAIN:], y[MNIST_N_TRAIN:]
    if args.dset == "reuters":
        held_out = np.random.default_rng(args.seed).uniform(size=len(y)) < REUTERS_TEST_FRACTION
        train, test = np.flatnonzero(~held_out), np.flatnonzero(held_out)
        return Rows(x, train), y[train], Rows(x, test), y[test]
    raise SystemExit("--split is defined for --dset mnist (60k/10k) and reuters (90%/10%).")


def default_ae(args):
    if args.dset == "reuters":
        return AE_REUTERS
    return AE_TRAIN60K if args.split else AE_ALL


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    resume = args.resume is not None
    if resume:
        out = args.resume
    else:
        if args.dset is None:
            raise SystemExit("run.py: --dset is required (or --resume DIR).")
        out = args.out or os.path.join(
            "runs", f"{args.dset}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
        if args.out is None:
            argv += ["--out", out]
    try:
        with rundir.claim(out, argv, resume=resume) as run_argv:
            return run(parse_args(run_argv), out, resume)
    except rundir.RunDirectoryError as err:
        raise SystemExit(f"run.py: {err}") from None


def exact_reference(net, affinity, z, y, results, seed):
    """Exact spectral clustering of all of z, on the graph SpectralNet's
    minibatches sample (``Affinity.for_full_data``: neighbour ranks scaled by
    n / batch size); its eigenvectors are, approximately, the ones the net
    approximates. Adds the figures to ``results``; returns (labels, eigenvectors)."""
    _, batch_size, _, _ = net._resolve_params(len(z))
    if not hasattr(affinity, "scale_"):
        affinity.fit(z, batch_size, seed=seed)
    full = affinity.for_full_data(len(z), batch_size)
    per_point = full.n_neighbors_needed()
    if len(z) * per_point > MAX_REFERENCE_EDGES:
        raise SystemExit(
            f"run.py: the exact reference graph would have {len(z) * per_point:,} edges "
            f"(n={len(z)}, {per_point} neighbours each), more than {MAX_REFERENCE_EDGES:,}; "
            "drop --grassmann for this data set."
        )
    labels, eigvecs = spectral_clustering(z, net.n_clusters, full, net.laplacian,
                                          neighbors="exact", random_state=seed)
    results.update(exact_acc=acc(y, labels), exact_nmi=nmi(y, labels),
                   exact_graph=full._ranks())
    return labels, eigvecs


def run(args, out, resume=False):
    """One run into the claimed directory ``out`` (see main)."""
    t0 = time.perf_counter()
    seconds = {}

    def phase(name, start):
        seconds[name] = round(time.perf_counter() - start, 3)
        print(f"[{name}] {seconds[name]:.1f}s", flush=True)

    t = time.perf_counter()
    extra = {"data_dir": args.data_dir} if args.dset in CODE_SPACE else {}
    x, y, k = load_dataset(args.dset, seed=args.seed, **extra)
    x, y, x_test, y_test = split(args, x, y)
    space = args.space or ("code" if args.dset in CODE_SPACE else "input")
    if space == "input" and is_lazy(x):
        x = map_batches(None, x)  # SpectralNet trains on the raw rows: in memory
    phase("data", t)

    config = build_config(args)
    if args.distance is not None:
        config["affinity_embedding"] = "siamese" if args.distance == "siamese" else None
    if space == "code":
        if args.dset not in CODE_SPACE:
            raise SystemExit(f"--space code needs an autoencoder; only {', '.join(CODE_SPACE)} have one.")
        args.encoder_file = args.ae_weights or default_ae(args)
        try:
            config["encoder"] = load_encoder(args.encoder_file)
        except FileNotFoundError as err:
            raise SystemExit(
                f"run.py: {err} For Reuters, train one with scripts/pretrain_ae.py --dset "
                "reuters, or pass --ae-weights with VaDE's ae_reuters10k weights."
            ) from None
    net = SpectralNet(k, random_state=args.seed, verbose=0 if args.quiet else 1,
                      checkpoint_dir=os.path.join(out, "checkpoints"), **config)
    results = {"dataset": args.dset, "n": int(len(x)), "n_clusters": k, "space": space,
               "affinity": "siamese" if net.affinity_embedding == "siamese" else "euclidean"}

    # The points in the space SpectralNet clusters: the rows, or their codes.
    t = time.perf_counter()
    z = x if net.encoder is None else map_batches(net.encoder, x)
    phase("encode", t)
    eigvecs = exact_labels = None
    if not args.no_exact and len(x) <= DENSE_MAX_N:
        t = time.perf_counter()
        # Before training, so the history tracks the Grassmann distance.
        exact_labels, eigvecs = exact_reference(net, net._make_affinity(), z, y, results,
                                                args.seed)
        phase("exact", t)

    y_known = None
    if args.labeled_fraction > 0:
        rng = np.random.default_rng(args.seed)
        y_known = np.where(rng.uniform(size=len(y)) < args.labeled_fraction, y, -1)
        results["labeled"] = int((y_known >= 0).sum())

    t = time.perf_counter()
    net.fit(x, y_known, eigvecs=eigvecs, resume=resume)
    phase("train", t)
    if hasattr(net, "siamese_history_"):
        seconds["siamese"] = round(net.siamese_history_["seconds"], 3)
    seconds["spectral"] = round(net.history_["seconds"], 3)
    results.update(acc=acc(y, net.labels_), nmi=nmi(y, net.labels_))
    if x_test is not None:
        t = time.perf_counter()
        test_labels = net.predict(x_test)
        results.update(n_test=int(len(y_test)), test_acc=acc(y_test, test_labels),
                       test_nmi=nmi(y_test, test_labels))
        phase("test", t)
    if args.grassmann and eigvecs is None:
        t = time.perf_counter()
        # After training: the graph in the trained Siamese distance, if any.
        _, eigvecs = exact_reference(net, net.affinity_, z, y, results, args.seed)
        phase("grassmann", t)
    if eigvecs is not None:
        results["grassmann"] = grassmann(net.embedding_, eigvecs)

    t = time.perf_counter()
    km_labels = KMeans(k, n_init=10, random_state=args.seed).fit_predict(z)
    results.update(kmeans_acc=acc(y, km_labels), kmeans_nmi=nmi(y, km_labels))
    phase("kmeans", t)

    if not args.no_plots:
        t = time.perf_counter()
        from spectralnet_tf import plots

        panels = {"SpectralNet": net.labels_}
        if exact_labels is not None:
            panels["spectral clustering"] = exact_labels
        panels["k-means"] = km_labels
        x_plot = z if is_lazy(x) else x
        if len(x) > 10000:  # a readable scatter of MNIST-sized data
            keep = np.random.default_rng(0).choice(len(x), 10000, replace=False)
            x_plot, panels = x_plot[keep], {key: v[keep] for key, v in panels.items()}
        plots.plot_clusters(os.path.join(out, "clusters.png"), x_plot, panels)
        if eigvecs is not None:
            plots.plot_eigenvectors(os.path.join(out, "eigenvectors.png"), net.embedding_, eigvecs)
        plots.plot_training(os.path.join(out, "training.png"), net.history_)
        phase("plots", t)

    if args.export:
        t = time.perf_counter()
        results["export"] = net.export(args.export, name=args.dset)
        phase("export", t)

    seconds["total"] = round(time.perf_counter() - t0, 3)
    results["seconds"] = seconds
    results["peak_rss_gib"] = round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)  # KiB on Linux
    results["epochs"] = len(net.history_["loss"])
    results["iterations"] = net.history_["iteration"][-1]
    params = {key: list(v) if isinstance(v, tuple) else v for key, v in net.get_params().items()}
    params["encoder"] = getattr(args, "encoder_file", None)
    results["config"] = {**params, "seed": args.seed, "scale_": net.affinity_.scale_}
    results["history"] = {key: v for key, v in net.history_.items() if key != "seconds"}
    with atomic_file(os.path.join(out, rundir.RESULTS)) as f:
        json.dump(results, f, indent=2)
    summary = (
        f"{args.dset}: n={len(x)} k={k} ACC={results['acc']:.4f} NMI={results['nmi']:.4f}"
    )
    if "test_acc" in results:
        summary += f" test ACC={results['test_acc']:.4f} NMI={results['test_nmi']:.4f}"
    if "grassmann" in results:
        summary += f" grassmann={results['grassmann']:.4f}"
    if "exact_acc" in results:
        summary += f" | exact ACC={results['exact_acc']:.4f}"
    summary += f" | k-means ACC={results['kmeans_acc']:.4f} | {seconds['total']:.0f}s -> {out}"
    print(summary)
    return results


if __name__ == "__main__":
    main()
