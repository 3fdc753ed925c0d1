"""Groups (views of one item) in SpectralNet's minibatches and graph."""

import re

import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf import Schedule, SpectralNet
from spectralnet_tf.groups import GroupTable, apply_groups, group_means, layout
from spectralnet_tf.metrics import acc as cluster_acc


def _groups(n=600, seed=0):
    """Ids of groups of 1 to 7 members, shuffled, with gaps in the ids."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(rng.choice(10_000, size=n, replace=False), rng.integers(1, 8, size=n))[:n]
    return rng.permutation(ids)


def test_layout_places_each_point_inside_its_group():
    groups = _groups()
    t = layout(groups)
    n = len(groups)
    np.testing.assert_array_equal(t.order[t.start + t.within], np.arange(n))
    assert np.all(np.diff(groups[t.order]) >= 0)  # sorted by group
    # Each point's group: its members are the points of its id, and no others.
    for i in (0, 17, n - 1):
        members = t.order[t.start[i]:t.start[i] + t.size[i]]
        np.testing.assert_array_equal(np.sort(members), np.flatnonzero(groups == groups[i]))
        assert np.all(t.ids[members] == t.ids[i])
    assert t.ids.max() + 1 == len(np.unique(groups))


def test_partners_are_other_members_drawn_uniformly_and_reproducibly():
    groups = _groups()
    table = GroupTable(groups)
    sizes = np.bincount(np.unique(groups, return_inverse=True)[1])[
        np.unique(groups, return_inverse=True)[1]]
    rows = tf.constant(np.repeat(np.arange(len(groups)), 40), tf.int32)
    partners = table.partners(tf.random.Generator.from_seed(5), rows).numpy()
    again = table.partners(tf.random.Generator.from_seed(5), rows).numpy()
    np.testing.assert_array_equal(partners, again)
    r = rows.numpy()
    grouped = sizes[r] > 1
    assert np.all(groups[partners[grouped]] == groups[r[grouped]])
    assert np.all(partners[grouped] != r[grouped])
    # Alone in its group: a uniform row, seldom itself.
    alone = ~grouped
    assert alone.any() and np.all((partners[alone] >= 0) & (partners[alone] < len(groups)))
    assert np.mean(partners[alone] == r[alone]) < 0.05
    # Every other member is drawn, each about equally often (groups of 7: 6 others).
    seven = np.flatnonzero(sizes == 7)[0]
    many = tf.fill([6000], tf.constant(seven, tf.int32))
    counts = np.unique(table.partners(tf.random.Generator.from_seed(1), many).numpy(),
                       return_counts=True)
    np.testing.assert_array_equal(np.sort(counts[0]),
                                  np.sort(np.setdiff1d(np.flatnonzero(groups == groups[seven]),
                                                       [seven])))
    assert np.all(np.abs(counts[1] / 6000 - 1 / 6) < 0.02)


def test_a_minibatch_is_drawn_rows_then_a_partner_for_each():
    groups = np.arange(100) // 2  # pairs: 2i and 2i + 1
    table = GroupTable(groups)
    seen = []

    def draw(count):
        seen.append(count)
        return tf.range(0, 2 * count, 2)  # the even rows

    rows = table.minibatch(tf.random.Generator.from_seed(0), draw, 9).numpy()
    assert seen == [5] and len(rows) == 9
    np.testing.assert_array_equal(rows[:5], [0, 2, 4, 6, 8])
    np.testing.assert_array_equal(rows[5:], [1, 3, 5, 7])


def test_apply_groups_joins_one_groups_pairs_and_keeps_the_rest():
    w = tf.constant(np.random.default_rng(0).uniform(0.1, 0.5, (5, 5)), tf.float32)
    w = w * (1 - tf.eye(5))
    ids = tf.constant([3, 1, 3, 2, 1])
    out = apply_groups(w, ids).numpy()
    expected = w.numpy().copy()
    for i, j in ((0, 2), (2, 0), (1, 4), (4, 1)):
        expected[i, j] = 1.0
    np.testing.assert_allclose(out, expected)
    assert np.all(np.diag(out) == 0)


def _diagonal_blobs(seed=0):
    """Four blobs at the corners of a square; classes are the diagonals, and
    each point of a blob shares a group with the point of the same index in
    the blob across the diagonal. Far apart, so the graph alone joins no
    two blobs."""
    rng = np.random.default_rng(seed)
    corners = np.array([[0, 0], [0, 10], [10, 10], [10, 0]], np.float32)
    per = 100
    x = np.concatenate([c + rng.normal(scale=0.5, size=(per, 2)) for c in corners])
    y = np.repeat([0, 1, 0, 1], per)
    groups = np.r_[np.arange(per), np.arange(per) + per, np.arange(per), np.arange(per) + per]
    return x.astype(np.float32), y, groups


def test_groups_join_their_members_in_the_clusters():
    """The graph alone cannot tell which two of the four blobs belong
    together; the groups, which join each blob to the one across the
    diagonal, can: with them the clusters are the diagonals."""
    x, y, groups = _diagonal_blobs()
    params = dict(n_clusters=2, hidden_units=(32, 32), schedule=Schedule(max_epochs=30),
                  random_state=0, verbose=0)
    with_groups = SpectralNet(**params).fit(x, groups=groups)
    assert cluster_acc(y, with_groups.labels_) == 1.0
    # The same points differently grouped (within a blob, across it from
    # the side) give another cut: what the groups say, not the data.
    sideways = np.r_[np.arange(100), np.arange(100), np.arange(100) + 100, np.arange(100) + 100]
    other = SpectralNet(**params).fit(x, groups=sideways)
    assert cluster_acc(y, other.labels_) == 0.5
    assert cluster_acc(np.repeat([0, 0, 1, 1], 100), other.labels_) == 1.0


def test_groups_make_the_minibatches_pairs_of_one_group(monkeypatch):
    """fit passes the training rows' groups, aligned with them, to Algorithm 1."""
    from spectralnet_tf import estimator
    from spectralnet_tf.constraints import GroupConstraint

    x, _, groups = _diagonal_blobs()
    seen = {}
    real = estimator.train_spectralnet

    def spy(model, affinity, data, config, *, constraints=(), **kwargs):
        seen.update(z=np.array(data.x_train), constraints=constraints)
        return real(model, affinity, data, config, constraints=constraints, **kwargs)

    monkeypatch.setattr(estimator, "train_spectralnet", spy)
    SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1), random_state=0,
                verbose=0).fit(x, groups=groups)
    (constraint,) = seen["constraints"]
    assert isinstance(constraint, GroupConstraint)
    rows = [int(np.flatnonzero(np.all(x == z, axis=1))[0]) for z in seen["z"][:50]]
    np.testing.assert_array_equal(constraint.groups[:50], groups[rows])
    with pytest.raises(ValueError, match=r"groups must hold integer ids, got dtype=float64"):
        SpectralNet(2).fit(x, groups=groups + 0.5)


