"""k-means on the embedding, and nearest-centroid assignment (out-of-sample
extension, paper Sec. 3.3). The same TensorFlow code assigns clusters in
``SpectralNet.predict`` and inside the exported SavedModel."""

import numpy as np
import tensorflow as tf
from sklearn.cluster import KMeans


def fit_centroids(embedding, n_clusters, seed):
    """k-means (scikit-learn, 10 restarts) centroids, float32 (k, dim)."""
    kmeans = KMeans(n_clusters, n_init=10, random_state=seed).fit(embedding)
    return kmeans.cluster_centers_.astype(np.float32)


def centroid_distances(y, centers):
    """Euclidean distances (n, n_clusters) from embeddings to centroids."""
    y = tf.convert_to_tensor(y, tf.float32)
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
