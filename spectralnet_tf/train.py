"""Algorithm 1 of the paper: ``train_spectralnet``.

Each iteration is an orthogonalization step, which sets the Orthonorm
layer's kernel from a random minibatch, then a gradient step on another
minibatch, whose affinity W the affinity object builds. One epoch of
iterations runs inside one compiled ``tf.function``; between epochs the loop
(``callbacks.run_epochs``) takes the validation loss and hands the epoch to
the callbacks (the learning-rate schedule, the stop, logs, checkpoints).
What a fit knows beyond the affinity (labels, groups) enters through
``constraints``; how the net starts, through an ``initializers`` object.
"""

from typing import NamedTuple

import keras
import numpy as np
import tensorflow as tf

from . import distribute
from .callbacks import Training, repeat, run_epochs
from .constraints import apply_all, draw_rows, extra_loss
from .initializers import RandomInit
from .losses import spectral_loss
from .networks import orthonorm_input
from .orthonorm import gram, tangent_projection
from .sampling import sample_rows

GRADIENTS = ("projected", "plain")
#: The validation loss is taken on at most this many minibatches of the
#: hold-out (MNIST's 7,000 points make 7), so an epoch's cost does not grow with n.
VALIDATION_MAX_BATCHES = 16


class Config(NamedTuple):
    """Algorithm 1's settings (``SpectralNet``'s parameters of the same names)."""
    laplacian: str = "unnormalized"
    batch_size: int = 1024
    ortho_batch_size: int = 1024
    learning_rate: float = 1e-3
    epochs: int = 100
    steps_per_epoch: int = 50
    gradient: str = "projected"
    seed: int = 0


class Data(NamedTuple):
    """The net's inputs (``x_*``) and the affinity's coordinates of the same
    points (``c_*``, ``Affinity.coordinates``), for training and validation."""
    x_train: np.ndarray
    x_val: np.ndarray
    c_train: np.ndarray
    c_val: np.ndarray


class Setup(NamedTuple):
    """What the constraints and the initializer see of a training."""
    model: keras.Model
    body: keras.Model
    affinity: object
    data: Data
    config: Config
    constraints: tuple
    strategy: object
    #: The training graph on a subsample (``affinity.SubsampleGraph``), if
    #: already built, for the initializer to reuse.
    subsample: object = None

    @property
    def orthonorm(self):
        return self.model.layers[-1]

    @property
    def n_outputs(self):
        return int(self.body.outputs[0].shape[-1])

    def coordinates(self):
        """The affinity coordinates of the training points, then the hold-out's."""
        return np.concatenate([self.data.c_train, self.data.c_val])


def minibatch_loss(w, y, laplacian="unnormalized", extra=None):
    """The loss of one minibatch: the SpectralNet loss of its affinity ``w``
    and outputs ``y``, plus ``extra(y)`` where it is not None (the
    constraints' terms, on the gathered outputs). Training and validation
    both use it.

    In a replica of a ``tf.distribute`` strategy, ``w`` holds this replica's
    rows of W (``Affinity.kernel_matrix``) and ``y`` the gathered outputs of
    the whole minibatch; the result is this replica's part of the loss, and
    the parts sum to the loss of the global minibatch.
    """
    rows, cols, degrees = y, None, None
    if distribute.sharded():  # w holds this replica's rows of W
        rows, cols = distribute.local_part(y), y
        if laplacian == "normalized":
            degrees = distribute.all_gather(tf.reduce_sum(w, axis=1))
    loss = spectral_loss(w, rows, laplacian, y_cols=cols, d_cols=degrees)
    term = None if extra is None else extra(y)
    if term is not None:
        loss += distribute.even_share(term)  # computed in full on every replica
    return loss


def gradient_step(model, optimizer, x_batch, w, laplacian="unnormalized", gradient="projected",
                  extra=None):
    """One gradient step of Algorithm 1 on a minibatch and its affinity ``w``;
    the Orthonorm kernel is non-trainable, so it is a constant here.
    ``extra(y)``, if given, is a term added to the loss of the outputs y (a
    constraint's). Returns the loss.

    ``gradient="projected"`` projects the loss gradient with respect to Y onto
    the tangent space of the orthonormality constraint before backpropagating
    it (``orthonorm.tangent_projection``); ``"plain"`` is the unprojected
    gradient of Algorithm 1 as printed, whose outputs shrink towards 0.

    Under a strategy, ``x_batch`` is this replica's shard of the global
    minibatch and ``w`` its rows of W: the outputs are gathered, the
    gradients of the replicas' parts of the loss with respect to Y are
    summed, so every replica holds the global batch's ∂L/∂Y (and projects
    it), and each back-propagates its own rows.
    """
    with tf.GradientTape() as tape:
        y_local = tf.cast(model(x_batch, training=True), tf.float32)  # no-op unless mixed precision
    y = distribute.all_gather(y_local)
    with tf.GradientTape() as loss_tape:
        loss_tape.watch(y)
        loss = minibatch_loss(w, y, laplacian, extra)
    grad_y = distribute.all_sum(loss_tape.gradient(loss, y))
    if gradient == "projected":
        grad_y = tangent_projection(y, grad_y)
    grads = tape.gradient(y_local, model.trainable_variables,
                          output_gradients=distribute.local_part(grad_y))
    # Summed over replicas by the optimizer (distribute.py).
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return distribute.all_sum(loss)


