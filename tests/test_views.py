"""Views: transformed copies of a point as Siamese positives (``views``)."""

import json
import re
import os

import numpy as np
import pytest

from spectralnet_tf.infimnist import SIDE
from spectralnet_tf.siamese import SiameseEmbedding, make_pairs
from spectralnet_tf.streaming import LazyRows
from spectralnet_tf.views import (Deform, Redraw, Shift, ViewRows, make_view, row_uniforms,
                                  view_seeds)

needs_mnist = pytest.mark.skipif(
    not os.environ.get("SPECTRALNET_DATA_DIR"), reason="needs SPECTRALNET_DATA_DIR (mnist.npz)")


def digits(n, seed=0):
    """n random 28x28 'digits': a few lit blobs each, in [0, 1]."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, SIDE, SIDE), np.float32)
    for i in range(n):
        r, c = rng.integers(6, 22, size=2)
        x[i, r - 3:r + 3, c - 2:c + 2] = rng.uniform(0.5, 1.0)
    return x.reshape(n, -1)


@pytest.mark.parametrize("view", [Shift(), Deform()], ids=["shift", "deform"])
def test_a_view_is_reproducible_from_index_and_seed_alone(view):
    x = digits(40)
    index = np.arange(1000, 1040)
    whole = view(x, index, 7)
    assert not np.array_equal(whole, x)  # it transforms
    # Each row alone, and the rows in another order, give the same rows.
    order = np.random.default_rng(1).permutation(40)
    np.testing.assert_array_equal(view(x[order], index[order], 7), whole[order])
    np.testing.assert_array_equal(view(x[3:4], index[3:4], 7), whole[3:4])
    # Another seed, or another index, another transformation of the same row
    # (a shift is one of 25, so 1 row in 25 may draw the same one again).
    for other in (view(x, index, 8), view(x, index + 1, 7)):
        assert np.mean([not np.array_equal(a, b) for a, b in zip(other, whole)]) > 0.8


def test_shift_moves_each_image_by_whole_pixels_within_max_shift_uniformly():
    n, side = 2000, 9
    x = np.zeros((n, side * side), np.float32)
    x[:, 4 * side + 4] = 1.0  # the centre pixel lit
    out = Shift(max_shift=2)(x, np.arange(n), 0).reshape(n, side, side)
    assert (out.sum(axis=(1, 2)) == 1).all()  # nothing falls off, nothing blurs
    r, c = np.unravel_index(out.reshape(n, -1).argmax(axis=1), (side, side))
    shifts = list(zip(r - 4, c - 4))
    counts = {s: shifts.count(s) for s in set(shifts)}
    assert set(counts) == {(a, b) for a in range(-2, 3) for b in range(-2, 3)}
    assert min(counts.values()) > n / 25 * 0.6  # all 25 shifts, about equally often
    # Zero fill: a pixel at the border leaves the image for some shifts.
    edge = np.zeros((n, side * side), np.float32)
    edge[:, 0] = 1.0
    assert 0 < (Shift(max_shift=2)(edge, np.arange(n), 0).sum(axis=1) == 0).mean() < 1


def test_row_uniforms_are_uniform_and_depend_on_index_seed_and_column():
    u = row_uniforms(np.arange(100000), 3, 2)
    assert u.shape == (100000, 2) and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(np.corrcoef(u[:, 0], u[:, 1])[0, 1]) < 0.01
    assert abs(np.corrcoef(u[:, 0], row_uniforms(np.arange(100000), 4, 2)[:, 0])[0, 1]) < 0.01


def test_deform_follows_the_infinite_mnist_law_of_the_source_digit():
    images = digits(3)
    out = Deform()(images, np.array([0, 1, 2]), 5)
    assert out.shape == images.shape and out.dtype == np.float32
    assert 0 <= out.min() and out.max() <= 1
    # A deformation moves mass a little: the view stays closer to its source
    # than to the other digits.
    dist = ((out[:, None] - images[None]) ** 2).sum(-1)
    assert (dist.argmin(axis=1) == np.arange(3)).all()


def test_view_positives_pair_each_point_with_a_view_of_itself():
    x = digits(300)
    emb = SiameseEmbedding(n_nbrs=2, views="shift")
    rows = np.random.default_rng(0).permutation(300)[:250]  # a training split, unsorted
    coords = emb.view_coordinates(x, seed=11, rows=rows)
    assert coords.shape == (2, 250, SIDE * SIDE)  # n_views "auto": as many as n_nbrs
    for v, seed in enumerate(view_seeds(11, 2)):
        np.testing.assert_array_equal(coords[v], Shift()(x[rows], rows, seed))
    # A lazy source gives the same views, a chunk at a time.
    class Lazy(LazyRows):  # x, read a slice at a time
        shape, dtype = x.shape, x.dtype

        def __len__(self):
            return len(x)

        def __getitem__(self, key):
            return x[key]
    np.testing.assert_array_equal(emb.view_coordinates(Lazy(), seed=11, rows=rows), coords)
    # make_pairs: each view positive joins point i to a row holding a view of i.
    z = x[rows]
    first, second, positive = make_pairs(z, 2, "exact", seed=0, n_views=2)
    every = np.concatenate([z, coords.reshape(-1, z.shape[1])])
    is_view = (positive == 1) & (second >= len(z))
    assert is_view.sum() == 2 * len(z)
    for i, j in zip(first[is_view], second[is_view]):
        v = (j - len(z)) // len(z)
        assert j - len(z) - v * len(z) == i
        np.testing.assert_array_equal(every[j], coords[v, i])
    assert (positive == 0).sum() == (positive == 1).sum()  # one negative per positive
    assert (first[positive == 0] != second[positive == 0]).all()
    assert (second[positive == 0] < len(z)).all()  # negatives are other points


class CountingView:
    """A view that counts the rows it transforms."""

    def __init__(self):
        self.rows = 0

    def __call__(self, x, index, seed):
        self.rows += len(x)
        return x + 1.0


class NoSearch:
    def kneighbors(self, x, n_neighbors):
        raise AssertionError("views alone need no neighbour search")


def test_pair_building_with_views_alone_costs_the_same_per_point_at_two_sizes():
    work = {}
    for n in (2000, 8000):
        x = np.random.default_rng(n).normal(size=(n, 4)).astype(np.float32)
        view = CountingView()
        emb = SiameseEmbedding(n_nbrs=0, views=view, n_views=3, neighbors=NoSearch())
        coords = emb.view_coordinates(x, seed=0)
        first, second, positive = make_pairs(x, 0, NoSearch(), seed=0, n_views=3)
        work[n] = (view.rows / n, len(first) / n, coords.size / (n * 4))
        np.testing.assert_array_equal(coords[0], x + 1.0)
    assert work[2000] == work[8000] == (3.0, 6.0, 3.0)


def test_view_rows_are_the_view_of_each_slice():
    x = digits(50)
    rows = ViewRows(x, Shift(), 4)
    np.testing.assert_array_equal(
        np.concatenate([rows[0:17], rows[17:50]]), Shift()(x, np.arange(50), 4))
    with pytest.raises(TypeError, match="slices only"):
        rows[3]


def test_view_rows_of_several_seeds_read_each_source_row_once():
    x = digits(50)

    class Counting(LazyRows):
        read = 0
        shape, dtype = x.shape, np.dtype(np.float32)

        def __len__(self):
            return len(x)

        def __getitem__(self, key):
            Counting.read += len(x[key])
            return x[key]

    rows = ViewRows(Counting(), Shift(), [4, 9, 2], index=np.arange(50) + 100)
    assert len(rows) == 150 and rows.shape == (150, x.shape[1])
    # Row 3 i + v is row i's view under the v-th seed, whatever the slices.
    expected = np.stack([Shift()(x, np.arange(50) + 100, s) for s in (4, 9, 2)], axis=1)
    np.testing.assert_array_equal(rows[0:150], expected.reshape(150, -1))
    np.testing.assert_array_equal(np.concatenate([rows[0:7], rows[7:61], rows[61:150]]),
                                  expected.reshape(150, -1))
    Counting.read = 0
    rows[0:150]
    assert Counting.read == 50  # each row once, for all three views


def test_deforms_normals_are_standard_normal_and_its_uniforms_kept():
    from spectralnet_tf.views import _normal_then_uniform
    u = row_uniforms(np.arange(100000), 2, 10)
    z = _normal_then_uniform(u, 8)
    assert z.dtype == np.float32 and np.isfinite(z).all()
    normal = z[:, :8]
    assert abs(normal.mean()) < 0.005 and abs(normal.var() - 1) < 0.01
    assert abs(np.mean(normal ** 4) - 3) < 0.05  # a normal's fourth moment
    assert abs(np.corrcoef(normal[:, 0], normal[:, 4])[0, 1]) < 0.01  # cos and sin of a pair
    np.testing.assert_array_equal(z[:, 8:], u[:, 8:].astype(np.float32))


def test_deform_draws_no_block_stream_and_keeps_the_data_sets_law(monkeypatch):
    from spectralnet_tf import infimnist
    x = digits(4000)
    same_law = infimnist.deform_at(x, infimnist.N_ORIGINAL + np.arange(4000))

    def refused(*args):
        raise AssertionError("a view drew a block of the data set's streams")

    # Each row's draws are its own: none costs a block's, whatever its index.
    monkeypatch.setattr(infimnist, "_block_draws", refused)
    out = Deform()(x, np.arange(4000) * 7919, 3)
    np.testing.assert_array_equal(Deform()(x[5:6], np.array([5 * 7919]), 3), out[5:6])
    # The same law as the data set's deformed digits: as far from the source
    # on average (squared pixel distance), and the ink kept.
    moved, law = ((out - x) ** 2).sum(1).mean(), ((same_law - x) ** 2).sum(1).mean()
    assert abs(moved / law - 1) < 0.03
    assert abs(out.sum(1).mean() / same_law.sum(1).mean() - 1) < 0.01


@needs_mnist
def test_redraw_views_are_the_law_drawn_afresh_on_each_rows_source():
    from spectralnet_tf import infimnist
    from spectralnet_tf.datasets import infimnist as load

    x, _ = load(n=72_000)
    index = np.arange(70_000, 72_000)  # deformations of training digits 0..1,999
    rows, sources = x[70_000:], x.images[infimnist.source_index(index)]
    views = Redraw()(rows, index, 3)
    # Each view is made from its row's source, by Deform's draws for (row, seed):
    # reproducible from (index, seed) alone, whatever rows come with it.
    np.testing.assert_array_equal(views, Deform()(sources, index, 3))
    np.testing.assert_array_equal(Redraw()(rows[7:8], index[7:8], 3), views[7:8])
    # So a view is as far from its source as the data set's own deformations
    # are (squared pixel distance), where Deform's view of a deformed digit,
    # deformed twice, lies farther.
    def dist(a):
        return ((a - sources) ** 2).sum(1).mean()
    assert abs(dist(views) / dist(rows) - 1) < 0.05
    assert dist(Deform()(rows, index, 3)) > 1.1 * dist(rows)
    # MNIST's own digits are their own sources: there the two views agree.
    np.testing.assert_array_equal(Redraw()(x[:5], np.arange(5), 3),
                                  Deform()(x[:5], np.arange(5), 3))
    with pytest.raises(ValueError, match="Redraw needs infinite MNIST's rows numbered from its "
                                         "index 0: .* the row with index=0 is not"):
        Redraw()(x[1:3], np.arange(2), 3)  # digits 1 and 2 numbered as 0 and 1
    # A Redraw object given as views is copied, so the digits it reads stay off the parameter.
    given = Redraw()
    made = make_view(given)
    made(x[:2], np.arange(2), 0)
    assert made is not given and made.get_params() == given.get_params()
    assert getattr(given, "_sources", None) is None
    with pytest.raises(ValueError, match="Redraw warps 28x28 digits: rows of 784 pixels, got 64"):
        Redraw()(np.zeros((2, 64)), np.arange(2), 0)


def test_redraw_saves_as_a_part_by_class_and_parameters():
    from spectralnet_tf.export import part_from_json, part_to_json

    saved = part_to_json(Redraw(data_dir="/data"))
    assert saved == {"class": "Redraw", "params": {"data_dir": "/data"}}
    loaded = part_from_json(json.loads(json.dumps(saved)))
    assert isinstance(loaded, Redraw) and loaded.data_dir == "/data"


@pytest.mark.parametrize("call, message", [
    (lambda: Shift()(np.zeros((2, 10)), np.arange(2), 0),
     "Shift needs square images: rows of side\\*\\*2 pixels, got 10 columns"),
    (lambda: Shift(side=3)(np.zeros((2, 16)), np.arange(2), 0),
     r"Shift\(side=3\) needs rows of 9 pixels, got 16"),
    (lambda: Shift(max_shift=-1)(np.zeros((2, 16)), np.arange(2), 0),
     "max_shift must be an integer >= 0, got max_shift=-1"),
    (lambda: Deform()(np.zeros((2, 64)), np.arange(2), 0),
     "Deform warps 28x28 digits: rows of 784 pixels, got 64"),
    (lambda: Shift()(np.zeros((2, 16)), np.arange(2), -1),
     r"seed must be an integer in \[0, 16777215\], got seed=-1"),
    (lambda: Shift()(np.zeros((2, 16)), np.arange(3), 0),
     r"got x.shape=\(2, 16\) and index.shape=\(3,\)"),
    (lambda: make_view("rotate"),
     r"views must be one of \('shift', 'deform', 'redraw'\) or a callable "
     r"view\(x, index, seed\), "
     r"got views='rotate'"),
    (lambda: SiameseEmbedding(views="shift", n_views=0).check_params(),
     "n_views must be an integer >= 1, got n_views=0"),
    (lambda: SiameseEmbedding(n_nbrs=0).check_params(),
     "n_nbrs must be an integer >= 1, got n_nbrs=0"),
    (lambda: make_pairs(np.zeros((10, 2)), 0),
     r"n_nbrs must be in \[1, n_samples - 2\] = \[1, 8\]"),
])
def test_bad_views_name_the_argument_and_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def mirror(x, index, seed):
    """A user's view: each 28x28 image mirrored left to right."""
    return x.reshape(len(x), SIDE, SIDE)[:, :, ::-1].reshape(len(x), -1)


