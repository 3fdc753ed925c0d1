#!/usr/bin/env python
"""Semi-supervised SpectralNet under heavy noise: benchmarks, not tests.

    python scripts/semisup.py grid                # two noisy rings: n x outer radius x noise, 5 seeds
    python scripts/semisup.py grid --fraction 0   # the same data without labels
    python scripts/semisup.py ablate              # each part's contribution, on development seeds
    python scripts/semisup.py cause               # exact spectral clustering with every labeled pair
    python scripts/semisup.py harmonic RECORD.json  # the exact semi-supervised reference per trial
    python scripts/semisup.py harmonic --n 3000 --seeds 100 101   # ... on data of its own, no net
    python scripts/semisup.py strengths           # the exact reference at each label strength
    python scripts/semisup.py targets             # the label term's classes by each graph solver
    python scripts/semisup.py gate                # the same, the classifier kept only as the check decides
    python scripts/semisup.py gate --data digits --fractions 0.03 0.05 0.1   # ... on the 8x8 digits
    python scripts/semisup.py mnist --fractions 0.02 0.01 0.001   # run.py --dset mnist with labels
    python scripts/semisup.py table RECORD.json   # the Markdown table of a record
    python scripts/semisup.py plot RECORD.json --out PNG

Each command that trains writes one JSON record into ``benchmarks/results/``
(command, commit, date, machine, matmul rate, every trial); ``table`` and
``plot`` read records, so each figure in BENCHMARKS.md comes from one.
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
#: Development seeds for choices (ablate); the grid reports seeds 0-4.
DEV_SEEDS = [100, 101, 102]


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


def sampled_affinity(x, seed, known=None, strength=0.0):
    """The estimator's default affinity fitted on x with the batch the
    estimator uses after its 10% hold-out: (fitted minibatch affinity, batch
    size). Given partial labels ``known`` and a ``strength`` > 0, its label
    classifier of those labels too (the affinity's ``fit_labels``)."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    m = min(1024, int(0.9 * len(x)))
    aff = GaussianKNNAffinity(label_strength=strength).fit(x, batch_size=m, seed=seed)
    if known is not None:
        aff.fit_labels(x, known, x, seed=seed)
    return aff, m


def sampled_graph(x, seed, known=None, strength=0.0):
    """``sampled_affinity``'s graph on all of x as its minibatches sample it
    (``for_full_data``): (sparse W, fitted minibatch affinity, batch size)."""
    aff, m = sampled_affinity(x, seed, known, strength)
    return aff.for_full_data(len(x), m).graph(x), aff, m


def harmonic_acc(x, y, known, seed, k=2):
    """ACC of the exact semi-supervised reference: the harmonic function of
    the graph SpectralNet's minibatches sample, with the same labels (of
    ``k`` classes)."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    w = sampled_graph(x.astype(np.float32), seed)[0]
    return round(acc(y, harmonic_labels(w, known, k)), 4)


def unsupervised_acc(x, y, seed, k):
    """ACC of the graph alone: exact spectral clustering of the graph
    SpectralNet's minibatches sample, no labels (``train.graph_cut``, rounded
    as ``fit`` rounds)."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.train import graph_cut

    w = sampled_graph(x.astype(np.float32), seed)[0]
    return round(acc(y, graph_cut(w, k, seed=seed)), 4)


def supervised_acc(x, y, known):
    """ACC (matched, as for the clusterings) of a classifier that sees the
    labeled points alone, no graph: the estimator's own label classifier
    (``labelscores.fit_label_classifier``: an RBF SVM, C and gamma by up to
    5-fold cross-validation on those points, whose labels are the only ones
    a user has; one machine per class against the rest beyond two classes).
    Where it fails too, the labels themselves are too few to place the
    boundary."""
    from spectralnet_tf.labelscores import fit_label_classifier
    from spectralnet_tf.metrics import acc

    return round(acc(y, fit_label_classifier(x, known).predict(x)), 4)


def own_supervised_acc(x, y, known, params):
    """ACC of the label classifier the fit itself drew: an RBF SVM of the
    labeled points with the C and gamma its own cross-validation chose
    (``label_check_["params"]``), beside the reference (``supervised_acc``,
    whose folds are shuffled by seed 0). With a dozen labels the two draws
    can choose far apart. The fit's classifier itself where it sees the
    points as they are (two classes, no embedding: the ring grid)."""
    from sklearn.svm import SVC

    from spectralnet_tf.metrics import acc

    lab = known >= 0
    svm = SVC(**params).fit(np.asarray(x, np.float64)[lab], known[lab])
    return round(acc(y, svm.predict(x)), 4)


def target_acc(trial):
    """The semi-supervised bar for one labeled trial: the better of the two
    references (the labels alone, the graph with the labels) less 0.005; and
    of the graph alone too, where the trial holds it (``unsupervised_acc``)."""
    refs = [trial["supervised_acc"], trial["harmonic_acc"], trial.get("unsupervised_acc", 0.0)]
    return round(max(refs) - 0.005, 4)


def rings_and_labels(n, r2, noise, seed, fraction):
    """The two rings of a setting and seed, their labels, and the partial
    labels of ``fraction`` (the same in every command)."""
    from spectralnet_tf.datasets import rings

    x, y = rings(n, noise=noise, seed=seed, radii=(1.0, r2))
    y = y.astype(np.int64)
    return x, y, partial_labels(y, fraction, seed)


#: The estimator's defaults when the recorded grids ran, before they followed
#: the data; fixed here so that a recorded command keeps its meaning.
RECORDED_DEFAULTS = {"hidden_units": (1024, 1024, 512), "max_epochs": 100}


