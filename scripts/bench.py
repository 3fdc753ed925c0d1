#!/usr/bin/env python
"""Benchmarks (not tests). Each writes a record (command, commit, date,
machine, figures) to benchmarks/results/; ``report`` renders the records into
the marked blocks of BENCHMARKS.md and README.md.

    python scripts/bench.py matmul            # this machine's matmul rate (the floor's unit)
    python scripts/bench.py step              # one spectral step at batch 1024 vs the FLOP floor
    python scripts/bench.py run -- --dset mnist   # scripts/run.py phases, wall time, peak RSS
    python scripts/bench.py serve --model export/mnist/1   # SavedModel throughput
    python scripts/bench.py reuters-scale     # run.py --dset reuters peak RSS as n grows
    python scripts/bench.py scale --sizes 70000 250000 1000000   # infinite MNIST (issue 14)
    python scripts/bench.py kmeans-sample     # k-means fitted on a sample vs all, 1M codes
    python scripts/bench.py profile           # where a spectral step's time goes; float32 vs bf16
    python scripts/bench.py report            # BENCHMARKS.md and README figures from the records
    python scripts/bench.py report --check    # exit 1 if either is stale
"""

import argparse
import contextlib
import datetime
import glob
import io
import os
import platform
import re
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # the other scripts' record readers
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402


def machine():
    """One line: architecture, CPU model, cores, memory, TensorFlow version."""
    import tensorflow as tf

    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    cpu, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return (f"{platform.machine()}, {cpu}{vector_isa(flags)}, {os.cpu_count()} cores, "
            f"{mem_gib:.0f} GiB, CPU only, TF {tf.__version__}")


def vector_isa(flags):
    """The widest vector units among ``flags`` (/proc/cpuinfo), as " (AVX-512,
    BF16)": CPUs sold under one model name differ in them, and with them in
    speed and rounding (oneDNN picks its kernels by them)."""
    isa = [name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags][:1]
    isa += [name for flag, name in (("avx512_bf16", "BF16"), ("amx_bf16", "AMX")) if flag in flags]
    return f" ({', '.join(isa)})" if isa else ""


def append(title, header, rows, command):
    """Print the table and keep it as a record in ``benchmarks/results/``
    (kind "rows"); ``bench.py report`` puts records into BENCHMARKS.md."""
    from distributed import save_record

    tag = f"{command.split()[2]}-{datetime.datetime.now():%H%M%S}"  # e.g. "matmul-101502"
    save_record(tag, {"kind": "rows", "title": title, "header": list(header),
                      "rows": [[str(c) for c in row] for row in rows]}, issue="bench")
    print(rows_table({"title": title, "header": header, "rows": rows}))


def rows_table(record):
    """Markdown of a "rows" record: its title's table."""
    lines = ["| " + " | ".join(record["header"]) + " |", "|" + " --- |" * len(record["header"])]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |"
                              for row in record["rows"]])


# ------------------------------------------------------------------ report
#: ``<!-- report: RENDERER GLOB [GLOB ...] -->`` ... ``<!-- /report -->``:
#: ``bench.py report`` replaces what lies between with the records' tables.
BLOCK = re.compile(r"^<!-- report: (\S+) ([^>]*?) -->\n.*?^<!-- /report -->$",
                   re.MULTILINE | re.DOTALL)
RESULTS = os.path.join(ROOT, "benchmarks", "results")
REPORTED = ("BENCHMARKS.md", "README.md")


def _printed(fn, *args):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        fn(*args)
    return buffer.getvalue().strip()


def record_heading(record):
    """A record's first line: its command, commit, date and machine."""
    return (f"`{record['command']}`, commit {record['commit']}, {record['date']}, "
            f"{record['machine']}")


