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
    python scripts/bench.py group-weight      # the weight of a pair of one group, on digits with copies
    python scripts/bench.py suite             # every method on the development suite (harness/suite.py)
    python scripts/bench.py defaults graphs   # the rule that chose the defaults (harness/defaults.py)
    python scripts/bench.py report            # = scripts/report.py: BENCHMARKS.md from the records
"""

import argparse
import contextlib
import datetime
import os
import re
import shutil
import sys
import time

import numpy as np

from .current import defaults_config
from .records import ROOT, SCRIPTS, matmul_rate, note_start, peak_rss_gib, save_record
from .report import redraw_scale_png, report, rows_table


def append(title, header, rows, command, extra=None):
    """Print the table and keep it as a record in ``benchmarks/results/``
    (kind "rows", with ``extra``'s keys beside); ``bench.py report`` puts
    records into BENCHMARKS.md."""
    tag = f"{command.split()[2]}-{datetime.datetime.now():%H%M%S}"  # e.g. "matmul-101502"
    save_record(tag, {"kind": "rows", "title": title, "header": list(header),
                      "rows": [[str(c) for c in row] for row in rows], **(extra or {})},
                group="bench")
    print(rows_table({"title": title, "header": header, "rows": rows}))

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


#: ``small-fit``'s data: blobs of this many points, features and clusters,
#: the size issue 89 asks a default fit to finish in 5 s.
SMALL_FIT = (5000, 100, 5)


def bench_small_fit(args, command):
    """A default fit on small data, and where its time goes, beside
    scikit-learn's SpectralClustering on the same array, per seed:
    ``make_blobs(5000, 100 features, 5 centres)``. The fit's seconds split
    into the warm start (``history_["init_seconds"]``), Algorithm 1's
    epochs (the first, which traces the compiled step, apart; the others'
    seconds per iteration) and the rest (the graph's scale and pieces, the
    eigenvectors of the warm start's subsample, embedding, k-means); then
    the whole ``spectralnet fit`` command as a user runs it, TensorFlow's
    start included (its wall time, a subprocess)."""
    import subprocess
    import tempfile

    from sklearn.cluster import SpectralClustering
    from sklearn.datasets import make_blobs

    from spectralnet_tf import SpectralNet
    from spectralnet_tf.metrics import acc

    n, d, k = SMALL_FIT
    rows = []
    for seed in args.seeds:
        x, y = make_blobs(n, d, centers=k, random_state=seed)
        x = x.astype(np.float32)
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
        rows.append([seed, f"{n} x {d}", f"{acc(y, net.labels_):.4f}",
                     f"{acc(y, sc.labels_):.4f}", f"{seconds:.2f}", f"{sc_seconds:.2f}",
                     f"{seconds / sc_seconds:.1f}", f"{init:.2f}", f"{first:.2f}",
                     epochs * steps, f"{1000 * per_step:.1f}", h["stopped_by"],
                     f"{seconds - init - h['seconds']:.2f}", f"{cli_seconds:.2f}"])
        print(rows[-1], flush=True)
    append("A default fit on small data, beside scikit-learn's SpectralClustering", [
        "seed", "data", "ACC", "SC ACC", "fit s", "SC fit s", "fit / SC", "warm start s",
        "first epoch s", "iterations", "ms per iteration", "stopped by", "rest s",
        "spectralnet fit command s"], rows, command, {"config": defaults_config()})


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
                from harness.reproduce import AE_ALL
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


def write_synthetic_reuters(path, n, n_words=2000, seed=0, chunk=10000):
    """An HDF5 file in the layout of scripts/make_reuters.py: n documents of
    four topics, each a draw of 80 words from its topic's distribution (a
    Dirichlet over the vocabulary, concentrated on 300 words), as l2-normalized
    log-counts. Written a chunk at a time."""
    import h5py

    rng = np.random.default_rng(seed)
    topics = np.full((4, n_words), 0.01)
    for t in range(4):
        topics[t, rng.choice(n_words, 300, replace=False)] += 1.0
    topics = np.stack([rng.dirichlet(a) for a in topics])
    with h5py.File(path, "w") as h5:
        data = h5.create_dataset("data", (n, n_words), "float32", chunks=(min(chunk, n), n_words))
        labels = rng.integers(0, 4, n)
        for start in range(0, n, chunk):
            lab = labels[start:start + chunk]
            counts = np.stack([rng.multinomial(80, topics[t]) for t in lab]).astype(np.float32)
            rows = np.log1p(counts)
            data[start:start + chunk] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        h5.create_dataset("labels", data=labels.astype(np.int64))


def bench_reuters_scale(args, command):
    import json
    import subprocess
    import tempfile

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ae = os.path.join(tmp, "ae.h5")
        for n in args.sizes:
            data_dir = os.path.join(tmp, f"n{n}")
            os.makedirs(data_dir)
            write_synthetic_reuters(os.path.join(data_dir, "reuters.h5"), n)
            if not os.path.exists(ae):  # one autoencoder (10,000 documents) for every size
                subprocess.run([sys.executable, os.path.join(SCRIPTS, "pretrain_ae.py"), "--dset",
                                "reuters", "--data-dir", data_dir, "--epochs", "5", "--out", ae,
                                "--checkpoint-dir", os.path.join(tmp, "ae_ckpt"), "--quiet"],
                               check=True, env=env)
            out = os.path.join(tmp, f"run{n}")
            subprocess.run([sys.executable, os.path.join(SCRIPTS, "run.py"), "--dset", "reuters",
                            "--data-dir", data_dir, "--ae-weights", ae, "--out", out,
                            "--epochs", str(args.epochs), "--siamese-epochs", str(args.epochs),
                            "--no-exact", "--no-plots", "--quiet"], check=True, env=env, cwd=ROOT)
            with open(os.path.join(out, "results.json")) as f:
                r = json.load(f)
            s = r["seconds"]
            rows.append([f"{n:,}", f"{n * 2000 * 4 / 2**30:.2f}", f"{r['peak_rss_gib']:.2f}",
                         f"{r['acc']:.4f}", f"{s['total']:.0f}",
                         ", ".join(f"{k} {v:.0f}s" for k, v in s.items() if k != "total")])
            shutil.rmtree(data_dir)
    append(f"run.py --dset reuters on synthetic documents ({args.epochs} Siamese and "
           "SpectralNet epochs), peak RSS as n grows",
           ["documents", "float32 matrix GiB (on disk)", "peak RSS GiB", "ACC", "total s",
            "phases"], rows, command)


#: run.py flags of every ``scale`` run: 10,000 fresh digits scored, exact
#: spectral clustering of the kNN graph of all n points, no plots.
SCALE_RUN = ["--dset", "infimnist", "--split", "--exact-knn", "--no-plots", "--quiet"]
#: ``scale --acceptance``: run.py as the scale acceptance check runs it
#: (``--export DIR --out DIR2`` added), so its time is that check's end to end.
ACCEPTANCE_RUN = ["--dset", "infimnist", "--seed", "0"]


@contextlib.contextmanager
def rss_trace(interval=2.0):
    """Resident memory of this process every ``interval`` seconds, as a list
    of [seconds, GiB] filled while the block runs: where in a phase the peak
    falls, which the per-phase peaks cannot say inside training."""
    import threading

    page = os.sysconf("SC_PAGE_SIZE")
    trace, stop, start = [], threading.Event(), time.perf_counter()

    def sample():
        while not stop.wait(interval):
            with open("/proc/self/statm") as f:
                resident = int(f.read().split()[1]) * page
            trace.append([round(time.perf_counter() - start, 1), round(resident / 2**30, 3)])

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield trace
    finally:
        stop.set()
        thread.join()


def bench_scale(args, command):
    """``run.py --dset infimnist --n N --split`` for each size, each in its
    own process (``scale --one N``), so that its peak RSS is its own; one
    record per size. ``--one N``: that size in this process, after measuring
    the matmul rate here (times are also reported in its units)."""
    import subprocess
    import tempfile

    if args.one is None:
        for n in args.sizes:
            subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench.py"), "scale", "--one", str(n),
                            *(["--acceptance"] if args.acceptance else []),
                            *(["--tag", args.tag] if args.tag else []),
                            *(["--", *args.rest] if args.rest else [])], check=True)
        return

    from . import reproduce as cli

    rate = matmul_rate()
    with tempfile.TemporaryDirectory() as tmp, rss_trace() as trace:
        flags = ([*ACCEPTANCE_RUN, "--export", os.path.join(tmp, "export")] if args.acceptance
                 else SCALE_RUN)
        r = cli.run_command([*flags, "--n", str(args.one), "--out", os.path.join(tmp, "run"),
                             *args.rest])
    s = r["seconds"]
    record = {
        "kind": "scale", "n": r["n"], "matmul_gflops": round(rate, 1), "seconds": s,
        "peak_rss_gib": r["peak_rss_gib"], "peak_rss_gib_after": r["peak_rss_gib_after"],
        "rss_trace": trace, "acc": r["acc"], "nmi": r["nmi"],
        "kmeans_acc": r["kmeans_acc"], "kmeans_nmi": r["kmeans_nmi"],
        "raw_rows_acc": r["raw_rows_acc"], "raw_rows_nmi": r["raw_rows_nmi"],
        **{key: r[key] for key in ("acc_alone", "nmi_alone",
                                   "exact_acc_plain", "exact_nmi_plain", "exact_plain_timeout",
                                   "exact_eigenvalues_plain", "exact_cluster_sizes_plain",
                                   "exact_edge_purity_plain", "exact_kmeans_runs_plain",
                                   "by_part", "cluster_sizes", "class_sizes",
                                   "deformation_pairs", "source_pairs", "history",
                                   "siamese_history") if key in r},
        "epochs": r["epochs"], "iterations": r["iterations"], "config": r["config"]}
    if "test_acc" in r:
        record["fresh"] = {"n": r["n_test"], "acc": r["test_acc"], "nmi": r["test_nmi"],
                           "raw_rows_acc": r["raw_rows_test_acc"],
                           "points_per_s": r["n_test"] / s["test"]}  # each digit alone
    kind = args.tag or ("accept" if args.acceptance else "scale")
    save_record(f"{kind}-n{args.one}", record, group="scale")
    redraw_scale_png()  # after each size, so one-size runs (--one) keep it current too


def bench_kmeans_sample(args, command):
    """k-means on the autoencoder codes of n infinite-MNIST digits (``--one``,
    default 1,000,000): fitted on a uniform sample of ``KMEANS_FIT_MAX`` and
    every point assigned (what the package does above that size), against
    fitted on all n. ACC, NMI and seconds of each, seeds 0-2."""
    from sklearn.cluster import KMeans

    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.centroids import KMEANS_FIT_MAX, kmeans_labels
    from spectralnet_tf.metrics import acc, nmi
    from spectralnet_tf.resources import pretrained_path
    from spectralnet_tf.streaming import map_batches

    from . import infimnist
    from .reproduce import AE_ALL

    n = args.one or 1_000_000
    x, y = infimnist.load(n=n)
    k = 10
    z = map_batches(load_encoder(pretrained_path(AE_ALL)), x)
    rows = []
    for seed in (0, 1, 2):
        for name, fit in ((f"sample of {KMEANS_FIT_MAX:,}, then assigned", kmeans_labels),
                          ("all points", lambda z, k, seed: KMeans(
                              k, n_init=10, random_state=seed).fit_predict(z))):
            t = time.perf_counter()
            labels = fit(z, k, seed)
            rows.append([seed, name, f"{acc(y, labels):.4f}", f"{nmi(y, labels):.4f}",
                         f"{time.perf_counter() - t:.1f}"])
    append(f"k-means (10 restarts) on the codes of {n:,} infinite-MNIST digits: fitted on a "
           "sample or on all", ["seed", "fitted on", "ACC", "NMI", "seconds"], rows, command)


def bench_kmeans_rows(args, command):
    """k-means on the spectral embedding's rows as they are, against the rows
    scaled to unit length (Ng, Jordan & Weiss), on labelled data other than
    MNIST: the exact embedding (the k smallest eigenvectors of the Laplacian
    of the graph SpectralNet's minibatches sample, ``exact_reference``) of
    scikit-learn's digits (all, and subsamples of 1,000), the illustrative
    sets and blobs; and the trained embedding of a default fit on digits.
    ACC of each, k-means as the package runs it (``centroids.kmeans_labels``)."""
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.centroids import kmeans_labels
    from spectralnet_tf.datasets import blobs, load_dataset
    from spectralnet_tf.metrics import acc

    from .reproduce import exact_reference

    def trial(name, seed, x, y, k, trained=False):
        x = np.asarray(x, np.float32)
        net = SpectralNet(n_clusters=k, random_state=seed)
        if trained:
            e = net.fit(x).embedding_
        else:
            plan = net.plan(len(x), x.shape[1])
            _, e, _ = exact_reference(net, net.make_affinity(), x, y, seed, plan.batch_size)
        plain, scaled = (acc(y, kmeans_labels(e, k, seed, normalize_rows=unit))
                         for unit in (False, True))
        rows.append([name, "trained" if trained else "exact", seed, len(x), k,
                     f"{plain:.4f}", f"{scaled:.4f}", f"{scaled - plain:+.4f}"])
        print(rows[-1], flush=True)

    rows = []
    seeds = args.seeds
    x, y, k = load_dataset("digits")
    trial("digits", seeds[0], x, y, k)
    for seed in seeds:
        pick = np.sort(np.random.default_rng(seed).choice(len(x), 1000, replace=False))
        trial("digits (1,000)", seed, x[pick], y[pick], k)
    for name in ("cc", "moons", "circles", "noisy_circles", "spirals", "rings3d", "rings"):
        for seed in seeds:
            trial(name, seed, *load_dataset(name, seed=seed))
    for k in (3, 5, 8):
        for seed in seeds:
            trial(f"blobs k={k}", seed, *blobs(k=k, seed=seed), k)
    for seed in seeds:
        trial("digits", seed, x, y, 10, trained=True)
    append("k-means on the embedding's rows as they are, or scaled to unit length", [
        "data set", "embedding", "seed", "n", "k", "ACC rows", "ACC unit rows", "difference"],
        rows, command)


def bench_pairs(args, command):
    """Siamese pair building (``make_pairs``, 5 neighbour positives a point,
    as the MNIST config) at growing n, per backend: annoy (what "auto" picks
    above 20,000 points), scikit-learn's exact search on all cores (a k-d tree
    in 10-d), and views alone (``n_nbrs=0``, 5 view positives, no search).
    The points are MNIST's 70,000 codes, repeated with a small jitter up to
    n, as infinite MNIST repeats its sources deformed. Seconds, and
    microseconds per point against the smallest size's."""
    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.datasets import mnist
    from spectralnet_tf.neighbors import AnnoyNeighbors, ExactNeighbors
    from spectralnet_tf.resources import pretrained_path
    from spectralnet_tf.siamese import make_pairs
    from spectralnet_tf.streaming import map_batches
    from .reproduce import AE_ALL

    rate = matmul_rate()
    images, _ = mnist()[:2]
    codes = map_batches(load_encoder(pretrained_path(AE_ALL)), images)
    spread = codes.std(axis=0, keepdims=True)
    variants = (("annoy (50 trees)", dict(n_nbrs=5, neighbors=AnnoyNeighbors(random_state=0))),
                ("exact, all cores", dict(n_nbrs=5, neighbors=ExactNeighbors(n_jobs=-1))),
                ("views alone", dict(n_nbrs=0, n_views=5)))
    rows, first = [], {}
    for n in args.sizes:
        rng = np.random.default_rng(0)
        z = codes[np.arange(n) % len(codes)]
        z = z + (0.05 * spread * rng.standard_normal(z.shape)).astype(np.float32)
        for name, kwargs in variants:
            t = time.perf_counter()
            pairs = make_pairs(z, seed=0, **kwargs)
            seconds = time.perf_counter() - t
            per_point = 1e6 * seconds / n
            first.setdefault(name, per_point)
            rows.append([name, f"{n:,}", f"{len(pairs[0]) / n:.0f}", f"{seconds:.1f}",
                         f"{per_point:.1f}", f"{per_point / first[name]:.2f}", f"{rate:.0f}"])
            print(rows[-1], flush=True)
            del pairs
    append("Siamese pair building per point as n grows (MNIST codes, jittered repeats)",
           ["backend", "n", "pairs a point", "seconds", "µs a point", "× the smallest n's",
            "matmul GFLOP/s"], rows, command)


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
                                    "nclusters", "pairs", "graph-sbm", "graph-knn",
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
                   help="small-fit, nclusters, graph-sbm, graph-knn, kmeans-rows: the seeds "
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
     "small-fit": bench_small_fit, "nclusters": bench_nclusters, "pairs": bench_pairs,
     "graph-sbm": bench_graph_sbm, "graph-knn": bench_graph_knn,
     "group-weight": bench_group_weight}[args.what](args, command)
    print(f"peak RSS {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
