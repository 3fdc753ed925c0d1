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

On the block model (``sbm``) the methods take the graph: ``ours`` is
``SpectralNet(4, affinity="precomputed", random_state=seed).fit(F_train,
graph=W_train)`` (training nodes from ``labels_``, held-out nodes from
``predict(F_held)``), ``sc`` is scikit-learn's ``SpectralClustering(4,
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
import hashlib
import json
import os
import sys
import time
import warnings
from collections import namedtuple

import numpy as np

from .current import defaults_config
from .records import ROOT, matmul_rate, save_record

#: A data set of the suite: x float32 (n, d), y int (n,) (-1 for points of no
#: class), k, and the mask of the points that are scored.
SuiteSet = namedtuple("SuiteSet", "x y k scored")
#: The block model: node features, the graph among the training nodes, the
#: labels of all nodes, k, and the indices of the training and held-out nodes.
GraphSet = namedtuple("GraphSet", "features graph y k train held centres informative")


def _set(x, y, k, scored=None):
    y = np.asarray(y, np.int64)
    return SuiteSet(np.ascontiguousarray(x, dtype=np.float32), y, int(k),
                    np.ones(len(y), bool) if scored is None else np.asarray(scored, bool))


# --- the real sets (scikit-learn's bundled files; the seed changes nothing) ---

def _standardised(loader):
    from sklearn.preprocessing import StandardScaler

    x, y = loader(return_X_y=True)
    return _set(StandardScaler().fit_transform(x), y, len(np.unique(y)))


def iris(seed=0):
    """scikit-learn's iris (150 x 4, 3 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_iris

    return _standardised(load_iris)


def wine(seed=0):
    """scikit-learn's wine (178 x 13, 3 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_wine

    return _standardised(load_wine)


def breast_cancer(seed=0):
    """scikit-learn's breast cancer (569 x 30, 2 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_breast_cancer

    return _standardised(load_breast_cancer)


def digits(seed=0):
    """scikit-learn's 8x8 digits as they are (1,797 x 64, values 0-16, 10 classes)."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return _set(x, y, 10)


# --- the traps, made here (each a draw of the seed) ---

#: Outliers are this share of all points in the sets with outliers.
OUTLIER_SHARE = 0.05


def _with_outliers(x, y, n_outliers, low, high, rng):
    """x with ``n_outliers`` points uniform in the box [low, high] (per
    dimension) appended, labelled -1 and not scored."""
    extra = rng.uniform(low, high, size=(n_outliers, x.shape[1]))
    return _set(np.concatenate([x, extra]), np.concatenate([y, np.full(n_outliers, -1)]),
                len(np.unique(y)), np.arange(len(x) + n_outliers) < len(x))


def blobs_outliers(seed=0, n=2000):
    """Four unit Gaussian blobs in 2-D centred on the corners of a square of
    side 8 ((0, 0), (8, 0), (0, 8), (8, 8)), 1,900 points (95%; each point's
    blob uniform), plus 100 outliers (5%) uniform in the box [-4, 12]^2 (the
    centres +- 4 standard deviations). All 2,000 are clustered (k = 4); only
    the 1,900 inliers are scored."""
    rng = np.random.default_rng(seed)
    n_out = int(round(OUTLIER_SHARE * n))
    centres = np.array([[0, 0], [8, 0], [0, 8], [8, 8]], float)
    y = rng.integers(0, 4, n - n_out)
    x = centres[y] + rng.normal(size=(len(y), 2))
    return _with_outliers(x, y, n_out, -4.0, 12.0, rng)


#: ``unequal``'s clusters: sizes (1:3:6), standard deviations and centres.
UNEQUAL_SIZES, UNEQUAL_SDS = (200, 600, 1200), (0.5, 1.0, 2.0)
UNEQUAL_CENTRES = ((0.0, 6.0), (6.0, 0.0), (0.0, 0.0))


