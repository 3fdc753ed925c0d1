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
from sklearn.base import clone

from .affinity import AFFINITIES, FullGaussianAffinity, GaussianKNNAffinity, PrecomputedAffinity
from .atomic import atomic_directory, atomic_file, publish
from .centroids import centroid_distances, nearest_centroid
from .nclusters import Eigengap
from .initializers import RandomInit, SpectralInit
from .schedule import Schedule
from .siamese import SIAMESE_SCHEDULE, SiameseEmbedding
from .views import Shift

SIGNATURE = "serving_default"
EMBEDDER_FILE = "embedder.keras"
STATE_FILE = "estimator.json"
SIAMESE_FILE = "siamese.keras"
ARRAYS_FILE = "arrays.npz"
#: Version of the saved-estimator layout (embedder.keras, arrays.npz, estimator.json).
#: 5: ``group_weight`` a parameter of SpectralNet, not of the affinity; 4:
#: ``normalize_rows_`` saved (a version that cannot read it would assign raw
#: rows to centroids of unit rows); 3: the affinity and the Siamese embedding
#: saved as objects (class and parameters); 2: as SpectralNet's flat
#: parameters. 2 and 3 are still read, as fits on the rows as they are.
FORMAT_VERSION = 6
READABLE_FORMATS = (2, 3, 4, 5, 6)
#: Parameters of the parts that formats before 5 saved and no part has now:
#: the label classifier's strength and the graph views are gone, and a
#: group pair's weight is SpectralNet's ``group_weight``.
REMOVED_PART_PARAMS = ("label_strength", "group_weight", "graph_views")
#: SpectralNet's parameters that formats before 5 saved and it has no more: the
#: orthogonalization minibatch is the gradient one, the gradient projected.
REMOVED_PARAMS = ("ortho_batch_size", "gradient")
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


#: The error of a served request with a NaN or inf value in x.
NON_FINITE_INPUT = "x holds NaN or inf values: every input value must be finite"


def _versions(model_dir):
    return [int(d) for d in os.listdir(model_dir) if d.isdigit()]


def serving_function(embedder, centers, normalize_rows=False):
    """The ``serving_default`` computation: raw x -> embedding, cluster, distances.
    Non-finite input is refused (InvalidArgumentError). With ``normalize_rows``
    the distances are those of the embedding scaled to unit length, as the
    centroids were fitted (``centroids.centroid_distances``).

    A plain function; ``export_saved_model`` gives it its input signature. The
    centroids become constants of the exported graph."""
    centers = tf.constant(np.asarray(centers, dtype=np.float32), name="centroids")

    def serve(x):
        # A NaN or inf row would give a NaN embedding and an arbitrary cluster;
        # refuse it instead: InvalidArgumentError, which TF-Serving returns to
        # the client as INVALID_ARGUMENT.
        x = tf.debugging.assert_all_finite(x, NON_FINITE_INPUT)
        embedding = embedder(x, training=False)
        distances = centroid_distances(embedding, centers, normalize_rows)
        return {
            "embedding": embedding,
            "cluster": nearest_centroid(distances),
            "distances": distances,
        }

    return serve


def export_archive(embedder, centers, normalize_rows=False):
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
        SIGNATURE, serving_function(embedder, centers, normalize_rows),
        input_signature=[tf.TensorSpec([None, d], tf.float32, name="x")],
    )
    return archive


def export_saved_model(embedder, centers, base_dir, name="spectralnet",
                       serving_root=DEFAULT_SERVING_ROOT, normalize_rows=False):
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
    archive = export_archive(embedder, centers, normalize_rows)
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


#: The parts saved by class name and parameters (estimator.json, format 3 and later).
PART_CLASSES = {cls.__name__: cls for cls in (GaussianKNNAffinity, FullGaussianAffinity,
                                             PrecomputedAffinity, SiameseEmbedding, Eigengap,
                                             Shift, Schedule, SpectralInit, RandomInit)}
#: Format 2 (flat parameters): SpectralNet's siamese_* and neighbors, now
#: SiameseEmbedding's; n_nbrs, scale_nbr, scale, now the affinity's.
V2_SIAMESE = ("hidden_units", "output_activation", "n_nbrs", "positives_per_point", "batch_size",
              "learning_rate", "max_epochs", "steps_per_epoch", "dtype_policy")
V2_AFFINITY = ("n_nbrs", "scale_nbr", "scale")


def part_to_json(value):
    """A parameter as JSON: an affinity or ``SiameseEmbedding`` object as
    ``{"class": name, "params": {...}}`` (its embedding, set only on fitted
    copies, left out); a tuple as a list; anything else as it is."""
    if isinstance(value, tuple(PART_CLASSES.values())):
        params = {key: part_to_json(v) for key, v in value.get_params(deep=False).items()
                  if key != "embedding"}
        return {"class": type(value).__name__, "params": params}
    return list(value) if isinstance(value, tuple) else value


