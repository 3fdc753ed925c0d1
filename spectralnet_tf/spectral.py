"""Exact spectral clustering, the reference SpectralNet approximates.

The k eigenvectors of the graph Laplacian with the smallest eigenvalues, from
a scipy eigensolver on the same affinity SpectralNet trains with, then
k-means on them (paper Appendix C). With a few labels, the exact reference is
the harmonic function of the same graph (``harmonic_labels``).
"""

import time
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.sparse.csgraph import connected_components

from .checks import check_labels
from .centroids import kmeans_labels
from .losses import LAPLACIANS

#: Up to this many points the Laplacian is solved directly: densely, or, where
#: it holds few edges (``SPARSE_MAX_DENSITY``), by shift-invert Lanczos.
DENSE_MAX_N = 6000
#: Up to this share of nonzeros, a Laplacian is sparse enough to factorize:
#: shift-invert Lanczos (ARPACK) then finds its smallest eigenpairs in a
#: fraction of a dense solve's time (a kNN graph's Laplacian is far sparser).
SPARSE_MAX_DENSITY = 0.05
#: Up to this many points a Laplacian too dense for shift-invert is solved by
#: dense ``eigh`` (a small fraction of a second); above, its O(n^3) cost
#: exceeds LOBPCG's products with the matrix many times over.
DENSE_EIGH_MAX_N = 1000
#: The shift: just below the spectrum, so that ``L - sigma I`` is definite.
SHIFT = -1e-3
#: Above this many points LOBPCG is preconditioned by smoothed-aggregation
#: algebraic multigrid (pyamg), as scikit-learn's ``eigen_solver="amg"``;
#: up to it, plain LOBPCG, which converges there without one.
AMG_MIN_N = 200_000
#: LOBPCG iterations between checks of convergence and of a time limit.
LOBPCG_ROUND = 20
#: From this many unknowns a Laplacian system with points held fixed (the
#: harmonic function's free points; a Poisson component's nodes less the one
#: held at zero) is solved by conjugate gradients preconditioned by
#: smoothed-aggregation AMG (pyamg), not by a sparse LU, whose fill-in on a
#: kNN graph grows far faster than its edges.
ITERATIVE_SOLVE_MIN_N = 5001
#: The relative residual at which that solve stops.
ITERATIVE_SOLVE_TOL = 1e-8


class EigensolverTimeout(RuntimeError):
    """The eigensolver passed its time limit before converging."""


def laplacian_matrix(w, laplacian="unnormalized"):
    """``D - W`` or ``I - D^-1/2 W D^-1/2`` (sparse in, sparse out)."""
    if laplacian not in LAPLACIANS:
        raise ValueError(f"laplacian must be one of {LAPLACIANS}, got laplacian={laplacian!r}.")
    w = sp.csr_matrix(w)
    d = np.asarray(w.sum(axis=1)).ravel()
    if laplacian == "unnormalized":
        return sp.diags(d) - w
    inv_sqrt = sp.diags(1.0 / np.sqrt(np.maximum(d, 1e-12)))
    return sp.identity(w.shape[0]) - inv_sqrt @ w @ inv_sqrt


