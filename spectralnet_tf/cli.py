"""The ``spectralnet`` command: cluster your own data.

    spectralnet fit DATA --n-clusters K --out DIR [hyper-parameter flags]
    spectralnet predict DIR DATA [-o FILE]
    spectralnet transform DIR DATA [-o FILE]
    spectralnet export DIR EXPORT_DIR [--name NAME]

``fit`` writes DIR as ``SpectralNet.save`` does (``SpectralNet.load(DIR)``
reads it) plus ``labels.csv``, ``summary.json``, ``embedding.png`` and
``spectrum.png``, all at once: everything goes into a temporary sibling that is
renamed into place at the end (``atomic.py``). Input the user can fix is one
line on stderr and exit status 2.

TensorFlow is imported only by the subcommands that need it, so ``--help``
answers at once. The paper's experiments are not here: they are
``python scripts/run.py --dset mnist`` in the repository.
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time

from .datafiles import (DataError, one_line, read_graph, read_labels, read_matrix, write_labels,
                        write_matrix)

PROG = "spectralnet"
#: The Laplacian's spectrum is plotted on a random subsample of at most this many points.
SPECTRUM_POINTS = 2000
LAPLACIANS = ("unnormalized", "normalized")  # as spectralnet_tf.losses.LAPLACIANS (which imports TF)
LABELS_FILE, SUMMARY_FILE = "labels.csv", "summary.json"
EMBEDDING_PNG, SPECTRUM_PNG = "embedding.png", "spectrum.png"

DATA_HELP = ("a .npy file; .npz (its only array, or --key NAME, or FILE.npz:NAME); .csv or "
             ".tsv of numbers (a non-numeric first row is a header); or FILE.h5:DATASET "
             "(HDF5, read from disk as needed)")


class UsageError(Exception):
    """Input the user can fix; ``main`` prints it as one line and exits with 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block)."""

    def error(self, message):
        raise UsageError(f"{message} (see {self.prog} --help)")


# -- argument types -----------------------------------------------------------
def _int_at_least(low):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value
    return parse


def _n_clusters(text):
    if text == "auto":
        return text
    try:
        return _int_at_least(2)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 2 or 'auto', got {text!r}") from None


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def layer_widths(text):
    """argparse type of a hidden-layer flag: "256,256,128" -> (256, 256, 128)."""
    try:
        units = tuple(int(u) for u in text.split(","))
    except ValueError:
        units = ()
    if not units or min(units) < 1:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated positive integers such as 256,256,128, got {text!r}")
    return units


def build_parser():
    parser = _Parser(
        prog=PROG,
        description="SpectralNet (Shaham et al., ICLR 2018): spectral clustering with a deep "
                    "network, on your own data. Fit a model, then use it on new points.",
        epilog="Each command has its own --help (spectralnet fit --help lists the "
               "hyper-parameters). The paper's experiments: python scripts/run.py --dset mnist, "
               "in the repository.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_Parser)

    fit = sub.add_parser(
        "fit", help="train a model on DATA and write it, with the clusters, to DIR",
        description="Train SpectralNet on DATA and write DIR: the model (SpectralNet.load(DIR) "
                    f"reads it), {LABELS_FILE} (the cluster of each row, one a line), "
                    f"{SUMMARY_FILE}, {EMBEDDING_PNG} and {SPECTRUM_PNG}. DIR must be new or "
                    "empty; it appears complete or not at all.")
    fit.add_argument("data", metavar="DATA", help=DATA_HELP)
    fit.add_argument("-k", "--n-clusters", type=_n_clusters, required=True, metavar="K",
                     help="number of clusters (2 <= K <= rows of DATA), or 'auto': the largest "
                          f"eigengap of the graph among 2..20 ({SPECTRUM_PNG} marks it)")
    fit.add_argument("-o", "--out", required=True, metavar="DIR", help="new output directory")
    fit.add_argument("--key", metavar="NAME", help="the array of an .npz DATA file")
    fit.add_argument("--labels", metavar="FILE",
                     help="true classes (one integer a line, or any DATA format), only to "
                          "score the clusters: adds ACC and NMI to summary.json")
    fit.add_argument("--partial-labels", metavar="FILE",
                     help="known clusters of some rows, -1 for the others (semi-supervised)")
    fit.add_argument("--graph", metavar="FILE.npz",
                     help="your own affinity between the rows of DATA (scipy.sparse.save_npz; "
                          "symmetric, non-negative, no isolated row): used instead of the "
                          "Gaussian kNN graph")
    fit.add_argument("--encoder", metavar="FILE.h5",
                     help="autoencoder weights (as pretrained_ae/): cluster the codes of DATA")
    hyper = fit.add_argument_group(
        "hyper-parameters", "each defaults to SpectralNet's own default when not given")
    hyper.add_argument("--hidden", type=layer_widths, metavar="W1,W2,...",
                       help="hidden layer widths, e.g. 256,256,128")
    hyper.add_argument("--epochs", type=_int_at_least(1), metavar="N", help="most epochs")
    hyper.add_argument("--batch-size", type=_int_at_least(2), metavar="N",
                       help="points per minibatch")
    hyper.add_argument("--lr", type=_positive_float, metavar="RATE", help="learning rate")
    hyper.add_argument("--n-nbrs", type=_int_at_least(1), metavar="N",
                       help="neighbours each point is connected to in the affinity graph")
    hyper.add_argument("--scale-nbr", type=_int_at_least(1), metavar="N",
                       help="the neighbour whose distance sets the Gaussian kernel's scale")
    hyper.add_argument("--scale", choices=("global", "local"),
                       help="one kernel scale for all points, or one per point")
    hyper.add_argument("--laplacian", choices=LAPLACIANS, help="graph Laplacian")
    hyper.add_argument("--siamese", action="store_true",
                       help="measure distances with a Siamese net trained on neighbour pairs")
    hyper.add_argument("--views", choices=("shift",),
                       help="a transformation the clusters survive: the Siamese net (implied) "
                            "also pairs each point with transformed copies of itself. shift: "
                            "square images moved by up to 2 pixels")
    hyper.add_argument("--siamese-max-samples", type=_int_at_least(2), metavar="N",
                       help="build the Siamese net's pairs on at most N rows drawn at random "
                            "(implies the Siamese net; default: every row). Its training "
                            "budget is fixed, so above some size more pairs mostly go unseen")
    hyper.add_argument("--tensorboard", metavar="LOGDIR",
                       help="write training curves for TensorBoard (tensorboard --logdir LOGDIR)")
    hyper.add_argument("--seed", type=_int_at_least(0), default=0,
                       help="random seed (default 0): the same seed, the same model")
    talk = fit.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    talk.add_argument("-v", "--verbose", action="store_true", help="print every epoch")
    fit.set_defaults(func=cmd_fit)

    for name, what, output in (
            ("predict", "the cluster of each row of DATA", "one integer a line; default: stdout"),
            ("transform", "the embedding of each row of DATA (K numbers a row)",
             ".npy, or .csv/.tsv by extension; default: CSV to stdout")):
        cmd = sub.add_parser(name, help=what, description=f"Write {what}, by the model in DIR.")
        cmd.add_argument("model", metavar="DIR", help="a directory written by spectralnet fit")
        cmd.add_argument("data", metavar="DATA", help=DATA_HELP)
        cmd.add_argument("--key", metavar="NAME", help="the array of an .npz DATA file")
        cmd.add_argument("-o", "--output", metavar="FILE", help=output)
        cmd.set_defaults(func=cmd_predict if name == "predict" else cmd_transform)

    export = sub.add_parser(
        "export", help="export the model in DIR as a SavedModel for TensorFlow Serving",
        description="Write EXPORT_DIR/NAME/<next version>/ (a SavedModel: input x, outputs "
                    "embedding, cluster, distances) and EXPORT_DIR/models.config.")
    export.add_argument("model", metavar="DIR", help="a directory written by spectralnet fit")
    export.add_argument("export_dir", metavar="EXPORT_DIR", help="the model server's base folder")
    export.add_argument("--name", default="spectralnet", help="model name (default: spectralnet)")
    export.set_defaults(func=cmd_export)
    return parser


def estimator_params(args):
    """SpectralNet's parameters from the flags: only those the user gave, so
    that everything else keeps the estimator's own defaults."""
    params = {"n_clusters": args.n_clusters, "random_state": args.seed}
    for flag, param in (("hidden", "hidden_units"), ("epochs", "schedule__max_epochs"),
                        ("batch_size", "batch_size"), ("lr", "schedule__learning_rate"),
                        ("laplacian", "laplacian"), ("tensorboard", "log_dir")):
        if getattr(args, flag) is not None:
            params[param] = getattr(args, flag)
    graph = {key: getattr(args, key) for key in ("n_nbrs", "scale_nbr", "scale")
             if getattr(args, key) is not None}
    if graph and args.graph:
        raise UsageError(f"--graph {args.graph} is your own graph; --n-nbrs, --scale-nbr and "
                         "--scale shape the Gaussian one: give one or the other.")
    if graph:
        from .affinity import GaussianKNNAffinity

        params["affinity"] = GaussianKNNAffinity(**graph)
    siamese_flags = [flag for flag, given in (
        ("--siamese", args.siamese), (f"--views {args.views}", args.views),
        (f"--siamese-max-samples {args.siamese_max_samples}", args.siamese_max_samples))
        if given]
    if args.graph:
        if siamese_flags:
            raise UsageError(f"--graph {args.graph} is taken as given; {siamese_flags[0]} "
                             "learns the distances of a Gaussian graph: give one or the other.")
        params["affinity"] = "precomputed"
    if args.views or args.siamese_max_samples:
        from .siamese import SiameseEmbedding

        params["affinity_embedding"] = SiameseEmbedding(views=args.views,
                                                        max_samples=args.siamese_max_samples)
    elif args.siamese:
        params["affinity_embedding"] = "siamese"
    if args.verbose:
        params["verbose"] = 1
    return params


