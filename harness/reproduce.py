"""The paper reproduction: ``python scripts/run.py``.

Runs SpectralNet on a data set, compares it with exact spectral clustering and
k-means, and writes ``results.json`` and PNG plots into a run directory:

    python scripts/run.py --dset cc
    python scripts/run.py --dset mnist --split
    python scripts/run.py --resume runs/mnist-20261122-101500
    python scripts/run.py --dset moons --devices 2    # data-parallel on 2 logical devices

With ``TF_CONFIG`` set, every worker of the cluster runs the same command
(same ``--out``) under ``MultiWorkerMirroredStrategy``; only the chief writes.

A user error (missing data, a bad flag value, a used ``--out``, a finished
run given to ``--resume``) is one line on stderr and exit status 2, before any
training; a run directory is never left half-made in a way that refuses the
next try (``rundir.claim``).
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import time

import numpy as np
import tensorflow as tf
from sklearn.base import clone

from spectralnet_tf import distribute
from . import rundir
from spectralnet_tf.affinity import AFFINITIES, SCALES
from spectralnet_tf import Schedule
from spectralnet_tf.siamese import SIAMESE_SCHEDULE, SiameseEmbedding
from spectralnet_tf.atomic import atomic_file
from spectralnet_tf.autoencoder import load_encoder
from spectralnet_tf.centroids import (NORMALIZE_ROWS, assign, fit_centroids, kmeans_labels,
                                     kmeans_labels_inertia)
from spectralnet_tf.datasets import DATA_DIR_ENV, DATASETS, MNIST_N_TRAIN, load_dataset
from spectralnet_tf.estimator import SpectralNet, make_affinity, make_affinity_embedding
from spectralnet_tf.hardware import resolve_dtype_policy
from spectralnet_tf.losses import LAPLACIANS
from spectralnet_tf.metrics import acc, grassmann, matched, nmi
from spectralnet_tf.networks import DTYPE_POLICIES, OUTPUT_ACTIVATIONS
from spectralnet_tf.resources import pretrained_path, sha256
from spectralnet_tf.spectral import (DENSE_MAX_N, EigensolverTimeout, edge_purity,
                                     harmonic_labels, spectrum)
from spectralnet_tf.streaming import Rows, is_lazy, map_batches
from spectralnet_tf.cli import layer_widths
from spectralnet_tf.initializers import INITIALIZERS
from spectralnet_tf.views import make_view

from . import infimnist
from .configs import HARNESS_VIEWS, config_for
from .infimnist import N_ORIGINAL, InfiMNIST, Redraw
from .records import peak_rss_gib
from .semisup import partial_labels, supervised_acc

PROG = "run.py"
#: Largest exact reference graph (--grassmann): MNIST's is 70,000 x 684 = 48M edges.
MAX_REFERENCE_EDGES = 100_000_000
#: Data sets with an autoencoder code space (run in it by default).
CODE_SPACE = ("mnist", "infimnist", "reuters")
#: Plots, results.json, checkpoint state and the like, on top of the weights.
DISK_MARGIN = 64 * 2**20
#: Reuters --split: the fraction held out at random (paper Sec. 5.2).
REUTERS_TEST_FRACTION = 0.1
#: infimnist --split: this many fresh digits, the indices right after the n trained on.
INFIMNIST_FRESH = 10000
#: The files for all 70k, for --split and for infinite MNIST are the ones the
#: registered criterion, split stability, ranks first of the autoencoder files
#: kept, on each job's own digits (--split: the 60k draws, on training digits;
#: pretrained_ae/README.md).
AE_ALL, AE_TRAIN60K, AE_INFIMNIST, AE_REUTERS = (
    "ae_mnist_shift2_seed1_weights.h5", "ae_mnist_train60k_seed2_weights.h5",
    "ae_infimnist_inv_weights.h5",
    "ae_reuters_weights.h5")


DESCRIPTION = """\
Run SpectralNet on a data set, compare it with exact spectral clustering and
k-means, and write results.json and PNG plots into a run directory.

    python scripts/run.py --dset cc
    python scripts/run.py --dset mnist --split
    python scripts/run.py --resume runs/mnist-20261122-101500

