"""Checks of the estimators' parameters, each raising a ValueError that names
the parameter and its value (scikit-learn's convention). Shared by
SpectralNet and its parts; imports nothing heavy."""

import numbers


def is_int(value, low):
    """An integer (not a bool) >= ``low``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low


def check_int(name, value, low):
    if not is_int(value, low):
        raise ValueError(f"{name} must be an integer >= {low}, got {name}={value!r}.")


def check_real(name, value, ok, allowed):
    """A real number (not a bool) for which ``ok(value)`` holds; the error
    says it must be ``allowed``."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not ok(value):
        raise ValueError(f"{name} must be {allowed}, got {name}={value!r}.")


def check_positive(name, value):
    check_real(name, value, lambda v: v > 0, "a number > 0")


def check_units(name, value, allowed="a non-empty tuple of positive integers"):
    """Layer widths: a non-empty tuple (or list) of positive integers."""
    if not (isinstance(value, (tuple, list)) and len(value) > 0
            and all(isinstance(u, numbers.Integral) and u >= 1 for u in value)):
        raise ValueError(f"{name} must be {allowed}, got {name}={value!r}.")


def check_choice(name, value, choices):
    if not (isinstance(value, str) and value in choices):
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {name}={value!r}.")
