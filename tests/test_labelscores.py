"""The labels alone as coordinates of the affinity (``labelscores``): the
classifier of the labeled points, the extended embedding, the kernel it
gives, and how the estimator uses them."""

import numpy as np
import pytest
import tensorflow as tf
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from spectralnet_tf import Schedule, SpectralNet, acc
from spectralnet_tf.affinity import FullGaussianAffinity, GaussianKNNAffinity
from spectralnet_tf.datasets import rings
from spectralnet_tf.labelscores import (C_GRID, GAMMA_FACTORS, LabelScores, decision_columns,
                                        fit_label_classifier, kernel_width, machine_params)
from spectralnet_tf.spectral import poisson_labels
from spectralnet_tf.labelscores import (LABEL_STRENGTH, check_label_classifier, graph_cut,
                                        label_coordinates, named_cut)


def _rings(n=400, noise=0.05, seed=0, outer=2.0):
    x, y = rings(n, noise=noise, seed=seed, radii=(1.0, outer))
    return x.astype(np.float32), y.astype(np.int64)


def _partial(y, every=10):
    known = np.full_like(y, -1)
    known[::every] = y[::every]
    return known


def test_the_classifier_is_an_rbf_svm_tuned_on_the_labeled_points_alone():
    x, y = _rings()
    known = _partial(y)
    svm = fit_label_classifier(x, known)
    lab = known >= 0
    base = 1.0 / (2 * np.asarray(x[lab], np.float64).var())
    assert svm.kernel == "rbf" and svm.C in C_GRID
    assert any(np.isclose(svm.gamma, f * base) for f in GAMMA_FACTORS)
    assert svm.support_vectors_.shape[0] <= lab.sum()
    assert acc(y, svm.predict(x)) == 1.0  # far-apart rings, 40 labels
    # The unlabeled points change nothing: only the labeled rows are read.
    x2 = x.copy()
    x2[~lab] = 100.0
    np.testing.assert_array_equal(fit_label_classifier(x2, known).decision_function(x[:50]),
                                  svm.decision_function(x[:50]))


def test_the_classifier_subsamples_many_labels_by_class():
    x, y = _rings(n=600)
    svm = fit_label_classifier(x, y, max_labeled=100)
    assert svm.shape_fit_[0] == 100 and list(svm.classes_) == [0, 1]
    assert acc(y, svm.predict(x)) == 1.0


def test_machine_params_read_the_chosen_c_and_gamma_of_either_classifier():
    x, y = _rings()
    svm = fit_label_classifier(x, _partial(y))
    assert machine_params(svm) == {"C": svm.C, "gamma": svm.gamma}
    assert all(type(v) is float for v in machine_params(svm).values())  # JSON-ready
    three = np.where(x[:, 0] > 0.5, 2, y)
    ovr = fit_label_classifier(x, _partial(three, 5))
    assert len(ovr.estimators_) == 3
    assert machine_params(ovr) == {"C": ovr.estimator.C, "gamma": ovr.estimator.gamma}
    assert machine_params(ovr) == {"C": ovr.estimators_[2].C, "gamma": ovr.estimators_[2].gamma}
    one = np.full_like(y, -1)  # a single label of one class: no folds, the defaults
    one[[0, 1, 2]] = y[[0, 1, 2]]
    one[np.flatnonzero(y != y[0])[0]] = 1 - y[0]
    assert machine_params(fit_label_classifier(x, one)) == {"C": 1.0, "gamma": "scale"}


def test_one_class_of_labels_is_refused_with_its_class_and_count():
    x, y = _rings()
    known = np.where((np.arange(len(y)) % 10 == 0) & (y == 1), 1, -1)
    with pytest.raises(ValueError, match=r"partial_labels must label points of two classes "
                                         r"or more, got only class 1 \(20 labeled points\)"):
        fit_label_classifier(x, known)
    with pytest.raises(ValueError, match=r"got only class 1 \(20 labeled points\); leave "
                                         r"partial_labels out"):
        SpectralNet(2).fit(x, partial_labels=known)


def test_label_scores_append_scaled_tanh_of_the_decision_values():
    x, y = _rings()
    svm = fit_label_classifier(x, _partial(y))
    out = LabelScores(None, svm, 4.0, 0.25)(x)
    assert out.shape == (len(x), 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:, :2], x)
    np.testing.assert_allclose(out[:, 2], 4.0 * 0.25 * np.tanh(svm.decision_function(x)),
                               rtol=1e-6, atol=1e-7)
    # A base embedding is applied first and the classifier reads its output.
    double = LabelScores(lambda v: 2 * v, svm, 1.0, 1.0)(x / 2)
    np.testing.assert_allclose(double, LabelScores(None, svm, 1.0, 1.0)(x), rtol=1e-6)
    # Three classes: one column per class.
    y3 = np.where(x[:, 0] > 1.0, 2, y)
    svm3 = fit_label_classifier(x, _partial(y3, 5))
    assert decision_columns(svm3, x).shape == (len(x), 3)
    assert LabelScores(None, svm3, 1.0, 1.0)(x).shape == (len(x), 5)