A user error is one line on stderr and exit status 2, before any training."""


class UsageError(Exception):
    """A user error: reported as one line and exit status 2, no traceback."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _number(kind, low, strict, below=None):
    """argparse type: a ``kind`` number > low (strict) or >= low, and < below if given."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not (value > low if strict else value >= low) or (
                below is not None and value >= below):
            wanted = (f"in [{low}, {below})" if below is not None
                      else f"{'>' if strict else '>='} {low}")
            raise argparse.ArgumentTypeError(
                f"must be {'an integer' if kind is int else 'a number'} {wanted}, got {text!r}")
        return value
    return parse


POSITIVE_INT, NONNEGATIVE_INT = _number(int, 1, False), _number(int, 0, False)
POSITIVE_FLOAT, FRACTION = _number(float, 0.0, True), _number(float, 0, False, below=1)
NONNEGATIVE_FLOAT = _number(float, 0.0, False)


def build_parser():
    p = _Parser(prog=PROG, description=DESCRIPTION,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    run = p.add_argument_group("the run")
    run.add_argument("--dset", choices=sorted({*DATASETS, "infimnist"}),
                     help="data set (required unless --resume)")
    run.add_argument("--seed", type=NONNEGATIVE_INT, default=0,
                     help="seeds data and training (default 0)")
    run.add_argument("--out", help="run directory (default: runs/DSET-DATE/); must be new or empty")
    run.add_argument("--resume", metavar="DIR",
                     help="continue the interrupted run in DIR from its last checkpoints, "
                          "with the arguments it was started with")
    p.add_argument("--preset", choices=["paper"],
                   help="start from the paper's settings (Appendix C; MNIST and Reuters) "
                        "instead of this package's config for the data set")
    hp = p.add_argument_group("hyper-parameters (default: the data set's config, "
                              "else the SpectralNet default)")
    hp.add_argument("--hidden", type=layer_widths, help="hidden ReLU layer sizes, e.g. 1024,1024,512")
    hp.add_argument("--kernel", choices=sorted(AFFINITIES), dest="affinity",
                    help="Gaussian affinity on the kNN graph or between all pairs")
    hp.add_argument("--n-nbrs", type=POSITIVE_INT, help="neighbours per point in the kNN affinity")
    hp.add_argument("--scale-nbr", type=POSITIVE_INT,
                    help="the scale is the distance to this neighbour")
    hp.add_argument("--scale", choices=SCALES)
    hp.add_argument("--laplacian", choices=LAPLACIANS)
    hp.add_argument("--batch-size", type=POSITIVE_INT)
    hp.add_argument("--lr", type=POSITIVE_FLOAT, dest="learning_rate", help="initial learning rate")
    hp.add_argument("--patience", type=POSITIVE_INT,
                    help="epochs without improvement before LR/10")
    hp.add_argument("--epochs", type=POSITIVE_INT, dest="max_epochs", help="maximum epochs")
    hp.add_argument("--steps-per-epoch", type=POSITIVE_INT)
    hp.add_argument("--init", choices=sorted(INITIALIZERS),
                    help="how F_theta starts: fitted to exact eigenvectors of a 4,096-point "
                         "subsample (spectral), or Glorot weights only (random, the paper's)")
    hp.add_argument("--output-activation", choices=OUTPUT_ACTIVATIONS,
                    help="activation of the size-k layer before Orthonorm (paper: tanh)")
    hp.add_argument("--dtype-policy", choices=DTYPE_POLICIES,
                    help="Keras dtype policy of the hidden layers of SpectralNet "
                         "(default float32)")
    hp.add_argument("--siamese-dtype-policy", choices=DTYPE_POLICIES,
                    help="the same for the Siamese net")
    hp.add_argument("--siamese-epochs", type=POSITIVE_INT, dest="siamese_max_epochs",
                    help="maximum epochs of the Siamese net")
    hp.add_argument("--siamese-steps-per-epoch", type=POSITIVE_INT, dest="siamese_steps_per_epoch",
                    help="Siamese minibatches per epoch (default: one pass over all pairs)")
    hp.add_argument("--siamese-nbrs", type=NONNEGATIVE_INT, dest="siamese_n_nbrs",
                    help="Siamese positive pairs come from each point's SIAMESE_NBRS "
                         "nearest neighbours (0, with --views: views alone, no neighbour "
                         "search)")
    hp.add_argument("--siamese-max-samples", type=POSITIVE_INT, dest="siamese_max_samples",
                    help="build the Siamese pairs on at most this many points, drawn at "
                         "random (default: all; infimnist: 70,000)")
    mn = p.add_argument_group("MNIST, infinite MNIST and Reuters (paper Table 1)")
    mn.add_argument("--data-dir", help=f"folder with mnist.npz or reuters.h5 "
                    f"(default: ${DATA_DIR_ENV})")
    mn.add_argument("--n", type=POSITIVE_INT,
                    help="infimnist: the number of digits (default 70,000: MNIST itself); "
                         "those beyond 70,000 are deformed training digits, generated as read")
    mn.add_argument("--space", choices=["input", "code"],
                    help="cluster raw pixels or autoencoder codes (default: code)")
    mn.add_argument("--affinity", choices=["siamese", "euclidean"], dest="distance",
                    help="distance in the affinity (default: siamese)")
    mn.add_argument("--ae-weights", help=f"autoencoder weight file (default: the package's "
                    f"{AE_ALL} for mnist, {AE_TRAIN60K} with --split; {AE_INFIMNIST} for "
                    f"infimnist; {AE_REUTERS} for reuters)")
    mn.add_argument("--split", action="store_true",
                    help="MNIST: train on the 60k training split, report test_acc/test_nmi on "
                         "the 10k; Reuters: the same with a random 10%% held out; infimnist: "
                         f"on the {INFIMNIST_FRESH:,} fresh digits that follow the n")
    mn.add_argument("--views", choices=("shift", "deform", "redraw", "none"),
                    help="Siamese distance: also pair each point with transformed copies of "
                         "itself (shift: by up to 2 pixels; deform: infinite MNIST's law; "
                         "redraw: that law drawn afresh on an infinite MNIST digit's source; "
                         "none: no views). Default: the data set's config (shift for mnist, "
                         "redraw for infimnist)")
    mn.add_argument("--n-views", type=POSITIVE_INT, dest="siamese_n_views",
                    help="view positives per point (default: as many as the neighbour "
                         "positives, --siamese-nbrs)")
    mn.add_argument("--deformation-pairs", action="store_true",
                    help="infimnist, Siamese distance: also pair each digit with another one "
                         "made from the same MNIST digit as a Siamese positive (fit's groups; "
                         "the data set's construction, no labels)")
    mn.add_argument("--no-source-pairs", action="store_true",
                    help="infimnist: draw SpectralNet's minibatches as rows alone, not as pairs "
                         "of digits made from one MNIST digit joined in the graph (the default; "
                         "fit's groups, the data set's construction, no labels)")
    mn.add_argument("--grassmann", action="store_true",
                    help="Grassmann distance to the true eigenvectors of the full-data "
                         "Laplacian: the kNN graph that the minibatches sample, with "
                         "neighbour ranks scaled by n / batch size (exact kNN, scipy LOBPCG); "
                         "also (the *_plain results) to those of the affinity applied to all "
                         "points with its ranks as set, the paper's W_full")
    semi = p.add_argument_group("semi-supervised")
    semi.add_argument("--labeled-fraction", type=FRACTION, default=0.0,
                      help="reveal the labels of this random fraction of points (fit's "
                           "partial_labels)")
    semi.add_argument("--label-weight", type=NONNEGATIVE_FLOAT,
                      help="weight of the labeled points' cross-entropy in the loss")
    semi.add_argument("--labeled-share", type=FRACTION,
                      help="share of each minibatch drawn from the labeled points")
    mn.add_argument("--exact-knn", action="store_true",
                    help="after training, exact spectral clustering on the kNN graph of all n "
                         "points (the trained affinity with its ranks as set, the paper's "
                         "W_full; neighbours from the run's backend), for any n: the "
                         "*_plain results; LOBPCG, with an AMG preconditioner (pyamg) above "
                         "200,000 points. With --labeled-fraction, also the harmonic "
                         "function of that graph with the run's labels (harmonic_acc_plain)")
    mn.add_argument("--exact-time-limit", type=POSITIVE_FLOAT, default=3600.0,
                    help="seconds after which --exact-knn's eigensolver gives up (reported as "
                         "exact_plain_timeout; default 3600)")
    out = p.add_argument_group("output")
    out.add_argument("--export", nargs="?", const="export", metavar="DIR",
                     help="after training, export a SavedModel for TF-Serving to "
                          "DIR/DSET/<version>/ (DIR defaults to export/)")
    out.add_argument("--no-exact", action="store_true",
                     help="skip exact spectral clustering (and the Grassmann distance)")
    out.add_argument("--no-plots", action="store_true", help="write no PNG files")
    out.add_argument("--quiet", action="store_true", help="no progress bar")
    dp = p.add_argument_group("data-parallel (tf.distribute)")
    dp.add_argument("--devices", type=POSITIVE_INT, default=1,
                    help="train on N devices of this host (MirroredStrategy): N GPUs if it "
                         "has them, else its CPU split into N logical devices; batch sizes "
                         "must divide by N. With TF_CONFIG set (a cluster of workers, "
                         "MultiWorkerMirroredStrategy) every worker runs this same "
                         "command with the same --out, and only the chief writes there")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


#: Flags that set a parameter of the affinity object, and of the Siamese embedding.
AFFINITY_FLAGS = ("n_nbrs", "scale_nbr", "scale")
SIAMESE_FLAGS = {"siamese_max_epochs": "schedule__max_epochs",
                 "siamese_steps_per_epoch": "schedule__steps_per_epoch",
                 "siamese_n_nbrs": "n_nbrs", "siamese_dtype_policy": "dtype_policy",
                 "siamese_n_views": "n_views", "siamese_max_samples": "max_samples",
                 "patience": "schedule__patience"}
#: Flags that set a parameter of SpectralNet's schedule.
SCHEDULE_FLAGS = ("learning_rate", "patience", "max_epochs", "steps_per_epoch")


def build_config(args):
    """SpectralNet keyword arguments: the data set's config, then the flags.
    The affinity is always an object (``--kernel`` picks its class,
    ``--n-nbrs``, ``--scale-nbr`` and ``--scale`` its parameters), so that the
    record names every setting; the ``--siamese-*`` flags and ``--patience``
    (shared by both trainings) set the ``SiameseEmbedding``'s."""
    try:
        config = config_for(args.dset, args.preset)
    except ValueError as err:
        raise UsageError(f"--preset {args.preset}: {err}") from None
    if args.hidden:
        config["hidden_units"] = tuple(args.hidden)
    for key in ("laplacian", "batch_size", "init", "output_activation",
                "label_weight", "labeled_share", "dtype_policy"):
        value = getattr(args, key)
        if value is not None:
            config[key] = value
    schedule = {key: getattr(args, key) for key in SCHEDULE_FLAGS if getattr(args, key) is not None}
    if schedule:  # a copy: the config's object stays as it is
        config["schedule"] = clone(config.get("schedule") or Schedule()).set_params(**schedule)
    affinity = config.get("affinity", "knn")
    if args.affinity is not None and args.affinity != affinity:  # --kernel: another class
        kept = {} if isinstance(affinity, str) else affinity.get_params(deep=False)
        affinity = AFFINITIES[args.affinity](**{key: value for key, value in kept.items()
                                                if key in ("scale_nbr", "scale")})
    affinity = make_affinity(affinity)  # a copy: the config's object stays as it is
    flags = {key: getattr(args, key) for key in AFFINITY_FLAGS if getattr(args, key) is not None}
    if "n_nbrs" in flags and "n_nbrs" not in affinity.get_params():
        flags.pop("n_nbrs")  # the full affinity has no neighbour count (as before)
    config["affinity"] = affinity.set_params(**flags)
    if args.distance == "euclidean":
        config["affinity_embedding"] = None
    elif args.distance == "siamese" and not isinstance(config.get("affinity_embedding"),
                                                       SiameseEmbedding):
        config["affinity_embedding"] = "siamese"  # the config's own Siamese net is kept
    embedding = make_affinity_embedding(config.get("affinity_embedding"))
    if isinstance(embedding, SiameseEmbedding):
        embedding.set_params(**{name: getattr(args, flag) for flag, name in SIAMESE_FLAGS.items()
                                if getattr(args, flag) is not None})
        if args.views is not None:
            embedding.set_params(views=None if args.views == "none"
                                 else HARNESS_VIEWS[args.views]())
        if args.deformation_pairs:
            embedding.set_params(group_pairs=True)
        if isinstance(embedding.views, Redraw) and args.data_dir:  # the sources' folder
            embedding.set_params(views=Redraw(data_dir=args.data_dir))
    elif args.views not in (None, "none") or args.siamese_n_views is not None:
        flag = f"--views {args.views}" if args.views else f"--n-views {args.siamese_n_views}"
        raise UsageError(f"{flag} pairs views in the Siamese distance; it needs --affinity "
                         "siamese.")
    config["affinity_embedding"] = embedding
    return config


