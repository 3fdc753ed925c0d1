"""MNIST end to end on a small subset, in the committed autoencoder's code space."""

import os

import numpy as np
import pytest
from sklearn.cluster import KMeans

from spectralnet_tf import SpectralNet, acc
from spectralnet_tf.autoencoder import load_encoder
from spectralnet_tf.datasets import DATA_DIR_ENV, load_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AE = os.path.join(ROOT, "pretrained_ae", "ae_mnist_weights.h5")

pytestmark = [
    pytest.mark.skipif(not os.environ.get(DATA_DIR_ENV),
                       reason=f"${DATA_DIR_ENV} is not set (CI sets it)"),
    pytest.mark.slow,
]


def test_committed_autoencoder_loads_and_reconstructs_codes():
    x, _, _ = load_dataset("mnist")
    codes = load_encoder(AE).predict(x[:100], verbose=0)
    assert codes.shape == (100, 10) and np.isfinite(codes).all()


def test_mnist_subset_code_space_siamese_beats_kmeans():
    x, y, k = load_dataset("mnist")
    x, y = x[:4000], y[:4000]
    net = SpectralNet(
        k, encoder=load_encoder(AE), affinity_embedding="siamese",
        affinity="knn", n_nbrs=10, scale_nbr=5, scale="local", hidden_units=(256, 256),
        siamese_hidden_units=(256, 256, 10), siamese_batch_size=512, siamese_max_epochs=10,
        max_epochs=8, random_state=0,
    ).fit(x)
    kmeans = acc(y, KMeans(k, n_init=10, random_state=0).fit_predict(x))
    got = acc(y, net.labels_)
    print(f"MNIST 4000: SpectralNet ACC {got:.3f}, k-means (pixels) ACC {kmeans:.3f}")
    assert got >= kmeans + 0.15
