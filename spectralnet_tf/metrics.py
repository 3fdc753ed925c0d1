"""Evaluation metrics of the paper's Sec. 5.1, and the Grassmann distance."""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import confusion_matrix, normalized_mutual_info_score


def acc(labels_true, labels_pred):
    """Unsupervised clustering accuracy: the best one-to-one matching of
    clusters to labels (Kuhn-Munkres), as a fraction of points.

    >>> acc([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    labels_true = np.asarray(labels_true)
    labels_pred = np.asarray(labels_pred)
    if labels_true.shape != labels_pred.shape:
        raise ValueError(
            "labels_true and labels_pred must have the same shape, got "
            f"{labels_true.shape} and {labels_pred.shape}."
        )
    counts = confusion_matrix(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / len(labels_true))


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
