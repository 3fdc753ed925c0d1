"""The report: renders the records in ``benchmarks/results/`` into the marked
blocks of BENCHMARKS.md, each by its command's own table reader.

    python scripts/report.py            # rewrite the stale blocks
    python scripts/report.py --check    # exit 1 if a block is stale

A block is ``<!-- report: RENDERER GLOB [GLOB ...] -->`` ... ``<!-- /report -->``.
Either way it then checks the "Current figures" rows against the shipped
configs (``harness/current.py``): exit 1 if a row's records ran another one.
"""

import argparse
import contextlib
import glob
import io
import os
import re

import numpy as np

from spectralnet_tf.atomic import atomic_file

from . import current, distributed, preset, saddle, selection, semisup, vc
from .records import (RESULTS, ROOT, load_record, record_heading, rows_table, run_param,
                      seconds_without_references)

#: ``<!-- report: RENDERER GLOB [GLOB ...] -->`` ... ``<!-- /report -->``:
#: ``report`` replaces what lies between with the records' tables.
BLOCK = re.compile(r"^<!-- report: (\S+) ([^>]*?) -->\n.*?^<!-- /report -->$",
                   re.MULTILINE | re.DOTALL)
REPORTED = ("BENCHMARKS.md", "README.md")


def _printed(fn, *args):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        fn(*args)
    return buffer.getvalue().strip()


def render(renderer, paths):
    """The Markdown of ``paths`` (records) by ``renderer``: each script's own
    table reader (``saddle.py table``, ``semisup.py table``, ...)."""
    one = argparse.Namespace
    per_record = {
        "semisup": lambda p: _printed(semisup.cmd_table, one(record=p)),
        "preset": lambda p: _printed(preset.cmd_table, one(record=p)),
        "distributed": lambda p: _printed(distributed.table, one(record=p)),
        "vc": lambda p: _printed(vc.table, p),
        "select": lambda p: _printed(selection.table, one(records=[p])),
        "rows": lambda p: (lambda r: f"{record_heading(r)}\n\n{rows_table(r)}")(load_record(p)),
    }
    if renderer in per_record:
        return "\n\n".join(per_record[renderer](p) for p in paths)
    if renderer == "runs":  # several "rows" records of one header make one table
        return _printed(runs_table, paths)
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
        return (record_heading(load_record(split)) + "\n\n" + _printed(distributed.scaling, one(
            overhead=overhead, split=split, gbs=100.0, latency_us=20.0)))
    raise ValueError(f"unknown renderer {renderer!r} in a report block")


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


def report(check=False):
    """Re-render the report blocks of BENCHMARKS.md and README.md from the
    records; with ``check``, only say which file is stale (exit 1). Then
    ``current.report_check``: exit 1 if a "Current figures" row's records
    ran another config than its shipped command resolves to today."""
    stale = []
    for name in REPORTED:
        path = os.path.join(ROOT, name)
        with open(path) as f:
            text = f.read()
        new = fill(text, name)
        if new == text:
            continue
        stale.append(name)
        if not check:
            with atomic_file(path) as f:
                f.write(new)
    if check and stale:
        raise SystemExit(f"stale: {', '.join(stale)} (run: python scripts/bench.py report)")
    print(("rewritten: " if stale else "up to date: ") + ", ".join(stale or REPORTED))
    if not check:
        redraw_scale_png()
    current.report_check()


#: The log-log figure of the ``scale`` records, and the records it plots.
SCALE_PNG = os.path.join(ROOT, "benchmarks", "scale.png")
SCALE_RECORDS = ("*-issue14-scale-n*.json", "*-issue14-accept-n*.json",
                 "*-scale-scale-n*.json", "*-scale-accept-n*.json",
                 "*-scale-sampled-accept-*n*.json", "*-scale-auto-accept-*n*.json",
                 "*-scale-readahead-accept-*n*.json")


def redraw_scale_png():
    """``scale_plot`` of every committed ``scale`` record (``SCALE_RECORDS``)."""
    scale_plot(sorted(p for pattern in SCALE_RECORDS
                      for p in glob.glob(os.path.join(RESULTS, pattern))))


def spectralnet_seconds(r):
    """Seconds of a ``scale`` record's run without its exact reference: what
    ``run.py`` takes without ``--exact-knn`` (the issue's end to end)."""
    return seconds_without_references(r["seconds"])


