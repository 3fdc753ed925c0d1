"""n_clusters="auto": k from the largest eigengap (as a ratio) of the training
graph's normalized Laplacian, a clonable part of the estimator."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from spectralnet_tf import Eigengap, GaussianKNNAffinity, Schedule, SpectralNet, acc
from spectralnet_tf.datasets import blobs, load_dataset


def _choose(x, **params):
    affinity = GaussianKNNAffinity().fit(x, min(1024, len(x)))
    return Eigengap(**params).fit(affinity, x, min(1024, len(x)))


@pytest.mark.slow
@pytest.mark.parametrize("k", range(2, 9))
def test_blobs_get_their_number_of_clusters(k):
    x, _ = blobs(2000, k, sep=8.0, seed=0)
    chooser = _choose(x)
    assert chooser.n_clusters_ == k and chooser.distinct_
    assert chooser.eigenvalues_.shape == (21,) and np.all(np.diff(chooser.eigenvalues_) >= -1e-9)
    ratio = np.log(np.maximum(chooser.eigenvalues_[k], 1e-6) / max(chooser.eigenvalues_[k - 1], 1e-6))
    assert chooser.gaps_[k - 2] == pytest.approx(ratio) and chooser.gaps_.argmax() == k - 2


@pytest.mark.parametrize("name", ["cc", "moons"])
def test_two_illustrative_sets_get_two(name):
    x, _, k = load_dataset(name)
    assert _choose(x).n_clusters_ == k == 2


def test_no_gap_that_stands_out_warns_once_naming_both_candidates():
    x = np.random.default_rng(0).uniform(size=(1500, 2)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chooser = _choose(x)
    assert not chooser.distinct_
    assert len(caught) == 1
    first, second = chooser.candidates_
    assert f"chose k={first}, the other candidate is k={second}" in str(caught[0].message)


def test_auto_fits_with_the_chosen_k_and_keeps_it_through_save_and_load(tmp_path):
    x, y = blobs(900, 3, sep=8.0, seed=0)
    net = SpectralNet("auto", hidden_units=(16,), schedule=Schedule(max_epochs=5),
                      random_state=0).fit(x)
    assert net.n_clusters == "auto" and net.n_clusters_ == 3
    assert net.cluster_centers_.shape == (3, 3) and net.embedding_.shape == (900, 3)
    assert net.eigenvalues_.shape == (21,) and isinstance(net.n_clusters_chooser_, Eigengap)
    assert net.get_feature_names_out().tolist() == ["spectralnet0", "spectralnet1", "spectralnet2"]
    assert acc(y, net.labels_) == 1.0
    net.save(tmp_path / "m")
    loaded = SpectralNet.load(tmp_path / "m")
    assert loaded.n_clusters == "auto" and loaded.n_clusters_ == 3
    np.testing.assert_array_equal(loaded.eigenvalues_, net.eigenvalues_)
    np.testing.assert_array_equal(loaded.predict(x), net.labels_)


def test_the_chooser_is_a_part_reached_by_nested_keys():
    net = SpectralNet("auto").set_params(n_clusters__max_clusters=8)
    assert isinstance(net.n_clusters, Eigengap) and net.n_clusters.max_clusters == 8
    assert net.get_params()["n_clusters__max_clusters"] == 8
    twin = clone(net)
    assert twin.n_clusters is not net.n_clusters and twin.n_clusters.max_clusters == 8
    with pytest.raises(ValueError, match="nested parameters need n_clusters to be an object"):
        SpectralNet(3).set_params(n_clusters__max_clusters=8)


@pytest.mark.parametrize("n_clusters, message", [
    (Eigengap(max_clusters=1), "max_clusters must be an integer >= 3, got max_clusters=1"),
    (Eigengap(min_ratio=0.5), "min_ratio must be a number >= 1, got min_ratio=0.5"),
    ("many", "n_clusters must be an integer >= 1, 'auto' or an Eigengap, got n_clusters='many'"),
])
def test_bad_choosers_are_refused_naming_the_parameter(n_clusters, message):
    x = np.random.default_rng(0).normal(size=(200, 2)).astype(np.float32)
    with pytest.raises(ValueError, match=message):
        SpectralNet(n_clusters).fit(x)


def test_auto_with_partial_labels_is_refused():
    x = np.random.default_rng(0).normal(size=(200, 2)).astype(np.float32)
    labels = np.full(200, -1)
    labels[:4] = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="with partial_labels give n_clusters as an integer"):
        SpectralNet("auto").fit(x, partial_labels=labels)


def test_a_graph_in_more_pieces_than_max_clusters_warns_and_is_not_distinct():
    x, _ = blobs(1200, 6, sep=20.0, seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chooser = _choose(x, max_clusters=4)
    assert not chooser.distinct_ and np.all(chooser.gaps_ == 0)
    assert len(caught) == 1 and "falls into more than max_clusters=4 pieces" in str(caught[0].message)


@pytest.mark.slow  # trains end to end
def test_a_given_graph_is_solved_whole_not_on_a_subsample():
    """A sparse user graph on a random subsample falls apart; the chooser
    solves the graph on all the points it is given."""
    import scipy.sparse as sp
    from sklearn.neighbors import kneighbors_graph

    from spectralnet_tf import PrecomputedAffinity

    x, _ = blobs(5000, 4, sep=8.0, seed=0)
    knn = kneighbors_graph(x, 10)
    graph = sp.csr_matrix(knn + knn.T)
    coords = PrecomputedAffinity().coordinates(x, np.arange(len(x)))
    affinity = PrecomputedAffinity().fit(coords, 1024, graph=graph)
    chooser = Eigengap(n_samples=1000).fit(affinity, coords, 1024)
    assert chooser.n_clusters_ == 4 and chooser.distinct_
