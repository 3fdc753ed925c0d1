"""The estimator's parts as objects: the affinity and the Siamese embedding are
scikit-learn estimators in the ``get_params`` sense, reached from SpectralNet
with nested keys; fit never changes them; the "auto" defaults follow a stated
rule from n and the input width."""

import inspect

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from spectralnet_tf import (FullGaussianAffinity, GaussianKNNAffinity, Schedule,
                            SiameseEmbedding, SpectralNet)
from spectralnet_tf.estimator import auto_hidden_units
from spectralnet_tf.schedule import auto_max_epochs


def _x(n=300, d=2, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


FAST = dict(hidden_units=(8,), schedule=Schedule(max_epochs=1, steps_per_epoch=2), random_state=0)


def _values(estimator):
    """``get_params(deep=True)`` without the part objects themselves (their
    parameters are listed under nested keys), so that two estimators with
    equal parts compare equal."""
    return {key: value for key, value in estimator.get_params().items()
            if not isinstance(value, Schedule)}


def test_init_has_at_most_20_parameters_and_only_stores_them():
    params = inspect.signature(SpectralNet.__init__).parameters
    assert len(params) - 1 <= 20  # self
    assert len(inspect.signature(SiameseEmbedding.__init__).parameters) - 1 <= 12
    aff = GaussianKNNAffinity(n_nbrs=-1)
    net = SpectralNet(affinity=aff, affinity_embedding="bogus")
    assert net.affinity is aff and net.affinity_embedding == "bogus"


def test_get_params_reaches_the_parts_and_clone_copies_them():
    aff = GaussianKNNAffinity(n_nbrs=7, scale_nbr=4, scale="local")
    emb = SiameseEmbedding(hidden_units=(32, 4), schedule=Schedule(max_epochs=9, tol=0.0))
    net = SpectralNet(3, affinity=aff, affinity_embedding=emb)
    deep = net.get_params(deep=True)
    assert deep["affinity__n_nbrs"] == 7 and deep["affinity__scale"] == "local"
    assert deep["affinity_embedding__schedule__max_epochs"] == 9
    assert deep["affinity_embedding__hidden_units"] == (32, 4)
    twin = clone(net)
    assert twin.affinity is not aff and twin.affinity.get_params() == aff.get_params()
    assert twin.affinity_embedding is not emb
    assert twin.affinity_embedding.schedule is not emb.schedule
    assert type(twin.affinity_embedding.schedule) is Schedule
    assert _values(twin.affinity_embedding) == _values(emb)


def test_nested_set_params_copies_the_part_and_leaves_the_given_object_alone():
    aff = GaussianKNNAffinity(n_nbrs=7)
    net = SpectralNet(affinity=aff)
    assert net.set_params(affinity__n_nbrs=5) is net
    assert net.affinity.n_nbrs == 5 and aff.n_nbrs == 7
    assert net.get_params()["affinity__n_nbrs"] == 5
    # Flat and nested keys at once: the flat one first.
    net.set_params(affinity=FullGaussianAffinity(), affinity__scale="local", batch_size=64)
    assert isinstance(net.affinity, FullGaussianAffinity) and net.affinity.scale == "local"
    assert net.batch_size == 64


def test_a_shared_schedule_is_copied_on_a_nested_key_not_changed():
    shared = Schedule(max_epochs=30, tol=0.0)
    net = SpectralNet(schedule=shared, affinity_embedding=SiameseEmbedding(schedule=shared))
    net.set_params(schedule__patience=3, affinity_embedding__schedule__max_epochs=7)
    assert (shared.patience, shared.max_epochs) == (10, 30)
    assert (net.schedule.patience, net.schedule.max_epochs) == (3, 30)
    assert net.affinity_embedding.schedule.max_epochs == 7
    # None stands for the owner's own default, which a nested key starts from.
    siamese = SiameseEmbedding().set_params(schedule__patience=4)
    assert (siamese.schedule.max_epochs, siamese.schedule.tol, siamese.schedule.patience) == (
        100, 0.0, 4)
    assert SpectralNet().set_params(schedule__patience=4).schedule.max_epochs == "auto"
    # SpectralNet's own: the stage-9 stop, kept by a nested key and by the plan.
    net = SpectralNet().set_params(schedule__max_epochs=7)
    assert (net.schedule.patience, net.schedule.tol, net.schedule.max_epochs) == (5, 1e-2, 7)
    assert SpectralNet().plan(100, 2).schedule.get_params() == {
        **Schedule().get_params(), "patience": 5, "tol": 1e-2}


def test_an_initializer_object_is_a_part_copied_on_a_nested_key():
    from spectralnet_tf.initializers import SpectralInit

    start = SpectralInit(steps=60)
    net = SpectralNet(init=start).set_params(init__max_distance=0.4)
    assert (start.steps, start.max_distance) == (60, 0.5)
    assert (net.init.steps, net.init.max_distance) == (60, 0.4)
    assert SpectralNet().set_params(init__steps=40).init.get_params()["steps"] == 40
    with pytest.raises(ValueError, match=r"^init must be one of \('random', 'spectral'\), a "
                                         r"SpectralInit or a RandomInit, got init='warm'\.$"):
        SpectralNet(init="warm").plan(100, 2)


def test_the_warm_start_checks_its_parameters_and_steps_on_its_own_minibatch():
    from spectralnet_tf.initializers import SpectralInit

    with pytest.raises(ValueError, match=r"^init=SpectralInit\(batch_size=0\): batch_size must "):
        SpectralNet(init=SpectralInit(batch_size=0)).plan(100, 2)
    with pytest.raises(ValueError, match=r"^init=SpectralInit\(steps=0\): steps must be "):
        SpectralNet(init=SpectralInit(steps=0)).plan(100, 2)
    x = _x()

    def start(**params):
        net = SpectralNet(2, init=SpectralInit(steps=20, **params), **FAST).fit(x)
        return net.history_["init_grassmann"]

    batch = SpectralNet(2, **FAST).plan(*x.shape).batch_size
    assert start(batch_size=None) == start(batch_size=batch)  # the training minibatch's size
    assert start() != start(batch_size=None)  # the default: 128 rows a step


def test_the_schedule_resolves_its_budget_and_makes_its_stops():
    assert Schedule().budget(61) == (61, auto_max_epochs(61))
    assert Schedule(max_epochs=7, steps_per_epoch=5).budget(61) == (5, 7)
    stops = Schedule(patience=4, min_lr=1e-5, tol=0.01).callbacks()
    assert (stops["schedule"].patience, stops["schedule"].min_lr) == (4, 1e-5)
    assert (stops["convergence"].patience, stops["convergence"].tol) == (4, 0.01)
    with pytest.raises(ValueError, match=r"^schedule=Schedule\(patience=0\): patience must be "
                                         r"an integer >= 1, got patience=0\.$"):
        SpectralNet(schedule=Schedule(patience=0)).plan(100, 2)


def test_nested_keys_on_a_name_use_the_object_it_names():
    net = SpectralNet(affinity_embedding="siamese").set_params(
        affinity__n_nbrs=5, affinity_embedding__schedule__max_epochs=3)
    assert type(net.affinity) is GaussianKNNAffinity
    assert net.affinity.get_params() == GaussianKNNAffinity(n_nbrs=5).get_params()
    assert type(net.affinity_embedding) is SiameseEmbedding
    assert type(net.affinity_embedding.schedule) is Schedule
    assert _values(net.affinity_embedding) == _values(
        SiameseEmbedding(schedule=Schedule(max_epochs=3, tol=0.0)))
    full = SpectralNet(affinity="full").set_params(affinity__scale_nbr=4)
    assert type(full.affinity) is FullGaussianAffinity and full.affinity.scale_nbr == 4


def test_nested_keys_without_an_object_are_named_in_the_error():
    with pytest.raises(ValueError, match=r"affinity_embedding__schedule__max_epochs: nested "
                                         r"parameters need affinity_embedding to be an object "
                                         r".*got affinity_embedding=None"):
        SpectralNet().set_params(affinity_embedding__schedule__max_epochs=3)
    with pytest.raises(ValueError, match=r"Invalid parameter 'n_nbrs' for estimator "
                                         r"FullGaussianAffinity"):
        SpectralNet(affinity="full").set_params(affinity__n_nbrs=3)


def test_fit_honours_nested_parameters_and_never_fits_the_given_objects():
    aff = GaussianKNNAffinity(n_nbrs=8, scale_nbr=2)
    emb = SiameseEmbedding(hidden_units=(8, 4),
                           schedule=Schedule(max_epochs=1, steps_per_epoch=2, tol=0.0))
    net = SpectralNet(affinity=aff, affinity_embedding=emb, **FAST)
    net.set_params(affinity__n_nbrs=5, affinity_embedding__n_nbrs=3)
    net.fit(_x())
    assert (net.affinity_.n_nbrs, net.affinity_.scale_nbr) == (5, 2)
    assert net.affinity_ is not net.affinity and net.affinity_.embedding is net.siamese_
    assert net.affinity_embedding_.n_nbrs == 3 and net.affinity_embedding_.model_ is net.siamese_
    assert len(net.siamese_history_["loss"]) == 1
    for given in (aff, emb, net.affinity, net.affinity_embedding):  # never fitted, never changed
        assert not [k for k in vars(given) if k.endswith("_")]
    assert (aff.n_nbrs, emb.n_nbrs) == (8, 2)
    assert net.affinity.embedding is None


def test_a_parameter_grid_over_nested_keys_fits_each_setting():
    base = SpectralNet(affinity=GaussianKNNAffinity(scale_nbr=2), **FAST)
    seen = []
    for setting in ParameterGrid({"affinity__n_nbrs": [4, 6], "affinity__scale": ["global",
                                                                                  "local"]}):
        net = clone(base).set_params(**setting).fit(_x())  # as GridSearchCV does
        seen.append((net.affinity_.n_nbrs, net.affinity_.scale))
        assert (net.affinity_.scale_ is None) == (setting["affinity__scale"] == "local")
    assert sorted(seen) == [(4, "global"), (4, "local"), (6, "global"), (6, "local")]
    assert base.affinity.get_params() == GaussianKNNAffinity(scale_nbr=2).get_params()


def test_a_callable_embedding_is_used_as_it_is():
    double = lambda z: 2 * z  # noqa: E731
    net = SpectralNet(affinity_embedding=double, **FAST).fit(_x())
    assert net.affinity_embedding_.model_ is double and net.affinity_.embedding is double
    assert not hasattr(net, "siamese_")


# -- the defaults rule ----------------------------------------------------------

@pytest.mark.parametrize("n, d, units", [
    (1500, 2, (128, 128, 64)),       # the illustrative sets' net
    (1797, 64, (256, 256, 128)),     # digits
    (5000, 100, (256, 256, 128)),    # the wide blobs
    (70000, 784, (512, 512, 256)),   # raw MNIST
    (70000, 10, (128, 128, 64)),     # MNIST codes (the MNIST config sets the paper's net)
    (10**6, 100000, (512, 512, 256)),  # capped
    (200, 2, (64, 64, 32)),          # small n: no wider than the power of two >= n/4
    (50, 500, (32, 32, 16)),         # the narrowest
])
def test_auto_hidden_units_follow_the_input_width_and_n(n, d, units):
    assert auto_hidden_units(n, d) == units


def test_auto_max_epochs_give_a_fixed_iteration_budget_within_bounds():
    assert auto_max_epochs(50) == 50      # small data: the 50-step floor
    assert auto_max_epochs(61) == 41      # MNIST-sized epochs
    assert auto_max_epochs(1000) == 20    # large data: 20 passes at least
    assert auto_max_epochs(1) == 100      # at most 100


def test_the_plan_resolves_auto_values_and_keeps_explicit_ones():
    auto = SpectralNet(2).plan(1000, 2)
    # Epochs of the 10-step floor, as many as give the iteration budget, 100 at most.
    assert auto.hidden_units == (128, 128, 64) and auto.max_epochs == 100
    assert (auto.n_val, auto.n_train, auto.batch_size, auto.steps_per_epoch) == (100, 900, 512, 10)
    explicit = SpectralNet(2, hidden_units=(1024, 1024, 512),
                           schedule=Schedule(max_epochs=100)).plan(1000, 2)
    assert explicit.hidden_units == (1024, 1024, 512) and explicit.max_epochs == 100
    big = SpectralNet(10, batch_size=1024).plan(70000, 784)
    assert (big.steps_per_epoch, big.max_epochs, big.hidden_units) == (61, 41, (512, 512, 256))
    assert isinstance(auto.affinity, GaussianKNNAffinity) and auto.affinity_embedding is None
    assert isinstance(SpectralNet(affinity_embedding="siamese").plan(1000, 2).affinity_embedding,
                      SiameseEmbedding)


def test_a_default_fit_trains_the_planned_net_for_the_planned_epochs():
    x = _x(400)
    net = SpectralNet(2, random_state=0,
                      schedule=Schedule(max_epochs=2, tol=0.0)).fit(x)  # cut for test time
    plan = net.plan(400, 2)
    assert plan.hidden_units == (128, 128, 64)
    dense = [layer.units for layer in net.model_.layers if hasattr(layer, "units")]
    assert dense[:3] == [128, 128, 64]
    assert len(net.history_["loss"]) == 2 and net.history_["iteration"][-1] == 2 * 10
    assert net.history_["stopped_by"] == "max_epochs"


def test_the_illustrative_sets_run_on_the_package_defaults():
    from harness.configs import config_for

    for name in ("cc", "moons", "circles", "noisy_circles", "rings", "spirals", "rings3d",
                 "digits"):
        assert config_for(name) == {}, name