def split(args, x, y):
    """``x, y, x_test, y_test``: all data, or the training part and the
    held-out part for ``--split`` (MNIST: 60k/10k; Reuters: a random 10%
    held out; infinite MNIST: the fresh digits after the n)."""
    if not args.split:
        return x, y, None, None
    if args.dset == "mnist":
        return x[:MNIST_N_TRAIN], y[:MNIST_N_TRAIN], x[MNIST_N_TRAIN:], y[MNIST_N_TRAIN:]
    if args.dset == "infimnist":
        fresh = InfiMNIST(x.images, x.base_labels, INFIMNIST_FRESH, start=x.start + len(x))
        return x, y, fresh, fresh.labels
    if args.dset == "reuters":
        held_out = np.random.default_rng(args.seed).uniform(size=len(y)) < REUTERS_TEST_FRACTION
        train, test = np.flatnonzero(~held_out), np.flatnonzero(held_out)
        return Rows(x, train), y[train], Rows(x, test), y[test]
    raise UsageError("--split is defined for --dset mnist (60k/10k), infimnist (fresh digits) "
                     "and reuters (90%/10%).")


def default_ae(args):
    if args.dset == "reuters":
        return pretrained_path(AE_REUTERS)
    if args.dset == "infimnist":
        # Its fresh digits deform training digits, which the file saw, so also with --split.
        return pretrained_path(AE_INFIMNIST)
    return pretrained_path(AE_TRAIN60K if args.split else AE_ALL)