def trial(n, r2, noise, seed, fraction, params):
    from sklearn.semi_supervised import LabelSpreading

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.metrics import acc

    x, y, known = rings_and_labels(n, r2, noise, seed, fraction)
    start = time.perf_counter()
    # set_params also takes nested keys, e.g. {"affinity__n_nbrs": 5}.
    net = SpectralNet(2, random_state=seed, **RECORDED_DEFAULTS).set_params(**params)
    net.fit(x, partial_labels=known if fraction > 0 else None)
    out = {"n": n, "outer_radius": r2, "noise": noise, "seed": seed, "fraction": fraction,
           "labeled": int((known >= 0).sum()) if fraction > 0 else 0,
           "acc": round(acc(y, net.labels_), 4),
           "seconds": round(time.perf_counter() - start, 1),
           "epochs": len(net.history_["loss"]),
           "final_val_loss": round(net.history_["val_loss"][-1], 5)}
    if net.label_check_ is not None:  # which graph the fit trained on
        out["label_check"] = net.label_check_
    if fraction > 0:
        # Reference, not tuned: scikit-learn's label spreading on the 10-NN graph
        # (its default alpha), with the same labels.
        spread = LabelSpreading(kernel="knn", n_neighbors=10).fit(x, known)
        out["label_spreading_acc"] = round(acc(y, spread.transduction_), 4)
        out["harmonic_acc"] = harmonic_acc(x, y, known, seed)
        out["supervised_acc"] = supervised_acc(x, y, known)
        if "params" in out.get("label_check", {}):
            out["own_supervised_acc"] = own_supervised_acc(x, y, known,
                                                           out["label_check"]["params"])
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


#: Variants of ablate: the estimator's parameters, each measured on DEV_SEEDS.
VARIANTS = {
    "pairs only (paper Sec. 5.3)": {"label_weight": 0.0, "labeled_share": 0.0},
    "+ oversampling": {"label_weight": 0.0, "labeled_share": 0.1},
    "+ cross-entropy": {"label_weight": 1.0, "labeled_share": 0.1},
    "cross-entropy, no oversampling": {"label_weight": 1.0, "labeled_share": 0.0},
    "+ Siamese (labeled pairs)": {"label_weight": 1.0, "labeled_share": 0.1,
                                   "affinity_embedding": "siamese"},
    # The labels alone in the graph (the affinity's label_strength): off, the
    # default, twice it, and strong enough that the classifier decides nearly
    # everywhere.
    "label strength 0": {"affinity__label_strength": 0.0},
    "label strength 4": {"affinity__label_strength": 4.0},
    "label strength 8": {"affinity__label_strength": 8.0},
    "label strength 16": {"affinity__label_strength": 16.0},
}


def cmd_ablate(args):
    params = json.loads(args.params)
    rate = matmul_rate()
    names = args.variants or list(VARIANTS)
    keys = [(name, n, r2, noise, s) for name in names for n in args.n
            for r2, noise in args.settings for s in args.seeds]
    jobs = [(n, r2, noise, s, args.fraction, {**params, **VARIANTS[name]})
            for name, n, r2, noise, s in keys]
    trials = [{"variant": key[0], **out}
              for key, out in zip(keys, run_trials(jobs, sys.stdout, args.processes))]
    save_trials("ablate", args.tag or "ablate", args, trials,
                {"params": params, "variants": {k: VARIANTS[k] for k in names},
                 "processes": args.processes, "matmul_gflops": round(rate, 1)})


def rayleigh(w, side):
    """``f^T L f / f^T f`` for the centred indicator f of a two-way split:
    the unnormalized-Laplacian cost the spectral loss puts on that split."""
    f = np.where(side, 1.0, -1.0)
    f -= f.mean()
    return float((w.sum(axis=1) * f**2).sum() - f @ w @ f) / float(f @ f)


def cmd_cause(args):
    """Is it the minibatch? Exact spectral clustering of the graph a minibatch
    samples (``for_full_data``), without labels and with *every* labeled pair
    overridden (the most the paper's rule can do), the share of a random
    minibatch's affinity that the labeled pairs carry, and what that
    minibatch's graph costs for the true split and for both rings halved."""
    import tensorflow as tf

    from spectralnet_tf.affinity import apply_labels
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import cluster_graph

    trials = []
    for n in args.n:
        for r2, noise in args.settings:
            for seed in args.seeds:
                x, y, known = rings_and_labels(n, r2, noise, seed, args.fraction)
                x = x.astype(np.float32)
                w, aff, m = sampled_graph(x, seed)
                w = w.toarray().astype(np.float32)
                out = {"n": n, "outer_radius": r2, "noise": noise, "seed": seed,
                       "fraction": args.fraction, "labeled": int((known >= 0).sum())}
                for name, graph in (("exact_sc_no_labels", w),
                                    ("exact_sc_all_labeled_pairs",
                                     apply_labels(tf.constant(w), tf.constant(known)).numpy())):
                    out[name] = round(acc(y, cluster_graph(graph, 2)[0]), 4)
                rows = np.random.default_rng(seed).choice(n, m, replace=False)
                w0 = aff(x[rows]).numpy()
                # What the loss prefers without labels: the ratio-cut cost of the
                # true split and of the cheapest cut of both rings in halves.
                angle = np.arctan2(x[rows, 1], x[rows, 0])
                out["cut_true"] = round(rayleigh(w0, y[rows] == 1), 4)
                out["cut_halves"] = round(min(rayleigh(w0, np.cos(angle - a) > 0)
                                              for a in np.linspace(0, np.pi, 12, endpoint=False)), 4)
                wb = apply_labels(tf.constant(w0), tf.constant(known[rows])).numpy()
                lab = known[rows] >= 0
                out["batch_labeled_points"] = int(lab.sum())
                out["batch_labeled_pair_share"] = round(
                    float(wb[np.ix_(lab, lab)].sum() / wb.sum()), 5)
                print(json.dumps(out), flush=True)
                trials.append(out)
    save_trials("cause", args.tag or "cause", args, trials, {})


def labeled_grid_trials(paths):
    """Each labeled trial of the grid records at ``paths``, with its data and
    labels made again from the seed: (trial, x, y, partial labels)."""
    for path in paths:
        with open(path) as f:
            record = json.load(f)
        for t in record["trials"]:
            if t["fraction"]:
                yield (t, *rings_and_labels(t["n"], t["outer_radius"], t["noise"], t["seed"],
                                            t["fraction"]))


