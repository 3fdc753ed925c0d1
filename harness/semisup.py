#!/usr/bin/env python
"""Semi-supervised SpectralNet under heavy noise: benchmarks, not tests.

    python scripts/semisup.py grid                # two noisy rings: n x outer radius x noise, 5 seeds
    python scripts/semisup.py grid --fraction 0   # the same data without labels
    python scripts/semisup.py mnist --fractions 0.02 0.01 0.001   # run.py --dset mnist with labels
    python scripts/semisup.py table RECORD.json   # the Markdown table of a record

Each command that trains writes one JSON record into ``benchmarks/results/``
(command, commit, date, machine, matmul rate, every trial); ``table`` reads
records, so each figure in BENCHMARKS.md comes from one. A labeled trial is
set against references that need no net: a classifier of the labeled points
alone (``supervised_acc``), the harmonic function of the graph the
minibatches sample (``harmonic_acc``) and scikit-learn's label spreading;
``grid --fraction 0`` is the same data without labels.
Labels: each point is labeled with probability ``--fraction``, drawn from a
stream that depends on the seed only (not on the data's own stream).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from .records import (ROOT, SCRIPTS, machine_and_commit, matmul_rate, note_start,
                      record_heading, save_record)

#: (outer radius, noise): from 0.08 up to the largest noise at which the Bayes
#: rule still reaches >= 0.985 (at both outer radii), so every setting is learnable.
SETTINGS = [(1.5, 0.08), (1.5, 0.10), (1.5, 0.11), (2.0, 0.08), (2.0, 0.15), (2.0, 0.22)]
SIZES = [1500, 5000]


def rings_bayes_rule(x, noise, radii=(1.0, 1.5)):
    """The Bayes rule on ``datasets.rings`` (equal priors): the ring of highest density
    at each point of x. A ring's density at distance rho from the centre is
    ``exp(-(rho^2 + r^2) / 2 s^2) I0(rho r / s^2) / (2 pi s^2)``, so the rule
    thresholds the radius."""
    from scipy.special import i0e

    rho = np.hypot(x[:, 0], x[:, 1])[:, None]
    r = np.asarray(radii, dtype=np.float64)[None, :]
    s2 = noise**2
    # log density up to a shared constant; i0e(z) = I0(z) exp(-z) keeps it finite.
    log_p = -(rho - r) ** 2 / (2 * s2) + np.log(i0e(rho * r / s2))
    return np.argmax(log_p, axis=1)


def rings_bayes_accuracy(noise, radii=(1.0, 1.5), n_mc=400000, seed=12345):
    """Accuracy of the Bayes rule (``rings_bayes_rule``) on ``datasets.rings``, by
    Monte Carlo over ``n_mc`` sampled points."""
    from spectralnet_tf.datasets import rings

    x, y = rings(n_mc, noise=noise, seed=seed, radii=radii)
    return float(np.mean(rings_bayes_rule(x, noise, radii) == y))


def partial_labels(y, fraction, seed):
    rng = np.random.default_rng([17, seed])
    return np.where(rng.uniform(size=len(y)) < fraction, y, -1).astype(np.int64)


def sampled_affinity(x, seed):
    """The estimator's default affinity fitted on x with the batch the
    estimator uses after its 10% hold-out: (fitted minibatch affinity, batch
    size)."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    m = min(1024, int(0.9 * len(x)))
    return GaussianKNNAffinity().fit(x, batch_size=m, seed=seed), m


def sampled_graph(x, seed):
    """``sampled_affinity``'s graph on all of x as its minibatches sample it
    (``for_full_data``): (sparse W, fitted minibatch affinity, batch size)."""
    aff, m = sampled_affinity(x, seed)
    return aff.for_full_data(len(x), m).graph(x), aff, m


