#!/usr/bin/env python
"""The paper's settings beside ours on the MNIST rows of Table 1: a benchmark.

    python scripts/preset.py run                      # 4 rows x {ours, paper} x seeds 0 1 2
    python scripts/preset.py run --rows code-siamese --configs paper --seeds 0
    python scripts/preset.py run ... --resume         # go on with the runs under --runs
    python scripts/preset.py table RECORD.json

Each run is ``run.py --dset mnist --seed S`` with the row's ``--space`` and
``--affinity``, and ``--preset paper`` for the paper's config, in its own
process and run directory (``--runs``/CONFIG-ROW-sS). Runs are long (the
paper's config trains both nets until the learning rate reaches 1e-8), so
they checkpoint: with ``--resume`` an interrupted run goes on from its
checkpoints (``run.py --resume``) and a finished one is read back, and each
is named as it is; without it, a run directory that is not empty is an
error. When every run asked for has finished, one JSON record goes into
``benchmarks/results/`` (command, commit, date, machine, matmul rate, and
per run its ACC, NMI, epochs, seconds and the commits that started and
resumed it, from ``--runs``/log.jsonl).
"""

import argparse
import json
import os
import subprocess
import sys

from .records import (ROOT, SCRIPTS, machine_and_commit, matmul_rate, note_start,
                      record_heading, save_record)

#: Table 1's MNIST rows: run.py flags, and the paper's ACC and NMI (mean, +-).
ROWS = {
    "input-euclidean": (["--space", "input", "--affinity", "euclidean"],
                        ((0.622, 0.008), (0.687, 0.004))),
    "input-siamese": (["--space", "input", "--affinity", "siamese"],
                      ((0.826, 0.03), (0.884, 0.02))),
    "code-euclidean": (["--space", "code", "--affinity", "euclidean"],
                       ((0.800, 0.003), (0.814, 0.008))),
    "code-siamese": (["--space", "code", "--affinity", "siamese"],
                     ((0.971, 0.001), (0.924, 0.001))),
}
#: ours: the mnist config of configs.py; paper: configs.PRESETS["paper"].
CONFIGS = {"ours": [], "paper": ["--preset", "paper"]}


class RunsError(Exception):
    """A run directory in a state the flags do not allow, or a run that failed."""


def run_dir(runs, row, config, seed, resume):
    """The run's directory; a started one only with ``resume``."""
    out = os.path.join(runs, f"{config}-{row}-s{seed}")
    if os.path.isdir(out) and os.listdir(out) and not resume:
        raise RunsError(f"--runs: {out} is not empty; pass --resume to go on with it.")
    return out


def run_one(row, config, seed, runs, resume):
    """The results of one run: started, resumed or read back (``--resume``)."""
    out = run_dir(runs, row, config, seed, resume)
    done = os.path.join(out, "results.json")
    started = os.path.isdir(out) and bool(os.listdir(out))
    log = os.path.join(runs, "log.jsonl")  # which commit started or resumed each run
    if os.path.exists(done):
        print(f"{out}: finished earlier, read back", flush=True)
    else:
        run_py = [sys.executable, os.path.join(SCRIPTS, "run.py")]
        if started:
            print(f"{out}: resumed from its checkpoints", flush=True)
            cmd = run_py + ["--resume", out]
        else:
            cmd = run_py + ["--dset", "mnist", "--seed", str(seed), *ROWS[row][0],
                            *CONFIGS[config], "--quiet", "--no-plots", "--out", out]
        os.makedirs(runs, exist_ok=True)
        with open(log, "a") as f:
            print(json.dumps({"run": out, "resumed": bool(started),
                              "commit": machine_and_commit(now=True)[1]}), file=f)
        code = subprocess.run(cmd).returncode
        if code:  # its own error is above; what is done so far stays
            raise RunsError(f"{out}: run.py exited with status {code}; "
                            "rerun with --resume to go on.")
    with open(done) as f:
        r = json.load(f)
    with open(log) as f:
        commits = [e["commit"] for e in map(json.loads, f) if e["run"] == out]
    siamese = r.get("siamese_history", {}).get("loss", [])
    return {"row": row, "config": config, "seed": seed,
            **{k: round(r[k], 4) for k in ("acc", "nmi", "kmeans_acc")},
            "epochs": r["epochs"], "siamese_epochs": len(siamese), "seconds": r["seconds"],
            "commits": commits, "run": out}


def cmd_run(args):
    jobs = [(row, config, seed) for row in args.rows for config in args.configs
            for seed in args.seeds]
    try:
        for job in jobs:  # every directory checked before any work
            run_dir(args.runs, *job, args.resume)
        rate = matmul_rate()
        trials = [run_one(*job, args.runs, args.resume) for job in jobs]
    except RunsError as err:
        sys.exit(f"preset.py: {err}")
    for t in trials:
        print(json.dumps(t), flush=True)
    save_record(args.tag or "preset", {"kind": "preset", "matmul_gflops": round(rate, 1),
                                        "trials": trials}, group="preset", folder=args.results)


def _mean_sd(values):
    import numpy as np

    return f"{np.mean(values):.3f} ± {np.std(values):.3f}"


def cmd_table(args):
    with open(args.record) as f:
        record = json.load(f)
    print(record_heading(record) + f", f32 matmul {record['matmul_gflops']} GFLOP/s.\n")
    print("| row | config | seeds | ACC per seed | ACC mean ± std | NMI mean ± std "
          "| paper ACC | paper NMI | epochs | min per run |\n|" + " --- |" * 10)
    groups = {}
    for t in record["trials"]:
        groups.setdefault((t["row"], t["config"]), []).append(t)
    for (row, config), group in groups.items():
        (pa, pa_sd), (pn, pn_sd) = ROWS[row][1]
        cells = [row, config, " ".join(str(t["seed"]) for t in group),
                 " ".join(f"{t['acc']:.4f}" for t in group),
                 _mean_sd([t["acc"] for t in group]), _mean_sd([t["nmi"] for t in group]),
                 f"{pa} ± {pa_sd}", f"{pn} ± {pn_sd}",
                 " ".join(str(t["epochs"]) for t in group),
                 " ".join(f"{t['seconds']['total'] / 60:.0f}" for t in group)]
        print("| " + " | ".join(cells) + " |")


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    q = sub.add_parser("run")
    q.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    q.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    q.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    q.add_argument("--runs", default=os.path.join(ROOT, "runs", "preset"),
                   help="where the run directories go")
    q.add_argument("--resume", action="store_true",
                   help="go on with the runs already under --runs")
    q.add_argument("--tag", default=None, help="record name (default: preset)")
    q.add_argument("--results", default=os.path.join(ROOT, "benchmarks", "results"))
    q = sub.add_parser("table")
    q.add_argument("record")
    args = p.parse_args(argv)
    {"run": cmd_run, "table": cmd_table}[args.command](args)


if __name__ == "__main__":
    main()
