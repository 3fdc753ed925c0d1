#!/usr/bin/env python
"""Run scripts/run.py over data sets and seeds; append a table to BENCHMARKS.md.

    python scripts/sweep.py --dsets cc moons circles spirals rings3d digits --seeds 0 1 2
"""

import argparse
import datetime
import os

from .records import machine
from . import reproduce as run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsets", nargs="+", required=True)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--out", default=None, help="run directories go below this (default: runs/sweep-DATE)")
    p.add_argument("--benchmarks", default="BENCHMARKS.md", help="file the table is appended to")
    args, extra = p.parse_known_args(argv)
    out = args.out or os.path.join("runs", f"sweep-{datetime.datetime.now():%Y%m%d-%H%M%S}")
    rows = []
    for dset in args.dsets:
        for seed in args.seeds:
            r = run.run_command(["--dset", dset, "--seed", str(seed), "--quiet", "--no-plots",
                          "--out", os.path.join(out, f"{dset}-seed{seed}"), *extra])
            rows.append(
                f"| {dset} | {seed} | {r['n']} | {r['acc']:.4f} | {r['nmi']:.4f} | "
                f"{r.get('grassmann', float('nan')):.4f} | {r.get('exact_acc', float('nan')):.4f} | "
                f"{r['kmeans_acc']:.4f} | {r['iterations']} | {r['seconds']['train']:.1f} |"
            )
    command = "python scripts/sweep.py " + " ".join(
        ["--dsets", *args.dsets, "--seeds", *map(str, args.seeds), *extra])
    table = "\n".join([
        "",
        f"### `{command}`",
        "",
        f"{datetime.date.today().isoformat()}, {machine()}.",
        "",
        "| dataset | seed | n | ACC | NMI | Grassmann | exact SC ACC | k-means ACC | iterations | train s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])
    with open(args.benchmarks, "a") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
