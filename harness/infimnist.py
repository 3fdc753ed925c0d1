"""Infinite MNIST: MNIST's 70,000 digits, then as many deformed
training digits as asked for, generated on demand and never held whole.

Index ``i < 70,000`` is MNIST digit i (keras order: training, then test).
Index ``i >= 70,000`` is training digit ``(i - 70,000) mod 60,000``, with its
label, deformed by, in this order of the inverse map (output pixel p is read
from the source at ``c + A (p - c) + t + d(p)``, c the image centre):

- ``d``: an elastic displacement field (Simard et al. 2003: smoothed random
  displacements). Here a Gaussian random field, the same in law as white
  noise smoothed by a Gaussian of ``ELASTIC_SIGMA`` px, of standard deviation
  ``ELASTIC_STD`` px per pixel and axis, built from white noise on a coarse
  grid (``NODE_SPACING`` px), so it costs two small matrix products per digit;
- ``A``: a small affine map, a rotation within ``MAX_ROTATION_DEG`` of a
  scaling within ``1 ± MAX_SCALE`` per axis and a shear within ``MAX_SHEAR``;
- ``t``: a translation of ``TRANSLATION_PX`` px (uniform in that range) in a
  uniformly random direction;

with bilinear interpolation and zeros outside the image.

The random numbers of index i come from numpy's default generator seeded
with ``(SEED, i // BLOCK)``, the block of ``BLOCK`` indices that holds i, at
row ``i % BLOCK``: a digit is the same whichever slice reads it (for a given
numpy version; numpy may change its normal sampler between versions). The original
InfiMNIST (Loosli, Canu & Bottou 2007) deforms along tangent vectors from
files that cannot be had here; this is our deformation, not theirs.
"""

import numpy as np

from sklearn.base import BaseEstimator

from spectralnet_tf.streaming import LazyRows, check_indices
from spectralnet_tf.views import check_view_call, row_uniforms

#: MNIST's digits (training, then test) come first, as they are.
N_ORIGINAL = 70000
#: Deformations cycle over the training digits only.
N_BASE = 60000
SIDE = 28
#: Key of the random streams, and indices per stream.
SEED = 20071  # fixed: the data set is one data set, like mnist8m
BLOCK = 4096
ELASTIC_SIGMA = 4.0
ELASTIC_STD = 1.0
NODE_SPACING = 4.0
MAX_ROTATION_DEG = 10.0
MAX_SCALE = 0.1
MAX_SHEAR = 0.1
TRANSLATION_PX = (1.0, 2.0)


def field_basis(side=SIDE, sigma=ELASTIC_SIGMA, spacing=NODE_SPACING):
    """(side, nodes) Gaussian weights from coarse grid nodes (spanning the
    image plus 2 sigma each side) to pixels, each row of unit norm: with iid
    standard normal ``u`` on the nodes, ``G u G^T`` has unit variance at every
    pixel and correlation ``exp(-r^2 / (4 sigma^2))`` at distance r."""
    nodes = np.arange(-2 * sigma, side - 1 + 2 * sigma + spacing / 2, spacing)
    g = np.exp(-((np.arange(side)[:, None] - nodes[None, :]) ** 2) / (2 * sigma**2))
    return (g / np.linalg.norm(g, axis=1, keepdims=True)).astype(np.float32)


