#!/usr/bin/env python
"""Where Algorithm 1 stops on a saddle, and the warm start: benchmarks, not tests.

    python scripts/saddle.py retrain RUN_DIR --init spectral   # the spectral phase again
    python scripts/saddle.py retrain RUN_DIR --init random
    python scripts/saddle.py subset --seeds 0 1 2 3 4   # 4,000 digits: seeds x oneDNN off/on x init
    python scripts/saddle.py mnist --seed 1             # the main job (run.py --grassmann), timed
    python scripts/saddle.py table RECORD.json [RECORD.json ...]

``retrain`` takes a finished ``run.py`` run (its ``args.json`` and checkpoints)
and trains its spectral phase again on the same codes and the same trained
Siamese net (restored from the run's checkpoint, not retrained), with
``--init``. Before that it restores the run's own net and computes the exact
eigenvectors of the graph the minibatches sample (``Affinity.for_full_data``,
as ``run.py --grassmann``), so the record holds, per epoch, the Grassmann
distance to them. For the run's net, the retrained one and the eigenvectors
it also records the expected minibatch loss: the SpectralNet loss on the same
100 random minibatches of training codes, each output orthonormalized on its
minibatch (the objective Algorithm 1 minimizes; label-free). Labels only
score the results (ACC, NMI, which digits share a cluster). One JSON record
per call in ``benchmarks/results/`` (command, commit, date, machine, matmul
rate, numeric variant).
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

from .records import (ROOT, matmul_rate, note_start, onednn_setting, record_heading, run_param,
                      save_record, seconds_without_references)

#: Minibatches over which the expected minibatch loss is averaged.
LOSS_BATCHES = 100


def restore(run_dir, phases, work, **params):
    """The run's estimator, fitted from copies of its checkpoints of
    ``phases`` (the others train anew), with the run's data and codes."""
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.datasets import load_dataset

    from . import infimnist
    from .reproduce import default_ae
    from .runconfig import build_config, parse_args

    with open(os.path.join(run_dir, "args.json")) as f:
        args = parse_args(json.load(f))
    if args.dset == "infimnist":  # the harness's data set, as run.py loads it
        x, y = infimnist.load(seed=args.seed, data_dir=args.data_dir,
                              **({} if args.n is None else {"n": args.n}))
        k = 10
    else:
        x, y, k = load_dataset(args.dset, seed=args.seed, data_dir=args.data_dir)
    config = {**build_config(args), **params}
    encoder = load_encoder(args.ae_weights or default_ae(args))
    ckpt = os.path.join(work, "checkpoints")
    for phase in phases:
        shutil.copytree(os.path.join(run_dir, "checkpoints", phase), os.path.join(ckpt, phase))
    net = SpectralNet(k, random_state=args.seed, encoder=encoder, checkpoint_dir=ckpt, **config)
    return net, args, x, y


def minibatch_losses(affinity, z, embeddings, batch_size, laplacian, seed=0):
    """name -> mean and standard error of the loss over LOSS_BATCHES random
    minibatches, each embedding orthonormalized on each minibatch."""
    import numpy as np
    import tensorflow as tf

    from spectralnet_tf.losses import spectral_loss

    rng = np.random.default_rng(seed)
    losses = {name: [] for name in embeddings}
    for _ in range(LOSS_BATCHES):
        rows = rng.choice(len(z), batch_size, replace=False)
        w = affinity.kernel_matrix(tf.constant(affinity.coordinates(z[rows], rows)))
        for name, emb in embeddings.items():
            q = np.linalg.qr(emb[rows].astype(np.float64))[0] * np.sqrt(batch_size)
            losses[name].append(float(spectral_loss(w, tf.constant(q, tf.float32), laplacian)))
    return {name: {"mean": float(np.mean(v)), "sem": float(np.std(v) / np.sqrt(len(v)))}
            for name, v in losses.items()}