def cmd_arcs(args):
    """Where the labels fall: per trial of the grid records given, the labeled
    points on each ring, the widest arc of each ring without one (degrees,
    from the centre) and the labeled points that the Bayes rule puts on the
    other ring, beside that trial's ACC. The labels are the grid's own
    (``partial_labels``); nothing here is fitted."""
    from scipy.stats import spearmanr

    trials = []
    for t, x, _, known in labeled_grid_trials(args.records):
        out = {key: t[key] for key in ("n", "outer_radius", "noise", "seed")}
        for ring, name in ((0, "inner"), (1, "outer")):
            angle = np.sort(np.degrees(np.arctan2(x[known == ring, 1], x[known == ring, 0])))
            out[f"{name}_labeled"] = int(angle.size)
            out[f"{name}_widest_unlabeled_arc"] = (
                round(float(np.diff(np.r_[angle, angle[0] + 360.0]).max()), 1)
                if angle.size else 360.0)
        # Labeled points on the other ring's side of the Bayes rule: their
        # true labels pull the cut across the gap.
        lab = known >= 0
        radii = (1.0, t["outer_radius"])
        out["labeled_across_bayes"] = int(
            (rings_bayes_rule(x[lab], t["noise"], radii) != known[lab]).sum())
        out["acc"] = t["acc"]
        trials.append(out)
    widest = [max(t["inner_widest_unlabeled_arc"], t["outer_widest_unlabeled_arc"]) for t in trials]
    rho = spearmanr(widest, [t["acc"] for t in trials])
    save_trials("arcs", args.tag or "arcs", args, trials,
                {"records": [os.path.basename(p) for p in args.records],
                 "spearman_widest_arc_acc": round(float(rho.statistic), 3),
                 "spearman_p": float(f"{rho.pvalue:.3g}")})


def setting_trials(sizes, settings, seeds, fraction):
    """Like ``labeled_grid_trials``, for data not in a grid record (no ACC)."""
    for n in sizes:
        for r2, noise in settings:
            for seed in seeds:
                t = {"n": n, "outer_radius": r2, "noise": noise, "fraction": fraction, "seed": seed}
                yield (t, *rings_and_labels(n, r2, noise, seed, fraction))


def fraction_trials(args):
    """``setting_trials`` for each of ``args.fractions`` (the development
    diagnostics' grid), the points as float32, as the estimator sees them."""
    for fraction in args.fractions:
        for t, x, y, known in setting_trials(args.n, args.settings, args.seeds, fraction):
            yield t, x.astype(np.float32), y, known


def referenced_trials(args):
    """``fraction_trials`` with each trial's two references and its target
    (``target_acc``) in its dict: (dict, x, y, partial labels)."""
    for t, x, y, known in fraction_trials(args):
        out = {**t, "labeled": int((known >= 0).sum()),
               "supervised_acc": supervised_acc(x, y, known),
               "harmonic_acc": harmonic_acc(x, y, known, t["seed"])}
        out["target"] = target_acc(out)
        yield out, x, y, known


def cmd_harmonic(args):
    """The exact semi-supervised reference beside each labeled trial of the
    grid records given: the harmonic function (``spectral.harmonic_labels``)
    of the graph SpectralNet's minibatches sample, with the trial's labels.
    Where it fails too, the graph with these labels does not hold the
    rings apart, whatever trains on it. Beside it, a classifier of the
    labeled points alone (``supervised_acc``). Without records, the same on
    ``--n`` x ``--settings`` x ``--seeds`` (development seeds: nothing is
    trained, so no SpectralNet ACC)."""
    if args.records:
        source = labeled_grid_trials(args.records)
    elif 0 < args.fraction <= 1:
        source = setting_trials(args.n, args.settings, args.seeds, args.fraction)
    else:
        sys.exit(f"semisup.py harmonic: --fraction must be in (0, 1], got --fraction={args.fraction}.")
    trials = []
    for t, x, y, known in source:
        out = {key: t[key] for key in ("n", "outer_radius", "noise", "fraction", "seed", "acc")
               if key in t}
        try:
            out["harmonic_acc"] = harmonic_acc(x, y, known, t["seed"])
            out["supervised_acc"] = supervised_acc(x, y, known)
        except ValueError as err:  # too few labels for a reference
            sys.exit(f"semisup.py harmonic: n={t['n']}, seed {t['seed']}: {err}")
        trials.append(out)
        print(json.dumps(out), flush=True)
    save_trials("harmonic", args.tag or "harmonic", args, trials,
                {"records": [os.path.basename(p) for p in args.records]})


#: Label strengths that ``strengths`` compares: off, and doublings of 1.
STRENGTHS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def reshaped_graphs(x, seed, known, strengths):
    """``sampled_graph(x, seed, known, strength)[0]`` for each of
    ``strengths``, with the affinity and its label classifier fitted once:
    only the classifier's weight in the coordinates changes (strength 0 adds
    zero columns: the graph without labels)."""
    from spectralnet_tf.labelscores import LabelScores

    aff, m = sampled_affinity(x, seed, known, 1.0)
    full = aff.for_full_data(len(x), m)
    graphs = {}
    for strength in strengths:
        full.label_scores_ = LabelScores(None, aff.label_classifier_, strength,
                                         aff.label_scores_.scale)
        graphs[strength] = full.graph(x)
    return graphs


def held_out_brier(x, known, strengths, seed):
    """A label-only score of each strength: over stratified folds of the
    labeled points (k = min(5, smallest class count), shuffled by
    ``seed``), the harmonic function of the graph reshaped by the
    classifier of the other folds' labels, scored on the held-out labels by
    the Brier score (a point no labeled point reaches counts as 1/2 each
    way). Lower is better; nothing but the labels a user has goes in.
    Returns {strength: score}."""
    from sklearn.model_selection import StratifiedKFold

    from spectralnet_tf.spectral import harmonic_scores

    rows = np.flatnonzero(known >= 0)
    folds = StratifiedKFold(min(5, int(np.bincount(known[rows]).min())), shuffle=True,
                            random_state=seed)
    losses = {strength: [] for strength in strengths}
    for _, test in folds.split(rows, known[rows]):
        train = known.copy()
        train[rows[test]] = -1
        for strength, w in reshaped_graphs(x, seed, train, strengths).items():
            f = harmonic_scores(w, train, 2)[rows[test]]
            f = np.where(np.isnan(f), 0.5, f)
            losses[strength].append(((f - np.eye(2)[known[rows[test]]]) ** 2).sum(axis=1))
    return {strength: float(np.mean(np.concatenate(v))) for strength, v in losses.items()}