class InfiMNIST(LazyRows):
    """Rows ``start .. start + n`` of infinite MNIST, float32 (n, 784) in
    [0, 1], generated a slice at a time (``x[a:b]``).

    Parameters
    ----------
    images : array of shape (70000, 784)
        MNIST's digits, training then test (``datasets.mnist``).
    base_labels : array of shape (70000,)
    n : int
        Number of rows.
    start : int, default=0
        Index of the first row: ``start >= n`` of a training set gives
        fresh digits for out-of-sample tests.
    """

    def __init__(self, images, base_labels, n, start=0):
        images = np.asarray(images, dtype=np.float32)
        if images.shape != (N_ORIGINAL, SIDE * SIDE):
            raise ValueError(f"images must have shape ({N_ORIGINAL}, {SIDE * SIDE}), got "
                             f"images.shape={images.shape}.")
        for name, value in (("n", n), ("start", start)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {name}={value!r}.")
        self.images = images
        self.base_labels = np.asarray(base_labels, dtype=np.int64)
        self.n = int(n)
        self.start = int(start)

    @property
    def shape(self):
        return (self.n, SIDE * SIDE)

    @property
    def dtype(self):
        return np.dtype(np.float32)

    def __len__(self):
        return self.n

    @property
    def labels(self):
        """The label of every row (int64, n)."""
        return self.base_labels[self.sources]

    @property
    def sources(self):
        """The MNIST digit each row shows, itself or deformed (int64, n):
        rows with one source are views of one digit (``fit``'s ``groups``)."""
        return source_index(np.arange(self.start, self.start + self.n))

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(f"InfiMNIST supports slices only, got {type(key).__name__}.")
        first, stop, step = key.indices(self.n)
        if step != 1:
            raise ValueError(f"InfiMNIST reads contiguous slices only, got step={step}.")
        return self.digits(np.arange(self.start + first, self.start + max(first, stop)))

    def take_rows(self, indices):
        """The rows ``indices`` (strictly increasing): only those digits are
        made and warped. Their deformations' random draws are still made a
        block of ``BLOCK`` rows at a time, every block the selection touches."""
        return self.digits(self.start + check_indices(indices, self.n))

    def digits(self, index):
        """Digits of the increasing indices ``index`` (float32, (len, 784))."""
        index = np.asarray(index, dtype=np.int64)
        out = self.images[source_index(index)]
        deformed = index >= N_ORIGINAL
        if deformed.any():
            out[deformed] = deform_at(out[deformed], index[deformed])
        return out


def deformation(index, basis):
    """The deformation of each index >= N_ORIGINAL (module doc), drawn from
    its block's stream: ``(a, t, field)``, the affine map (m, 2, 2) and the
    translation (m, 2) on (row, col), and the displacement field (m, 2, 784)."""
    j = index - N_ORIGINAL
    nodes = basis.shape[1]
    draws = np.concatenate([_block_draws(b, nodes)[j[j // BLOCK == b] % BLOCK]
                            for b in np.unique(j // BLOCK)])
    return deformation_from_draws(draws, basis)


#: Uniforms one deformation takes (after its normals): rotation, two scales,
#: shear, translation length and direction.
UNIFORMS_PER_DIGIT = 6


def draws_per_digit(basis):
    """Random numbers one deformation takes: 2 nodes² normals, then
    ``UNIFORMS_PER_DIGIT`` uniforms."""
    return 2 * basis.shape[1] ** 2 + UNIFORMS_PER_DIGIT


def deformation_from_draws(draws, basis):
    """The deformations (``deformation``'s ``(a, t, field)``) of the law made
    from given random numbers ``draws`` (m, ``draws_per_digit(basis)``): per
    row, 2 nodes² standard normals, then the uniforms in [0, 1)."""
    nodes = basis.shape[1]
    m = len(draws)
    noise = draws[:, :2 * nodes * nodes].reshape(m, 2, nodes, nodes)
    field = ELASTIC_STD * (basis @ noise @ basis.T)  # (m, 2, side, side)
    u = draws[:, 2 * nodes * nodes:]
    angle = np.deg2rad(MAX_ROTATION_DEG) * (2 * u[:, 0] - 1)
    scale_r, scale_c = (1 + MAX_SCALE * (2 * u[:, i] - 1) for i in (1, 2))
    shear = MAX_SHEAR * (2 * u[:, 3] - 1)
    length = TRANSLATION_PX[0] + (TRANSLATION_PX[1] - TRANSLATION_PX[0]) * u[:, 4]
    direction = 2 * np.pi * u[:, 5]
    cos, sin = np.cos(angle), np.sin(angle)
    # A = R(angle) [[scale_r, shear], [0, scale_c]].
    a = np.stack([cos * scale_r, cos * shear - sin * scale_c,
                  sin * scale_r, sin * shear + cos * scale_c], -1).reshape(m, 2, 2)
    t = np.stack([length * np.sin(direction), length * np.cos(direction)], -1)
    return a, t, field.reshape(m, 2, -1)


def warp(images, deform):
    """``images`` (m, 784) with output pixel p read at ``c + a (p - c) + t +
    field[:, :, p]`` (``deform = (a, t, field)``), c the image centre."""
    a, t, field = deform
    centre = (SIDE - 1) / 2
    grid = np.stack(np.meshgrid(np.arange(SIDE), np.arange(SIDE), indexing="ij"), -1)
    p = (grid.reshape(-1, 2) - centre).astype(np.float32)  # (784, 2): row, col
    src = (p @ np.swapaxes(a, 1, 2)).transpose(0, 2, 1)  # (m, 2, 784)
    src += centre + t[:, :, None] + field
    return bilinear(images, src[:, 0], src[:, 1])


#: Index of the first deformation ``redeform`` borrows: far beyond any digit a
#: data set of this module reads, so the borrowed fields are not its digits';
#: at the start of a block, so a chunk of ``BLOCK`` draws from one stream.
REDEFORM_START = N_ORIGINAL + 2**40
#: Indices ``redeform`` keeps apart for each (seed, epoch): up to this many images.
REDEFORM_STRIDE = 2**24
#: ``redeform``'s epochs and seeds lie in [0, REDEFORM_KEYS).
REDEFORM_KEYS = 2**16


def redeform(images, epoch, seed=0):
    """``images`` (m, 784) each warped by a deformation of this data set's law
    (``deformation``): row j by that of index ``REDEFORM_START + (seed *
    REDEFORM_KEYS + epoch) * REDEFORM_STRIDE + j``, so every (seed, epoch) draws
    new ones, reproducibly (an autoencoder's deformation denoising; epochs
    count from 0). A chunk of ``BLOCK`` rows at a time: the warp works on
    about 10 floats per pixel."""
    images = np.asarray(images, dtype=np.float32)
    if images.ndim != 2 or images.shape[1] != SIDE * SIDE:
        raise ValueError(f"images must have shape (m, {SIDE * SIDE}), got "
                         f"images.shape={images.shape}.")
    for name, value in (("epoch", epoch), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value < REDEFORM_KEYS:
            raise ValueError(f"{name} must be an integer in [0, {REDEFORM_KEYS - 1}], got "
                             f"{name}={value!r}.")
    m = len(images)
    if m > REDEFORM_STRIDE:
        raise ValueError(f"redeform takes up to {REDEFORM_STRIDE:,} images, got {m:,}.")
    first = REDEFORM_START + (int(seed) * REDEFORM_KEYS + int(epoch)) * REDEFORM_STRIDE
    return deform_at(images, first + np.arange(m, dtype=np.int64))


def deform_at(images, index):
    """``images`` (m, 784), row j warped by the deformation of index
    ``index[j]`` (>= N_ORIGINAL; ``deformation``): the same whatever rows come
    with it. Sorted by index, so that contiguous indices draw each block's
    stream once."""
    index = np.asarray(index, dtype=np.int64)
    return warp_in_chunks(images, lambda rows, basis: deformation(index[rows], basis),
                          order=np.argsort(index, kind="stable"))


def warp_in_chunks(images, deformation_of, order=None):
    """``images`` (m, 784), each row warped by ``deformation_of(rows, basis)``
    (``deformation``'s triple for the rows ``rows``, an index array), taken a
    chunk of ``BLOCK`` rows at a time (in ``order``, default as they come),
    so that the warp works on about 10 floats per pixel of one chunk."""
    order = np.arange(len(images)) if order is None else order
    basis = field_basis()
    out = np.empty_like(images)
    for start in range(0, len(images), BLOCK):
        rows = order[start:start + BLOCK]
        out[rows] = warp(images[rows], deformation_of(rows, basis))
    return out


def source_index(index):
    """The MNIST digit that index i shows (itself, or the training digit it deforms)."""
    index = np.asarray(index, dtype=np.int64)
    return np.where(index < N_ORIGINAL, index, (index - N_ORIGINAL) % N_BASE)


def _block_draws(block, nodes):
    """All random numbers of one block: (BLOCK, 2 nodes^2 normals + 6 uniforms)."""
    rng = np.random.default_rng([SEED, int(block)])
    normals = rng.standard_normal((BLOCK, 2 * nodes * nodes), dtype=np.float32)
    uniforms = rng.uniform(size=(BLOCK, UNIFORMS_PER_DIGIT)).astype(np.float32)
    return np.concatenate([normals, uniforms], axis=1)


def bilinear(images, rows, cols, side=SIDE, pad=2):
    """Bilinear samples of flattened (m, side²) ``images`` at float ``rows``,
    ``cols`` (m, p); zero outside the image. Coordinates are clipped into a
    zero border of ``pad`` >= 2 px, where all four neighbours read zero."""
    m, width = len(images), side + 2 * pad
    padded = np.zeros((m, width, width), dtype=np.float32)
    padded[:, pad:-pad, pad:-pad] = images.reshape(m, side, side)
    limit = side + pad - 2  # r0 + 1 stays inside the border
    r0 = np.clip(np.floor(rows), -pad, limit)
    c0 = np.clip(np.floor(cols), -pad, limit)
    fr = np.clip(rows - r0, 0, 1, dtype=np.float32)
    fc = np.clip(cols - c0, 0, 1, dtype=np.float32)
    # Flat indices into all m padded images at once.
    offset = (np.arange(m) * width * width + pad * width + pad)[:, None]
    idx = (r0 * width + c0).astype(np.intp) + offset
    flat = padded.ravel()
    top = flat[idx] + (flat[idx + 1] - flat[idx]) * fc
    idx += width
    bottom = flat[idx] + (flat[idx + 1] - flat[idx]) * fc
    return top + (bottom - top) * fr


def load(seed=0, data_dir=None, n=70000, start=0):
    """Infinite MNIST (``InfiMNIST``): rows ``start .. start + n``, MNIST's
    70,000 digits first, then deformed training digits, generated a slice at
    a time (never all in memory), and their labels. The data set is fixed:
    ``seed`` is ignored, as for ``datasets.mnist``. Reads ``mnist.npz`` as
    ``datasets.mnist`` does."""
    from spectralnet_tf.datasets import mnist

    images, labels = mnist(data_dir=data_dir)
    source = InfiMNIST(images, labels, n, start)
    return source, source.labels


# Views of the deformation law (``SiameseEmbedding(views=...)``), for the
# infinite-MNIST job: made here, handed to the package as view callables.

def _check_digits(view, x, index, seed):
    """``views.check_view_call``, and rows of 28x28 pixels (the law's)."""
    x, index, seed = check_view_call(x, index, seed)
    width = SIDE * SIDE
    if x.shape[1] != width:
        raise ValueError(f"{view} warps 28x28 digits: rows of {width} pixels, got "
                         f"{x.shape[1]}.")
    return x, index, seed


class Deform(BaseEstimator):
    """Infinite MNIST's deformation law (``infimnist``): an elastic field, a
    small affine map and a translation, drawn for each (index, seed) from
    ``row_uniforms`` (the normals by the Box-Muller transform), so that a
    row's draws cost the same whatever its index: the data set's own streams
    draw a block of rows at a time. Rows are 28x28 images in [0, 1]."""

    def __call__(self, x, index, seed):
        x, index, seed = _check_digits("Deform", x, index, seed)
        def deformation_of(rows, basis):
            count = draws_per_digit(basis)
            draws = _normal_then_uniform(row_uniforms(index[rows], seed, count),
                                         count - UNIFORMS_PER_DIGIT)
            return deformation_from_draws(draws, basis)

        return warp_in_chunks(x, deformation_of)


class Redraw(BaseEstimator):
    """Infinite MNIST's deformation law drawn afresh on each row's source
    digit. Row i of infinite MNIST shows MNIST digit ``source_index(i)``,
    itself or deformed; its view is that source deformed by the draws
    ``Deform`` takes for (i, seed): another digit the generator could have
    made from the same source. ``Deform`` deforms the row itself, so a
    deformed digit's view is a digit deformed twice, which the data set's law
    never makes. For MNIST's own digits (i < 70,000) the two are the same.

    The rows must be infinite MNIST's, numbered from its index 0
    (``load`` with ``start=0``): a row's number names its
    source. Only MNIST's own rows are read, to check that they are.

    Parameters
    ----------
    data_dir : str or None, default=None
        The folder of ``mnist.npz``, as ``datasets.mnist`` takes it (None:
        ``$SPECTRALNET_DATA_DIR``), read at the first call.

    Examples
    --------
    >>> import numpy as np
    >>> from harness.infimnist import Redraw, load
    >>> x, _ = load(n=70_100)  # MNIST's digits, then 100 deformed ones
    >>> Redraw()(x[70_000:], np.arange(70_000, 70_100), seed=0).shape
    (100, 784)
    """

    def __init__(self, data_dir=None):
        self.data_dir = data_dir

    def __call__(self, x, index, seed):
        x, index, seed = _check_digits("Redraw", x, index, seed)
        images = self._images()
        own = np.flatnonzero(index < N_ORIGINAL)
        wrong = own[(x[own] != images[index[own]]).any(axis=1)]
        if len(wrong):
            raise ValueError(f"Redraw needs infinite MNIST's rows numbered from its index 0: "
                             f"a row numbered below {N_ORIGINAL:,} is MNIST's digit "
                             f"of that number, but the row with index={index[wrong[0]]} is not.")
        return Deform()(images[source_index(index)], index, seed)

    def _images(self):
        """MNIST's 70,000 digits, read at the first call and kept by this
        object (not a parameter, not pickled; ``make_view`` hands out copies)."""
        if getattr(self, "_sources", None) is None:
            from spectralnet_tf.datasets import mnist

            self._sources = mnist(data_dir=self.data_dir)[0]
        return self._sources

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_sources", None)
        return state


def _normal_then_uniform(u, normals):
    """float32 rows of ``u``'s uniforms with the first ``normals`` (even)
    columns made standard normal by the Box-Muller transform of column pairs
    (c, c + normals / 2); the rest left uniform."""
    half = normals // 2
    radius = np.sqrt(-2.0 * np.log1p(-u[:, :half]))  # 1 - u lies in (0, 1]
    angle = 2.0 * np.pi * u[:, half:normals]
    return np.concatenate([radius * np.cos(angle), radius * np.sin(angle), u[:, normals:]],
                          axis=1).astype(np.float32)