def _setup(x, affinity, constraints, k=2, batch_size=100, seed=0):
    """A ``train.Setup`` of a fresh net on all of x (a small hold-out of x's
    first rows), its constraints prepared, as train_spectralnet makes it."""
    from spectralnet_tf import distribute
    from spectralnet_tf.networks import build_spectralnet, orthonorm_input
    from spectralnet_tf.train import Config, Data, Setup

    model = build_spectralnet(x.shape[1], k, (16,), seed=0)
    data = Data(x, x[:10], x, x[:10])
    setup = Setup(model, orthonorm_input(model), affinity, data,
                  Config(batch_size=batch_size, ortho_batch_size=batch_size, seed=seed),
                  tuple(constraints), distribute.get())
    for constraint in constraints:
        constraint.prepare(setup)
    return setup


@pytest.mark.parametrize("points", [400, 200])  # all rows; a subsample drawn as pairs
def test_the_warm_start_solves_the_graph_with_the_groups_edges(monkeypatch, points):
    """The warm start's eigenvectors are those of the graph the minibatches
    sample, group edges and all: on the four blobs, the diagonals'."""
    from spectralnet_tf import initializers, sampling
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.constraints import GroupConstraint
    from spectralnet_tf.metrics import grassmann

    monkeypatch.setattr(sampling, "SUBSAMPLE_POINTS", points)
    x, y, groups = _diagonal_blobs()
    affinity = GaussianKNNAffinity(n_nbrs=5).fit(x, batch_size=100)
    start = initializers.SpectralInit()
    rows, vecs = start.eigenvectors(_setup(x, affinity, [GroupConstraint(groups)]))
    if points == 200:  # 100 rows and a partner for each, repeats dropped: the pairs are in
        assert 150 <= len(rows) < 200 and len(np.unique(groups[rows])) <= len(rows) - 50
    diagonals = np.eye(2)[y[rows]] / np.sqrt(np.bincount(y[rows]))
    assert grassmann(vecs, diagonals) < 1e-3
    rows, alone = start.eigenvectors(_setup(x, affinity, []))
    assert grassmann(alone, np.eye(2)[y[rows]]) > 0.1


