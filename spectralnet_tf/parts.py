"""Estimators whose parameters hold parts (an affinity, a learned distance,
a chooser of k, a schedule): copying a part, and the copy-on-write
``set_params`` they share."""

from sklearn.base import BaseEstimator

from .checks import check


def checked(name, value, part, *args):
    """``part`` (made from the parameter ``name``'s ``value``) after its own
    ``check_params(*args)``; its ValueError names the parameter first."""
    try:
        part.check_params(*args)
    except ValueError as err:
        raise ValueError(f"{name}={value!r}: {err}") from None
    return part


def unfitted_copy(part):
    """A new object with ``part``'s parameters (shared, not copied: an
    embedding stays the same net), without its fitted state."""
    return type(part)(**part.get_params(deep=False))


class PartsMixin:
    """``set_params`` for an estimator whose parameters hold parts.

    ``_parts`` maps each such parameter to the function that makes the
    unfitted part from its value (a name, None for the default, an object).
    A nested key (``affinity__n_nbrs``) replaces the part by a copy with the
    new value, instead of changing the object in place: a part given to two
    estimators, or held as a default, is never changed behind them."""

    _parts = {}

    def set_params(self, **params):
        """Set parameters, as scikit-learn's ``set_params``; nested keys
        replace the part by a copy with the new values (a name by the object
        it names). Returns self."""
        nested = {}
        for key in list(params):
            name, sep, sub = key.partition("__")
            if sep and name in self._parts:
                nested.setdefault(name, {})[sub] = params.pop(key)
        super().set_params(**params)
        for name, values in nested.items():
            current = getattr(self, name)
            check(name, current, self._parameter_constraints[name])
            part = self._parts[name](current)
            if not isinstance(part, BaseEstimator):
                keys = ", ".join(f"{name}__{sub}" for sub in values)
                raise ValueError(
                    f"{keys}: nested parameters need {name} to be an object with parameters "
                    f"(or a name of one), got {name}={current!r}.")
            setattr(self, name, part.set_params(**values))
        return self
