"""Export and persistence of a fitted ``SpectralNet``.

- ``export_saved_model``: a SavedModel for TF-Serving, in a new integer version
  directory ``base_dir/name/<version>/``. Its ``serving_default`` signature takes
  raw input ``x`` (float32, [None, d]) and returns ``embedding`` (float32,
  [None, k]), ``cluster`` (int64, [None]) and ``distances`` (float32,
  [None, n_clusters]); the k-means centroids are constants of the graph.
- ``save_estimator`` / ``load_estimator``: a directory with the embedder as a
  standard ``.keras`` file plus everything else the fitted estimator holds
  (encoder, Siamese net, affinity scale, centroids, embedding, histories).

Both are written atomically (``atomic.py``).
"""

import json
import numbers
import os
import re

import keras
import numpy as np
import tensorflow as tf

from .atomic import atomic_directory, atomic_file, publish
from .centroids import centroid_distances, nearest_centroid

SIGNATURE = "serving_default"
EMBEDDER_FILE = "embedder.keras"
STATE_FILE = "estimator.json"
SIAMESE_FILE = "siamese.keras"
ARRAYS_FILE = "arrays.npz"
#: Version of the saved-estimator layout (embedder.keras, arrays.npz, estimator.json).
FORMAT_VERSION = 2
#: ``params["encoder"]`` in estimator.json when the encoder is the embedder's first layer.
ENCODER_IN_EMBEDDER = "embedder.keras:layers[0]"
MODELS_CONFIG = "models.config"
#: Where TF-Serving sees the export directory (the Docker mount in the README).
DEFAULT_SERVING_ROOT = "/models"
#: Model names: one directory, and a name TF-Serving accepts in a URL.
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MODELS_CONFIG_HEADER = """\
# TF-Serving ModelServerConfig (text format), rewritten by every export for the
# models present here. Serve it with:
#   docker run -p 8500:8500 -p 8501:8501 -v "$PWD/export:/models" tensorflow/serving \\
#     --model_config_file=/models/models.config
# base_path is where the server sees this folder ({root}); it loads each model's
# newest integer version directory.
"""


def _versions(model_dir):
    return [int(d) for d in os.listdir(model_dir) if d.isdigit()]


def serving_function(embedder, centers):
    """The ``serving_default`` computation: raw x -> embedding, cluster, distances.

    A plain function; ``export_saved_model`` gives it its input signature. The
    centroids become constants of the exported graph."""
    centers = tf.constant(np.asarray(centers, dtype=np.float32), name="centroids")

    def serve(x):
        embedding = embedder(x, training=False)
        distances = centroid_distances(embedding, centers)
        return {
            "embedding": embedding,
            "cluster": nearest_centroid(distances),
            "distances": distances,
        }

    return serve


def export_archive(embedder, centers):
    """A ``keras.export.ExportArchive`` with the ``serving_default`` endpoint.

    Keras 3's own export path: it tracks the model's variables so that both
    loaders work, TF2's ``tf.saved_model.load`` and the session-based one of
    TF-Serving and ``saved_model_cli run`` (restore through the SaverDef, then
    run the signature). A ``tf.Module`` holding a Keras 3 model and saved with
    ``tf.saved_model.save`` passes the first and fails the second ("Could not
    find variable ...")."""
    d = embedder.input_shape[-1]
    archive = keras.export.ExportArchive()
    # No archive.track(embedder): the endpoint's variables are tracked anyway,
    # and tracking the model as well stored every weight twice (Keras 3.15).
    archive.add_endpoint(
        SIGNATURE, serving_function(embedder, centers),
        input_signature=[tf.TensorSpec([None, d], tf.float32, name="x")],
    )
    return archive


def export_saved_model(embedder, centers, base_dir, name="spectralnet",
                       serving_root=DEFAULT_SERVING_ROOT):
    """Write a new version ``base_dir/name/<N+1>/`` and return its path.

    The SavedModel is written to a hidden temporary directory beside the
    versions and renamed into place, so TF-Serving (which only loads integer
    directories) never sees a partial version, and existing versions are never
    touched. ``base_dir/models.config`` is then rewritten for every model in
    ``base_dir`` (see ``write_models_config``).
    """
    if not isinstance(name, str) or not MODEL_NAME.fullmatch(name):
        raise ValueError(
            f"name must be letters, digits, '.', '_' or '-' (a directory and a TF-Serving "
            f"model name), got name={name!r}."
        )
    model_dir = os.path.join(base_dir, name)
    archive = export_archive(embedder, centers)
    with atomic_directory(model_dir) as tmp:
        archive.write_out(tmp, verbose=False)
        while True:  # another writer may take a version number first
            final = os.path.join(model_dir, str(max(_versions(model_dir), default=0) + 1))
            try:
                publish(tmp, final)
                break
            except FileExistsError:
                continue
    write_models_config(base_dir, serving_root)
    return final


def served_models(base_dir):
    """Names of the model directories in ``base_dir`` that hold a version."""
    if not os.path.isdir(base_dir):
        return []
    return sorted(
        name for name in os.listdir(base_dir)
        if MODEL_NAME.fullmatch(name) and os.path.isdir(os.path.join(base_dir, name))
        and _versions(os.path.join(base_dir, name))
    )


