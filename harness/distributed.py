#!/usr/bin/env python
"""Data-parallel SpectralNet on tf.distribute: benchmarks, not tests.

    python scripts/distributed.py overhead                 # 1, 2, 4 logical devices and 2 workers
    python scripts/distributed.py drift                    # 1 vs 2 replicas vs oneDNN on/off
    python scripts/distributed.py edges                    # W's kNN edges, 1 vs 2 replicas
    python scripts/distributed.py table RECORD.json        # the Markdown table of a record
    python scripts/distributed.py split                    # one device: network vs pairwise work
    python scripts/distributed.py scaling OVERHEAD.json SPLIT.json   # expected scaling, on paper

``overhead`` times Algorithm 1's iterations for the MNIST net (10-1024-1024-512-10,
10-d affinity coordinates as the Siamese outputs, kNN affinity) at one global
batch under each layout, each in a fresh process (logical devices must be set up
before TensorFlow starts), and counts the bytes each replica hands to the
collectives per iteration (``distribute.count_collectives``: the tensors given
to all-reduce and all-gather in the compiled epoch, plus the parameter
gradients the optimizer all-reduces). ``drift`` trains two moons with 1 and 2
replicas under oneDNN on and off and records the loss histories. Each writes
one JSON record into ``benchmarks/results/`` (command, commit, date, machine,
matmul rate measured in each process).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from .cluster import localhost_cluster
from .records import SCRIPTS, matmul_rate, note_start, record_heading, save_record

#: The MNIST net (paper Table 3) on 10-d codes, k = 10.
DIMS = (10, 1024, 1024, 512, 10)


# ------------------------------------------------------------------ measure
def measure(args):
    """One layout, in this process: per-iteration seconds and bytes per iteration."""
    from spectralnet_tf import distribute

    strategy = distribute.strategy_for(args.devices)  # before any TensorFlow op

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import Config, Data, train_spectralnet

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(DIMS[-1], DIMS[0])) * 3
    x = (centers[rng.integers(0, DIMS[-1], args.n)] + rng.normal(size=(args.n, DIMS[0])))
    x = x.astype(np.float32)
    rate = matmul_rate()
    strategy = distribute.get(strategy)
    with strategy.scope():
        model = build_spectralnet(DIMS[0], DIMS[-1], DIMS[1:-1], seed=0,
                                  output_activation="linear")
    affinity = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(
        x, args.batch, seed=0)
    # No embedding: the affinity's coordinates are the points. No schedule: every
    # epoch at one rate.
    data = Data(x, x[:args.batch], x, x[:args.batch])
    config = Config(batch_size=args.batch, ortho_batch_size=args.batch, epochs=args.epochs,
                    steps_per_epoch=args.steps, seed=0)
    with distribute.count_collectives() as ledger:
        history = train_spectralnet(model, affinity, data, config, strategy=strategy)
    replicas = distribute.n_replicas(strategy)
    local_replicas = len(strategy.extended.worker_devices) if replicas > 1 else 1
    per_kind = {}
    for function, collective, dtype, shape in ledger:
        if function == "run_epoch":
            key = f"{collective} {dtype} {'x'.join(map(str, shape)) or 'scalar'}"
            per_kind[key] = per_kind.get(key, 0) + 1 / local_replicas
    collective_bytes = sum(count * np.dtype(key.split()[1]).itemsize * _elements(key)
                           for key, count in per_kind.items())
    params = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    epoch_seconds = history["epoch_seconds"][1:]  # the first includes tracing
    result = {
        "devices": args.devices, "workers": len(json.loads(os.environ.get("TF_CONFIG", "{}"))
                                                .get("cluster", {}).get("worker", [None])),
        "replicas": replicas, "batch": args.batch, "steps": args.steps,
        "epoch_seconds": [round(s, 4) for s in epoch_seconds],
        "iteration_ms": round(1000 * float(np.median(epoch_seconds)) / args.steps, 2),
        "matmul_gflops": round(rate, 1),
        "collectives_per_iteration": {k: round(v, 3) for k, v in sorted(per_kind.items())},
        "collective_bytes": int(collective_bytes) if replicas > 1 else 0,
        "gradient_bytes": 4 * params if replicas > 1 else 0,
        "parameters": params,
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default"),
    }
    if distribute.is_chief(strategy):
        print("RESULT " + json.dumps(result), flush=True)


def _elements(key):
    """Elements of the tensor in a ledger key ``collective dtype AxB`` (or ``scalar``)."""
    shape = key.split()[2]
    return 1 if shape == "scalar" else int(np.prod([int(v) for v in shape.split("x")]))


def _launch(flags, workers=1, env=None):
    """Run ``measure`` in fresh processes (one per worker); the chief's result."""
    argv = [sys.executable, os.path.join(SCRIPTS, "distributed.py"), "_measure", *flags]
    base = dict(os.environ, **(env or {}))
    base.pop("TF_CONFIG", None)
    if workers == 1:
        procs = [subprocess.Popen(argv, env=base, stdout=subprocess.PIPE, text=True)]
    else:
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                  env=dict(base, TF_CONFIG=config))
                 for config in localhost_cluster(workers)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"measure failed: {argv}")
    line = next(ln for out in outs for ln in out.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def overhead(args):
    common = ["--batch", str(args.batch), "--n", str(args.n), "--steps", str(args.steps),
              "--epochs", str(args.epochs)]
    rows = []
    for devices in args.devices:
        rows.append(_launch([*common, "--devices", str(devices)]))
        print(rows[-1], flush=True)
    if args.workers > 1:
        rows.append(_launch(common, workers=args.workers))
        print(rows[-1], flush=True)
    save_record(f"overhead-m{args.batch}", {"kind": "overhead", "dims": DIMS, "n": args.n,
                                             "rows": rows}, group="distributed")


# ------------------------------------------------------------------ split
def split(args):
    """On one device: per iteration, the network's work (ortho forward,
    gradient forward and backward: linear in m) against the pairwise work (W,
    the loss, dL/dY and its projection: quadratic in m), at several global
    batches. Under a strategy both are split over the replicas (all but the
    O(m k²) projection)."""
    import time

    import tensorflow as tf

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet, orthonorm_input
    from spectralnet_tf.orthonorm import tangent_projection
    from spectralnet_tf.train import minibatch_loss

    rate = matmul_rate()
    model = build_spectralnet(DIMS[0], DIMS[-1], DIMS[1:-1], seed=0, output_activation="linear")
    body = orthonorm_input(model)
    rows = []
    for m in args.batches:
        x = tf.random.stateless_normal((m, DIMS[0]), seed=(0, m))
        affinity = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(
            x.numpy(), m, seed=0)

        @tf.function
        def network(x):
            y_tilde = body(x)  # ortho forward
            with tf.GradientTape() as tape:
                y = model(x, training=True)
            return y_tilde, tape.gradient(y, model.trainable_variables,
                                          output_gradients=tf.ones_like(y))

        @tf.function
        def pairwise(x, y):
            w = affinity.kernel_matrix(x)
            with tf.GradientTape() as tape:
                tape.watch(y)
                loss = minibatch_loss(w, y)
            return tangent_projection(y, tape.gradient(loss, y))

        y = model(x)
        seconds = {}
        for name, fn, fargs in (("network", network, (x,)), ("pairwise", pairwise, (x, y))):
            tf.nest.map_structure(lambda t: t.numpy(), fn(*fargs))  # trace
            start = time.perf_counter()
            for _ in range(args.repeats):
                tf.nest.map_structure(lambda t: t.numpy(), fn(*fargs))
            seconds[name] = (time.perf_counter() - start) / args.repeats
        rows.append({"batch": m, "network_ms": round(1000 * seconds["network"], 2),
                     "pairwise_ms": round(1000 * seconds["pairwise"], 2)})
        print(rows[-1], flush=True)
    save_record("split", {"kind": "split", "dims": DIMS, "matmul_gflops": round(rate, 1),
                          "rows": rows}, group="distributed")


# ------------------------------------------------------------------ drift
def drift(args):
    """Loss histories of 1 and 2 replicas under oneDNN on and off (moons)."""
    rows = []
    for onednn in ("0", "1"):
        for devices in (1, 2):
            out = subprocess.run(
                [sys.executable, os.path.join(SCRIPTS, "distributed.py"), "_drift", "--devices", str(devices),
                 "--epochs", str(args.epochs)],
                env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn), capture_output=True,
                text=True, check=True).stdout
            line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
            rows.append({"onednn": onednn, "devices": devices,
                         **json.loads(line[len("RESULT "):])})
            print(rows[-1]["loss"][:3], flush=True)
    save_record("drift", {"kind": "drift", "steps_per_epoch": 10, "rows": rows}, group="distributed")


