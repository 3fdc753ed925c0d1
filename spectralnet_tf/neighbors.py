"""Nearest-neighbour backends behind one interface.

``backend.kneighbors(x, n_neighbors)`` returns ``(distances, indices)`` of shape
(n, n_neighbors), ascending, each point's own index left out. ``ExactNeighbors``
is scikit-learn's exact search; ``AnnoyNeighbors`` is Spotify's approximate
search (as in the paper's Reuters experiment), for large n.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.neighbors import NearestNeighbors

#: Above this many points ``make_neighbors("auto")`` picks annoy.
AUTO_EXACT_MAX_N = 20000


def _drop_self(dist, idx, n_neighbors, chunk=65536):
    """Remove each row's own index (wherever it sits) and keep n_neighbors.
    Done a chunk of rows at a time: the temporaries stay small for large n."""
    n = idx.shape[0]
    out_dist = np.empty((n, n_neighbors), dtype=dist.dtype)
    out_idx = np.empty((n, n_neighbors), dtype=idx.dtype)
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        is_other = idx[rows] != np.arange(start, min(start + chunk, n))[:, None]
        order = np.argsort(~is_other, axis=1, kind="stable")[:, :n_neighbors]
        out_dist[rows] = np.take_along_axis(dist[rows], order, axis=1)
        out_idx[rows] = np.take_along_axis(idx[rows], order, axis=1)
    return out_dist, out_idx


def _check_n_neighbors(n_neighbors, n):
    if not 1 <= n_neighbors < n:
        raise ValueError(
            f"n_neighbors must be in [1, n_samples - 1] = [1, {n - 1}], "
            f"got n_neighbors={n_neighbors}."
        )


class ExactNeighbors:
    """Exact Euclidean k-nearest neighbours (scikit-learn)."""

    def __init__(self, n_jobs=None):
        self.n_jobs = n_jobs

    def kneighbors(self, x, n_neighbors):
        x = np.asarray(x, dtype=np.float32)
        _check_n_neighbors(n_neighbors, len(x))
        nn = NearestNeighbors(n_neighbors=n_neighbors + 1, n_jobs=self.n_jobs).fit(x)
        dist, idx = nn.kneighbors(x)
        return _drop_self(dist, idx, n_neighbors)


class AnnoyNeighbors:
    """Approximate Euclidean k-nearest neighbours (annoy).

    Parameters
    ----------
    n_trees : int, default=50
        More trees: better recall, slower build.
    search_k : int, default=-1
        Nodes inspected per query; -1 lets annoy use ``n_trees * n``.
    random_state : int or None
        Seed of the forest.
    n_jobs : int or None, default=None
        Threads that query the forest (annoy releases the GIL while it
        searches); None: all cores. The results do not depend on it.
    build_jobs : int, default=1
        annoy's own threads for the build. With more than one the forest
        depends on the thread count; 1 keeps it the same on every machine.
    """

    def __init__(self, n_trees=50, search_k=-1, random_state=None, n_jobs=None, build_jobs=1):
        self.n_trees = n_trees
        self.search_k = search_k
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.build_jobs = build_jobs

    def kneighbors(self, x, n_neighbors, chunk=16384):
        from annoy import AnnoyIndex

        x = np.asarray(x, dtype=np.float32)
        _check_n_neighbors(n_neighbors, len(x))
        index = AnnoyIndex(x.shape[1], "euclidean")
        if self.random_state is not None:
            index.set_seed(int(self.random_state))
        for i, row in enumerate(x):
            index.add_item(i, row)
        index.build(self.n_trees, n_jobs=self.build_jobs)
        # int32 / float32 halve the n × k arrays (Reuters: 685k × 101).
        idx = np.empty((len(x), n_neighbors + 1), dtype=np.int32)
        dist = np.empty((len(x), n_neighbors + 1), dtype=np.float32)

        def query(start):  # each thread fills its own rows
            for i in range(start, min(start + chunk, len(x))):
                nbrs, d = index.get_nns_by_item(
                    i, n_neighbors + 1, search_k=self.search_k, include_distances=True
                )
                got = len(nbrs)  # annoy may return fewer on tiny data
                idx[i, :got], dist[i, :got] = nbrs, d
                idx[i, got:], dist[i, got:] = i, np.inf

        threads = self.n_jobs or os.cpu_count() or 1
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(query, range(0, len(x), chunk)))
        return _drop_self(dist, idx, n_neighbors)


#: The backends ``make_neighbors`` builds by name.
BACKENDS = ("auto", "exact", "annoy")


def make_neighbors(neighbors="auto", n_samples=None, random_state=None):
    """Return a backend from a name ("auto", "exact", "annoy") or pass one through."""
    if hasattr(neighbors, "kneighbors"):
        return neighbors
    if neighbors == "auto":
        big = n_samples is not None and n_samples > AUTO_EXACT_MAX_N
        neighbors = "annoy" if big else "exact"
    if neighbors == "annoy":
        return AnnoyNeighbors(random_state=random_state)
    if neighbors == "exact":
        return ExactNeighbors()
    raise ValueError(
        "neighbors must be 'auto', 'exact', 'annoy' or an object with a "
        f"kneighbors method, got neighbors={neighbors!r}."
    )
