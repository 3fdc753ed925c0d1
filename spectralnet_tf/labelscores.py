"""What the labels alone say, as coordinates of the affinity.

Semi-supervised SpectralNet learns from two sources: the graph and the few
labeled points. Where the graph is weak (two noisy rings that its
neighbours join), the labeled pairs and the cross-entropy term are a small
share of the loss and cannot pull the cut away from a cheaper wrong one;
yet a classifier of the labeled points alone may place the boundary well.
Here that classifier enters the graph itself: the affinity sees each point
as ``[e(x), strength * scale * tanh(s(e(x)))]``, where ``e`` is the
affinity's own embedding (the identity, or a Siamese net), ``s`` the
classifier's decision values and ``scale`` the affinity's kernel width. For
a Gaussian kernel that is the product of the data kernel and a kernel on
the classifier's output: pairs the classifier places confidently on
opposite sides lose their edge, pairs it cannot tell apart (near its
boundary, or far from every labeled point, where an RBF machine's decision
fades) keep the graph's. ``strength`` 0 leaves the graph as it was.

The classifier is an RBF support vector machine of the labeled points,
its C and gamma chosen by cross-validation on those points alone (one
machine per class against the rest for more than two classes): the usual
default for a small labeled set, and the reference "labels alone" that a
semi-supervised method is measured against.
"""

import numpy as np

#: The RBF machine's grid: C, and gamma as multiples of scikit-learn's
#: "scale" (1 / (n_features * variance of the labeled points)).
C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
GAMMA_FACTORS = (0.1, 0.3, 1.0, 3.0, 10.0)
#: At most this many labeled points train the classifier (a stratified
#: random sample beyond it): an SVM costs O(m^2) to O(m^3) in them.
MAX_LABELED = 5000


def check_two_classes(labels):
    """Refuse semi-supervised labels (-1: unlabeled) that label points of one
    class only: a boundary needs two sides. No labeled point at all is an
    unsupervised fit and passes."""
    known = labels[labels >= 0]
    classes = np.unique(known)
    if classes.size == 1:
        raise ValueError(
            f"partial_labels must label points of two classes or more, got only class "
            f"{int(classes[0])} ({known.size} labeled points); leave partial_labels out "
            "to cluster without labels.")


def label_folds(known, seed=0):
    """The stratified folds the label classifier's C and gamma are chosen
    on, for the labels ``known`` of the labeled points: k = min(5, smallest
    class count), shuffled by ``seed``. None where a class has a single
    label (no folds: scikit-learn's defaults are used)."""
    from sklearn.model_selection import StratifiedKFold

    n_folds = min(5, int(np.unique(known, return_counts=True)[1].min()))
    return StratifiedKFold(n_folds, shuffle=True, random_state=seed) if n_folds >= 2 else None


def fit_label_classifier(z, labels, seed=0, max_labeled=MAX_LABELED):
    """An RBF SVM of the labeled rows of ``z`` (``labels`` >= 0), C and gamma by
    stratified k-fold cross-validation on them (k = min(5, smallest class
    count); scikit-learn's defaults where a class has one labeled point).
    Returns the fitted ``SVC`` (refitted on all labeled rows used); for more
    than two classes a ``OneVsRestClassifier`` of SVCs with the C and gamma
    that cross-validating the multi-class SVC chose (searching the machines
    per class would cost k times as much)."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    labels = np.asarray(labels)
    rows = np.flatnonzero(labels >= 0)
    check_two_classes(labels)
    if rows.size < 2:
        raise ValueError(f"fit_label_classifier needs two labeled points or more, got "
                         f"{rows.size}.")
    rng = np.random.default_rng(seed)
    if rows.size > max_labeled:  # stratified: each class keeps its share
        keep = [rng.choice(r, max(1, int(round(max_labeled * r.size / rows.size))),
                           replace=False)
                for r in (rows[labels[rows] == c] for c in np.unique(labels[rows]))]
        rows = np.sort(np.concatenate(keep))
    x, y = np.asarray(z, np.float64)[rows], labels[rows]
    classes = np.unique(y)
    folds = label_folds(y, seed)
    params = {}
    if folds is not None:
        base = 1.0 / (x.shape[1] * max(float(x.var()), 1e-12))
        grid = {"C": list(C_GRID), "gamma": [f * base for f in GAMMA_FACTORS]}
        params = GridSearchCV(SVC(), grid, refit=False, cv=folds).fit(x, y).best_params_
    if classes.size == 2:
        return SVC(**params).fit(x, y)
    # More than two classes: one machine per class against the rest, with the
    # C and gamma chosen above, so that each decision value is a margin as for
    # two classes. An SVC's own multi-class values are pairwise vote counts
    # (0 to k - 1), which tanh flattens to 1 for most classes.
    return OneVsRestClassifier(SVC(**params)).fit(x, y)


def machine_params(classifier):
    """The C and gamma of a label classifier (``fit_label_classifier``'s
    ``SVC``, or the machines of its ``OneVsRestClassifier``): which setting
    its cross-validation chose, as floats; gamma stays scikit-learn's
    ``"scale"`` where there were no folds (a class with a single label)."""
    machine = getattr(classifier, "estimator", classifier)
    gamma = machine.gamma
    return {"C": float(machine.C), "gamma": gamma if isinstance(gamma, str) else float(gamma)}


def decision_columns(classifier, z):
    """The classifier's decision values as columns: one for two classes,
    one per class otherwise (one-vs-rest)."""
    d = np.asarray(classifier.decision_function(np.asarray(z, np.float64)))
    return d[:, None] if d.ndim == 1 else d


class LabelScores:
    """The affinity's embedding extended by the label classifier's scores.

    ``LabelScores(base, classifier, strength, scale)(x)`` is
    ``[e, strength * scale * tanh(s(e))]`` with ``e = base(x)`` (x itself if
    ``base`` is None) and ``s`` the classifier's decision values
    (``decision_columns``). Two points the classifier gives decision values
    ``s_i``, ``s_j`` are then ``strength * |tanh(s_i) - tanh(s_j)|`` kernel
    widths further apart than in ``e``. Numpy in, numpy out (float32), as
    the affinity's ``embed_all`` applies it a chunk at a time.
    """

    def __init__(self, base, classifier, strength, scale):
        self.base = base
        self.classifier = classifier
        self.strength = strength
        self.scale = scale

    def __call__(self, x):
        e = np.asarray(x if self.base is None else self.base(x), np.float32)
        scores = np.tanh(decision_columns(self.classifier, e))
        return np.hstack([e, (self.strength * self.scale * scores).astype(np.float32)])


def kernel_width(affinity, z, seed=0, sample=2048):
    """The fitted ``affinity``'s kernel width for the rows ``z``: its global
    scale, or, with a local scale, the median distance from a point to its
    ``scale_nbr``-th neighbour in the affinity's embedding, over a random
    sample of ``sample`` rows."""
    if getattr(affinity, "scale_", None) is not None:
        return float(affinity.scale_)
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(z), min(sample, len(z)), replace=False))
    e = affinity.embed_all(np.asarray(z)[rows])
    k = min(affinity.scale_nbr + 1, len(rows))
    dist, _ = NearestNeighbors(n_neighbors=k).fit(e).kneighbors(e)
    return float(np.median(dist[:, -1]))
