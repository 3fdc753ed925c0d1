#!/usr/bin/env python
"""Data-parallel SpectralNet on tf.distribute (issue 15): benchmarks, not tests.

    python scripts/distributed.py overhead                 # 1, 2, 4 logical devices and 2 workers
    python scripts/distributed.py drift                    # 1 vs 2 replicas vs oneDNN on/off
    python scripts/distributed.py table RECORD.json        # the Markdown table of a record
    python scripts/distributed.py split                    # one device: per-replica vs repeated work
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
import datetime
import json
import os
import shlex
import socket
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: The MNIST net (paper Table 3) on 10-d codes, k = 10.
DIMS = (10, 1024, 1024, 512, 10)


def machine_and_commit():
    sys.path.insert(0, HERE)
    from bench import machine
    from semisup import commit
    return machine(), commit()


def save_record(tag, extra):
    machine, commit = machine_and_commit()
    record = {"command": "python scripts/distributed.py " + shlex.join(sys.argv[1:]),
              "commit": commit, "date": datetime.date.today().isoformat(), "machine": machine,
              **extra}
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    path = os.path.join(ROOT, "benchmarks", "results", f"{record['date']}-issue15-{tag}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f, indent=1)
    os.replace(path + ".tmp", path)
    print(f"record: {path}")
    return path


# ------------------------------------------------------------------ measure
def measure(args):
    """One layout, in this process: per-iteration seconds and bytes per iteration."""
    from spectralnet_tf import distribute

    strategy = distribute.strategy_for(args.devices)  # before any TensorFlow op
    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, HERE)
    from bench import matmul_rate
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import train_spectralnet

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(DIMS[-1], DIMS[0])) * 3
    x = (centers[rng.integers(0, DIMS[-1], args.n)] + rng.normal(size=(args.n, DIMS[0])))
    x = x.astype(np.float32)
    rate = matmul_rate()
    strategy = distribute.get(strategy)
    with strategy.scope():
        model, body = build_spectralnet(DIMS[0], DIMS[-1], DIMS[1:-1], seed=0,
                                        output_activation="linear")
    affinity = GaussianKNNAffinity(n_nbrs=10, scale_nbr=5, scale="local").fit(
        x, args.batch, seed=0)
    with distribute.count_collectives() as ledger:
        history = train_spectralnet(
            model, body, affinity, x, x[:args.batch], batch_size=args.batch,
            ortho_batch_size=args.batch, epochs=args.epochs, steps_per_epoch=args.steps,
            patience=10**6, seed=0, verbose=0, strategy=strategy)
    replicas = distribute.n_replicas(strategy)
    local_replicas = len(strategy.extended.worker_devices) if replicas > 1 else 1
    per_kind = {}
    for function, collective, dtype, shape in ledger:
        if function == "run_epoch":
            key = f"{collective} {dtype} {'x'.join(map(str, shape))}"
            per_kind[key] = per_kind.get(key, 0) + 1 / local_replicas
    collective_bytes = sum(
        count * np.prod([int(v) for v in key.split()[2].split("x")])
        * np.dtype(key.split()[1]).itemsize for key, count in per_kind.items())
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


def _ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _launch(flags, workers=1, env=None):
    """Run ``measure`` in fresh processes (one per worker); the chief's result."""
    argv = [sys.executable, os.path.abspath(__file__), "_measure", *flags]
    base = dict(os.environ, **(env or {}))
    base.pop("TF_CONFIG", None)
    if workers == 1:
        procs = [subprocess.Popen(argv, env=base, stdout=subprocess.PIPE, text=True)]
    else:
        ports = _ports(workers)
        cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=dict(
            base, TF_CONFIG=json.dumps({"cluster": cluster,
                                        "task": {"type": "worker", "index": i}})))
                 for i in range(workers)]
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
                                             "rows": rows})


# ------------------------------------------------------------------ split
def split(args):
    """On one device: per iteration, the work a replica does on its own rows
    (the network: ortho forward, gradient forward and backward) against the
    work every replica repeats on the whole global batch (W, the loss, dL/dY
    and its projection), at several global batches."""
    import time

    import numpy as np
    import tensorflow as tf

    sys.path.insert(0, HERE)
    from bench import matmul_rate
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.orthonorm import tangent_projection
    from spectralnet_tf.train import minibatch_loss

    rate = matmul_rate()
    model, body = build_spectralnet(DIMS[0], DIMS[-1], DIMS[1:-1], seed=0,
                                    output_activation="linear")
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
        def replicated(x, y):
            w = affinity.kernel_matrix(x)
            with tf.GradientTape() as tape:
                tape.watch(y)
                loss = minibatch_loss(w, y)
            return tangent_projection(y, tape.gradient(loss, y))

        y = model(x)
        seconds = {}
        for name, fn, fargs in (("network", network, (x,)), ("replicated", replicated, (x, y))):
            tf.nest.map_structure(lambda t: t.numpy(), fn(*fargs))  # trace
            start = time.perf_counter()
            for _ in range(args.repeats):
                tf.nest.map_structure(lambda t: t.numpy(), fn(*fargs))
            seconds[name] = (time.perf_counter() - start) / args.repeats
        rows.append({"batch": m, "network_ms": round(1000 * seconds["network"], 2),
                     "replicated_ms": round(1000 * seconds["replicated"], 2)})
        print(rows[-1], flush=True)
    save_record("split", {"kind": "split", "dims": DIMS, "matmul_gflops": round(rate, 1),
                          "rows": rows})


