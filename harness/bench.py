#!/usr/bin/env python
"""Benchmarks (not tests). Each writes a record (command, commit, date,
machine, figures) to benchmarks/results/; ``report`` renders the records into
the marked blocks of BENCHMARKS.md and README.md.

    python scripts/bench.py matmul            # this machine's matmul rate (the floor's unit)
    python scripts/bench.py step              # one spectral step at batch 1024 vs the FLOP floor
    python scripts/bench.py run -- --dset mnist   # scripts/run.py phases, wall time, peak RSS
    python scripts/bench.py serve --model export/mnist/1   # SavedModel throughput
    python scripts/bench.py reuters-scale     # run.py --dset reuters peak RSS as n grows
    python scripts/bench.py scale --sizes 70000 250000 1000000   # infinite MNIST
    python scripts/bench.py kmeans-sample     # k-means fitted on a sample vs all, 1M codes
    python scripts/bench.py profile           # where a spectral step's time goes; float32 vs bf16, graph vs XLA
    python scripts/bench.py small-fit         # a default fit of 5,000 x 100, and where its time goes
    python scripts/bench.py inputs            # default fits of blobs moved or in other units
    python scripts/bench.py group-weight      # the weight of a pair of one group, on digits with copies
    python scripts/bench.py suite             # every method on the development suite (harness/suite.py)
    python scripts/bench.py defaults graphs   # the rule that chose the defaults (harness/defaults.py)
    python scripts/bench.py report            # = scripts/report.py: BENCHMARKS.md from the records
"""

import argparse
import json
import os
import re
import shutil
import sys
import time

import numpy as np

from .bench_scale import (bench_kmeans_rows, bench_kmeans_sample, bench_pairs,
                          bench_reuters_scale, bench_scale)
from .current import defaults_config
from .records import append, matmul_rate, note_start, peak_rss_gib
from .report import report


def spectral_step_flops(m, dims):
    """FLOPs of one iteration: ortho forward + gradient forward/backward + loss."""
    k = dims[-1]
    fwd = 2 * m * sum(a * b for a, b in zip(dims[:-1], dims[1:]))
    # forward on the ortho batch, forward + backward (2× forward) on the gradient batch,
    # and the m×m affinity / trace-form loss terms.
    return fwd + 3 * fwd + 2 * m * m * (dims[0] + 2 * k)


def bench_step(args, command):
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import Config, Data, train_spectralnet

    rate = matmul_rate()
    dims = (10, 1024, 1024, 512, 10)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20000, 10)).astype(np.float32)
    aff = GaussianKNNAffinity(n_nbrs=3, scale_nbr=2).fit(x, 1024)
    model = build_spectralnet(10, 10, dims[1:-1], seed=0)
    # No embedding: the affinity's coordinates are the points themselves. No
    # schedule: three epochs at one rate.
    data = Data(x[:18000], x[18000:], x[:18000], x[18000:])
    hist = train_spectralnet(model, aff, data, Config(batch_size=1024, ortho_batch_size=1024,
                                                      epochs=3, steps_per_epoch=args.steps))
    step_ms = 1000 * min(hist["epoch_seconds"][1:]) / args.steps
    flops = spectral_step_flops(1024, dims)
    floor_ms = 1000 * flops / (rate * 1e9)
    append("Spectral step at batch 1024 (10-1024-1024-512-10, kNN affinity)",
           ["matmul GFLOP/s (2048², fp32)", "step GFLOP", "floor ms", "measured ms/step", "of floor"],
           [[f"{rate:.0f}", f"{flops / 1e9:.2f}", f"{floor_ms:.1f}", f"{step_ms:.1f}",
             f"{step_ms / floor_ms:.2f}×"]], command)


def _timed(fn, batches):
    """ms per call of a compiled ``fn``, called once on each of ``batches``
    (tuples of arguments) after a warm-up call on the first: a new minibatch
    each call, as in training, so that nothing computed from a fixed input
    can be folded into the compiled function."""
    import tensorflow as tf

    fn(*batches[0])
    start = time.perf_counter()
    for args in batches[1:]:
        out = fn(*args)
    tf.nest.map_structure(lambda t: t.numpy(), out)
    return 1000 * (time.perf_counter() - start) / (len(batches) - 1)


