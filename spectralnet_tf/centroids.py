"""k-means on the embedding, and nearest-centroid assignment (out-of-sample
extension, paper Sec. 3.3). The same TensorFlow code assigns clusters in
``SpectralNet.predict`` and inside the exported SavedModel.

With ``normalize_rows`` both steps see each row scaled to unit length (Ng,
Jordan & Weiss, NIPS 2001): in a spectral embedding a group's points share a
direction, while their lengths carry the group's size and each point's place
in it, which k-means would weigh as much as the direction."""

import numpy as np
import tensorflow as tf
from sklearn.cluster import KMeans

#: k-means fits on at most this many points, a uniform sample; every point is
#: then assigned to its nearest centroid. MNIST (70,000) fits on all.
KMEANS_FIT_MAX = 100_000
#: Rows per chunk when assigning (the distances are (chunk, k)).
ASSIGN_CHUNK = 65536
#: ``SpectralNet.fit`` clusters the embedding's rows scaled to unit length.
NORMALIZE_ROWS = True


def unit_rows(y):
    """Each row of y scaled to unit length (float32 tensor); a zero row stays
    zero. The one definition both the fit and every assignment use."""
    return tf.math.l2_normalize(tf.convert_to_tensor(y, tf.float32), axis=1)


def kmeans(x, n_clusters, seed, normalize_rows=False):
    """scikit-learn k-means (10 restarts) fitted on x, or on a uniform sample
    of ``KMEANS_FIT_MAX`` of its rows; with ``normalize_rows`` on those rows
    scaled to unit length (``unit_rows``)."""
    if len(x) > KMEANS_FIT_MAX:
        x = x[np.sort(np.random.default_rng(seed).choice(len(x), KMEANS_FIT_MAX, replace=False))]
    if normalize_rows:
        x = unit_rows(x).numpy()
    return KMeans(n_clusters, n_init=10, random_state=seed).fit(x)


def fit_centroids(embedding, n_clusters, seed, normalize_rows=False):
    """k-means centroids (``kmeans``), float32 (k, dim)."""
    return kmeans(embedding, n_clusters, seed, normalize_rows).cluster_centers_.astype(np.float32)


def kmeans_labels(x, n_clusters, seed, normalize_rows=False):
    """k-means clusters of every row of x: ``kmeans``, then each row's
    nearest centroid (scikit-learn's, in chunks); on all rows when they fit."""
    return kmeans_labels_inertia(x, n_clusters, seed, normalize_rows)[0]


def kmeans_labels_inertia(x, n_clusters, seed, normalize_rows=False):
    """``kmeans_labels`` and its inertia on every row of x (the sum of squared
    distances to the nearest centroid; k-means' own objective, no labels),
    with ``normalize_rows`` of the rows scaled to unit length."""
    model = kmeans(x, n_clusters, seed, normalize_rows)
    if len(x) <= KMEANS_FIT_MAX:
        return model.labels_, float(model.inertia_)
    labels, inertia = [], 0.0
    for s in range(0, len(x), ASSIGN_CHUNK):
        chunk = x[s:s + ASSIGN_CHUNK]
        if normalize_rows:
            chunk = unit_rows(chunk).numpy()
        labels.append(model.predict(chunk))
        inertia -= model.score(chunk)  # score is minus the chunk's inertia
    return np.concatenate(labels), inertia


def centroid_distances(y, centers, normalize_rows=False):
    """Euclidean distances (n, n_clusters) from embeddings to centroids; with
    ``normalize_rows``, from the embeddings scaled to unit length."""
    y = unit_rows(y) if normalize_rows else tf.convert_to_tensor(y, tf.float32)
    centers = tf.convert_to_tensor(centers, tf.float32)
    d2 = (
        tf.reduce_sum(tf.square(y), axis=1, keepdims=True)
        - 2.0 * tf.matmul(y, centers, transpose_b=True)
        + tf.reduce_sum(tf.square(centers), axis=1)[None, :]
    )
    return tf.sqrt(tf.maximum(d2, 0.0))


def nearest_centroid(distances):
    """Cluster id (int64) of the smallest distance in each row."""
    return tf.argmin(distances, axis=1, output_type=tf.int64)


def assign(embedding, centers, normalize_rows=False):
    """``nearest_centroid`` of every row of ``embedding``, a chunk at a time."""
    return np.concatenate([
        nearest_centroid(centroid_distances(embedding[s:s + ASSIGN_CHUNK], centers,
                                            normalize_rows)).numpy()
        for s in range(0, max(len(embedding), 1), ASSIGN_CHUNK)])