def cmd_strengths(args):
    """Which label strength the exact reference favours, and whether a
    label-only criterion finds it: per trial of ``--n`` x ``--settings`` x
    ``--fractions`` x ``--seeds``, the ACC of the harmonic function of the
    graph reshaped at each of ``--strengths`` (what SpectralNet's loss says
    on that graph with the labels held), its held-out Brier score
    (``held_out_brier``), and the strength that score chooses (the lowest;
    ties to the weaker strength), beside the two references. Nothing is
    trained: development seeds by default."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    trials = []
    for out, x, y, known in referenced_trials(args):
        graphs = reshaped_graphs(x, out["seed"], known, args.strengths)
        brier = held_out_brier(x, known, args.strengths, out["seed"])
        out["reshaped_acc"] = {f"{s:g}": round(acc(y, harmonic_labels(w, known, 2)), 4)
                               for s, w in graphs.items()}
        out["brier"] = {f"{s:g}": round(brier[s], 4) for s in args.strengths}
        out["chosen"] = min(out["brier"], key=out["brier"].get)  # first: the weaker
        trials.append(out)
        print(json.dumps(out), flush=True)
    save_trials("strengths", args.tag or "strengths", args, trials,
                {"strengths": list(args.strengths)})


def draw_accs(x, y, known, seed, draws, strength):
    """A trial's two label-dependent figures under each of ``draws``
    cross-validation draws of the label classifier (its folds shuffled by
    the draw, 0 to draws - 1): that classifier's ACC alone (the "labels
    alone" reference is draw 0) and the ACC of the harmonic function of the
    graph the minibatches sample, reshaped at ``strength`` by it (what the
    label term asks a fit for). Returns (SVM ACCs, reshaped ACCs)."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels

    aff, m = sampled_affinity(x, seed, strength=strength)
    svm, reshaped = [], []
    for draw in range(draws):
        aff.fit_labels(x, known, x, seed=draw)
        svm.append(round(acc(y, aff.label_classifier_.predict(x)), 4))
        w = aff.for_full_data(len(x), m).graph(x)
        reshaped.append(round(acc(y, harmonic_labels(w, known, 2)), 4))
    return svm, reshaped


def cmd_draws(args):
    """How much of the target is the classifier's fold draw: per trial of
    ``--n`` x ``--settings`` x ``--fractions`` x ``--seeds``, the SVM of the
    labels alone and the graph it reshapes (``draw_accs``) under
    ``--draws`` fold draws, beside the trial's target, whose SVM is draw 0
    as in the grid. Nothing is trained: development seeds by default."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    strength = GaussianKNNAffinity().label_strength if args.strength is None else args.strength
    trials = []
    for t, x, y, known in fraction_trials(args):
        svm, reshaped = draw_accs(x, y, known, t["seed"], args.draws, strength)
        out = {**t, "labeled": int((known >= 0).sum()), "supervised_acc": svm[0],
               "harmonic_acc": harmonic_acc(x, y, known, t["seed"]),
               "svm_by_draw": svm, "reshaped_by_draw": reshaped}
        out["target"] = target_acc(out)
        trials.append(out)
        print(json.dumps(out), flush=True)
    save_trials("draws", args.tag or "draws", args, trials,
                {"draws": args.draws, "strength": strength})


def solver_accs(x, y, known, seed, strength):
    """The ACC of the classes each of the label term's candidate solvers
    (``spectral.harmonic_labels``, ``spectral.poisson_labels``) gives on the
    graph the term reads: the minibatches' graph reshaped at ``strength`` by
    the label classifier (``sampled_graph``). Returns {solver: ACC}."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import harmonic_labels, poisson_labels

    w = sampled_graph(x, seed, known, strength)[0]
    return {name: round(acc(y, solve(w, known, 2)), 4)
            for name, solve in (("harmonic", harmonic_labels), ("poisson", poisson_labels))}


def cmd_targets(args):
    """Which solver the label term should ask for its classes: per trial of
    ``--n`` x ``--settings`` x ``--fractions`` x ``--seeds``, the ACC of the
    classes the harmonic function and Poisson learning give on the graph
    the term reads (``solver_accs``, at the affinity's label strength),
    beside the trial's target. Nothing is trained: development seeds by
    default."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    strength = GaussianKNNAffinity().label_strength
    trials = []
    for out, x, y, known in referenced_trials(args):
        out["solver_acc"] = solver_accs(x, y, known, out["seed"], strength)
        trials.append(out)
        print(json.dumps(out), flush=True)
    save_trials("targets", args.tag or "targets", args, trials, {"strength": strength})


def kept(check):
    """Whether the current check kept the label classifier (None: nothing
    to check, kept)."""
    return check is None or check["keep"]


def followed(check):
    """Whether a check asked for the label classifier's own classes, where
    its held-out answers led the kept graph's by more than one standard
    error (a change tried and not adopted; its records only)."""
    return check is not None and check.get("follow", False)


def kept_on_poisson(check):
    """Whether a check that scored the reshaped graph by Poisson learning
    alone (the reading the label term takes from it) against the graph's
    better reading kept the label classifier (a change tried and not
    adopted; its records only. None: nothing to check, kept)."""
    return check is None or check["reshaped_poisson"] > check["graph"]


def kept_before(check):
    """Whether the check before the reshaped graph was scored kept the label
    classifier: its own held-out accuracy above Poisson learning's on the
    graph (None: nothing to check, kept)."""
    return check is None or check["classifier"] > check["poisson"]


def gate_accs(x, y, known, seed, strength, k=2):
    """The label term's classes (Poisson learning on the minibatches' graph,
    as ``solver_accs``) with the graph reshaped at ``strength`` always, and
    with the reshaping kept only as ``train.check_label_classifier`` decides
    ("checked"), or, as the check before decided, only where the
    classifier's own held-out accuracy beats Poisson learning's on the graph
    ("checked, classifier"). Returns ({name: ACC}, the check's dict or
    None)."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import poisson_labels
    from spectralnet_tf.train import check_label_classifier

    aff, m = sampled_affinity(x, seed, known, strength)
    check = check_label_classifier(aff, x, known, batch_size=m, seed=seed, n_clusters=k)
    full = aff.for_full_data(len(x), m)
    accs = {"reshaped": round(acc(y, poisson_labels(full.graph(x), known, k)), 4)}
    keeps = {"checked": kept(check), "checked, classifier": kept_before(check)}
    if not all(keeps.values()):
        full.forget_labels()
        plain = round(acc(y, poisson_labels(full.graph(x), known, k)), 4)
    for name, keep in keeps.items():
        accs[name] = accs["reshaped"] if keep else plain
    return accs, check