def bench_profile(args, command):
    """Each part of one SpectralNet iteration at batch 1024 (10-1024-1024-512-10),
    compiled and timed alone on a new minibatch each call, for a float32 and
    a bfloat16 network body
    (``dtype_policy``: the hidden layers; the size-k layer and Orthonorm
    stay float32, as in training), each as a TensorFlow graph (how training
    runs) and compiled by XLA (``jit_compile=True``)."""
    import tensorflow as tf

    import keras

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet, orthonorm_input
    from spectralnet_tf.train import gradient_step

    m, repeats = 1024, args.steps
    rate = matmul_rate()  # this process's unit, beside its timings
    rng = np.random.default_rng(0)
    xs = [tf.constant(rng.normal(size=(m, 10)).astype(np.float32)) for _ in range(repeats + 1)]
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(xs[0].numpy(), m)
    ws = [aff.kernel_matrix(x) for x in xs]
    rows = []
    for policy in ("float32", "mixed_bfloat16"):
        for compiler, jit in (("graph", False), ("XLA", True)):
            model = build_spectralnet(10, 10, (1024, 1024, 512), seed=0, dtype_policy=policy)
            body = orthonorm_input(model)
            orthonorm = model.layers[-1]
            optimizer = keras.optimizers.RMSprop(1e-3)
            optimizer.build(model.trainable_variables)

            @tf.function(jit_compile=jit)
            def ortho(x):
                return orthonorm.orthogonalize(tf.cast(body(x, training=False), tf.float32))

            @tf.function(jit_compile=jit)
            def affinity(x):
                return aff.kernel_matrix(x)

            @tf.function(jit_compile=jit)
            def gradient(x, w):
                return gradient_step(model, optimizer, x, w)

            @tf.function(jit_compile=jit)
            def step(x_ortho, x):
                ortho(x_ortho)
                return gradient(x, affinity(x))

            parts = {name: _timed(fn, batches) for name, fn, batches in
                     (("ortho step", ortho, [(x,) for x in xs]),
                      ("affinity", affinity, [(x,) for x in xs]),
                      ("gradient step", gradient, list(zip(xs, ws))),
                      ("whole iteration", step, list(zip(xs[::-1], xs))))}
            rows += [[policy, compiler, name, f"{ms:.1f}", f"{rate:.0f}",
                      f"{ms * rate / 200:.1f}"] for name, ms in parts.items()]
    append("Where a spectral iteration's time goes (batch 1024, 10-1024-1024-512-10)",
           ["network dtype policy", "compiled as", "part (compiled alone)", "ms",
            "matmul GFLOP/s (fp32)", "ms at 200 GFLOP/s"], rows, command)


def bench_matmul(args, command):
    import tensorflow as tf

    rows = [[name, f"{matmul_rate(dtype=dt):.0f}"] for name, dt in
            (("float32", tf.float32), ("bfloat16", tf.bfloat16))]
    append("Matmul rate, 2048² (tf.function)", ["dtype", "GFLOP/s"], rows, command)


#: The illustrative sets whose number of clusters ``nclusters`` asks for.
DEFAULT_FIT_SETS = ("cc", "moons", "circles", "spirals")