def smallest_eigenvectors(lap, k, tol=1e-8, max_iter=1000, time_limit=None):
    """The k eigenvectors of a symmetric PSD matrix with smallest eigenvalues.

    Up to ``DENSE_MAX_N`` rows: shift-invert Lanczos where the matrix is
    sparse (``SPARSE_MAX_DENSITY``); otherwise dense ``eigh`` up to
    ``DENSE_EIGH_MAX_N`` rows, and above it LOBPCG, falling back to ``eigh``
    where LOBPCG does not converge. Above ``DENSE_MAX_N``, LOBPCG: it needs
    only products with ``lap``, so it handles the full-data graphs of
    ``Affinity.for_full_data`` (on MNIST: 70,000 points, 684 neighbours,
    58M nonzeros), whose factorization for shift-invert does not fit. Being a
    block method, it also finds repeated eigenvalues (a graph with several
    components). ``tol`` bounds the
    residual norms relative to ``2 max(diag)`` (>= the largest eigenvalue of a
    graph Laplacian, by Gershgorin); a result 1000 times worse is an error.
    Above ``AMG_MIN_N`` rows, ``amg_smallest`` (``time_limit`` seconds at most).
    """
    n = lap.shape[0]
    sparse = sp.csr_matrix(lap)
    if n <= DENSE_MAX_N and k < n - 1 and sparse.nnz <= SPARSE_MAX_DENSITY * n * n:
        start = np.random.default_rng(0).normal(size=n)  # ARPACK's own start is random
        vals, vecs = scipy.sparse.linalg.eigsh(sparse.tocsc(), k, sigma=SHIFT, which="LM",
                                               v0=start)
        order = np.argsort(vals)
        vals, vecs = vals[order], vecs[:, order]
    elif n <= DENSE_MAX_N:
        vals, vecs = _dense_smallest(sparse, k, tol, max_iter)
    elif n > AMG_MIN_N:
        vals, vecs = amg_smallest(sparse, k, time_limit=time_limit)
    else:
        vals, vecs = _lobpcg_smallest(sparse, k, tol, max_iter)
    return vals, vecs  # ascending


def _dense_smallest(lap, k, tol, max_iter):
    """A Laplacian too dense for shift-invert: LOBPCG above ``DENSE_EIGH_MAX_N``
    rows, dense ``eigh`` up to it or where LOBPCG does not converge."""
    if lap.shape[0] > DENSE_EIGH_MAX_N:
        try:
            return _lobpcg_smallest(lap, k, tol, max_iter)
        except RuntimeError:  # unconverged: solved densely instead
            pass
    return scipy.linalg.eigh(lap.toarray(), subset_by_index=[0, k - 1])