def test_more_than_two_classes_score_each_class_by_a_margin_of_its_own():
    """One machine per class against the rest: every point scores its own
    class higher than any point scores a class not its own, and the scores
    of the other classes stay far from tanh's ceiling. (An SVC's own
    multi-class values are pairwise vote counts, 0 to k - 1: tanh of most is
    near 1 for every point, whatever its class.)"""
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    y = np.repeat(np.arange(4), 50)
    x = (centres[y] + np.random.default_rng(0).normal(scale=0.3, size=(200, 2))).astype(np.float32)
    svm = fit_label_classifier(x, _partial(y, 5))
    d = decision_columns(svm, x)
    own = np.zeros(d.shape, bool)
    own[np.arange(len(y)), y] = True
    assert d.shape == (200, 4) and d[own].min() > d[~own].max()
    assert (np.tanh(d[~own]) < 0.5).all()
    assert acc(y, svm.predict(x)) == 1.0
    # One C and gamma, from the grid, for every machine.
    (c, gamma), = {(m.C, m.gamma) for m in svm.estimators_}
    base = 1.0 / (2 * x[::5].astype(np.float64).var())
    assert c in C_GRID and any(np.isclose(gamma, f * base) for f in GAMMA_FACTORS)


def test_with_a_global_scale_the_kernel_is_the_data_kernel_times_a_label_kernel():
    """exp(-|e_i - e_j|^2 / 2s^2) with e extended by strength * s * t, t the
    tanh of the scores, is W_ij * exp(-strength^2 |t_i - t_j|^2 / 2)."""
    x, y = _rings(n=200)
    plain = FullGaussianAffinity(scale_nbr=3, scale="global").fit(x, batch_size=200)
    svm = fit_label_classifier(x, _partial(y))
    strength, scale = 2.0, kernel_width(plain, x)
    assert scale == plain.scale_
    scores = LabelScores(None, svm, strength, scale)
    w = plain.kernel_matrix(tf.constant(x)).numpy()
    w_scores = plain.kernel_matrix(tf.constant(scores(x))).numpy()
    t = np.tanh(svm.decision_function(x))
    expected = w * np.exp(-strength**2 * (t[:, None] - t[None, :]) ** 2 / 2)
    np.testing.assert_allclose(w_scores, expected, rtol=2e-3, atol=1e-6)
    # Pairs the classifier puts on opposite sides lose their edge; others keep it.
    across = y[:, None] != y[None, :]
    assert w_scores[across].max() < 0.2 * w[across].max()


def test_a_local_scale_is_measured_as_the_median_neighbour_distance():
    x, _ = _rings(n=300)
    aff = GaussianKNNAffinity(n_nbrs=5, scale_nbr=3, scale="local").fit(x, batch_size=300)
    from sklearn.neighbors import NearestNeighbors

    dist = NearestNeighbors(n_neighbors=4).fit(x).kneighbors(x)[0][:, -1]
    assert np.isclose(kernel_width(aff, x, sample=300), np.median(dist), rtol=1e-5)


def _checked(x, known, seed=0):
    """The classifier's scores (None where not kept) and the check's record."""
    aff = GaussianKNNAffinity().fit(x, batch_size=360, seed=seed)
    return label_coordinates(aff, x, known, x, batch_size=360, laplacian="unnormalized",
                             n_clusters=2, seed=seed)


