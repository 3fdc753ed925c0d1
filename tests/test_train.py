import keras
import pytest
import numpy as np
import tensorflow as tf

from spectralnet_tf.callbacks import (Callback, Checkpoint, IterationCount, PlateauSchedule,
                                      ProgressBar, Training, run_epochs)
from spectralnet_tf.constraints import label_targets
from spectralnet_tf.sampling import sample_rows


def _training(lr=1e-3, epochs=10):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.RMSprop(lr)
    optimizer.build(model.trainable_variables)
    return Training("test", model, optimizer, tf.random.Generator.from_seed(0), epochs)


def _schedule(training, **kwargs):
    schedule = PlateauSchedule(**kwargs)
    schedule.set_model(training.model)
    schedule.set_training(training)
    schedule.on_train_begin()
    return schedule


def test_plateau_schedule_divides_by_ten_after_patience_and_stops_at_min_lr():
    training = _training()
    sched = _schedule(training, patience=2, min_lr=1e-5)
    for epoch, loss, stops in [(0, 1.0, False),   # improvement
                               (1, 1.0, False),   # 1 epoch without improvement
                               (2, 2.0, False)]:  # 2 -> decay
        sched.on_epoch_end(epoch, {"val_loss": loss})
        assert training.stop_training is stops
    np.testing.assert_allclose(training.lr, 1e-4, rtol=1e-6)
    sched.on_epoch_end(3, {"val_loss": 0.5})  # improvement resets the wait
    sched.on_epoch_end(4, {"val_loss": 0.5})
    assert not training.stop_training
    sched.on_epoch_end(5, {"val_loss": 0.5})  # decays to 1e-5 = min_lr: stop
    assert training.stop_training
    np.testing.assert_allclose(training.lr, 1e-5, rtol=1e-6)


def test_the_plateau_schedule_is_keras_reduce_lr_on_plateau_with_the_stop():
    """The rates it sets are those of Keras's ReduceLROnPlateau (min_delta 0)
    on the same losses: the paper's schedule, in Keras's own terms."""
    losses = [1.0, 0.9, 0.9, 0.95, 0.9, 0.8, 0.85, 0.85, 0.86, 0.7, 0.7, 0.71]
    ours = _training()
    sched = _schedule(ours, patience=2, min_lr=1e-8)
    theirs = _training()
    theirs.model.optimizer = theirs.optimizer
    keras_sched = keras.callbacks.ReduceLROnPlateau("val_loss", factor=0.1, patience=2,
                                                    min_delta=0.0, min_lr=1e-8)
    keras_sched.set_model(theirs.model)
    keras_sched.on_train_begin()
    for epoch, loss in enumerate(losses):
        sched.on_epoch_end(epoch, {"val_loss": loss})
        keras_sched.on_epoch_end(epoch, {"val_loss": loss})
        assert ours.lr == pytest.approx(theirs.lr, rel=1e-6), epoch


def test_warm_up_ramps_the_rate_over_the_first_steps_then_leaves_it_alone():
    from spectralnet_tf.initializers import warm_up

    var = tf.Variable([1.0])
    opt = keras.optimizers.RMSprop(1e-3)
    rates = []
    for _ in range(6):
        warm_up(opt, 1e-3, 4)
        rates.append(float(opt.learning_rate.numpy()))
        opt.apply_gradients([(tf.constant([0.5]), var)])
    np.testing.assert_allclose(rates, [2.5e-4, 5e-4, 7.5e-4, 1e-3, 1e-3, 1e-3], rtol=1e-6)
    opt.learning_rate.assign(1e-4)  # the plateau schedule's decay is kept
    warm_up(opt, 1e-3, 4)
    np.testing.assert_allclose(float(opt.learning_rate.numpy()), 1e-4, rtol=1e-6)


def test_sample_rows_draws_distinct_indices_and_is_seeded():
    gen = tf.random.Generator.from_seed(0)
    idx = sample_rows(gen, 100, 40).numpy()
    assert len(set(idx)) == 40 and idx.min() >= 0 and idx.max() < 100
    again = sample_rows(tf.random.Generator.from_seed(0), 100, 40).numpy()
    np.testing.assert_array_equal(idx, again)


