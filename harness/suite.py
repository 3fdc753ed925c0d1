"""The development suite: every method, on the same arrays, on the same
machine, in one run, one after another, over seeds; one record per run.

    python scripts/bench.py suite                                  # all sets but mnist, seeds 0 1 2
    python scripts/bench.py suite --sets iris wine --seeds 0 --methods sc kmeans umap authors ours
    python scripts/bench.py suite --sets traps --ours-params '{"affinity__n_nbrs": 5}'
    python scripts/bench.py suite --sets mnist                     # reported, never chosen by
    python scripts/bench.py suite --authors-mnist                  # the authors' MNIST example, all 70k

Methods (each with its defaults, fed the same float32 arrays):

- ``ours``: ``SpectralNet(n_clusters=k, random_state=seed).fit(X).labels_``;
  ``--ours-params JSON`` sets keyword arguments through ``set_params``
  (nested keys such as ``affinity__scale`` work).
- ``sc``: scikit-learn's ``SpectralClustering(n_clusters=k,
  affinity="nearest_neighbors", random_state=seed)``; every ratio of fit
  seconds is to its seconds on the same set and seed in the same run.
- ``kmeans``: ``KMeans(k, n_init=10, random_state=seed)``.
- ``umap``: UMAP + k-means as in N2D, in the peers' environment
  (``harness/peers.py``, ``harness/peer_worker.py``).
- ``authors``: the authors' PyTorch package ``spectralnet`` 1.1.0, its
  defaults with an output width of k, in the peers' environment.

On the block models (``sbm``, ``sbm_strong``, ``sbm_hex``; k blocks) the
methods take the graph: ``ours`` is
``SpectralNet(k, affinity="precomputed", random_state=seed).fit(F_train,
graph=W_train)`` (training nodes from ``labels_``, held-out nodes from
``predict(F_held)``), ``sc`` is scikit-learn's ``SpectralClustering(k,
affinity="precomputed", random_state=seed)`` of the training graph (exact
spectral clustering), ``two-stage`` is those clusters taught to an SVM
(``SVC()``, RBF) of the training features that predicts the held-out nodes,
``kmeans`` is k-means of the training features (``predict`` for the held-out
ones), and ``bayes`` is the Bayes rule of the features (the true model: a
reference, not a method). The peers take no graph and are left out there.

The MNIST set (``mnist``) is reported, never chosen by: MNIST labels choose
nothing in this project, and its rows say so (``for choosing: no``).
"""

import argparse
import datetime
import json
import sys
import time
import warnings

import numpy as np

from .current import defaults_config
from .records import matmul_rate, save_record
from .suite_sets import (DEFAULT_SETS, GROUPS, NOT_FOR_CHOOSING, SETS, GraphSet, bayes_rule,
                         resolve_sets)


# --- the real sets (scikit-learn's bundled files; the seed changes nothing) ---


# --- the traps, made here (each a draw of the seed) ---


# --- the block model, for affinity="precomputed" ---


# --- MNIST's 70k in the shipped code space (reported, never chosen by) ---


#: Methods in the order they run on each set and seed; sc first (the ratios' unit).
METHODS = ("sc", "ours", "kmeans", "umap", "authors", "two-stage", "bayes")
#: The methods for points (the peers among them) and for the block model.
POINT_METHODS = ("sc", "ours", "kmeans", "umap", "authors")
GRAPH_METHODS = ("sc", "ours", "two-stage", "kmeans", "bayes")


# --- the methods ---

def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def make_ours(k, seed, params, graph=False):
    """The estimator ``ours`` fits: defaults, ``params`` set through
    ``set_params``; on the block model ``affinity="precomputed"``."""
    from spectralnet_tf import SpectralNet

    net = (SpectralNet(k, affinity="precomputed", random_state=seed) if graph
           else SpectralNet(n_clusters=k, random_state=seed))
    return net.set_params(**params) if params else net


