#!/usr/bin/env python
"""Small measurements behind the MNIST settings in harness/configs.py. Each
appends a table to BENCHMARKS.md (machine, date, command).

    python scripts/ablations.py affinity    # exact spectral clustering of 5,000 codes per affinity
    python scripts/ablations.py siamese     # Siamese output layer: ReLU (paper) vs linear
    python scripts/ablations.py codes [H5 ...]   # 10-NN label probe of the test digits' codes

The label probe (a 10-NN classifier) only measures how well a code space
separates the digits; SpectralNet never sees a label.
"""

import argparse
import glob
import os
import sys

import keras
from sklearn.neighbors import KNeighborsClassifier

from .records import append
from .records import ROOT, note_start
from .runconfig import AE_ALL
from spectralnet_tf.affinity import GaussianKNNAffinity
from spectralnet_tf.autoencoder import load_encoder
from spectralnet_tf.datasets import MNIST_N_TRAIN, load_dataset
from spectralnet_tf.metrics import acc
from spectralnet_tf.resources import sha256
from spectralnet_tf.neighbors import ExactNeighbors
from spectralnet_tf.spectral import spectral_clustering
from spectralnet_tf.siamese import build_siamese, make_pairs, train_siamese

#: The all-70k job's autoencoder (``run.py --dset mnist``'s default).
AE = os.path.join(ROOT, "pretrained_ae", AE_ALL)


def codes(n):
    x, y, _ = load_dataset("mnist")
    return load_encoder(AE).predict(x[:n], batch_size=4096, verbose=0), y[:n]


def purity(z, y, k=10):
    _, nbrs = ExactNeighbors().kneighbors(z, k)
    return float((y[nbrs] == y[:, None]).mean())


def ablate_affinity(command):
    z, y = codes(5000)
    rows = []
    for n_nbrs, scale_nbr, scale in [(3, 2, "global"), (10, 10, "global"), (10, 5, "local")]:
        aff = GaussianKNNAffinity(n_nbrs, scale_nbr, scale).fit(z, 1024)
        labels, _ = spectral_clustering(z, 10, aff)
        rows.append([n_nbrs, scale_nbr, scale, f"{acc(y, labels):.3f}"])
    append("Exact spectral clustering of the first 5,000 MNIST codes, unnormalized Laplacian",
           ["n_nbrs", "scale_nbr", "scale", "ACC"], rows, command)


def relu_output_siamese(input_dim, hidden_units, seed):
    """The paper's Table 3 variant: ReLU on the output layer too."""
    return keras.Sequential(
        [keras.Input((input_dim,))]
        + [keras.layers.Dense(u, activation="relu",
                              kernel_initializer=keras.initializers.GlorotUniform(seed=seed + i))
           for i, u in enumerate(hidden_units)])


def ablate_siamese(command):
    z, y = codes(10000)
    pairs = make_pairs(z, 2, "exact", seed=0)
    rows = [["(codes, no Siamese)", "", f"{purity(z, y):.3f}"]]
    for name, net in [("ReLU (paper)", relu_output_siamese(10, (256, 256, 10), 0)),
                      ("linear (ours)", build_siamese(10, (256, 256, 10), seed=0))]:
        train_siamese(net, z, pairs, batch_size=512, epochs=15, seed=0, verbose=0)
        s = net.predict(z, verbose=0)
        rows.append([name, int((s.max(axis=0) <= 0).sum()), f"{purity(s, y):.3f}"])
    append("Siamese output layer on the first 10,000 MNIST codes (256-256-10, 2-NN pairs, 15 epochs)",
           ["output layer", "dead output units", "10-NN label purity"], rows, command)


def probe(z_fit, y_fit, z_eval, y_eval):
    """Accuracy of a 10-NN classifier fitted on (z_fit, y_fit), on z_eval."""
    return float((KNeighborsClassifier(10).fit(z_fit, y_fit).predict(z_eval) == y_eval).mean())


def ablate_codes(command, files):
    """How well each autoencoder's code separates the 10k test digits (probe
    fitted on the 60k training codes), against held-out training digits."""
    x, y, _ = load_dataset("mnist")
    n = MNIST_N_TRAIN

    def probes(z):
        return [f"{probe(z[:50000], y[:50000], z[50000:n], y[50000:n]):.4f}",
                f"{probe(z[:n], y[:n], z[n:], y[n:]):.4f}"]

    rows = []
    for path in files or sorted(glob.glob(os.path.join(os.path.dirname(AE), "ae_mnist*.h5"))):
        z = load_encoder(path).predict(x, batch_size=4096, verbose=0)
        rows.append([os.path.basename(path), sha256(path)[:12], *probes(z)])
    rows.append(["(pixels)", "", *probes(x)])
    append("10-NN label probe of MNIST autoencoder codes",
           ["weights", "sha256", "training digits 50k-60k (from the first 50k)",
            "test digits (from the 60k)"], rows, command)


def main(argv=None):
    note_start()  # the tree this run starts from names its records
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["affinity", "siamese", "codes"])
    p.add_argument("files", nargs="*", help="codes: autoencoder weight files "
                   "(default: pretrained_ae/ae_mnist*.h5)")
    args = p.parse_args(argv)
    command = "python scripts/ablations.py " + " ".join(argv)
    if args.what == "codes":
        return ablate_codes(command, args.files)
    if args.files:
        p.error(f"only 'codes' takes weight files, got {args.files} for {args.what!r}.")
    {"affinity": ablate_affinity, "siamese": ablate_siamese}[args.what](command)


if __name__ == "__main__":
    main()
