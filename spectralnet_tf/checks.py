"""Declared checks of the estimators' parameters.

Each estimator (``SpectralNet`` and its parts) declares what each of its
parameters may be in ``_parameter_constraints`` (name -> list of allowed
kinds, as scikit-learn's estimators do), and ``validate_params`` checks them
all in ``fit``, raising one ValueError that names the parameter and its
value. An allowed kind is ``None``, a string (that literal value), a type
(an instance of it), or one of the classes below. Also the check of
semi-supervised labels, which several modules share. Imports nothing heavy.
"""

import numbers

import numpy as np


class Interval:
    """A number of ``kind`` (``numbers.Integral`` or ``numbers.Real``; never
    a bool) between ``low`` and ``high`` (None: unbounded), each bound
    included where ``closed`` says so: "both", "left", "right", "neither"."""

    def __init__(self, kind, low=None, high=None, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def __call__(self, value):
        if not isinstance(value, self.kind) or isinstance(value, bool):
            return False
        if not abs(value) < float("inf"):  # NaN and inf are no bound's numbers
            return False
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        if self.low is not None and not (value >= self.low if left else value > self.low):
            return False
        if self.high is not None and not (value <= self.high if right else value < self.high):
            return False
        return True

    def __str__(self):
        noun = "an integer" if self.kind is numbers.Integral else "a finite number"
        if self.low is not None and self.high is not None:
            return (f"{noun} in {'[' if self.closed in ('both', 'left') else '('}{self.low}, "
                    f"{self.high}{']' if self.closed in ('both', 'right') else ')'}")
        if self.low is not None:
            return f"{noun} {'>=' if self.closed in ('both', 'left') else '>'} {self.low}"
        if self.high is not None:
            return f"{noun} {'<=' if self.closed in ('both', 'right') else '<'} {self.high}"
        return noun


class Options:
    """One of a set of strings."""

    def __init__(self, *options):
        self.options = options

    def __call__(self, value):
        return isinstance(value, str) and value in self.options

    def __str__(self):
        return f"one of {self.options}"


class Units:
    """Layer widths: a non-empty tuple (or list) of positive integers."""

    def __call__(self, value):
        return (isinstance(value, (tuple, list)) and len(value) > 0
                and all(isinstance(u, numbers.Integral) and not isinstance(u, bool) and u >= 1
                        for u in value))

    def __str__(self):
        return "a non-empty tuple of positive integers"


class HasMethods:
    """An object with these methods (e.g. a neighbour backend's ``kneighbors``)."""

    def __init__(self, *methods):
        self.methods = methods

    def __call__(self, value):
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def __str__(self):
        return f"an object with {', '.join(self.methods)}"


class InstanceOf:
    """An instance of ``types`` (a class or a tuple of them), described to
    the user as ``description`` (e.g. "a path" for str and os.PathLike)."""

    def __init__(self, types, description):
        self.types, self.description = types, description

    def __call__(self, value):
        return isinstance(value, self.types)

    def __str__(self):
        return self.description


class Callable:
    def __call__(self, value):
        return callable(value)

    def __str__(self):
        return "a callable"


def _allows(kind, value):
    if kind is None:
        return value is None
    if isinstance(kind, str):
        return isinstance(value, str) and value == kind
    if isinstance(kind, type):
        return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
    return kind(value)


def _describe(kind):
    if kind is None:
        return "None"
    if isinstance(kind, str):
        return repr(kind)
    if isinstance(kind, type):
        return f"{'an' if kind.__name__[0] in 'AEIOU' else 'a'} {kind.__name__}"
    return str(kind)


def check(name, value, allowed):
    """Raise ``ValueError("name must be ..., got name=value.")`` unless
    ``value`` is one of the ``allowed`` kinds."""
    if not any(_allows(kind, value) for kind in allowed):
        kinds = [_describe(kind) for kind in allowed]
        wanted = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
        raise ValueError(f"{name} must be {wanted}, got {name}={value!r}.")


def validate_params(estimator, constraints):
    """Check each parameter of ``estimator`` that ``constraints`` (name ->
    allowed kinds: the estimator's ``_parameter_constraints``) declares."""
    for name, allowed in constraints.items():
        check(name, getattr(estimator, name), allowed)


def check_int(name, value, low):
    check(name, value, [Interval(numbers.Integral, low, None, closed="left")])


def check_real(name, value, ok, allowed):
    """A real number (not a bool) for which ``ok(value)`` holds; the error
    says it must be ``allowed``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not ok(value):
        raise ValueError(f"{name} must be {allowed}, got {name}={value!r}.")


def check_choice(name, value, choices):
    check(name, value, [Options(*choices)])


def check_labels(partial_labels, n, n_clusters):
    """Semi-supervised labels as int64, -1 for unlabeled (all -1 if None)."""
    if partial_labels is None:
        return np.full(n, -1, dtype=np.int64)
    labels = np.asarray(partial_labels)
    if labels.shape != (n,):
        raise ValueError(
            f"partial_labels must have shape (n_samples,) = ({n},), got "
            f"partial_labels.shape={labels.shape}."
        )
    if np.issubdtype(labels.dtype, np.floating):
        # Whole numbers stored as floats (e.g. 1.0, -1.0) are accepted.
        fractional = ~np.isfinite(labels) | (labels != np.round(labels))
        if fractional.any():
            i = int(np.argmax(fractional))
            raise ValueError(
                "partial_labels must hold integers (a cluster in [0, n_clusters) for labeled "
                f"points, -1 for the others), got partial_labels[{i}]={labels[i].item()!r} "
                f"({int(fractional.sum())} such values)."
            )
    elif not np.issubdtype(labels.dtype, np.integer) or labels.dtype == bool:
        raise ValueError(
            "partial_labels must hold integers (a cluster in [0, n_clusters) for labeled "
            f"points, -1 for the others), got dtype={labels.dtype} (e.g. "
            f"partial_labels[0]={labels[0].item()!r})."
        )
    bad = (labels < -1) | (labels >= n_clusters)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"partial_labels must lie in [-1, n_clusters={n_clusters}), got "
            f"partial_labels[{i}]={labels[i]} ({int(bad.sum())} such values)."
        )
    return labels.astype(np.int64)