def test_sample_rows_oversamples_the_preferred_rows_exactly():
    gen = tf.random.Generator.from_seed(0)
    preferred = tf.constant([3, 17, 42, 77, 90], tf.int32)
    for _ in range(20):
        idx = sample_rows(gen, 100, 30, preferred, 4).numpy()
        assert len(set(idx)) == 30 and idx.min() >= 0 and idx.max() < 100
        assert len(set(idx) & {3, 17, 42, 77, 90}) >= 4
    # No preferred rows: the same stream as before oversampling existed.
    np.testing.assert_array_equal(
        sample_rows(tf.random.Generator.from_seed(0), 100, 40, preferred, 0).numpy(),
        sample_rows(tf.random.Generator.from_seed(0), 100, 40).numpy())


def _blobs(n=1200, k=3, seed=0):
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[:k]
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    return (centers[labels] + rng.normal(size=(n, 2))).astype(np.float32), labels


def _setup(x, x_val, affinity, k, units, batch_size, seed=0, output_activation="tanh",
           learning_rate=1e-3, steps_per_epoch=5):
    """A ``train.Setup`` as train_spectralnet makes it, on a fresh net."""
    from spectralnet_tf import distribute
    from spectralnet_tf.networks import build_spectralnet, orthonorm_input
    from spectralnet_tf.train import Config, Data, Setup

    model = build_spectralnet(x.shape[1], k, units, seed=0, output_activation=output_activation)
    config = Config(batch_size=batch_size, ortho_batch_size=batch_size,
                    learning_rate=learning_rate, steps_per_epoch=steps_per_epoch, seed=seed)
    return Setup(model, orthonorm_input(model), affinity, Data(x, x_val, x, x_val), config, (),
                 distribute.get())


def test_spectral_warm_start_fits_the_body_to_the_subsample_eigenvectors():
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.initializers import SpectralInit
    from spectralnet_tf.metrics import grassmann
    from spectralnet_tf.spectral import laplacian_eigenvectors

    x, _ = _blobs()
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=3).fit(x, batch_size=256)
    setup = _setup(x, x[:10], aff, 3, (64, 64), 256)
    before = setup.body.predict(x, verbose=0)
    start = SpectralInit()
    got = start.start(setup)
    after = setup.body.predict(x, verbose=0)
    # The same subsample and graph, independently: all 1200 points (fewer
    # than SUBSAMPLE_POINTS), ranks scaled by 1200/256.
    w = aff.for_full_data(len(x), 256)(x).numpy().astype(np.float64)
    vecs = laplacian_eigenvectors(w, 3)
    assert grassmann(before, vecs) > 0.3  # random weights: far from the eigenvectors
    assert got["init_grassmann"] == pytest.approx(grassmann(after, vecs), abs=1e-4)
    # On a saddle one output direction is orthogonal to the eigenvectors
    # (distance >= 1); the start must be a tenth of that at most.
    assert got["init_grassmann"] < 0.1
    assert start.distance() == pytest.approx(got["init_grassmann"], abs=1e-6)


def test_spectral_init_starts_near_the_minimum_and_is_recorded():
    from spectralnet_tf import SpectralNet, acc

    x, y = _blobs()
    # A local scale: with the global one (the median 3rd-neighbour distance)
    # a few outliers hang on by affinities of ~1e-9, and the graph's smallest
    # eigenvectors pick them out instead of the blobs.
    from spectralnet_tf import GaussianKNNAffinity, Schedule

    kw = dict(hidden_units=(64, 64), affinity=GaussianKNNAffinity(scale="local"),
              schedule=Schedule(max_epochs=1, steps_per_epoch=1), random_state=0)
    warm = SpectralNet(3, init="spectral", **kw).fit(x)
    cold = SpectralNet(3, init="random", **kw).fit(x)
    assert warm.history_["init_grassmann"] < 0.1
    assert "init_grassmann" not in cold.history_
    # One iteration of Algorithm 1: the warm start already clusters.
    assert acc(y, warm.labels_) >= 0.99
    assert warm.history_["val_loss"][0] < 0.5 * cold.history_["val_loss"][0]


class _Stub:
    """An initializer whose distances to the start are read, in turn, from a list."""

    def __init__(self, distances, max_distance=0.5):
        self.reads, self.max_distance = iter(distances), max_distance

    def distance(self):
        return next(self.reads)