# ------------------------------------------------------------------ drift
def drift(args):
    """Loss histories of 1 and 2 replicas under oneDNN on and off (moons)."""
    rows = []
    for onednn in ("0", "1"):
        for devices in (1, 2):
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "_drift", "--devices", str(devices),
                 "--epochs", str(args.epochs)],
                env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn), capture_output=True,
                text=True, check=True).stdout
            line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
            rows.append({"onednn": onednn, "devices": devices,
                         **json.loads(line[len("RESULT "):])})
            print(rows[-1]["loss"][:3], flush=True)
    save_record("drift", {"kind": "drift", "steps_per_epoch": 10, "rows": rows})


def drift_one(args):
    from spectralnet_tf import distribute

    strategy = distribute.strategy_for(args.devices)
    from sklearn.datasets import make_moons

    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import train_spectralnet

    x = make_moons(1200, noise=0.05, random_state=0)[0].astype("float32")
    with distribute.get(strategy).scope():
        model, body = build_spectralnet(2, 2, (64, 64), seed=3)
    affinity = GaussianKNNAffinity(n_nbrs=10).fit(x[:1000], 256, seed=0)
    history = train_spectralnet(model, body, affinity, x[:1000], x[1000:], batch_size=256,
                                ortho_batch_size=256, epochs=args.epochs, steps_per_epoch=10,
                                seed=7, verbose=0, strategy=strategy)
    print("RESULT " + json.dumps({"loss": history["loss"]}), flush=True)


# ------------------------------------------------------------------ reading records
def table(args):
    with open(args.record) as f:
        record = json.load(f)
    print(f"`{record['command']}`, commit {record['commit']}, {record['date']}, "
          f"{record['machine']}\n")
    if record["kind"] == "drift":
        import numpy as np

        loss = {(r["onednn"], r["devices"]): np.array(r["loss"]) for r in record["rows"]}
        pairs = [("1 vs 2 replicas, oneDNN off", ("0", 1), ("0", 2)),
                 ("1 vs 2 replicas, oneDNN on", ("1", 1), ("1", 2)),
                 ("1 replica, oneDNN off vs on", ("0", 1), ("1", 1))]
        epochs = range(0, len(loss[("0", 1)]), 2)
        print("| relative loss difference after iteration | "
              + " | ".join(str(10 * (e + 1)) for e in epochs) + " |")
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
    """Expected per-iteration time on N GPUs: the counted bytes, and the
    measured split of one iteration's work into per-replica and repeated parts."""
    with open(args.overhead) as f:
        overhead_record = json.load(f)
    with open(args.split) as f:
        split_record = json.load(f)
    two = next(r for r in overhead_record["rows"] if r["replicas"] == 2 and r["workers"] == 1)
    m0, k, d, params = two["batch"], DIMS[-1], DIMS[0], two["parameters"]
    # The counted bytes against the formula, at the measured batch and 2 replicas.
    expected = 8 * k * k + 4 * (m0 // 2) * (k + d) + 4 * params
    counted = two["collective_bytes"] + two["gradient_bytes"]
    print(f"Counted at m={m0}, 2 replicas: {counted:,} bytes per replica per iteration; "
          f"formula 8k² + 4(m/N)(k+d') + 4P = {expected:,}.\n")
    print(f"Time per iteration on N devices, T(N) = network/N + repeated + bytes(N)/bandwidth "
          f"+ {args.calls} collective calls × latency, with network and repeated the two parts "
          f"measured on one device (`split`, this CPU's proportions), a ring all-reduce moving "
          f"2(N-1)/N of its data and an all-gather (N-1)/N, {args.gbs} GB/s and "
          f"{args.latency_us} µs per call (assumed, not measured).\n")
    ns = [1, 2, 4, 8]
    print("| global batch m | repeated share on 1 device | "
          + " | ".join(f"speed-up N={n}" for n in ns[1:]) + " | bound (N → ∞) |")
    print("|" + " --- |" * (len(ns) + 2))
    for row in split_record["rows"]:
        m, net, rep = row["batch"], row["network_ms"] / 1000, row["replicated_ms"] / 1000
        times = []
        for n in ns:
            ring = (n - 1) / n
            data = 2 * ring * (8 * k * k + 4 * params) + ring * 4 * m * (k + d)
            comm = 0.0 if n == 1 else data / (args.gbs * 1e9) + args.calls * args.latency_us * 1e-6
            times.append(net / n + rep + comm)
        print(f"| {m:,} | {rep / (net + rep):.0%} | "
              + " | ".join(f"{times[0] / t:.2f}×" for t in times[1:])
              + f" | {(net + rep) / rep:.1f}× |")


def main(argv=None):
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
    sp = sub.add_parser("split", help="one device: per-replica against repeated work")
    sp.add_argument("--batches", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    sp.add_argument("--repeats", type=int, default=5)
    s = sub.add_parser("scaling")
    s.add_argument("overhead", help="an overhead record (the counted bytes)")
    s.add_argument("split", help="a split record (the measured parts)")
    s.add_argument("--gbs", type=float, default=100.0, help="bandwidth between devices")
    s.add_argument("--latency-us", type=float, default=20.0, help="latency per collective call")
    s.add_argument("--calls", type=int, default=4, help="collective calls per iteration")
    args = p.parse_args(argv)
    {"overhead": overhead, "_measure": measure, "drift": drift, "_drift": drift_one,
     "split": split, "table": table, "scaling": scaling}[args.cmd](args)


if __name__ == "__main__":
    main()
