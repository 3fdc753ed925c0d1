import re

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from spectralnet_tf import Schedule, SiameseEmbedding, SpectralNet, acc, grassmann
from spectralnet_tf.affinity import GaussianKNNAffinity
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.spectral import spectral_clustering

SMALL = dict(hidden_units=(128, 128), schedule=Schedule(max_epochs=25), random_state=0)


@pytest.fixture(scope="module")
def cc_fit():
    x, y, k = load_dataset("cc")
    # The reference is exact SC of the graph the net trains on: its affinity,
    # scaled for its minibatches of 1024, and its Laplacian.
    ref = GaussianKNNAffinity(n_nbrs=10, scale_nbr=3).fit(x, batch_size=1024)
    exact_labels, eigvecs = spectral_clustering(x, k, ref)
    net = SpectralNet(k, affinity=GaussianKNNAffinity(n_nbrs=10, scale_nbr=3),
                      laplacian="unnormalized", batch_size=1024, **SMALL).fit(x, eigvecs=eigvecs)
    return net, x, y, exact_labels, eigvecs


@pytest.mark.slow
def test_matches_exact_spectral_clustering_on_nested_cs(cc_fit):
    net, x, y, exact_labels, eigvecs = cc_fit
    assert acc(y, exact_labels) == 1.0
    assert acc(y, net.labels_) == 1.0  # refined on the graph (1,500 points)
    assert acc(y, net.predict(x)) == 1.0  # the net's own
    assert grassmann(net.embedding_, eigvecs) <= 0.05
    assert net.history_["grassmann"][-1] == pytest.approx(grassmann(net.embedding_, eigvecs), abs=1e-6)


@pytest.mark.slow
def test_fitted_attributes_and_out_of_sample_assignment(cc_fit):
    net, x, y, _, _ = cc_fit
    assert net.embedding_.shape == (len(x), 2)
    assert net.cluster_centers_.shape == (2, 2)
    assert set(net.history_) >= {"iteration", "loss", "val_loss", "lr", "grassmann", "seconds"}
    np.testing.assert_array_equal(net.predict(x), net.labels_)
    np.testing.assert_allclose(net.transform(x), net.embedding_, atol=1e-6)
    # Orthonormal on the training data (final ortho step on all training points).
    emb = net.embedding_.astype(np.float64)
    gram = emb.T @ emb / len(emb)
    np.testing.assert_allclose(gram, np.eye(2), atol=0.05)
    # New points from the same distribution get the training clusters' labels.
    x_new, y_new, _ = load_dataset("cc", seed=7)
    assert acc(y_new, net.predict(x_new)) >= 0.99


@pytest.mark.slow  # a default fit; the distances alone are in test_affinity.py
def test_features_far_from_the_origin_cluster_as_near_it():
    # Blobs that every method separates, moved by 1e6 (timestamp- or GPS-like
    # features): the graph's float32 distances must not cancel to noise.
    from sklearn.datasets import make_blobs
    x, y = make_blobs(300, n_features=4, centers=3, random_state=0)
    far = (x + 1e6).astype(np.float32)
    assert np.unique(far, axis=0).shape[0] == len(far)  # float32 keeps the points apart
    net = SpectralNet(3, random_state=0).fit(far)
    assert acc(y, net.labels_) == 1.0


@pytest.mark.slow  # a default fit; the input layer alone is in test_networks.py
def test_features_in_tiny_units_cluster_as_in_their_own():
    # The same blobs in units 1e10 times larger (spread ~1e-10): the graph's
    # local scales do not see units; the net's input layer must not either.
    from sklearn.datasets import make_blobs
    x, y = make_blobs(300, n_features=4, centers=3, random_state=0)
    net = SpectralNet(3, random_state=0).fit((x * 1e-10).astype(np.float32))
    assert acc(y, net.labels_) == 1.0


