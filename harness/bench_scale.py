"""Benchmarks of scale (not tests), run by ``bench.py``: peak memory and time
as n grows (synthetic Reuters-sized corpora, infinite MNIST up to 8.1M
digits), k-means fitted on a sample against all rows, and the cost of the
Siamese pairs. Each writes a record to benchmarks/results/.
"""

import contextlib
import os
import shutil
import sys
import time

import numpy as np

from .records import ROOT, SCRIPTS, append, matmul_rate, save_record
from .report import redraw_scale_png

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
    from .runconfig import AE_ALL

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
    from .runconfig import AE_ALL

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