def unequal(seed=0):
    """Three Gaussian clusters in 2-D of unequal size and density: 200, 600
    and 1,200 points (1:3:6) with standard deviations 0.5, 1 and 2, centred on
    (0, 6), (6, 0) and (0, 0) (n = 2,000). The Bayes rule of the true model
    scores about 0.975 (seed 0: 0.975); k-means, which favours clusters of
    equal spread, about 0.85."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), UNEQUAL_SIZES)
    x = np.asarray(UNEQUAL_CENTRES)[y] + np.asarray(UNEQUAL_SDS)[y, None] * rng.normal(
        size=(len(y), 2))
    order = rng.permutation(len(y))
    return _set(x[order], y[order], 3)


#: ``noise_dims``: the informative dimensions' blobs and the added noise columns.
NOISE_COLUMNS, NOISE_EDGE, NOISE_SD = 50, 3.0, 0.5


def noise_dims(seed=0, n=2000):
    """Four Gaussian blobs (standard deviation 0.5) centred on the vertices of
    a regular tetrahedron of edge 3 in 3 informative dimensions, plus 50
    N(0, 1) noise columns (n = 2,000, 53 columns; each point's blob uniform).
    The blobs are separable in the informative dimensions (k-means there:
    about 0.995), but the noise holds 50 of the 50.75 units of variance per
    point, which blurs every Euclidean neighbourhood."""
    rng = np.random.default_rng(seed)
    vertices = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float)
    vertices *= NOISE_EDGE / np.linalg.norm(vertices[0] - vertices[1])
    y = rng.integers(0, 4, n)
    x = np.concatenate([vertices[y] + NOISE_SD * rng.normal(size=(n, 3)),
                        rng.normal(size=(n, NOISE_COLUMNS))], axis=1)
    return _set(x, y, 4)


#: scikit-learn's k-means assumptions example: the shear of its anisotropic blobs.
ANISO_SHEAR = ((0.60834549, -0.63667341), (-0.40887718, 0.85253229))


def anisotropic(seed=0, n=1500):
    """scikit-learn's anisotropic blobs (the k-means assumptions example):
    three unit Gaussian blobs, 1,500 points, at the centres that
    ``make_blobs(random_state=170)`` draws (uniform in [-10, 10]^2), the
    points drawn from the seed (``make_blobs(n, centers=those,
    random_state=seed)``), times the example's shear matrix
    ``[[0.608, -0.637], [-0.409, 0.853]]``."""
    from sklearn.datasets import make_blobs

    centres = np.random.RandomState(170).uniform(-10.0, 10.0, size=(3, 2))
    x, y = make_blobs(n_samples=n, centers=centres, random_state=seed)
    return _set(x @ np.asarray(ANISO_SHEAR), y, 3)


def moons_outliers(seed=0, n=2000):
    """Two moons (``make_moons(1900, noise=0.05, random_state=seed)``, 95%)
    plus 100 outliers (5%) uniform in the box [-1.5, 2.5] x [-1, 1.5] around
    them. All 2,000 are clustered (k = 2); only the 1,900 inliers are scored."""
    from sklearn.datasets import make_moons

    n_out = int(round(OUTLIER_SHARE * n))
    x, y = make_moons(n - n_out, noise=0.05, random_state=seed)
    rng = np.random.default_rng(seed)
    return _with_outliers(x, y, n_out, np.array([-1.5, -1.0]), np.array([2.5, 1.5]), rng)


# --- the block model, for affinity="precomputed" ---

#: The block model's parameters: blocks, nodes a block, link probabilities,
#: the square's side (block means in 2 informative features), noise features,
#: the held-out share.
SBM_BLOCKS, SBM_BLOCK_SIZE, SBM_P_IN, SBM_P_OUT = 4, 300, 0.05, 0.005
SBM_SIDE, SBM_NOISE_FEATURES, SBM_HELD_SHARE = 2.1, 2, 0.2


def sbm(seed=0):
    """A stochastic block model with weak node features (built here:
    ``spectralnet_tf.datasets.sbm`` draws each node's block at random, so its
    blocks are not of 300 nodes each). 4 blocks of 300 nodes (1,200); nodes
    link with probability 0.05 inside a block and 0.005 across (symmetric
    0/1, no self loops). Each node has 4 features: its block's mean, a corner
    of a square of side 2.1 centred on 0, plus N(0, 1) noise in 2 dimensions,
    and 2 columns of N(0, 1) noise. The Bayes rule of the features (nearest
    true mean) scores Phi(1.05)^2 = 0.728 in expectation. 20% of the nodes
    (240, at random) are held out: the training nodes come with the graph
    among them, the held-out nodes with their features alone."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    n = SBM_BLOCKS * SBM_BLOCK_SIZE
    y = rng.permutation(np.repeat(np.arange(SBM_BLOCKS), SBM_BLOCK_SIZE))
    half = SBM_SIDE / 2
    centres = np.array([[-half, -half], [half, -half], [-half, half], [half, half]])
    features = np.concatenate([centres[y] + rng.normal(size=(n, 2)),
                               rng.normal(size=(n, SBM_NOISE_FEATURES))], axis=1)
    rows, cols = np.triu_indices(n, 1)
    keep = rng.random(len(rows)) < np.where(y[rows] == y[cols], SBM_P_IN, SBM_P_OUT)
    upper = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (rows[keep], cols[keep])),
                          shape=(n, n))
    graph = (upper + upper.T).tocsr()
    order = rng.permutation(n)
    n_held = int(round(SBM_HELD_SHARE * n))
    train, held = np.sort(order[n_held:]), np.sort(order[:n_held])
    return GraphSet(features.astype(np.float32), graph[train][:, train].tocsr(), y,
                    SBM_BLOCKS, train, held, centres, 2)