def _guarded(distances, min_lr=1e-4):
    """The warm-start guard on a model whose epoch moves every weight by 1
    (``epoch()``), its distances read in turn from ``distances`` (the first:
    before the first epoch)."""
    from spectralnet_tf.initializers import WarmStartGuard

    training = _training(lr=1e-2)
    schedule = _schedule(training, min_lr=min_lr)
    guard = WarmStartGuard(_Stub(distances), schedule)
    guard.set_model(training.model)
    guard.set_training(training)
    guard.on_train_begin()
    model = training.model

    def epoch():
        logs = {}
        guard.on_train_batch_begin(0)
        for v in model.variables:
            v.assign_add(tf.ones_like(v))
        guard.on_train_batch_end(0, logs)
        return logs

    return model, schedule, epoch


def test_an_epoch_that_leaves_the_start_is_undone_and_the_rate_cut():
    """Beyond the start's max_distance and farther than before, an epoch is
    undone (the model's variables as they were) and the rate cut by the
    schedule's factor, its patience count restarted; where the cut would
    reach min_lr, or within max_distance, the epoch stands."""
    far = 1.0
    model, schedule, epoch = _guarded([0.1, far, far, 0.5])
    bias = model.variables[1].numpy()
    schedule.wait = 3
    assert epoch() == {"start_distance": far, "undone": 1}
    np.testing.assert_array_equal(model.variables[1].numpy(), bias)
    assert schedule.training.lr == pytest.approx(1e-3) and schedule.wait == 0
    # A cut would reach min_lr (1e-4): the epoch stands, stopping is the schedule's.
    assert epoch() == {"start_distance": far, "undone": 0}
    assert schedule.training.lr == pytest.approx(1e-3)
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 1)
    assert epoch() == {"start_distance": 0.5, "undone": 0}  # back within: stands
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 2)


def test_a_start_that_did_not_take_holds_the_net_only_against_moving_farther():
    """From a warm start already beyond max_distance, epochs that come
    closer stand; one that goes farther than the net was is undone."""
    model, schedule, epoch = _guarded([1.5, 1.2, 1.3, 0.9], min_lr=1e-8)
    bias = model.variables[1].numpy()
    assert epoch() == {"start_distance": 1.2, "undone": 0}  # 1.5 -> 1.2: closer, stands
    assert schedule.training.lr == pytest.approx(1e-2)
    assert epoch()["undone"] == 1 and schedule.training.lr == pytest.approx(1e-3)  # farther
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 1)
    assert epoch() == {"start_distance": 0.9, "undone": 0}  # 1.2 -> 0.9: closer, stands
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 2)


class _Kick(Callback):
    """In the given epochs, after their steps, throws the size-k layer's
    kernel far (seeded): an epoch that left the warm start, built outright
    instead of hoped for from a large learning rate."""

    def __init__(self, epochs):
        super().__init__()
        self.epochs = set(epochs)

    def on_train_batch_end(self, epoch, logs=None):
        if epoch in self.epochs:
            kernel = self.model.get_layer("dense_out").kernel
            kernel.assign(100.0 * np.random.default_rng(epoch).normal(size=kernel.shape))


def _warm_fit(kicks, epochs, x, lr=1e-3, k=3, units=(64, 64), batch_size=200,
              output_activation="tanh"):
    """train_spectralnet from a warm start, as the estimator runs it, with
    the epochs ``kicks`` thrown off the start."""
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.initializers import SpectralInit
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.train import Config, Data, train_spectralnet

    x_train, x_val = x[:-100], x[-100:]
    affinity = GaussianKNNAffinity(scale="local").fit(x_train, batch_size=batch_size)
    model = build_spectralnet(x.shape[1], k, units, seed=0, output_activation=output_activation)
    start = SpectralInit()
    schedule = PlateauSchedule(patience=10)
    history = train_spectralnet(
        model, affinity, Data(x_train, x_val, x_train, x_val),
        Config(batch_size=batch_size, ortho_batch_size=batch_size, learning_rate=lr,
               epochs=epochs, steps_per_epoch=5),
        initializer=start,
        callbacks=[_Kick(kicks), *start.callbacks(schedule), IterationCount(), schedule])
    return model, affinity, start, history


