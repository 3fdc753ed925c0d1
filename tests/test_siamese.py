import numpy as np
from sklearn.base import BaseEstimator

from spectralnet_tf import Schedule
from spectralnet_tf.losses import contrastive_loss
from spectralnet_tf.neighbors import ExactNeighbors
from spectralnet_tf.siamese import build_siamese, make_pairs, train_siamese


def _comparable(params):
    """``get_params`` with each part (an estimator object, equal to another
    only if the same object) as its class and its own parameters."""
    return {key: (type(value), _comparable(value.get_params()))
            if isinstance(value, BaseEstimator) else value for key, value in params.items()}


def _blobs(seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [6, 0], [0, 6]], dtype=np.float32)
    y = np.repeat(np.arange(3), 100)
    return centers[y] + rng.normal(size=(300, 2)).astype(np.float32), y


def test_pairs_are_neighbours_and_non_neighbours_in_equal_numbers():
    x, _ = _blobs()
    first, second, positive = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0)
    _, nbrs = ExactNeighbors().kneighbors(x, 2)
    pos = positive == 1
    assert pos.sum() == (~pos).sum() == 600
    assert all(s in nbrs[f] for f, s in zip(first[pos], second[pos]))
    assert not any(s in nbrs[f] or s == f for f, s in zip(first[~pos], second[~pos]))


def test_siamese_training_lowers_the_loss_and_separates_pairs():
    x, _ = _blobs()
    pairs = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0)
    first, second, positive = pairs
    net = build_siamese(2, hidden_units=(32, 8), seed=0)

    def loss():
        return float(contrastive_loss(net(x[first]), net(x[second]), positive))

    before = loss()
    train_siamese(net, x, pairs, batch_size=64, schedule=Schedule(max_epochs=8, tol=0.0), seed=0,
                  verbose=0)
    assert loss() < before
    z = net.predict(x, verbose=0)
    d = np.linalg.norm(z[first] - z[second], axis=1)
    assert d[positive == 1].mean() < 0.5 * d[positive == 0].mean()


def test_labeled_points_add_same_and_other_label_pairs():
    x, y = _blobs()
    labels = np.full(len(x), -1)
    labels[[0, 1, 150, 151, 250]] = y[[0, 1, 150, 151, 250]]
    plain = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0)
    first, second, positive = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0, labels=labels)
    extra = slice(len(plain[0]), None)
    f, s, p = first[extra], second[extra], positive[extra]
    assert len(f) == 9  # 5 negatives; positives for the 4 points whose label has a partner
    assert np.all((labels[f] == labels[s]) == (p == 1))
    assert np.all(labels[s] >= 0) and np.all(f != s)


def test_too_many_neighbours_for_negative_pairs_is_refused():
    import pytest

    x, _ = _blobs()
    with pytest.raises(ValueError, match="n_nbrs=299"):
        make_pairs(x[:300], n_nbrs=299, neighbors="exact")


def test_one_random_positive_among_the_nearest_neighbours():
    from sklearn.neighbors import NearestNeighbors

    x, _ = _blobs()
    first, second, positive = make_pairs(x, n_nbrs=10, neighbors="exact", seed=0,
                                         positives_per_point=1)
    pos = positive == 1
    np.testing.assert_array_equal(first[pos], np.arange(len(x)))  # one per point
    _, nbrs = NearestNeighbors(n_neighbors=11).fit(x).kneighbors(x)
    assert all(s in nbrs[f, 1:] for f, s in zip(first[pos], second[pos]))
    assert (second[pos] != nbrs[first[pos], 1]).any()  # not always the nearest
    assert (~pos).sum() == pos.sum()


def test_positives_per_point_above_n_nbrs_is_refused():
    import pytest

    x, _ = _blobs()
    with pytest.raises(ValueError, match="positives_per_point=3"):
        make_pairs(x, n_nbrs=2, neighbors="exact", positives_per_point=3)


def test_paper_relu_output_layer_is_nonnegative_and_linear_is_not():
    x = np.random.default_rng(0).normal(size=(256, 5)).astype(np.float32)
    relu = build_siamese(5, (16, 8), seed=0, output_activation="relu")(x).numpy()
    linear = build_siamese(5, (16, 8), seed=0)(x).numpy()
    assert relu.min() == 0.0 and linear.min() < 0.0
    np.testing.assert_allclose(relu, np.maximum(linear, 0.0), rtol=1e-6)  # same weights