def run_point_method(method, s, seed, ours_params):
    """(labels, fit seconds, extra) of ``method`` on a SuiteSet."""
    from sklearn.cluster import KMeans, SpectralClustering

    from spectralnet_tf import acc

    from . import peers

    x, k = s.x, s.k
    if method == "sc":
        labels, seconds = _timed(lambda: SpectralClustering(
            n_clusters=k, affinity="nearest_neighbors", random_state=seed).fit_predict(x))
        return labels, seconds, {}
    if method == "kmeans":
        labels, seconds = _timed(lambda: KMeans(k, n_init=10, random_state=seed).fit_predict(x))
        return labels, seconds, {}
    if method == "ours":
        net = make_ours(k, seed, ours_params)
        net, seconds = _timed(lambda: net.fit(x))
        history = getattr(net, "history_", None) or {}
        # The net's own clusters, which a new point gets (labels_ may come from the graph).
        net_acc = acc(s.y[s.scored], net.predict(x)[s.scored])
        return net.labels_, seconds, {"epochs": len(history.get("loss", [])) or None,
                                      "net_acc": net_acc}
    out = peers.run_peer(method, x, k, seed)  # its versions: the record's, from the marker
    return out["labels"], out["fit_seconds"], {"startup_seconds": out["startup_seconds"],
                                               "params": out["params"]}


def run_graph_method(method, g, seed, ours_params):
    """(training-node labels, held-out labels or None, fit seconds, extra)
    of ``method`` on the block model."""
    from sklearn.cluster import KMeans, SpectralClustering
    from sklearn.svm import SVC

    from spectralnet_tf import acc

    f_train, f_held, k = g.features[g.train], g.features[g.held], g.k

    def exact():
        return SpectralClustering(k, affinity="precomputed", random_state=seed).fit_predict(
            g.graph)

    if method == "sc":
        labels, seconds = _timed(exact)
        return labels, None, seconds, {}
    if method == "two-stage":
        def both():
            clusters = exact()
            return clusters, SVC().fit(f_train, clusters).predict(f_held)
        (labels, held), seconds = _timed(both)
        return labels, held, seconds, {}
    if method == "kmeans":
        km, seconds = _timed(lambda: KMeans(k, n_init=10, random_state=seed).fit(f_train))
        return km.labels_, km.predict(f_held), seconds, {}
    if method == "ours":
        net = make_ours(k, seed, ours_params, graph=True)
        net, seconds = _timed(lambda: net.fit(f_train, graph=g.graph))
        held, predict_seconds = _timed(lambda: net.predict(f_held))
        history = getattr(net, "history_", None) or {}
        return net.labels_, held, seconds, {"predict_seconds": predict_seconds,
                                            "epochs": len(history.get("loss", [])) or None,
                                            "net_acc": acc(g.y[g.held], held)}
    if method == "bayes":
        return bayes_rule(g, g.train), bayes_rule(g, g.held), None, {
            "note": "reference: the true model"}
    raise ValueError(f"{method!r} takes no graph")


def cluster_sizes(labels):
    """The sizes of the clusters found, largest first (empty clusters left out)."""
    counts = np.bincount(np.asarray(labels, np.int64))
    return sorted((int(c) for c in counts if c), reverse=True)


def _error_text(exc):
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 2000 else text[:1000] + " ... " + text[-1000:]