def test_same_random_state_gives_the_same_result():
    x, _, k = load_dataset("moons", n=400)
    a = SpectralNet(k, hidden_units=(32,), schedule=Schedule(max_epochs=2), random_state=3).fit(x)
    b = SpectralNet(k, hidden_units=(32,), schedule=Schedule(max_epochs=2), random_state=3).fit(x)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    np.testing.assert_array_equal(a.labels_, b.labels_)


def test_fit_predict_returns_labels_and_init_only_stores_arguments():
    net = SpectralNet(3, batch_size=-5, affinity="bogus")  # no validation here
    assert net.get_params()["batch_size"] == -5
    x, _, k = load_dataset("moons", n=300)
    labels = SpectralNet(k, hidden_units=(16,), schedule=Schedule(max_epochs=1),
                         random_state=0).fit_predict(x)
    assert labels.shape == (300,)


def _x(n=200, d=2):
    return np.random.default_rng(0).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize(
    "X, kwargs, match",
    [
        (np.array([[0.0, np.nan]] + [[1.0, 2.0]] * 99), {}, r"NaN or inf.*X\[0, 1\]=nan"),
        (np.array([[0.0, np.inf]] + [[1.0, 2.0]] * 99), {}, r"X\[0, 1\]=inf"),
        (np.zeros(100), {}, r"X: Expected 2D array, got 1D array"),
        (np.zeros((10, 2, 2)), {}, r"X: Found array with dim 3"),
        (_x(1), {}, r"X: Found array with 1 sample\(s\)"),
        (_x(3), dict(n_clusters=5), r"n_samples=3, fewer than n_clusters=5"),
        (_x(), dict(n_clusters=0), r"n_clusters must be an integer >= 1, 'auto' or an Eigengap, got n_clusters=0"),
        (_x(), dict(random_state=-1), r"random_state must be None, an integer >= 0 or a RandomState, got random_state=-1"),
        (_x(), dict(random_state="0"), r"random_state must be None, an integer .*random_state='0'"),
        (_x(), dict(batch_size=500), r"batch_size=500 is larger than the 179 training points"),
        (_x(), dict(affinity="rbf"), r"affinity='rbf'"),
        (_x(), dict(laplacian="sym"), r"laplacian='sym'"),
        (_x(), dict(init="pca"),
         r"init must be one of \('random', 'spectral'\), a SpectralInit or a RandomInit, "
         r"got init='pca'"),
        (_x(), dict(output_activation="relu"),
         r"output_activation must be one of \('tanh', 'linear'\), got output_activation='relu'"),
        (_x(), dict(validation_fraction=1.5), r"validation_fraction=1.5"),
        (_x(), dict(hidden_units=(10, -1)), r"hidden_units=\(10, -1\)"),
        (_x(), dict(schedule=Schedule(learning_rate=None)),
         r"schedule=Schedule\(learning_rate=None\): learning_rate must be a finite number > 0, "
         r"got learning_rate=None"),
        (_x(), dict(validation_fraction="0.1"), r"validation_fraction='0.1'"),
        (_x(), dict(label_weight=-1.0), r"label_weight must be a finite number >= 0, got label_weight=-1.0"),
        (_x(), dict(label_weight=float("inf")), r"got label_weight=inf"),
        (_x(), dict(labeled_share=1.5), r"labeled_share must be a finite number in \[0, 1\], got labeled_share=1.5"),
        (_x(), dict(labeled_share=True), r"got labeled_share=True"),
        (_x(30), {}, r"needs 20 neighbours per point \(n_nbrs=20, scale_nbr=7\) in a minibatch and in "
                     r"the validation hold-out of 21 points, so more than 41 points; got n_samples=30\."),
        (_x(12), {}, r"hold-out of 21 points, so more than 41 points; got n_samples=12\. Lower"),
        (_x(), dict(affinity=GaussianKNNAffinity(n_nbrs=3), batch_size=3),
         r"minibatch has batch_size=3 points"),
        (_x(), dict(affinity_embedding=SiameseEmbedding(hidden_units=())),
         r"affinity_embedding=SiameseEmbedding\(hidden_units=\(\)\): .*got hidden_units=\(\)"),
        (_x(), dict(affinity_embedding=SiameseEmbedding(output_activation="sigmoid")),
         r"output_activation must be one of .*got output_activation='sigmoid'"),
        (_x(), dict(dtype_policy="float16"),
         r"dtype_policy must be one of \('float32', 'mixed_bfloat16', 'auto'\), got dtype_policy='float16'"),
        (_x(), dict(affinity_embedding=SiameseEmbedding(dtype_policy="bfloat16")),
         r"dtype_policy must be one of .*got dtype_policy='bfloat16'"),
        (_x(), dict(affinity=GaussianKNNAffinity(n_nbrs=0)),
         r"affinity=GaussianKNNAffinity\(n_nbrs=0\): n_nbrs must be an integer >= 1, got n_nbrs=0"),
        (_x(), dict(affinity=GaussianKNNAffinity(scale="median")),
         r"affinity=GaussianKNNAffinity\(scale='median'\): scale must be one of .*'median'"),
        (_x(), dict(affinity=object()), r"affinity must be one of \('knn', 'full', 'precomputed'\) or an Affinity, "
                                        r"got affinity=<object object"),
        (_x(), dict(affinity_embedding="pca"), r"affinity_embedding must be None, 'siamese', a "
                                               r"SiameseEmbedding or a callable, got "
                                               r"affinity_embedding='pca'"),
        (_x(), dict(affinity_embedding=3), r"got affinity_embedding=3"),
        (_x(), dict(affinity=GaussianKNNAffinity(embedding=np.abs), affinity_embedding="siamese"),
         r"affinity has an embedding of its own and affinity_embedding is set too"),
        (_x(), dict(hidden_units="big"), r"hidden_units must be 'auto' or .*got hidden_units='big'"),
        (_x(), dict(schedule=Schedule(max_epochs="many")),
         r"schedule=Schedule\(max_epochs='many'\): max_epochs must be 'auto' or an integer >= 1, "
         r"got max_epochs='many'"),
    ],
)
def test_bad_input_gets_a_clear_value_error(X, kwargs, match):
    kwargs = {"n_clusters": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        SpectralNet(**kwargs).fit(X)


def test_predict_and_transform_before_fit_raise_not_fitted():
    with pytest.raises(NotFittedError):
        SpectralNet(2).predict(_x())
    with pytest.raises(NotFittedError):
        SpectralNet(2).transform(_x())


def test_a_failed_refit_keeps_the_fitted_input_width():
    net = SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                      random_state=0).fit(_x())
    with pytest.raises(ValueError, match="batch_size=5000"):
        net.set_params(batch_size=5000).fit(_x(d=3))
    assert net.n_features_in_ == 2
    assert net.predict(_x()).shape == (200,)