class Job:
    """A run's inputs, checked before its directory is claimed."""

    def __init__(self, args, strategy=None):
        self.args = args
        t = time.perf_counter()
        extra = {"data_dir": args.data_dir} if args.dset in CODE_SPACE else {}
        if args.n is not None:
            if args.dset != "infimnist":
                raise UsageError(f"--n {args.n}: only --dset infimnist takes a size.")
            extra["n"] = args.n
        try:
            if args.dset == "infimnist":  # generated by the harness, not a package data set
                x, y = infimnist.load(seed=args.seed, **extra)
                self.k = 10
            else:
                x, y, self.k = load_dataset(args.dset, seed=args.seed, **extra)
        except (FileNotFoundError, ValueError, OSError) as err:
            raise UsageError(str(err)) from None
        self.x, self.y, self.x_test, self.y_test = split(args, x, y)
        # Infinite MNIST's sources, read before input space turns the rows into an array.
        # SpectralNet's graph joins the digits of one source (and with
        # --deformation-pairs the Siamese pairs do too): fit's groups.
        self.groups = (self.x.sources if args.dset == "infimnist" and not args.no_source_pairs
                       else None)
        self.space = args.space or ("code" if args.dset in CODE_SPACE else "input")
        if self.space == "input" and is_lazy(self.x):
            self.x = map_batches(None, self.x)  # SpectralNet trains on the raw rows: in memory
        self.data_seconds = time.perf_counter() - t
        config = build_config(args)
        self.encoder_file = None
        if self.space == "code":
            if args.dset not in CODE_SPACE:
                raise UsageError(f"--space code needs an autoencoder; only "
                                 f"{', '.join(CODE_SPACE)} have one.")
            self.encoder_file = args.ae_weights or default_ae(args)
            try:
                config["encoder"] = load_encoder(self.encoder_file)
            except (OSError, ValueError, KeyError) as err:
                hint = (" Train one with scripts/pretrain_ae.py --dset reuters and pass it with "
                        "--ae-weights (or VaDE's ae_reuters10k weights)."
                        if args.dset == "reuters" and not args.ae_weights else "")
                raise UsageError(f"--ae-weights {self.encoder_file}: {err}{hint}") from None
        self.net = SpectralNet(self.k, random_state=args.seed, verbose=0 if args.quiet else 1,
                               distribute=strategy, **config)
        try:  # the estimator's own checks of its parameters against n, before any work
            self.plan = self.net.plan(len(self.x), self.x.shape[1])
        except ValueError as err:
            raise UsageError(str(err)) from None
        self.batch_size = self.plan.batch_size
        self.check_reference_size()
        views = getattr(self.plan.affinity_embedding, "views", None)
        if views is not None:  # a view the rows cannot take: one line, before any work
            try:
                make_view(views)(np.asarray(self.x[:2], np.float32), np.arange(2), 0)
            except ValueError as err:
                raise UsageError(f"--views {args.views or views}: {err}") from None
        if args.deformation_pairs:
            distance = "siamese" if isinstance(self.plan.affinity_embedding,
                                               SiameseEmbedding) else "euclidean"
            if args.dset != "infimnist" or distance != "siamese":
                raise UsageError(f"--deformation-pairs needs --dset infimnist with the Siamese "
                                 f"affinity, got --dset {args.dset} --affinity {distance}.")
            if len(self.x) <= N_ORIGINAL:
                raise UsageError(f"--deformation-pairs pairs deformed digits, which come after "
                                 f"MNIST's {N_ORIGINAL:,}; got --n {len(self.x)}.")
            if args.no_source_pairs:
                raise UsageError("--deformation-pairs gives SpectralNet's graph the pairs of one "
                                 "source too; it cannot go with --no-source-pairs.")

    def disk_needs(self, out):
        """Bytes the run writes, by directory: checkpoints (weights and one
        RMSprop slot per variable, float32; each phase's latest kept, and a
        second copy while one is written) and the export. None of it grows with
        n: infinite MNIST digits are generated, never stored."""
        net = self.net
        code_dim = (int(net.encoder.output_shape[-1]) if net.encoder is not None
                    else int(self.x.shape[1]))
        spectral = _dense_params([code_dim, *self.plan.hidden_units, self.k]) + self.k ** 2
        embedding = self.plan.affinity_embedding
        siamese = (_dense_params([code_dim, *embedding.hidden_units])
                   if isinstance(embedding, SiameseEmbedding) else 0)
        needs = {out: 8 * (spectral + siamese) + 8 * max(spectral, siamese) + DISK_MARGIN}
        if self.args.export:
            encoder = net.encoder.count_params() if net.encoder is not None else 0
            export = 4 * (encoder + spectral) + DISK_MARGIN
            needs[self.args.export] = needs.get(self.args.export, 0) + export
        return needs

    def check_disk(self, out):
        """Refuse, before any work, a run whose files would not fit on disk."""
        for path, need in self.disk_needs(out).items():
            existing = os.path.abspath(path)
            while not os.path.exists(existing):
                existing = os.path.dirname(existing)
            free = shutil.disk_usage(existing).free
            if need > free:
                flag = "--export" if path == self.args.export else "--out"
                raise UsageError(
                    f"{flag} {path}: the run writes about {need / 2**20:.0f} MiB there "
                    f"(checkpoints, export, plots; the same at any --n), but {existing} has "
                    f"only {free / 2**20:.0f} MiB free.")

    def check_reference_size(self):
        """Refuse, before training, an exact reference graph (``exact_reference``)
        too large to build: the full-data graph that minibatches sample."""
        n = len(self.x)
        if not (self.args.grassmann or (not self.args.no_exact and n <= DENSE_MAX_N)):
            return
        per_point = max(self.plan.affinity.full_data_ranks(n, self.batch_size).values())
        if n * per_point > MAX_REFERENCE_EDGES:
            raise UsageError(
                f"the exact reference graph would have {n * per_point:,} edges "
                f"(n={n}, {per_point} neighbours each), more than {MAX_REFERENCE_EDGES:,}; "
                "drop --grassmann for this data set."
            )