@pytest.mark.slow  # an estimator fit
def test_views_go_through_the_encoder_in_a_fit():
    import keras

    from spectralnet_tf import SpectralNet

    x = digits(300)
    encoder = keras.Sequential([keras.Input((SIDE * SIDE,)), keras.layers.Dense(
        6, kernel_initializer=keras.initializers.GlorotUniform(seed=0))])
    emb = SiameseEmbedding(hidden_units=(16, 4), n_nbrs=0, views=mirror, n_views=2,
                           max_epochs=2)
    rows = np.random.default_rng(0).permutation(300)[30:]
    coords = emb.view_coordinates(x, seed=0, encode=encoder, rows=rows)
    expected = np.asarray(encoder(mirror(x[rows], rows, 0)))
    for v in range(2):
        np.testing.assert_allclose(coords[v], expected, rtol=1e-5, atol=1e-6)
    net = SpectralNet(n_clusters=3, encoder=encoder, hidden_units=(16,), max_epochs=2,
                      affinity_embedding=emb, random_state=0).fit(x)
    assert net.siamese_history_["view_seconds"] > 0
    assert net.affinity_embedding_.resolved_n_views() == 2
    assert emb.get_params()["views"] is mirror and not hasattr(emb, "model_")  # a copy fitted


@pytest.mark.slow  # two estimator fits
def test_views_save_by_class_and_parameters_and_a_custom_one_is_refused(tmp_path):
    import json
    import os

    from spectralnet_tf import SpectralNet

    x = np.random.default_rng(0).uniform(size=(200, 16)).astype(np.float32)  # 4x4 images

    def fitted(views, graph_views=0):
        emb = SiameseEmbedding(hidden_units=(8, 3), n_nbrs=1, views=views, max_epochs=1,
                               graph_views=graph_views)
        return SpectralNet(2, hidden_units=(8,), max_epochs=1, steps_per_epoch=2,
                           affinity_embedding=emb, random_state=0).fit(x)

    path = fitted(Shift(max_shift=1), graph_views=1).save(str(tmp_path / "shift"))
    state = json.load(open(os.path.join(path, "estimator.json")))
    assert state["params"]["affinity_embedding"]["params"]["views"] == {
        "class": "Shift", "params": {"max_shift": 1, "side": None}}
    loaded = SpectralNet.load(path).affinity_embedding
    assert isinstance(loaded.views, Shift) and loaded.views.max_shift == 1
    assert loaded.graph_views == 1
    with pytest.raises(ValueError, match="views callable of your own is not supported"):
        fitted(CountingView()).save(str(tmp_path / "custom"))
    assert not (tmp_path / "custom").exists()


