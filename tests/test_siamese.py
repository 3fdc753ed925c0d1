import numpy as np

from spectralnet_tf.neighbors import ExactNeighbors
from spectralnet_tf.siamese import build_siamese, make_pairs, train_siamese


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
    net = build_siamese(2, hidden_units=(32, 8), seed=0)
    history = train_siamese(net, x, pairs, batch_size=64, epochs=8, seed=0, verbose=0)
    assert history["val_loss"][-1] < history["val_loss"][0]
    z = net.predict(x, verbose=0)
    first, second, positive = pairs
    d = np.linalg.norm(z[first] - z[second], axis=1)
    assert d[positive == 1].mean() < 0.5 * d[positive == 0].mean()
