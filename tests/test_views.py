"""Views: transformed copies of a point as Siamese positives (``views``)."""

import numpy as np
import pytest

from spectralnet_tf import Schedule
from spectralnet_tf.siamese import SiameseEmbedding, make_pairs
from spectralnet_tf.streaming import LazyRows
from spectralnet_tf.views import Shift, ViewRows, make_view, row_uniforms, view_seeds

#: The side of the test images (MNIST's).
SIDE = 28


def digits(n, seed=0):
    """n random 28x28 'digits': a few lit blobs each, in [0, 1]."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, SIDE, SIDE), np.float32)
    for i in range(n):
        r, c = rng.integers(6, 22, size=2)
        x[i, r - 3:r + 3, c - 2:c + 2] = rng.uniform(0.5, 1.0)
    return x.reshape(n, -1)


def test_a_view_is_reproducible_from_index_and_seed_alone():
    view = Shift()
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


@pytest.mark.parametrize("call, message", [
    (lambda: Shift()(np.zeros((2, 10)), np.arange(2), 0),
     "Shift needs square images: rows of side\\*\\*2 pixels, got 10 columns"),
    (lambda: Shift(side=3)(np.zeros((2, 16)), np.arange(2), 0),
     r"Shift\(side=3\) needs rows of 9 pixels, got 16"),
    (lambda: Shift(max_shift=-1)(np.zeros((2, 16)), np.arange(2), 0),
     "max_shift must be an integer >= 0, got max_shift=-1"),
    (lambda: Shift()(np.zeros((2, 16)), np.arange(2), -1),
     r"seed must be an integer in \[0, 16777215\], got seed=-1"),
    (lambda: Shift()(np.zeros((2, 16)), np.arange(3), 0),
     r"got x.shape=\(2, 16\) and index.shape=\(3,\)"),
    (lambda: make_view("rotate"),
     r"views must be 'shift' or a callable view\(x, index, seed\), got views='rotate'"),
    (lambda: SiameseEmbedding(views="shift", n_views=0).check_params(),
     "n_views must be 'auto' or an integer >= 1, got n_views=0"),
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
                           schedule=Schedule(max_epochs=2, tol=0.0))
    rows = np.random.default_rng(0).permutation(300)[30:]
    coords = emb.view_coordinates(x, seed=0, encode=encoder, rows=rows)
    expected = np.asarray(encoder(mirror(x[rows], rows, 0)))
    for v in range(2):
        np.testing.assert_allclose(coords[v], expected, rtol=1e-5, atol=1e-6)
    net = SpectralNet(n_clusters=3, encoder=encoder, hidden_units=(16,),
                      schedule=Schedule(max_epochs=2), affinity_embedding=emb,
                      random_state=0).fit(x)
    assert net.siamese_history_["view_seconds"] > 0
    assert net.affinity_embedding_.resolved_n_views() == 2
    assert emb.get_params()["views"] is mirror and not hasattr(emb, "model_")  # a copy fitted


@pytest.mark.slow  # two estimator fits
def test_views_save_by_class_and_parameters_and_a_custom_one_is_refused(tmp_path):
    import json
    import os

    from spectralnet_tf import SpectralNet

    x = np.random.default_rng(0).uniform(size=(200, 16)).astype(np.float32)  # 4x4 images

    def fitted(views):
        emb = SiameseEmbedding(hidden_units=(8, 3), n_nbrs=1, views=views,
                               schedule=Schedule(max_epochs=1, tol=0.0))
        return SpectralNet(2, hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2),
                           affinity_embedding=emb, random_state=0).fit(x)

    path = fitted(Shift(max_shift=1)).save(str(tmp_path / "shift"))
    state = json.load(open(os.path.join(path, "estimator.json")))
    assert state["params"]["affinity_embedding"]["params"]["views"] == {
        "class": "Shift", "params": {"max_shift": 1, "side": None}}
    loaded = SpectralNet.load(path).affinity_embedding
    assert isinstance(loaded.views, Shift) and loaded.views.max_shift == 1
    with pytest.raises(ValueError, match="views callable of your own is not supported"):
        fitted(CountingView()).save(str(tmp_path / "custom"))
    assert not (tmp_path / "custom").exists()