def validation_batches(setup):
    """Fixed validation minibatches ``(x, W, rows)`` of at most
    ``VALIDATION_MAX_BATCHES`` batches of the hold-out, W computed once with
    the constraints' pairs set; ``rows`` number the hold-out after the
    training points, as the constraints number them."""
    data, m = setup.data, setup.config.batch_size
    n_val = min(len(data.x_val), VALIDATION_MAX_BATCHES * m)
    n_batches = max(1, int(np.ceil(n_val / m)))
    rows = np.array_split(np.arange(n_val), n_batches)
    out = []
    for r in rows:
        ids = tf.constant(len(data.x_train) + r, tf.int32)
        w = setup.affinity.kernel_matrix(tf.constant(data.c_val[r]))
        out.append((tf.constant(data.x_val[r]), apply_all(setup.constraints, w, ids), ids))
    return out


def train_spectralnet(model, affinity, data, config, *, constraints=(), initializer=None,
                      callbacks=(), strategy=None, resuming=False, subsample=None):
    """Algorithm 1: train F_theta (``model``, ending in Orthonorm) on
    ``data`` (a ``Data``) with alternating ortho and gradient steps, then set
    the Orthonorm kernel on the whole training set. Returns the history.

    ``affinity`` (fitted) builds each minibatch's W from the points'
    coordinates; ``constraints`` (``constraints.Constraint``) shape the
    minibatches, W and the loss; ``initializer`` (default: the weights as
    built) starts the net and may steer it; ``callbacks`` see every epoch
    (``PlateauSchedule`` decides when to stop). ``resuming``: a
    ``Checkpoint`` callback restores the training; the start is not refitted.
    Under a ``tf.distribute`` ``strategy`` (``model`` built in its scope),
    each step is data-parallel, on the same global minibatches as without.
    ``subsample``: the training graph on a subsample
    (``Affinity.subsample_graph``), which the initializer solves if it
    draws the same rows, instead of building it again.
    """
    strategy = distribute.get(strategy)
    distribute.check_divisible("batch_size", config.batch_size, strategy)
    distribute.check_divisible("ortho_batch_size", config.ortho_batch_size, strategy)
    initializer = initializer or RandomInit()
    constraints = tuple(constraints)
    data = Data(*(np.asarray(a, np.float32) for a in data))
    body, orthonorm = orthonorm_input(model), model.layers[-1]
    setup = Setup(model, body, affinity, data, config, constraints, strategy, subsample)
    for constraint in constraints:
        constraint.prepare(setup)
    val_batches = validation_batches(setup)
    started = initializer.start(setup, resuming)

    x, coords = tf.constant(data.x_train), tf.constant(data.c_train)
    n = len(data.x_train)
    generator = tf.random.Generator.from_seed(config.seed)
    with strategy.scope():
        optimizer = keras.optimizers.RMSprop(config.learning_rate)
        optimizer.build(model.trainable_variables)

    def ortho_step(rows):
        # The kernel from the Gram matrix of the whole minibatch.
        y_tilde = body(tf.gather(x, distribute.local_part(rows)), training=False)
        orthonorm.orthogonalize_gram(distribute.all_sum(gram(y_tilde)), config.ortho_batch_size)

    def loss_step(rows):
        # W of the whole minibatch (this replica's rows of it), from the gathered coordinates.
        local = distribute.local_part(rows)
        w = affinity.kernel_matrix(distribute.all_gather(tf.gather(coords, local)))
        return gradient_step(model, optimizer, tf.gather(x, local), apply_all(constraints, w, rows),
                             config.laplacian, config.gradient,
                             lambda y: extra_loss(constraints, y, rows))

    def iteration(i):
        initializer.before_step(optimizer)
        distribute.run(strategy, ortho_step, sample_rows(generator, n, config.ortho_batch_size))
        rows = draw_rows(constraints, generator, lambda m: sample_rows(generator, n, m),
                         config.batch_size)
        return distribute.run(strategy, loss_step, rows)

    @tf.function(autograph=False)
    def run_epoch():
        return (repeat(config.steps_per_epoch, iteration)
                / tf.cast(config.steps_per_epoch, tf.float32))

    @tf.function(autograph=False)
    def validation_loss():
        losses = []
        for xb, w, ids in val_batches:
            y = model(xb)
            losses.append(minibatch_loss(w, y, config.laplacian,
                                         lambda y, ids=ids: extra_loss(constraints, y, ids)))
        return tf.add_n(losses) / len(losses)

    training = Training("SpectralNet", model, optimizer, generator, config.epochs, strategy,
                        steps=config.steps_per_epoch)
    training.history.update(started)
    history = run_epochs(training, run_epoch, validation_loss, callbacks)
    for constraint in constraints:
        history.update(constraint.record())
    # Final orthogonalization on all training points, so (1/n) Y^T Y = I holds
    # on the training set rather than on one minibatch.
    orthonorm.orthogonalize(distribute.map_rows(body, data.x_train, strategy))
    return history
