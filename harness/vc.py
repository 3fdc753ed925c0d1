#!/usr/bin/env python
"""Paper Sec. 4: check numerically that spectral clustering shatters m points.

    python scripts/vc_check.py                       # m = 2..8, sigma from the proof
    python scripts/vc_check.py --m 2 3 4 --sigmas 0.3 0.5 1.0 --no-record

For each m and each of the 2^m dichotomies of m grid points, builds the
paper's n = 10m points (Lemma C.1, ``harness.vc_construction``), takes the Fiedler
vector of their full Gaussian affinity and counts the dichotomies that its
sign realizes. With sigma from the proof's bound every one should be. The
``--sigmas`` rows use one fixed sigma for all dichotomies: too large a
sigma, and the construction stops working (the check can fail). Writes a
record to ``benchmarks/results/`` unless ``--no-record``.
"""

import argparse
import time

from .records import note_start, record_heading, save_record


def print_rows(rows, fraction):
    """The Markdown table of ``shattered`` results (one per m and sigma);
    ``fraction``: ``vc.SIGMA_FRACTION`` when they ran."""
    print("| m | n | sigma | dichotomies | realized | all n points split into S, T "
          "| within Lemma C.3's bound | b (max) | S-T gap (min) | lambda3/lambda2 (min) | s |")
    print("|" + " --- |" * 11)
    for r in rows:
        sigma = (f"{r['sigma_min']:.3f} ({fraction} × proof's)" if r["sigma"] == "proof"
                 else f"{r['sigma']}")
        print(f"| {r['m']} | {r['n']} | {sigma} | {r['dichotomies']} | {r['realized']} "
              f"| {r['separates']} | {r['within_bound']} | {r['b_max']:.3f} | {r['gap_min']:.3f} "
              f"| {r['eigengap_min']:.3g} | {r['seconds']} |")


def table(path):
    """A record's heading line and table."""
    import json

    with open(path) as f:
        r = json.load(f)
    print(record_heading(r) + "\n")
    print_rows(r["rows"], r["sigma_fraction"])


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--m", type=int, nargs="+", default=list(range(2, 9)),
                   help="set sizes to shatter (each >= 2; 2^m dichotomies each)")
    p.add_argument("--sigmas", type=float, nargs="*", default=[],
                   help="fixed scales to try besides the proof's")
    p.add_argument("--no-record", action="store_true", help="print only")
    args = p.parse_args(argv)
    bad = [m for m in args.m if m < 2]
    if bad:
        p.error(f"--m values must be >= 2, got {bad[0]}")
    bad = [s for s in args.sigmas if not s > 0]
    if bad:
        p.error(f"--sigmas values must be > 0, got {bad[0]}")

    from . import vc_construction as vc

    rows = []
    for m in args.m:
        for sigma in [None, *args.sigmas]:
            t = time.perf_counter()
            r = vc.shattered(m, sigma)
            r["seconds"] = round(time.perf_counter() - t, 2)
            r["sigma"] = "proof" if sigma is None else sigma
            rows.append(r)

    print_rows(rows, vc.SIGMA_FRACTION)
    print()
    for r in rows:
        how = "sigma from the proof" if r["sigma"] == "proof" else f"sigma = {r['sigma']}"
        print(f"m = {r['m']}, {how}: {r['realized']} / {r['dichotomies']} dichotomies shattered")
    if not args.no_record:

        save_record("vc-check", {"kind": "vc", "sigma_fraction": vc.SIGMA_FRACTION, "rows": rows},
                    group="vc")


if __name__ == "__main__":
    main()
