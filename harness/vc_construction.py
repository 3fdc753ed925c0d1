"""The paper's VC-dimension construction (Sec. 4, Appendix C: Lemma C.1 and
the proof of Theorem 4.1), built so that it can be checked numerically.

For m points on a unit grid in the Z=0 plane and any dichotomy of them, the
paper builds n = 10m points whose Gaussian affinity, at a small enough scale
sigma, has a second-smallest Laplacian eigenvector (the Fiedler vector) that,
thresholded at 0, realizes the dichotomy. ``check_dichotomy`` builds those
points, takes sigma from the proof's bound and reports whether the threshold
realizes it; ``shattered`` runs it over all 2^m dichotomies.

>>> report = shattered(3)
>>> report["realized"], report["dichotomies"]
(8, 8)
"""

import itertools

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist

from spectralnet_tf.spectral import laplacian_matrix, smallest_eigenvectors

#: sigma is this fraction of the largest scale the proof's bound allows.
SIGMA_FRACTION = 0.9


def grid(m):
    """The 2m grid points of the Z=0 plane, unit spacing, in a square of side
    ceil(sqrt(2m)) (the m points of the set to shatter, then the m that
    balance the partition)."""
    side = int(np.ceil(np.sqrt(2 * m)))
    i = np.arange(2 * m)
    return np.stack([i % side, i // side, np.zeros(2 * m)], axis=1).astype(np.float64)


def _tree_points(points, count):
    """``count`` points placed along the edges of the minimum spanning tree of
    ``points``, equally spaced on each edge; each new point goes to the edge
    whose spacing is then largest, so the largest spacing is as small as it
    can be (below 1, since the tree is at most 2m long; Lemma C.1)."""
    tree = minimum_spanning_tree(cdist(points, points)).tocoo()
    length = tree.data
    per_edge = np.zeros(len(length), dtype=int)
    for _ in range(count):
        per_edge[np.argmax(length / (per_edge + 1))] += 1
    out = []
    for a, b, k in zip(tree.row, tree.col, per_edge):
        t = np.arange(1, k + 1)[:, None] / (k + 1)
        out.append(points[a] + t * (points[b] - points[a]))
    return np.concatenate(out)


def construction(dichotomy):
    """Lemma C.1: the n = 10m points and their balanced partition.

    ``dichotomy`` is a bool array of length m >= 2 (True: the point is in S).
    Returns (points (n, 3), in_s (n,) bool); the first m points are the grid
    points being shattered, in order.
    """
    d = np.asarray(dichotomy, dtype=bool)
    m = d.size
    if d.ndim != 1 or m < 2:
        raise ValueError(f"dichotomy must be a 1-d array of m >= 2 booleans, got shape {d.shape}.")
    base = grid(m)
    # The m added grid points join S first until both sides have m points.
    in_s = np.concatenate([d, np.arange(m) < m - d.sum()])
    lift = np.where(in_s, 1.0, -1.0)
    copies = base + np.stack([np.zeros(2 * m), np.zeros(2 * m), lift], axis=1)
    midpoints = (base + copies) / 2
    tree_s = _tree_points(copies[in_s], 2 * m)
    tree_t = _tree_points(copies[~in_s], 2 * m)
    points = np.concatenate([base, copies, midpoints, tree_s, tree_t])
    side = np.concatenate([in_s, in_s, in_s, np.ones(2 * m, bool), np.zeros(2 * m, bool)])
    return points, side


def separation(points, in_s):
    """(b, gap): b is the smallest step with which a path inside S (and one
    inside T) joins any two of its points (the longest edge of each side's
    minimum spanning tree; property a asks b < 1); gap is the smallest
    distance between a point of S and one of T (property b asks >= 1)."""
    b = max(minimum_spanning_tree(cdist(p, p)).data.max() for p in (points[in_s], points[~in_s]))
    return float(b), float(cdist(points[in_s], points[~in_s]).min())


def proof_sigma(b, n):
    """The largest sigma for which the proof's bounds (Lemmas C.2 and C.3)
    guarantee the threshold: n/sqrt(2) exp(-(1-b^2)/(4 sigma^2)) < 1/sqrt(2n),
    i.e. sigma^2 < (1 - b^2) / (6 ln n)."""
    return float(np.sqrt((1.0 - b * b) / (6.0 * np.log(n))))


def check_dichotomy(dichotomy, sigma=None):
    """Build the construction for ``dichotomy``, take the Fiedler vector of
    its full Gaussian affinity ``exp(-|x_i - x_j|^2 / (2 sigma^2))`` (sigma:
    ``SIGMA_FRACTION`` of ``proof_sigma`` unless given) and threshold it at 0.

    Returns a dict: ``realized`` (the threshold puts the m grid points on the
    sides of the dichotomy, up to swapping the sides), ``separates`` (it
    splits all n points into S and T), ``b``, ``gap``, ``sigma``, ``spread``
    (Delta of Lemma C.2), ``spread_bound`` (1/sqrt(2n), Lemma C.3's sufficient
    condition), ``eigengap`` (lambda_3 / lambda_2; > 1 means the Fiedler
    vector is unique up to sign).
    """
    d = np.asarray(dichotomy, dtype=bool)
    points, in_s = construction(d)
    n = len(points)
    b, gap = separation(points, in_s)
    if sigma is None:
        sigma = SIGMA_FRACTION * proof_sigma(b, n)
    w = np.exp(-cdist(points, points, "sqeuclidean") / (2.0 * sigma ** 2))
    np.fill_diagonal(w, 0.0)
    values, vectors = smallest_eigenvectors(laplacian_matrix(w), 3)
    y = vectors[:, 1]
    positive = y > 0
    spread = max(np.ptp(y[in_s]), np.ptp(y[~in_s]))
    m = d.size
    return {"m": m, "n": n,
            "realized": bool(np.all(positive[:m] == d) or np.all(positive[:m] == ~d)),
            "separates": bool(np.all(positive == in_s) or np.all(positive == ~in_s)),
            "b": b, "gap": gap, "sigma": float(sigma), "spread": float(spread),
            "spread_bound": float(1.0 / np.sqrt(2 * n)),
            "eigengap": float(values[2] / values[1])}


def shattered(m, sigma=None):
    """``check_dichotomy`` for all 2^m dichotomies of the m grid points.

    Returns a dict: ``dichotomies`` (2^m), ``realized`` (how many the
    thresholded Fiedler vector realizes), ``within_bound`` (how many meet
    Lemma C.3's sufficient condition), the largest ``b`` and smallest
    ``gap``, the range of ``sigma`` and the smallest ``eigengap``, and
    ``failed`` (the dichotomies not realized, as 0/1 strings).
    """
    checks = [(bits, check_dichotomy(np.array(bits, bool), sigma))
              for bits in itertools.product((0, 1), repeat=m)]
    rs = [c for _, c in checks]
    return {"m": m, "n": 10 * m, "dichotomies": len(rs),
            "realized": sum(c["realized"] for c in rs),
            "separates": sum(c["separates"] for c in rs),
            "within_bound": sum(c["spread"] < c["spread_bound"] for c in rs),
            "b_max": max(c["b"] for c in rs), "gap_min": min(c["gap"] for c in rs),
            "sigma_min": min(c["sigma"] for c in rs), "sigma_max": max(c["sigma"] for c in rs),
            "eigengap_min": min(c["eigengap"] for c in rs),
            "failed": ["".join(map(str, bits)) for bits, c in checks if not c["realized"]]}
