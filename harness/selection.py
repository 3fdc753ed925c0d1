#!/usr/bin/env python
"""Unsupervised model selection (paper Sec. 5): fit a grid of settings and
choose by a label-free criterion; the labels are recorded beside each trial,
for the correlation only.

    python scripts/selection.py digits --grid net        # paper's protocol: the net and its
                                                      # learning rate vary, the affinity is fixed
    python scripts/selection.py digits --grid affinity   # neighbours and scale vary (eigengap)
    python scripts/selection.py mnist --n 10000 --grid net
    python scripts/selection.py codes --split all WEIGHTS.h5 ...   # autoencoder recipes
    python scripts/selection.py codes --split all --criterion stability WEIGHTS.h5 ...
    python scripts/selection.py digits-codes     # validate the code-space criteria on digits
    python scripts/selection.py table RECORD.json ...

``--grid net`` varies the architecture (hidden layers, the activation before
Orthonorm) and the learning rate, and chooses by the validation loss (paper
Appendix C: the correlation across such runs was -0.771). ``--grid affinity``
varies the number of neighbours, the kind of scale and, on MNIST, whether the
Siamese distance is used; the validation loss is then not comparable, so it
chooses by the eigengap (``spectralnet_tf.selection``). On MNIST the points are
a random subset of the codes of the package's 70k autoencoder, and the Siamese
net is trained once on them and then held fixed, as in the paper's protocol.
``codes`` compares autoencoders (code spaces) the same label-free way: the
eigengap of the kNN graph of the mnist config (10 neighbours, local scale
from the 5th; Euclidean on the codes, no Siamese net) on one random subset of
the digits the autoencoders trained on (``--split train``: the first 60k, so
no test digit is looked at; ``--split infimnist``: the first ``--pool`` digits
of infinite MNIST, those its scale runs cluster). Each run writes a record to ``benchmarks/results/`` unless ``--no-record``.
(Not named select.py: from scripts/ that would shadow Python's own ``select``
module, which ``subprocess`` imports.)
"""

import argparse
import os
import re

from .records import note_start, record_heading, save_record

#: The grids, fixed before any run. "net": architecture and learning rate
#: (the paper's protocol); "affinity": what changes the graph.
GRIDS = {
    "net": {"hidden_units": [(256, 128), (512, 512, 256), (1024, 1024, 512)],
            "output_activation": ["tanh", "linear"],
            "schedule__learning_rate": [1e-4, 1e-3]},
    "affinity": {"affinity__n_nbrs": [5, 10, 30], "affinity__scale": ["global", "local"]},
}
CRITERION = {"net": "val_loss", "affinity": "eigengap"}


def mnist_setup(n, seed, grid):
    """Codes of a random n of MNIST's 70k, the mnist config with a Siamese net
    trained once on all n codes (fixed for every trial), and the labels."""
    import numpy as np

    from spectralnet_tf.autoencoder import load_encoder
    from .configs import config_for
    from spectralnet_tf.datasets import mnist
    from spectralnet_tf.distribute import map_rows
    from spectralnet_tf.resources import pretrained_path

    x, y = mnist()
    rows = np.sort(np.random.default_rng(seed).choice(len(y), n, replace=False))
    from .runconfig import AE_ALL

    codes = map_rows(load_encoder(pretrained_path(AE_ALL)), x[rows])
    params = config_for("mnist")
    siamese = params["affinity_embedding"].fit(codes, seed=seed).model_
    params["affinity_embedding"] = siamese
    grid = dict(GRIDS[grid])
    if "affinity__n_nbrs" in grid:  # does the Siamese distance itself help? (None: Euclidean on codes)
        grid["affinity_embedding"] = [None, siamese]
    return codes, y[rows], params, grid