def write_models_config(base_dir, serving_root=DEFAULT_SERVING_ROOT):
    """(Re)write ``base_dir/models.config``, TF-Serving's ModelServerConfig in
    text format, naming every model present in ``base_dir``; return its path.

    ``base_path`` is ``serving_root/NAME``: where the server sees ``base_dir``
    (``/models`` when the official Docker image mounts it there, as in the
    README). Written atomically; the server loads the newest version of each.
    """
    entries = "".join(
        f'  config {{\n    name: "{name}"\n    base_path: "{serving_root.rstrip("/")}/{name}"\n'
        f'    model_platform: "tensorflow"\n  }}\n'
        for name in served_models(base_dir)
    )
    path = os.path.join(base_dir, MODELS_CONFIG)
    with atomic_file(path) as f:
        f.write(MODELS_CONFIG_HEADER.format(root=serving_root.rstrip("/")))
        f.write(f"model_config_list {{\n{entries}}}\n")
    return path


def save_estimator(estimator, path):
    """Save a fitted estimator to the new directory ``path`` (atomically).

    ``embedder.keras`` is the whole raw-input model ``model_`` (the encoder,
    if any, inside it), ``siamese.keras`` the Siamese net, ``arrays.npz`` the
    embedding, labels and centroids, and ``estimator.json`` the parameters,
    the fitted affinity's scale and the histories.
    """
    params = estimator.get_params()
    if callable(params["affinity_embedding"]):
        raise ValueError(
            "Saving an estimator with a custom affinity_embedding callable is not "
            "supported; its embedding is not part of the saved model."
        )
    if isinstance(params["random_state"], numbers.Integral):
        params["random_state"] = int(params["random_state"])  # e.g. numpy.int64, for JSON
    elif params["random_state"] is not None:
        raise ValueError(
            "Saving needs random_state None or an int (it is stored as JSON), got "
            f"random_state={params['random_state']!r}."
        )
    # The encoder is saved inside the embedder (model_ = encoder -> F_theta).
    params["encoder"] = ENCODER_IN_EMBEDDER if estimator.encoder is not None else None
    params["distribute"] = None  # a runtime resource, not a parameter of the model
    for key in ("hidden_units", "siamese_hidden_units"):
        params[key] = list(params[key])
    affinity = estimator.affinity_
    state = {
        "format": FORMAT_VERSION,
        "params": params,
        "n_features_in_": int(estimator.n_features_in_),
        "feature_names_in_": (estimator.feature_names_in_.tolist()
                              if hasattr(estimator, "feature_names_in_") else None),
        "affinity_scale_": affinity.scale_,
        "history_": estimator.history_,
        "siamese_history_": getattr(estimator, "siamese_history_", None),
    }
    path = os.path.abspath(path)
    if os.path.lexists(path):
        raise FileExistsError(f"path={path!r} already exists; choose a new path.")
    with atomic_directory(os.path.dirname(path)) as tmp:
        estimator.model_.save(os.path.join(tmp, EMBEDDER_FILE))
        if hasattr(estimator, "siamese_"):
            estimator.siamese_.save(os.path.join(tmp, SIAMESE_FILE))
        np.savez(os.path.join(tmp, ARRAYS_FILE), embedding_=estimator.embedding_,
                 labels_=estimator.labels_, cluster_centers_=estimator.cluster_centers_)
        with open(os.path.join(tmp, STATE_FILE), "w") as f:
            json.dump(state, f)
        publish(tmp, path)
    return path


def load_estimator(cls, path):
    """Load what ``save_estimator`` wrote into a new fitted ``cls`` instance:
    ``transform``, ``predict`` and a new ``fit`` behave as the original's."""
    def missing(files):
        absent = [f for f in files if not os.path.exists(os.path.join(path, f))]
        if absent:
            raise FileNotFoundError(
                f"path={path!r} is not a saved SpectralNet: missing {', '.join(absent)}."
            )

    missing((EMBEDDER_FILE, STATE_FILE, ARRAYS_FILE))
    with open(os.path.join(path, STATE_FILE)) as f:
        state = json.load(f)
    if state["params"].get("affinity_embedding") == "siamese":
        missing((SIAMESE_FILE,))
    if state.get("format") != FORMAT_VERSION:
        raise ValueError(
            f"path={path!r} was saved in format {state.get('format')!r}; this version "
            f"reads format {FORMAT_VERSION}."
        )
    params = state["params"]
    for key in ("hidden_units", "siamese_hidden_units"):
        params[key] = tuple(params[key])
    model = keras.models.load_model(os.path.join(path, EMBEDDER_FILE))
    # With an encoder, model_ is Sequential([encoder, F_theta]): the same layers serve both.
    params["encoder"] = model.layers[0] if params["encoder"] == ENCODER_IN_EMBEDDER else None
    estimator = cls(**params)
    estimator.model_ = model
    estimator.n_features_in_ = state["n_features_in_"]
    if state["feature_names_in_"] is not None:
        estimator.feature_names_in_ = np.asarray(state["feature_names_in_"], dtype=object)
    embedding = None
    if params["affinity_embedding"] == "siamese":
        estimator.siamese_ = embedding = keras.models.load_model(os.path.join(path, SIAMESE_FILE))
        estimator.siamese_history_ = state["siamese_history_"]
    estimator.affinity_ = estimator._make_affinity(embedding)
    estimator.affinity_.scale_ = state["affinity_scale_"]
    with np.load(os.path.join(path, ARRAYS_FILE)) as arrays:
        for name in ("embedding_", "labels_", "cluster_centers_"):
            setattr(estimator, name, arrays[name])
    estimator.history_ = state["history_"]
    return estimator
