"""Unsupervised model selection (paper Sec. 5 and Appendix C): choose
SpectralNet's hyper-parameters by a label-free criterion.

The paper varied the net architecture and the learning-rate policy with the
Siamese net and sigma held fixed, and chose by the validation loss: across
those MNIST runs its correlation with accuracy was -0.771. A criterion is a
small class with one interface (``check`` the varied parameters, then score
a fitted estimator, ``greater_is_better`` saying which way is better):

- ``ValidationLoss``: the final validation loss. It is comparable only when
  the trials share the affinity, the loss and the hold-out, so a grid that
  varies anything else is refused.
- ``EigengapCriterion``: for choices that change the affinity (neighbours, scale,
  Siamese net, code space), where the loss is not comparable: the relative
  gap 1 - lambda_k / lambda_{k+1} of the normalized Laplacian of each trial's
  own affinity on one fixed random subsample (the eigengap heuristic of
  spectral clustering: k well-separated clusters give lambda_k near 0 and
  lambda_{k+1} well above it). Whether it tracks accuracy is measured, not
  assumed (BENCHMARKS.md, model selection).

Labels, where given to ``fit``, are recorded beside each trial for
reporting; they never enter the choice.
"""

import copy
import time

import numpy as np
import scipy.stats
from sklearn.model_selection import ParameterGrid, ParameterSampler

from .distribute import map_rows
from .estimator import check_array
from .metrics import acc, nmi
from .siamese import SiameseEmbedding
from .spectral import laplacian_matrix, smallest_eigenvectors
from .streaming import is_lazy

#: Parameters that leave the validation loss comparable between trials: the
#: net and how it is trained (a part's nested keys count as the part).
#: Everything else changes the affinity, the loss
#: or the hold-out (random_state draws the hold-out). Not ``gradient``: the
#: loss is quadratic in the outputs, and "plain" steps shrink them (docs/training.md).
LOSS_COMPARABLE = frozenset({
    "hidden_units", "output_activation", "schedule", "init", "dtype_policy", "verbose",
})
#: Below this, an eigenvalue of the normalized Laplacian (in [0, 2]) counts as 0.
ZERO_EIGENVALUE = 1e-8


def _part(key):
    """The estimator's parameter that a (nested) key sets."""
    return key.partition("__")[0]


class ValidationLoss:
    """The estimator's validation loss after its last epoch (lower is better)."""

    name = "val_loss"
    greater_is_better = False

    def check(self, varied, base):
        other = sorted(key for key in varied if _part(key) not in LOSS_COMPARABLE)
        if other:
            raise ValueError(
                f"criterion='val_loss' compares the validation loss of trials that share "
                f"the affinity, the loss and the hold-out, but the search varies {other}; "
                f"vary only {sorted(LOSS_COMPARABLE)}, or use criterion='eigengap'."
            )
        embedding = base["affinity_embedding"]
        if (isinstance(embedding, str) and embedding == "siamese") or isinstance(
                embedding, SiameseEmbedding):
            raise ValueError(
                "criterion='val_loss' needs one affinity for all trials, but "
                "affinity_embedding='siamese' trains a new Siamese net in each; train one "
                "(SiameseEmbedding(...).fit(X)) and pass its model_ as affinity_embedding (the "
                "paper held the Siamese net fixed)."
            )

    def prepare(self, X, rng):
        """Nothing to fix in advance."""

    def __call__(self, net):
        return {"val_loss": float(net.history_["val_loss"][-1])}


class EigengapCriterion:
    """The relative eigengap ``1 - lambda_k / lambda_{k+1}`` of the normalized
    Laplacian of each trial's fitted affinity (its kNN graph) on a fixed
    random subsample of ``n_samples`` points of X (higher is better; 0 when
    the graph falls into more than k pieces). Relative, and of the normalized
    Laplacian, so that neither the kernel's scale nor a denser graph (more
    neighbours: every eigenvalue larger) decides by itself. The absolute gap
    is recorded beside it ("eigengap_abs")."""

    name = "eigengap"
    greater_is_better = True

    def __init__(self, n_samples=2000):
        self.n_samples = n_samples

    def check(self, varied, base):
        net_only = sorted(key for key in varied if _part(key) in LOSS_COMPARABLE)
        if net_only:
            raise ValueError(
                f"criterion='eigengap' scores the affinity alone, so it cannot choose "
                f"{net_only}: every such trial would tie. Search them with "
                "criterion='val_loss' (on the chosen affinity)."
            )

    def prepare(self, X, rng):
        n = len(X)
        rows = np.sort(rng.choice(n, min(self.n_samples, n), replace=False))
        self.subset_ = np.asarray(X[rows], np.float32)

    def __call__(self, net):
        # In each trial's own code space: the encoder may be what varies.
        z = self.subset_ if net.encoder is None else map_rows(net.encoder, self.subset_)
        return relative_eigengap(net.affinity_.graph(z), net.n_clusters_)