def run(args):
    from spectralnet_tf import SpectralNet
    from .configs import config_for
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.selection import UnsupervisedSearch

    if args.dset == "mnist":
        x, y, params, grid = mnist_setup(args.n, args.seed, args.grid)
        k = 10
    else:
        x, y, k = load_dataset(args.dset, seed=args.seed)
        params, grid = config_for(args.dset), GRIDS[args.grid]
    search = UnsupervisedSearch(SpectralNet(n_clusters=k, random_state=args.seed, **params),
                                grid, criterion=CRITERION[args.grid], verbose=1)
    search.fit(x, report_labels=y)
    trials = [{**t, "params": {name: describe(v) for name, v in t["params"].items()}}
              for t in search.trials_]
    record = {"kind": "select", "dset": args.dset, "n": int(len(x)), "seed": args.seed,
              "grid": args.grid, "criterion": CRITERION[args.grid], "trials": trials,
              "best_index": search.best_index_, "correlation": search.correlation_}
    print_table(record)
    if not args.no_record:

        save_record(f"select-{args.dset}-{args.grid}" + (f"-n{args.n}" if args.n else ""),
                    record, group="selection")
    return record


#: ``codes --split infimnist``: digits are drawn from infinite MNIST's first POOL_DEFAULT.
POOL_DEFAULT = 1_000_000


def score_codes(z, y, k, seed, stability):
    """One code space's figures: the relative eigengap of its kNN graph (the
    mnist config's: 10 neighbours, local scale from the 5th), its split
    stability if ``stability``, and, for the record only, exact spectral
    clustering's and k-means' ACC against ``y``."""
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.centroids import assign, fit_centroids
    from spectralnet_tf.metrics import acc, nmi
    from spectralnet_tf.selection import relative_eigengap, split_stability
    from spectralnet_tf.spectral import cluster_graph

    w = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(
        z, 1024, seed=seed).graph(z)
    sc, _ = cluster_graph(w, k, "normalized", random_state=seed)
    km = assign(z, fit_centroids(z, k, seed))
    return {**relative_eigengap(w, k),
            **(split_stability(z, k, random_state=seed) if stability else {}),
            "acc": acc(y, sc), "nmi": nmi(y, sc), "kmeans_acc": acc(y, km)}


def codes(args):
    """The eigengap (and with ``--criterion stability`` the split stability) of
    each autoencoder's code graph on the same digits; k-means
    and exact spectral clustering ACC beside it, for the record only."""
    import numpy as np

    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.datasets import MNIST_N_TRAIN, mnist
    from spectralnet_tf.distribute import map_rows
    from spectralnet_tf.resources import sha256
    from spectralnet_tf.selection import correlation

    from . import infimnist

    if args.split == "infimnist":  # the first --pool digits of infinite MNIST
        source, labels = infimnist.load(n=args.pool)
        rows = np.sort(np.random.default_rng(args.seed).choice(args.pool, args.n, replace=False))
        digits, y_rows = source.digits(rows), labels[rows]
    else:
        x, y = mnist()
        pool = MNIST_N_TRAIN if args.split == "train" else len(y)
        rows = np.sort(np.random.default_rng(args.seed).choice(pool, args.n, replace=False))
        digits, y_rows = x[rows], y[rows]
    trials = []
    for path in args.weights:
        z = map_rows(load_encoder(path), digits)
        trials.append({"params": {"weights": os.path.basename(path), "sha256": sha256(path)[:12]},
                       **score_codes(z, y_rows, 10, args.seed, args.criterion == "stability")})
        print(trials[-1], flush=True)
    crit = args.criterion
    best = int(np.argmax([t[crit] for t in trials]))
    record = {"kind": "select", "dset": "infimnist" if args.split == "infimnist" else "mnist",
              "n": args.n, "seed": args.seed,
              "split": args.split, **({"pool": args.pool} if args.split == "infimnist" else {}),
              "grid": "codes", "criterion": crit, "trials": trials,
              "best_index": best,
              "correlation": correlation([t[crit] for t in trials], [t["acc"] for t in trials])}
    print_table(record)
    if not args.no_record:

        save_record(f"select-codes-{args.split}" + (f"-{args.tag}" if args.tag else ""),
                    record, group="selection")
    return record


#: The validation grid of code spaces on scikit-learn's 8x8 digits, fixed
#: before any run: small autoencoders of the VaDE shape, trained for few to
#: many epochs, with and without 1-pixel shifts, from two seeds.
DIGITS_CODES_GRID = {"epochs": [5, 25, 100], "max_shift": [0.0, 1.0], "seed": [0, 1]}
DIGITS_AE_HIDDEN = (256, 256, 512)