def test_predict_with_a_different_feature_count_is_refused():
    net = SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                      random_state=0).fit(_x())
    with pytest.raises(ValueError, match=r"X has 3 features, but SpectralNet is expecting 2 features"):
        net.predict(_x(d=3))
    with pytest.raises(ValueError, match=r"X has 3 features"):
        net.transform(_x(d=3))


def test_eigvecs_of_the_wrong_shape_are_refused_before_training():
    with pytest.raises(ValueError, match=r"eigvecs.shape=\(200, 3\)"):
        SpectralNet(2).fit(_x(), eigvecs=np.zeros((200, 3)))


def test_groups_of_the_wrong_shape_are_refused():
    with pytest.raises(ValueError, match=r"got groups.shape=\(5,\)"):
        SpectralNet(2, affinity_embedding="siamese").fit(_x(), groups=np.zeros(5, int))


@pytest.mark.parametrize(
    "labels, match",
    [
        (np.zeros(5, dtype=int), r"partial_labels must have shape \(n_samples,\) = \(200,\), got partial_labels.shape=\(5,\)"),
        (np.full(200, -3), r"partial_labels\[0\]=-3 \(200 such values\)"),
        (np.r_[np.zeros(199, dtype=int), 2], r"must lie in \[-1, n_clusters=2\), got partial_labels\[199\]=2 \(1 such"),
        (np.r_[np.zeros(150), 0.5, np.zeros(49)], r"must hold integers .* got partial_labels\[150\]=0\.5 \(1 such"),
        (np.full(200, np.nan), r"must hold integers .* got partial_labels\[0\]=nan \(200 such"),
        (np.array(["a"] * 200), r"must hold integers .* got dtype=<U1 \(e\.g\. partial_labels\[0\]='a'\)"),
        (np.ones(200, dtype=bool), r"must hold integers .* got dtype=bool"),
        (np.zeros((200, 1), dtype=int), r"got partial_labels.shape=\(200, 1\)"),
    ],
)
def test_bad_semi_supervised_labels_are_named(labels, match):
    with pytest.raises(ValueError, match=match):
        SpectralNet(2).fit(_x(), partial_labels=labels)