def part_from_json(value, tuples=("hidden_units",)):
    """The inverse of ``part_to_json`` (the parameters of older formats that
    no part has now, ``REMOVED_PART_PARAMS``, left out)."""
    if isinstance(value, dict) and set(value) == {"class", "params"}:
        params = {key: tuple(v) if key in tuples and isinstance(v, list) else part_from_json(v)
                  for key, v in value["params"].items() if key not in REMOVED_PART_PARAMS}
        return PART_CLASSES[value["class"]](**params)
    return value


#: Format 5 and earlier: the parameters, flat on SpectralNet and on
#: SiameseEmbedding, that a ``Schedule`` object holds since format 6.
SCHEDULE_PARAMS = ("learning_rate", "max_epochs", "steps_per_epoch", "patience", "min_lr", "tol")


def params_from_format5(params):
    """A format-5 save's parameters in today's layout: SpectralNet's and its
    SiameseEmbedding's flat schedule parameters into a ``Schedule`` each,
    so that a refit trains as the original did."""
    def folded(params, defaults):
        params = dict(params)
        schedule = {**defaults, **{key: params.pop(key) for key in SCHEDULE_PARAMS
                                   if key in params}}
        return {**params, "schedule": {"class": "Schedule", "params": schedule}}

    params = folded(params, {})
    embedding = params.get("affinity_embedding")
    if isinstance(embedding, dict):
        params["affinity_embedding"] = {
            **embedding, "params": folded(embedding["params"], SIAMESE_SCHEDULE)}
    return params


def params_from_format4(params):
    """A format-4 save's parameters in today's layout: the affinity's
    ``group_weight`` becomes SpectralNet's, and ``tol`` is 0 (no fit before
    format 5 stopped early), so that a refit trains as the original did."""
    params = {"tol": 0.0, **params}
    affinity = params.get("affinity")
    if isinstance(affinity, dict) and "group_weight" in affinity.get("params", {}):
        params = {**params, "group_weight": affinity["params"]["group_weight"]}
    return params


def params_from_format2(params):
    """A format-2 save's flat parameters in today's layout: ``n_nbrs``,
    ``scale_nbr``, ``scale`` into the affinity object and the ``siamese_*``
    parameters, ``neighbors`` and the shared ``patience`` and ``min_lr`` into
    a ``SiameseEmbedding`` (which format 2 trained with)."""
    params = dict(params)
    ranks = {key: params.pop(key) for key in V2_AFFINITY if key in params}
    kind = params.get("affinity", "knn")
    if kind == "full":
        ranks.pop("n_nbrs", None)
    params["affinity"] = {"class": AFFINITIES[kind].__name__, "params": ranks}
    siamese = {key: params.pop(f"siamese_{key}") for key in V2_SIAMESE
               if f"siamese_{key}" in params}
    siamese["neighbors"] = params.pop("neighbors", "auto")
    if params.get("affinity_embedding") == "siamese":
        siamese.update(patience=params["patience"], min_lr=params["min_lr"])
        params["affinity_embedding"] = {"class": "SiameseEmbedding", "params": siamese}
    return params