def render(renderer, paths):
    """The Markdown of ``paths`` (records) by ``renderer``: each script's own
    table reader (``saddle.py table``, ``semisup.py table``, ...)."""
    import distributed
    import preset
    import saddle
    import selection
    import semisup
    import vc_check

    one = argparse.Namespace
    per_record = {
        "semisup": lambda p: _printed(semisup.cmd_table, one(record=p)),
        "preset": lambda p: _printed(preset.cmd_table, one(record=p)),
        "distributed": lambda p: _printed(distributed.table, one(record=p)),
        "vc": lambda p: _printed(vc_check.table, p),
        "select": lambda p: _printed(selection.table, one(records=[p])),
        "rows": lambda p: (lambda r: f"{record_heading(r)}\n\n{rows_table(r)}")(_load(p)),
    }
    if renderer in per_record:
        return "\n\n".join(per_record[renderer](p) for p in paths)
    if renderer == "saddle":  # several MNIST records make one table
        return _printed(saddle.cmd_table, one(records=paths))
    if renderer == "scale":
        return _printed(scale_table, paths)
    if renderer == "budgets":
        return _printed(budget_table, paths)
    if renderer == "graphs":
        return _printed(graph_table, paths)
    if renderer == "mnist-status":
        return _printed(saddle.mnist_status, paths)
    if renderer == "distributed-scaling":  # an overhead record, then a split record
        overhead, split = paths
        return (record_heading(_load(split)) + "\n\n" + _printed(distributed.scaling, one(
            overhead=overhead, split=split, gbs=100.0, latency_us=20.0)))
    raise ValueError(f"unknown renderer {renderer!r} in a report block")


def _load(path):
    import json

    with open(path) as f:
        return json.load(f)


def fill(text, name):
    """``text`` with every report block re-rendered from its records."""
    def block(match):
        renderer, patterns = match.group(1), match.group(2).split()
        paths = []
        for pattern in patterns:
            found = sorted(glob.glob(os.path.join(RESULTS, pattern)))
            if not found:
                raise SystemExit(f"{name}: no record in benchmarks/results/ matches {pattern!r}")
            paths += found
        return f"<!-- report: {match.group(1)} {match.group(2)} -->\n" \
               f"{render(renderer, paths)}\n<!-- /report -->"
    return BLOCK.sub(block, text)


def bench_report(args, command):
    """Re-render the report blocks of BENCHMARKS.md and README.md from the
    records; with --check, only say which file is stale (exit 1)."""
    stale = []
    for name in REPORTED:
        path = os.path.join(ROOT, name)
        with open(path) as f:
            text = f.read()
        new = fill(text, name)
        if new == text:
            continue
        stale.append(name)
        if not args.check:
            with open(path + ".tmp", "w") as f:
                f.write(new)
            os.replace(path + ".tmp", path)
    if args.check and stale:
        raise SystemExit(f"stale: {', '.join(stale)} (run: python scripts/bench.py report)")
    print(("rewritten: " if stale else "up to date: ") + ", ".join(stale or REPORTED))
    if not args.check:
        redraw_scale_png()


def matmul_rate(n=2048, dtype=None, repeats=20):
    """GFLOP/s of an n x n matmul in ``dtype`` (default float32), compiled."""
    import tensorflow as tf

    dtype = dtype or tf.float32
    a = tf.random.normal((n, n), dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function
    def mm(x):
        return tf.matmul(x, x)

    mm(a).numpy()
    start = time.perf_counter()
    for _ in range(repeats):
        mm(a).numpy()
    seconds = (time.perf_counter() - start) / repeats
    return 2 * n**3 / seconds / 1e9


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
    from spectralnet_tf.train import train_spectralnet

    rate = matmul_rate()
    dims = (10, 1024, 1024, 512, 10)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20000, 10)).astype(np.float32)
    aff = GaussianKNNAffinity(n_nbrs=3, scale_nbr=2).fit(x, 1024)
    model, body = build_spectralnet(10, 10, dims[1:-1], seed=0)
    hist = train_spectralnet(model, body, aff, x[:18000], x[18000:], batch_size=1024,
                             ortho_batch_size=1024, epochs=3, steps_per_epoch=args.steps,
                             patience=100, verbose=0)
    step_ms = 1000 * min(hist["epoch_seconds"][1:]) / args.steps
    flops = spectral_step_flops(1024, dims)
    floor_ms = 1000 * flops / (rate * 1e9)
    append("Spectral step at batch 1024 (10-1024-1024-512-10, kNN affinity)",
           ["matmul GFLOP/s (2048², fp32)", "step GFLOP", "floor ms", "measured ms/step", "of floor"],
           [[f"{rate:.0f}", f"{flops / 1e9:.2f}", f"{floor_ms:.1f}", f"{step_ms:.1f}",
             f"{step_ms / floor_ms:.2f}×"]], command)


