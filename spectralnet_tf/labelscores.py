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
fades) keep the graph's.

Where the graph already tells the classes apart, the classifier can only
carry its errors into it, so a fit keeps it only where the graph it
reshapes answers held-out labels better than the graph as it is
(``label_coordinates``, ``check_label_classifier``).

The classifier is an RBF support vector machine of the labeled points,
its C and gamma chosen by cross-validation on those points alone (one
machine per class against the rest for more than two classes): the usual
default for a small labeled set, and the reference "labels alone" that a
semi-supervised method is measured against.
"""

import numpy as np

from .centroids import NORMALIZE_ROWS
from .constraints import check_two_classes, label_subsample
from .sampling import subsample_size
from .spectral import cluster_graph, poisson_labels

#: How far the classifier reshapes the graph: ``strength`` in the module
#: docstring (the setting the development grid of rings chose).
LABEL_STRENGTH = 8.0

#: The RBF machine's grid: C, and gamma as multiples of scikit-learn's
#: "scale" (1 / (n_features * variance of the labeled points)).
C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
GAMMA_FACTORS = (0.1, 0.3, 1.0, 3.0, 10.0)
#: At most this many labeled points train the classifier (a stratified
#: random sample beyond it): an SVM costs O(m^2) to O(m^3) in them.
MAX_LABELED = 5000


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
    e = affinity.coordinates(np.asarray(z)[rows])
    k = min(affinity.scale_nbr + 1, len(rows))
    dist, _ = NearestNeighbors(n_neighbors=k).fit(e).kneighbors(e)
    return float(np.median(dist[:, -1]))


def label_coordinates(affinity, z, labels, z_train, *, batch_size, laplacian, n_clusters,
                      seed=0):
    """The label classifier in the graph, where it helps: ``(embedding,
    check)``. ``embedding`` is the fitted ``affinity``'s embedding extended
    by the scores of an RBF SVM of the labeled rows of ``z`` (``labels`` >= 0;
    ``LabelScores`` at ``LABEL_STRENGTH``, the kernel width measured on
    ``z_train``), or None where the check (``check_label_classifier``) finds
    the graph as it is knows more of the held-out labels. None too without
    labels, or with every point labeled (the labeled pairs are then the
    whole affinity of a minibatch). ``check`` is the check's record, or None
    where nothing was checked."""
    labeled = np.asarray(labels) >= 0
    if labeled.all() or not labeled.any():
        return None, None
    classifier = fit_label_classifier(affinity.coordinates(np.asarray(z)[labeled]),
                                      np.asarray(labels)[labeled], seed=seed)
    scores = LabelScores(affinity.embedding, classifier, LABEL_STRENGTH,
                         kernel_width(affinity, z_train, seed=seed))
    check = check_label_classifier(affinity, scores, z, labels, batch_size=batch_size,
                                   seed=seed, laplacian=laplacian, n_clusters=n_clusters)
    return (None if check is not None and not check["keep"] else scores), check


def check_label_classifier(affinity, scores, z, labels, *, batch_size, seed=0,
                           laplacian="unnormalized", n_clusters=None):
    """Whether the label classifier should reshape the graph: whether the
    graph it reshapes knows more of the labels it did not see than the graph
    as it is.

    The classifier of the labels alone (``scores``, its ``LabelScores``)
    reaches the fit only through the graph it reshapes:
    the minibatches' affinity and the label term's classes
    (``label_targets``) are read from it. Where the graph already tells the
    classes apart, the reshaping can only carry the classifier's errors into
    it, and with many classes its cuts can leave the graph nearly
    disconnected, where Poisson learning's classes follow the near-null
    modes rather than the labels. So both graphs are asked for labels they
    did not see. The graph is the one the minibatches sample, on a
    subsample that holds the labeled points (``label_subsample``). Over
    stratified folds of its labeled points, drawn as those the classifier's
    C and gamma were chosen on (``labelscores.label_folds``), the classifier
    is refitted on the other folds with those C and gamma and reshapes the
    graph as the affinity would (its strength and width). Each graph answers
    for the held-out fold in two ways, and scores the better of them:
    Poisson learning (``spectral.poisson_labels``) with the other folds'
    labels as sources (a point no label reaches counts as wrong), and its
    own cut (``graph_cut``: what the graph says with no labels, the
    unsupervised fit's reading) with each cluster named by the other folds'
    labels in it (``named_cut``). The reshaped graph is kept only where it
    scores strictly higher (``keep``); a tie goes to the graph as it is,
    which holds what the labels say without the classifier's errors.

    ``affinity`` is the fitted affinity without the scores; ``z`` are the
    rows the classifier was fitted on and ``labels`` theirs (-1:
    unknown); ``laplacian`` and ``n_clusters`` are the fit's (None: one
    more than the largest label), the cuts' k. Returns None when there is nothing
    to check (no classifier, or a class with a single label in the
    subsample, where there are no folds), else a dict of held-out
    accuracies: ``classifier`` (the refitted classifier itself, for the
    record), ``reshaped`` and ``graph`` (each the better of its two
    readings), ``reshaped_poisson``, ``reshaped_cut``, ``poisson``, ``cut``;
    ``labeled`` (the labeled points asked), ``keep``, and ``params``, the C
    and gamma of the classifier checked (``labelscores.machine_params``): with
    a dozen labels the setting depends on the draw of the folds, and the
    record says which one this fit drew.
    """
    from sklearn.base import clone

    classifier = scores.classifier
    labels = np.asarray(labels)
    size = subsample_size(len(z), batch_size)
    rows = label_subsample(labels, size, seed)
    sub = labels[rows]
    labeled = np.flatnonzero(sub >= 0)
    folds = label_folds(sub[labeled], seed)
    if folds is None:
        return None
    e = affinity.coordinates(np.asarray(z)[rows])  # the graph as it is without the classifier
    w = affinity.sampled_graph(e, batch_size).numpy()
    k = int(labels.max()) + 1 if n_clusters is None else n_clusters
    cut = graph_cut(w, k, laplacian, seed)
    right = dict.fromkeys(["classifier", "reshaped_poisson", "reshaped_cut", "poisson", "cut"], 0)
    for train, test in folds.split(labeled, sub[labeled]):
        seen, asked = labeled[train], labeled[test]
        fold = clone(classifier).fit(e[seen], sub[seen])
        reshaped = LabelScores(None, fold, scores.strength, scores.scale)(e)
        w_fold = affinity.sampled_graph(reshaped, batch_size).numpy()
        hidden = sub.copy()
        hidden[asked] = -1
        answers = {"classifier": fold.predict(e[asked]),
                   "reshaped_poisson": poisson_labels(w_fold, hidden, k)[asked],
                   "reshaped_cut": named_cut(graph_cut(w_fold, k, laplacian, seed), seen,
                                             sub[seen], k)[asked],
                   "poisson": poisson_labels(w, hidden, k)[asked],
                   "cut": named_cut(cut, seen, sub[seen], k)[asked]}
        for name, answer in answers.items():
            right[name] += int(np.sum(answer == sub[asked]))
    right["reshaped"] = max(right["reshaped_poisson"], right["reshaped_cut"])
    right["graph"] = max(right["poisson"], right["cut"])
    out = {name: round(count / labeled.size, 4) for name, count in right.items()}
    return {**out, "labeled": int(labeled.size), "keep": right["reshaped"] > right["graph"],
            "params": machine_params(classifier)}


def graph_cut(w, k, laplacian="unnormalized", seed=0):
    """The graph's own k clusters, no labels used: exact spectral clustering
    of the affinity ``w`` (``spectral.cluster_graph``), its eigenvectors'
    rows rounded as ``fit`` rounds the net's (``centroids.NORMALIZE_ROWS``)."""
    return cluster_graph(w, k, laplacian, seed, normalize_rows=NORMALIZE_ROWS)[0]


def named_cut(clusters, rows, classes, k):
    """Each point's class by its cluster: the class most of the labeled
    ``rows`` (with ``classes``) in that cluster have (ties: the lowest); -1
    in a cluster that holds none of them."""
    counts = np.zeros((int(clusters.max()) + 1, k), np.int64)
    np.add.at(counts, (clusters[rows], classes), 1)
    names = np.where(counts.sum(axis=1) > 0, counts.argmax(axis=1), -1)
    return names[clusters]
