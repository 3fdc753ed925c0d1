"""Views: transformed copies of a point that its class is known to survive.

A transformation the data are invariant to is supervision without labels: a
point and a transformed copy of it are a Siamese positive pair whatever
their class (``SiameseEmbedding(views=...)``). A view is any callable

    ``view(x, index, seed) -> x_view``

that maps rows ``x`` (m, d) of the input, their row numbers ``index`` (m,)
and an integer ``seed`` to transformed rows of the same shape, each row a
function of (its row of ``x``, its index, the seed) alone: the same
whichever other rows come with it, so that views of millions of rows can be
made a chunk at a time and made again (``row_uniforms`` draws such numbers,
and ``check_view_call`` checks a call's arguments). One ships here:
``Shift``, a translation by whole pixels with zero fill (MNIST: up to 2, in
each direction, as in Sabour, Frosst & Hinton 2017, "Dynamic Routing Between
Capsules").

``ViewRows`` is the views of a whole row source, generated when sliced, so
that an encoder maps them a chunk at a time as it maps the data.
"""

import math

import keras
import numpy as np
import tensorflow as tf
from sklearn.base import BaseEstimator, clone

from .checks import check_int
from .streaming import LazyRows

#: Seeds of a view lie in [0, SEED_LIMIT).
SEED_LIMIT = 2**24


def check_view_call(x, index, seed):
    """A view's arguments as (float32 rows (m, d), int64 row numbers (m,),
    int seed), or a ValueError naming what is wrong."""
    x = np.asarray(x, dtype=np.float32)
    index = np.asarray(index, dtype=np.int64)
    if x.ndim != 2 or index.shape != (len(x),):
        raise ValueError(f"a view takes rows x of shape (m, d) and their index of shape (m,), "
                         f"got x.shape={x.shape} and index.shape={index.shape}.")
    if (index < 0).any():
        raise ValueError(f"index must hold row numbers >= 0, got min(index)={index.min()}.")
    if not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
            and 0 <= seed < SEED_LIMIT):
        raise ValueError(f"seed must be an integer in [0, {SEED_LIMIT - 1}], got seed={seed!r}.")
    return x, index, int(seed)


def row_uniforms(index, seed, draws):
    """Uniforms in [0, 1), shape (len(index), draws), each a function of
    (index, seed, column) alone: SplitMix64's finaliser of a counter, so no
    generator is seeded per row."""
    mix = np.uint64(0x9E3779B97F4A7C15)
    counter = (np.asarray(index, np.uint64)[:, None] * np.uint64(draws)
               + np.arange(draws, dtype=np.uint64)[None, :])
    z = counter * mix + np.full(counter.shape, seed + 1, np.uint64) * np.uint64(0xD1B54A32D192ED03)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


class Shift(BaseEstimator):
    """Square images shifted by whole pixels, zeros shifted in (``translate``).

    Each row moves by (dr, dc), each drawn uniformly from the integers in
    ``[-max_shift, max_shift]`` from (its index, the seed).

    Parameters
    ----------
    max_shift : int, default=2
        The largest shift along each axis, in pixels (Sabour et al. 2017
        trained on MNIST shifted by up to 2 pixels in each direction).
    side : int or None, default=None
        Image side; None: the square root of the row width (784: 28).

    Examples
    --------
    >>> import numpy as np
    >>> from spectralnet_tf.views import Shift
    >>> x = np.zeros((1, 9), np.float32); x[0, 4] = 1  # a 3x3 image, its centre lit
    >>> float(Shift(max_shift=1)(x, np.array([0]), seed=0).sum())  # moved, not lost
    1.0
    """

    def __init__(self, max_shift=2, side=None):
        self.max_shift = max_shift
        self.side = side

    def __call__(self, x, index, seed):
        x, index, seed = check_view_call(x, index, seed)
        check_int("max_shift", self.max_shift, 0)
        side = self.side
        if side is None:
            side = math.isqrt(x.shape[1])
            if side * side != x.shape[1]:
                raise ValueError(f"Shift needs square images: rows of side**2 pixels, got "
                                 f"{x.shape[1]} columns; give side for other shapes.")
        check_int("side", side, 1)
        if side * side != x.shape[1]:
            raise ValueError(f"Shift(side={side}) needs rows of {side * side} pixels, got "
                             f"{x.shape[1]}.")
        s = int(self.max_shift)
        u = row_uniforms(index, seed, 2)
        offset = np.minimum(np.floor(u * (2 * s + 1)), 2 * s) - s  # whole pixels, (m, 2)
        return np.asarray(translate(tf.constant(x), tf.constant(offset, tf.float32),
                                    (side, side)))