def digits_codes(args):
    """Validate the code-space criteria on labelled data other than MNIST:
    scikit-learn's 8x8 digits, one small autoencoder per setting of
    ``DIGITS_CODES_GRID``; for each code space the split stability and the
    eigengap (label-free), and exact spectral clustering's ACC of its code
    graph (labels, to score the criteria)."""
    import numpy as np
    from sklearn.model_selection import ParameterGrid

    from spectralnet_tf.autoencoder import build_autoencoder, train_autoencoder
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.distribute import map_rows
    from spectralnet_tf.selection import correlation

    x, y, k = load_dataset("digits")
    x = np.asarray(x, np.float32)
    x = (x - x.min()) / (x.max() - x.min())  # pixels in [0, 1], for the sigmoid output
    trials = []
    for params in ParameterGrid(DIGITS_CODES_GRID):
        ae, encoder = build_autoencoder(x.shape[1], DIGITS_AE_HIDDEN, 10, seed=params["seed"])
        train_autoencoder(ae, x, epochs=params["epochs"], batch_size=64,
                          max_shift=params["max_shift"], image_shape=(8, 8),
                          seed=params["seed"], verbose=0)
        trials.append({"params": dict(params),
                       **score_codes(map_rows(encoder, x), y, k, args.seed, stability=True)})
        print(trials[-1], flush=True)
    accs = [t["acc"] for t in trials]
    record = {"kind": "select", "dset": "digits", "n": len(y), "seed": args.seed,
              "grid": "digits-codes", "grid_values": DIGITS_CODES_GRID,
              "hidden": list(DIGITS_AE_HIDDEN), "criterion": "stability", "trials": trials,
              "best_index": int(np.argmax([t["stability"] for t in trials])),
              "correlation": correlation([t["stability"] for t in trials], accs),
              "correlation_eigengap": correlation([t["eigengap"] for t in trials], accs)}
    print_table(record)
    if not args.no_record:
        save_record("select-digits-codes", record, group="selection")
    return record