def test_every_point_labeled_trains_the_embedding_on_the_label_graph():
    # The affinity is then 1 within a class, 0 across: supervised training.
    # On the noisy circles the Bayes rule reaches 0.981; 50 iterations gave 0.976.
    x, y, k = load_dataset("noisy_circles", seed=0)
    net = SpectralNet(k, hidden_units=(32, 32), schedule=Schedule(max_epochs=5, steps_per_epoch=10),
                      random_state=0).fit(x, partial_labels=y.astype(float))
    assert acc(y, net.labels_) >= 0.96


def test_a_semi_supervised_fit_answers_in_the_ids_of_its_labels():
    # The clusters are renamed after the labeled points they hold, so that
    # labels_ and predict give the user's classes, not k-means' order: with
    # the class ids swapped, the answer swaps too.
    x, y, k = load_dataset("moons", n=300)
    known = np.where(np.random.default_rng(0).uniform(size=len(y)) < 0.1, y, -1)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=10),
                  random_state=0)
    for given in (known, np.where(known >= 0, 1 - known, -1)):
        net = SpectralNet(k, **params).fit(x, partial_labels=given)
        labeled = given >= 0
        assert np.mean(net.labels_[labeled] == given[labeled]) > 0.5
        np.testing.assert_array_equal(net.predict(x), net.labels_)


def test_the_label_term_is_asked_for_the_graphs_classes_with_every_label_held(monkeypatch):
    # The harmonic targets are computed on the training rows and the
    # hold-out together, so no label the user gave is left out of the graph,
    # and the loss then sees the targets of the training rows.
    import spectralnet_tf.constraints as constraints

    x, y, k = load_dataset("moons", n=300)
    known = np.where(np.random.default_rng(0).uniform(size=len(y)) < 0.05, y, -1)
    seen = {}
    real = constraints.label_targets

    def spy(affinity, z, labels, n_classes, **kwargs):
        seen.update(rows=len(z), labels=np.sort(labels[labels >= 0]))
        seen["targets"] = real(affinity, z, labels, n_classes, **kwargs)
        return seen["targets"]

    monkeypatch.setattr(constraints, "label_targets", spy)
    SpectralNet(k, hidden_units=(16,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                random_state=0).fit(x, partial_labels=known)
    assert seen["rows"] == len(x)
    np.testing.assert_array_equal(seen["labels"], np.sort(known[known >= 0]))
    assert (seen["targets"].sum(axis=1) == 1).all()  # every point of 300 has a class


def test_y_is_ignored_as_by_every_scikit_learn_clusterer():
    x, y, k = load_dataset("moons", n=300)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=10),
                  random_state=0)
    plain = SpectralNet(k, **params).fit(x)
    with_y = SpectralNet(k, **params).fit(x, y)
    np.testing.assert_array_equal(with_y.labels_, plain.labels_)
    np.testing.assert_array_equal(with_y.embedding_, plain.embedding_)
    np.testing.assert_array_equal(SpectralNet(k, **params).fit_predict(x, y), plain.labels_)
    # The same labels as partial_labels do change the training.
    told = SpectralNet(k, **params).fit(x, partial_labels=y)
    assert not np.array_equal(told.embedding_, plain.embedding_)


