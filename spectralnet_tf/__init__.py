"""spectralnet_tf: SpectralNet (Shaham et al., ICLR 2018) in TensorFlow 2 / Keras 3.

The public names below are imported on first use (PEP 562), so that
``import spectralnet_tf`` (and the ``spectralnet --help`` command line) does
not start TensorFlow. ``from spectralnet_tf import SpectralNet`` works as
usual. Loading ``embedder.keras`` with plain ``keras.models.load_model`` needs
the embedder's own layers (``Standardize``, ``Orthonorm``, both in
``networks``) registered with Keras: they are once anything of the estimator
is imported (or ``spectralnet_tf.Orthonorm`` touched), and at once here when
Keras is already imported.

Importing the package turns on TensorFlow's oneDNN CPU kernels where
``TF_ENABLE_ONEDNN_OPTS`` is unset and TensorFlow is not yet imported
(``hardware.tensorflow_cpu_defaults``); set it yourself to choose otherwise.
"""

import importlib
import sys

from .hardware import tensorflow_cpu_defaults

tensorflow_cpu_defaults()  # before anything imports TensorFlow

#: Public name -> the submodule that defines it. Add new exports here.
_EXPORTS = {
    "SpectralNet": "estimator",
    "Orthonorm": "networks",  # with Standardize: the embedder's layers, registered together
    "Standardize": "networks",
    "GaussianKNNAffinity": "affinity",
    "FullGaussianAffinity": "affinity",
    "PrecomputedAffinity": "affinity",
    "Eigengap": "nclusters",
    "SiameseEmbedding": "siamese",
    "Schedule": "schedule",
    "ExactNeighbors": "neighbors",
    "AnnoyNeighbors": "neighbors",
    "acc": "metrics",
    "nmi": "metrics",
    "grassmann": "metrics",
}

__all__ = list(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


if "keras" in sys.modules:  # Keras (and TensorFlow) already paid for: register the layers now
    importlib.import_module(".networks", __name__)
