"""The epoch loop every training here shares, and the callbacks that steer it.

``run_epochs`` is the loop: one compiled call runs an epoch's steps (as Keras
runs ``steps_per_execution`` steps between two batch callbacks), then the
validation loss is taken and the epoch's values go to the callbacks. What the
loop does not decide itself (when to cut the learning rate, when to stop,
what to write where) is a callback: Keras's own ``keras.callbacks.Callback``
hooks, called in the order given, so Keras's stock callbacks
(``TerminateOnNaN``, ``CSVLogger``, ``EarlyStopping``) work in it too.

- ``on_train_batch_begin`` / ``on_train_batch_end``: around the epoch's
  steps, before validation (``WarmStartGuard`` undoes an epoch there;
  monitors add values to ``logs``);
- ``on_epoch_end``: the epoch's values, validation loss included
  (``PlateauSchedule``, ``Convergence``, ``TensorBoardLog``, ``ProgressBar``,
  ``Checkpoint``, in that order).

A callback that needs more than the model (the optimizer, the RNG, the
history) subclasses ``Callback`` and reads ``self.training``.
"""

import time

import keras
import numpy as np
import tensorflow as tf

from . import distribute
from .metrics import grassmann
from .streaming import map_batches

#: History keys that are not per-epoch curves (not written to TensorBoard).
NOT_CURVES = ("iteration",)


class Training:
    """The state of one training that its callbacks see: the model, its
    optimizer and random generator, the epoch range and the history.

    ``history`` holds one list per value per epoch ("loss", "val_loss",
    "lr", "epoch_seconds" and whatever the callbacks add), plus scalars a
    training adds before its first epoch. ``initial_epoch`` and
    ``seconds_before`` are those of a resumed training (``Checkpoint``)."""

    def __init__(self, name, model, optimizer, generator, epochs, strategy=None, steps=None):
        self.name = name
        self.model = model
        self.optimizer = optimizer
        self.generator = generator
        self.epochs = epochs
        self.steps = steps
        self.strategy = distribute.get(strategy)
        self.history = {"loss": [], "val_loss": [], "lr": []}
        self.initial_epoch = 0
        self.seconds_before = 0.0
        self._started = None

    @property
    def lr(self):
        """The optimizer's learning rate now."""
        return float(self.optimizer.learning_rate.numpy())

    @property
    def stop_training(self):
        return bool(getattr(self.model, "stop_training", False))

    def stop(self, reason):
        """End the training after this epoch; the history's "stopped_by"
        keeps the first ``reason`` ("min_lr", "converged", ...)."""
        self.model.stop_training = True
        self.history.setdefault("stopped_by", reason)

    def objects(self):
        """The trackables a checkpoint saves: every model variable (the
        non-trainable Orthonorm kernel among them), the optimizer, the RNG."""
        return {"model": list(self.model.variables), "optimizer": self.optimizer,
                "generator": self.generator}

    def seconds(self):
        """Seconds of training so far, a resumed training's earlier ones included."""
        return self.seconds_before + time.perf_counter() - self._started

    def record(self, logs):
        for key, value in logs.items():
            self.history.setdefault(key, []).append(value)


class Callback(keras.callbacks.Callback):
    """A Keras callback that also sees the ``Training`` (``self.training``).
    ``get_state`` / ``set_state``: what a ``Checkpoint`` keeps of it (JSON)."""

    training = None

    def set_training(self, training):
        self.training = training

    def get_state(self):
        return {}

    def set_state(self, state):
        pass


def repeat(steps, step):
    """The sum of ``step(i)`` for i = 0 .. steps - 1, in one ``tf.while_loop``:
    an epoch's steps inside a compiled function. Those functions are traced
    without autograph (``tf.function(autograph=False)``), which traces a
    training step in a tenth of the time; their Python branches are all on
    values known at trace time."""
    return tf.while_loop(lambda i, total: i < steps,
                         lambda i, total: (i + 1, total + step(i)),
                         (tf.constant(0), tf.constant(0.0)))[1]


def _call(callbacks, hook, *args):
    for callback in callbacks:
        getattr(callback, hook)(*args)