def test_the_balanced_weight_makes_the_groups_term_equal_the_rest_at_initialisation(
        monkeypatch):
    """On the minibatch it was measured on, with the net as built, the loss's
    term of the pairs of one group, at that weight, equals the rest of it
    (both in the loss's own trace form)."""
    from functools import partial

    from spectralnet_tf import constraints
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.groups import group_pairs
    from spectralnet_tf.losses import spectral_loss
    from spectralnet_tf.sampling import sample_rows

    monkeypatch.setattr(constraints, "GROUP_WEIGHT_BATCHES", 1)
    x, _, groups = _diagonal_blobs()
    affinity = GaussianKNNAffinity(n_nbrs=5).fit(x, batch_size=100)
    constraint = constraints.GroupConstraint(groups)
    setup = _setup(x, affinity, [constraint], seed=3)
    weight = constraint.weight_
    table = GroupTable(groups)
    generator = tf.random.Generator.from_seed(3)  # the same draw
    rows = table.minibatch(generator, partial(sample_rows, generator, len(x)), 100)
    y = setup.model(tf.gather(x, rows))
    same = group_pairs(tf.gather(table.ids, rows))
    assert float(tf.reduce_sum(same)) > 0
    w = affinity.kernel_matrix(tf.gather(x, rows))
    np.testing.assert_allclose(float(spectral_loss(weight * same, y)),
                               float(spectral_loss((1 - same) * w, y)), rtol=1e-4)
    alone = constraints.GroupConstraint(np.arange(len(x)))  # no pair of one group
    _setup(x, affinity, [alone])
    assert alone.weight_ == 1.0


@pytest.mark.parametrize("bad", [0, -1.0, "auto", True, np.inf])
def test_a_bad_group_weight_is_named(bad):
    x, _, groups = _diagonal_blobs()
    with pytest.raises(ValueError, match=r"group_weight must be 'balanced' or a finite number > 0, "
                                         rf"got group_weight={re.escape(repr(bad))}\."):
        SpectralNet(2, group_weight=bad).fit(x, groups=groups)


def test_the_weight_used_is_kept_in_the_history():
    x, _, groups = _diagonal_blobs()
    params = dict(n_clusters=2, hidden_units=(8,), schedule=Schedule(max_epochs=1), random_state=0)
    fixed = SpectralNet(**params, group_weight=2.5)
    assert fixed.fit(x, groups=groups).history_["group_weight"] == 2.5
    balanced = SpectralNet(**params).fit(x, groups=groups).history_["group_weight"]
    assert balanced > 0 and balanced != 1.0
    assert "group_weight" not in SpectralNet(**params).fit(x).history_


def test_the_development_set_has_each_copy_grouped_with_its_source(load_script):
    """``bench.py group-weight``'s data: the originals first, then copies of
    each, shifted by up to a pixel; a copy's group is its source's row."""
    bench = load_script("bench")
    x, y, groups, original = bench.shifted_digit_copies(0)
    n0 = int(original.sum())
    assert len(x) == (bench.GROUP_COPIES + 1) * n0 and np.all(original[:n0])
    np.testing.assert_array_equal(groups[:n0], np.arange(n0))
    np.testing.assert_array_equal(y, y[groups])
    # A copy lies nearer its own source than the typical distance between sources.
    copy = n0 + 123
    d = np.linalg.norm(x[:n0] - x[copy], axis=1)
    assert d[groups[copy]] < np.median(d)


def test_group_means_are_each_groups_mean_row_under_dense_ids():
    groups = _groups(300)
    rows = np.random.default_rng(1).normal(size=(300, 3)).astype(np.float32)
    ids, means = group_means(rows, groups)
    assert means.shape == (len(np.unique(groups)), 3)
    for g in np.unique(groups)[:20]:
        members = groups == g
        assert len(set(ids[members])) == 1 and not (ids[~members] == ids[members][0]).any()
        np.testing.assert_allclose(means[ids[members][0]], rows[members].mean(axis=0), rtol=1e-5)


def test_group_labels_are_the_nearest_centroid_of_each_groups_mean_unit_row(tmp_path):
    x, _, groups = _diagonal_blobs()
    # One epoch from random weights: the points of a group do not agree yet.
    params = dict(n_clusters=2, hidden_units=(8,), schedule=Schedule(max_epochs=1), random_state=0,
                  verbose=0, init="random")
    net = SpectralNet(**params).fit(x, groups=groups)
    unit = net.embedding_ / np.linalg.norm(net.embedding_, axis=1, keepdims=True)
    expected = np.empty(len(x), np.int64)
    for g in np.unique(groups):
        mean = unit[groups == g].mean(axis=0)
        mean /= np.linalg.norm(mean)
        expected[groups == g] = np.linalg.norm(net.cluster_centers_ - mean, axis=1).argmin()
    np.testing.assert_array_equal(net.group_labels_, expected)
    for g in np.unique(groups):  # one cluster per group, whatever its points' own
        assert len(set(net.group_labels_[groups == g])) == 1
    assert (net.group_labels_ != net.labels_).any()
    # Kept by save and load; a fit without groups has none.
    net.save(tmp_path / "with")
    np.testing.assert_array_equal(SpectralNet.load(tmp_path / "with").group_labels_, expected)
    plain = SpectralNet(**params).fit(x)
    assert plain.group_labels_ is None
    plain.save(tmp_path / "without")
    assert SpectralNet.load(tmp_path / "without").group_labels_ is None