def jitter(x, index, seed):
    """A view of any rows: each moved by a small offset drawn from (index, seed)."""
    return x + 4 * (row_uniforms(index, seed, x.shape[1]) - 0.5).astype(np.float32)


@pytest.fixture(scope="module")
def blobs_net():
    from sklearn.datasets import make_blobs

    from spectralnet_tf import SpectralNet

    x, _ = make_blobs(400, n_features=4, centers=3, cluster_std=2.5, random_state=0)
    x = x.astype(np.float32)
    net = SpectralNet(3, hidden_units=(16,), max_epochs=2, affinity_embedding=None,
                      random_state=0, verbose=0).fit(x)
    return net, x


@pytest.mark.slow  # an estimator fit
def test_predict_with_views_assigns_the_mean_unit_row_of_the_point_and_its_views(
        blobs_net, monkeypatch):
    from spectralnet_tf import estimator

    net, x = blobs_net
    index, seed = np.arange(len(x)) + 500, 3
    rows = [net.transform(x)] + [net.transform(jitter(x, index, s)) for s in view_seeds(seed, 4)]
    unit = [r / np.linalg.norm(r, axis=1, keepdims=True) for r in rows]
    mean = np.mean(unit, axis=0)
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    distances = np.linalg.norm(mean[:, None] - net.cluster_centers_[None], axis=2)
    expected = distances.argmin(axis=1)
    got = net.predict(x, views=jitter, n_views=4, index=index, seed=seed)
    assert (got != net.predict(x)).any()  # the views move some points across
    np.testing.assert_array_equal(got, expected)
    # In chunks of a few rows, the same labels.
    monkeypatch.setattr(estimator, "VIEW_CHUNK", 37)
    np.testing.assert_array_equal(net.predict(x, views=jitter, n_views=4, index=index,
                                              seed=seed), expected)
    # A view that leaves the rows as they are: the point alone.
    same = net.predict(x, views=lambda rows, index, seed: rows, n_views=3)
    np.testing.assert_array_equal(same, net.labels_)