def test_epochs_that_leave_the_warm_start_are_undone_and_cut_the_rate():
    """Each epoch that ends far from the warm start is undone at the cost of
    a tenth of the rate, and only those: the fit ends near the start."""
    x, _ = _blobs()
    _, _, start, history = _warm_fit(kicks=[0, 2], epochs=4, x=x)
    far = np.asarray(history["start_distance"])
    assert history["undone"] == [1, 0, 1, 0]
    assert (far[[0, 2]] > start.max_distance).all() and (far[[1, 3]] <= start.max_distance).all()
    assert history["lr"] == pytest.approx([1e-4, 1e-4, 1e-5, 1e-5])  # the rate after each epoch
    _, _, _, calm = _warm_fit(kicks=[], epochs=4, x=x)
    assert calm["undone"] == [0, 0, 0, 0] and calm["lr"] == pytest.approx([1e-3] * 4)


def test_large_n_draws_are_distinct_uniform_and_cost_no_n_sized_work():
    """Above TOPK_SAMPLING_MAX_N a draw is O(m): distinct rows in range,
    seeded, uniform (each of 8 equal ranges gets its share), with the
    preferred rows first."""
    from spectralnet_tf.sampling import TOPK_SAMPLING_MAX_N, distinct_draws

    n = 8 * TOPK_SAMPLING_MAX_N
    gen = tf.random.Generator.from_seed(0)
    draws = np.concatenate([sample_rows(gen, n, 512).numpy() for _ in range(40)])
    for batch in draws.reshape(40, 512):
        assert len(set(batch)) == 512 and batch.min() >= 0 and batch.max() < n
    counts = np.bincount(draws // (n // 8), minlength=8)
    expected = len(draws) / 8
    assert ((counts - expected) ** 2 / expected).sum() < 24.3  # chi2(7) at p = 0.001
    np.testing.assert_array_equal(
        sample_rows(tf.random.Generator.from_seed(3), n, 64).numpy(),
        sample_rows(tf.random.Generator.from_seed(3), n, 64).numpy())
    preferred = tf.constant([5, 99, 12345], tf.int32)
    idx = sample_rows(tf.random.Generator.from_seed(0), n, 100, preferred, 2).numpy()
    assert len(set(idx)) == 100 and len(set(idx[:2]) & {5, 99, 12345}) == 2
    # Even when the first 2m draws hold fewer than m distinct rows (m close to n).
    small = distinct_draws(tf.random.Generator.from_seed(0), 70, 64).numpy()
    assert sorted(set(small)) == sorted(small) and len(small) == 64 and small.max() < 70
    # The graph holds no tensor of size n (the top-k path holds n uniforms).
    graph = tf.function(lambda: sample_rows(gen, n, 64)).get_concrete_function().graph
    sizes = [dim for op in graph.get_operations() for t in op.outputs
             for dim in (t.shape.as_list() if t.shape.rank else []) if dim is not None]
    assert max(sizes) < n


def test_validation_loss_uses_at_most_a_fixed_number_of_hold_out_batches(monkeypatch):
    import spectralnet_tf.train as train
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet

    seen = []
    real = train.validation_batches
    monkeypatch.setattr(train, "validation_batches",
                        lambda setup: seen.append(real(setup)) or seen[-1])
    monkeypatch.setattr(train, "VALIDATION_MAX_BATCHES", 2)
    x, _ = _blobs(900)
    model = build_spectralnet(2, 3, (16,), seed=0)
    affinity = GaussianKNNAffinity(n_nbrs=5, scale_nbr=3).fit(x[:600], 64)
    train.train_spectralnet(model, affinity, train.Data(x[:600], x[600:], x[:600], x[600:]),
                            train.Config(batch_size=64, ortho_batch_size=64, epochs=1,
                                         steps_per_epoch=2))
    (batches,) = seen
    assert [len(xb) for xb, _, _ in batches] == [64, 64]


def test_the_progress_bar_names_epochs_as_its_unit(capsys):
    training = _training(epochs=3)
    run_epochs(training, lambda: 1.0, lambda: 1.0, [_schedule(training, patience=5),
                                                   ProgressBar(verbose=1)])
    out = capsys.readouterr().out
    assert "/epoch" in out and "/step" not in out, out


def _two_blobs_and_affinity(n=400, batch_size=128):
    from spectralnet_tf.affinity import GaussianKNNAffinity

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], n // 2)
    x = (rng.normal(scale=0.3, size=(n, 2)) + 3.0 * y[:, None]).astype(np.float32)
    return x, y, GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, batch_size)