def run_one(name, method, data, seed, ours_params):
    """One row (a dict) of ``method`` on the set ``name`` (``data``: its
    SuiteSet or GraphSet) and ``seed``: ACC and NMI on the scored points
    (the block model: training nodes, and held-out nodes beside), fit
    seconds, cluster sizes; ``error`` where the method failed."""
    from spectralnet_tf import acc, nmi

    row = {"set": name, "method": method, "seed": seed, "acc": None, "nmi": None,
           "held_acc": None, "held_nmi": None, "seconds": None, "ratio": None,
           "cluster_sizes": None, "error": None, "note": ""}
    if method == "ours" and ours_params:
        row["params"] = ours_params
    graph = isinstance(data, GraphSet)
    row["n"] = len(data.train) if graph else len(data.y)
    row["scored"] = len(data.train) if graph else int(data.scored.sum())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if graph:
                labels, held, seconds, extra = run_graph_method(method, data, seed, ours_params)
                y = data.y[data.train]
                if held is not None:
                    row["held_acc"] = acc(data.y[data.held], held)
                    row["held_nmi"] = nmi(data.y[data.held], held)
            else:
                labels, seconds, extra = run_point_method(method, data, seed, ours_params)
                y, labels_all = data.y[data.scored], labels
                labels = np.asarray(labels)[data.scored]
            row["acc"], row["nmi"] = acc(y, labels), nmi(y, labels)
            row["cluster_sizes"] = cluster_sizes(labels if graph else labels_all)
            row["seconds"] = seconds
            row["note"] = extra.pop("note", "")
            row.update(extra)
        except Exception as exc:  # a failing method is a row of the record, not the end of the run
            row["error"] = _error_text(exc)
    seen = list(dict.fromkeys(str(w.message).splitlines()[0][:160] for w in caught))[:5]
    if seen:
        row["warnings"] = seen
    return row


def add_sc_ratios(rows):
    """Each row's ``ratio``: its fit seconds over scikit-learn SC's on the
    same set and seed (None where either is missing or SC's is 0)."""
    sc = {(r["set"], r["seed"]): r["seconds"] for r in rows
          if r["method"] == "sc" and r.get("seconds") is not None and not r.get("error")}
    for r in rows:
        base = sc.get((r["set"], r["seed"]))
        r["ratio"] = (r["seconds"] / base if r.get("seconds") is not None and base else None)
    return rows


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _min(values):
    values = [v for v in values if v is not None]
    return float(np.min(values)) if values else None


def summarize(rows):
    """A summary per (set, method), in the order they first appear: seeds
    run and failed, mean and min ACC, mean NMI, mean and min held-out ACC
    (block model), mean fit seconds and mean ratio to SC's seconds. Failed
    rows count in ``failed`` and in nothing else."""
    groups = {}
    for r in rows:
        groups.setdefault((r["set"], r["method"]), []).append(r)
    out = []
    for (name, method), rs in groups.items():
        ok = [r for r in rs if not r.get("error")]
        out.append({"set": name, "method": method, "seeds": len(rs), "failed": len(rs) - len(ok),
                    "acc_mean": _mean(r["acc"] for r in ok), "acc_min": _min(r["acc"] for r in ok),
                    "nmi_mean": _mean(r["nmi"] for r in ok),
                    "held_acc_mean": _mean(r.get("held_acc") for r in ok),
                    "held_acc_min": _min(r.get("held_acc") for r in ok),
                    "seconds_mean": _mean(r.get("seconds") for r in ok),
                    "ratio_mean": _mean(r.get("ratio") for r in ok),
                    "for_choosing": name not in NOT_FOR_CHOOSING})
    return out


def _f(value, digits=4):
    return "—" if value is None else f"{value:.{digits}f}"


def _seconds(value):
    return "—" if value is None else (f"{value:.2f}" if value < 10 else f"{value:.1f}")


def _ratio(value):
    return "—" if value is None else f"{value:.2f}×"


SUMMARY_HEADER = ["data set", "method", "seeds", "ACC mean", "ACC min", "NMI mean",
                  "held-out ACC mean", "held-out ACC min", "fit s mean", "fit s / SC's",
                  "for choosing"]
SEED_HEADER = ["data set", "seed", "method", "n", "scored", "ACC", "NMI", "held-out ACC",
               "held-out NMI", "fit s", "fit s / SC's", "cluster sizes", "note"]