@pytest.mark.slow  # an estimator fit
def test_predict_with_views_reads_a_row_source_or_a_dataset_as_the_array(
        blobs_net, tmp_path, monkeypatch):
    import h5py
    import tensorflow as tf

    from spectralnet_tf import estimator

    net, x = blobs_net
    monkeypatch.setattr(estimator, "VIEW_CHUNK", 37)  # several chunks of the source
    kwargs = dict(views=jitter, n_views=3, index=np.arange(len(x)) + 7, seed=2)
    expected = net.predict(x, **kwargs)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        np.testing.assert_array_equal(net.predict(f["x"], **kwargs), expected)
    batched = tf.data.Dataset.from_tensor_slices(x).batch(50)
    np.testing.assert_array_equal(net.predict(batched, **kwargs), expected)


@pytest.mark.parametrize("kwargs, message", [
    (dict(views=jitter, n_views=0), "n_views must be an integer >= 1, got n_views=0"),
    (dict(views=jitter, seed=-1), "seed must be an integer >= 0, got seed=-1"),
    (dict(views="rotate"), r"views must be one of .* got views='rotate'"),
    (dict(views=jitter, index=np.arange(3)),
     r"index must hold one integer row number per row of X, shape \(400,\), got "
     r"index.shape=\(3,\) and index.dtype=int64"),
    (dict(views=jitter, index=np.zeros(400)),
     r"got index.shape=\(400,\) and index.dtype=float64"),
])
@pytest.mark.slow  # an estimator fit
def test_predict_refuses_bad_views_arguments_by_name(blobs_net, kwargs, message):
    net, x = blobs_net
    with pytest.raises(ValueError, match=message):
        net.predict(x, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(n_views=3), r"n_views goes with views, got n_views=3 and views=None\."),
    (dict(index=[0, 1]), r"index goes with views, got index=\[0, 1\] and views=None\."),
    (dict(seed=4), r"seed goes with views, got seed=4 and views=None\."),
])
def test_predict_refuses_view_settings_without_views(kwargs, message):
    from spectralnet_tf import SpectralNet

    with pytest.raises(ValueError, match=message):
        SpectralNet(2).predict(np.zeros((2, 4)), **kwargs)


