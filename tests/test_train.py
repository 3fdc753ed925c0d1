import keras
import pytest
import numpy as np
import tensorflow as tf

from spectralnet_tf.train import PlateauSchedule, label_targets, sample_rows


def test_plateau_schedule_divides_by_ten_after_patience_and_stops_at_min_lr():
    opt = keras.optimizers.RMSprop(1e-3)
    sched = PlateauSchedule(opt, patience=2, min_lr=1e-5)
    assert sched.update(1.0) is False  # improvement
    assert sched.update(1.0) is False  # 1 epoch without improvement
    assert sched.update(2.0) is False  # 2 -> decay
    np.testing.assert_allclose(sched.lr, 1e-4, rtol=1e-6)
    assert sched.update(0.5) is False  # improvement resets the wait
    sched.update(0.5)
    assert sched.update(0.5) is True   # decays to 1e-5 = min_lr: stop
    np.testing.assert_allclose(sched.lr, 1e-5, rtol=1e-6)


def test_warm_up_ramps_the_rate_over_the_first_steps_then_leaves_it_alone():
    from spectralnet_tf.train import warm_up

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


def test_spectral_warm_start_fits_the_body_to_the_subsample_eigenvectors():
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.metrics import grassmann
    from spectralnet_tf.networks import build_spectralnet
    from spectralnet_tf.spectral import laplacian_eigenvectors
    from spectralnet_tf.train import spectral_warm_start, start_distance, warm_start_eigenvectors

    x, _ = _blobs()
    aff = GaussianKNNAffinity(n_nbrs=10, scale_nbr=3).fit(x, batch_size=256)
    model, body = build_spectralnet(2, 3, (64, 64), seed=0, output_activation="tanh")
    before = body.predict(x, verbose=0)
    start = warm_start_eigenvectors(aff, x, 3, batch_size=256, seed=0)
    got = spectral_warm_start(body, x, start, batch_size=256, seed=0)
    after = body.predict(x, verbose=0)
    # The same subsample and graph, independently: all 1200 points (fewer
    # than WARM_START_POINTS), ranks scaled by 1200/256.
    w = aff.for_full_data(len(x), 256)(x).numpy().astype(np.float64)
    vecs = laplacian_eigenvectors(w, 3)
    assert grassmann(before, vecs) > 0.3  # random weights: far from the eigenvectors
    assert got["init_grassmann"] == pytest.approx(grassmann(after, vecs), abs=1e-4)
    # On a saddle one output direction is orthogonal to the eigenvectors
    # (distance >= 1); the start must be a tenth of that at most.
    assert got["init_grassmann"] < 0.1
    assert start_distance(body, x, start) == pytest.approx(got["init_grassmann"], abs=1e-6)


def test_spectral_init_starts_near_the_minimum_and_is_recorded():
    from spectralnet_tf import SpectralNet, acc

    x, y = _blobs()
    # A local scale: with the global one (the median 3rd-neighbour distance)
    # a few outliers hang on by affinities of ~1e-9, and the graph's smallest
    # eigenvectors pick them out instead of the blobs.
    from spectralnet_tf import GaussianKNNAffinity

    kw = dict(hidden_units=(64, 64), affinity=GaussianKNNAffinity(scale="local"), max_epochs=1,
              steps_per_epoch=1, random_state=0)
    warm = SpectralNet(3, init="spectral", **kw).fit(x)
    cold = SpectralNet(3, **kw).fit(x)
    assert warm.history_["init_grassmann"] < 0.1
    assert "init_grassmann" not in cold.history_
    # One iteration of Algorithm 1: the warm start already clusters.
    assert acc(y, warm.labels_) >= 0.99
    assert warm.history_["val_loss"][0] < 0.5 * cold.history_["val_loss"][0]


def _guarded(distances, min_lr=1e-4):
    """near_the_start around a stand-in epoch that moves every weight by 1,
    its distances read in turn from ``distances`` (the first: before the
    first epoch)."""
    from spectralnet_tf.train import PlateauSchedule, near_the_start

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.RMSprop(1e-2)
    schedule = PlateauSchedule(optimizer, min_lr=min_lr)

    def run_epoch():
        for v in model.variables:
            v.assign_add(tf.ones_like(v))
        return 0.5

    reads = iter(distances)
    epoch, last = near_the_start(run_epoch, lambda: next(reads), model.variables, schedule)
    return model, schedule, epoch, last