def test_the_check_scores_both_graphs_on_the_classifiers_folds():
    """Held-out accuracy, over the folds the classifier was tuned on, of the
    classifier refitted on the other folds with its C and gamma, and of the
    graph it reshapes and the graph as it is, each read by Poisson learning
    and by its own cut named by the other folds' labels: recomputed here by
    hand."""
    x, y = _rings(noise=0.11, outer=1.5)  # noisy rings the graph joins
    known = _partial(y)
    scores, check = _checked(x, known, seed=3)
    lab = np.flatnonzero(known >= 0)
    plain = GaussianKNNAffinity().fit(x, batch_size=360, seed=3).for_full_data(400, 360)
    w = plain.kernel_matrix(tf.constant(x)).numpy()  # n < a subsample: every point, in order
    svm = scores.classifier
    cut = graph_cut(w, 2, seed=3)
    right = dict.fromkeys(["classifier", "reshaped_poisson", "reshaped_cut", "poisson", "cut"], 0)
    folds = StratifiedKFold(5, shuffle=True, random_state=3)  # 20 labels of each class
    for train, test in folds.split(lab, known[lab]):
        seen, asked = lab[train], lab[test]
        fold = SVC(C=svm.C, gamma=svm.gamma).fit(x[seen], known[seen])
        extended = np.hstack([x, scores.strength * scores.scale
                              * np.tanh(fold.decision_function(x))[:, None]])
        w_fold = plain.kernel_matrix(tf.constant(extended.astype(np.float32))).numpy()
        hidden = known.copy()
        hidden[asked] = -1

        def named(clusters):  # each cluster's majority among the seen labels
            names = {c: np.bincount(known[seen][clusters[seen] == c], minlength=2).argmax()
                     for c in np.unique(clusters[seen])}
            return np.array([names.get(c, -1) for c in clusters[asked]])

        answers = {"classifier": fold.predict(x[asked]),
                   "reshaped_poisson": poisson_labels(w_fold, hidden, 2)[asked],
                   "reshaped_cut": named(graph_cut(w_fold, 2, seed=3)),
                   "poisson": poisson_labels(w, hidden, 2)[asked], "cut": named(cut)}
        for name, answer in answers.items():
            right[name] += (answer == known[asked]).sum()
    right["reshaped"] = max(right["reshaped_poisson"], right["reshaped_cut"])
    right["graph"] = max(right["poisson"], right["cut"])
    assert check == {**{name: round(count / 40, 4) for name, count in right.items()},
                     "labeled": 40, "keep": bool(right["reshaped"] > right["graph"]),
                     "params": {"C": float(svm.C), "gamma": float(svm.gamma)}}
    assert check["keep"]  # here the reshaped graph knows the rings better than the graph


def test_a_named_cut_gives_each_cluster_its_seen_labels_majority():
    clusters = np.array([0, 0, 0, 1, 1, 2, 2])
    seen = np.array([0, 1, 3])  # cluster 0: classes 1 and 1; cluster 1: class 0; 2: none
    np.testing.assert_array_equal(named_cut(clusters, seen, np.array([1, 1, 0]), 2),
                                  [1, 1, 1, 0, 0, -1, -1])
    # A tie goes to the lowest class.
    np.testing.assert_array_equal(named_cut(clusters, np.array([0, 1]), np.array([1, 0]), 2),
                                  [0, 0, 0, -1, -1, -1, -1])


def test_the_check_keeps_the_classifier_only_where_its_graph_beats_the_graph():
    """Far-apart rings: the graph alone gets every held-out label, as the
    reshaped graph does, so the graph is left as it is. No check without a
    classifier, or with a class of a single label (no folds)."""
    x, y = _rings()
    scores, check = _checked(x, _partial(y))
    assert check["reshaped"] == check["graph"] == 1.0 and not check["keep"] and scores is None
    one = np.full_like(y, -1)
    one[[0, 1, 2]] = y[[0, 1, 2]]
    one[np.flatnonzero(y != y[0])[0]] = 1 - y[0]
    scores, check = _checked(x, one)  # nothing to check: the classifier stays
    assert check is None and isinstance(scores, LabelScores)


FAST = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=5), random_state=0)


@pytest.mark.slow  # five fits
def test_fit_extends_the_affinity_only_with_labels_of_two_classes_where_it_helps():
    x, y = _rings(n=300, noise=0.11, outer=1.5)  # the classifier beats the graph here
    known = _partial(y)
    net = SpectralNet(2, **FAST).fit(x, partial_labels=known)
    assert net.label_check_["keep"]
    scores = net.affinity_.embedding
    assert isinstance(scores, LabelScores)
    assert net.affinity == "knn"  # a parameter: fit leaves it as it was
    assert scores.strength == LABEL_STRENGTH and scores.base is None  # no learned distance
    # A local scale has no one width: the scores' width is measured (kernel_width).
    assert net.affinity_.scale_ is None and scores.scale > 0
    assert net.affinity_.coordinates(x[:7]).shape == (7, 3)
    # Off: no labels, or every point labeled (the labeled pairs are then the
    # whole affinity). A refit forgets an earlier classifier.
    for labels in (None, y):
        net.fit(x, partial_labels=labels)
        assert net.affinity_.embedding is None and net.label_check_ is None
    # Where the graph alone gets the held-out labels as well, it stays as it is.
    far, far_y = _rings(n=300)
    net.fit(far, partial_labels=_partial(far_y))
    assert not net.label_check_["keep"] and net.affinity_.embedding is None


def test_save_and_load_keep_the_predictions(tmp_path):
    x, y = _rings(n=300)
    net = SpectralNet(2, **FAST)
    net.fit(x, partial_labels=_partial(y))
    back = SpectralNet.load(net.save(str(tmp_path / "m")))
    np.testing.assert_array_equal(back.predict(x), net.predict(x))
