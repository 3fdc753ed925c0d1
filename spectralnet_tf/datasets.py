"""Data sets: the paper's illustrative sets (generated here, with labels) and
real sets. ``load_dataset(name)`` returns ``(x, y, n_clusters)``: float32 (n, d),
int (n,); Reuters' x is an on-disk ``h5py.Dataset``."""

import os

import numpy as np
import scipy.sparse as sp
from sklearn import datasets as skd

from .streaming import is_lazy

#: Environment variable naming the folder that holds mnist.npz (and other files).
DATA_DIR_ENV = "SPECTRALNET_DATA_DIR"
#: MNIST's original training split: the first 60,000 of the 70,000 points.
MNIST_N_TRAIN = 60000
#: Each MNIST row is one of these images, flattened.
MNIST_IMAGE_SHAPE = (28, 28)


def nested_cs(n=1500, noise=0.03, seed=0):
    """Two nested 'C's (paper Appendix A): a large C opening right with a small
    C inside its mouth opening left. k-means cannot separate them."""
    rng = np.random.default_rng(seed)
    n_big = n // 2
    t_big = rng.uniform(np.pi / 3, 5 * np.pi / 3, n_big)
    big = np.c_[np.cos(t_big), np.sin(t_big)]
    t_small = rng.uniform(-2 * np.pi / 3, 2 * np.pi / 3, n - n_big)
    small = np.c_[0.6 + 0.5 * np.cos(t_small), 0.5 * np.sin(t_small)]
    x = np.r_[big, small] + rng.normal(scale=noise, size=(n, 2))
    y = np.r_[np.zeros(n_big), np.ones(n - n_big)]
    return x, y


def moons(n=1500, noise=0.05, seed=0):
    """Two interleaving half circles (scikit-learn's make_moons)."""
    return skd.make_moons(n, noise=noise, random_state=seed)


def circles(n=1500, noise=0.05, seed=0, factor=0.5):
    """Two concentric circles (scikit-learn's make_circles)."""
    return skd.make_circles(n, noise=noise, factor=factor, random_state=seed)


def noisy_circles(n=1500, noise=0.12, seed=0, factor=0.5):
    """Concentric circles with heavy noise (paper Sec. 5.3's semi-supervised demo).

    Radii 1 and 0.5, noise 0.12: the same as ``rings`` with radii 1 and 2 at
    noise 0.24. The noise blurs the gap enough that unsupervised SpectralNet
    cuts them wrongly, while thresholding the radius (the Bayes rule) still
    separates nearly all points: the case that a few labels are for
    (BENCHMARKS.md, semi-supervised).
    """
    return circles(n, noise=noise, seed=seed, factor=factor)


def rings(n=1500, noise=0.10, seed=0, radii=(1.0, 1.5)):
    """Two concentric noisy rings: half the points at angle-uniform positions on
    each circle of ``radii``, plus isotropic Gaussian noise of std ``noise``
    on each coordinate."""
    rng = np.random.default_rng(seed)
    n0 = n // 2
    y = np.r_[np.zeros(n0), np.ones(n - n0)]
    r = np.asarray(radii, dtype=np.float64)[y.astype(int)]
    t = rng.uniform(0.0, 2 * np.pi, n)
    x = np.c_[r * np.cos(t), r * np.sin(t)] + rng.normal(scale=noise, size=(n, 2))
    return x, y


def spirals(n=1500, noise=0.05, seed=0, turns=1.0):
    """Two interleaved Archimedean spirals, one full turn each by default.

    (With 1.5 turns neither SpectralNet variant tried here converged within
    3,000 iterations; exact spectral clustering still separates them.)"""
    rng = np.random.default_rng(seed)
    n0 = n // 2
    y = np.r_[np.zeros(n0), np.ones(n - n0)]
    # sqrt spreads points evenly along the arc length.
    t = np.sqrt(rng.uniform(0.05, 1.0, n)) * turns * 2 * np.pi
    r = t / (turns * 2 * np.pi)
    phase = np.pi * y
    x = np.c_[r * np.cos(t + phase), r * np.sin(t + phase)]
    return x + rng.normal(scale=noise * 0.5, size=x.shape), y


def rings3d(n=1500, noise=0.05, seed=0):
    """Two interlocked rings in 3-D, like two links of a chain."""
    rng = np.random.default_rng(seed)
    n0 = n // 2
    a = rng.uniform(0, 2 * np.pi, n0)
    b = rng.uniform(0, 2 * np.pi, n - n0)
    ring0 = np.c_[np.cos(a), np.sin(a), np.zeros(n0)]
    ring1 = np.c_[1.0 + np.cos(b), np.zeros(n - n0), np.sin(b)]
    x = np.r_[ring0, ring1] + rng.normal(scale=noise, size=(n, 3))
    return x, np.r_[np.zeros(n0), np.ones(n - n0)]


def digits(n=None, seed=0):
    """scikit-learn's 8×8 digits (1797 images, 10 classes), scaled to [0, 1]."""
    x, y = skd.load_digits(return_X_y=True)
    return x / 16.0, y