def _dense_params(sizes):
    """Weights and biases of a chain of Dense layers of these sizes."""
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))


def main(argv=None):
    """``python scripts/run.py``: ``run_command``, exit status 0."""
    run_command(argv)
    return 0


def run_command(argv=None):
    """The command: parse, check the inputs, claim the run directory, run;
    returns the results dict. User errors exit with status 2 and one line
    on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        resume = args.resume is not None
        if resume:
            out = args.resume
            args = parse_args(rundir.resumable_args(out))
        else:
            if args.dset is None:
                raise UsageError("--dset is required (or --resume DIR).")
            out = args.out or os.path.join(
                "runs", f"{args.dset}-{datetime.datetime.now():%Y%m%d-%H%M%S}")
            if args.out is None:
                argv += ["--out", out]
        strategy = make_strategy(args)  # before any TensorFlow op, as tf.distribute asks
        chief = distribute.is_chief(strategy)
        # The chief's checks; every worker stops with the chief's reason.
        refusals = (UsageError, rundir.RunDirectoryError)
        if not resume:
            distribute.chief_check(lambda: rundir.check_new(out), refusals, strategy)
        job = Job(args, strategy)
        distribute.chief_check(lambda: job.check_disk(out), refusals, strategy)
        if not chief:  # the chief claims and writes the run directory
            return run(job, out, resume, write=False)
        with rundir.claim(out, argv, resume=resume):
            return run(job, out, resume)
    except (UsageError, rundir.RunDirectoryError) as err:
        print(f"{PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)  # one line
        raise SystemExit(2) from None
    except (*distribute.PEER_FAILURES, tf.errors.InternalError) as err:
        if not distribute.is_peer_failure(err):
            raise
        print(f"{PROG}: error: {distribute.peer_failure(err)}; start every worker again with "
              f"--resume {out}", file=sys.stderr)
        raise SystemExit(1) from None


def make_strategy(args):
    """The run's tf.distribute strategy (``distribute.strategy_for``), or None."""
    try:
        if args.devices > 1 and distribute.cluster_from_env():
            raise UsageError("--devices and TF_CONFIG exclude each other: a multi-worker run "
                             "uses one device per worker; drop --devices.")
        return distribute.strategy_for(args.devices)
    except ValueError as err:  # TF_CONFIG
        raise UsageError(str(err)) from None
    except RuntimeError as err:  # devices already initialized (only in a longer-lived process)
        raise UsageError(f"--devices {args.devices}: {err}") from None