def _lobpcg_smallest(lap, k, tol, max_iter=None, precond=None, time_limit=None, seed=0,
                     what="The eigensolver"):
    """LOBPCG's k smallest eigenpairs of ``lap``, run ``LOBPCG_ROUND``
    iterations at a time, each round restarted from the block the last one
    left, until the k residuals relative to ``2 max(diag)`` are below
    ``tol``. A few spare vectors speed convergence at the k-th eigenvalue;
    their own residuals do not count (they sit in the spectrum's bulk,
    where eigenvalues crowd and converge slowly). After ``max_iter``
    iterations a result 1000 times worse than ``tol`` is a RuntimeError;
    past ``time_limit`` seconds an unconverged one is an ``EigensolverTimeout``.
    No Jacobi preconditioner: on near-disconnected graphs it made LOBPCG fail."""
    begin = time.perf_counter()
    scale = spectral_bound(lap)
    block = np.random.default_rng(seed).normal(size=(lap.shape[0], k + max(4, k // 2)))
    done = 0
    while True:
        rounds = LOBPCG_ROUND if max_iter is None else min(LOBPCG_ROUND, max_iter - done)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # checked below, with a clearer message
            vals, block = scipy.sparse.linalg.lobpcg(lap, block, M=precond, largest=False,
                                                     tol=tol * scale, maxiter=rounds)
        done += rounds
        order = np.argsort(vals)[:k]
        residual = np.linalg.norm(lap @ block[:, order] - block[:, order] * vals[order],
                                  axis=0).max() / scale
        if residual <= tol:
            return vals[order], block[:, order]
        if max_iter is not None and done >= max_iter:
            if residual > 1e3 * tol:
                raise RuntimeError(
                    f"{what} did not converge in max_iter={max_iter} iterations: "
                    f"relative residual {residual:.1e} (tol={tol}); raise max_iter.")
            return vals[order], block[:, order]
        elapsed = time.perf_counter() - begin
        if time_limit is not None and elapsed > time_limit:
            raise EigensolverTimeout(
                f"{what} did not converge in {elapsed:.0f} s (time_limit={time_limit}): "
                f"relative residual {residual:.1e}, tol={tol}.")


def amg_smallest(lap, k, tol=1e-6, time_limit=None, seed=0):
    """The k smallest eigenpairs of a large sparse graph Laplacian: LOBPCG
    preconditioned by a smoothed-aggregation AMG hierarchy of ``lap + 1e-5 I``
    (pyamg; the shift makes the singular Laplacian definite for the
    hierarchy only), until the relative residual (as in
    ``smallest_eigenvectors``) is below ``tol``; past ``time_limit`` seconds
    it raises ``EigensolverTimeout``."""
    import pyamg

    shifted = (lap + 1e-5 * sp.identity(lap.shape[0], format="csr")).tocsr()
    precond = pyamg.smoothed_aggregation_solver(shifted).aspreconditioner()
    return _lobpcg_smallest(lap, k, tol, precond=precond, time_limit=time_limit, seed=seed,
                            what="LOBPCG (AMG)")


def spectral_clustering(x, n_clusters, affinity, laplacian="unnormalized",
                        neighbors=None, random_state=0, time_limit=None):
    """Exact spectral clustering: returns (labels, eigenvectors)."""
    return cluster_graph(affinity.graph(x, neighbors), n_clusters, laplacian, random_state,
                         time_limit)


def spectrum(w, k, laplacian="unnormalized", time_limit=None):
    """The k smallest eigenvalues (ascending) and eigenvectors of the
    Laplacian of ``w`` (dense or sparse)."""
    return smallest_eigenvectors(laplacian_matrix(w, laplacian), k, time_limit=time_limit)


def laplacian_eigenvectors(w, k, laplacian="unnormalized", time_limit=None):
    """The k smallest eigenvectors of the Laplacian of ``w`` (dense or sparse)."""
    return spectrum(w, k, laplacian, time_limit)[1]


#: ``refine``'s most subspace iterations, and the squared Grassmann distance
#: between two successive ones at which it stops sooner.
REFINE_MAX_ITER = 100
REFINE_TOL = 1e-8


def spectral_bound(lap):
    """``2 max(diag L)``: at least the largest eigenvalue of a graph
    Laplacian L (Gershgorin), the scale of its spectrum."""
    return 2.0 * max(lap.diagonal().max(), 1e-12)


def refine(w, y, laplacian="unnormalized", max_iter=REFINE_MAX_ITER, tol=REFINE_TOL):
    """An orthonormal basis (float64, n × k) of the span of ``y`` carried
    towards the k smallest eigenvectors of the Laplacian L of ``w``: subspace
    iteration with ``I - L / (2 max diag L)``, whose eigenvalues lie in
    [0, 1] (Gershgorin), so that each step shrinks the angle to that
    eigenspace and never grows it: from an embedding near the eigenvectors
    (SpectralNet's, on the graph's own nodes) sparse products reach them,
    at a rate set by the gap after the k-th eigenvalue. It stops after
    ``max_iter``, or once an iteration moves the span by less than ``tol``
    (squared Grassmann distance), which, where the k-th and next eigenvalues
    are close, can still be short of them."""
    lap = laplacian_matrix(sp.csr_matrix(w, dtype=np.float64), laplacian)
    step = sp.identity(lap.shape[0], format="csr") - lap / spectral_bound(lap)
    q = np.linalg.qr(np.asarray(y, np.float64))[0]
    for _ in range(max_iter):
        moved = np.linalg.qr(step @ q)[0]
        done = q.shape[1] - np.sum(np.square(q.T @ moved)) < tol
        q = moved
        if done:
            break
    return q


def edge_purity(w, labels):
    """Per point i, the share of its edge weight in ``w`` (dense or sparse;
    row i, the diagonal left out) that joins it to points of its own label;
    NaN for a point without edges. A graph cut cannot agree with the labels better
    than its edges do: a diagnostic, read with labels, never a choice."""
    w = sp.csr_matrix(w)
    if len(labels) != w.shape[0]:
        raise ValueError(f"labels must have one entry per row of w ({w.shape[0]}), got "
                         f"len(labels)={len(labels)}.")
    labels = np.unique(np.asarray(labels), return_inverse=True)[1]
    rows = np.arange(len(labels))
    onehot = sp.csr_matrix((np.ones(len(labels)), (rows, labels)))
    diag = w.diagonal()
    # (W Y)_{i, y_i}: the weight from i to its own label, less the self-loop.
    same = np.asarray((w @ onehot)[rows, labels]).ravel() - diag
    total = np.asarray(w.sum(axis=1)).ravel() - diag
    with np.errstate(invalid="ignore", divide="ignore"):
        return same / total


def cluster_graph(w, n_clusters, laplacian="unnormalized", random_state=0, time_limit=None,
                  normalize_rows=False):
    """Exact spectral clustering of a given affinity matrix ``w`` (dense or
    sparse): k-means (``centroids.kmeans_labels``) on its Laplacian's
    ``n_clusters`` smallest eigenvectors, with ``normalize_rows`` on their
    rows scaled to unit length. Returns (labels, eigenvectors)."""
    vecs = laplacian_eigenvectors(w, n_clusters, laplacian, time_limit)
    return kmeans_labels(vecs, n_clusters, random_state, normalize_rows), vecs


def harmonic_labels(w, partial_labels, n_clusters):
    """Exact graph-based semi-supervised labels: the harmonic function of
    Zhu, Ghahramani & Lafferty (ICML 2003) on the affinity ``w``.

    For each class c, the function f that equals 1 on the points labeled c
    and 0 on the other labeled points, and minimizes ``f^T L f`` (L = D - W)
    over the unlabeled ones: ``L_uu F_u = -L_ul Y_l``. Each unlabeled point
    takes the class of its largest f. It is what the Laplacian quadratic
    form, SpectralNet's loss, says with the labels held fixed; a reference
    for SpectralNet fitted with ``partial_labels`` on the same graph.

    ``partial_labels`` holds a class in [0, n_clusters) or -1 (unlabeled).
    ``w`` is symmetrized, ``(w + w^T) / 2``. Labeled points keep their
    label; points of a connected component without a labeled point get -1.
    ``spd_solve``; ``harmonic_scores`` gives f itself.
    """
    return largest_class(harmonic_scores(w, partial_labels, n_clusters), partial_labels)


def largest_class(scores, partial_labels):
    """Each point's class from per-class ``scores`` (n, k): the largest;
    -1 where the scores are NaN (no labeled point reaches it). Labeled
    points keep their label."""
    labels = check_labels(partial_labels, len(scores), scores.shape[1])
    classes = np.where(np.isnan(scores[:, 0]), -1, np.nan_to_num(scores).argmax(axis=1))
    return np.where(labels >= 0, labels, classes)


def labeled_graph(w, partial_labels, n_clusters):
    """What ``harmonic_scores`` and ``poisson_scores`` solve on: ``w`` as a
    symmetric sparse float64 matrix, ``(w + w^T) / 2`` without stored zeros,
    the checked labels, and each point's connected component. Refuses
    labels without a labeled point."""
    w = sp.csr_matrix(w, dtype=np.float64)  # the solves run in the matrix's dtype
    w = 0.5 * (w + w.T)  # the same quadratic form f^T L f as w
    w.eliminate_zeros()  # connected_components would count a stored zero as an edge
    labels = check_labels(partial_labels, w.shape[0], n_clusters)
    if not (labels >= 0).any():
        raise ValueError("partial_labels must label at least one point, got only -1.")
    _, component = connected_components(w, directed=False)
    return w, labels, component


def harmonic_scores(w, partial_labels, n_clusters):
    """The harmonic function f of ``harmonic_labels``, shape (n, n_clusters):
    one-hot on the labeled points; on an unlabeled point, the probability
    that a random walk on ``w`` from it first reaches a point of each class
    (the rows sum to 1); NaN in components without a labeled point."""
    w, labels, component = labeled_graph(w, partial_labels, n_clusters)
    n = w.shape[0]
    reached = np.isin(component, component[labels >= 0])
    fixed = np.flatnonzero(labels >= 0)
    f = np.full((n, n_clusters), np.nan)
    f[fixed] = np.eye(n_clusters)[labels[fixed]]
    free = np.flatnonzero(reached & (labels < 0))
    if free.size:
        rows = laplacian_matrix(w).tocsr()[free]
        rhs = -(rows[:, fixed] @ f[fixed])
        f[free] = spd_solve(rows[:, free], np.asarray(rhs))
    return f


def poisson_scores(w, partial_labels, n_clusters):
    """Poisson learning (Calder, Cook, Thorpe & Slepcev, ICML 2020) on the
    affinity ``w``, shape (n, n_clusters). In each connected component that
    holds labeled points of two classes or more: the u with ``L u = b`` and
    ``d^T u = 0`` (L = D - W, d the degrees), where b is zero on the
    unlabeled points and, on a labeled point, its one-hot class less the
    mean one-hot class of the component's labeled points. A component whose
    labels are all of one class gets that class's one-hot row everywhere;
    one without labels, NaN. In a component with labels of two classes or
    more, a class that none of them names gets -inf. A point's class is its
    largest u (``poisson_labels``).

    The harmonic function holds the labels as boundary values; with few
    labels among many points it flattens towards a constant away from them,
    and its largest component says little (Nadler, Srebro & Zhou, 2009).
    Poisson learning puts the labels in as sources instead, centred so that
    no class gains from its number of labels, and keeps its shape at low
    label rates. ``d^T u = 0`` is where the paper's iteration from zero
    converges; it fixes the constant a Laplacian leaves free in each class's
    u, which would otherwise move the argmax.
    """
    w, labels, component = labeled_graph(w, partial_labels, n_clusters)
    u = np.full((w.shape[0], n_clusters), np.nan)
    lap = laplacian_matrix(w).tocsr()
    degrees = np.asarray(w.sum(axis=1)).ravel()
    for c in np.unique(component[labels >= 0]):
        nodes = np.flatnonzero(component == c)
        known = labels[nodes] >= 0
        named = labels[nodes][known]
        onehot = np.eye(n_clusters)[named]
        if (named == named[0]).all():
            u[nodes] = onehot[0]
            continue
        b = np.zeros((len(nodes), n_clusters))
        b[known] = onehot - onehot.mean(axis=0)
        # L is singular on a component (the constants) and b sums to zero
        # there, so holding u at 0 on one node leaves a nonsingular system
        # with the same solutions up to a constant; centring picks d^T u = 0.
        x = np.zeros_like(b)
        x[1:] = spd_solve(lap[nodes][:, nodes][1:, 1:], b[1:])
        d = degrees[nodes]
        x -= (d @ x) / d.sum()
        # The labeled classes' u sum to zero at every point (each row of b
        # does), so a class no label names, at u = 0, could win only a tie
        # at zero; -inf keeps it out.
        x[:, ~np.isin(np.arange(n_clusters), named)] = -np.inf
        u[nodes] = x
    return u


def spd_solve(a, b):
    """X with ``a X = b`` for a sparse symmetric positive definite ``a`` and
    the columns of ``b``: a sparse LU below ``ITERATIVE_SOLVE_MIN_N``
    rows, else conjugate gradients preconditioned by a smoothed-aggregation
    AMG hierarchy of ``a`` (pyamg), to a relative residual of
    ``ITERATIVE_SOLVE_TOL`` in each column."""
    if a.shape[0] < ITERATIVE_SOLVE_MIN_N:
        return scipy.sparse.linalg.splu(sp.csc_matrix(a)).solve(b)
    import pyamg

    a = sp.csr_matrix(a)
    hierarchy = pyamg.smoothed_aggregation_solver(a, symmetry="symmetric")
    x = np.zeros_like(b)
    for j in range(b.shape[1]):
        norm = np.linalg.norm(b[:, j])
        if norm == 0:
            continue
        x[:, j] = hierarchy.solve(b[:, j], tol=ITERATIVE_SOLVE_TOL, accel="cg", maxiter=500)
        residual = np.linalg.norm(a @ x[:, j] - b[:, j]) / norm
        if residual > 10 * ITERATIVE_SOLVE_TOL:
            raise RuntimeError(f"AMG-preconditioned CG did not converge: relative residual "
                               f"{residual:.1e} (tol={ITERATIVE_SOLVE_TOL}).")
    return x


def poisson_labels(w, partial_labels, n_clusters):
    """The classes of Poisson learning (``poisson_scores``): each unlabeled
    point takes the class of its largest u; labeled points keep their label;
    points of a component without a labeled point get -1."""
    return largest_class(poisson_scores(w, partial_labels, n_clusters), partial_labels)