def scale_plot(paths):
    """``benchmarks/scale.png``: seconds against n, log-log, for SpectralNet
    (run.py without the exact reference), exact spectral clustering of the
    kNN graph and k-means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loaded = sorted((load_record(p) for p in paths), key=lambda r: r["n"])
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


def runs_table(paths):
    """Several "rows" records (the seeds of one command) as one table under
    their headings; their headers must agree."""
    records = [load_record(p) for p in paths]
    header = records[0]["header"]
    for r in records:
        if r["header"] != header:
            raise ValueError(f"runs: {r['command']!r} has another header than "
                             f"{records[0]['command']!r}")
    _table_head(records, header)
    print("\n".join("| " + " | ".join(str(c) for c in row) + " |"
                    for r in records for row in r["rows"]))


def scale_table(paths):
    """Markdown: one row per ``scale`` record (``scale_label``). "SpectralNet
    min" leaves out the exact reference (``spectralnet_seconds``); "total min"
    keeps it."""
    rows = [load_record(p) for p in paths]
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
        fresh = "— | —"
        if "fresh" in r:
            f = r["fresh"]  # predicted from views where it keeps each digit alone beside
            views, speed = "", f"{f['points_per_s']:.0f}"
            if "acc_alone" in f:  # points_per_s is each digit alone's speed; add the views'
                views = f" ({f['views']} views; each digit alone {f['acc_alone']:.4f})"
                with_views = f["n"] / (f["n"] / f["points_per_s"] + f["views_seconds"])
                speed = f"{with_views:.0f} (each digit alone {speed})"
            fresh = f"{f['acc']:.4f}{views} | {speed}"
        own = spectralnet_seconds(r) / 60
        # Under the matching of all points; older records lack it.
        parts = (" / ".join(f"{r['by_part'][p]['acc']:.4f}" for p in ("original", "deformed"))
                 if "by_part" in r else "—")
        alone = (f" (each digit alone {r['acc_alone']:.4f} / {r['nmi_alone']:.4f})"
                 if "acc_alone" in r else "")
        print(f"| {n} | {r['acc']:.4f} / {r['nmi']:.4f}{alone} | {parts} | {exact} "
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
    (older records did not), how each phase's budget ended: epochs run of the
    maximum, learning-rate drops (the epoch of the last) and the final rate,
    the best validation loss, the epoch from which it stayed within 1% and
    0.1% of it, and the change of the mean validation loss over the last 10
    epochs against the 10 before ("—" under 20 epochs; a minibatch estimate,
    noisy where a phase's validation set is small)."""
    def settled(val, within):
        epoch = settled_epoch(val, within)
        return "not at the end" if epoch is None else epoch

    phases = (("Siamese", "siamese_history", "siamese"), ("SpectralNet", "history", None))
    rows = [r for r in map(load_record, paths) if any(r.get(key, {}).get("val_loss")
                                                for _, key, _ in phases)]
    _table_head(rows, [
        "run", "phase", "epochs run / max", "steps per epoch",
        "learning rate drops (last at epoch), final rate", "best val loss (epoch)",
        "last val loss", "within 1% from epoch", "within 0.1% from epoch",
        "last 10 epochs' mean against the 10 before"])
    for r in sorted(rows, key=_scale_order):
        c = r["config"]
        for phase, key, part in phases:
            h = r.get(key, {})
            val, lr = h.get("val_loss"), h.get("lr")
            if not val:
                continue
            cuts = [i + 2 for i, (a, b) in enumerate(zip(lr, lr[1:])) if b < a] if lr else []
            rates = (f"{len(cuts)}" + (f" ({cuts[-1]})" if cuts else "") + f", {lr[-1]:.0e}"
                     if lr else "—")
            steps = run_param(c, "steps_per_epoch", part) or "auto"
            most = run_param(c, "max_epochs", part)
            if most == "auto":  # resolved by the estimator from n
                most = r["resolved"]["max_epochs"]
            best = int(np.argmin(val))
            trend = (f"{np.mean(val[-10:]) / np.mean(val[-20:-10]) - 1:+.2%}" if len(val) >= 20
                     else "—")
            print(f"| {scale_label(r)} | {phase} | {len(val)} / {most} "
                  f"| {steps} | {rates} | {val[best]:.5f} ({best + 1}) | {val[-1]:.5f} "
                  f"| {settled(val, 0.01)} | {settled(val, 0.001)} | {trend} |")


def graph_table(paths):
    """Markdown: for each ``scale`` record with the exact reference's
    diagnostics (older records lack them), how well its graph (the plain kNN graph
    in the trained distance) determines a clustering. Without labels: the
    k-th and (k+1)-th smallest Laplacian eigenvalues, their relative gap
    ``1 - lambda_k / lambda_k+1``, and the smallest and largest cluster of
    exact SC. With labels, for the record: exact SC's ACC in all and on each
    part, and the graph's mean edge purity (``spectral.edge_purity``)."""
    rows = [r for r in map(load_record, paths) if "exact_eigenvalues_plain" in r]
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
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true",
                   help="exit 1 if a block of BENCHMARKS.md or README.md is stale (either "
                        "way, exit 1 if a Current-figures row is: harness/current.py)")
    report(p.parse_args(argv).check)