def edges(args):
    """How often the kNN edges of a replica's rows of W differ from those of
    the one-device W (two moons, batches of 256, 2 logical devices), under
    oneDNN off and on: near-ties in the distances round differently in the
    (m/R)×m product than in the m×m one."""
    rows = []
    for onednn in ("0", "1"):
        out = subprocess.run(
            [sys.executable, os.path.join(SCRIPTS, "distributed.py"), "_edges", "--batches", str(args.batches)],
            env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn), capture_output=True, text=True,
            check=True).stdout
        line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
        rows.append({"onednn": onednn, **json.loads(line[len("RESULT "):])})
        print(rows[-1], flush=True)
    save_record("edges", {"kind": "edges", "batch": 256, "rows": rows}, group="distributed")


def edges_one(args):
    from spectralnet_tf import distribute

    strategy = distribute.strategy_for(2)
    import tensorflow as tf
    from sklearn.datasets import make_moons

    from spectralnet_tf.affinity import GaussianKNNAffinity

    x = make_moons(1200, noise=0.05, random_state=0)[0].astype("float32")
    affinity = GaussianKNNAffinity(n_nbrs=10).fit(x[:1000], 256, seed=0)

    @tf.function
    def sharded(z):
        return distribute.run(
            strategy, lambda zz: distribute.all_gather(affinity.kernel_matrix(zz * 1.0)), z)

    rng = np.random.default_rng(0)
    flips, worst = 0, 0.0
    for _ in range(args.batches):
        z = tf.constant(x[rng.choice(1000, 256, replace=False)])
        one, two = affinity.kernel_matrix(z).numpy(), sharded(z).numpy()
        flips += int(((one > 0) != (two > 0)).sum())
        worst = max(worst, float(np.abs(one - two).max()))
    print("RESULT " + json.dumps({"batches": args.batches, "entries": args.batches * 256 * 256,
                                  "edge_flips": flips, "max_abs_difference": worst}), flush=True)