#: k-means runs on the eigenvectors of --exact-knn's graph (``exact_reference``).
EXACT_KMEANS_RUNS = 5


def exact_reference(net, affinity, z, y, seed, batch_size, neighbors="exact", time_limit=None,
                    parts=None, kmeans_runs=1, partial_labels=None):
    """Exact spectral clustering of all of z on the graph that SpectralNet's
    minibatches of ``batch_size`` sample (``Affinity.for_full_data``: neighbour
    ranks scaled by n / batch size); its eigenvectors are, approximately, the
    ones the net approximates. With ``batch_size=len(z)`` the ranks stay as
    set: the affinity applied to all points at once, the paper's W_full
    (Sec. 3.1). k-means clusters the eigenvectors' rows as ``SpectralNet.fit``
    clusters its embedding's (``centroids.NORMALIZE_ROWS``). Neighbours from
    ``neighbors`` (exact search by default); the
    eigensolver gives up after ``time_limit`` seconds above ``AMG_MIN_N``
    points (``spectral.EigensolverTimeout``). Returns (labels, eigenvectors,
    figures).

    The figures also say how well the graph determines its clustering,
    without labels: the k + 1 smallest eigenvalues (the solver converges the
    (k+1)-th too; a small gap after the k-th leaves the k-dimensional
    eigenspace ill-determined) and the sizes of the clusters. For the record,
    with labels: the mean ``edge_purity`` of the graph, in all and in each of
    ``parts`` (name -> rows; None where no point of a part has an edge); and,
    with ``kmeans_runs`` > 1, k-means' inertia on all points and ACC from
    that many seeds (the first gives the labels).

    Given ``partial_labels`` that label some points (a semi-supervised run's
    own), also the ACC of the harmonic function of the same graph with those
    labels held (``spectral.harmonic_labels``): the exact minimiser of the
    loss with the labels, the semi-supervised counterpart of exact spectral
    clustering, on the graph exact SC cuts here (an affinity fitted with
    labels keeps its label coordinates: the graph as the fit saw it)."""
    if not hasattr(affinity, "scale_"):
        affinity.fit(z, batch_size, seed=seed)
    k = net.n_clusters
    full = affinity.for_full_data(len(z), batch_size)  # its size was checked by Job
    w = full.graph(z, neighbors)
    vals, vecs = spectrum(w, min(k + 1, len(z)), net.laplacian, time_limit=time_limit)
    vecs = np.ascontiguousarray(vecs[:, :k])
    # Does k-means' own objective, from other seeds, find another partition?
    runs = [kmeans_labels_inertia(vecs, k, seed + i, NORMALIZE_ROWS)
            for i in range(kmeans_runs)]
    labels = runs[0][0]
    purity = edge_purity(w, y)

    def mean(values):
        return float(np.nanmean(values)) if np.isfinite(values).any() else None

    figures = {
        "exact_acc": acc(y, labels), "exact_nmi": nmi(y, labels), "exact_graph": full.ranks(),
        "exact_eigenvalues": [float(v) for v in vals],
        "exact_cluster_sizes": sorted(np.bincount(labels, minlength=k).tolist(), reverse=True),
        "exact_edge_purity": {name: mean(purity[r])
                              for name, r in {"all": slice(None), **(parts or {})}.items()}}
    if partial_labels is not None and (partial_labels >= 0).any():
        figures["harmonic_acc"] = acc(y, harmonic_labels(w, partial_labels, k))
    if kmeans_runs > 1:
        figures["exact_kmeans_runs"] = [{"seed": seed + i, "inertia": inertia,
                                         "acc": acc(y, found)}
                                        for i, (found, inertia) in enumerate(runs)]
    return labels, vecs, figures


def record_params(net):
    """``net.get_params()`` for results.json: each part object (the affinity,
    the Siamese embedding, the schedules) as its class name, beside its own
    parameters under nested keys (``affinity__n_nbrs``), a schedule left None
    as the ``Schedule`` it stands for; tuples as lists."""
    net = type(net)(**net.get_params(deep=False))  # a copy: the run's net stays as it is
    if net.schedule is None:
        net.set_params(schedule=Schedule())
    embedding = net.affinity_embedding
    if isinstance(embedding, SiameseEmbedding) and embedding.schedule is None:
        net.set_params(affinity_embedding__schedule=Schedule(**SIAMESE_SCHEDULE))
    return {key: type(value).__name__ if hasattr(value, "get_params")
            else list(value) if isinstance(value, tuple) else value
            for key, value in net.get_params(deep=True).items()}


def _without_seconds(history):
    return {key: v for key, v in history.items() if key not in ("seconds", "view_seconds")}


