"""What the defaults promise on a user's own data: outliers do not take a
cluster, a fit stops once converged, and a fit of a given graph reaches
the graph's own exact clustering whatever units its features come in."""

import numpy as np
import scipy.sparse as sp

from spectralnet_tf import SpectralNet, acc
from spectralnet_tf.spectral import cluster_graph


def test_a_few_outliers_do_not_take_a_cluster():
    """scikit-learn's breast cancer data, standardized, two clusters asked
    for: the clusters are the two diagnoses, not a few outlying patients and
    the rest. The local scale gives an outlier's edges weight; one scale for
    all leaves a few nearly cut off (the graph's second eigenvalue near 0),
    and two clusters then meant two outliers and everyone else."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True)
    x = StandardScaler().fit_transform(x).astype(np.float32)
    net = SpectralNet(2, random_state=0).fit(x)
    assert min(np.bincount(net.labels_)) > 0.2 * len(x)
    assert acc(y, net.labels_) > 0.9


def test_a_fit_of_2000_points_stops_once_converged():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 2000)
    x = (np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[y] + rng.normal(size=(2000, 2)))
    net = SpectralNet(3, random_state=0).fit(x.astype(np.float32))
    assert net.history_["stopped_by"] == "converged"
    assert len(net.history_["loss"]) < net.plan(2000, 2).max_epochs
    assert acc(y, net.labels_) > 0.98


def _block_model(seed, per=100, k=3, p_in=0.3, p_out=0.02):
    """A stochastic block model whose nodes carry 2 features, each block's
    around a corner of a triangle (radius 4, unit noise), in the units of an
    instrument: 50 x + 500."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), per)
    rows, cols = np.triu_indices(len(y), 1)
    keep = rng.random(len(rows)) < np.where(y[rows] == y[cols], p_in, p_out)
    upper = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])),
                          shape=(len(y), len(y)))
    angles = 2 * np.pi * np.arange(k) / k
    x = 4.0 * np.c_[np.cos(angles), np.sin(angles)][y] + rng.normal(size=(len(y), 2))
    return (50 * x + 500).astype(np.float32), (upper + upper.T).tocsr(), y


def test_a_fit_of_a_given_graph_reaches_its_exact_clustering():
    """Trained on the user's graph, the clusters of its nodes are those of
    exact spectral clustering of that graph, and the net, from features in
    an instrument's units (standardized by the net), predicts them."""
    x, graph, y = _block_model(0)
    net = SpectralNet(3, affinity="precomputed", random_state=0).fit(x, graph=graph)
    exact = cluster_graph(graph, 3, "normalized", 0)[0]
    assert acc(exact, net.labels_) == 1.0
    assert acc(exact, net.predict(x)) > 0.95


def test_the_auto_net_on_a_given_graph_is_one_small_layer():
    from spectralnet_tf import estimator

    assert SpectralNet(3, affinity="precomputed").plan(300, 2).hidden_units == (8,)
    assert estimator.GRAPH_HIDDEN_UNITS == (8,)
    assert SpectralNet(3).plan(300, 2).hidden_units == estimator.auto_hidden_units(300, 2)
    assert SpectralNet(3, affinity="precomputed", hidden_units=(16, 16)).plan(
        300, 2).hidden_units == (16, 16)


def test_a_given_graph_clusters_its_nodes_even_where_the_features_say_nothing():
    """Features of pure noise: the net cannot tell the blocks apart, yet the
    nodes' clusters are the graph's exact ones (the embedding refined on the
    graph), and predict, from the features alone, sends each to the
    nearest of its clusters' mean rows."""
    from spectralnet_tf.centroids import assign, unit_rows

    _, graph, y = _block_model(1)
    x = np.random.default_rng(1).normal(size=(len(y), 2)).astype(np.float32)
    net = SpectralNet(3, affinity="precomputed", random_state=0).fit(x, graph=graph)
    exact = cluster_graph(graph, 3, "normalized", 0)[0]
    assert acc(exact, net.labels_) == 1.0 and acc(y, net.labels_) > 0.98
    rows = unit_rows(net.embedding_).numpy()
    means = np.stack([rows[net.labels_ == c].mean(axis=0) for c in range(3)])
    np.testing.assert_allclose(net.cluster_centers_, means, atol=1e-6)
    np.testing.assert_array_equal(net.predict(x), assign(net.embedding_, means, True))
