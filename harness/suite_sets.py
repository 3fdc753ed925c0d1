"""The development suite's data sets (``suite`` runs the methods on them):
scikit-learn's bundled sets, standardised where a user would; traps made
here (outliers, unequal clusters, noise dimensions, anisotropic blobs, moons
with outliers, wide blobs); a block model with node features, for a given graph; and
MNIST's 70k in the shipped code space, reported and never chosen by.
"""

import hashlib
import os
from collections import namedtuple

import numpy as np

from .records import ROOT

#: A data set of the suite: x float32 (n, d), y int (n,) (-1 for points of no
#: class), k, and the mask of the points that are scored.
SuiteSet = namedtuple("SuiteSet", "x y k scored")


#: The block model: node features, the graph among the training nodes, the
#: labels of all nodes, k, and the indices of the training and held-out nodes.
GraphSet = namedtuple("GraphSet", "features graph y k train held centres informative")


def _set(x, y, k, scored=None):
    y = np.asarray(y, np.int64)
    return SuiteSet(np.ascontiguousarray(x, dtype=np.float32), y, int(k),
                    np.ones(len(y), bool) if scored is None else np.asarray(scored, bool))


def _standardised(loader):
    from sklearn.preprocessing import StandardScaler

    x, y = loader(return_X_y=True)
    return _set(StandardScaler().fit_transform(x), y, len(np.unique(y)))


def iris(seed=0):
    """scikit-learn's iris (150 x 4, 3 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_iris

    return _standardised(load_iris)


def wine(seed=0):
    """scikit-learn's wine (178 x 13, 3 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_wine

    return _standardised(load_wine)


def breast_cancer(seed=0):
    """scikit-learn's breast cancer (569 x 30, 2 classes), standardised (StandardScaler)."""
    from sklearn.datasets import load_breast_cancer

    return _standardised(load_breast_cancer)


def digits(seed=0):
    """scikit-learn's 8x8 digits as they are (1,797 x 64, values 0-16, 10 classes)."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return _set(x, y, 10)


#: Outliers are this share of all points in the sets with outliers.
OUTLIER_SHARE = 0.05


def _with_outliers(x, y, n_outliers, low, high, rng):
    """x with ``n_outliers`` points uniform in the box [low, high] (per
    dimension) appended, labelled -1 and not scored."""
    extra = rng.uniform(low, high, size=(n_outliers, x.shape[1]))
    return _set(np.concatenate([x, extra]), np.concatenate([y, np.full(n_outliers, -1)]),
                len(np.unique(y)), np.arange(len(x) + n_outliers) < len(x))


def blobs_outliers(seed=0, n=2000):
    """Four unit Gaussian blobs in 2-D centred on the corners of a square of
    side 8 ((0, 0), (8, 0), (0, 8), (8, 8)), 1,900 points (95%; each point's
    blob uniform), plus 100 outliers (5%) uniform in the box [-4, 12]^2 (the
    centres +- 4 standard deviations). All 2,000 are clustered (k = 4); only
    the 1,900 inliers are scored."""
    rng = np.random.default_rng(seed)
    n_out = int(round(OUTLIER_SHARE * n))
    centres = np.array([[0, 0], [8, 0], [0, 8], [8, 8]], float)
    y = rng.integers(0, 4, n - n_out)
    x = centres[y] + rng.normal(size=(len(y), 2))
    return _with_outliers(x, y, n_out, -4.0, 12.0, rng)


#: ``unequal``'s clusters: sizes (1:3:6), standard deviations and centres.
UNEQUAL_SIZES, UNEQUAL_SDS = (200, 600, 1200), (0.5, 1.0, 2.0)


UNEQUAL_CENTRES = ((0.0, 6.0), (6.0, 0.0), (0.0, 0.0))


def unequal(seed=0):
    """Three Gaussian clusters in 2-D of unequal size and density: 200, 600
    and 1,200 points (1:3:6) with standard deviations 0.5, 1 and 2, centred on
    (0, 6), (6, 0) and (0, 0) (n = 2,000). The Bayes rule of the true model
    scores about 0.975 (seed 0: 0.975); k-means, which favours clusters of
    equal spread, about 0.85."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(3), UNEQUAL_SIZES)
    x = np.asarray(UNEQUAL_CENTRES)[y] + np.asarray(UNEQUAL_SDS)[y, None] * rng.normal(
        size=(len(y), 2))
    order = rng.permutation(len(y))
    return _set(x[order], y[order], 3)


#: ``noise_dims``: the informative dimensions' blobs and the added noise columns.
NOISE_COLUMNS, NOISE_EDGE, NOISE_SD = 50, 3.0, 0.5


def noise_dims(seed=0, n=2000):
    """Four Gaussian blobs (standard deviation 0.5) centred on the vertices of
    a regular tetrahedron of edge 3 in 3 informative dimensions, plus 50
    N(0, 1) noise columns (n = 2,000, 53 columns; each point's blob uniform).
    The blobs are separable in the informative dimensions (k-means there:
    about 0.995), but the noise holds 50 of the 50.75 units of variance per
    point, which blurs every Euclidean neighbourhood."""
    rng = np.random.default_rng(seed)
    vertices = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float)
    vertices *= NOISE_EDGE / np.linalg.norm(vertices[0] - vertices[1])
    y = rng.integers(0, 4, n)
    x = np.concatenate([vertices[y] + NOISE_SD * rng.normal(size=(n, 3)),
                        rng.normal(size=(n, NOISE_COLUMNS))], axis=1)
    return _set(x, y, 4)