def drift_one(args):
    from spectralnet_tf import distribute

    strategy = distribute.strategy_for(args.devices)
    from sklearn.datasets import make_moons

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.callbacks import PlateauSchedule
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import Config, Data, train_spectralnet

    x = make_moons(1200, noise=0.05, random_state=0)[0].astype("float32")
    with distribute.get(strategy).scope():
        model = build_spectralnet(2, 2, (64, 64), seed=3)
    affinity = GaussianKNNAffinity(n_nbrs=10).fit(x[:1000], 256, seed=0)
    data = Data(x[:1000], x[1000:], x[:1000], x[1000:])  # the coordinates are the points
    config = Config(batch_size=256, ortho_batch_size=256, epochs=args.epochs,
                    steps_per_epoch=10, seed=7)
    history = train_spectralnet(model, affinity, data, config, strategy=strategy,
                                callbacks=[PlateauSchedule(patience=10)])
    print("RESULT " + json.dumps({"loss": history["loss"]}), flush=True)


# ------------------------------------------------------------------ reading records
def table(args):

    with open(args.record) as f:
        record = json.load(f)
    print(record_heading(record) + "\n")
    if record["kind"] == "edges":
        print("| oneDNN | entries of W compared | kNN edges that differ | largest difference |")
        print("| --- | --- | --- | --- |")
        for r in record["rows"]:
            print(f"| {'on' if r['onednn'] == '1' else 'off'} | {r['entries']:,} | "
                  f"{r['edge_flips']} | {r['max_abs_difference']:.2g} |")
        return
    if record["kind"] == "drift":
        loss = {(r["onednn"], r["devices"]): np.array(r["loss"]) for r in record["rows"]}
        pairs = [("1 vs 2 replicas, oneDNN off", ("0", 1), ("0", 2)),
                 ("1 vs 2 replicas, oneDNN on", ("1", 1), ("1", 2)),
                 ("1 replica, oneDNN off vs on", ("0", 1), ("1", 1))]
        epochs = range(0, len(loss[("0", 1)]), 2)
        print("| relative difference of the mean loss over iterations | "
              + " | ".join(f"{10 * e + 1}–{10 * (e + 1)}" for e in epochs) + " |")
        print("|" + " --- |" * (len(epochs) + 1))
        for name, a, b in pairs:
            rel = np.abs(loss[a] - loss[b]) / np.abs(loss[a])
            print(f"| {name} | " + " | ".join(f"{rel[e]:.1e}" for e in epochs) + " |")
        return
    base = next(r for r in record["rows"] if r["replicas"] == 1)
    print("| layout | replicas | ms per iteration | × 1 device | ms × GFLOP/s / 1000 "
          "| collective bytes per replica per iteration | of which parameter gradients |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in record["rows"]:
        layout = (f"{r['workers']} worker processes (MultiWorkerMirrored)" if r["workers"] > 1
                  else f"{r['devices']} logical device{'s' if r['devices'] > 1 else ''}"
                  + (" (Mirrored)" if r["devices"] > 1 else ""))
        print(f"| {layout} | {r['replicas']} | {r['iteration_ms']:.1f} | "
              f"{r['iteration_ms'] / base['iteration_ms']:.2f} | "
              f"{r['iteration_ms'] * r['matmul_gflops'] / 1000:.1f} | "
              f"{r['collective_bytes'] + r['gradient_bytes']:,} | {r['gradient_bytes']:,} |")


def scaling(args):
    """Expected per-iteration time on N devices, from the collectives counted
    in an overhead record and the work measured by split on one device."""
    with open(args.overhead) as f:
        overhead_record = json.load(f)
    with open(args.split) as f:
        split_record = json.load(f)
    two = next(r for r in overhead_record["rows"] if r["replicas"] == 2 and r["workers"] == 1)
    m0, params = two["batch"], two["parameters"]

    def comm_bytes(m, n):
        """Bytes a replica sends per iteration at global batch m on n devices:
        ring all-reduce 2(n-1)/n of its tensor, all-gather (n-1)/n of the
        gathered tensor. Row counts scale with m; k×k and scalars do not."""
        total = 2 * (n - 1) / n * 4 * params  # the parameter gradients
        for key, count in two["collectives_per_iteration"].items():
            collective, dtype, shape = key.split()
            dims = [] if shape == "scalar" else [int(v) for v in shape.split("x")]
            size = np.dtype(dtype).itemsize * _elements(key)
            if collective == "all_gather":  # a replica's m0/2 rows, gathered to m
                total += count * (n - 1) / n * size * 2 * m / m0
            else:
                rows_scale = m / m0 if dims and dims[0] == m0 else 1.0
                total += count * 2 * (n - 1) / n * size * rows_scale
        return total

    print(f"Collectives per iteration at m={m0}, 2 replicas: "
          + ", ".join(f"{c:g} × {k}" for k, c in two["collectives_per_iteration"].items())
          + f", and the {params:,} parameter gradients.\n")
    print(f"T(N) = (network + pairwise)/N + bytes(N)/bandwidth + calls × latency, with network "
          f"and pairwise measured on one device (`split`, this CPU), {args.gbs} GB/s and "
          f"{args.latency_us} µs per call (assumed, not measured).\n")
    ns = [1, 2, 4, 8]
    print("| global batch m | network ms | pairwise ms | "
          + " | ".join(f"MB sent, N={n}" for n in ns[1:]) + " | "
          + " | ".join(f"speed-up N={n}" for n in ns[1:]) + " |")
    print("|" + " --- |" * (3 + 2 * (len(ns) - 1)))
    calls = sum(two["collectives_per_iteration"].values()) + 1
    for row in split_record["rows"]:
        m, net, pair = row["batch"], row["network_ms"] / 1000, row["pairwise_ms"] / 1000
        times = [net + pair]
        for n in ns[1:]:
            times.append((net + pair) / n + comm_bytes(m, n) / (args.gbs * 1e9)
                         + calls * args.latency_us * 1e-6)
        print(f"| {m:,} | {1000 * net:.0f} | {1000 * pair:.0f} | "
              + " | ".join(f"{comm_bytes(m, n) / 1e6:.1f}" for n in ns[1:]) + " | "
              + " | ".join(f"{times[0] / t:.2f}×" for t in times[1:]) + " |")


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("overhead", help="per-iteration time and bytes: 1/2/4 devices, 2 workers")
    o.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    o.add_argument("--workers", type=int, default=2)
    for q in (o, sub.add_parser("_measure")):
        q.add_argument("--batch", type=int, default=1024)
        q.add_argument("--n", type=int, default=20000)
        q.add_argument("--steps", type=int, default=10)
        q.add_argument("--epochs", type=int, default=4)
    sub.choices["_measure"].add_argument("--devices", type=int, default=1)
    for name in ("drift", "_drift"):
        q = sub.add_parser(name)
        q.add_argument("--epochs", type=int, default=15)
    sub.choices["_drift"].add_argument("--devices", type=int, default=1)
    t = sub.add_parser("table")
    t.add_argument("record")
    for name in ("edges", "_edges"):
        sub.add_parser(name).add_argument("--batches", type=int, default=20)
    sp = sub.add_parser("split", help="one device: network against pairwise work")
    sp.add_argument("--batches", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    sp.add_argument("--repeats", type=int, default=5)
    s = sub.add_parser("scaling")
    s.add_argument("overhead", help="an overhead record (the counted bytes)")
    s.add_argument("split", help="a split record (the measured parts)")
    s.add_argument("--gbs", type=float, default=100.0, help="bandwidth between devices")
    s.add_argument("--latency-us", type=float, default=20.0, help="latency per collective call")
    args = p.parse_args(argv)
    {"overhead": overhead, "_measure": measure, "drift": drift, "_drift": drift_one,
     "split": split, "edges": edges, "_edges": edges_one, "table": table,
     "scaling": scaling}[args.cmd](args)


if __name__ == "__main__":
    main()