def test_a_step_budget_trains_on_random_pairs_and_caps_the_validation_pairs(monkeypatch):
    import spectralnet_tf.siamese as siamese

    x, _ = _blobs()
    pairs = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0)
    first, second, positive = pairs
    monkeypatch.setattr(siamese, "VALIDATION_MAX_PAIRS", 16)
    seen = []
    real = siamese.contrastive_loss
    monkeypatch.setattr(siamese, "contrastive_loss",
                        lambda z1, z2, pos: seen.append(int(z1.shape[0])) or real(z1, z2, pos))
    net = build_siamese(2, hidden_units=(32, 8), seed=0)
    before = float(real(net(x[first]), net(x[second]), positive))
    history = train_siamese(net, x, pairs, batch_size=64,
                            schedule=Schedule(max_epochs=6, steps_per_epoch=5, tol=0.0), seed=0,
                            verbose=0)
    assert len(history["loss"]) == 6
    assert float(real(net(x[first]), net(x[second]), positive)) < before
    assert 16 in seen and max(seen) <= 64  # training batches of 64, validation on 16 pairs
    twin = build_siamese(2, hidden_units=(32, 8), seed=0)
    train_siamese(twin, x, pairs, batch_size=64,
                  schedule=Schedule(max_epochs=6, steps_per_epoch=5, tol=0.0), seed=0, verbose=0)
    for a, b in zip(net.get_weights(), twin.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_groups_add_one_positive_with_another_member_for_each_grouped_point():
    import pytest

    from spectralnet_tf.groups import check_groups

    x, _ = _blobs()
    groups = np.arange(len(x)) % 120  # 60 groups of 3 and 60 of 2 (points 0-59 and 120-...)
    groups[-5:] = 1000 + np.arange(5)  # 5 singletons: no group pair
    plain = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0)
    first, second, positive = make_pairs(x, n_nbrs=2, neighbors="exact", seed=0, groups=groups)
    extra = slice(len(plain[0]), None)
    f, s, p = first[extra], second[extra], positive[extra]
    np.testing.assert_array_equal(np.sort(f), np.arange(len(x) - 5))  # each grouped point once
    assert np.all(groups[f] == groups[s]) and np.all(f != s) and np.all(p == 1)
    # The partner is drawn among the other members: both of a group of 3 occur over seeds.
    partners = {int(make_pairs(x, 2, "exact", seed=seed, groups=groups)[1][len(plain[0]):][
        np.flatnonzero(f == 0)[0]]) for seed in range(12)}
    assert partners == {120, 240}
    with pytest.raises(ValueError, match=r"groups must have shape \(n_samples,\) = \(300,\), got "
                                         r"groups.shape=\(299,\)"):
        check_groups(groups[1:], len(x))
    with pytest.raises(ValueError, match=r"groups must hold integer ids, got dtype=float64 "
                                         r"\(e.g. groups\[0\]=0.5\)"):
        check_groups(np.full(len(x), 0.5), len(x))


def test_siamese_embedding_fits_the_same_net_as_fit_siamese_and_embeds_with_it():
    from sklearn.base import clone

    from spectralnet_tf.siamese import SiameseEmbedding, fit_siamese

    x, _ = _blobs()
    emb = SiameseEmbedding(hidden_units=(16, 4), n_nbrs=3, batch_size=64,
                           schedule=Schedule(max_epochs=2, steps_per_epoch=3, patience=4, tol=0.0),
                           neighbors="exact")
    assert type(clone(emb).schedule) is Schedule
    assert _comparable(clone(emb).get_params()) == _comparable(emb.get_params())
    fitted = clone(emb).fit(x, seed=1)
    assert not hasattr(emb, "model_")  # the copy was fitted, not emb
    net, history = fit_siamese(
        x, hidden_units=(16, 4), n_nbrs=3, batch_size=64,
        schedule=Schedule(max_epochs=2, steps_per_epoch=3, patience=4, tol=0.0),
        neighbors="exact", seed=1)
    assert fitted.history_["loss"] == history["loss"]
    for mine, theirs in zip(fitted.model_.get_weights(), net.get_weights()):
        np.testing.assert_array_equal(mine, theirs)
    # The same rows in one call: predict's batches of 32 may round differently
    # from one call on all rows (oneDNN blocks a matmul by its row count).
    np.testing.assert_array_equal(fitted.transform(x), np.asarray(net(x)))
    np.testing.assert_array_equal(np.asarray(fitted(x[:5])), np.asarray(net(x[:5])))


def test_siamese_embedding_names_a_bad_parameter():
    import pytest

    from spectralnet_tf.siamese import SiameseEmbedding

    for kwargs, match in [
        (dict(hidden_units=()), r"hidden_units=\(\)"),
        (dict(output_activation="sigmoid"), r"output_activation must be one of .*'sigmoid'"),
        (dict(positives_per_point=0), r"positives_per_point=0"),
        (dict(schedule=Schedule(learning_rate=0)),
         r"schedule=Schedule\(learning_rate=0\): learning_rate must be a finite number > 0, "
         r"got learning_rate=0"),
        (dict(neighbors="faiss"), r"neighbors must be one of .*got neighbors='faiss'"),
        (dict(dtype_policy="bfloat16"), r"dtype_policy must be one of .*'bfloat16'"),
        (dict(max_samples=1), r"max_samples must be None or an integer >= 2, got max_samples=1"),
    ]:
        with pytest.raises(ValueError, match=match):
            SiameseEmbedding(**kwargs).check_params()
    x, _ = _blobs()
    for name in ("labels", "groups"):
        with pytest.raises(ValueError, match=rf"{name} must have one entry per row of X "
                                             rf"\(300\), got len\({name}\)=299"):
            SiameseEmbedding(max_samples=100).fit(x, **{name: np.zeros(299, np.int64)})


