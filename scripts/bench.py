#!/usr/bin/env python
"""Benchmarks (not tests). Each appends rows to BENCHMARKS.md with the machine,
the date and the command.

    python scripts/bench.py matmul            # this machine's matmul rate (the floor's unit)
    python scripts/bench.py step              # one spectral step at batch 1024 vs the FLOP floor
    python scripts/bench.py run -- --dset mnist   # scripts/run.py phases, wall time, peak RSS
    python scripts/bench.py serve --model export/mnist/1   # SavedModel throughput
    python scripts/bench.py reuters-scale     # run.py --dset reuters peak RSS as n grows
    python scripts/bench.py profile           # where a spectral step's time goes; float32 vs bf16
"""

import argparse
import datetime
import os
import platform
import resource
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def machine():
    """One line: architecture, CPU model, cores, memory, TensorFlow version."""
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (f"{platform.machine()}, {cpu}, {os.cpu_count()} cores, {mem_gib:.0f} GiB, CPU only, "
            f"TF {tf.__version__}")


def append(title, header, rows, command):
    path = os.path.join(os.path.dirname(HERE), "BENCHMARKS.md")
    lines = ["", f"### {title}", "", f"`{command}` — {datetime.date.today().isoformat()}, {machine()}.", "",
             "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    with open(path, "a") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def matmul_rate(n=2048, dtype=tf.float32, repeats=20):
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
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn()
    tf.nest.map_structure(lambda t: t.numpy(), out)
    return 1000 * (time.perf_counter() - start) / repeats


def bench_profile(args, command):
    """Each part of one SpectralNet iteration at batch 1024 (10-1024-1024-512-10),
    compiled and timed alone, for a float32 and a bfloat16 network body."""
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
        keras.mixed_precision.set_global_policy(policy)
        model, body = build_spectralnet(10, 10, (1024, 1024, 512), seed=0)
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
    keras.mixed_precision.set_global_policy("float32")
    append("Where a spectral iteration's time goes (batch 1024, 10-1024-1024-512-10)",
           ["network dtype policy", "part (compiled alone)", "ms"], rows, command)


def bench_matmul(args, command):
    rows = [[name, f"{matmul_rate(dtype=dt):.0f}"] for name, dt in
            (("float32", tf.float32), ("bfloat16", tf.bfloat16))]
    append("Matmul rate, 2048² (tf.function)", ["dtype", "GFLOP/s"], rows, command)


def bench_run(args, command):
    from spectralnet_tf import cli

    r = cli.run_command(args.rest)
    s = r["seconds"]
    phases = ", ".join(f"{k} {v:.0f}s" for k, v in s.items() if k != "total")
    row = [r["dataset"], r.get("space", "input"), r.get("affinity", ""), r["n"],
           f"{r['acc']:.4f}", f"{r['nmi']:.4f}",
           f"{r['test_acc']:.4f}" if "test_acc" in r else "",
           f"{r['grassmann']:.4f}" if "grassmann" in r else "",
           f"{s['total'] / 60:.1f}", phases, f"{r['peak_rss_gib']:.2f}"]
    append("scripts/run.py", ["dataset", "space", "affinity", "n", "ACC", "NMI", "test ACC",
                              "Grassmann", "total min", "phases", "peak RSS GiB"], [row], command)


def bench_serve(args, command):
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["matmul", "step", "run", "serve", "reuters-scale", "profile"])
    p.add_argument("--sizes", type=int, nargs="+", default=[25000, 50000, 100000, 200000],
                   help="documents per synthetic corpus (reuters-scale)")
    p.add_argument("--epochs", type=int, default=2, help="training epochs (reuters-scale)")
    p.add_argument("--steps", type=int, default=40,
                   help="steps per timed epoch (step), calls per timed part (profile)")
    p.add_argument("--model", help="SavedModel version directory (serve)")
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = p.parse_args(own)
    args.rest = rest  # run.py arguments, after --
    command = "python scripts/bench.py " + " ".join(argv)
    {"matmul": bench_matmul, "step": bench_step, "run": bench_run, "serve": bench_serve,
     "reuters-scale": bench_reuters_scale, "profile": bench_profile}[args.what](args, command)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