def harmonic_acc(x, y, known, seed, k=2):
    """ACC of the exact semi-supervised reference: the harmonic function of
    the graph SpectralNet's minibatches sample, with the same labels (of
    ``k`` classes)."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    w = sampled_graph(x.astype(np.float32), seed)[0]
    return round(acc(y, harmonic_labels(w, known, k)), 4)




def supervised_acc(x, y, known):
    """ACC (matched, as for the clusterings) of a classifier that sees the
    labeled points alone, no graph (``labelscores.fit_label_classifier``: an
    RBF SVM, C and gamma by up to 5-fold cross-validation on those points, whose labels are
    the only ones a user has). Where it fails too, the labels themselves are
    too few to place the boundary."""
    from spectralnet_tf.labelscores import fit_label_classifier
    from spectralnet_tf.metrics import acc

    return round(acc(y, fit_label_classifier(x, known).predict(np.asarray(x, np.float64))), 4)


def target_acc(trial):
    """The semi-supervised bar for one labeled trial: the better of the two
    references (the labels alone, the graph with the labels) less 0.005."""
    return round(max(trial["supervised_acc"], trial["harmonic_acc"]) - 0.005, 4)


def rings_and_labels(n, r2, noise, seed, fraction):
    """The two rings of a setting and seed, their labels, and the partial
    labels of ``fraction`` (the same in every command)."""
    from spectralnet_tf.datasets import rings

    x, y = rings(n, noise=noise, seed=seed, radii=(1.0, r2))
    y = y.astype(np.int64)
    return x, y, partial_labels(y, fraction, seed)


#: The estimator's defaults when the recorded grids ran, before they followed
#: the data; fixed here so that a recorded command keeps its meaning.
RECORDED_DEFAULTS = {"hidden_units": (1024, 1024, 512), "schedule__max_epochs": 100}


def trial(n, r2, noise, seed, fraction, params):
    from sklearn.semi_supervised import LabelSpreading

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.metrics import acc

    x, y, known = rings_and_labels(n, r2, noise, seed, fraction)
    start = time.perf_counter()
    # set_params also takes nested keys, e.g. {"affinity__n_nbrs": 5}.
    net = SpectralNet(2, random_state=seed).set_params(**{**RECORDED_DEFAULTS, **params})
    net.fit(x, partial_labels=known if fraction > 0 else None)
    out = {"n": n, "outer_radius": r2, "noise": noise, "seed": seed, "fraction": fraction,
           "labeled": int((known >= 0).sum()) if fraction > 0 else 0,
           "acc": round(acc(y, net.labels_), 4),
           "seconds": round(time.perf_counter() - start, 1),
           "epochs": len(net.history_["loss"]),
           "final_val_loss": round(net.history_["val_loss"][-1], 5)}
    if fraction > 0:
        # Reference, not tuned: scikit-learn's label spreading on the 10-NN graph
        # (its default alpha), with the same labels.
        spread = LabelSpreading(kernel="knn", n_neighbors=10).fit(x, known)
        out["label_spreading_acc"] = round(acc(y, spread.transduction_), 4)
        out["harmonic_acc"] = harmonic_acc(x, y, known, seed)
        out["supervised_acc"] = supervised_acc(x, y, known)
    return out


def _one_thread():
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def _trial(job):
    return trial(*job)


def save_trials(kind, tag, args, trials, extra):
    """A semisup record: ``records.save_record`` with the trials, in --results."""
    return save_record(tag, {"kind": kind, **extra, "trials": trials}, group="semisup",
                folder=args.results)


def run_trials(jobs, log, processes=1):
    """Each trial in order; with ``processes`` > 1, that many worker
    processes of one thread each (a numeric variant of its own: the record
    says which)."""
    trials = []
    if processes == 1:
        for job in jobs:
            trials.append(trial(*job))
            print(json.dumps(trials[-1]), file=log, flush=True)
        return trials
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_one_thread) as pool:
        for out in pool.map(_trial, jobs):
            trials.append(out)
            print(json.dumps(out), file=log, flush=True)
    return trials


def cmd_grid(args):
    params = json.loads(args.params)
    rate = matmul_rate()
    fractions = args.fractions or [args.fraction]
    jobs = [(n, r2, noise, seed, fraction, params) for n in args.n
            for r2, noise in args.settings for fraction in fractions for seed in args.seeds]
    bayes = {f"{r2}/{noise}": rings_bayes_accuracy(noise, (1.0, r2)) for r2, noise in args.settings}
    trials = run_trials(jobs, sys.stdout, args.processes)
    tag = args.tag or ("grid-labels" if max(fractions) > 0 else "grid-nolabels")
    save_trials("grid", tag, args, trials, {"params": params, "bayes": bayes,
                                             "processes": args.processes,
                                             "matmul_gflops": round(rate, 1)})


#: What a labeled MNIST run is set against (run.py's results keys -> table
#: column): the labels alone, and with --exact-knn its own graph on all points.
MNIST_REFERENCES = {"svm_acc": "SVM ACC (codes, labels alone)",
                    "exact_acc_plain": "exact SC ACC (its graph, no labels)",
                    "harmonic_acc_plain": "harmonic ACC (its graph, the labels)",
                    "raw_rows_acc": "ACC, k-means on the rows as they are (the same fit)"}


def cmd_mnist(args):
    """The main job (``run.py --dset mnist``) with each labeled fraction, one
    run at a time in a subprocess with TensorFlow's default threads; each run
    keeps its directory (results.json, checkpoints) under ``--runs``, and its
    trial the commit it started at."""

    rate = matmul_rate()
    trials = []
    for fraction in args.fractions:
        out = os.path.join(args.runs, f"mnist-s{args.seed}-labeled{fraction:g}")
        cmd = [sys.executable, os.path.join(SCRIPTS, "run.py"), "--dset", "mnist", "--seed",
               str(args.seed), "--quiet", "--no-plots", "--out", out]
        if fraction > 0:
            cmd += ["--labeled-fraction", str(fraction)]
        if args.exact_knn:
            cmd.append("--exact-knn")
        started = machine_and_commit(now=True)[1]  # the tree this run.py imports
        code = subprocess.run(cmd).returncode
        if code:  # its own error is above
            sys.exit(f"semisup.py mnist: run.py exited with status {code} ({out}).")
        with open(os.path.join(out, "results.json")) as f:
            r = json.load(f)
        trials.append({"fraction": fraction, "commit": started, "labeled": r.get("labeled", 0),
                       **{k: round(r[k], 4) for k in ("acc", "nmi", "kmeans_acc", "kmeans_nmi")},
                       **{k: round(r[k], 4) for k in MNIST_REFERENCES if k in r},
                       "epochs": r["epochs"], "seconds": r["seconds"],
                       "peak_rss_gib": r["peak_rss_gib"], "run": out})
        print(json.dumps(trials[-1]), flush=True)
    save_trials("mnist", args.tag or f"mnist-labels-seed{args.seed}", args, trials,
                {"seed": args.seed, "matmul_gflops": round(rate, 1)})


def _groups(trials, keys):
    groups = {}
    for t in trials:
        groups.setdefault(tuple(t[k] for k in keys), []).append(t)
    return groups


#: The records ``table`` renders: those of the commands kept here. Records of
#: the label classifier's commands (removed with it) stay in
#: benchmarks/results/, read by the tree of their commit.
TABLE_KINDS = ("grid", "mnist")


def cmd_table(args):
    with open(args.record) as f:
        record = json.load(f)
    if record.get("kind") not in TABLE_KINDS:
        sys.exit(f"semisup.py table: {args.record} is a {record.get('kind')!r} record; this "
                 f"script renders {' and '.join(repr(k) for k in TABLE_KINDS)} records (the "
                 f"others' commands were removed with the label classifier; see the commit "
                 f"named in the record).")
    print(record_heading(record)
          + (f", f32 matmul {record['matmul_gflops']} GFLOP/s" if "matmul_gflops" in record else "")
          + (f", {record['processes']} processes of 1 thread" if record.get("processes", 1) > 1 else "")
          + ".\n")
    if record["kind"] == "mnist":
        rate = record["matmul_gflops"]
        # Newer records: the labels alone (SVM in code space) beside each
        # labeled run; with --exact-knn, the run's own graph on all points.
        refs = [(key, name) for key, name in MNIST_REFERENCES.items()
                if any(key in t for t in record["trials"])]
        # Records of the label classifier: its check, which kept it or not; the
        # later ones scored the graph the classifier reshapes, not the classifier.
        checked = any("label_check" in t for t in record["trials"])
        first, first_name = (("reshaped", "reshaped graph")
                             if any("reshaped" in (t.get("label_check") or {})
                                    for t in record["trials"]) else ("classifier", "classifier"))
        print("| labeled fraction | labeled points | ACC | NMI | k-means ACC (codes) "
              + "".join(f"| {name} " for _, name in refs)
              + (f"| held-out labels right: {first_name} "
                 "/ graph (reshaped?) ") * checked
              + "| epochs | Siamese s | spectral s | total min | total s × GFLOP/s / 1000 |\n|"
              + " --- |" * (10 + len(refs) + checked))
        for t in record["trials"]:
            s = t["seconds"]
            c = t.get("label_check")
            print(f"| {t['fraction']:g} | {t['labeled']} | {t['acc']:.4f} | {t['nmi']:.4f} "
                  f"| {t['kmeans_acc']:.4f} "
                  + "".join(f"| {t[key]:.4f} " if key in t else "| – " for key, _ in refs)
                  + (("| – " if c is None else f"| {c[first]:.4f} / {c['graph']:.4f} "
                      f"({'yes' if c['keep'] else 'no'}) ") if checked else "")
                  + f"| {t['epochs']} | {s.get('siamese', 0):.0f} "
                  f"| {s['spectral']:.0f} | {s['total'] / 60:.1f} | {s['total'] * rate / 1000:.0f} |")
        return
    keys = ["n", "outer_radius", "noise", "fraction"]
    harmonic = any("harmonic_acc" in t for t in record["trials"])  # newer records only
    target = all("supervised_acc" in t for t in record["trials"])  # newer still
    head = keys + ["Bayes", "seeds", "ACC per seed", "min ACC", "label spreading ACC"]
    head += ["harmonic ACC"] * harmonic
    head += ["SVM ACC", "target: max(SVM, harmonic) − 0.005", "seeds ≥ target"] * target
    # Records of the label classifier: its own SVM, the C and gamma the fit chose.
    own = any("own_supervised_acc" in t for t in record["trials"])
    head += ["the fit's own SVM ACC"] * own
    head += ["s per fit (median)", "s per fit × GFLOP/s / 1000"]
    print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    bayes = record["bayes"]
    for key, group in _groups(record["trials"], keys).items():
        accs = [t["acc"] for t in group]
        sec = float(np.median([t["seconds"] for t in group]))
        setting = dict(zip(keys, key))
        b = bayes[f"{setting['outer_radius']}/{setting['noise']}"]
        cells = list(key) + [f"{b:.4f}", " ".join(str(t["seed"]) for t in group),
                             " ".join(f"{a:.3f}" for a in accs), f"{min(accs):.4f}",
                             " ".join(f"{t['label_spreading_acc']:.3f}" for t in group
                                      if "label_spreading_acc" in t) or "–"]
        if harmonic:
            cells.append(" ".join(f"{t['harmonic_acc']:.3f}" if "harmonic_acc" in t else "–"
                                  for t in group))
        if target:
            bars = [target_acc(t) for t in group]
            cells += [" ".join(f"{t['supervised_acc']:.3f}" for t in group),
                      " ".join(f"{b:.3f}" for b in bars),
                      f"{sum(a >= b for a, b in zip(accs, bars))} of {len(group)}"]
        if own:
            cells.append(" ".join(f"{t['own_supervised_acc']:.3f}" if "own_supervised_acc" in t
                                  else "–" for t in group))
        cells += [f"{sec:.0f}", f"{sec * record.get('matmul_gflops', np.nan) / 1000:.2f}"]
        print("| " + " | ".join(str(c) for c in cells) + " |")


def _setting(text):
    r2, noise = text.split("/")
    return float(r2), float(noise)


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("grid", help="two noisy rings: n x setting x labeled fraction x seed")
    q.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    q.add_argument("--n", type=int, nargs="+", default=SIZES)
    q.add_argument("--fraction", type=float, default=0.02, help="labeled fraction (0: none)")
    q.add_argument("--fractions", type=float, nargs="+", default=None,
                   help="several labeled fractions (instead of --fraction)")
    q.add_argument("--params", default="{}", help="JSON of SpectralNet keyword arguments")
    q.add_argument("--tag", default=None, help="record name (default: the command)")
    q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    q.add_argument("--processes", type=int, default=1,
                   help="trials in parallel, one thread each (default: 1 process)")
    q.add_argument("--settings", type=_setting, nargs="+", default=SETTINGS,
                   help="OUTER_RADIUS/NOISE pairs")
    q = sub.add_parser("mnist", help="run.py --dset mnist with each labeled fraction")
    q.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.001, 0.01, 0.02],
                   help="labeled fractions (0: the unsupervised run)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--runs", default=os.path.join(ROOT, "runs"), help="where the run directories go")
    q.add_argument("--exact-knn", action="store_true",
                   help="run.py's --exact-knn: beside each run, exact spectral clustering of its "
                        "own graph on all points and, with labels, that graph's harmonic function")
    q.add_argument("--tag", default=None, help="record name (default: mnist-labels-seedS)")
    q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    q = sub.add_parser("table", help="the Markdown table of a grid or mnist record")
    q.add_argument("record")
    args = p.parse_args(argv)
    {"grid": cmd_grid, "mnist": cmd_mnist, "table": cmd_table}[args.command](args)


if __name__ == "__main__":
    main()
