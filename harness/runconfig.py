"""``scripts/run.py``'s command line and the config it resolves to: its
flags (``build_parser``), and the SpectralNet keyword arguments that a data
set's config and the flags make (``build_config``). ``reproduce`` runs them.
"""

import argparse

from spectralnet_tf.affinity import AFFINITIES, SCALES
from spectralnet_tf.cli import layer_widths
from spectralnet_tf.datasets import DATA_DIR_ENV, DATASETS
from spectralnet_tf.estimator import make_affinity, make_affinity_embedding, make_spectral_schedule
from spectralnet_tf.initializers import INITIALIZERS
from spectralnet_tf.losses import LAPLACIANS
from spectralnet_tf.networks import DTYPE_POLICIES, OUTPUT_ACTIVATIONS
from spectralnet_tf.siamese import SiameseEmbedding

from .configs import HARNESS_VIEWS, config_for
from .infimnist import Redraw

PROG = "run.py"
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
        config["schedule"] = make_spectral_schedule(config.get("schedule")).set_params(**schedule)
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
