import numpy as np
import pytest

from spectralnet_tf.neighbors import AnnoyNeighbors, ExactNeighbors, make_neighbors


def _x(n=300, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 4)).astype(np.float32)


def test_exact_neighbours_match_brute_force_and_exclude_self():
    x = _x(100)
    dist, idx = ExactNeighbors().kneighbors(x, 5)
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(idx, np.argsort(d, axis=1)[:, :5])
    np.testing.assert_allclose(dist, np.sort(d, axis=1)[:, :5], rtol=1e-5)
    assert not (idx == np.arange(100)[:, None]).any()


def test_annoy_agrees_with_exact_search():
    x = _x()
    _, exact = ExactNeighbors().kneighbors(x, 10)
    _, approx = AnnoyNeighbors(n_trees=20, random_state=0).kneighbors(x, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, approx)])
    assert recall > 0.95
    assert not (approx == np.arange(len(x))[:, None]).any()


def test_duplicate_points_still_exclude_self():
    x = np.repeat(_x(20), 3, axis=0)
    _, idx = ExactNeighbors().kneighbors(x, 2)
    assert not (idx == np.arange(len(x))[:, None]).any()


def test_make_neighbors_chooses_by_size_and_rejects_unknown_names():
    assert isinstance(make_neighbors("auto", n_samples=100), ExactNeighbors)
    assert isinstance(make_neighbors("auto", n_samples=10**6), AnnoyNeighbors)
    with pytest.raises(ValueError, match="neighbors='faiss'"):
        make_neighbors("faiss")


def test_too_many_neighbours_is_named():
    with pytest.raises(ValueError, match="n_neighbors=10"):
        ExactNeighbors().kneighbors(_x(10), 10)


def test_annoy_threaded_queries_return_the_single_thread_results():
    x = _x(3000)
    one = AnnoyNeighbors(n_trees=10, random_state=0, n_jobs=1).kneighbors(x, 6)
    many = AnnoyNeighbors(n_trees=10, random_state=0, n_jobs=3).kneighbors(x, 6, chunk=257)
    np.testing.assert_array_equal(one[1], many[1])
    np.testing.assert_array_equal(one[0], many[0])