def save_estimator(estimator, path):
    """Save a fitted estimator to the new directory ``path`` (atomically).

    ``embedder.keras`` is the whole raw-input model ``model_`` (the encoder,
    if any, inside it), ``siamese.keras`` the Siamese net, ``arrays.npz`` the
    embedding, labels and centroids, and ``estimator.json`` the parameters
    (the affinity and the Siamese embedding by class and parameters), the
    fitted affinity's scale and the histories.
    """
    params = estimator.get_params(deep=False)
    embedding = params["affinity_embedding"]
    if callable(embedding) and not isinstance(embedding, SiameseEmbedding):
        raise ValueError(
            "Saving an estimator with a custom affinity_embedding callable is not "
            "supported; its embedding is not part of the saved model."
        )
    views = getattr(embedding, "views", None)
    if views is not None and not isinstance(views, (str, *PART_CLASSES.values())):
        raise ValueError(
            "Saving an estimator whose SiameseEmbedding has a views callable of your own is "
            f"not supported (its parameters are stored as JSON), got views={views!r}; "
            "views='shift' or a views.Shift save."
        )
    affinity = params["affinity"]
    if not isinstance(affinity, str) and getattr(affinity, "embedding", None) is not None:
        raise ValueError(
            "Saving an estimator whose affinity has an embedding of its own is not "
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
    params = {key: part_to_json(value) for key, value in params.items()}
    state = {
        "format": FORMAT_VERSION,
        "params": params,
        "n_features_in_": int(estimator.n_features_in_),
        "feature_names_in_": (estimator.feature_names_in_.tolist()
                              if hasattr(estimator, "feature_names_in_") else None),
        "affinity_scale_": estimator.affinity_.scale_,
        "n_clusters_": int(estimator.n_clusters_),
        "normalize_rows_": bool(estimator.normalize_rows_),
        "eigenvalues_": (estimator.eigenvalues_.tolist()
                         if hasattr(estimator, "eigenvalues_") else None),
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
        groups = getattr(estimator, "group_labels_", None)
        np.savez(os.path.join(tmp, ARRAYS_FILE), embedding_=estimator.embedding_,
                 labels_=estimator.labels_, cluster_centers_=estimator.cluster_centers_,
                 **({} if groups is None else {"group_labels_": groups}))
        with open(os.path.join(tmp, STATE_FILE), "w") as f:
            json.dump(state, f)
        publish(tmp, path)
    return path


def load_estimator(cls, path):
    """Load what ``save_estimator`` wrote into a new fitted ``cls`` instance:
    ``transform``, ``predict`` and a new ``fit`` behave as the original's.
    Format 2 (flat affinity and ``siamese_*`` parameters) is read too, its
    parameters moved into the objects (``params_from_format2``)."""
    def missing(files):
        absent = [f for f in files if not os.path.exists(os.path.join(path, f))]
        if absent:
            raise FileNotFoundError(
                f"path={path!r} is not a saved SpectralNet: missing {', '.join(absent)}."
            )

    missing((EMBEDDER_FILE, STATE_FILE, ARRAYS_FILE))
    with open(os.path.join(path, STATE_FILE)) as f:
        state = json.load(f)
    version = state.get("format")
    if version not in READABLE_FORMATS:
        raise ValueError(
            f"path={path!r} was saved in format {version!r}; this version reads formats "
            f"{', '.join(map(str, READABLE_FORMATS))}: save it again with the version "
            "that wrote it, or fit it again."
        )
    params = state["params"] if version >= 3 else params_from_format2(state["params"])
    if version <= 4:
        params = {key: value for key, value in params_from_format4(params).items()
                  if key not in REMOVED_PARAMS}
    if version <= 5:
        params = params_from_format5(params)
    params = {key: part_from_json(value) for key, value in params.items()}
    siamese = isinstance(params["affinity_embedding"], SiameseEmbedding)
    if siamese:
        missing((SIAMESE_FILE,))
    if isinstance(params["hidden_units"], list):
        params["hidden_units"] = tuple(params["hidden_units"])
    model = keras.models.load_model(os.path.join(path, EMBEDDER_FILE))
    # With an encoder, model_ is Sequential([encoder, F_theta]): the same layers serve both.
    params["encoder"] = model.layers[0] if params["encoder"] == ENCODER_IN_EMBEDDER else None
    estimator = cls(**params)
    estimator.model_ = model
    estimator.n_features_in_ = state["n_features_in_"]
    if state["feature_names_in_"] is not None:
        estimator.feature_names_in_ = np.asarray(state["feature_names_in_"], dtype=object)
    embedding = None
    estimator.affinity_embedding_ = None
    if siamese:
        embedding = keras.models.load_model(os.path.join(path, SIAMESE_FILE))
        fitted = clone(params["affinity_embedding"])
        fitted.model_, fitted.history_ = embedding, state["siamese_history_"]
        estimator.affinity_embedding_ = fitted
        estimator.siamese_, estimator.siamese_history_ = embedding, state["siamese_history_"]
    estimator.affinity_ = estimator.make_affinity(embedding)
    estimator.affinity_.scale_ = state["affinity_scale_"]
    # Saves from before n_clusters_ existed had an integer n_clusters.
    estimator.n_clusters_ = state.get("n_clusters_", params["n_clusters"])
    # Formats 2 and 3 fitted their centroids on the rows as they are.
    estimator.normalize_rows_ = state["normalize_rows_"] if version >= 4 else False
    if state.get("eigenvalues_") is not None:
        estimator.eigenvalues_ = np.asarray(state["eigenvalues_"])
    with np.load(os.path.join(path, ARRAYS_FILE)) as arrays:
        for name in ("embedding_", "labels_", "cluster_centers_"):
            setattr(estimator, name, arrays[name])
        # Only a fit with groups has them (and saves from before they existed lack them).
        estimator.group_labels_ = (arrays["group_labels_"] if "group_labels_" in arrays.files
                                   else None)
    estimator.history_ = state["history_"]
    return estimator