def digits_trials(args):
    """Development trials on scikit-learn's 8x8 digits (1,797 points, 10
    classes, pixels / 16 as float32), each of ``args.fractions`` x
    ``args.seeds`` labeled as the rings are (``partial_labels``), with the
    references of ``referenced_trials`` and the graph alone
    (``unsupervised_acc``) in its dict: (dict, x, y, partial labels)."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype(np.float32), y.astype(np.int64)
    for fraction in args.fractions:
        for seed in args.seeds:
            known = partial_labels(y, fraction, seed)
            out = {"data": "digits", "n": len(x), "fraction": fraction, "seed": seed,
                   "labeled": int((known >= 0).sum()),
                   "supervised_acc": supervised_acc(x, y, known),
                   "harmonic_acc": harmonic_acc(x, y, known, seed, k=10),
                   "unsupervised_acc": unsupervised_acc(x, y, seed, k=10)}
            out["target"] = target_acc(out)
            yield out, x, y, known


def cmd_gate(args):
    """Whether the label classifier should reshape the graph only as the
    check decides (``gate_accs``): per trial of ``--n`` x
    ``--settings`` x ``--fractions`` x ``--seeds`` (or, with ``--data
    digits``, of ``--fractions`` x ``--seeds`` on the digits,
    ``digits_trials``), the label term's classes on the graph reshaped
    always and as checked, and the check's held-out accuracies, beside the
    trial's target. Nothing is trained: development seeds by default."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    strength = GaussianKNNAffinity().label_strength
    digits = args.data == "digits"
    trials = []
    for out, x, y, known in (digits_trials(args) if digits else referenced_trials(args)):
        out["solver_acc"], out["check"] = gate_accs(x, y, known, out["seed"], strength,
                                                    k=10 if digits else 2)
        trials.append(out)
        print(json.dumps(out), flush=True)
    save_trials("gate", args.tag or "gate", args, trials, {"strength": strength})


def _gate_table(trials, strength, tie_break=None):
    """One row per labeled fraction (and one for all) and graph of a
    ``gate`` record, with how often the check dropped the classifier; where
    the record holds both checks, the one before (the classifier's own
    held-out score against Poisson learning's) too."""
    target = ("max(SVM, harmonic, the graph alone)" if "unsupervised_acc" in trials[0]
              else "max(SVM, harmonic)")
    graphs = ["reshaped"] + [g for g in ("checked, classifier", "checked, graphs", "checked",
                                         "checked, read", "checked, Poisson")
                             if g in trials[0]["solver_acc"]]
    follow = "checked, graphs" in graphs  # the record of the classifier's classes tried
    how = ("as the check decides" if "checked, classifier" in graphs
           else "only where the label classifier's held-out accuracy beats the graph's")
    read = (" \"Read as the check picks\" (a change tried, not adopted): on the checked "
            "graph, the classes of the reading the check scored higher (Poisson learning, or "
            "the graph's own cut named by the labels)." if "checked, read" in graphs else "")
    read += (" \"The classifier's classes where it leads\" (a change tried, not adopted): "
             "as checked, but the label classifier's own classes where its held-out answers "
             "led the checked graph's by more than one standard error." if follow else "")
    read += {None: "", "grid": " The label classifier's C and gamma: the first of the "
             "settings tied at the best CV score, in grid order, as the estimator picks them.",
             "cut": " The label classifier's C and gamma (a change tried, not adopted): of the "
             "settings tied at the best CV score, the one whose classes the graph as it is "
             "cuts least."}[tie_break]
    print(f"{len(trials)} trials. Each row: the classes Poisson learning gives on the graph "
          f"reshaped at strength {strength:g} always, or {how}, against each trial's target "
          f"({target} − 0.005).{read}\n")
    groups = list(_groups(trials, ["fraction"]).items()) + [(("all",), trials)]
    rows = []
    for (fraction,), group in groups:
        for graph in graphs:
            label = "always reshaped"
            if graph == "checked" and follow:
                follows = sum(followed(t["check"]) for t in group)
                label = f"the classifier's classes where it leads ({follows} followed)"
            elif graph in ("checked", "checked, graphs"):
                dropped = sum(not kept(t["check"]) for t in group)
                label = f"checked ({dropped} dropped)"
            elif graph == "checked, Poisson":
                dropped = sum(not kept_on_poisson(t["check"]) for t in group)
                label = f"checked on the reshaped graph's Poisson score ({dropped} dropped)"
            elif graph == "checked, read":
                cut = sum(t["check"] is not None and t["check"]["reading"] == "cut"
                          for t in group)
                label = f"checked, read as the check picks ({cut} by the cut)"
            elif graph == "checked, classifier":
                dropped = sum(not kept_before(t["check"]) for t in group)
                label = f"checked by the classifier's own score ({dropped} dropped)"
            rows.append(([str(fraction), label], group,
                         lambda t, g=graph: t["solver_acc"][g]))
    _margin_rows(["labeled fraction", "graph"], rows)