# -- the commands ---------------------------------------------------------------
def cmd_fit(args):
    say = (lambda *a: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    out = os.path.abspath(args.out)
    _check_new_dir(args.out)
    seconds, start = {}, time.perf_counter()
    x = read_matrix(args.data, args.key)
    n, d = x.shape
    if args.n_clusters != "auto" and args.n_clusters > n:
        raise UsageError(f"--n-clusters {args.n_clusters} is more than the {n} rows of {args.data}.")
    graph = read_graph(args.graph, n) if args.graph else None
    params = estimator_params(args)
    labels = read_labels(args.labels, n) if args.labels else None
    partial = (read_labels(args.partial_labels, n, name="partial labels")
               if args.partial_labels else None)
    if args.encoder and not os.path.isfile(args.encoder):
        raise UsageError(f"--encoder {args.encoder}: no such file.")
    seconds["load"] = _lap(start)
    say(f"{PROG}: {args.data}: {n} rows x {d} columns ({seconds['load']:.1f} s)")

    t = time.perf_counter()
    SpectralNet = _estimator_class()
    seconds["start"] = _lap(t)  # importing TensorFlow
    t = time.perf_counter()
    recorded = dict(params)  # summary.json: the parameters given, before the encoder
    if args.encoder:
        from .autoencoder import load_encoder

        params["encoder"] = _user_call(load_encoder, args.encoder, what=f"--encoder {args.encoder}")
    net = _user_call(SpectralNet().set_params, **params)  # nested keys: schedule__*
    _user_call(net.fit, x, partial_labels=partial, **({} if graph is None else {"graph": graph}))
    seconds["fit"] = _lap(t)
    history = net.history_
    say(f"{PROG}: fitted in {seconds['fit']:.1f} s: {len(history['loss'])} epochs, "
        f"loss {history['loss'][-1]:.4g}, validation loss {history['val_loss'][-1]:.4g}")

    from .atomic import atomic_directory

    with atomic_directory(os.path.dirname(out)) as tmp:
        staging = os.path.join(tmp, os.path.basename(out))
        t = time.perf_counter()
        _user_call(net.save, staging)
        write_labels(net.labels_, os.path.join(staging, LABELS_FILE))
        seconds["save"] = _lap(t)
        t = time.perf_counter()
        _fit_plots(net, x, staging, say)
        seconds["plots"] = _lap(t)
        seconds["total"] = _lap(start)
        summary = _summary(args, net, n, d, seconds, labels, recorded)
        with open(os.path.join(staging, SUMMARY_FILE), "w") as f:
            json.dump(summary, f, indent=2)
        _publish(staging, out)
    scored = f", ACC {summary['acc']:.4f}, NMI {summary['nmi']:.4f}" if labels is not None else ""
    say(f"{PROG}: wrote {args.out} (clusters of sizes {summary['cluster_sizes']}{scored})")
    return 0


def cmd_predict(args):
    net, x = _model_and_data(args)
    write_labels(_user_call(net.predict, x), args.output)
    return 0


def cmd_transform(args):
    net, x = _model_and_data(args)
    write_matrix(_user_call(net.transform, x), args.output)
    return 0


def cmd_export(args):
    net = _load_model(args.model)
    print(_user_call(net.export, args.export_dir, name=args.name))
    return 0


# -- helpers --------------------------------------------------------------------
def _lap(start):
    return round(time.perf_counter() - start, 3)


def _check_new_dir(path):
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise UsageError(f"--out {path} already exists and is not an empty directory; "
                         "choose a new one.")


def _publish(staging, out):
    """Move the finished ``staging`` directory to ``out`` (an empty ``out`` is replaced)."""
    from .atomic import publish

    _check_new_dir(out)  # again: the fit may have taken long
    if os.path.isdir(out):
        os.rmdir(out)
    try:
        publish(staging, out)
    except FileExistsError as err:
        raise UsageError(str(err)) from None


@contextlib.contextmanager
def _quiet_stderr():
    """Hold file descriptor 2 on a temporary file. TensorFlow's start-up
    writes C++ log lines (oneDNN, absl) that TF_CPP_MIN_LOG_LEVEL does not
    silence; they are shown only if the start-up fails."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _estimator_class():
    """``SpectralNet``, importing TensorFlow now (quietly)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _quiet_stderr():
        import tensorflow as tf

        tf.config.list_physical_devices()  # device discovery logs (e.g. cuInit) here, not later
        from .estimator import SpectralNet
    return SpectralNet


def _user_call(fn, *args, what=None, **kwargs):
    """``fn(...)``; the estimator's complaints about its input (ValueError),
    and files it cannot read or write (OSError), become UsageError."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, OSError) as err:
        if isinstance(err, DataError):
            raise
        raise UsageError(f"{what}: {one_line(err)}" if what else one_line(err)) from None


def _load_model(path):
    if not os.path.isdir(path):
        raise UsageError(f"{path}: no such model directory (write one with {PROG} fit).")
    return _user_call(_estimator_class().load, path, what=path)


def _model_and_data(args):
    x = read_matrix(args.data, args.key)
    net = _load_model(args.model)
    if x.shape[1] != net.n_features_in_:
        raise UsageError(f"{args.data} has {x.shape[1]} columns, but the model in {args.model} "
                         f"was fitted on {net.n_features_in_}.")
    return net, x


def _fit_plots(net, x, folder, say):
    """embedding.png and spectrum.png; a plot that fails is a warning, not a lost model."""
    from . import plots

    for name, draw in ((EMBEDDING_PNG, lambda p: plots.plot_embedding(p, net.embedding_, net.labels_)),
                       (SPECTRUM_PNG, lambda p: _plot_spectrum(p, net, x))):
        try:
            draw(os.path.join(folder, name))
        except Exception as err:  # noqa: BLE001 - the model is written regardless
            print(f"{PROG}: warning: {name} not written: {one_line(err)}", file=sys.stderr)


def _plot_spectrum(path, net, x):
    """The smallest eigenvalues of the graph Laplacian of the fitted affinity
    on a random subsample of the points it was fitted on."""
    import numpy as np

    from . import plots
    from .spectral import spectrum

    k = net.n_clusters_
    if hasattr(net, "eigenvalues_"):  # the spectrum k was chosen from
        chooser = net.n_clusters_chooser_
        plots.plot_spectrum(path, net.eigenvalues_, k, n_points=min(chooser.n_samples, len(x)),
                            n_total=len(x), runner_up=chooser.candidates_[1],
                            laplacian="normalized")
        return
    if hasattr(net.affinity_, "graph_"):  # the user's graph: its rows are the points
        n = net.affinity_.graph_.shape[0]
        rows = plots.subset(n, SPECTRUM_POINTS)
        w = net.affinity_.graph_[rows][:, rows]
    else:
        z = x if net.encoder is None else net.codes_  # the space the affinity works in
        n = len(z)
        rows = plots.subset(n, SPECTRUM_POINTS)
        w = net.affinity_.graph(np.asarray(z[rows], dtype=np.float32))
    values, _ = spectrum(w, min(len(rows), max(2 * k, 10)), net.laplacian)
    plots.plot_spectrum(path, values, k, n_points=len(rows), n_total=n)


def _summary(args, net, n, d, seconds, labels, params):
    import numpy as np

    history = net.history_
    summary = {
        "data": args.data, "n": int(n), "n_features": int(d), "k": int(net.n_clusters_),
        "seconds": seconds,
        "epochs": len(history["loss"]),
        "final_loss": float(history["loss"][-1]),
        "final_val_loss": float(history["val_loss"][-1]),
        "cluster_sizes": np.bincount(net.labels_, minlength=net.n_clusters_).tolist(),
        "params": {key: (repr(v) if not isinstance(v, (int, float, str, tuple)) else v)
                   for key, v in params.items()},
    }
    if hasattr(net, "eigenvalues_"):
        chooser = net.n_clusters_chooser_
        summary["n_clusters_auto"] = {
            "chosen": int(net.n_clusters_), "runner_up": int(chooser.candidates_[1]),
            "gap_stands_out": bool(chooser.distinct_), "seconds": float(chooser.seconds_),
            "eigenvalues": [float(v) for v in net.eigenvalues_]}
    if labels is not None:
        from .metrics import acc, nmi

        summary.update(acc=acc(labels, net.labels_), nmi=nmi(labels, net.labels_))
    return summary


def main(argv=None):
    """Entry point of the ``spectralnet`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0].startswith("--") and argv[0] not in ("--help", "--version"):
            raise UsageError(
                f"{argv[0]} is an option of the paper reproduction, which is `python "
                f"scripts/run.py {' '.join(argv)}` in the repository; `{PROG} fit DATA "
                f"--n-clusters K --out DIR` clusters your own data ({PROG} --help).")
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (UsageError, DataError) as err:
        print(f"{PROG}: error: {one_line(err)}", file=sys.stderr)
        return 2


def run():
    """The installed ``spectralnet`` command: ``main``, then the process ends
    at once with its status. Every file is written and closed by then, and
    the standard streams are flushed here; what is skipped is the
    interpreter's teardown of TensorFlow's modules, which takes a
    while and does nothing a user waits for. (A failure that escapes
    ``main`` exits the usual way, with its traceback.)"""
    status = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # ``spectralnet predict ... | head``: the reader left
        pass
    os._exit(status)


if __name__ == "__main__":
    run()