def test_fit_transform_feature_names_and_random_state_instances():
    x, _, k = load_dataset("moons", n=300)
    params = dict(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=10))
    net = SpectralNet(k, random_state=0, **params)
    emb = net.fit_transform(x)
    np.testing.assert_array_equal(emb, net.embedding_)
    np.testing.assert_allclose(net.transform(x), emb, atol=1e-5)
    assert list(net.get_feature_names_out()) == ["spectralnet0", "spectralnet1"]
    a = SpectralNet(k, random_state=np.random.RandomState(5), **params).fit(x)
    b = SpectralNet(k, random_state=np.random.RandomState(5), **params).fit(x)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)


#: A smaller net and budget than run.py's, so that the semi-supervised tests
#: take about 40 s a fit (1,500 iterations at most).
NOISY_CIRCLES_FAST = dict(hidden_units=(128, 128),
                          schedule=Schedule(max_epochs=60, steps_per_epoch=25))


def _noisy_circles(seed, labeled_fraction):
    """The noisy circles of a seed (noise 0.12), and their partial labels."""
    x, y, k = load_dataset("noisy_circles", seed=seed)
    rng = np.random.default_rng(seed)
    return x, y, k, np.where(rng.uniform(size=len(y)) < labeled_fraction, y, -1)


def _noisy_circles_fit(seed, labeled_fraction):
    x, y, k, known = _noisy_circles(seed, labeled_fraction)
    net = SpectralNet(k, random_state=seed, **NOISY_CIRCLES_FAST)
    return acc(y, net.fit(x, partial_labels=known).labels_)


def _references(seed, labeled_fraction):
    """The two references a semi-supervised fit must not fall below: an RBF
    SVM of the labeled points alone, and the harmonic function of the graph
    the minibatches sample (the exact minimiser of the loss with the labels
    held), on the same labels as ``_noisy_circles_fit``."""
    from harness.semisup import harmonic_acc, supervised_acc

    x, y, _, known = _noisy_circles(seed, labeled_fraction)
    return supervised_acc(x, y, known), harmonic_acc(x, y, known, seed)


# Seed 1's labels hold the circles apart neither alone nor on the graph; the
# fit without the label classifier fell below both references there.
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_percent_labels_do_at_least_as_well_as_labels_or_graph_alone(seed):
    svm, harmonic = _references(seed, 0.02)
    assert _noisy_circles_fit(seed, 0.02) >= max(svm, harmonic) - 0.005


def test_without_labels_the_same_noisy_circles_are_cut_wrongly():
    # So the labels are what the test above measures. Without labels the net
    # follows the eigenvectors of its graph (the nested-Cs test; a fit here
    # measured 0.509); exact spectral clustering of that graph, the default
    # affinity's, cuts these circles just as wrongly.
    x, y, k, _ = _noisy_circles(0, 0.0)
    plan = SpectralNet(k, **NOISY_CIRCLES_FAST).plan(*x.shape)
    labels, _ = spectral_clustering(x, k, plan.affinity.fit(x, plan.batch_size))
    assert acc(y, labels) < 0.8  # measured 0.501