def graph_accs(x, y, known, seed, strength):
    """The ACC of the label term's classes by the graph they are solved on,
    for data larger than a subsample: on a random subsample
    (``train.label_targets``, the current code), on all points of the graph
    the minibatches sample (``for_full_data``), and on all points of the
    affinity's own kNN graph at its set ranks. Each on the subsample's rows,
    and the latter two on all points. Returns {name: ACC}."""
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import poisson_labels
    from spectralnet_tf.train import label_targets

    aff, m = sampled_affinity(x, seed, known, strength)
    z = aff.embed_all(x)
    sub = label_targets(aff, z, known, 2, batch_size=m, seed=seed)
    rows = sub.sum(axis=1) > 0
    graphs = {"minibatch graph": aff.for_full_data(len(x), m), "own kNN graph": aff}
    classes = {"subsample": sub.argmax(axis=1),
               **{name: poisson_labels(g.coordinate_graph(z, "exact"), known, 2)
                  for name, g in graphs.items()}}
    out = {f"{name}, subsample rows": round(acc(y[rows], c[rows]), 4)
           for name, c in classes.items()}
    out.update({f"{name}, all points": round(acc(y, classes[name]), 4) for name in graphs})
    return out


def cmd_target_graphs(args):
    """On which graph the label term should solve for its classes once the
    data outgrow a subsample: per trial of ``--n`` x ``--settings`` x
    ``--fractions`` x ``--seeds``, the ACC of each graph's classes
    (``graph_accs``, at the affinity's label strength). Nothing is trained:
    development seeds by default."""
    from spectralnet_tf.affinity import GaussianKNNAffinity

    strength = GaussianKNNAffinity().label_strength
    trials = []
    for t, x, y, known in fraction_trials(args):
        t["labeled"] = int((known >= 0).sum())
        t["graph_acc"] = graph_accs(x, y, known, t["seed"], strength)
        trials.append(t)
        print(json.dumps(t), flush=True)
    save_trials("target-graphs", args.tag or "target-graphs", args, trials,
                {"strength": strength})


def _target_graphs_table(trials):
    """Per labeled fraction (and over all): how often each all-points graph's
    classes are at least as right as the subsample's on its rows."""
    print(f"{len(trials)} trials. ACC on the subsample's rows against the subsample's own "
          "classes (the current code).\n")
    print("| labeled fraction | graph | trials ≥ subsample | trials < subsample | mean ACC "
          "| subsample's mean ACC | worst difference |\n|" + " --- |" * 7)
    groups = list(_groups(trials, ["fraction"]).items()) + [(("all",), trials)]
    for (fraction,), group in groups:
        base = np.array([t["graph_acc"]["subsample, subsample rows"] for t in group])
        for name in ("minibatch graph", "own kNN graph"):
            got = np.array([t["graph_acc"][f"{name}, subsample rows"] for t in group])
            diff = got - base
            print(f"| {fraction} | {name} | {int((diff >= 0).sum())} of {len(group)} | "
                  f"{int((diff < 0).sum())} | {got.mean():.4f} | {base.mean():.4f} | "
                  f"{diff.min():+.4f} |")


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
                       **({"label_check": r["label_check"]} if "label_check" in r else {}),
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


def _margin_rows(head, rows):
    """A table of ``(cells, trials, pick)`` rows: where the ACC ``pick``
    gives per trial meets the trial's target, and by how much it misses
    where it does not. ``head`` names the leading cells."""
    print("| " + " | ".join(head) + " | trials ≥ target | misses by > 0.02 | worst margin "
          "| median margin |\n|" + " --- |" * (len(head) + 4))
    for cells, trials, pick in rows:
        margin = np.array([pick(t) - t["target"] for t in trials])
        print(f"| {' | '.join(cells)} | {int((margin >= 0).sum())} of {len(trials)} | "
              f"{int((margin < -0.02).sum())} | {margin.min():+.3f} | {np.median(margin):+.3f} |")


def _strengths_table(trials):
    """One row per rule of a ``strengths`` record: each fixed strength, and
    the held-out Brier score's choice."""
    rows = [([f"strength {s}"], trials, lambda t, s=s: t["reshaped_acc"][s])
            for s in trials[0]["reshaped_acc"]]
    rows.append((["chosen by held-out Brier score"], trials,
                 lambda t: t["reshaped_acc"][t["chosen"]]))
    print(f"{len(trials)} trials. Each row: the harmonic function of the graph reshaped at that "
          "strength, against each trial's target (max(SVM, harmonic) − 0.005).\n")
    _margin_rows(["rule"], rows)


def _targets_table(trials, strength):
    """One row per labeled fraction and solver of a ``targets`` record, and
    one per solver over all of them."""
    print(f"{len(trials)} trials. Each row: the classes a solver gives on the graph reshaped at "
          f"strength {strength:g}, against each trial's target (max(SVM, harmonic) − 0.005).\n")
    groups = list(_groups(trials, ["fraction"]).items()) + [(("all",), trials)]
    _margin_rows(["labeled fraction", "solver"],
                 [([str(fraction), solver], group, lambda t, s=solver: t["solver_acc"][s])
                  for (fraction,), group in groups for solver in trials[0]["solver_acc"]])


def _draws_table(trials):
    """One row per labeled fraction of a ``draws`` record (and one for all):
    how often the SVM of another fold draw meets the trial's own target (the
    reference's noise at the target's margin), and how often the reshaped
    graph does in every draw, in some, and in none."""
    n_draws = len(trials[0]["svm_by_draw"])
    print(f"{len(trials)} trials, {n_draws} fold draws each (draw 0 is the reference's). "
          "Target: max(SVM of draw 0, harmonic) − 0.005.\n")
    print("| labeled fraction | trials | SVM draws 1–%d ≥ target | trials with an SVM draw under "
          "its own target | reshaped graph: draws ≥ target | reshaped graph ≥ target in every "
          "draw / some / none | median spread over draws: SVM / reshaped |\n|" % (n_draws - 1)
          + " --- |" * 7)
    groups = list(_groups(trials, ["fraction"]).items()) + [(("all",), trials)]
    for (fraction,), group in groups:
        other = [[a >= t["target"] for a in t["svm_by_draw"][1:]] for t in group]
        hits = [[a >= t["target"] for a in t["reshaped_by_draw"]] for t in group]
        every = sum(all(h) for h in hits)
        none = sum(not any(h) for h in hits)
        spread = [np.median([max(t[k]) - min(t[k]) for t in group])
                  for k in ("svm_by_draw", "reshaped_by_draw")]
        print(f"| {fraction} | {len(group)} | {sum(map(sum, other))} of {sum(map(len, other))} "
              f"| {sum(not all(o) for o in other)} | {sum(map(sum, hits))} of "
              f"{sum(map(len, hits))} | {every} / {len(group) - every - none} / {none} "
              f"| {spread[0]:.3f} / {spread[1]:.3f} |")