#: scikit-learn's k-means assumptions example: the shear of its anisotropic blobs.
ANISO_SHEAR = ((0.60834549, -0.63667341), (-0.40887718, 0.85253229))


def anisotropic(seed=0, n=1500):
    """scikit-learn's anisotropic blobs (the k-means assumptions example):
    three unit Gaussian blobs, 1,500 points, at the centres that
    ``make_blobs(random_state=170)`` draws (uniform in [-10, 10]^2), the
    points drawn from the seed (``make_blobs(n, centers=those,
    random_state=seed)``), times the example's shear matrix
    ``[[0.608, -0.637], [-0.409, 0.853]]``."""
    from sklearn.datasets import make_blobs

    centres = np.random.RandomState(170).uniform(-10.0, 10.0, size=(3, 2))
    x, y = make_blobs(n_samples=n, centers=centres, random_state=seed)
    return _set(x @ np.asarray(ANISO_SHEAR), y, 3)


def moons_outliers(seed=0, n=2000):
    """Two moons (``make_moons(1900, noise=0.05, random_state=seed)``, 95%)
    plus 100 outliers (5%) uniform in the box [-1.5, 2.5] x [-1, 1.5] around
    them. All 2,000 are clustered (k = 2); only the 1,900 inliers are scored."""
    from sklearn.datasets import make_moons

    n_out = int(round(OUTLIER_SHARE * n))
    x, y = make_moons(n - n_out, noise=0.05, random_state=seed)
    rng = np.random.default_rng(seed)
    return _with_outliers(x, y, n_out, np.array([-1.5, -1.0]), np.array([2.5, 1.5]), rng)


#: ``wide_blobs``: points, features and blobs; the size of issue 89's time
#: target for a default fit (``bench.py small-fit`` fits the same arrays).
WIDE_BLOBS = (5000, 100, 5)


def wide_blobs(seed=0):
    """Five Gaussian blobs in 100 dimensions, 5,000 points:
    ``make_blobs(5000, 100, centers=5, random_state=seed)`` (unit standard
    deviation, centres uniform in [-10, 10]^100). Every method separates
    them; the set is here for its size, where a fit's time and a budget
    that stops short show."""
    from sklearn.datasets import make_blobs

    n, d, k = WIDE_BLOBS
    x, y = make_blobs(n, d, centers=k, random_state=seed)
    return _set(x, y, k)


#: ``high_dims``: points, features and blobs: a width like an image's pixels
#: or a text's vocabulary, above every other set's (``AUTO_WIDTHS``' top band).
HIGH_DIMS = (1000, 1000, 4)


def high_dims(seed=0):
    """Four Gaussian blobs in 1,000 dimensions, 1,000 points:
    ``make_blobs(1000, 1000, centers=4, random_state=seed)``. Every method
    separates them; the set is here for its width, where a step size that
    suits a hundred features can move a net's first layer too far."""
    from sklearn.datasets import make_blobs

    n, d, k = HIGH_DIMS
    x, y = make_blobs(n, d, centers=k, random_state=seed)
    return _set(x, y, k)


#: The block model's parameters: nodes a block, link probabilities, the
#: square's side (4 block means in 2 informative features), noise features,
#: the held-out share.
SBM_BLOCK_SIZE, SBM_P_IN, SBM_P_OUT = 300, 0.05, 0.005


SBM_SIDE, SBM_NOISE_FEATURES, SBM_HELD_SHARE = 2.1, 2, 0.2


def sbm(seed=0):
    """A stochastic block model with weak node features (built here:
    ``spectralnet_tf.datasets.sbm`` draws each node's block at random, so its
    blocks are not of 300 nodes each). 4 blocks of 300 nodes (1,200); nodes
    link with probability 0.05 inside a block and 0.005 across (symmetric
    0/1, no self loops). Each node has 4 features: its block's mean, a corner
    of a square of side 2.1 centred on 0, plus N(0, 1) noise in 2 dimensions,
    and 2 columns of N(0, 1) noise. The Bayes rule of the features (nearest
    true mean) scores Phi(1.05)^2 = 0.728 in expectation. 20% of the nodes
    (240, at random) are held out: the training nodes come with the graph
    among them, the held-out nodes with their features alone."""
    return block_model(seed, _square(SBM_SIDE), SBM_BLOCK_SIZE, SBM_NOISE_FEATURES)


def sbm_strong(seed=0):
    """``sbm`` with strong features: the square's side 4, so that the Bayes
    rule scores Phi(2)^2 = 0.955 in expectation."""
    return block_model(seed, _square(4.0), SBM_BLOCK_SIZE, SBM_NOISE_FEATURES)