def bench_small_fit(args, command):
    """A default fit on small data, and where its time goes, beside
    scikit-learn's SpectralClustering on the same array, per seed:
    ``make_blobs(5000, 100 features, 5 centres)``, the suite's
    ``wide_blobs``. The fit's seconds split
    into the warm start (``history_["init_seconds"]``), Algorithm 1's
    epochs (the first, which traces the compiled step, apart; the others'
    seconds per iteration) and the rest (the graph's scale and pieces, the
    eigenvectors of the warm start's subsample, embedding, k-means); then
    the whole ``spectralnet fit`` command as a user runs it, TensorFlow's
    start included (its wall time, a subprocess), with the seconds its
    ``summary.json`` gives TensorFlow's start, the fit and the plots."""
    import subprocess
    import tempfile

    from sklearn.cluster import SpectralClustering

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.metrics import acc

    from .suite_sets import wide_blobs

    rows = []
    for seed in args.seeds:
        x, y, k, _ = wide_blobs(seed)
        n, d = x.shape
        start = time.perf_counter()
        sc = SpectralClustering(k, affinity="nearest_neighbors", random_state=seed).fit(x)
        sc_seconds = time.perf_counter() - start
        start = time.perf_counter()
        net = SpectralNet(k, random_state=seed).fit(x)
        seconds = time.perf_counter() - start
        h = net.history_
        epochs, steps = len(h["loss"]), net.plan(n, d).steps_per_epoch
        first = h["epoch_seconds"][0]
        per_step = (np.mean(h["epoch_seconds"][1:]) / steps) if epochs > 1 else float("nan")
        init = h.get("init_seconds", 0.0)
        with tempfile.TemporaryDirectory() as folder:
            np.save(os.path.join(folder, "x.npy"), x)
            start = time.perf_counter()
            subprocess.run([shutil.which("spectralnet") or "spectralnet", "fit",
                            os.path.join(folder, "x.npy"), "-k", str(k), "-o",
                            os.path.join(folder, "model"), "--seed", str(seed), "--quiet"],
                           check=True, capture_output=True)
            cli_seconds = time.perf_counter() - start
            with open(os.path.join(folder, "model", "summary.json")) as f:
                phases = json.load(f)["seconds"]
        rows.append([seed, f"{n} x {d}", f"{acc(y, net.labels_):.4f}",
                     f"{acc(y, sc.labels_):.4f}", f"{seconds:.2f}", f"{sc_seconds:.2f}",
                     f"{seconds / sc_seconds:.1f}", f"{init:.2f}", f"{first:.2f}",
                     epochs * steps, f"{1000 * per_step:.1f}", h["stopped_by"],
                     f"{seconds - init - h['seconds']:.2f}", f"{cli_seconds:.2f}",
                     *(f"{phases[key]:.2f}" for key in ("start", "fit", "plots"))])
        print(rows[-1], flush=True)
    append("A default fit on small data, beside scikit-learn's SpectralClustering", [
        "seed", "data", "ACC", "SC ACC", "fit s", "SC fit s", "fit / SC", "warm start s",
        "first epoch s", "iterations", "ms per iteration", "stopped by", "rest s",
        "spectralnet fit command s", "its TensorFlow start s", "its fit s", "its plots s"],
        rows, command, {"config": defaults_config()})


#: ``bench inputs``: what each row does to the same blobs (x of spread ~1).
INPUT_TRANSFORMS = {
    "as made": lambda x: x,
    "offset 1e6": lambda x: x + 1e6,
    "units 1e-8": lambda x: x * 1e-8,
    "units 1e-15": lambda x: x * 1e-15,
    "units 1e15": lambda x: x * 1e15,
    "units 1e-20": lambda x: x * 1e-20,
    "units 1e20": lambda x: x * 1e20,
}


def bench_inputs(args, command):
    """Default fits of the same blobs (600 points, 4 features, 3 centres,
    standard deviation 2) moved far from the origin or in other units, beside
    scikit-learn's SpectralClustering on the same float32 array, per seed:
    where a user's columns are timestamps, coordinates or quantities in SI
    units. A refused input is a row with its error."""
    from sklearn.cluster import SpectralClustering
    from sklearn.datasets import make_blobs

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.metrics import acc

    rows = []
    for seed in args.seeds:
        x0, y = make_blobs(600, n_features=4, centers=3, cluster_std=2.0, random_state=seed)
        for name, transform in INPUT_TRANSFORMS.items():
            x = transform(x0).astype(np.float32)
            peer = SpectralClustering(3, affinity="nearest_neighbors", random_state=seed)
            try:
                sc = f"{acc(y, peer.fit(x).labels_):.4f}"
            except Exception as err:  # noqa: BLE001 - the peer's failure is a figure too
                sc = f"{type(err).__name__}"
            try:
                ours, error = f"{acc(y, SpectralNet(3, random_state=seed).fit(x).labels_):.4f}", ""
            except ValueError as err:
                ours, error = "refused", str(err)
            rows.append([seed, name, ours, sc, error])
            print(rows[-1], flush=True)
    append("Default fits of blobs moved or in other units, beside scikit-learn's "
           "SpectralClustering", ["seed", "input", "ACC", "SC ACC", "error"], rows, command,
           {"config": defaults_config()})