def test_predict_with_views_before_fit_is_not_fitted():
    from sklearn.exceptions import NotFittedError

    from spectralnet_tf import SpectralNet

    with pytest.raises(NotFittedError):
        SpectralNet(2).predict(np.zeros((2, 4)), views=jitter, n_views=0)


class _Stop(Exception):
    """Raised by a spy to end a fit once it has seen what it checks."""


def _spy_on_fit(monkeypatch):
    """What SpectralNet.fit hands the Siamese net (its points, views and seed)
    and F_theta's training (its rows, groups, labels, steps, the hold-out's
    size), in the dict returned; the fit ends with _Stop before F_theta trains."""
    from spectralnet_tf import estimator, siamese

    seen = {}
    real_fit = siamese.SiameseEmbedding.fit

    def siamese_spy(self, z, *args, view_coords=None, seed=0, **kwargs):
        seen.update(siamese_z=np.array(z), view_coords=np.array(view_coords), seed=seed)
        return real_fit(self, z, *args, view_coords=view_coords, seed=seed, **kwargs)

    def spectral_spy(model, body, affinity, x_train, x_val, *args, groups_train=None,
                     y_train=None, y_val=None, steps_per_epoch=None, **kwargs):
        seen.update(z=np.array(x_train), groups=groups_train, y=y_train, steps=steps_per_epoch,
                    n_val=(len(x_val), len(y_val)))
        raise _Stop

    monkeypatch.setattr(siamese.SiameseEmbedding, "fit", siamese_spy)
    monkeypatch.setattr(estimator, "train_spectralnet", spectral_spy)
    return seen