def sbm_hex(seed=0):
    """``sbm``'s law with 6 blocks of 200 nodes, their means the corners of
    a hexagon of side 2 (centred on 0) in 2 informative features, beside 8
    columns of N(0, 1) noise: more blocks, fewer links inside each (about
    10 against 5 across), weak features among many noise columns."""
    angles = 2 * np.pi * np.arange(6) / 6
    return block_model(seed, 2.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1), 200, 8)


def _square(side):
    half = side / 2
    return np.array([[-half, -half], [half, -half], [-half, half], [half, half]])


def block_model(seed, centres, block_size, noise_features):
    """The block model of ``sbm``'s law: one block per row of ``centres``
    (its mean in the 2 informative features) of ``block_size`` nodes,
    ``noise_features`` noise columns, the links and the held-out share of
    ``sbm``."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    blocks = len(centres)
    n = blocks * block_size
    y = rng.permutation(np.repeat(np.arange(blocks), block_size))
    features = np.concatenate([centres[y] + rng.normal(size=(n, 2)),
                               rng.normal(size=(n, noise_features))], axis=1)
    rows, cols = np.triu_indices(n, 1)
    keep = rng.random(len(rows)) < np.where(y[rows] == y[cols], SBM_P_IN, SBM_P_OUT)
    upper = sp.csr_matrix((np.ones(int(keep.sum()), np.float32), (rows[keep], cols[keep])),
                          shape=(n, n))
    graph = (upper + upper.T).tocsr()
    order = rng.permutation(n)
    n_held = int(round(SBM_HELD_SHARE * n))
    train, held = np.sort(order[n_held:]), np.sort(order[:n_held])
    return GraphSet(features.astype(np.float32), graph[train][:, train].tocsr(), y,
                    blocks, train, held, centres, 2)


def bayes_rule(g, nodes):
    """The Bayes rule of ``g``'s features for ``nodes``: the nearest true
    block mean in the informative features (equal priors, isotropic noise)."""
    f = g.features[nodes, :g.informative]
    return np.argmin(((f[:, None, :] - g.centres[None]) ** 2).sum(-1), axis=1)


#: Where the MNIST codes are cached (runs/ is gitignored).
CACHE = os.path.join(ROOT, "runs", "suite-cache")


def mnist(seed=0):
    """All 70,000 MNIST digits (``load_dataset("mnist")``) in the code space
    of the autoencoder that ``scripts/run.py --dset mnist`` uses
    (``harness.reproduce.AE_ALL``), 70,000 x 10, k = 10. Encoded once and
    cached in ``runs/suite-cache/`` under the weight file's SHA-256. Reported,
    never chosen by."""
    from spectralnet_tf.autoencoder import load_encoder
    from spectralnet_tf.datasets import load_dataset
    from spectralnet_tf.resources import pretrained_path

    from .reproduce import AE_ALL

    path = pretrained_path(AE_ALL)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    cache = os.path.join(CACHE, f"mnist-codes-{digest[:12]}.npz")
    if not os.path.exists(cache):
        x, y, _ = load_dataset("mnist")
        codes = load_encoder(path).predict(np.asarray(x, np.float32), batch_size=4096, verbose=0)
        os.makedirs(CACHE, exist_ok=True)
        tmp = cache + ".tmp.npz"
        np.savez(tmp, x=np.asarray(codes, np.float32), y=np.asarray(y, np.int64),
                 weights=AE_ALL, sha256=digest)
        os.replace(tmp, cache)
    with np.load(cache) as data:
        return _set(data["x"], data["y"], 10)


#: name -> (builder, group). The groups name sets on the command line too.
SETS = {
    "iris": (iris, "real"), "wine": (wine, "real"), "breast_cancer": (breast_cancer, "real"),
    "digits": (digits, "real"),
    "blobs_outliers": (blobs_outliers, "traps"), "unequal": (unequal, "traps"),
    "noise_dims": (noise_dims, "traps"), "anisotropic": (anisotropic, "traps"),
    "moons_outliers": (moons_outliers, "traps"), "wide_blobs": (wide_blobs, "traps"),
    "high_dims": (high_dims, "traps"),
    "sbm": (sbm, "graph"), "sbm_strong": (sbm_strong, "graph"), "sbm_hex": (sbm_hex, "graph"),
    "mnist": (mnist, "mnist"),
}


GROUPS = {group: [name for name, (_, g) in SETS.items() if g == group]
          for group in ("real", "traps", "graph", "mnist")}


#: Sets whose labels choose nothing (they are reported only).
NOT_FOR_CHOOSING = ("mnist",)


DEFAULT_SETS = [name for name in SETS if name not in NOT_FOR_CHOOSING]
GROUPS["all"] = list(SETS)


def resolve_sets(names):
    """Set and group names, in order, each set once."""
    out = []
    for name in names:
        if name in GROUPS:
            out += GROUPS[name]
        elif name in SETS:
            out.append(name)
        else:
            raise ValueError(f"--sets: unknown set or group {name!r}; sets: {', '.join(SETS)}; "
                             f"groups: {', '.join(GROUPS)}")
    return list(dict.fromkeys(out))