def cmd_retrain(args):
    from sklearn.metrics import confusion_matrix

    from spectralnet_tf.metrics import acc, grassmann, nmi
    from spectralnet_tf.spectral import spectral_clustering
    from spectralnet_tf.streaming import map_batches

    rate = matmul_rate()  # GFLOP/s
    with tempfile.TemporaryDirectory() as work:
        before, run_args, x, y = restore(args.run, ["siamese", "spectral"], os.path.join(work, "a"))
        before.fit(x, resume=True)  # both phases restored: nothing trains
        z = map_batches(before.encoder, x)
        batch = before.batch_size
        if batch is None:
            sys.exit(f"saddle.py: {args.run} ran without a batch size; its graph is unknown here.")
        full = before.affinity_.for_full_data(len(z), batch)
        t = time.perf_counter()
        exact, eigvecs = spectral_clustering(z, before.n_clusters, full, before.laplacian,
                                             neighbors="exact", random_state=run_args.seed)
        reference_seconds = time.perf_counter() - t
        after, *_ = restore(args.run, ["siamese"], os.path.join(work, "b"), init=args.init)
        t = time.perf_counter()
        after.fit(x, eigvecs=eigvecs, resume=True)  # the Siamese net restored, not retrained
        seconds = time.perf_counter() - t
        losses = minibatch_losses(before.affinity_, z, {
            "run": before.embedding_, "retrained": after.embedding_, "eigenvectors": eigvecs},
            batch, before.laplacian)

    def scores(labels, embedding=None):
        out = {"acc": acc(y, labels), "nmi": nmi(y, labels),
               "confusion": confusion_matrix(y, labels).tolist()}
        if embedding is not None:
            out["grassmann"] = grassmann(embedding, eigvecs)
        return out

    history = after.history_
    save_record(f"retrain-{args.tag}", {
        "kind": "retrain", "run": os.path.abspath(args.run), "init": args.init,
        "numerics": numerics(), "matmul_gflops": round(rate, 1), "reference_seconds": round(reference_seconds, 1),
        "seconds": round(seconds, 1), "exact": scores(exact),
        "run_net": scores(before.labels_, before.embedding_),
        "retrained": scores(after.labels_, after.embedding_),
        "minibatch_loss": losses, "history": history}, group="saddle")
    print(json.dumps({"run": scores(before.labels_, before.embedding_)["acc"],
                      "retrained": scores(after.labels_, after.embedding_)["acc"],
                      "losses": losses}))