def test_groups_reach_the_siamese_pairs_aligned_with_the_training_rows(monkeypatch):
    """fit splits groups with the same permutation as the rows: each row the
    Siamese pairs see keeps its own group id (here written in column 0)."""
    import spectralnet_tf.siamese as siamese

    rng = np.random.default_rng(0)
    groups = rng.integers(0, 40, size=200)
    x = np.c_[groups, rng.normal(size=200)].astype(np.float32)
    seen = {}
    real = siamese.make_pairs

    def spy(z, *args, groups=None, **kwargs):
        seen.update(z=np.array(z), groups=groups)
        return real(z, *args, groups=groups, **kwargs)

    monkeypatch.setattr(siamese, "make_pairs", spy)
    SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                batch_size=32,
                affinity_embedding=SiameseEmbedding(
                    hidden_units=(8, 4),
                    schedule=Schedule(max_epochs=1, steps_per_epoch=2, tol=0.0)),
                random_state=0).fit(x, groups=groups)
    assert len(seen["z"]) == 179  # the training rows: a hold-out of 21 holds the neighbours
    np.testing.assert_array_equal(seen["z"][:, 0], seen["groups"])


def _three_far_blobs():
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 50,
                 rng.normal(size=(100, 2)) + [0, 100]].astype(np.float32)


def test_a_graph_in_more_pieces_than_clusters_warns_in_one_line_naming_them():
    """Three blobs with no edge between them, two clusters asked for: one
    line says so, with the pieces' sizes (of the training points)."""
    with pytest.warns(UserWarning) as caught:
        net = SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=1),
                          random_state=0).fit(_three_far_blobs())
    (message,) = [str(w.message) for w in caught if "pieces" in str(w.message)]
    found = re.match(r"SpectralNet: the graph falls into 3 pieces with no edge between them "
                     r"\((\d+), (\d+), (\d+) of 270 points\), and each takes a cluster of its "
                     r"own, so n_clusters=2 cannot follow the data's groups", message)
    assert found and sum(map(int, found.groups())) == 270 and "\n" not in message
    assert len(net.labels_) == 300


def test_as_many_pieces_as_clusters_pass_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SpectralNet(3, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=1),
                    random_state=0).fit(_three_far_blobs())


@pytest.mark.slow
def test_a_default_fit_of_a_thousand_features_clusters_as_its_graph_does():
    """Blobs in 1,000 dimensions: the default fit gets exact spectral
    clustering's labels of its own graph. A warm start whose RMSprop steps
    are too long for a thousand inputs kills every unit of the first layer,
    and the embedding is then one point (one cluster, ACC 0.25)."""
    from sklearn.datasets import make_blobs

    x, y = make_blobs(800, 1000, centers=4, random_state=0)
    net = SpectralNet(4, random_state=0).fit(x)
    exact, _ = spectral_clustering(x.astype(np.float32), 4, net.affinity_, net.laplacian)
    assert acc(y, exact) == 1.0
    assert acc(y, net.labels_) == 1.0


def test_the_pieces_and_the_warm_start_share_one_subsample_graph(monkeypatch):
    """The graph of the subsample is built once a fit: its pieces are
    counted on it and the warm start solves it (the same rows), and that
    warm start is the one a graph built anew gives."""
    from spectralnet_tf.initializers import SpectralInit

    built, starts = [], []
    sampled, eigenvectors = GaussianKNNAffinity.sampled_graph, SpectralInit.eigenvectors

    def counted(self, coords, batch_size):
        built.append(len(coords))
        return sampled(self, coords, batch_size)

    def kept(self, setup):
        starts.append(eigenvectors(self, setup))
        fresh = eigenvectors(self, setup._replace(subsample=None))
        starts.append(fresh)
        return starts[-2]

    monkeypatch.setattr(GaussianKNNAffinity, "sampled_graph", counted)
    monkeypatch.setattr(SpectralInit, "eigenvectors", kept)
    SpectralNet(3, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=1),
                random_state=0).fit(_three_far_blobs())
    assert built == [270, 270]  # once by the fit, once by the fresh solve above
    (rows, shared), (fresh_rows, fresh) = starts
    np.testing.assert_array_equal(rows, fresh_rows)
    np.testing.assert_array_equal(shared, fresh)