def cmd_table(args):
    with open(args.record) as f:
        record = json.load(f)
    print(record_heading(record)
          + (f", f32 matmul {record['matmul_gflops']} GFLOP/s" if "matmul_gflops" in record else "")
          + (f", {record['processes']} processes of 1 thread" if record.get("processes", 1) > 1 else "")
          + ".\n")
    if record["kind"] == "arcs":
        print(f"Spearman correlation of the widest unlabeled arc (either ring) with ACC over "
              f"these {len(record['trials'])} trials: {record['spearman_widest_arc_acc']} "
              f"(p = {record['spearman_p']:.2g}).\n")
    if record["kind"] in ("cause", "arcs"):  # one row per trial, every field
        head = list(record["trials"][0])
        print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
        for t in record["trials"]:
            print("| " + " | ".join(str(t[k]) for k in head) + " |")
        return
    if record["kind"] == "harmonic":
        keys = ["n", "outer_radius", "noise", "fraction"]
        refs = [("acc", "SpectralNet"), ("harmonic_acc", "harmonic"),
                ("supervised_acc", "labeled-only SVM")]
        refs = [r for r in refs if all(r[0] in t for t in record["trials"])]  # older: no SVM
        head = keys + ["seeds"] + [c for _, name in refs for c in (f"{name} ACC per seed", "min")]
        head.append("seeds ≥ 0.95: " + " / ".join(name for _, name in refs))
        print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
        for key, group in _groups(record["trials"], keys).items():
            cells = list(key) + [" ".join(str(t["seed"]) for t in group)]
            for k, _ in refs:
                accs = [t[k] for t in group]
                cells += [" ".join(f"{a:.3f}" for a in accs), f"{min(accs):.4f}"]
            cells.append(" / ".join(str(sum(t[k] >= 0.95 for t in group)) for k, _ in refs))
            print("| " + " | ".join(str(c) for c in cells) + " |")
        return
    if record["kind"] == "strengths":
        _strengths_table(record["trials"])
        return
    if record["kind"] == "draws":
        _draws_table(record["trials"])
        return
    if record["kind"] == "gate":
        _gate_table(record["trials"], record["strength"], record.get("tie_break"))
        return
    if record["kind"] == "targets":
        _targets_table(record["trials"], record["strength"])
        return
    if record["kind"] == "target-graphs":
        _target_graphs_table(record["trials"])
        return
    if record["kind"] == "mnist":
        rate = record["matmul_gflops"]
        # Newer records: the labels alone (SVM in code space) beside each
        # labeled run; with --exact-knn, the run's own graph on all points.
        refs = [(key, name) for key, name in MNIST_REFERENCES.items()
                if any(key in t for t in record["trials"])]
        checked = any("label_check" in t for t in record["trials"])  # newer still
        # Newest: the check scores the graph the classifier reshapes, not the classifier.
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
    keys = (["variant"] if record["kind"] == "ablate" else []) + ["n", "outer_radius", "noise", "fraction"]
    harmonic = any("harmonic_acc" in t for t in record["trials"])  # newer records only
    target = all("supervised_acc" in t for t in record["trials"])  # newer still
    head = keys + ["Bayes", "seeds", "ACC per seed", "min ACC", "label spreading ACC"]
    head += ["harmonic ACC"] * harmonic
    head += ["SVM ACC", "target: max(SVM, harmonic) − 0.005", "seeds ≥ target"] * target
    own = any("own_supervised_acc" in t for t in record["trials"])  # newest records
    head += ["the fit's own SVM ACC"] * own
    head += ["s per fit (median)", "s per fit × GFLOP/s / 1000"]
    print("| " + " | ".join(head) + " |\n|" + " --- |" * len(head))
    bayes = record.get("bayes", {})
    for key, group in _groups(record["trials"], keys).items():
        accs = [t["acc"] for t in group]
        sec = float(np.median([t["seconds"] for t in group]))
        setting = dict(zip(keys, key))
        b = bayes.get(f"{setting['outer_radius']}/{setting['noise']}")
        if b is None:  # records of ablate do not keep it
            b = rings_bayes_accuracy(setting["noise"], (1.0, setting["outer_radius"]))
        cells = list(key) + [f"{b:.4f}" if b else "", " ".join(str(t["seed"]) for t in group),
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


def cmd_plot(args):
    """ACC over noise, one panel per outer radius and one colour per (n,
    labelled fraction). By default the min (o) and median (x) over seeds;
    with ``--margin`` every trial's ACC less its target (max(SVM, harmonic)
    − 0.005), so that a point under the line at 0 is a trial that misses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = []
    for path in args.record:
        with open(path) as f:
            records.append(json.load(f))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    colors = {}  # one colour per series in both panels
    trials = [t for r in records for t in r["trials"]]  # seeds of one setting may span records
    keys = sorted({(t["n"], t["fraction"]) for t in trials})  # series side by side in --margin
    for ax, r2 in zip(axes, sorted({t["outer_radius"] for t in trials})):
        series = _groups([t for t in trials if t["outer_radius"] == r2], ["n", "fraction"])
        for (n, fraction), group in sorted(series.items()):
            label = f"n={n}, {'%g%% labels' % (100 * fraction) if fraction else 'no labels'}"
            color = colors.setdefault(label, f"C{len(colors)}")
            if args.margin:
                shift = 0.0015 * (keys.index((n, fraction)) - (len(keys) - 1) / 2)
                ax.plot([t["noise"] + shift for t in group],
                        [t["acc"] - target_acc(t) for t in group],
                        "o", color=color, alpha=0.7, label=label)
                continue
            by_noise = _groups(group, ["noise"])
            noise = sorted(k[0] for k in by_noise)
            accs = [[t["acc"] for t in by_noise[(s,)]] for s in noise]
            ax.plot(noise, [min(a) for a in accs], "o-", color=color, label=label + " (min of seeds)")
            ax.plot(noise, [np.median(a) for a in accs], "x:", color=color)
        ax.axhline(0.0 if args.margin else 0.95, color="gray", lw=0.8)
        if args.margin:  # near misses and misses by 0.2 on one axis
            ax.set_yscale("symlog", linthresh=0.01)
        ax.set_title(f"rings of radius 1 and {r2}")
        ax.set_xlabel("noise (std per coordinate)")
    axes[0].set_ylabel("ACC − target, one point per seed" if args.margin
                       else "ACC (o: min over seeds, x: median)")
    handles = {h.get_label(): h for ax in axes for h in ax.get_lines() if not h.get_label().startswith("_")}
    axes[0].legend(handles.values(), handles.keys(), fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


def _setting(text):
    r2, noise = text.split("/")
    return float(r2), float(noise)


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("grid", "ablate", "cause"):
        q = sub.add_parser(name)
        q.add_argument("--seeds", type=int, nargs="+",
                       default=DEV_SEEDS if name == "ablate" else [0, 1, 2, 3, 4])
        q.add_argument("--n", type=int, nargs="+", default=SIZES if name == "grid" else [1500])
        q.add_argument("--fraction", type=float, default=0.02, help="labeled fraction (0: none)")
        if name == "grid":
            q.add_argument("--fractions", type=float, nargs="+", default=None,
                           help="several labeled fractions (instead of --fraction)")
        q.add_argument("--params", default="{}", help="JSON of SpectralNet keyword arguments")
        q.add_argument("--tag", default=None, help="record name (default: the command)")
        q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
        q.add_argument("--processes", type=int, default=1,
                       help="trials in parallel, one thread each (default: 1 process)")
        if name == "ablate":
            q.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=None)
        q.add_argument("--settings", type=_setting, nargs="+",
                       default=SETTINGS if name == "grid" else [(1.5, 0.11)],
                       help="OUTER_RADIUS/NOISE pairs")
    for name, about in (("arcs", "labeled points and unlabeled arcs per grid trial"),
                        ("harmonic", "the exact semi-supervised reference per grid trial")):
        q = sub.add_parser(name, help=about)
        q.add_argument("records", nargs="+" if name == "arcs" else "*", help="grid records")
        q.add_argument("--tag", default=None)
        q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
        if name == "harmonic":  # without records: data of its own
            q.add_argument("--n", type=int, nargs="+", default=[3000])
            q.add_argument("--settings", type=_setting, nargs="+",
                           default=[(1.5, 0.10), (1.5, 0.11)], help="OUTER_RADIUS/NOISE pairs")
            q.add_argument("--seeds", type=int, nargs="+", default=DEV_SEEDS)
            q.add_argument("--fraction", type=float, default=0.02, help="labeled fraction")
            q.epilog = "--n, --settings, --seeds and --fraction apply without records only."
    for name, about in (("strengths", "the exact reference at each label strength"),
                        ("draws", "the references and the reshaped graph by fold draw"),
                        ("targets", "the label term's classes by each graph solver"),
                        ("gate", "the label term's classes with the classifier checked"),
                        ("target-graphs", "the label term's classes by the graph solved on")):
        q = sub.add_parser(name, help=about)
        beyond = name == "target-graphs"  # larger than a subsample, fewer labels
        q.add_argument("--n", type=int, nargs="+", default=[20000] if beyond else [1500])
        q.add_argument("--settings", type=_setting, nargs="+", default=SETTINGS,
                       help="OUTER_RADIUS/NOISE pairs")
        q.add_argument("--seeds", type=int, nargs="+", default=DEV_SEEDS)
        q.add_argument("--fractions", type=float, nargs="+",
                       default=[0.001, 0.01] if beyond else [0.01, 0.02, 0.05])
        if name == "strengths":
            q.add_argument("--strengths", type=float, nargs="+", default=list(STRENGTHS))
        elif name == "gate":
            q.add_argument("--data", choices=["rings", "digits"], default="rings",
                           help="digits: scikit-learn's 8x8 digits (--fractions x --seeds; "
                                "--n and --settings unused)")
        elif name == "draws":
            q.add_argument("--draws", type=int, default=8,
                           help="fold draws per trial (0 to DRAWS - 1)")
            q.add_argument("--strength", type=float, default=None,
                           help="label strength (default: the affinity's)")
        q.add_argument("--tag", default=None)
        q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    q = sub.add_parser("mnist")
    q.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.001, 0.01, 0.02],
                   help="labeled fractions (0: the unsupervised run)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--runs", default=os.path.join(ROOT, "runs"), help="where the run directories go")
    q.add_argument("--exact-knn", action="store_true",
                   help="run.py's --exact-knn: beside each run, exact spectral clustering of its "
                        "own graph on all points and, with labels, that graph's harmonic function")
    q.add_argument("--tag", default=None, help="record name (default: mnist-labels-seedS)")
    q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    q = sub.add_parser("table")
    q.add_argument("record")
    q = sub.add_parser("plot")
    q.add_argument("record", nargs="+")
    q.add_argument("--out", required=True)
    q.add_argument("--margin", action="store_true",
                   help="each trial's ACC less its target instead of ACC (labelled grids)")
    args = p.parse_args(argv)
    {"grid": cmd_grid, "ablate": cmd_ablate, "cause": cmd_cause, "arcs": cmd_arcs,
     "harmonic": cmd_harmonic, "strengths": cmd_strengths, "draws": cmd_draws,
     "targets": cmd_targets, "gate": cmd_gate, "target-graphs": cmd_target_graphs,
     "mnist": cmd_mnist,
     "table": cmd_table, "plot": cmd_plot}[args.command](args)


if __name__ == "__main__":
    main()