class CountingNeighbors:
    """Exact neighbours that keep the size of every set they search."""

    def __init__(self):
        self.searched = []

    def kneighbors(self, x, n_neighbors):
        self.searched.append(len(x))
        return ExactNeighbors().kneighbors(x, n_neighbors)


class IndexView:
    """A view that keeps the row numbers it was given (x + 1, as a view)."""

    def __init__(self):
        self.index = []

    def __call__(self, x, index, seed):
        self.index.append(np.asarray(index))
        return x + 1.0


def test_max_samples_draws_the_rows_from_the_seed_alone():
    from spectralnet_tf.siamese import SiameseEmbedding

    emb = SiameseEmbedding(max_samples=50)
    assert emb.sample_rows(50, seed=0) == slice(None)
    assert SiameseEmbedding().sample_rows(10**6, seed=0) == slice(None)
    rows = emb.sample_rows(300, seed=3)
    assert len(rows) == len(set(rows)) == 50 and np.all(np.diff(rows) > 0)
    assert 0 <= rows.min() and rows.max() < 300
    np.testing.assert_array_equal(rows, emb.sample_rows(300, seed=3))
    assert not np.array_equal(rows, emb.sample_rows(300, seed=4))


def test_max_samples_fits_the_net_of_the_drawn_rows_and_their_views():
    from sklearn.base import clone

    from spectralnet_tf.siamese import SiameseEmbedding

    x, y = _blobs()
    labels = np.where(np.arange(len(x)) % 10 == 0, y, -1)
    groups = np.arange(len(x)) % 7
    view = IndexView()
    emb = SiameseEmbedding(hidden_units=(16, 4), n_nbrs=3, batch_size=64,
                           schedule=Schedule(max_epochs=2, steps_per_epoch=3, tol=0.0),
                           neighbors="exact", views=view, n_views=2, max_samples=120)
    given_params = clone(emb).get_params(deep=False)
    drawn = emb.fit(x, labels=labels, groups=groups, seed=1)  # view: not a copy
    rows = emb.sample_rows(len(x), seed=1)
    # Views are made for the drawn rows only, by their row numbers in x.
    assert sorted(np.concatenate(view.index)) == sorted(np.tile(rows, 2))
    coords = np.stack([x[rows] + 1.0] * 2)
    given = SiameseEmbedding(**given_params).set_params(max_samples=None).fit(
        x[rows], labels=labels[rows], groups=groups[rows], view_coords=coords, seed=1)
    assert drawn.history_["loss"] == given.history_["loss"]
    for mine, theirs in zip(drawn.model_.get_weights(), given.model_.get_weights()):
        np.testing.assert_array_equal(mine, theirs)
    # Views given for all of x are taken at the drawn rows.
    whole = SiameseEmbedding(**given_params).fit(x, labels=labels, groups=groups, seed=1,
                           view_coords=np.stack([x + 1.0] * 2))
    for mine, theirs in zip(whole.model_.get_weights(), given.model_.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


def test_pair_building_with_max_samples_searches_the_same_set_at_two_sizes():
    """Above max_samples, the neighbour search and the views cost the same at
    any n: the work per point falls as 1/n instead of growing."""
    from spectralnet_tf.siamese import SiameseEmbedding

    work = {}
    for n in (1000, 4000):
        x = np.random.default_rng(n).normal(size=(n, 3)).astype(np.float32)
        backend, view = CountingNeighbors(), IndexView()
        emb = SiameseEmbedding(hidden_units=(8, 2), n_nbrs=2, batch_size=32,
                               schedule=Schedule(max_epochs=1, steps_per_epoch=1, tol=0.0),
                               neighbors=backend, views=view,
                               max_samples=500).fit(x, seed=0)
        work[n] = (backend.searched, sum(len(i) for i in view.index))
        assert emb.model_ is not None
    assert work[1000] == work[4000] == ([500], 2 * 500)


def test_spectralnet_builds_the_siamese_pairs_on_max_samples_training_points():
    from spectralnet_tf import SpectralNet
    from spectralnet_tf.siamese import SiameseEmbedding

    x, _ = _blobs()
    emb = SiameseEmbedding(hidden_units=(8, 2), n_nbrs=2, batch_size=32,
                           schedule=Schedule(max_epochs=1, steps_per_epoch=2, tol=0.0),
                           neighbors=CountingNeighbors(), views=IndexView(), max_samples=100)
    net = SpectralNet(n_clusters=3, hidden_units=(16,), schedule=Schedule(max_epochs=1),
                      affinity_embedding=emb, random_state=0).fit(x)
    fitted = net.affinity_embedding_
    assert fitted.neighbors.searched == [100]
    index = np.concatenate(fitted.views.index)
    assert len(index) == 2 * 100 and len(np.unique(index)) == 100
    assert np.isin(index, np.arange(len(x))).all()
    assert net.transform(x).shape == (len(x), 3)
