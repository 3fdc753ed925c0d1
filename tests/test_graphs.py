"""affinity="precomputed": the user's own graph. A minibatch's W is the
graph's submatrix; malformed graphs are refused with the problem named; a net
trained on features plus a graph clusters as exact spectral clustering of that
graph does, and predicts held-out nodes from their features alone."""

import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf

from spectralnet_tf import PrecomputedAffinity, Schedule, SpectralNet, acc
from spectralnet_tf.affinity import check_graph
from spectralnet_tf.datasets import blobs, sbm
from spectralnet_tf.spectral import cluster_graph


def _graph(n=60, seed=0):
    a = sp.random(n, n, density=0.15, random_state=seed, format="csr")
    a = a + a.T + sp.diags(np.full(n, 3.0))  # a diagonal, which is ignored
    a = a.tolil()
    for i in range(n):  # no isolated vertex
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 0.5
    return a.tocsr()


def test_a_minibatch_gets_the_graphs_submatrix_in_eager_and_compiled_code():
    w = _graph()
    dense = w.toarray()
    np.fill_diagonal(dense, 0.0)
    aff = PrecomputedAffinity().fit(np.zeros((60, 1)), 10, graph=w)
    compiled = tf.function(aff.kernel_matrix)
    for ids in ([3, 17, 5, 40, 22], list(range(60)), [59, 0]):
        z = tf.constant(np.asarray(ids, np.float32)[:, None])
        want = dense[np.ix_(ids, ids)]
        np.testing.assert_allclose(aff.kernel_matrix(z).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(compiled(z).numpy(), want, rtol=1e-6)


def test_a_dense_graph_is_taken_as_the_sparse_one():
    w = _graph()
    assert abs(check_graph(w.toarray(), 60) - check_graph(w, 60)).max() == 0


@pytest.mark.parametrize("change, message", [
    (lambda w: w[:, :-1], r"graph must have shape \(n_samples, n_samples\) = \(60, 60\)"),
    (lambda w: _set(w, 2, 7, -1.0, both=True), r"graph must be non-negative, got graph\[2, 7\]=-1"),
    (lambda w: _set(w, 2, 7, 4.0), r"graph must be symmetric, got graph\[(2, 7|7, 2)\]="),
    (lambda w: _isolate(w, 11), r"graph has 1 isolated vertices .*row 11"),
    (lambda w: _set(w, 2, 7, np.nan, both=True), r"graph has 2 NaN or inf weights"),
    (lambda w: "not a graph", r"graph must be a scipy.sparse matrix or a 2-D array"),
])
def test_every_malformed_graph_is_refused_by_fit_naming_the_problem(change, message):
    x = np.random.default_rng(0).normal(size=(60, 3)).astype(np.float32)
    net = SpectralNet(2, affinity="precomputed", hidden_units=(8,),
                      schedule=Schedule(max_epochs=1, steps_per_epoch=1), random_state=0)
    with pytest.raises(ValueError, match=message):
        net.fit(x, graph=change(_graph()))


def _set(w, i, j, value, both=False):
    w = w.tolil()
    w[i, j] = value
    if both:
        w[j, i] = value
    return w.tocsr()


def _isolate(w, i):
    w = w.tolil()
    w[i, :] = 0
    w[:, i] = 0
    w[i, i] = 1.0  # a self loop is no edge to another point
    return w.tocsr()


def test_graph_and_precomputed_go_together_and_refuse_a_learned_distance():
    x = np.random.default_rng(0).normal(size=(60, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="graph=W\\) goes with affinity='precomputed'.*graph=None"):
        SpectralNet(2, affinity="precomputed").fit(x)
    with pytest.raises(ValueError, match="affinity='knn' and graph=csr_matrix"):
        SpectralNet(2).fit(x, graph=_graph())
    with pytest.raises(ValueError, match="set affinity_embedding=None"):
        SpectralNet(2, affinity="precomputed", affinity_embedding="siamese").fit(x, graph=_graph())


@pytest.mark.slow
def test_the_knn_graph_given_as_precomputed_clusters_as_the_knn_run_does():
    x, y = blobs(600, 3, 8.0, seed=0)
    params = dict(hidden_units=(32, 32), schedule=Schedule(max_epochs=8), random_state=0)
    knn = SpectralNet(3, **params).fit(x)
    graph = knn.affinity_.for_full_data(len(x), 540).graph(x)  # the graph minibatches sample
    own = SpectralNet(3, affinity="precomputed", **params).fit(x, graph=graph)
    exact, _ = cluster_graph(graph, 3)
    assert acc(y, exact) == 1.0
    assert acc(y, knn.labels_) == acc(y, own.labels_) == 1.0


@pytest.mark.slow
def test_features_plus_a_block_graph_predict_held_out_blocks_from_features(tmp_path):
    x, w, y = sbm(n=1200, p_in=0.04, p_out=0.004, seed=0)
    train, held = np.arange(900), np.arange(900, 1200)
    net = SpectralNet(3, affinity="precomputed", hidden_units=(64, 64),
                      schedule=Schedule(tol=0.0), random_state=0)
    net.fit(x[train], graph=w[train][:, train])
    exact, _ = cluster_graph(w[train][:, train], 3)
    assert acc(y[train], net.labels_) >= acc(y[train], exact) - 0.03
    # The features' own Bayes rule (true centres, nuisance ignored) bounds what
    # any map of the features can do on held-out nodes.
    centres = np.array([x[train][y[train] == b, :2].mean(axis=0) for b in range(3)])
    bayes = np.argmin(((x[held, None, :2] - centres[None]) ** 2).sum(-1), axis=1)
    assert acc(y[held], net.predict(x[held])) >= acc(y[held], bayes) - 0.05
    net.save(tmp_path / "m")  # a precomputed estimator saves and loads without its graph
    loaded = SpectralNet.load(tmp_path / "m")
    np.testing.assert_array_equal(loaded.predict(x[held]), net.predict(x[held]))


@pytest.mark.slow
def test_the_replicas_of_a_strategy_build_the_same_submatrix_row_blocks():
    """Under a strategy each replica builds its rows of the minibatch's W;
    gathered, they are the submatrix (a subprocess over two logical CPUs)."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=root)
    env.pop("TF_CONFIG", None)
    done = subprocess.run([sys.executable, os.path.join(root, "tests", "precomputed_replicas.py")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["replicas"] == 2 and got["max_diff"] < 1e-6 and got["one_device"] < 1e-6


@pytest.mark.parametrize("extra", ["partial_labels", "groups"])
def test_labels_or_groups_on_a_given_graph_cluster_the_embedding_unrefined(monkeypatch, extra):
    """Labels and groups train on the graph as they reshape it, so their
    clusters are k-means of the net's embedding, not of it refined on the
    given graph: ``refine`` is never called, and each training node's
    cluster is the one ``predict`` gives it."""
    import spectralnet_tf.estimator as estimator

    def refused(*args, **kwargs):
        raise AssertionError("refine was called")

    monkeypatch.setattr(estimator, "refine", refused)
    x, w, y = sbm(n=300, p_in=0.1, p_out=0.01, seed=0)
    given = ({"partial_labels": np.where(np.arange(300) < 30, y, -1)} if extra == "partial_labels"
             else {"groups": np.arange(300) // 2})
    net = SpectralNet(3, affinity="precomputed", hidden_units=(8,),
                      schedule=Schedule(max_epochs=2, steps_per_epoch=5), random_state=0)
    net.fit(x, graph=w, **given)
    np.testing.assert_array_equal(net.predict(x), net.labels_)


def test_without_labels_the_given_graph_refines_its_nodes_clusters(monkeypatch):
    """The contrast of the test above: a plain fit on a given graph refines."""
    import spectralnet_tf.estimator as estimator

    calls = []
    real = estimator.refine
    monkeypatch.setattr(estimator, "refine", lambda *a, **k: calls.append(1) or real(*a, **k))
    x, w, _ = sbm(n=300, p_in=0.1, p_out=0.01, seed=0)
    SpectralNet(3, affinity="precomputed", hidden_units=(8,),
                schedule=Schedule(max_epochs=2, steps_per_epoch=5), random_state=0).fit(x, graph=w)
    assert calls == [1]