def _timed(fn, repeats):
    """ms per call of a compiled ``fn`` (after one warm-up call)."""
    import tensorflow as tf

    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn()
    tf.nest.map_structure(lambda t: t.numpy(), out)
    return 1000 * (time.perf_counter() - start) / repeats


def bench_profile(args, command):
    """Each part of one SpectralNet iteration at batch 1024 (10-1024-1024-512-10),
    compiled and timed alone, for a float32 and a bfloat16 network body
    (``dtype_policy``: the hidden layers; the size-k layer and Orthonorm
    stay float32, as in training)."""
    import tensorflow as tf

    import keras

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import gradient_step

    m, repeats = 1024, args.steps
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(m, 10)).astype(np.float32))
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(x.numpy(), m)
    rows = []
    for policy in ("float32", "mixed_bfloat16"):
        model, body = build_spectralnet(10, 10, (1024, 1024, 512), seed=0, dtype_policy=policy)
        orthonorm = model.layers[-1]
        optimizer = keras.optimizers.RMSprop(1e-3)
        optimizer.build(model.trainable_variables)

        @tf.function
        def ortho():
            return orthonorm.orthogonalize(tf.cast(body(x, training=False), tf.float32))

        @tf.function
        def affinity():
            return aff.kernel_matrix(x)

        w = affinity()

        @tf.function
        def gradient():
            return gradient_step(model, optimizer, x, w)

        @tf.function
        def step():
            ortho()
            tf.identity(affinity())
            return gradient()

        parts = {name: _timed(fn, repeats) for name, fn in
                 (("ortho step", ortho), ("affinity", affinity), ("gradient step", gradient),
                  ("whole iteration", step))}
        rows += [[policy, name, f"{ms:.1f}"] for name, ms in parts.items()]
    append("Where a spectral iteration's time goes (batch 1024, 10-1024-1024-512-10)",
           ["network dtype policy", "part (compiled alone)", "ms"], rows, command)


def bench_matmul(args, command):
    import tensorflow as tf

    rows = [[name, f"{matmul_rate(dtype=dt):.0f}"] for name, dt in
            (("float32", tf.float32), ("bfloat16", tf.bfloat16))]
    append("Matmul rate, 2048² (tf.function)", ["dtype", "GFLOP/s"], rows, command)