def _rows_of(x, z):
    """The row number in x of each row of z."""
    return np.array([int(np.flatnonzero(np.all(x == row, axis=1))[0]) for row in z])


@pytest.mark.parametrize("user_groups", [False, True])
def test_graph_views_join_the_siamese_nets_first_views_to_their_points(monkeypatch,
                                                                         user_groups):
    """F_theta's training set with graph_views: the training points, then each
    of their views in turn (those the Siamese net paired first), every view
    in one group with its point and with its point's label; the validation
    hold-out keeps the points alone."""
    from spectralnet_tf import SpectralNet

    x = np.random.default_rng(0).normal(size=(300, 4)).astype(np.float32)
    user = np.arange(300) // 3 + 1000  # the user's groups: threes of rows
    known = np.where(np.arange(300) % 5 == 0, np.arange(300) % 3, -1)  # a fifth labelled
    seen = _spy_on_fit(monkeypatch)
    emb = SiameseEmbedding(hidden_units=(8, 3), n_nbrs=1, views=jitter, n_views=3, max_epochs=1,
                           graph_views=2)
    net = SpectralNet(3, hidden_units=(8,), batch_size=12, affinity_embedding=emb,
                      random_state=0)
    with pytest.raises(_Stop):
        net.fit(x, groups=user if user_groups else None,
                partial_labels=known if user_groups else None)
    m = len(seen["siamese_z"])  # the training points: the Siamese net's, all of them
    assert m == 270 and seen["z"].shape == (3 * m, 4)
    np.testing.assert_array_equal(seen["z"][:m], seen["siamese_z"])
    for v in range(2):  # view v of every point: the Siamese net's view v, as it was
        np.testing.assert_array_equal(seen["z"][m * (v + 1):m * (v + 2)], seen["view_coords"][v])
    rows = _rows_of(x, seen["z"][:m])
    ids = user[rows] if user_groups else np.asarray(rows)
    np.testing.assert_array_equal(seen["groups"], np.tile(ids, 3))
    labels = known[rows] if user_groups else np.full(m, -1)
    np.testing.assert_array_equal(seen["y"], np.tile(labels, 3))  # a view has its point's
    assert seen["n_val"] == (30, 30)
    assert seen["steps"] == net.plan(300, 4).steps_per_epoch == 3 * m // 12 > 50  # not the least
    assert net.set_params(steps_per_epoch=7).plan(300, 4).steps_per_epoch == 7  # as given


