"""One peer method on one data set, in the peers' environment (``harness/peers.py``):

    .peers-venv/bin/python harness/peer_worker.py METHOD DATA.npz OUT.json --seed S [--options JSON]

DATA.npz holds ``x`` (float32, n x d) and ``k`` (the number of clusters);
nothing here reads labels. OUT.json gets ``method``, ``labels`` (n ints),
``fit_seconds`` (the fit and the predict alone), ``startup_seconds`` (this
process's imports of the method's packages, before the fit), ``params``
(the method's arguments as used), ``versions`` and ``seed``.

Methods:

- ``kmeans``: scikit-learn's ``KMeans(k, n_init=10, random_state=seed)``.
  Needs only scikit-learn and NumPy (so it runs in the main environment
  too: the tests run it there).
- ``umap``: UMAP + k-means as in N2D (McConville et al. 2019):
  ``umap.UMAP(n_components=k, n_neighbors=20, min_dist=0.0,
  random_state=seed)``, then ``KMeans(k, n_init=10, random_state=seed)``
  on the embedding.
- ``authors``: the authors' PyTorch package ``spectralnet`` 1.1.0 with its
  defaults and an output width of k: ``SpectralNet(n_clusters=k,
  spectral_hiddens=[1024, 1024, 512, k])`` (the default ``spectral_hiddens``
  is ``[1024, 1024, 512, 10]`` and its constructor refuses a last width other
  than ``n_clusters``), ``fit(X)`` then ``predict(X)`` on the same
  ``torch.Tensor``, as its README's usage section does. ``--options JSON``
  adds or replaces keyword arguments (the MNIST command passes its example
  script's ``should_use_ae`` / ``should_use_siamese``). The package keeps the
  autoencoder's and the Siamese net's weights in its own install folder
  (``spectralnet/_trainers/weights/*.pth``) and loads them instead of
  training when they exist; they are deleted before each fit so that no
  run reuses another data set's nets (``params["removed_cached_weights"]``
  names any that were there). It seeds nothing itself: ``random``,
  ``numpy.random`` (its k-means has no ``random_state``) and ``torch`` are
  seeded with the seed.

This file must not import spectralnet_tf, tensorflow or the harness.
"""

import argparse
import json
import os
import sys
import time

METHODS = ("kmeans", "umap", "authors")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("method", choices=METHODS)
    p.add_argument("data", help=".npz with x (n x d float32) and k")
    p.add_argument("out", help="where to write the result JSON")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--options", type=json.loads, default={},
                   help="authors: a JSON object of keyword arguments for spectralnet.SpectralNet")
    args = p.parse_args(argv)
    if not isinstance(args.options, dict):
        p.error(f"--options must be a JSON object, got {args.options!r}")
    if args.options and args.method != "authors":
        p.error(f"--options is for the authors' package only, not {args.method!r}")
    return args


def versions(names):
    import importlib.metadata as metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def run_kmeans(x, k, seed, options):
    from sklearn.cluster import KMeans

    start = time.perf_counter()
    labels = KMeans(k, n_init=10, random_state=seed).fit_predict(x)
    return labels, time.perf_counter() - start, {"n_clusters": k, "n_init": 10,
                                                 "random_state": seed}


def run_umap(x, k, seed, options):
    import umap
    from sklearn.cluster import KMeans

    params = {"n_components": k, "n_neighbors": 20, "min_dist": 0.0, "random_state": seed}
    start = time.perf_counter()
    embedding = umap.UMAP(**params).fit_transform(x)
    labels = KMeans(k, n_init=10, random_state=seed).fit_predict(embedding)
    return labels, time.perf_counter() - start, {"umap": params, "kmeans": {
        "n_clusters": k, "n_init": 10, "random_state": seed}}


def authors_weights_dir():
    """The folder where spectralnet 1.1.0's trainers keep (and reload) the
    autoencoder's and the Siamese net's weights."""
    import spectralnet._trainers as trainers

    return os.path.join(os.path.dirname(os.path.abspath(trainers.__file__)), "weights")


def remove_cached_weights():
    folder = authors_weights_dir()
    removed = []
    for name in ("ae_weights.pth", "siamese_weights.pth"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            os.remove(path)
            removed.append(name)
    return removed


def run_authors(x, k, seed, options):
    import inspect
    import random

    import numpy as np
    import torch
    from spectralnet import SpectralNet

    params = {"n_clusters": k, "spectral_hiddens": [1024, 1024, 512, k], **options}
    removed = remove_cached_weights()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    X = torch.from_numpy(x)
    start = time.perf_counter()
    net = SpectralNet(**params)
    net.fit(X)
    labels = net.predict(X)
    seconds = time.perf_counter() - start
    remove_cached_weights()  # leave no nets behind for the next run
    # every constructor argument as the fitted object holds it: the defaults in effect
    resolved = {name: getattr(net, name, None)
                for name in inspect.signature(SpectralNet.__init__).parameters if name != "self"}
    return labels, seconds, {**params, "removed_cached_weights": removed, "resolved": resolved,
                             "device": str(net.device),
                             "torch_threads": torch.get_num_threads()}


def main(argv=None):
    args = parse_args(argv)
    import numpy as np

    with np.load(args.data) as data:
        x = np.ascontiguousarray(data["x"], dtype=np.float32)
        k = int(data["k"])
    if x.ndim != 2 or not 1 <= k <= len(x):
        raise SystemExit(f"peer_worker: x must be (n, d) with 1 <= k <= n, got {x.shape}, k={k}")
    start = time.perf_counter()
    if args.method == "umap":
        import umap  # noqa: F401  (its imports compile nothing yet; timed as start-up)
    elif args.method == "authors":
        import spectralnet  # noqa: F401
        import torch  # noqa: F401
    import sklearn.cluster  # noqa: F401
    startup = time.perf_counter() - start
    run = {"kmeans": run_kmeans, "umap": run_umap, "authors": run_authors}[args.method]
    labels, seconds, params = run(x, k, args.seed, args.options)
    out = {"method": args.method, "seed": args.seed, "n": int(len(x)), "d": int(x.shape[1]),
           "k": k, "labels": np.asarray(labels).astype(int).tolist(),
           "fit_seconds": seconds, "startup_seconds": startup, "params": params,
           "versions": {"python": sys.version.split()[0],
                        **versions(("numpy", "scikit-learn", "umap-learn", "pynndescent",
                                    "numba", "torch", "spectralnet"))}}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