def test_an_epoch_that_leaves_the_start_is_undone_and_the_rate_cut():
    """Beyond START_KEPT_MAX and farther than before, an epoch is undone (the
    model's variables as they were) and the rate cut by the schedule's
    factor, its patience count restarted; where the cut would reach min_lr,
    or within START_KEPT_MAX, the epoch stands."""
    from spectralnet_tf.train import START_KEPT_MAX

    far = 2 * START_KEPT_MAX
    model, schedule, epoch, last = _guarded([0.1, far, far, START_KEPT_MAX])
    bias = model.variables[1].numpy()
    schedule.wait = 3
    assert epoch() == 0.5
    assert last == {"start_distance": far, "undone": 1}
    np.testing.assert_array_equal(model.variables[1].numpy(), bias)
    assert schedule.lr == pytest.approx(1e-3) and schedule.wait == 0
    epoch()  # a cut would reach min_lr (1e-4): the epoch stands, stopping is the schedule's
    assert last == {"start_distance": far, "undone": 0} and schedule.lr == pytest.approx(1e-3)
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 1)
    epoch()  # back within: stands, rate unchanged
    assert last == {"start_distance": START_KEPT_MAX, "undone": 0}
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 2)


def test_a_start_that_did_not_take_holds_the_net_only_against_moving_farther():
    """From a warm start already beyond START_KEPT_MAX, epochs that come
    closer stand; one that goes farther than the net was is undone."""
    from spectralnet_tf.train import START_KEPT_MAX

    model, schedule, epoch, last = _guarded([1.5, 1.2, 1.3, 0.9], min_lr=1e-8)
    bias = model.variables[1].numpy()
    epoch()  # 1.5 -> 1.2: closer, stands
    assert last == {"start_distance": 1.2, "undone": 0} and schedule.lr == pytest.approx(1e-2)
    epoch()  # 1.2 -> 1.3: farther, undone
    assert last["undone"] == 1 and schedule.lr == pytest.approx(1e-3)
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 1)
    epoch()  # 1.2 -> 0.9: closer, stands
    assert last == {"start_distance": 0.9, "undone": 0} and 0.9 > START_KEPT_MAX
    np.testing.assert_array_equal(model.variables[1].numpy(), bias + 2)


def test_a_fit_whose_rate_leaves_the_warm_start_cuts_it_and_ends_near_the_start():
    """RMSprop at a rate that suits a random start carries the net off the
    warm start on these blobs; the fit undoes those epochs, cuts the rate,
    and ends near the start, as a fit at the cut rate does."""
    from spectralnet_tf import GaussianKNNAffinity, SpectralNet
    from spectralnet_tf.train import START_KEPT_MAX

    x, y = _blobs()
    kw = dict(hidden_units=(64, 64), affinity=GaussianKNNAffinity(scale="local"), max_epochs=4,
              steps_per_epoch=20, random_state=0, init="spectral")
    fast = SpectralNet(3, learning_rate=1.0, **kw).fit(x).history_
    undone, far = fast["undone"], np.asarray(fast["start_distance"])
    assert undone[0] == 1 and far[0] > 2 * START_KEPT_MAX
    # Which epochs leave the start depends on the rounding (CPU kind, thread
    # count: one or two cuts were seen); that each one that left it was
    # undone at the cost of a tenth of the rate, and only those, does not.
    assert undone == [int(d > START_KEPT_MAX) for d in far]
    cuts = np.cumsum(undone)
    assert fast["lr"] == pytest.approx(list(0.1 ** cuts))  # the rate after each epoch
    assert undone[-1] == 0 and far[-1] <= START_KEPT_MAX
    slow = SpectralNet(3, learning_rate=0.01, **kw).fit(x).history_
    assert slow["undone"] == [0, 0, 0, 0] and slow["lr"] == pytest.approx([0.01] * 4)


def test_large_n_draws_are_distinct_uniform_and_cost_no_n_sized_work():
    """Above TOPK_SAMPLING_MAX_N a draw is O(m): distinct rows in range,
    seeded, uniform (each of 8 equal ranges gets its share), with the
    preferred rows first."""
    from spectralnet_tf.train import TOPK_SAMPLING_MAX_N, distinct_draws

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
                        lambda x, *a: seen.append(len(x)) or real(x, *a))
    monkeypatch.setattr(train, "VALIDATION_MAX_BATCHES", 2)
    x, _ = _blobs(900)
    model, body = build_spectralnet(2, 3, (16,), seed=0)
    affinity = GaussianKNNAffinity(n_nbrs=5, scale_nbr=3).fit(x[:600], 64)
    train.train_spectralnet(model, body, affinity, x[:600], x[600:], batch_size=64,
                            ortho_batch_size=64, epochs=1, steps_per_epoch=2, verbose=0)
    assert seen == [2 * 64]