def test_label_targets_hold_the_labels_and_give_the_graphs_poisson_classes():
    from spectralnet_tf.spectral import poisson_labels

    x, y, affinity = _two_blobs_and_affinity()
    labels = np.full(len(y), -1)
    labels[[0, 1, 300]] = y[[0, 1, 300]]  # three labels in two blobs
    t = label_targets(affinity, x, labels, 2, batch_size=128, seed=0)
    np.testing.assert_array_equal(t[[0, 1, 300]], np.eye(2)[y[[0, 1, 300]]])
    np.testing.assert_allclose(t.sum(axis=1), 1.0, rtol=1e-5)  # every point: a distribution
    np.testing.assert_array_equal(t.argmax(axis=1), y)  # each blob follows its label
    # Fewer points than a subsample: all of them, on the graph the minibatches sample.
    w = affinity.sampled_graph(x, 128).numpy()
    np.testing.assert_array_equal(t.argmax(axis=1), poisson_labels(w, labels, 2))
    np.testing.assert_array_equal(label_targets(affinity, x, labels, 2, batch_size=128, seed=0), t)


def test_label_targets_are_not_swayed_by_the_number_of_labels_per_class():
    # Two overlapping Gaussian blobs, one label in one and four in the other:
    # the harmonic function of the same graph gives nearly every point the
    # class with four labels; the targets (Poisson learning) follow the blobs.
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.spectral import harmonic_labels

    rng = np.random.default_rng(0)
    n = 300
    x = np.r_[rng.normal(size=(n, 5)), rng.normal(size=(n, 5)) + [3.0, 0, 0, 0, 0]]
    x = x.astype(np.float32)
    y = np.repeat([0, 1], n)
    labels = np.full(2 * n, -1)
    labels[[0, n, n + 1, n + 2, n + 3]] = [0, 1, 1, 1, 1]
    affinity = GaussianKNNAffinity().fit(x, 128)
    t = label_targets(affinity, x, labels, 2, batch_size=128, seed=0)
    w = affinity.sampled_graph(x, 128).numpy()
    assert np.mean(harmonic_labels(w, labels, 2) == y) < 0.6
    assert np.mean(t.argmax(axis=1) == y) > 0.9


def test_label_targets_cover_a_subsample_with_every_labeled_point(monkeypatch):
    import spectralnet_tf.sampling as sampling

    monkeypatch.setattr(sampling, "SUBSAMPLE_POINTS", 150)
    x, y, affinity = _two_blobs_and_affinity(batch_size=100)
    labels = np.where(np.arange(len(y)) % 10 == 0, y, -1)  # 40 labeled points
    t = label_targets(affinity, x, labels, 2, batch_size=100, seed=0)
    has = t.sum(axis=1) > 0
    assert has.sum() == 150 and has[labels >= 0].all()
    np.testing.assert_array_equal(t[has].argmax(axis=1), y[has])


def test_an_undone_first_epoch_returns_to_an_orthonormal_start():
    """After the warm start, Orthonorm's kernel is set from the start's rows.
    So an undone first epoch returns to a whole net, and the validation loss
    after it reads orthonormal outputs: the same as that net's loss computed
    here, not the fitted targets' smaller scale. The epoch is thrown off the
    start outright, not by a learning rate hoped to overshoot."""
    from spectralnet_tf import train

    x, _ = _blobs(700)
    model, affinity, start, history = _warm_fit(kicks=[0], epochs=1, x=x, units=(32, 32))
    assert history["undone"] == [1]  # the only epoch went too far and was undone
    rows, _ = start.start_
    model.layers[-1].orthogonalize(start.setup_.body(x[:600][rows]))  # the start, whole
    x_val = x[600:]
    w = affinity.kernel_matrix(tf.constant(x_val))
    expected = float(train.minibatch_loss(w, model(x_val)))
    np.testing.assert_allclose(history["val_loss"][0], expected, rtol=1e-4)