def summary_cells(s):
    seeds = f"{s['seeds']}" + (f" ({s['failed']} failed)" if s["failed"] else "")
    return [s["set"], s["method"], seeds, _f(s["acc_mean"]), _f(s["acc_min"]),
            _f(s["nmi_mean"]), _f(s["held_acc_mean"]), _f(s["held_acc_min"]),
            _seconds(s["seconds_mean"]), _ratio(s["ratio_mean"]),
            "yes" if s["for_choosing"] else "no: MNIST labels choose nothing"]


def seed_cells(r):
    sizes = r.get("cluster_sizes")
    note = r.get("note") or ""
    if r.get("error"):
        note = "failed: " + r["error"].splitlines()[0][:200]
    elif r.get("startup_seconds") is not None:
        note = (note + "; " if note else "") + f"start-up {r['startup_seconds']:.1f} s"
    if r.get("epochs"):
        note = (note + "; " if note else "") + f"{r['epochs']} epochs"
    return [r["set"], r["seed"], r["method"], r["n"], r["scored"], _f(r["acc"]), _f(r["nmi"]),
            _f(r["held_acc"]), _f(r["held_nmi"]), _seconds(r["seconds"]), _ratio(r["ratio"]),
            "/".join(map(str, sizes)) if sizes else "—", note]


