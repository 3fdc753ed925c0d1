"""Files that ship with the package: the pretrained autoencoder weights.

In a source checkout (or an editable install) they are the repository's
``pretrained_ae/``; a built package (``pip install .``) carries the same files
as ``spectralnet_tf/pretrained_ae/`` (see pyproject.toml). Either way they are
found from this file, never from the current directory.
"""

import hashlib
import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
#: Where the weights may be: inside the installed package, or beside it in a checkout.
PRETRAINED_DIRS = (
    os.path.join(_PACKAGE, "pretrained_ae"),
    os.path.join(os.path.dirname(_PACKAGE), "pretrained_ae"),
)


def pretrained_path(name):
    """Path of the shipped file ``name`` (e.g. ``ae_mnist_weights.h5``).

    Returns the first of ``PRETRAINED_DIRS`` that holds it; if none does,
    the path it would have in the first folder that exists, so that the
    caller's "not found" error names a real place.
    """
    for folder in PRETRAINED_DIRS:
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    folder = next((d for d in PRETRAINED_DIRS if os.path.isdir(d)), PRETRAINED_DIRS[-1])
    return os.path.join(folder, name)


def sha256(path):
    """Hex SHA-256 of a file (read in 1 MiB blocks): which weights a result used."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