@pytest.mark.parametrize("n_views, graph_views, max_samples, passes", [
    (2, 3, None, 1), (3, 2, None, 1), (2, 3, 150, 1), (3, 2, 150, 2)])
def test_both_nets_views_are_made_once_as_each_would_alone(monkeypatch, n_views, graph_views,
                                                           max_samples, passes):
    """With graph_views the views are made in one pass for both nets, as
    many as either takes (two passes only where the Siamese net draws fewer
    rows and takes more views, which one pass would make for every row): the
    Siamese net gets the first n_views on the rows it draws, F_theta the
    first graph_views of every training row, each equal to the view made on
    its own from (row, seed)."""
    from spectralnet_tf import SpectralNet, siamese

    x = np.random.default_rng(1).normal(size=(300, 4)).astype(np.float32)
    seen = _spy_on_fit(monkeypatch)
    real_views = siamese.SiameseEmbedding.view_coordinates
    made = []

    def views_spy(self, *args, **kwargs):
        made.append(kwargs.get("n_views"))
        return real_views(self, *args, **kwargs)

    monkeypatch.setattr(siamese.SiameseEmbedding, "view_coordinates", views_spy)
    emb = SiameseEmbedding(hidden_units=(8, 3), n_nbrs=1, views=jitter, n_views=n_views,
                           max_epochs=1, max_samples=max_samples, graph_views=graph_views)
    with pytest.raises(_Stop):
        SpectralNet(3, hidden_units=(8,), batch_size=12, affinity_embedding=emb,
                    random_state=0).fit(x)
    assert len(made) == passes
    if passes == 1:
        assert made == [max(n_views, graph_views)]

    m = 270
    train_rows = _rows_of(x, seen["z"][:m])
    alone = emb.view_coordinates(x, seen["seed"], rows=train_rows, n_views=graph_views)
    for v in range(graph_views):
        np.testing.assert_array_equal(seen["z"][m * (v + 1):m * (v + 2)], alone[v])
    siamese_rows = _rows_of(x, seen["siamese_z"])
    assert len(siamese_rows) == (max_samples or m) and set(siamese_rows) <= set(train_rows)
    np.testing.assert_array_equal(seen["view_coords"],
                                  emb.view_coordinates(x, seen["seed"], rows=siamese_rows))
    assert seen["view_coords"].shape == (n_views, max_samples or m, 4)


@pytest.mark.parametrize("params, message", [
    (dict(graph_views=-1), "graph_views must be an integer >= 0, got graph_views=-1."),
    (dict(graph_views=1.5), "graph_views must be an integer >= 0, got graph_views=1.5."),
    (dict(graph_views=2), "graph_views=2 trains SpectralNet on the views; it needs views, "
                          "got views=None.")])
def test_bad_graph_views_name_the_argument_and_value(params, message):
    from spectralnet_tf import SpectralNet

    with pytest.raises(ValueError, match=re.escape(message)):
        SpectralNet(2, affinity_embedding=SiameseEmbedding(**params)).plan(100, 4)