def bench_run(args, command):
    from spectralnet_tf import cli

    rate = matmul_rate()  # in the same process: the unit of issue 14's time targets
    r = cli.run_command(args.rest)
    s = r["seconds"]
    phases = ", ".join(f"{k} {v:.0f}s" for k, v in s.items() if k != "total")
    row = [r["dataset"], r.get("space", "input"), r.get("affinity", ""), r["n"],
           f"{r['acc']:.4f}", f"{r['nmi']:.4f}",
           f"{r['test_acc']:.4f}" if "test_acc" in r else "",
           f"{r['grassmann']:.4f}" if "grassmann" in r else "",
           f"{s['total'] / 60:.1f}", f"{rate:.1f}", f"{s['total'] * rate / 200 / 60:.1f}",
           phases, f"{r['peak_rss_gib']:.2f}"]
    append("scripts/run.py", ["dataset", "space", "affinity", "n", "ACC", "NMI", "test ACC",
                              "Grassmann", "total min", "matmul GFLOP/s",
                              "total min at 200 GFLOP/s", "phases", "peak RSS GiB"],
           [row], command)


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

    root = os.path.dirname(HERE)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ae = os.path.join(tmp, "ae.h5")
        for n in args.sizes:
            data_dir = os.path.join(tmp, f"n{n}")
            os.makedirs(data_dir)
            write_synthetic_reuters(os.path.join(data_dir, "reuters.h5"), n)
            if not os.path.exists(ae):  # one autoencoder (10,000 documents) for every size
                subprocess.run([sys.executable, os.path.join(HERE, "pretrain_ae.py"), "--dset",
                                "reuters", "--data-dir", data_dir, "--epochs", "5", "--out", ae,
                                "--checkpoint-dir", os.path.join(tmp, "ae_ckpt"), "--quiet"],
                               check=True, env=env)
            out = os.path.join(tmp, f"run{n}")
            subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--dset", "reuters",
                            "--data-dir", data_dir, "--ae-weights", ae, "--out", out,
                            "--epochs", str(args.epochs), "--siamese-epochs", str(args.epochs),
                            "--no-exact", "--no-plots", "--quiet"], check=True, env=env, cwd=root)
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
#: ``scale --acceptance``: run.py as issue 14's acceptance check runs it
#: (``--export DIR --out DIR2`` added), so its time is the issue's end to end.
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
            subprocess.run([sys.executable, os.path.abspath(__file__), "scale", "--one", str(n),
                            *(["--acceptance"] if args.acceptance else []),
                            *(["--tag", args.tag] if args.tag else []),
                            *(["--", *args.rest] if args.rest else [])], check=True)
        return
    from distributed import save_record

    from spectralnet_tf import cli

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
        **{key: r[key] for key in ("exact_acc_plain", "exact_nmi_plain", "exact_plain_timeout",
                                   "exact_eigenvalues_plain", "exact_cluster_sizes_plain",
                                   "exact_edge_purity_plain", "exact_kmeans_runs_plain",
                                   "by_part", "deformation_pairs", "history",
                                   "siamese_history") if key in r},
        "epochs": r["epochs"], "iterations": r["iterations"], "config": r["config"]}
    if "test_acc" in r:
        record["fresh"] = {"n": r["n_test"], "acc": r["test_acc"], "nmi": r["test_nmi"],
                           "points_per_s": r["n_test"] / s["test"]}
    kind = args.tag or ("accept" if args.acceptance else "scale")
    save_record(f"{kind}-n{args.one}", record, issue="issue14")
    redraw_scale_png()  # after each size, so one-size runs (--one) keep it current too


def bench_kmeans_sample(args, command):
    """k-means on the autoencoder codes of n infinite-MNIST digits (``--one``,
    default 1,000,000): fitted on a uniform sample of ``KMEANS_FIT_MAX`` and
    every point assigned (what the package does above that size), against
    fitted on all n. ACC, NMI and seconds of each, seeds 0-2."""
    from sklearn.cluster import KMeans

    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.centroids import KMEANS_FIT_MAX, kmeans_labels
    from spectralnet_tf.cli import AE_ALL
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.metrics import acc, nmi
    from spectralnet_tf.resources import pretrained_path
    from spectralnet_tf.streaming import map_batches

    n = args.one or 1_000_000
    x, y, k = load_dataset("infimnist", n=n)
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


#: The log-log figure of the ``scale`` records, and the records it plots.
SCALE_PNG = os.path.join(ROOT, "benchmarks", "scale.png")
SCALE_RECORDS = ("*-issue14-scale-n*.json", "*-issue14-accept-n*.json")


def redraw_scale_png():
    """``scale_plot`` of every committed ``scale`` record (``SCALE_RECORDS``)."""
    scale_plot(sorted(p for pattern in SCALE_RECORDS
                      for p in glob.glob(os.path.join(RESULTS, pattern))))


def spectralnet_seconds(r):
    """Seconds of a ``scale`` record's run without its exact reference: what
    ``run.py`` takes without ``--exact-knn`` (the issue's end to end)."""
    from spectralnet_tf.cli import seconds_without_references

    return seconds_without_references(r["seconds"])