def run(job, out, resume=False, write=True):
    """One run into the claimed directory ``out`` (see main). ``write=False``
    (a non-chief worker): the same computation, nothing written."""
    args, x, y, k = job.args, job.x, job.y, job.k
    t0 = time.perf_counter() - job.data_seconds
    seconds = {"data": round(job.data_seconds, 3)}
    rss = {"data": peak_rss_gib()}  # the peak so far after each phase: where it rose

    def phase(name, start):
        seconds[name] = round(time.perf_counter() - start, 3)
        rss[name] = peak_rss_gib()
        print(f"[{name}] {seconds[name]:.1f}s, peak RSS {rss[name]:.2f} GiB", flush=True)

    print(f"[data] {job.data_seconds:.1f}s", flush=True)
    net = job.net.set_params(checkpoint_dir=os.path.join(out, "checkpoints"))
    siamese = isinstance(job.plan.affinity_embedding, SiameseEmbedding)
    results = {"dataset": args.dset, "n": int(len(x)), "n_clusters": k, "space": job.space,
               "affinity": "siamese" if siamese else "euclidean"}
    if job.encoder_file:  # which autoencoder made the code space
        results["autoencoder"] = {"file": os.path.basename(job.encoder_file),
                                  "sha256": sha256(job.encoder_file)}

    eigvecs = exact_labels = None
    if not args.no_exact and len(x) <= DENSE_MAX_N:
        t = time.perf_counter()
        # Before training, so the history tracks the Grassmann distance; in
        # code space the exact reference's own (small) encoding pass.
        z_small = x if net.encoder is None else map_batches(net.encoder, x)
        exact_labels, eigvecs, figures = exact_reference(net, net.make_affinity(), z_small, y,
                                                         args.seed, job.batch_size)
        results.update(figures)
        phase("exact", t)

    known = None
    if args.labeled_fraction > 0:
        # A stream of its own: the seed alone also drives the generated data
        # sets, whose points a draw from the same stream would pick by shape.
        known = partial_labels(y, args.labeled_fraction, args.seed)
        results["labeled"] = int((known >= 0).sum())

    t = time.perf_counter()
    if args.deformation_pairs:
        results["deformation_pairs"] = True
    if job.groups is not None:
        results["source_pairs"] = True
    net.fit(x, partial_labels=known, groups=job.groups, eigvecs=eigvecs, resume=resume)
    phase("train", t)
    # The points in the space SpectralNet clusters: the rows, or the codes
    # fit computed (encoding once; its seconds are part of "train").
    z = x if net.encoder is None else net.codes_
    if "encode_seconds" in net.history_:  # part of "train", as "siamese" and "spectral" are
        seconds["fit_encode"] = round(net.history_["encode_seconds"], 3)
    if hasattr(net, "siamese_history_"):
        seconds["siamese"] = round(net.siamese_history_["seconds"], 3)
        if "view_seconds" in net.siamese_history_:  # made and encoded before the Siamese phase
            seconds["siamese_views"] = round(net.siamese_history_["view_seconds"], 3)
    seconds["spectral"] = round(net.history_["seconds"], 3)
    if "init_seconds" in net.history_:  # --init spectral, before the epochs
        seconds["warm_start"] = round(net.history_["init_seconds"], 3)
    labels = net.labels_
    if net.group_labels_ is not None:
        # The digits of one source share its class: their cluster from their
        # mean row (fit's group_labels_); each digit alone recorded beside it.
        results.update(acc_alone=acc(y, labels), nmi_alone=nmi(y, labels))
        labels = net.group_labels_
    results.update(acc=acc(y, labels), nmi=nmi(y, labels))
    # The partition's shape beside its ACC: a cluster twice a class's size is
    # two classes merged, whatever the matching made of them.
    results.update(cluster_sizes=np.bincount(labels, minlength=k).tolist(),
                   class_sizes=np.bincount(y, minlength=k).tolist())
    if job.x_test is not None:
        t = time.perf_counter()
        test_labels = net.predict(job.x_test)
        results.update(n_test=int(len(job.y_test)), test_acc=acc(job.y_test, test_labels),
                       test_nmi=nmi(job.y_test, test_labels))
        phase("test", t)
    t = time.perf_counter()
    # The paper's k-means (Sec. 3.3), on the embedding's rows as they are: the
    # same net, the other rounding (fit scales the rows to unit length).
    raw_centers = fit_centroids(net.embedding_, k, args.seed)
    raw_labels = assign(net.embedding_, raw_centers)
    results.update(raw_rows_acc=acc(y, raw_labels), raw_rows_nmi=nmi(y, raw_labels))
    if job.x_test is not None:
        raw_test = assign(net.transform(job.x_test), raw_centers)
        results.update(raw_rows_test_acc=acc(job.y_test, raw_test),
                       raw_rows_test_nmi=nmi(job.y_test, raw_test))
    phase("raw_rows", t)
    # Infinite MNIST beyond 70,000: MNIST's own digits and the deformed ones.
    parts = ({"original": slice(0, N_ORIGINAL), "deformed": slice(N_ORIGINAL, None)}
             if args.dset == "infimnist" and len(y) > N_ORIGINAL else None)
    plain_labels = None
    if args.grassmann and eigvecs is None:
        t = time.perf_counter()
        # After training: the graph in the trained Siamese distance, if any.
        _, eigvecs, figures = exact_reference(net, net.affinity_, z, y, args.seed, job.batch_size)
        results.update(figures)
        phase("grassmann", t)
    if eigvecs is not None:
        results["grassmann"] = grassmann(net.embedding_, eigvecs)
    if args.grassmann:
        t = time.perf_counter()
        # Like for like with the paper's figure: the same affinity on all n
        # points at once, its ranks unscaled (the paper's W_full).
        plain_labels, plain, figures = exact_reference(net, net.affinity_, z, y, args.seed,
                                                       len(z), parts=parts, partial_labels=known)
        results.update({f"{key}_plain": value for key, value in figures.items()},
                       grassmann_plain=grassmann(net.embedding_, plain))
        phase("grassmann_plain", t)
    elif args.exact_knn:
        t = time.perf_counter()
        neighbors = getattr(job.plan.affinity_embedding, "neighbors", "auto")
        # The same graph at any n, from the run's (approximate) neighbours.
        try:
            plain_labels, _, figures = exact_reference(net, net.affinity_, z, y, args.seed,
                                                       len(z), neighbors=neighbors,
                                                       time_limit=args.exact_time_limit,
                                                       parts=parts,
                                                       kmeans_runs=EXACT_KMEANS_RUNS,
                                                       partial_labels=known)
            results.update({f"{key}_plain": value for key, value in figures.items()})
        except EigensolverTimeout as err:
            results["exact_plain_timeout"] = str(err)
        phase("exact_plain", t)

    t = time.perf_counter()
    km_labels = kmeans_labels(z, k, args.seed)
    results.update(kmeans_acc=acc(y, km_labels), kmeans_nmi=nmi(y, km_labels))
    phase("kmeans", t)
    if known is not None and results["labeled"] > 0 and not is_lazy(z):
        t = time.perf_counter()
        # The labels alone, no graph: a classifier of the labeled points in
        # the space SpectralNet clusters, the bar a fit with labels must clear.
        results["svm_acc"] = supervised_acc(z, y, known)
        phase("svm", t)
    if parts:
        # Each method's ACC on each part, under its matching on all points.
        preds = {"acc": labels, "raw_rows_acc": raw_labels, "kmeans_acc": km_labels,
                 "exact_acc_plain": plain_labels,
                 "acc_alone": net.labels_ if "acc_alone" in results else None}
        right = {key: matched(y, pred) == y for key, pred in preds.items() if pred is not None}
        results["by_part"] = {part: {key: float(r[rows].mean()) for key, r in right.items()}
                              for part, rows in parts.items()}

    if write and not args.no_plots:
        t = time.perf_counter()
        from spectralnet_tf import plots
        from spectralnet_tf.datasets import MNIST_IMAGE_SHAPE

        image_shape = MNIST_IMAGE_SHAPE if args.dset in ("mnist", "infimnist") else None
        if image_shape is not None:  # a scatter of 784-d images shows nothing; the digits do
            plots.plot_cluster_images(os.path.join(out, "clusters.png"), x, labels,
                                      image_shape)
            plots.plot_confusion(os.path.join(out, "confusion.png"), y, labels)
        else:
            panels = {"SpectralNet": labels}
            if exact_labels is not None:
                panels["spectral clustering"] = exact_labels
            panels["k-means"] = km_labels
            x_plot = z if is_lazy(x) else x
            if len(x) > plots.MAX_SCATTER_POINTS:  # a readable scatter of MNIST-sized data
                keep = np.random.default_rng(0).choice(len(x), plots.MAX_SCATTER_POINTS,
                                                       replace=False)
                x_plot, panels = x_plot[keep], {key: v[keep] for key, v in panels.items()}
            plots.plot_clusters(os.path.join(out, "clusters.png"), x_plot, panels)
        plots.plot_embedding(os.path.join(out, "embedding.png"), net.embedding_, labels)
        if eigvecs is not None:
            plots.plot_eigenvectors(os.path.join(out, "eigenvectors.png"), net.embedding_, eigvecs)
        plots.plot_training(os.path.join(out, "training.png"), net.history_)
        phase("plots", t)

    if write and args.export:
        t = time.perf_counter()
        results["export"] = net.export(args.export, name=args.dset)
        phase("export", t)

    seconds["total"] = round(time.perf_counter() - t0, 3)
    results["seconds"] = seconds
    results["peak_rss_gib"] = peak_rss_gib()
    results["peak_rss_gib_after"] = rss
    results["epochs"] = len(net.history_["loss"])
    results["iterations"] = net.history_["iteration"][-1]
    params = record_params(net)
    params["encoder"] = job.encoder_file
    params["distribute"] = distribute.describe(net.distribute)
    results["config"] = {**params, "seed": args.seed, "scale_": net.affinity_.scale_}
    plan = job.plan  # what "auto" and None resolved to
    results["resolved"] = {"hidden_units": list(plan.hidden_units), "max_epochs": plan.max_epochs,
                           "steps_per_epoch": plan.steps_per_epoch,
                           "batch_size": plan.batch_size,
                           "dtype_policy": resolve_dtype_policy(net.dtype_policy)}
    if siamese:
        results["resolved"]["siamese_dtype_policy"] = resolve_dtype_policy(
            job.plan.affinity_embedding.dtype_policy)
    results["history"] = _without_seconds(net.history_)
    if hasattr(net, "siamese_history_"):  # label-free evidence for the Siamese budget
        results["siamese_history"] = _without_seconds(net.siamese_history_)
    if write:
        with atomic_file(os.path.join(out, rundir.RESULTS)) as f:
            json.dump(results, f, indent=2)
    summary = (
        f"{args.dset}: n={len(x)} k={k} ACC={results['acc']:.4f} NMI={results['nmi']:.4f}"
    )
    if "acc_alone" in results:
        summary += f" (each digit alone {results['acc_alone']:.4f})"
    if "test_acc" in results:
        summary += f" test ACC={results['test_acc']:.4f} NMI={results['test_nmi']:.4f}"
    if "grassmann" in results:
        summary += f" grassmann={results['grassmann']:.4f}"
    if "grassmann_plain" in results:
        summary += f" (plain graph {results['grassmann_plain']:.4f})"
    if "exact_acc" in results:
        summary += f" | exact ACC={results['exact_acc']:.4f}"
    summary += f" | k-means ACC={results['kmeans_acc']:.4f} | {seconds['total']:.0f}s -> {out}"
    print(summary)
    return results


if __name__ == "__main__":
    sys.exit(main())