def text_table(header, rows):
    """A plain aligned table for the terminal."""
    rows = [[str(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(row[i]) for row in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def describe_set(name, data):
    builder = SETS[name][0]
    info = {"group": SETS[name][1], "doc": " ".join((builder.__doc__ or "").split()),
            "for_choosing": name not in NOT_FOR_CHOOSING, "k": data.k}
    if isinstance(data, GraphSet):
        info.update(n=len(data.y), d=int(data.features.shape[1]), train=len(data.train),
                    held=len(data.held), edges_train=int(data.graph.nnz // 2))
    else:
        info.update(n=len(data.y), d=int(data.x.shape[1]), scored=int(data.scored.sum()))
    return info


def versions(peer_marker):
    """This environment's versions (from the installed distributions' metadata:
    nothing is imported for them) and the peers' environment's (its marker)."""
    import importlib.metadata as metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    out = {"python": sys.version.split()[0],
           **{name: version(name) for name in ("scikit-learn", "numpy", "scipy", "tensorflow",
                                               "keras", "spectralnet-tf")}}
    if peer_marker:
        out["peers"] = {"requirements": peer_marker["requirements"],
                        "python": peer_marker.get("python"), **peer_marker["versions"]}
    return out


METHOD_DOCS = {
    "sc": 'sklearn SpectralClustering(n_clusters=k, affinity="nearest_neighbors", '
          'random_state=seed); block model: affinity="precomputed" on the training graph',
    "ours": "SpectralNet(n_clusters=k, random_state=seed).fit(X).labels_ (params: set_params); "
            'block model: SpectralNet(4, affinity="precomputed", random_state=seed)'
            ".fit(F_train, graph=W_train), held-out from predict(F_held)",
    "kmeans": "sklearn KMeans(k, n_init=10, random_state=seed); block model: on the training "
              "features, held-out from predict",
    "umap": "umap.UMAP(n_components=k, n_neighbors=20, min_dist=0.0, random_state=seed) then "
            "KMeans(k, n_init=10, random_state=seed) (N2D), peers' environment",
    "authors": "spectralnet 1.1.0 SpectralNet(n_clusters=k, spectral_hiddens=[1024, 1024, 512, "
               "k]), other arguments at their defaults, fit(X) then predict(X), peers' environment",
    "two-stage": "block model: exact SC of the training graph, then sklearn SVC() (RBF) of the "
                 "training features to those clusters, predicting the held-out nodes",
    "bayes": "block model: the Bayes rule of the features (nearest true block mean), a reference",
}


def run_suite(args):
    sets = resolve_sets(args.sets or DEFAULT_SETS)
    methods = list(dict.fromkeys(args.methods))
    ours_params = args.ours_params or {}
    if ours_params and "ours" in methods:  # a bad key fails here, not in every row
        try:
            make_ours(2, 0, ours_params)
        except (TypeError, ValueError) as exc:
            raise SystemExit(f"--ours-params: {exc}")
    peer_marker = None
    if any(m in methods for m in ("umap", "authors")) and any(
            SETS[s][1] != "graph" for s in sets):
        from . import peers

        peer_marker = peers.ensure()
    gflops_before = matmul_rate()
    rows, described = [], {}
    for name in sets:
        builder, group = SETS[name]
        applicable = GRAPH_METHODS if group == "graph" else POINT_METHODS
        for seed in args.seeds:
            data = builder(seed=seed)
            described.setdefault(name, describe_set(name, data))
            for method in (m for m in METHODS if m in methods and m in applicable):
                row = run_one(name, method, data, seed, ours_params)
                rows.append(row)
                print(text_table(SEED_HEADER, [seed_cells(row)]).splitlines()[-1], flush=True)
    gflops_after = matmul_rate()
    add_sc_ratios(rows)
    summary = summarize(rows)
    title = "The development suite: every method on the same arrays, one run" + (
        f" (ours with {json.dumps(ours_params, sort_keys=True)})" if ours_params else "")
    record = {
        "kind": "rows", "title": title,
        "header": SUMMARY_HEADER, "rows": [summary_cells(s) for s in summary],
        "seed_header": SEED_HEADER, "seed_rows": [seed_cells(r) for r in rows],
        "summary": summary, "runs": rows,
        "sets": described, "methods": {m: METHOD_DOCS[m] for m in methods},
        "seeds": list(args.seeds), "ours_params": ours_params,
        # ours' config on the point sets, which current.py checks against today's defaults
        "config": defaults_config(**ours_params) if "ours" in methods else None,
        "not_for_choosing": [s for s in sets if s in NOT_FOR_CHOOSING],
        "versions": versions(peer_marker),
        "matmul_gflops": {"before": round(gflops_before, 1), "after": round(gflops_after, 1)},
        "notes": ["Methods ran one after another in one process (the peers each in a fresh "
                  "process of the peers' environment), on the same float32 arrays.",
                  "fit s: the fit (and predict where the method needs one) alone; a peer's "
                  "start-up (its imports) is in runs[].startup_seconds; umap's fit includes "
                  "numba's compilation in its fresh process.",
                  "fit s / SC's: the ratio to scikit-learn SpectralClustering's fit seconds on "
                  "the same set and seed in this run (block model: exact SC of the graph).",
                  "ACC and NMI on the scored points (the sets with outliers: inliers only); "
                  "block model: training nodes, held-out nodes beside; cluster sizes of all "
                  "points clustered.",
                  "mnist is reported only: MNIST labels choose nothing in this project."],
    }
    save_record(f"suite-{datetime.datetime.now():%H%M%S}", record, group="bench")
    print()
    print(text_table(SEED_HEADER, record["seed_rows"]))
    print()
    print(title)
    print(text_table(SUMMARY_HEADER, record["rows"]))
    return record


# --- the authors' package on MNIST, as its example script runs it ---

#: The authors' MNIST example (shaham-lab/SpectralNet, examples/cluster_mnist.py):
#: ``SpectralNet(n_clusters=10, should_use_ae=True, should_use_siamese=True)``,
#: every other argument at the package's default (spectral_hiddens
#: [1024, 1024, 512, 10]: output width 10), fitted on all 70,000 digits
#: (training then test, torchvision's ToTensor: pixels / 255, flattened to
#: 784 by the package), then ``predict`` on the same tensor.
AUTHORS_MNIST_OPTIONS = {"should_use_ae": True, "should_use_siamese": True}


def run_authors_mnist(args):
    """The authors' package on the raw 70,000 MNIST digits as its
    ``examples/cluster_mnist.py`` runs it (its own autoencoder and Siamese
    net, output width 10), seed by seed: ACC and NMI on all 70k, fit
    seconds; one record. Long on a CPU: not part of the suite's default."""
    from spectralnet_tf import acc, nmi
    from spectralnet_tf.datasets import load_dataset

    from . import peers

    marker = peers.ensure()
    x, y, k = load_dataset("mnist")
    x = np.asarray(x, np.float32)
    rows, runs = [], []
    gflops_before = matmul_rate()
    for seed in args.seeds:
        run = {"set": "mnist raw 70k", "method": "authors (examples/cluster_mnist.py)",
               "seed": seed, "n": len(x), "error": None}
        try:
            out = peers.run_peer("authors", x, k, seed, options=AUTHORS_MNIST_OPTIONS)
            labels = out["labels"]
            run.update(acc=acc(y, labels), nmi=nmi(y, labels), seconds=out["fit_seconds"],
                       startup_seconds=out["startup_seconds"], params=out["params"],
                       cluster_sizes=cluster_sizes(labels), versions=out["versions"])
        except Exception as exc:
            run["error"] = _error_text(exc)
        runs.append(run)
        rows.append([seed, len(x), _f(run.get("acc")), _f(run.get("nmi")),
                     _seconds(run.get("seconds")),
                     _f(None if run.get("seconds") is None else run["seconds"] / 60, 1),
                     "/".join(map(str, run.get("cluster_sizes") or [])) or "—",
                     "failed: " + run["error"].splitlines()[0][:200] if run["error"] else ""])
        print(rows[-1], flush=True)
    header = ["seed", "n", "ACC", "NMI", "fit s", "fit min", "cluster sizes", "note"]
    title = ("The authors' spectralnet 1.1.0 on MNIST's raw 70,000 digits as its "
             "examples/cluster_mnist.py runs it (own autoencoder and Siamese net, width 10)")
    record = {"kind": "rows", "title": title, "header": header, "rows": rows, "runs": runs,
              "options": {"n_clusters": k, **AUTHORS_MNIST_OPTIONS},
              "source": "shaham-lab/SpectralNet examples/cluster_mnist.py and examples/data.py "
                        "(load_mnist: torchvision MNIST, ToTensor, train then test)",
              "versions": versions(marker), "for_choosing": False,
              "matmul_gflops": {"before": round(gflops_before, 1),
                                "after": round(matmul_rate(), 1)},
              "notes": ["ACC and NMI on all 70,000 digits; fit s: fit and predict alone "
                        "(the worker's imports and the data's transfer left out).",
                        "MNIST labels choose nothing in this project: reported only."]}
    save_record(f"suite-authors-mnist-{datetime.datetime.now():%H%M%S}", record, group="bench")
    print(text_table(header, rows))
    return record


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python scripts/bench.py suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sets", nargs="+",
                   help=f"sets or groups ({', '.join(GROUPS)}); default: all but mnist. Sets: "
                        f"{', '.join(SETS)}")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS),
                   help="default: all (the block model's own, two-stage and bayes, run only there; "
                        "umap and authors only on point sets)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--ours-params", type=json.loads, default=None,
                   help="a JSON object of SpectralNet keyword arguments for ours (set_params; "
                        "nested keys like affinity__scale work)")
    p.add_argument("--authors-mnist", action="store_true",
                   help="instead of the suite: the authors' package on MNIST's raw 70,000 "
                        "digits as its examples/cluster_mnist.py runs it (long)")
    args = p.parse_args(argv)
    if args.ours_params is not None and not isinstance(args.ours_params, dict):
        p.error(f"--ours-params must be a JSON object, got {args.ours_params!r}")
    try:
        if args.sets:
            resolve_sets(args.sets)
    except ValueError as exc:
        p.error(str(exc))
    return args


def main(argv=None):
    args = parse_args(sys.argv[2:] if argv is None else argv)
    return run_authors_mnist(args) if args.authors_mnist else run_suite(args)