def run_epochs(training, run_epoch, validation_loss, callbacks=()):
    """Train for ``training.epochs`` epochs, or until a callback stops it.

    Each epoch: ``run_epoch()`` (one compiled call of all its steps; returns
    the mean loss), then ``validation_loss()``. The epoch's values ("loss",
    "val_loss", "lr" and what the batch callbacks add), agreed by all the
    workers of a multi-worker strategy (``distribute.agree``, so that every
    worker takes every branch alike), are recorded in ``training.history``
    and passed to the callbacks with the epoch's seconds. Returns the
    history, with "seconds" (the training's time, earlier runs included)
    and "stopped_by": what ended it ("min_lr", "converged", "max_epochs")."""
    model = training.model
    model.stop_training = False
    for callback in callbacks:
        callback.set_model(model)
        if isinstance(callback, Callback):
            callback.set_training(training)
    training._started = time.perf_counter()
    _call(callbacks, "on_train_begin", None)
    for epoch in range(training.initial_epoch, training.epochs):
        if training.stop_training:  # e.g. a resumed training that had stopped
            break
        _call(callbacks, "on_epoch_begin", epoch, None)
        tick = time.perf_counter()
        _call(callbacks, "on_train_batch_begin", epoch, None)
        try:
            loss = float(run_epoch())
        except tf.errors.InvalidArgumentError as err:
            raise FloatingPointError(
                f"{training.name} failed in epoch {epoch + 1}: {err.message}") from err
        found = {}
        _call(callbacks, "on_train_batch_end", epoch, found)
        seconds = time.perf_counter() - tick
        logs = distribute.agree({"loss": loss, "val_loss": float(validation_loss()),
                                 "lr": training.lr, **found}, training.strategy)
        training.record({**logs, "epoch_seconds": seconds})
        _call(callbacks, "on_epoch_end", epoch, {**logs, "epoch_seconds": seconds})
    _call(callbacks, "on_train_end", None)
    # A Keras callback of the user's may stop it too; else the epochs ran out.
    training.history.setdefault("stopped_by", "a callback" if training.stop_training
                                else "max_epochs")
    training.history["seconds"] = training.seconds()
    return training.history


class PlateauSchedule(Callback):
    """Divide the learning rate by 10 after ``patience`` epochs without a
    lower validation loss; stop once it reaches ``min_lr`` (paper Appendix C,
    Table 4). Keras's ``ReduceLROnPlateau`` with ``min_delta=0``, plus the
    stop."""

    def __init__(self, patience=10, factor=0.1, min_lr=1e-8, monitor="val_loss"):
        super().__init__()
        self.patience = patience
        self.factor = factor
        self.min_lr = min_lr
        self.monitor = monitor
        self.best, self.wait = np.inf, 0

    def on_train_begin(self, logs=None):
        self.best, self.wait = np.inf, 0

    def on_epoch_end(self, epoch, logs=None):
        if logs[self.monitor] < self.best:
            self.best, self.wait = logs[self.monitor], 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.cut()
        if self.reaches_min(self.training.lr):
            self.training.stop("min_lr")

    def cut(self):
        """Divide the rate by ``factor``; the patience count starts again."""
        self.training.optimizer.learning_rate.assign(self.training.lr * self.factor)
        self.wait = 0

    def reaches_min(self, lr):
        """Whether a rate ``lr`` is at ``min_lr`` (to rounding) or under it."""
        return lr <= self.min_lr * (1 + 1e-6)

    def get_state(self):
        return {"best": self.best, "wait": self.wait}

    def set_state(self, state):
        self.best, self.wait = state["best"], state["wait"]


class Convergence(Callback):
    """Stop when the validation loss has not fallen by more than ``tol`` of
    itself for ``patience`` epochs in a row: training has converged, and
    the rest of the schedule would polish the fourth decimal of the loss
    while costing most of the time. ``tol=0`` never stops early."""

    def __init__(self, tol=1e-3, patience=3, monitor="val_loss"):
        super().__init__()
        self.tol = tol
        self.patience = patience
        self.monitor = monitor
        self.best, self.wait = np.inf, 0

    def on_train_begin(self, logs=None):
        self.best, self.wait = np.inf, 0

    def on_epoch_end(self, epoch, logs=None):
        value = logs[self.monitor]
        if value < self.best - self.tol * abs(self.best) or not np.isfinite(self.best):
            self.best, self.wait = value, 0
            return
        self.best = min(self.best, value)
        self.wait += 1
        if self.tol > 0 and self.wait >= self.patience:
            self.training.stop("converged")

    def get_state(self):
        return {"best": self.best, "wait": self.wait}

    def set_state(self, state):
        self.best, self.wait = state["best"], state["wait"]