def describe(value):
    """A JSON-able name for a grid value (a network, i.e. the fixed Siamese
    net: "siamese")."""
    import numpy as np

    if value is None or isinstance(value, (int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return "-".join(str(v) for v in value)
    if callable(value):
        return "siamese"
    raise TypeError(f"no record name for grid value {value!r}")


def print_table(record):
    """Markdown: one row per trial, the chosen one in bold, then the correlations."""
    import numpy as np

    crit = record["criterion"]
    names = list(record["trials"][0]["params"])
    extra = {"eigengap": ["lambda_k", "lambda_k1"],
             "stability": ["stability_min", "eigengap"]}.get(crit, [])
    # Exact SC of the code graph, k-means; no SpectralNet training.
    codes_ = record["grid"] in ("codes", "digits-codes")
    last = ["exact SC ACC", "NMI", "k-means ACC"] if codes_ else ["ACC", "NMI", "epochs", "s"]
    print("| " + " | ".join([*names, crit, *extra, *last]) + " |")
    print("|" + " --- |" * (len(names) + len(extra) + len(last) + 1))
    for i, t in enumerate(record["trials"]):
        mark = "**" if i == record["best_index"] else ""
        cells = [str(t["params"][name]) for name in names]
        if "error" in t:  # diverged: no figures
            cells += ["failed"] + ["—"] * (len(extra) + len(last) - 1) + [str(t["seconds"])]
        else:
            cells += [f"{mark}{t[crit]:.4g}{mark}", *(f"{t[e]:.4g}" for e in extra),
                      f"{mark}{t['acc']:.4f}{mark}", f"{t['nmi']:.4f}"]
            cells += ([f"{t['kmeans_acc']:.4f}"] if codes_
                      else [str(t["epochs"]), str(t["seconds"])])
        print("| " + " | ".join(cells) + " |")
    accs = sorted(t["acc"] for t in record["trials"] if "error" not in t)
    c = record["correlation"]
    corr = ("undefined (fewer than 3 trials)" if c["pearson"] is None
            else f"Pearson {c['pearson']:.3f}, Spearman {c['spearman']:.3f}")
    print(f"\nChosen by {crit} (bold): ACC {record['trials'][record['best_index']]['acc']:.4f}; "
          f"over the {len(accs)} trials ACC ranges {accs[0]:.4f}–{accs[-1]:.4f} "
          f"(median {np.median(accs):.4f}). Correlation of {crit} with ACC: {corr}.")
    other = record.get("correlation_eigengap")
    if other and other["spearman"] is not None:
        print(f"The eigengap with ACC over the same trials: Pearson {other['pearson']:.3f}, "
              f"Spearman {other['spearman']:.3f}.")


def table(args):
    import json

    for path in args.records:
        with open(path) as f:
            record = json.load(f)
        print(record_heading(record) + "\n")
        print_table(record)


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("table", help="print records' tables")
    q.add_argument("records", nargs="+")
    q = sub.add_parser("codes", help="compare autoencoders by the eigengap of their code graph")
    q.add_argument("weights", nargs="+", help="autoencoder weight files (HDF5)")
    q.add_argument("--split", choices=["all", "train", "infimnist"], required=True,
                   help="the digits they trained on: all 70k, the first 60k, or infinite "
                        "MNIST's first --pool")
    q.add_argument("--pool", type=int, default=POOL_DEFAULT,
                   help="--split infimnist: digits drawn from its first POOL (default 1,000,000)")
    q.add_argument("--n", type=int, default=10000, help="random digits scored (default 10000)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--no-record", action="store_true", help="print only")
    q.add_argument("--criterion", choices=["eigengap", "stability"], default="eigengap",
                   help="what chooses: the relative eigengap of the code graph (the default, "
                        "kept for the older records) or its split stability, validated by "
                        "the digits-codes command")
    q.add_argument("--tag", help="name the record select-codes-SPLIT-TAG (letters, digits, "
                                 "'_', '.', '-'), so that a second comparison on one day "
                                 "keeps the first's record")
    q = sub.add_parser("digits-codes", help="validate the code-space criteria on "
                                            "scikit-learn's digits (a fixed grid of autoencoders)")
    q.add_argument("--seed", type=int, default=0, help="the graphs' and subsets' draws")
    q.add_argument("--no-record", action="store_true", help="print only")
    for dset in ("digits", "mnist"):
        q = sub.add_parser(dset, help=f"search on {dset}")
        q.add_argument("--grid", choices=sorted(GRIDS), required=True)
        if dset == "mnist":
            q.add_argument("--n", type=int, default=10000,
                           help="a random subset of the 70k digits (default 10000)")
        q.add_argument("--seed", type=int, default=0, help="the subset, hold-out and weights")
        q.add_argument("--no-record", action="store_true", help="print only")
    args = p.parse_args(argv)
    if args.cmd == "table":
        return table(args)
    if args.cmd == "digits-codes":
        return digits_codes(args)
    if args.cmd == "codes":
        if not 100 <= args.n <= 60000:
            p.error(f"--n must be in [100, 60000], got {args.n}")
        if args.split == "infimnist" and not args.n <= args.pool:
            p.error(f"--pool must be at least --n ({args.n}), got {args.pool}")
        if args.split != "infimnist" and args.pool != POOL_DEFAULT:
            p.error(f"--pool {args.pool}: only --split infimnist draws from a pool")
        if args.tag is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.tag):
            p.error(f"--tag must be a name of letters, digits, '_', '.' or '-', got "
                    f"--tag {args.tag!r}")
        missing = [w for w in args.weights if not os.path.exists(w)]
        if missing:
            p.error(f"weights: no such file {missing[0]!r}")
        return codes(args)
    args.dset = args.cmd
    args.n = getattr(args, "n", None)
    if args.n is not None and not 100 <= args.n <= 70000:
        p.error(f"--n must be in [100, 70000], got {args.n}")
    if args.seed < 0:
        p.error(f"--seed must be >= 0, got {args.seed}")
    return run(args)


if __name__ == "__main__":
    main()