def mnist(seed=0, data_dir=None):
    """All 70,000 MNIST digits (training then test split), x/255 flattened to 784.

    Reads ``mnist.npz`` in the keras.datasets layout (x_train, y_train, x_test,
    y_test) from ``data_dir``, else from ``$SPECTRALNET_DATA_DIR``, else
    downloads it with ``keras.datasets.mnist``.
    """
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    if data_dir:
        path = os.path.join(data_dir, "mnist.npz")
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"{path} does not exist. Put mnist.npz (keras.datasets layout) in the "
                f"folder given by --data-dir or ${DATA_DIR_ENV}."
            )
        with np.load(path) as f:
            parts = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    else:
        import keras

        try:
            (xa, ya), (xb, yb) = keras.datasets.mnist.load_data()
        except Exception as err:
            raise FileNotFoundError(
                "MNIST is not available: no local copy was named and the download "
                f"failed ({type(err).__name__}: {err}). Pass --data-dir DIR or set "
                f"${DATA_DIR_ENV}=DIR, with DIR holding mnist.npz (keras.datasets layout)."
            ) from err
        parts = xa, ya, xb, yb
    x_train, y_train, x_test, y_test = parts
    x = np.concatenate([x_train, x_test]).reshape(-1, int(np.prod(MNIST_IMAGE_SHAPE))).astype(np.float32) / 255.0
    return x, np.concatenate([y_train, y_test]).astype(np.int64)


#: The file ``scripts/make_reuters.py`` writes, looked up in the data folder.
REUTERS_FILE = "reuters.h5"


def reuters(seed=0, data_dir=None):
    """The Reuters documents (``scripts/make_reuters.py``): ``(data, labels)``
    where ``data`` is the on-disk ``h5py.Dataset`` (n, 2000) of tf-idf rows,
    streamed by whoever reads it, and ``labels`` an int64 array (0..3).

    Reads ``reuters.h5`` from ``data_dir``, else from ``$SPECTRALNET_DATA_DIR``.
    """
    import h5py

    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    if not data_dir:
        raise FileNotFoundError(
            f"Reuters needs {REUTERS_FILE}: pass --data-dir DIR or set ${DATA_DIR_ENV}=DIR, "
            f"with DIR holding the file written by scripts/make_reuters.py --out DIR/{REUTERS_FILE}."
        )
    path = os.path.join(data_dir, REUTERS_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} does not exist. Build it once with scripts/make_reuters.py "
            f"--src RCV1_DIR --out {path}."
        )
    h5 = h5py.File(path, "r")  # stays open while the data set is in use
    if "data" not in h5 or "labels" not in h5 or h5["data"].ndim != 2:
        raise ValueError(f"{path} must hold datasets 'data' (n, n_words) and 'labels' (n,).")
    return h5["data"], np.asarray(h5["labels"], dtype=np.int64)


def polygon(k, side):
    """The k vertices of a regular polygon with sides ``side`` (k x 2), centred
    on 0; one point, 0, for k = 1."""
    radius = side / (2 * np.sin(np.pi / k)) if k > 1 else 0.0
    angles = 2 * np.pi * np.arange(k) / k
    return radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def blobs(n=2000, k=3, sep=8.0, seed=0):
    """k isotropic unit Gaussians in 2-D, centred on a circle so that
    neighbouring centres are ``sep`` apart (all pairs at least that). For
    choosing k: the clusters are the blobs, at any k."""
    rng = np.random.default_rng(seed)
    centres = polygon(k, sep)
    y = rng.integers(0, k, n)
    return (centres[y] + rng.normal(size=(n, 2))).astype(np.float32), y


def sbm(n=3000, k=3, p_in=0.02, p_out=0.002, side=4.0, nuisance=3.0, seed=0):
    """A stochastic block model with node features: ``(features, graph, y)``.

    Nodes of block b link with probability ``p_in`` inside it and ``p_out``
    across (``graph``: symmetric scipy CSR of 0/1, no self loops). Each node
    has 4 features: its block's centre (the vertices of an equilateral
    triangle of side ``side``, for k = 3; a regular k-gon otherwise) plus
    unit Gaussian noise, and two nuisance features of standard deviation
    ``nuisance``, the same for every block. The features alone separate
    the blocks well under the Bayes rule, but their largest directions of
    variance are the nuisance: what the graph teaches the net to ignore."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centres = polygon(k, side)
    features = np.concatenate([centres[y] + rng.normal(size=(n, 2)),
                               nuisance * rng.normal(size=(n, 2))], axis=1).astype(np.float32)
    if n > 4000:
        raise ValueError(f"sbm draws all n(n-1)/2 pairs: n must be <= 4000, got n={n}.")
    rows, cols = np.triu_indices(n, 1)
    p = np.where(y[rows] == y[cols], p_in, p_out)
    keep = rng.random(len(p)) < p
    upper = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (rows[keep], cols[keep])),
                          shape=(n, n))
    return features, (upper + upper.T).tocsr(), y


#: name -> (generator, number of clusters)
DATASETS = {
    "cc": (nested_cs, 2),
    "moons": (moons, 2),
    "circles": (circles, 2),
    "noisy_circles": (noisy_circles, 2),
    "rings": (rings, 2),
    "spirals": (spirals, 2),
    "rings3d": (rings3d, 2),
    "digits": (digits, 10),
    "mnist": (mnist, 10),
    "reuters": (reuters, 4),
}


def load_dataset(name, seed=0, **kwargs):
    """Return ``(x, y, n_clusters)`` for a named data set."""
    if name not in DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {sorted(DATASETS)}.")
    make, n_clusters = DATASETS[name]
    x, y = make(seed=seed, **kwargs)
    if not is_lazy(x):  # on-disk rows (Reuters) stay lazy
        x = np.asarray(x, dtype=np.float32)
    return x, np.asarray(y, dtype=np.int64), n_clusters