class IterationCount(Callback):
    """Adds "iteration": the steps taken by the end of each epoch."""

    def on_train_batch_end(self, epoch, logs=None):
        logs["iteration"] = (epoch + 1) * self.training.steps


class GrassmannMonitor(Callback):
    """Adds "grassmann": the distance of the net's outputs on ``x`` to the
    true eigenvectors ``eigvecs`` after each epoch (``metrics.grassmann``)."""

    def __init__(self, x, eigvecs):
        super().__init__()
        self.x, self.eigvecs = x, eigvecs

    def on_train_batch_end(self, epoch, logs=None):
        logs["grassmann"] = grassmann(map_batches(self.model, self.x), self.eigvecs)


class TensorBoardLog(Callback):
    """The epoch's values as TensorBoard scalars (``tf.summary``) of the run
    ``log_dir/run`` at step ``epoch + 1``, flushed every epoch so that
    TensorBoard shows a training in progress."""

    def __init__(self, log_dir, run):
        super().__init__()
        self.log_dir, self.run = log_dir, run
        self.writer = None

    def on_train_begin(self, logs=None):
        import os

        self.writer = tf.summary.create_file_writer(os.path.join(self.log_dir, self.run))

    def on_epoch_end(self, epoch, logs=None):
        with self.writer.as_default():
            for name, value in logs.items():
                if name not in NOT_CURVES:
                    tf.summary.scalar(name, value, step=epoch + 1)
        self.writer.flush()


class ProgressBar(Callback):
    """A Keras progress bar over epochs (its unit named "epoch")."""

    def __init__(self, verbose=1):
        super().__init__()
        self.verbose = verbose
        self.bar = None

    def on_train_begin(self, logs=None):
        self.bar = keras.utils.Progbar(self.training.epochs, verbose=self.verbose,
                                       unit_name="epoch")

    def on_epoch_end(self, epoch, logs=None):
        values = {key: value for key, value in logs.items() if key != "epoch_seconds"}
        finished = self.training.stop_training or epoch + 1 == self.training.epochs
        self.bar.stateful_metrics = set(values)
        self.bar.update(epoch + 1, list(values.items()), finalize=finished)


class Checkpoint(Callback):
    """Checkpoint after every ``checkpointer.every``-th epoch and the last,
    and resume from the newest checkpoint at the start: the model's
    variables, the optimizer's slots and rate, the RNG stream, the history,
    and the state of the ``stateful`` callbacks (name -> callback, e.g. the
    schedule's best loss and patience count). Written atomically
    (``checkpoint.Checkpointer``). Put it last: it keeps what the others
    decided in the epoch."""

    def __init__(self, checkpointer, stateful=None):
        super().__init__()
        self.checkpointer = checkpointer
        self.stateful = dict(stateful or {})

    def on_train_begin(self, logs=None):
        state = self.checkpointer.restore(self.training.objects())
        if state is None:
            return
        self.training.history = state["history"]
        self.training.initial_epoch = state["epoch"]
        self.training.seconds_before = state["seconds"]
        # Checkpoints written before named states keep the schedule's at the top level.
        states = state.get("callbacks", {"schedule": state})
        for name, callback in self.stateful.items():
            if name in states:
                callback.set_state(states[name])
        if state["stopped"]:
            self.training.stop(self.training.history.get("stopped_by", "a checkpoint"))

    def on_epoch_end(self, epoch, logs=None):
        stopped = self.training.stop_training
        if stopped or epoch + 1 == self.training.epochs or (epoch + 1) % self.checkpointer.every == 0:
            states = {name: c.get_state() for name, c in self.stateful.items()}
            self.checkpointer.save(epoch + 1, self.training.objects(), {
                "history": self.training.history, "stopped": stopped,
                "seconds": self.training.seconds(), "callbacks": states})
