#!/usr/bin/env python
"""Benchmarks (not tests). Each appends rows to BENCHMARKS.md with the machine,
the date and the command.

    python scripts/bench.py matmul            # this machine's matmul rate (the floor's unit)
    python scripts/bench.py step              # one spectral step at batch 1024 vs the FLOP floor
    python scripts/bench.py run -- --dset mnist   # scripts/run.py phases, wall time, peak RSS
    python scripts/bench.py serve --model export/mnist/1   # SavedModel throughput
"""

import argparse
import datetime
import os
import platform
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def machine():
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    return f"{platform.machine()}, {os.cpu_count()} cores, {mem_gib:.0f} GiB, CPU only, TF {tf.__version__}"


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


def bench_matmul(args, command):
    rows = [[name, f"{matmul_rate(dtype=dt):.0f}"] for name, dt in
            (("float32", tf.float32), ("bfloat16", tf.bfloat16))]
    append("Matmul rate, 2048² (tf.function)", ["dtype", "GFLOP/s"], rows, command)


def bench_run(args, command):
    import run

    r = run.main(args.rest)
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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["matmul", "step", "run", "serve"])
    p.add_argument("--steps", type=int, default=40, help="steps per timed epoch (step)")
    p.add_argument("--model", help="SavedModel version directory (serve)")
    own, rest = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = p.parse_args(own)
    args.rest = rest  # run.py arguments, after --
    command = "python scripts/bench.py " + " ".join(argv)
    {"matmul": bench_matmul, "step": bench_step, "run": bench_run, "serve": bench_serve}[args.what](
        args, command)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


if __name__ == "__main__":
    main()