def numerics():
    """The numeric variant this process runs under (None: TensorFlow's default)."""
    return {key: os.environ.get(key) for key in (
        "TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}


def variant_name(env):
    """Short text of a ``numerics()`` dict, e.g. 'oneDNN on, 1 thread'."""
    onednn = onednn_setting(env) or "oneDNN default"
    threads = env.get("TF_NUM_INTRAOP_THREADS")
    return onednn + (f", {threads} thread{'s' if threads != '1' else ''}" if threads
                     else ", default threads")


def record_variant(record):
    """``variant_name`` of an mnist record, plus each net computed in bfloat16
    (records before ``dtype_policy`` existed are float32)."""
    config = record["results"]["config"]
    extra = []
    if config.get("dtype_policy", "float32") != "float32":
        extra.append(f"SpectralNet {config['dtype_policy']}")
    siamese_policy = run_param(config, "dtype_policy", "siamese") or "float32"
    if siamese_policy != "float32":
        extra.append(f"Siamese {siamese_policy}")
    return ", ".join([variant_name(_numerics(record)), *extra])


def cmd_subset(args):
    """``tests/mnist_variant.py`` (the regression test's run) per seed, init
    and oneDNN setting, two one-thread processes at a time."""
    import subprocess

    helper = os.path.join(ROOT, "tests", "mnist_variant.py")
    trials = []
    for seed in args.seeds:
        for init in args.inits:
            procs = []
            for onednn in ("0", "1"):
                env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": onednn, "TF_NUM_INTRAOP_THREADS": "1",
                       "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1"}
                procs.append(subprocess.Popen(
                    [sys.executable, helper, str(args.n), "--init", init, "--seed", str(seed)],
                    env=env, stdout=subprocess.PIPE, text=True))
            for proc in procs:
                out, _ = proc.communicate()
                if proc.returncode:
                    sys.exit(f"saddle.py: mnist_variant.py failed (seed {seed}, init {init})")
                trials.append({"seed": seed, **json.loads(out.strip().splitlines()[-1])})
                print(json.dumps(trials[-1]), flush=True)
    save_record(f"subset-n{args.n}", {"kind": "subset", "n": args.n, "trials": trials},
                group="saddle")


def cmd_mnist(args):
    """``run.py --dset mnist --seed S --grassmann`` in this process, with the
    matmul rate measured first; the record holds run.py's results."""
    from .reproduce import run_command

    rate = matmul_rate()  # GFLOP/s
    with tempfile.TemporaryDirectory() as work:
        results = run_command(["--dset", "mnist", "--seed", str(args.seed), "--grassmann",
                               "--quiet", "--no-plots", "--out", os.path.join(work, "run"),
                               *args.extra])
    save_record(args.tag or f"mnist-seed{args.seed}", {
        "kind": "mnist", "numerics": numerics(), "matmul_gflops": round(rate, 1),
        "results": results}, group="saddle")


def cmd_table(args):
    """Markdown: a retrain record's three rows, or a subset record's summary."""
    import numpy as np

    mnist_rows = []
    for path in args.records:
        with open(path) as f:
            r = json.load(f)
        r.setdefault("kind", "mnist")  # the first saddle records (run.py results) had none
        if r["kind"] != "mnist":
            print(record_heading(r) + "\n")
        if r["kind"] == "mnist":
            mnist_rows.append(r)
            continue
        if r["kind"] == "subset":
            print("| init | oneDNN | seeds | ACC min / median / max | exact SC ACC (same graph) "
                  "| Grassmann min / median / max | on a saddle (Grassmann >= 0.5) |")
            print("|" + " --- |" * 7)
            for init in dict.fromkeys(t["init"] for t in r["trials"]):
                for onednn in ("0", "1"):
                    ts = [t for t in r["trials"] if t["init"] == init and t["onednn"] == onednn]
                    a, e, g = (np.array([t[key] for t in ts]) for key in ("acc", "exact_acc",
                                                                          "grassmann"))
                    print(f"| {init} | {'off' if onednn == '0' else 'on'} | "
                          f"{', '.join(str(t['seed']) for t in ts)} "
                          f"| {a.min():.4f} / {np.median(a):.4f} / {a.max():.4f} "
                          f"| {e.min():.4f}–{e.max():.4f} "
                          f"| {g.min():.3f} / {np.median(g):.3f} / {g.max():.3f} "
                          f"| {int((g >= 0.5).sum())} of {len(ts)} |")
            continue
        h, loss = r["history"], r["minibatch_loss"]
        variant = ", ".join(f"{k}={v}" for k, v in r["numerics"].items() if v is not None)
        print(f"Numerics: {variant or 'defaults'}; matmul {r['matmul_gflops']} GFLOP/s.\n")
        print("| net | ACC | NMI | Grassmann | expected minibatch loss | epochs | minutes |")
        print("|" + " --- |" * 7)
        minutes = r["seconds"] / 60
        rate = r["matmul_gflops"]
        cost = f" ({r['seconds'] * rate / 1e3:.0f} TFLOP-equiv.)" if rate else ""
        for name, net, key in (("the run's net", r["run_net"], "run"),
                               (f"retrained, init={r['init']}", r["retrained"], "retrained")):
            new = key == "retrained"
            print(f"| {name} | {net['acc']:.4f} | {net['nmi']:.4f} | {net['grassmann']:.4f} "
                  f"| {loss[key]['mean']:.4f} ± {loss[key]['sem']:.4f} "
                  f"| {len(h['loss']) if new else '—'} "
                  f"| {f'{minutes:.1f}{cost}' if new else '—'} |")
        print(f"| exact eigenvectors | {r['exact']['acc']:.4f} | {r['exact']['nmi']:.4f} | 0 "
              f"| {loss['eigenvectors']['mean']:.4f} ± {loss['eigenvectors']['sem']:.4f} | — | — |")
        if "start_grassmann" in h:
            print(f"\nWarm start: {h['init_seconds']:.0f} s; Grassmann distance "
                  f"{h['init_grassmann']:.3f} on its subsample, {h['start_grassmann']:.3f} on all "
                  f"points; per epoch: "
                  + ", ".join(f"{g:.3f}" for g in h["grassmann"][:10]) + ", …, "
                  + f"{h['grassmann'][-1]:.4f}.")
        print()
    if mnist_rows:
        mnist_table(mnist_rows)


def _f4(value):
    return "—" if value is None else f"{value:.4f}"


def _numerics(record):
    return record.get("numerics") or record.get("environment") or {}


def mnist_table(records):
    """One row per ``mnist`` record (seed, numeric variant, commit), then the
    min / median / max of ACC, NMI and Grassmann over all of them."""
    import numpy as np

    split = _is_split(records)
    print("| seed | numerics | commit | init | ACC | NMI "
          + ("| test ACC | test NMI " if split else "")
          + "| Grassmann | exact SC ACC | Grassmann, W_full | exact SC ACC, W_full | k-means ACC "
          "| epochs | Siamese s | warm start s | spectral s | total | without references "
          "| total × matmul rate | peak RSS |")
    print("|" + " --- |" * (21 if split else 19))
    for r in sorted(records, key=lambda r: (r["results"]["config"].get("seed", 0),
                                            record_variant(r))):
        x, sec, rate = r["results"], r["results"]["seconds"], r.get("matmul_gflops")
        cost = f"{sec['total'] * rate / 1e3:.0f} TFLOP ({rate} GFLOP/s)" if rate else "—"
        print(f"| {x['config'].get('seed')} | {record_variant(r)} | {r['commit']} "
              f"| {x['config'].get('init', 'random')} | {x['acc']:.4f} | {x['nmi']:.4f} "
              + (f"| {_f4(x.get('test_acc'))} | {_f4(x.get('test_nmi'))} " if split else "")
              + f"| {x['grassmann']:.4f} | {x['exact_acc']:.4f} "
              f"| {_f4(x.get('grassmann_plain'))} | {_f4(x.get('exact_acc_plain'))} "
              f"| {x['kmeans_acc']:.4f} "
              f"| {x['epochs']} | {sec.get('siamese', 0):.0f} | {sec.get('warm_start', 0):.0f} "
              f"| {sec['spectral']:.0f} | {sec['total'] / 60:.1f} min "
              f"| {seconds_without_references(sec) / 60:.1f} min | {cost} "
              f"| {x['peak_rss_gib']:.2f} GiB |")
    print()
    keys = (("acc", "ACC"), ("nmi", "NMI"), ("grassmann", "Grassmann"))
    if split:
        keys = (("test_acc", "Test ACC"), ("test_nmi", "Test NMI"), *keys)
    for key, name in keys:
        v = np.array([r["results"][key] for r in records])
        print(f"- {name} over {len(v)} runs: min {v.min():.4f}, median {np.median(v):.4f}, "
              f"max {v.max():.4f}")
    print()


def _is_split(records):
    """Whether the records are ``run.py --split`` runs (60k / 10k): all or none."""
    split = {"test_acc" in r["results"] for r in records}
    if len(split) > 1:
        raise ValueError("records mix --split runs with runs on all 70k; render them apart.")
    return split == {True}


def _spread(values):
    """"min / median / max" of ``values``, four decimals."""
    import numpy as np

    return f"{values.min():.4f} / {np.median(values):.4f} / {values.max():.4f}"


def mnist_status(paths):
    """README's MNIST status lines, from the same records as the table."""
    import numpy as np

    records = []
    for path in paths:
        with open(path) as f:
            records.append(json.load(f))
    seeds = sorted({r["results"]["config"].get("seed") for r in records})
    variants = sorted({record_variant(r) for r in records})
    def column(key):
        return np.array([r["results"][key] for r in records])

    acc, nmi, gr = map(column, ("acc", "nmi", "grassmann"))
    minutes = np.array([r["results"]["seconds"]["total"] / 60 for r in records])
    runs = f"{len(records)} run" + ("s" if len(records) != 1 else "")
    split = _is_split(records)
    print(f"{'Trained on the 60k, tested on the 10k' if split else 'All 70k'}, {runs} "
          f"(seeds {', '.join(map(str, seeds))}; "
          f"{'; '.join(variants)}), 2-core CPU, {min(r['date'] for r in records)} to "
          f"{max(r['date'] for r in records)}:")
    if split:
        t_acc, t_nmi = map(column, ("test_acc", "test_nmi"))
        print(f"- test ACC min / median / max {_spread(t_acc)}, test NMI {_spread(t_nmi)} "
              f"(paper: test ACC .970, no NMI); on the 60k:")
    print(f"- ACC min / median / max {_spread(acc)}, NMI {_spread(nmi)}"
          + (";" if split else " (paper: .971 / .924);"))
    print(f"- Grassmann distance to the sampled graph's eigenvectors {_spread(gr)};")
    lean = np.array([seconds_without_references(r["results"]["seconds"]) / 60
                     for r in records])
    print(f"- {_span(minutes)} min a run with `--grassmann`, {_span(lean)} min without it "
          f"(records in `benchmarks/results/`, table in BENCHMARKS.md).")


def _span(v):
    """'a' or 'a–b', the range of ``v`` to 0.1."""
    low, high = f"{v.min():.1f}", f"{v.max():.1f}"
    return low if low == high else f"{low}–{high}"


def main(argv=None):
    from spectralnet_tf.initializers import INITIALIZERS

    note_start()  # the tree this run starts from names its records

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("retrain", help="train a finished run's spectral phase again")
    q.add_argument("run", help="a finished run.py run directory (args.json, checkpoints/)")
    q.add_argument("--init", choices=sorted(INITIALIZERS), required=True)
    q.add_argument("--tag", help="record name (default: the run directory's name and --init)")
    q = sub.add_parser("subset", help="the regression test's MNIST subset over seeds")
    q.add_argument("--n", type=int, default=4000)
    q.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    q.add_argument("--inits", nargs="+", choices=sorted(INITIALIZERS),
                   default=["spectral", "random"])
    q = sub.add_parser("mnist", help="the main job, timed against the matmul rate")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--tag", help="record name (default: mnist-seedS)")
    q.add_argument("extra", nargs="*", help="more run.py arguments, after --")
    q = sub.add_parser("table", help="the Markdown table of records")
    q.add_argument("records", nargs="+")
    args = p.parse_args(argv)
    if args.command == "retrain":
        args.tag = args.tag or f"{os.path.basename(os.path.normpath(args.run))}-{args.init}"
        cmd_retrain(args)
    elif args.command == "subset":
        cmd_subset(args)
    elif args.command == "mnist":
        cmd_mnist(args)
    else:
        cmd_table(args)


if __name__ == "__main__":
    main()
