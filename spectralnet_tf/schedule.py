"""How fast and how long a net trains: ``Schedule``, the one part that both
trainings here take (SpectralNet's Algorithm 1 and the Siamese net).

A ``Schedule`` is what Keras spreads over an optimizer's first rate, the
epochs and steps of ``fit`` and two callbacks (``ReduceLROnPlateau``,
``EarlyStopping``): it holds those values and makes the two callbacks
(``callbacks.PlateauSchedule``, ``callbacks.Convergence``) for a training.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator

from .callbacks import Convergence, PlateauSchedule
from .checks import Interval, validate_params
from .parts import unfitted_copy

#: max_epochs="auto": epochs for this many iterations, within these bounds.
AUTO_ITERATIONS = 2500
MIN_AUTO_EPOCHS, MAX_AUTO_EPOCHS = 20, 100


def auto_max_epochs(steps_per_epoch):
    """``max_epochs="auto"``: the epochs that give ``AUTO_ITERATIONS``
    iterations at ``steps_per_epoch``, within [``MIN_AUTO_EPOCHS``, 100]."""
    return int(np.clip(-(-AUTO_ITERATIONS // steps_per_epoch), MIN_AUTO_EPOCHS, MAX_AUTO_EPOCHS))


class Schedule(BaseEstimator):
    """The learning rate over a training and when the training ends.

    RMSprop starts at ``learning_rate``; the rate is divided by 10 after
    ``patience`` epochs without a lower validation loss (paper Appendix C),
    and training stops when it reaches ``min_lr``, when the validation loss
    has converged (``tol``), or after ``max_epochs`` epochs of
    ``steps_per_epoch`` iterations, whichever comes first.

    Parameters
    ----------
    learning_rate : float, default=1e-3
        RMSprop's first rate.
    max_epochs : int or "auto", default="auto"
        Most epochs; "auto": ``AUTO_ITERATIONS`` iterations, in [20, 100] epochs.
    steps_per_epoch : int or None, default=None
        Iterations per epoch; None: one pass over the training data, as the
        training counts a pass (``SpectralNet``: at least
        ``MIN_STEPS_PER_EPOCH`` minibatches; the Siamese net: its pairs).
    patience : int, default=10
        Epochs without a lower validation loss before a cut, and (with
        ``tol``) before the convergence stop.
    min_lr : float, default=1e-8
        The rate at which training stops.
    tol : float, default=1e-3
        Stop once the validation loss has not fallen by this share of itself
        for ``patience`` epochs (``callbacks.Convergence``); 0: never.

    Examples
    --------
    >>> from spectralnet_tf import Schedule, SpectralNet
    >>> net = SpectralNet(3, schedule=Schedule(max_epochs=30, tol=0))
    >>> net.set_params(schedule__patience=5).schedule.get_params()["patience"]
    5
    """

    _parameter_constraints = {
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_epochs": ["auto", Interval(numbers.Integral, 1, None, closed="left")],
        "steps_per_epoch": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "patience": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "tol": [Interval(numbers.Real, 0, 1, closed="left")],
    }

    def __init__(self, learning_rate=1e-3, max_epochs="auto", steps_per_epoch=None, patience=10,
                 min_lr=1e-8, tol=1e-3):
        self.learning_rate = learning_rate
        self.max_epochs = max_epochs
        self.steps_per_epoch = steps_per_epoch
        self.patience = patience
        self.min_lr = min_lr
        self.tol = tol

    def check_params(self):
        """Raise a ValueError naming the first bad parameter."""
        validate_params(self, self._parameter_constraints)

    def budget(self, steps_per_pass):
        """``(steps_per_epoch, max_epochs)`` of a training whose pass over
        its data is ``steps_per_pass`` iterations."""
        self.check_params()
        steps = steps_per_pass if self.steps_per_epoch is None else self.steps_per_epoch
        epochs = auto_max_epochs(steps) if isinstance(self.max_epochs, str) else self.max_epochs
        return steps, epochs

    def callbacks(self):
        """The callbacks that carry this schedule out, by the names a
        ``Checkpoint`` saves their state under: the plateau cut and its
        ``min_lr`` stop ("schedule"), the convergence stop ("convergence")."""
        return {"schedule": PlateauSchedule(self.patience, min_lr=self.min_lr),
                "convergence": Convergence(self.tol, self.patience)}


def make_schedule(schedule, **defaults):
    """An unfitted ``Schedule`` from an estimator's ``schedule`` parameter:
    None gives ``Schedule(**defaults)`` (the estimator's own defaults), an
    object a copy."""
    return Schedule(**defaults) if schedule is None else unfitted_copy(schedule)
