"""Evaluation metrics of the paper's Sec. 5.1, and the Grassmann distance."""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix


def acc(labels_true, labels_pred):
    """Unsupervised clustering accuracy: the best one-to-one matching of
    clusters to labels (Kuhn-Munkres), as a fraction of points.

    >>> acc([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    counts, rows, cols = _matching(labels_true, labels_pred)
    return float(counts[rows, cols].sum() / counts.sum())


def matched(labels_true, labels_pred):
    """Integer ``labels_pred`` renamed by acc's matching: each cluster takes
    the label it is matched to; a cluster left unmatched (more clusters than
    labels) takes a value below every label, so it counts as wrong. A
    subset's share of correct points under the matching of all points is
    then ``mean(matched(t, p)[s] == t[s])``.

    >>> matched([0, 0, 1, 1, 1], [5, 5, 7, 7, 5]).tolist()
    [0, 0, 1, 1, 0]
    """
    counts, rows, cols = _matching(labels_true, labels_pred)
    names = np.unique(labels_true)
    if not np.issubdtype(names.dtype, np.integer):
        raise ValueError(f"matched needs integer labels, got labels_true.dtype={names.dtype}.")
    clusters, inverse = np.unique(labels_pred, return_inverse=True)
    rename = np.full(clusters.size, names.min() - 1, dtype=names.dtype)
    rename[cols] = names[rows]
    return rename[inverse.ravel()]


def _matching(labels_true, labels_pred):
    """The contingency counts (rows: label values, columns: cluster values,
    both sorted) and the Kuhn-Munkres matching of rows to columns."""
    labels_true = np.asarray(labels_true)
    labels_pred = np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape or labels_true.ndim != 1 or not labels_true.size:
        raise ValueError(
            "labels_true and labels_pred must be non-empty 1-d arrays of the same shape, "
            f"got {labels_true.shape} and {labels_pred.shape}."
        )
    counts = contingency_matrix(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return counts, rows, cols


def label_permutation(labels_true, labels_pred, n):
    """The one-to-one renaming of ``n`` clusters (values in ``[0, n)``) to
    ``n`` labels (the same range) that agrees with ``labels_true`` on the most
    points (Kuhn-Munkres): ``perm[c]`` is the label cluster ``c`` takes.
    Clusters that no point of ``labels_true`` falls in take the labels left
    over.

    >>> label_permutation([1, 1, 0], [0, 0, 2], 3).tolist()
    [1, 2, 0]
    """
    counts = np.zeros((n, n), dtype=np.int64)
    np.add.at(counts, (np.asarray(labels_pred), np.asarray(labels_true)), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    perm = np.empty(n, dtype=np.int64)
    perm[rows] = cols
    return perm


def nmi(labels_true, labels_pred):
    """Normalized mutual information I(l;c) / max(H(l), H(c)), as in the paper."""
    return float(
        normalized_mutual_info_score(labels_true, labels_pred, average_method="max")
    )


def grassmann(a, b):
    """Squared Grassmann distance between the column spaces of a and b.

    The sum of squared sines of the principal angles, in [0, k] as in the
    paper: ``k - ||Q_a^T Q_b||_F^2`` with Q the orthonormal bases.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}.")
    qa, _ = np.linalg.qr(a)
    qb, _ = np.linalg.qr(b)
    cosines = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sum(1.0 - np.clip(cosines, 0.0, 1.0) ** 2))