def test_the_progress_bar_names_epochs_as_its_unit(capsys):
    from spectralnet_tf.train import run_epochs

    schedule = PlateauSchedule(keras.optimizers.RMSprop(1e-3), patience=5)
    run_epochs(lambda: 1.0, lambda: 1.0, schedule, epochs=3, verbose=1)
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
    from spectralnet_tf.train import subsample_graph

    x, y, affinity = _two_blobs_and_affinity()
    labels = np.full(len(y), -1)
    labels[[0, 1, 300]] = y[[0, 1, 300]]  # three labels in two blobs
    t = label_targets(affinity, x, labels, 2, batch_size=128, seed=0)
    np.testing.assert_array_equal(t[[0, 1, 300]], np.eye(2)[y[[0, 1, 300]]])
    np.testing.assert_allclose(t.sum(axis=1), 1.0, rtol=1e-5)  # every point: a distribution
    np.testing.assert_array_equal(t.argmax(axis=1), y)  # each blob follows its label
    # Fewer points than a subsample: all of them, on the graph the minibatches sample.
    w = subsample_graph(affinity, x, 128).numpy()
    np.testing.assert_array_equal(t.argmax(axis=1), poisson_labels(w, labels, 2))
    np.testing.assert_array_equal(label_targets(affinity, x, labels, 2, batch_size=128, seed=0), t)


def test_label_targets_are_not_swayed_by_the_number_of_labels_per_class():
    # Two overlapping Gaussian blobs, one label in one and four in the other:
    # the harmonic function of the same graph gives nearly every point the
    # class with four labels; the targets (Poisson learning) follow the blobs.
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.spectral import harmonic_labels
    from spectralnet_tf.train import subsample_graph

    rng = np.random.default_rng(0)
    n = 300
    x = np.r_[rng.normal(size=(n, 5)), rng.normal(size=(n, 5)) + [3.0, 0, 0, 0, 0]]
    x = x.astype(np.float32)
    y = np.repeat([0, 1], n)
    labels = np.full(2 * n, -1)
    labels[[0, n, n + 1, n + 2, n + 3]] = [0, 1, 1, 1, 1]
    affinity = GaussianKNNAffinity().fit(x, 128)
    t = label_targets(affinity, x, labels, 2, batch_size=128, seed=0)
    w = subsample_graph(affinity, x, 128).numpy()
    assert np.mean(harmonic_labels(w, labels, 2) == y) < 0.6
    assert np.mean(t.argmax(axis=1) == y) > 0.9


def test_label_targets_cover_a_subsample_with_every_labeled_point(monkeypatch):
    import spectralnet_tf.train as train

    monkeypatch.setattr(train, "WARM_START_POINTS", 150)
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
    here, not the fitted targets' smaller scale."""
    import functools

    from sklearn.datasets import make_moons

    from spectralnet_tf import train
    from spectralnet_tf.affinity import GaussianKNNAffinity
    from spectralnet_tf.networks import build_spectralnet

    x, _ = make_moons(700, noise=0.05, random_state=0)
    x = x.astype(np.float32)
    x_train, x_val = x[:600], x[600:]
    affinity = GaussianKNNAffinity(scale="local").fit(x_train, batch_size=200)
    model, body = build_spectralnet(2, 2, (32, 32), seed=0, output_activation="linear")
    history = train.train_spectralnet(model, body, affinity, x_train, x_val, batch_size=200,
                                      ortho_batch_size=200, learning_rate=1.0, epochs=1,
                                      steps_per_epoch=5, init="spectral", verbose=0)
    assert history["undone"] == [1]  # the only epoch went too far and was undone
    rows, _ = train.warm_start_eigenvectors(affinity, x_train, 2, batch_size=200)
    orthonorm = model.layers[-1]
    orthonorm.orthogonalize(body(x_train[rows]))  # the start as a whole net
    batches = train.validation_batches(x_val, x_val, np.full(len(x_val), -1), 200, affinity, 2)
    expected = np.mean([float(train.minibatch_loss(w, model(xb))) for xb, w, _ in batches])
    np.testing.assert_allclose(history["val_loss"][0], expected, rtol=1e-4)