def relative_eigengap(w, k):
    """``{"eigengap": 1 - lambda_k / lambda_{k+1}, "eigengap_abs", "lambda_k",
    "lambda_k1"}`` of the normalized Laplacian of the affinity matrix ``w``."""
    vals, _ = smallest_eigenvectors(laplacian_matrix(w, "normalized"), k + 1)
    low, high = max(float(vals[k - 1]), 0.0), max(float(vals[k]), 0.0)
    # More than k pieces: lambda_{k+1} is 0 up to rounding, and so is the gap.
    gap = 1.0 - low / high if high > ZERO_EIGENVALUE else 0.0
    return {"eigengap": gap, "eigengap_abs": high - low, "lambda_k": low, "lambda_k1": high}


def split_stability(z, k, *, affinity=None, pairs=5, fraction=0.5, random_state=0):
    """How reproducible the spectral clustering of ``z`` is under resampling:
    the clustering-stability principle (Ben-Hur, Elisseeff & Guyon 2002;
    Lange, Roth, Braun & Buhmann 2004), that structure which is really in
    the data comes out again from another sample of it, while a cut through
    a cluster lands somewhere else each time.

    For each of ``pairs`` draws, two random subsets of ``fraction`` of the
    rows, drawn independently, are each clustered into ``k`` by exact
    spectral clustering (normalized Laplacian) of their own kNN graph
    (``affinity``, default ``GaussianKNNAffinity(n_nbrs=10, scale_nbr=5,
    scale="local")``, the MNIST config's), and the two labelings are
    compared on the rows the subsets share by the adjusted Rand index.

    Returns ``{"stability": mean ARI, "stability_min": smallest ARI,
    "aris": [...]}``: 1 when every pair agrees, about 0 for chance."""
    from sklearn.metrics import adjusted_rand_score

    from .affinity import GaussianKNNAffinity
    from .spectral import cluster_graph

    z = np.asarray(z, dtype=np.float32)
    n = len(z)
    for name, value in (("k", k), ("pairs", pairs)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {name}={value!r}.")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got fraction={fraction!r}.")
    m = int(round(fraction * n))
    if m <= k:
        raise ValueError(f"fraction={fraction!r} of {n} rows leaves {m}, not more than "
                         f"k={k}: too few to cluster.")
    affinity = affinity if affinity is not None else GaussianKNNAffinity(
        n_nbrs=10, scale_nbr=5, scale="local")
    rng = np.random.default_rng(random_state)

    def labels(rows, seed):
        part = z[rows]
        graph = copy.deepcopy(affinity).fit(part, min(1024, len(part)), seed=seed).graph(part)
        return cluster_graph(graph, k, "normalized", random_state=seed)[0]

    aris = []
    for p in range(pairs):
        a = np.sort(rng.choice(n, m, replace=False))
        b = np.sort(rng.choice(n, m, replace=False))
        la, lb = labels(a, 2 * p), labels(b, 2 * p + 1)
        _, ia, ib = np.intersect1d(a, b, assume_unique=True, return_indices=True)
        aris.append(float(adjusted_rand_score(la[ia], lb[ib])))
    return {"stability": float(np.mean(aris)), "stability_min": float(np.min(aris)),
            "aris": aris}


CRITERIA = {"val_loss": ValidationLoss, "eigengap": EigengapCriterion}