def translate(batch, offset, image_shape):
    """Images stored as flat rows, each moved by its row of ``offset`` (n, 2)
    pixels (bilinear interpolation, zeros moved in; whole-pixel offsets move
    pixels exactly). A batch of shape (n, pixels, c) holds c images per row,
    all moved by the row's offset."""
    n = tf.shape(batch)[0]
    one, zero = tf.ones([n, 1]), tf.zeros([n, 1])
    # Projective transform rows [a0, a1, a2, b0, b1, b2, c0, c1]: a pure translation.
    transform = tf.concat([one, zero, offset[:, :1], zero, one, offset[:, 1:], zero, zero], axis=1)
    channels = 1 if batch.shape.rank == 2 else batch.shape[-1]
    images = tf.reshape(batch, [n, *image_shape, channels])
    moved = keras.ops.image.affine_transform(images, transform, interpolation="bilinear",
                                             fill_mode="constant", fill_value=0.0,
                                             data_format="channels_last")
    return tf.reshape(moved, tf.shape(batch))


def make_view(view):
    """A view: ``Shift()`` for "shift"; a copy of a view that is an
    estimator (``clone``), so that what a view keeps while making views does
    not stay on the parameter; any other callable as it is."""
    if isinstance(view, str) and view == "shift":
        return Shift()
    if isinstance(view, BaseEstimator) and callable(view):
        return clone(view)
    if callable(view):
        return view
    raise ValueError(f"views must be 'shift' or a callable view(x, index, seed), "
                     f"got views={view!r}.")


class ViewRows(LazyRows):
    """The views of every row of a row source, generated when sliced. With
    one seed, ``ViewRows(x, view, seed)[a:b]`` is ``view(x[a:b], index[a:b],
    seed)``, where ``index`` holds the rows' numbers (default
    ``arange(len(x))``; e.g. the rows of X that a ``streaming.Rows``
    selection of X holds). With a list of V seeds, row ``V i + v`` is row i's
    view under ``seeds[v]``: each row of the source is read once for all its
    views, which matters where reading a row costs more than viewing it (a
    generated source)."""

    def __init__(self, source, view, seeds, index=None):
        self.source = source
        self.view = view
        self.seeds = [seeds] if np.ndim(seeds) == 0 else list(seeds)
        self.index = np.arange(len(source), dtype=np.int64) if index is None else index

    @property
    def shape(self):
        return (len(self), *tuple(self.source.shape)[1:])

    @property
    def dtype(self):
        return np.dtype(np.float32)

    def __len__(self):
        return len(self.source) * len(self.seeds)

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(f"ViewRows supports slices only, got {type(key).__name__}.")
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise ValueError(f"ViewRows reads contiguous slices only, got step={step}.")
        stop = max(start, stop)
        seeds = self.seeds
        first, last = start // len(seeds), -(-stop // len(seeds))
        rows = np.asarray(self.source[first:last], dtype=np.float32)
        out = []
        for seed in seeds:
            made = np.asarray(self.view(rows, self.index[first:last], seed), dtype=np.float32)
            if made.shape != rows.shape:
                raise ValueError(f"a view must return rows of its input's shape {rows.shape}, "
                                 f"got {made.shape}.")
            out.append(made)
        out = np.stack(out, axis=1).reshape(-1, *rows.shape[1:])
        return out[start - first * len(seeds):stop - first * len(seeds)]


def view_seeds(seed, n_views):
    """The seeds of a fit's ``n_views`` views, from the fit's ``seed``."""
    return [int(s) for s in np.random.default_rng(seed).integers(0, SEED_LIMIT, size=n_views)]
