"""How F_theta starts: ``RandomInit`` (the paper's) or ``SpectralInit``.

An initializer has three hooks that Algorithm 1 (``train.train_spectralnet``)
calls: ``start(setup, resuming)`` before the first epoch (returns values for
the history), ``before_step(optimizer)`` inside the compiled loop before each
iteration, and ``callbacks(schedule)``, the callbacks that belong to it.
"""

import numbers
import time

import keras
import numpy as np
import tensorflow as tf
from sklearn.base import BaseEstimator

from . import distribute
from .callbacks import Callback, repeat
from .affinity import sparse_graph
from .checks import Interval, validate_params
from .constraints import apply_all, subsample_rows
from .metrics import grassmann
from .parts import unfitted_copy
from .sampling import sample_rows, subsample_size
from .spectral import laplacian_eigenvectors

class RandomInit(BaseEstimator):
    """Glorot weights as built, as in the paper: nothing to do."""

    def check_params(self):
        """Nothing to check: no parameters."""

    def start(self, setup, resuming=False):
        return {}

    def before_step(self, optimizer):
        pass

    def callbacks(self, schedule):
        return []


class SpectralInit(BaseEstimator):
    """Start F_theta near the minimum of the loss, not at a random point.

    Algorithm 1 from random weights can stop on a saddle: one output
    direction splits a cluster while two others stay merged, and the
    minibatch gradient does not rotate it out before the schedule decays.
    Here the input of Orthonorm is first fitted by least squares, in
    ``steps`` minibatch steps of ``batch_size`` rows (None: the training
    minibatch's size; under a strategy rounded down to equal shards) of its
    own RMSprop at ``learning_rate``, to the
    exact eigenvectors of the graph the minibatches sample, on a random
    subsample of ``subsample_size`` training points (scaled to RMS ``rms``,
    inside tanh's range; Orthonorm undoes the scale). Algorithm 1 then
    starts in the basin of the minimum, and

    - its rate ramps up over the first epoch (``warm_up``): RMSprop's first
      updates are about 3 rates per weight whatever the gradient, which would
      carry the net far from the start before its averages settle;
    - an epoch that ends farther than ``max_distance`` (Grassmann) from the
      start's eigenvectors, and farther than it began, is undone and the rate
      cut (``WarmStartGuard``): the warm start says where the minimum is, and
      an epoch that leaves it was a step too long.

    ``steps``, ``learning_rate`` and ``batch_size`` were chosen with the other defaults on a
    development suite of data sets (``harness/defaults.py``). RMSprop moves
    every weight by about its rate at each step, whatever the gradient, so
    a first layer's units move by about the rate times the input's width: a
    higher rate that suits a hundred features kills every unit of the first
    layer of a thousand.

    The history gets "init_grassmann" (how well the net took the start) and
    "init_seconds", and per epoch "start_distance" and "undone".
    """

    _parameter_constraints = {
        "steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "rms": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_distance": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [None, Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, steps=500, learning_rate=1e-3, rms=0.25, max_distance=0.5,
                 batch_size=128):
        self.steps = steps
        self.learning_rate = learning_rate
        self.rms = rms
        self.max_distance = max_distance
        self.batch_size = batch_size

    def check_params(self):
        """Raise a ValueError naming the first bad parameter."""
        validate_params(self, self._parameter_constraints)

    def start(self, setup, resuming=False):
        """Solve the subsample (again on resume: the guard measures against
        it), and fit the net to it unless resuming."""
        self.setup_ = setup
        self.start_ = self.eigenvectors(setup)
        # The body on the start's rows, compiled once: the guard reads it every epoch.
        self.start_outputs_ = distribute.fixed_rows_map(
            setup.body, setup.data.x_train[self.start_[0]], setup.strategy)
        if resuming:
            return {}
        started = self.fit(setup)
        # The start as a whole net: Orthonorm's kernel from the start's rows. An
        # epoch undone returns here, and the validation loss then reads orthonormal
        # outputs, not the fitted targets' scale, which it would keep as its best.
        setup.orthonorm.orthogonalize(self.start_outputs_())
        return started

    def eigenvectors(self, setup):
        """(rows, targets): the subsample's rows (``constraints.subsample_rows``)
        and the k smallest eigenvectors of the graph the minibatches sample on
        it (``Affinity.sampled_graph``, with the constraints' pairs set),
        computed exactly in float64 (under a strategy, the first replica's
        are used everywhere), scaled to RMS ``rms``. The same for the same
        seed. Without constraints, the setup's ``subsample`` graph is
        solved where its rows are these."""
        config = setup.config
        n = len(setup.data.x_train)
        size = subsample_size(n, config.batch_size)
        rng = np.random.default_rng(config.seed)
        rows = subsample_rows(setup.constraints, rng, n, size)
        given = setup.subsample
        if given is not None and not setup.constraints and np.array_equal(given.rows, rows):
            w = given.w
        else:
            w = setup.affinity.sampled_graph(setup.data.c_train[rows], config.batch_size)
            w = sparse_graph(apply_all(setup.constraints, w, tf.constant(rows, tf.int32)))
        # float64: near-degenerate small eigenvalues must not drown in float32 rounding.
        vecs = laplacian_eigenvectors(w, setup.n_outputs, config.laplacian)
        target = distribute.run(setup.strategy, distribute.from_first, tf.constant(
            self.rms * np.sqrt(size) * vecs, tf.float32))
        return rows, target.numpy()

    def distance(self):
        """The Grassmann distance between the net's Orthonorm input on the
        subsample and the start's eigenvectors."""
        return grassmann(self.start_outputs_(), self.start_[1])

    def fit(self, setup):
        """The least-squares fit of the body to the start; its own streams."""
        begin = time.perf_counter()
        strategy, body = setup.strategy, setup.body
        rows, target = self.start_
        size = len(rows)
        x_sub, target = tf.constant(setup.data.x_train[rows]), tf.constant(target)
        m = min(self.batch_size or setup.config.batch_size, size)
        m = max(distribute.n_replicas(strategy), distribute.round_to_shards(m, strategy))
        generator = tf.random.Generator.from_seed(setup.config.seed)
        with strategy.scope():
            optimizer = keras.optimizers.RMSprop(self.learning_rate)
            optimizer.build(body.trainable_variables)

        def fit_step(batch):
            local = distribute.local_part(batch)
            with tf.GradientTape() as tape:
                out = tf.cast(body(tf.gather(x_sub, local), training=True), tf.float32)
                error = tf.reduce_mean(tf.square(out - tf.gather(target, local)))
                loss = distribute.replica_share(error, tf.shape(batch)[0])
            grads = tape.gradient(loss, body.trainable_variables)
            optimizer.apply_gradients(zip(grads, body.trainable_variables))  # summed over replicas
            return loss

        @tf.function(autograph=False)
        def fit():
            repeat(self.steps, lambda i: distribute.run(strategy, fit_step,
                                                        sample_rows(generator, size, m)))

        fit()
        return {"init_grassmann": self.distance(), "init_seconds": time.perf_counter() - begin}

    def before_step(self, optimizer):
        warm_up(optimizer, self.setup_.config.learning_rate, self.setup_.config.steps_per_epoch)

    def callbacks(self, schedule):
        return [WarmStartGuard(self, schedule)]


#: ``SpectralNet(init=...)``'s names of the initializers.
INITIALIZERS = {"random": RandomInit, "spectral": SpectralInit}


def make_initializer(init):
    """A new initializer from ``SpectralNet``'s ``init``: a name (the class
    with its defaults) or a copy of an initializer object."""
    return INITIALIZERS[init]() if isinstance(init, str) else unfitted_copy(init)


def warm_up(optimizer, learning_rate, steps):
    """Raise the rate linearly to ``learning_rate`` over the first ``steps``
    updates (in a compiled loop, before each one)."""
    done = tf.cast(optimizer.iterations, tf.float32)
    rate = tf.where(done < steps, learning_rate * (done + 1.0) / steps, optimizer.learning_rate)
    optimizer.learning_rate.assign(rate)


class WarmStartGuard(Callback):
    """Holds Algorithm 1 near a ``SpectralInit``'s start.

    An epoch after which the distance to the start (agreed by all workers)
    exceeds the initializer's ``max_distance`` and is larger than before it,
    is undone (the model's variables, the Orthonorm kernel among them; the
    optimizer's state stays) and the rate cut by the plateau ``schedule``'s
    own factor, which restarts its patience count as its own cuts do. Where
    that cut would reach its ``min_lr``, the epoch stands instead: stopping
    stays the schedule's decision. A start that did not take (farther than
    ``max_distance`` to begin with) holds the net only against moving
    farther still. The epoch's loss is that of the weights undone; the
    validation loss is taken after, on the weights kept.

    RMSprop moves each weight by about its rate at every step, whatever the
    gradient, so near the minimum the noise of the minibatch graphs alone can
    carry the net off, at a rate that suits a random start, onto a saddle
    whose loss is higher than the minimum's.
    """

    def __init__(self, initializer, schedule):
        super().__init__()
        self.initializer = initializer
        self.schedule = schedule
        self.here = None
        self.saved = None

    def measure(self):
        return distribute.agree({"d": self.initializer.distance()}, self.training.strategy)["d"]

    def on_train_begin(self, logs=None):
        self.here = None  # measured again at the first epoch of this fit or its resumption

    def on_train_batch_begin(self, epoch, logs=None):
        if self.here is None:
            self.here = self.measure()
        self.saved = [v.numpy() for v in self.model.variables]

    def on_train_batch_end(self, epoch, logs=None):
        far = self.measure()
        schedule = self.schedule
        undone = (far > self.initializer.max_distance and far > self.here
                  and not schedule.reaches_min(schedule.training.lr * schedule.factor))
        if undone:
            for variable, value in zip(self.model.variables, self.saved):
                variable.assign(value)
            schedule.cut()  # restarts the patience count, as the schedule's own cuts do
        else:
            self.here = far
        logs.update(start_distance=far, undone=int(undone))