class UnsupervisedSearch:
    """Grid or random search over SpectralNet parameters, choosing by a
    label-free criterion (paper Sec. 5).

    Parameters
    ----------
    estimator : SpectralNet
        The settings every trial starts from; its ``random_state`` must be an
        int, so that every trial holds out the same validation points and,
        for "eigengap", scores the same subsample.
    param_grid : dict or list of dicts
        As ``sklearn.model_selection.ParameterGrid``; with ``n_iter`` set,
        distributions for ``ParameterSampler`` instead (random search).
    criterion : {"val_loss", "eigengap"} or criterion object, default="val_loss"
        See the module docstring. "val_loss" refuses a grid that varies
        parameters outside ``LOSS_COMPARABLE``.
    n_iter : int or None, default=None
        None: every setting of the grid. An int: that many random settings.
    verbose : int, default=0
        1: one line per trial.

    Attributes
    ----------
    trials_ : list of dict
        Per trial: "params", the criterion's values, "score" (the criterion,
        signed so that higher is better), "seconds", and "acc"/"nmi" when
        ``fit`` got ``report_labels``.
    best_index_, best_params_, best_score_ : the chosen trial.
    best_estimator_ : SpectralNet
        The chosen trial's fitted estimator (the others are not kept).
    correlation_ : dict
        With ``report_labels``: Pearson's and Spearman's correlation between
        the criterion's value and ACC across the trials.

    Examples
    --------
    >>> from spectralnet_tf import SpectralNet
    >>> search = UnsupervisedSearch(
    ...     SpectralNet(n_clusters=10, random_state=0),
    ...     {"hidden_units": [(256, 128), (512, 512, 256)], "schedule__learning_rate": [1e-4, 1e-3]})
    >>> search.fit(X).best_params_          # doctest: +SKIP
    {'hidden_units': (512, 512, 256), 'schedule__learning_rate': 0.001}
    """

    def __init__(self, estimator, param_grid, *, criterion="val_loss", n_iter=None, verbose=0):
        self.estimator = estimator
        self.param_grid = param_grid
        self.criterion = criterion
        self.n_iter = n_iter
        self.verbose = verbose

    def _settings(self, seed):
        if self.n_iter is None:
            return list(ParameterGrid(self.param_grid))
        if not isinstance(self.n_iter, int) or isinstance(self.n_iter, bool) or self.n_iter < 1:
            raise ValueError(f"n_iter must be None or an int >= 1, got n_iter={self.n_iter!r}.")
        return list(ParameterSampler(self.param_grid, self.n_iter, random_state=seed))

    def _criterion(self):
        if isinstance(self.criterion, str):
            if self.criterion not in CRITERIA:
                raise ValueError(f"criterion must be one of {sorted(CRITERIA)} or a criterion "
                                 f"object, got criterion={self.criterion!r}.")
            return CRITERIA[self.criterion]()
        needed = ("name", "greater_is_better", "check", "prepare")
        if not (callable(self.criterion) and all(hasattr(self.criterion, a) for a in needed)):
            raise ValueError("a criterion object needs name, greater_is_better, check, prepare "
                             f"and __call__, got criterion={self.criterion!r}.")
        return self.criterion

    def fit(self, X, y=None, *, report_labels=None):
        """Fit one estimator per setting and choose by the criterion alone.
        ``y`` is ignored (as by scikit-learn's clusterers); ``report_labels``,
        if given, are scored against each trial for the record only. A trial
        whose training diverges (FloatingPointError) is recorded with its
        error and score -inf."""
        seed = self.estimator.random_state
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise ValueError(
                "estimator.random_state must be an int, so that every trial holds out the "
                f"same validation points, got random_state={seed!r}."
            )
        if not is_lazy(X):
            X = check_array(X)
        if report_labels is not None and len(report_labels) != len(X):
            raise ValueError(f"report_labels has {len(report_labels)} entries for "
                             f"{len(X)} rows of X.")
        criterion = copy.copy(self._criterion())  # fit leaves its parameters as given
        settings = self._settings(int(seed))
        names = sorted({name for setting in settings for name in setting})
        varied = [name for name in names
                  if len({repr(setting.get(name)) for setting in settings}) > 1]
        if "random_state" in names:
            raise ValueError("param_grid must not vary 'random_state': it draws the hold-out "
                             "and the subsample the trials are compared on.")
        base = self.estimator.get_params(deep=False)
        criterion.check(varied, base)
        criterion.prepare(X, np.random.default_rng(int(seed)))
        self.trials_, best = [], None
        for params in settings:
            # Not sklearn.clone: an encoder or a fixed Siamese net is shared, not copied.
            # set_params takes nested keys (affinity__n_nbrs) and copies the part it changes.
            net = type(self.estimator)(**base).set_params(**params)
            start = time.perf_counter()
            try:
                net.fit(X)
            except FloatingPointError as err:
                trial = {"params": params, criterion.name: float("nan"), "error": str(err)}
            else:
                trial = {"params": params, **criterion(net),
                         "epochs": len(net.history_["val_loss"])}
                if report_labels is not None:
                    trial["acc"] = acc(report_labels, net.labels_)
                    trial["nmi"] = nmi(report_labels, net.labels_)
            trial["seconds"] = round(time.perf_counter() - start, 1)
            value = trial[criterion.name]
            trial["score"] = (float("-inf") if not np.isfinite(value)
                              else value if criterion.greater_is_better else -value)
            if best is None or trial["score"] > self.trials_[best]["score"]:
                best, self.best_estimator_ = len(self.trials_), net
            self.trials_.append(trial)
            if self.verbose:
                print(" ".join(f"{k}={v}" for k, v in trial.items()), flush=True)
        if not np.isfinite(self.trials_[best]["score"]):
            raise FloatingPointError(f"every trial failed; the first: {self.trials_[0]['error']}")
        self.best_index_ = best
        self.best_params_ = self.trials_[best]["params"]
        self.best_score_ = self.trials_[best]["score"]
        done = [t for t in self.trials_ if np.isfinite(t["score"])]
        self.correlation_ = (correlation([t[criterion.name] for t in done], [t["acc"] for t in done])
                             if report_labels is not None else {})
        return self


def correlation(values, accuracies):
    """Pearson's and Spearman's correlation of a criterion with ACC (None with
    fewer than 3 trials or a constant column)."""
    values, accuracies = np.asarray(values, float), np.asarray(accuracies, float)
    if len(values) < 3 or np.ptp(values) == 0 or np.ptp(accuracies) == 0:
        return {"pearson": None, "spearman": None, "trials": len(values)}
    return {"pearson": float(scipy.stats.pearsonr(values, accuracies)[0]),
            "spearman": float(scipy.stats.spearmanr(values, accuracies)[0]),
            "trials": len(values)}