def scale_plot(paths):
    """``benchmarks/scale.png``: seconds against n, log-log, for SpectralNet
    (run.py without the exact reference), exact spectral clustering of the
    kNN graph and k-means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loaded = sorted((_load(p) for p in paths), key=lambda r: r["n"])
    accepted = [r for r in loaded if "--acceptance" in r["command"].split()]
    records = [r for r in loaded if r not in accepted]
    traced = [r for r in loaded if r.get("rss_trace")]
    fig, axes = plt.subplots(1, 2 if traced else 1, figsize=(12 if traced else 6, 4.5),
                             squeeze=False)
    ax = axes[0, 0]
    curves = (("SpectralNet, end to end (without the exact SC)", spectralnet_seconds),
              ("exact SC, kNN graph (finished runs)",
               lambda r: r["seconds"]["exact_plain"] if "exact_acc_plain" in r else None),
              ("k-means on codes", lambda r: r["seconds"].get("kmeans")))
    for label, seconds in curves:
        pts = [(r["n"], seconds(r)) for r in records if seconds(r) is not None]
        if pts:
            ax.loglog(*zip(*pts), "o-", label=label)
    if accepted:
        ax.loglog([r["n"] for r in accepted], [spectralnet_seconds(r) for r in accepted], "k*",
                  ms=10, label="run.py as the acceptance check runs it")
    ax.set_xlabel("digits n")
    ax.set_ylabel("seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    if traced:  # resident memory through each traced run, phases' ends marked
        ax = axes[0, 1]
        for r in traced:
            t, gib = zip(*r["rss_trace"])
            line, = ax.plot(np.array(t) / 60, gib, label=f"n = {r['n']:,}")
            end = r["seconds"]["data"]  # phases in order; training's parts are inside "train"
            for name in r.get("peak_rss_gib_after", {}):
                if name != "data":
                    end += r["seconds"][name]
                    ax.axvline(end / 60, color=line.get_color(), alpha=0.25, lw=0.8)
        ax.set_xlabel("minutes into the run (thin lines: ends of run.py's phases)")
        ax.set_ylabel("resident memory, GiB")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(SCALE_PNG, dpi=100)
    plt.close(fig)
    print(f"figure: {SCALE_PNG}")


def _scale_seed(r):
    return r["config"].get("seed", 0)


def scale_label(r):
    """A ``scale`` record's row name: its n, whether it ran with
    ``--deformation-pairs``, and its seed where not 0."""
    return (f"{r['n']:,}" + (", deformation pairs" if r.get("deformation_pairs") else "")
            + (f", seed {_scale_seed(r)}" if _scale_seed(r) else ""))


def _scale_order(r):
    return r["n"], bool(r.get("deformation_pairs")), _scale_seed(r)


def _table_head(records, columns):
    """Print the records' headings, then a Markdown table's header row."""
    print("\n".join(f"- {record_heading(r)}" for r in records) + "\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))


def scale_table(paths):
    """Markdown: one row per ``scale`` record (``scale_label``). "SpectralNet
    min" leaves out the exact reference (``spectralnet_seconds``); "total min"
    keeps it."""
    rows = [_load(p) for p in paths]
    _table_head(rows, [
        "n", "SpectralNet ACC / NMI", "ACC on MNIST's own / deformed digits",
        "exact SC, kNN graph: ACC / NMI, s", "k-means on codes ACC", "fresh 10k ACC",
        "fresh points/s", "SpectralNet min", "SpectralNet min at 200 GFLOP/s", "total min",
        "peak RSS GiB", "phases s (peak RSS GiB after each, if kept)"])
    for r in sorted(rows, key=_scale_order):
        s, after = r["seconds"], r.get("peak_rss_gib_after", {})
        n = scale_label(r)
        phases = ", ".join(f"{k} {v:.0f}" + (f" ({after[k]:.2f})" if k in after else "")
                           for k, v in s.items() if k != "total")
        exact = (f"{r['exact_acc_plain']:.4f} / {r['exact_nmi_plain']:.4f}, "
                 f"{s['exact_plain']:.0f}" if "exact_acc_plain" in r else
                 f"not finished in {s['exact_plain']:.0f} s" if "exact_plain_timeout" in r else "—")
        fresh = (f"{r['fresh']['acc']:.4f} | {r['fresh']['points_per_s']:.0f}" if "fresh" in r
                 else "— | —")
        own = spectralnet_seconds(r) / 60
        # Under the matching of all points; older records lack it.
        parts = (" / ".join(f"{r['by_part'][p]['acc']:.4f}" for p in ("original", "deformed"))
                 if "by_part" in r else "—")
        print(f"| {n} | {r['acc']:.4f} / {r['nmi']:.4f} | {parts} | {exact} "
              f"| {r['kmeans_acc']:.4f} "
              f"| {fresh} | {own:.1f} | {own * r['matmul_gflops'] / 200:.1f} "
              f"| {s['total'] / 60:.1f} | {r['peak_rss_gib']:.2f} | {phases} |")


def settled_epoch(val_loss, within=0.01):
    """The first epoch (1-based) from which the validation loss stays within
    ``within`` (relative) of its best: where a budget could have stopped at
    that tolerance, read without labels. None if the last epoch is not
    within it."""
    best = min(val_loss)
    above = [i for i, v in enumerate(val_loss) if v > best + within * abs(best)]
    return 1 if not above else None if above[-1] == len(val_loss) - 1 else above[-1] + 2


def budget_table(paths):
    """Markdown: for each ``scale`` record that kept its training histories
    (from commit ee0e16a), how each phase's budget ended: epochs run of the
    maximum, learning-rate drops (the epoch of the last) and the final rate,
    the best validation loss, the epoch from which it stayed within 1% and
    0.1% of it, and the change of the mean validation loss over the last 10
    epochs against the 10 before ("—" under 20 epochs; a minibatch estimate,
    noisy where a phase's validation set is small)."""
    def settled(val, within):
        epoch = settled_epoch(val, within)
        return "not at the end" if epoch is None else epoch

    phases = (("Siamese", "siamese_history", "siamese_"), ("SpectralNet", "history", ""))
    rows = [r for r in map(_load, paths) if any(r.get(key, {}).get("val_loss")
                                                for _, key, _ in phases)]
    _table_head(rows, [
        "run", "phase", "epochs run / max", "steps per epoch",
        "learning rate drops (last at epoch), final rate", "best val loss (epoch)",
        "last val loss", "within 1% from epoch", "within 0.1% from epoch",
        "last 10 epochs' mean against the 10 before"])
    for r in sorted(rows, key=_scale_order):
        c = r["config"]
        for phase, key, prefix in phases:
            h = r.get(key, {})
            val, lr = h.get("val_loss"), h.get("lr")
            if not val:
                continue
            cuts = [i + 2 for i, (a, b) in enumerate(zip(lr, lr[1:])) if b < a] if lr else []
            rates = (f"{len(cuts)}" + (f" ({cuts[-1]})" if cuts else "") + f", {lr[-1]:.0e}"
                     if lr else "—")
            steps = c.get(prefix + "steps_per_epoch") or "auto"
            best = int(np.argmin(val))
            trend = (f"{np.mean(val[-10:]) / np.mean(val[-20:-10]) - 1:+.2%}" if len(val) >= 20
                     else "—")
            print(f"| {scale_label(r)} | {phase} | {len(val)} / {c[prefix + 'max_epochs']} "
                  f"| {steps} | {rates} | {val[best]:.5f} ({best + 1}) | {val[-1]:.5f} "
                  f"| {settled(val, 0.01)} | {settled(val, 0.001)} | {trend} |")


def graph_table(paths):
    """Markdown: for each ``scale`` record with the exact reference's
    diagnostics (from commit a298b92), how well its graph (the plain kNN graph
    in the trained distance) determines a clustering. Without labels: the
    k-th and (k+1)-th smallest Laplacian eigenvalues, their relative gap
    ``1 - lambda_k / lambda_k+1``, and the smallest and largest cluster of
    exact SC. With labels, for the record: exact SC's ACC in all and on each
    part, and the graph's mean edge purity (``spectral.edge_purity``)."""
    rows = [r for r in map(_load, paths) if "exact_eigenvalues_plain" in r]
    _table_head(rows, [
        "run", "exact SC ACC", "on MNIST's own / deformed digits", "lambda_k", "lambda_k+1",
        "relative gap", "smallest / largest cluster", "edge purity",
        "on MNIST's own / deformed digits"])
    parts = ("original", "deformed")
    for r in sorted(rows, key=_scale_order):
        *_, lam_k, lam_next = r["exact_eigenvalues_plain"]
        gap = f"{1 - lam_k / lam_next:.4f}" if lam_next > 0 else "—"  # > k components
        sizes, purity = r["exact_cluster_sizes_plain"], r["exact_edge_purity_plain"]
        by_part = (" / ".join(f"{r['by_part'][p]['exact_acc_plain']:.4f}" for p in parts)
                   if "exact_acc_plain" in r.get("by_part", {}).get("original", {}) else "—")
        purity_parts = " / ".join("—" if purity.get(p) is None else f"{purity[p]:.4f}"
                                  for p in parts)
        print(f"| {scale_label(r)} | {r['exact_acc_plain']:.4f} | {by_part} | {lam_k:.3e} "
              f"| {lam_next:.3e} | {gap} | {sizes[-1]:,} / {sizes[0]:,} "
              f"| {purity['all']:.4f} | {purity_parts} |")


def main(argv=None):
    from distributed import note_start

    note_start()  # the tree this run starts from names its records
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["matmul", "step", "run", "serve", "reuters-scale", "scale",
                                    "kmeans-sample", "profile", "report"])
    p.add_argument("--check", action="store_true",
                   help="report: exit 1 if BENCHMARKS.md or README.md is stale")
    p.add_argument("--sizes", type=int, nargs="+",
                   help="documents per synthetic corpus (reuters-scale; default 25000 50000 "
                        "100000 200000), digits (scale; default 70000 250000 1000000 2500000 "
                        "8100000)")
    p.add_argument("--one", type=int, help="scale: run this one size in this process; "
                   "kmeans-sample: the number of digits (default 1000000)")
    p.add_argument("--acceptance", action="store_true",
                   help="scale: run.py as issue 14's acceptance check runs it (--seed 0 "
                        "--export, plots; no fresh digits, no exact reference), records "
                        "named accept-nN")
    p.add_argument("--tag", help="scale: records named TAG-nN instead of scale-nN / accept-nN "
                   "(a variant, e.g. run.py flags after --, kept out of the main tables)")
    p.add_argument("--epochs", type=int, default=2, help="training epochs (reuters-scale)")
    p.add_argument("--steps", type=int, default=40,
                   help="steps per timed epoch (step), calls per timed part (profile)")
    p.add_argument("--model", help="SavedModel version directory (serve)")
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = p.parse_args(own)
    args.rest = rest  # run.py arguments, after --
    if args.tag is not None and (args.tag in ("scale", "accept")
                                 or not re.fullmatch(r"[A-Za-z0-9_.-]+", args.tag)):
        p.error(f"--tag must be a name of letters, digits, '_', '.' or '-' other than 'scale' "
                f"and 'accept' (the main tables' records), got --tag {args.tag!r}")
    args.sizes = args.sizes or {"scale": [70000, 250000, 1000000, 2500000, 8100000]}.get(
        args.what, [25000, 50000, 100000, 200000])
    command = "python scripts/bench.py " + " ".join(argv)
    {"matmul": bench_matmul, "step": bench_step, "run": bench_run, "serve": bench_serve,
     "reuters-scale": bench_reuters_scale, "scale": bench_scale,
     "kmeans-sample": bench_kmeans_sample, "profile": bench_profile,
     "report": bench_report}[args.what](args, command)
    if args.what == "report":
        return
    from spectralnet_tf.cli import peak_rss_gib

    print(f"peak RSS {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
