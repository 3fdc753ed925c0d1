"""Export and persistence of a fitted ``SpectralNet``.

- ``export_saved_model``: a SavedModel for TF-Serving, in a new integer version
  directory ``base_dir/name/<version>/``. Its ``serving_default`` signature takes
  raw input ``x`` (float32, [None, d]) and returns ``embedding`` (float32,
  [None, k]), ``cluster`` (int64, [None]) and ``distances`` (float32,
  [None, n_clusters]); the k-means centroids are constants of the graph.
- ``save_estimator`` / ``load_estimator``: a directory with the embedder as a
  standard ``.keras`` file plus the estimator's parameters and centroids.

Both are written atomically (``atomic.py``).
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from .atomic import atomic_directory, publish
from .centroids import centroid_distances, nearest_centroid

SIGNATURE = "serving_default"
EMBEDDER_FILE = "embedder.keras"
STATE_FILE = "estimator.json"


def _versions(model_dir):
    return [int(d) for d in os.listdir(model_dir) if d.isdigit()]


def serving_function(embedder, centers):
    """The ``serving_default`` function: raw x -> embedding, cluster, distances."""
    d = embedder.input_shape[-1]
    centers = tf.constant(np.asarray(centers, dtype=np.float32), name="centroids")

    @tf.function(input_signature=[tf.TensorSpec([None, d], tf.float32, name="x")])
    def serve(x):
        embedding = embedder(x, training=False)
        distances = centroid_distances(embedding, centers)
        return {
            "embedding": tf.identity(embedding, name="embedding"),
            "cluster": nearest_centroid(distances),
            "distances": distances,
        }

    return serve


def export_saved_model(embedder, centers, base_dir, name="spectralnet"):
    """Write a new version ``base_dir/name/<N+1>/`` and return its path.

    The SavedModel is written to a hidden temporary directory beside the
    versions and renamed into place, so TF-Serving (which only loads integer
    directories) never sees a partial version, and existing versions are never
    touched.
    """
    model_dir = os.path.join(base_dir, name)
    module = tf.Module()
    module.embedder = embedder
    module.serve = serving_function(embedder, centers)
    with atomic_directory(model_dir) as tmp:
        tf.saved_model.save(module, tmp, signatures={SIGNATURE: module.serve})
        while True:  # another writer may take a version number first
            final = os.path.join(model_dir, str(max(_versions(model_dir), default=0) + 1))
            try:
                publish(tmp, final)
                return final
            except FileExistsError:
                continue


def save_estimator(estimator, path):
    """Save a fitted estimator to the new directory ``path`` (atomically)."""
    params = estimator.get_params()
    if callable(params["affinity_embedding"]):
        raise ValueError(
            "Saving an estimator with a custom affinity_embedding callable is not "
            "supported; its embedding is not part of the saved model."
        )
    # The encoder, if any, is inside the saved embedder (model_).
    params["encoder"] = None
    for key in ("hidden_units", "siamese_hidden_units"):
        params[key] = list(params[key])
    state = {
        "params": params,
        "n_features_in_": int(estimator.n_features_in_),
        "cluster_centers_": estimator.cluster_centers_.tolist(),
        "labels_": np.asarray(estimator.labels_).tolist(),
        "history_": estimator.history_,
    }
    path = os.path.abspath(path)
    if os.path.lexists(path):
        raise FileExistsError(f"path={path!r} already exists; choose a new path.")
    with atomic_directory(os.path.dirname(path)) as tmp:
        estimator.model_.save(os.path.join(tmp, EMBEDDER_FILE))
        with open(os.path.join(tmp, STATE_FILE), "w") as f:
            json.dump(state, f)
        publish(tmp, path)
    return path


def load_estimator(cls, path):
    """Load what ``save_estimator`` wrote into a new fitted ``cls`` instance."""
    missing = [f for f in (EMBEDDER_FILE, STATE_FILE) if not os.path.exists(os.path.join(path, f))]
    if missing:
        raise FileNotFoundError(
            f"path={path!r} is not a saved SpectralNet: missing {', '.join(missing)}."
        )
    with open(os.path.join(path, STATE_FILE)) as f:
        state = json.load(f)
    params = state["params"]
    for key in ("hidden_units", "siamese_hidden_units"):
        params[key] = tuple(params[key])
    estimator = cls(**params)
    estimator.model_ = keras.models.load_model(os.path.join(path, EMBEDDER_FILE))
    estimator.n_features_in_ = state["n_features_in_"]
    estimator.cluster_centers_ = np.asarray(state["cluster_centers_"], dtype=np.float32)
    estimator.labels_ = np.asarray(state["labels_"], dtype=np.int64)
    estimator.history_ = state["history_"]
    return estimator