def bench_nclusters(args, command):
    """``SpectralNet(n_clusters="auto")``'s choice of k (``Eigengap`` with its
    defaults) on blobs (k = 2..8, neighbouring centres 6 and 8 apart, seeds
    0 and 1; 2,000 points), on the illustrative sets (seeds 0-2) and, unless
    ``--dsets`` leaves it out, on MNIST's codes with the MNIST recipe's
    Siamese graph (the whole fit, seed 0). Each row: the true k, the chosen
    one, the runner-up, whether the gap stood out, the spectrum's seconds."""
    import warnings

    from spectralnet_tf import Eigengap, GaussianKNNAffinity, SpectralNet
    from spectralnet_tf.datasets import blobs, load_dataset

    rows = []

    def row(name, seed, n, k, chooser, extra=""):
        rows.append([name, seed, n, k, chooser.n_clusters_, chooser.candidates_[1],
                     "yes" if chooser.distinct_ else "no", f"{chooser.seconds_:.1f}", extra])
        print(rows[-1], flush=True)

    sets = args.dsets or ["blobs", *DEFAULT_FIT_SETS, "rings", "rings3d", "noisy_circles",
                          "mnist"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the table says whether a gap stood out
        for name in sets:
            if name == "blobs":
                for sep in (6.0, 8.0):
                    for k in range(2, 9):
                        for seed in (0, 1):
                            x, _ = blobs(2000, k, sep, seed)
                            affinity = GaussianKNNAffinity().fit(x, 1024, seed=seed)
                            row(f"blobs, sep {sep:g}", seed, len(x), k,
                                Eigengap().fit(affinity, x, 1024, seed=seed))
            elif name == "mnist":
                from harness.configs import config_for
                from spectralnet_tf.autoencoder import load_encoder

                x, y, k = load_dataset("mnist")
                config = config_for("mnist")
                from harness.runconfig import AE_ALL
                from spectralnet_tf.resources import pretrained_path

                encoder = load_encoder(pretrained_path(AE_ALL))
                net = SpectralNet("auto", encoder=encoder, random_state=0, **config).fit(x)
                from spectralnet_tf.metrics import acc

                row("mnist codes, Siamese graph", 0, len(x), k, net.n_clusters_chooser_,
                    f"ACC {acc(y, net.labels_):.4f}")
            else:
                for seed in args.seeds:
                    x, _, k = load_dataset(name, seed=seed)
                    batch = min(1024, len(x))
                    affinity = GaussianKNNAffinity().fit(x, batch, seed=seed)
                    row(name, seed, len(x), k, Eigengap().fit(affinity, x, batch, seed=seed))
    append('n_clusters="auto": the eigengap\'s k', [
        "data", "seed", "n", "true k", "chosen k", "runner-up", "gap stands out", "seconds",
        "note"], rows, command)


def bench_graph_knn(args, command):
    """The kNN graph a default run samples, given back as ``affinity=
    "precomputed"``: on the cc set (seeds as given), a default
    ``SpectralNet`` fit, then one on ``affinity_.for_full_data``'s graph of
    all points (the graph its minibatches sample), both scored."""
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.metrics import acc

    rows = []
    for seed in args.seeds:
        x, y, k = load_dataset("cc", seed=seed)
        knn = SpectralNet(k, random_state=seed).fit(x)
        graph = knn.affinity_.for_full_data(len(x), knn.plan(*x.shape).batch_size).graph(x)
        own = SpectralNet(k, affinity="precomputed", random_state=seed).fit(x, graph=graph)
        rows.append([seed, len(x), graph.nnz, f"{acc(y, knn.labels_):.4f}",
                     f"{acc(y, own.labels_):.4f}"])
        print(rows[-1], flush=True)
    append('affinity="precomputed" with the kNN graph of a default run (cc)', [
        "seed", "n", "edges (nonzeros)", "ACC, kNN affinity", "ACC, that graph precomputed"],
        rows, command)


def bench_graph_sbm(args, command):
    """``affinity="precomputed"`` on a stochastic block model with node
    features (``datasets.sbm``: 3 blocks, 3,000 nodes, the features' largest
    variance a nuisance): trained on 2,400 nodes' features and the graph
    among them, then ``predict`` on the other 600 nodes' features alone.
    Beside it: exact spectral clustering of the training graph, k-means on
    the raw features (fitted on the training nodes) and the Bayes rule of
    the features (the true centres, nuisance ignored), on the held-out nodes."""
    from sklearn.cluster import KMeans

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.datasets import sbm
    from spectralnet_tf.metrics import acc
    from spectralnet_tf.spectral import cluster_graph

    rows = []
    for seed in args.seeds:
        x, w, y = sbm(seed=seed)
        train, held = np.arange(2400), np.arange(2400, 3000)
        graph = w[train][:, train]
        start = time.perf_counter()
        net = SpectralNet(3, affinity="precomputed", random_state=seed).fit(x[train], graph=graph)
        seconds = time.perf_counter() - start
        exact, _ = cluster_graph(graph, 3, random_state=seed)
        kmeans = KMeans(3, n_init=10, random_state=seed).fit(x[train])
        centres = np.array([x[train][y[train] == b, :2].mean(axis=0) for b in range(3)])
        bayes = np.argmin(((x[held, None, :2] - centres[None]) ** 2).sum(-1), axis=1)
        rows.append([seed, f"{acc(y[train], net.labels_):.4f}", f"{acc(y[train], exact):.4f}",
                     f"{acc(y[held], net.predict(x[held])):.4f}",
                     f"{acc(y[held], kmeans.predict(x[held])):.4f}",
                     f"{acc(y[held], bayes):.4f}", f"{seconds:.1f}"])
        print(rows[-1], flush=True)
    append('affinity="precomputed" on a stochastic block model with features', [
        "seed", "ACC, training nodes", "exact SC of the graph", "ACC, held-out nodes",
        "k-means on features, held-out", "Bayes rule, held-out", "fit seconds"], rows, command)


def bench_run(args, command):
    from . import reproduce as cli

    rate = matmul_rate()  # in the same process: time targets are stated at a matmul rate
    r = cli.run_command(args.rest)
    s = r["seconds"]
    phases = ", ".join(f"{k} {v:.0f}s" for k, v in s.items() if k != "total")
    row = [r["dataset"], r.get("space", "input"), r.get("affinity", ""), r["n"],
           f"{r['acc']:.4f}", f"{r['nmi']:.4f}",
           f"{r['test_acc']:.4f}" if "test_acc" in r else "",
           f"{r['test_nmi']:.4f}" if "test_nmi" in r else "",
           f"{r['raw_rows_acc']:.4f}",
           f"{r['raw_rows_test_acc']:.4f}" if "raw_rows_test_acc" in r else "",
           f"{r['grassmann']:.4f}" if "grassmann" in r else "",
           f"{s['total'] / 60:.1f}", f"{rate:.1f}", f"{s['total'] * rate / 200 / 60:.1f}",
           phases, f"{r['peak_rss_gib']:.2f}"]
    append("scripts/run.py", ["dataset", "space", "affinity", "n", "ACC", "NMI", "test ACC",
                              "test NMI", "ACC, rows as they are",
                              "test ACC, rows as they are", "Grassmann", "total min",
                              "matmul GFLOP/s",
                              "total min at 200 GFLOP/s", "phases", "peak RSS GiB"],
           [row], command, extra={"config": r["config"]})  # checked by harness/current.py


def bench_serve(args, command):
    import tensorflow as tf

    model = tf.saved_model.load(args.model)
    serve = model.signatures["serving_default"]
    d = serve.structured_input_signature[1]["x"].shape[-1]
    # Dense kernels are the 2-D variables: 2 * in * out FLOPs per point each.
    shapes = [shape for _, shape in tf.train.list_variables(
        os.path.join(args.model, "variables", "variables"))]
    flops = 2 * sum(int(np.prod(s)) for s in shapes if len(s) == 2)
    rate = matmul_rate()
    rows = []
    for batch in (1, 1024):
        x = tf.constant(np.random.default_rng(0).uniform(size=(batch, d)).astype(np.float32))
        serve(x=x)
        n_calls = max(3, 2000 // batch)
        start = time.perf_counter()
        for _ in range(n_calls):
            serve(x=x)["cluster"].numpy()
        seconds = time.perf_counter() - start
        points = batch * n_calls / seconds
        floor = rate * 1e9 / flops  # points/s if every FLOP ran at the matmul rate
        rows.append([batch, f"{points:,.0f}", f"{1000 * seconds / n_calls:.2f}",
                     f"{flops / 1e6:.2f}", f"{rate:.0f}", f"{floor:,.0f}", f"{points / floor:.1%}"])
    append(f"Exported SavedModel throughput ({args.model})",
           ["batch", "points/s", "ms/call", "MFLOP/point", "matmul GFLOP/s",
            "points/s at matmul rate", "of that"], rows, command)


#: Copies of each digit in ``bench_group_weight``'s development set.
GROUP_COPIES = 9


def shifted_digit_copies(seed):
    """A development set with known groups and labels, not MNIST: scikit-learn's
    8×8 digits, each with ``GROUP_COPIES`` copies shifted by up to a pixel
    along each axis (``views.Shift``), plus Gaussian noise (sd 0.05) on every
    row. Returns x, the labels, the groups (each copy's source digit) and the
    mask of the original digits."""
    from spectralnet_tf.datasets import digits
    from spectralnet_tf.views import Shift

    x0, y0 = digits()
    x0 = np.asarray(x0, np.float32)
    n0 = len(x0)
    shift = Shift(max_shift=1, side=8)
    x = np.concatenate([x0] + [shift(x0, np.arange(n0) + (j + 1) * n0, seed=100 + seed)
                               for j in range(GROUP_COPIES)])
    x += np.random.default_rng(seed).normal(scale=0.05, size=x.shape).astype(np.float32)
    return (x, np.tile(y0, GROUP_COPIES + 1), np.tile(np.arange(n0), GROUP_COPIES + 1),
            np.arange(len(x)) < n0)


def bench_group_weight(args, command):
    """The affinity of a pair of one group (``fit``'s ``groups``) on a
    development set (``shifted_digit_copies``): for each weight ("none":
    no groups; "balanced": the rule; or a number) and seed, ACC in all, on
    the originals and on the copies, the weight the fit used, and the share
    of copies in the cluster of their source digit (label-free)."""
    from spectralnet_tf import Schedule, SpectralNet
    from spectralnet_tf.metrics import acc

    rows = []
    for weight in args.weights:
        for seed in args.seeds:
            x, y, groups, original = shifted_digit_copies(seed)
            given = weight if weight in ("none", "balanced") else float(weight)
            net = SpectralNet(n_clusters=10, random_state=seed, schedule=Schedule(max_epochs=60),
                              group_weight=1.0 if given == "none" else given)
            start = time.perf_counter()
            net.fit(x, groups=None if given == "none" else groups)
            seconds = time.perf_counter() - start
            labels = net.labels_
            source = np.tile(labels[original], GROUP_COPIES)
            used = net.history_.get("group_weight")
            rows.append([weight, seed, len(x), "—" if used is None else f"{used:.3f}",
                         f"{acc(y, labels):.4f}", f"{acc(y[original], labels[original]):.4f}",
                         f"{acc(y[~original], labels[~original]):.4f}",
                         f"{np.mean(labels[~original] == source):.4f}", f"{seconds:.1f}"])
            print(rows[-1], flush=True)
    append("The affinity of a pair of one group, on digits with shifted copies", [
        "group weight", "seed", "n", "weight used", "ACC", "ACC originals", "ACC copies",
        "copies in their source's cluster", "seconds"], rows, command)


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["suite"]:  # its own flags: python scripts/bench.py suite --help
        from . import suite
        return suite.main(argv[1:])
    if argv[:1] == ["defaults"]:  # the rule that chose SpectralNet's defaults (harness/defaults.py)
        from . import defaults
        return defaults.main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["matmul", "step", "run", "serve", "reuters-scale", "scale",
                                    "kmeans-sample", "kmeans-rows", "profile", "small-fit",
                                    "nclusters", "pairs", "graph-sbm", "graph-knn", "inputs",
                                    "group-weight", "suite", "report"])
    p.add_argument("--check", action="store_true",
                   help="report: exit 1 if BENCHMARKS.md or README.md is stale")
    p.add_argument("--sizes", type=int, nargs="+",
                   help="documents per synthetic corpus (reuters-scale; default 25000 50000 "
                        "100000 200000), digits (scale; default 70000 250000 1000000 2500000 "
                        "8100000)")
    p.add_argument("--one", type=int, help="scale: run this one size in this process; "
                   "kmeans-sample: the number of digits (default 1000000)")
    p.add_argument("--acceptance", action="store_true",
                   help="scale: run.py as the scale acceptance check runs it (--seed 0 "
                        "--export, plots; no fresh digits, no exact reference), records "
                        "named accept-nN")
    p.add_argument("--tag", help="scale: records named TAG-nN instead of scale-nN / accept-nN "
                   "(a variant, e.g. run.py flags after --, kept out of the main tables)")
    p.add_argument("--epochs", type=int, default=2, help="training epochs (reuters-scale)")
    p.add_argument("--steps", type=int, default=40,
                   help="steps per timed epoch (step), calls per timed part (profile)")
    p.add_argument("--model", help="SavedModel version directory (serve)")
    p.add_argument("--dsets", nargs="+", help="nclusters: blobs, illustrative sets, mnist")
    p.add_argument("--weights", nargs="+", default=["none", "1", "balanced"],
                   help="group-weight: the affinities of a pair of one group (none: no "
                        "groups; balanced: the rule; or numbers; default none 1 balanced)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="small-fit, inputs, nclusters, graph-sbm, graph-knn, kmeans-rows: the seeds "
                   "(default 0 1 2)")
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = p.parse_args(own)
    args.rest = rest  # run.py arguments, after --
    if args.tag is not None and (args.tag in ("scale", "accept")
                                 or not re.fullmatch(r"[A-Za-z0-9_.-]+", args.tag)):
        p.error(f"--tag must be a name of letters, digits, '_', '.' or '-' other than 'scale' "
                f"and 'accept' (the main tables' records), got --tag {args.tag!r}")
    args.sizes = args.sizes or {"scale": [70000, 250000, 1000000, 2500000, 8100000],
                                "pairs": [70000, 280000, 1120000]}.get(
        args.what, [25000, 50000, 100000, 200000])
    if args.what == "report":
        return report(args.check)
    command = "python scripts/bench.py " + " ".join(argv)
    {"matmul": bench_matmul, "step": bench_step, "run": bench_run, "serve": bench_serve,
     "reuters-scale": bench_reuters_scale, "scale": bench_scale,
     "kmeans-sample": bench_kmeans_sample, "kmeans-rows": bench_kmeans_rows,
     "profile": bench_profile,
     "small-fit": bench_small_fit, "inputs": bench_inputs, "nclusters": bench_nclusters,
     "pairs": bench_pairs,
     "graph-sbm": bench_graph_sbm, "graph-knn": bench_graph_knn,
     "group-weight": bench_group_weight}[args.what](args, command)
    print(f"peak RSS {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
