"""spectralnet_tf: SpectralNet (Shaham et al., ICLR 2018) in TensorFlow 2 / Keras 3."""

from .affinity import FullGaussianAffinity, GaussianKNNAffinity
from .estimator import SpectralNet
from .metrics import acc, grassmann, nmi
from .neighbors import AnnoyNeighbors, ExactNeighbors
from .orthonorm import Orthonorm

__all__ = [
    "SpectralNet",
    "Orthonorm",
    "GaussianKNNAffinity",
    "FullGaussianAffinity",
    "ExactNeighbors",
    "AnnoyNeighbors",
    "acc",
    "nmi",
    "grassmann",
]
__version__ = "0.1.0"