@pytest.mark.parametrize("X, k, match", [
    (np.ones((1, 3)), 1, r"X: Found array with 1 sample\(s\)"),
    (np.full((50, 1), 7.0), 2, r"X has 1 distinct rows, fewer than n_clusters=2: each cluster "
                               r"needs a point of its own\."),
    (np.repeat(np.eye(3), 20, axis=0), 4, r"X has 3 distinct rows, fewer than n_clusters=4"),
    # Squared distances that overflow or underflow float32 (3.4e38, 1.2e-38).
    (np.repeat(np.eye(4), 20, axis=0) * 1e20, 2,
     r"^X's widest column spans 1e\+20 \(max - min\), outside what the graph's float32 squared "
     r"distances hold \(1e-15 to 5e\+17 for 4 columns\); rescale X, e.g\. with sklearn's "
     r"StandardScaler\.$"),
    (np.repeat(np.eye(4), 20, axis=0) * 1e-20, 2, r"^X's widest column spans 1e-20 \(max - min\)"),
])
def test_data_too_poor_for_the_clusters_is_one_clear_error(X, k, match):
    with pytest.raises(ValueError, match=match):
        SpectralNet(k).fit(X)


def test_a_constant_column_is_taken_and_leaves_the_graph_as_it_is():
    """A column that is the same for every point adds nothing to any
    distance: the fit takes it, and its graph is the one without it (to
    float32 rounding of the distances)."""
    x, y, k = load_dataset("moons", n=400)
    net = SpectralNet(k, hidden_units=(16,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                      random_state=0)
    padded = np.c_[x, np.full(len(x), 3.0)].astype(np.float32)
    assert net.fit(padded).labels_.shape == (400,)
    graph = GaussianKNNAffinity().fit(padded, 400, seed=0)(padded).numpy()
    plain = GaussianKNNAffinity().fit(x, 400, seed=0)(x).numpy()
    np.testing.assert_allclose(graph, plain, atol=1e-3)


def _standard_iris():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    x, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(x).astype(np.float32), y


def test_a_small_fit_clusters_its_points_as_their_graph_does():
    """On iris (150 points) the training points' clusters are exact spectral
    clustering's of the graph the minibatches sample, over all the points
    (``for_full_data``): the net's embedding refined on that graph. The
    net's own clusters (``predict``) of this seed missed it (ACC 0.8267
    against the graph's 0.8467)."""
    from spectralnet_tf.centroids import NORMALIZE_ROWS
    from spectralnet_tf.spectral import cluster_graph

    x, y = _standard_iris()
    net = SpectralNet(3, random_state=2).fit(x)
    batch = net.plan(*x.shape).batch_size
    w = net.affinity_.for_full_data(len(x), batch).graph(x)
    exact, _ = cluster_graph(w, 3, net.laplacian, 0, normalize_rows=NORMALIZE_ROWS)
    assert acc(exact, net.labels_) >= 0.99  # one point of 150 at most
    np.testing.assert_array_equal(net.fit_predict(x), net.labels_)


@pytest.mark.parametrize("budget, refined", [(None, True), (0, False)])
def test_the_graph_refines_the_clusters_only_within_its_edge_budget(monkeypatch, budget,
                                                                    refined):
    """Within ``REFINE_MAX_EDGES`` the training points' clusters are the
    embedding refined on their graph; above it (here a budget of 0 edges)
    ``refine`` is never called and each point's cluster is the one
    ``predict`` gives it."""
    import spectralnet_tf.estimator as estimator

    calls = []
    real = estimator.refine
    monkeypatch.setattr(estimator, "refine", lambda *a, **k: calls.append(1) or real(*a, **k))
    if budget is not None:
        monkeypatch.setattr(estimator, "REFINE_MAX_EDGES", budget)
    net = SpectralNet(3, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                      random_state=0).fit(_three_far_blobs())
    assert calls == ([1] if refined else [])
    if not refined:
        np.testing.assert_array_equal(net.predict(_three_far_blobs()), net.labels_)