def bayes_rule(g, nodes):
    """The Bayes rule of ``g``'s features for ``nodes``: the nearest true
    block mean in the informative features (equal priors, isotropic noise)."""
    f = g.features[nodes, :g.informative]
    return np.argmin(((f[:, None, :] - g.centres[None]) ** 2).sum(-1), axis=1)


# --- MNIST's 70k in the shipped code space (reported, never chosen by) ---

#: Where the MNIST codes are cached (runs/ is gitignored).
CACHE = os.path.join(ROOT, "runs", "suite-cache")


def mnist(seed=0):
    """All 70,000 MNIST digits (``load_dataset("mnist")``) in the code space
    of the autoencoder that ``scripts/run.py --dset mnist`` uses
    (``harness.reproduce.AE_ALL``), 70,000 x 10, k = 10. Encoded once and
    cached in ``runs/suite-cache/`` under the weight file's SHA-256. Reported,
    never chosen by."""
    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.resources import pretrained_path

    from .reproduce import AE_ALL

    path = pretrained_path(AE_ALL)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    cache = os.path.join(CACHE, f"mnist-codes-{digest[:12]}.npz")
    if not os.path.exists(cache):
        x, y, _ = load_dataset("mnist")
        codes = load_encoder(path).predict(np.asarray(x, np.float32), batch_size=4096, verbose=0)
        os.makedirs(CACHE, exist_ok=True)
        tmp = cache + ".tmp.npz"
        np.savez(tmp, x=np.asarray(codes, np.float32), y=np.asarray(y, np.int64),
                 weights=AE_ALL, sha256=digest)
        os.replace(tmp, cache)
    with np.load(cache) as data:
        return _set(data["x"], data["y"], 10)


#: name -> (builder, group). The groups name sets on the command line too.
SETS = {
    "iris": (iris, "real"), "wine": (wine, "real"), "breast_cancer": (breast_cancer, "real"),
    "digits": (digits, "real"),
    "blobs_outliers": (blobs_outliers, "traps"), "unequal": (unequal, "traps"),
    "noise_dims": (noise_dims, "traps"), "anisotropic": (anisotropic, "traps"),
    "moons_outliers": (moons_outliers, "traps"),
    "sbm": (sbm, "graph"),
    "mnist": (mnist, "mnist"),
}
GROUPS = {group: [name for name, (_, g) in SETS.items() if g == group]
          for group in ("real", "traps", "graph", "mnist")}
#: Sets whose labels choose nothing (they are reported only).
NOT_FOR_CHOOSING = ("mnist",)
DEFAULT_SETS = [name for name in SETS if name not in NOT_FOR_CHOOSING]
GROUPS["all"] = list(SETS)
#: Methods in the order they run on each set and seed; sc first (the ratios' unit).
METHODS = ("sc", "ours", "kmeans", "umap", "authors", "two-stage", "bayes")
#: The methods for points (the peers among them) and for the block model.
POINT_METHODS = ("sc", "ours", "kmeans", "umap", "authors")
GRAPH_METHODS = ("sc", "ours", "two-stage", "kmeans", "bayes")


def resolve_sets(names):
    """Set and group names, in order, each set once."""
    out = []
    for name in names:
        if name in GROUPS:
            out += GROUPS[name]
        elif name in SETS:
            out.append(name)
        else:
            raise ValueError(f"--sets: unknown set or group {name!r}; sets: {', '.join(SETS)}; "
                             f"groups: {', '.join(GROUPS)}")
    return list(dict.fromkeys(out))


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
        return net.labels_, seconds, {"epochs": len(history.get("loss", [])) or None}
    out = peers.run_peer(method, x, k, seed)  # its versions: the record's, from the marker
    return out["labels"], out["fit_seconds"], {"startup_seconds": out["startup_seconds"],
                                               "params": out["params"]}


def run_graph_method(method, g, seed, ours_params):
    """(training-node labels, held-out labels or None, fit seconds, extra)
    of ``method`` on the block model."""
    from sklearn.cluster import KMeans, SpectralClustering
    from sklearn.svm import SVC

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
                                            "epochs": len(history.get("loss", [])) or None}
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
