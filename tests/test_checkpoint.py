import os
import re

import numpy as np
import pytest

from spectralnet_tf import initializers
from spectralnet_tf.affinity import GaussianKNNAffinity
from spectralnet_tf.callbacks import Checkpoint, IterationCount, PlateauSchedule
from spectralnet_tf.checkpoint import Checkpointer
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.networks import build_spectralnet
from spectralnet_tf.train import Config, Data, train_spectralnet


def _train(epochs, checkpointer=None, init="random"):
    """Algorithm 1 as the estimator runs it: the initializer's callbacks, the
    schedule and, given a checkpointer, the checkpoint callback."""
    x, _, _ = load_dataset("moons", n=500)
    aff = GaussianKNNAffinity(n_nbrs=5, scale_nbr=2).fit(x, 200)
    model = build_spectralnet(2, 2, (16, 16), seed=0)
    start = initializers.INITIALIZERS[init]()
    schedule = PlateauSchedule(patience=2)
    callbacks = [*start.callbacks(schedule), IterationCount(), schedule]
    if checkpointer is not None:
        callbacks.append(Checkpoint(checkpointer, {"schedule": schedule}))
    config = Config(batch_size=200, ortho_batch_size=200, epochs=epochs, steps_per_epoch=5,
                    seed=1)
    hist = train_spectralnet(model, aff, Data(x[:450], x[450:], x[:450], x[450:]), config,
                             initializer=start, callbacks=callbacks,
                             resuming=checkpointer is not None
                             and checkpointer.latest() is not None)
    return model, hist


@pytest.mark.parametrize("init", ["random", "spectral"])
def test_resumed_training_equals_uninterrupted_training(tmp_path, monkeypatch, init):
    full_model, full_hist = _train(6, init=init)
    ckpt = Checkpointer(str(tmp_path / "spectral"))
    _train(3, ckpt, init=init)  # "killed" after epoch 3: only its checkpoint survives
    assert os.path.basename(ckpt.latest()) == "ckpt-000003"

    def not_again(*args, **kwargs):
        raise AssertionError("the warm start ran again on resume")

    monkeypatch.setattr(initializers.SpectralInit, "fit", not_again)
    resumed_model, resumed_hist = _train(6, ckpt, init=init)
    if init == "spectral":  # recorded before the first epoch, restored with the history
        assert resumed_hist["init_grassmann"] == full_hist["init_grassmann"]
        # The resumed epochs measure against the same subsample eigenvectors,
        # computed again, not fitted to again.
        assert len(resumed_hist["start_distance"]) == 6
        np.testing.assert_allclose(resumed_hist["start_distance"], full_hist["start_distance"],
                                   rtol=1e-4, atol=1e-6)
    for a, b in zip(full_model.get_weights(), resumed_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(resumed_hist["val_loss"], full_hist["val_loss"], rtol=1e-4)
    np.testing.assert_allclose(resumed_hist["lr"], full_hist["lr"])


def test_only_the_latest_checkpoint_is_kept_and_a_finished_run_is_not_retrained(tmp_path):
    ckpt = Checkpointer(str(tmp_path / "spectral"))
    model, hist = _train(3, ckpt)
    names = sorted(n for n in os.listdir(tmp_path / "spectral") if not n.startswith("."))
    assert names == ["ckpt-000003", "latest"]
    again_model, again_hist = _train(3, ckpt)  # finished: restored, not retrained
    assert again_hist["loss"] == hist["loss"]


def test_resume_with_other_data_or_parameters_is_refused_saying_what_differs(tmp_path):
    """The checkpoint directory records the fit it belongs to; resuming it
    with other rows, another shape or other parameters is refused in one
    line, and with the same ones it goes on."""
    from spectralnet_tf import Schedule, SpectralNet

    x = np.random.default_rng(0).normal(size=(300, 3)).astype(np.float32)
    params = dict(hidden_units=(8,), schedule=Schedule(max_epochs=2, steps_per_epoch=2),
                  random_state=0, checkpoint_dir=str(tmp_path))
    first = SpectralNet(2, **params).fit(x)
    other = x.copy()
    other[150, 1] += 1.0
    cases = [(SpectralNet(2, **params), other, "X holds other rows"),
             (SpectralNet(2, **params), x[:290], "X shape: [300, 3] then, [290, 3] now"),
             (SpectralNet(2, **params).set_params(schedule__learning_rate=0.01), x,
              "schedule__learning_rate=0.001 then, schedule__learning_rate=0.01 now"),
             (SpectralNet(3, **params), x, "n_clusters=2 then, n_clusters=3 now")]
    for net, data, message in cases:
        with pytest.raises(ValueError, match="are of another fit: .*" + re.escape(message)):
            net.fit(data, resume=True)
    labels = np.full(300, -1)
    labels[:2] = [0, 1]
    with pytest.raises(ValueError, match="partial_labels: None then"):
        SpectralNet(2, **params).fit(x, partial_labels=labels, resume=True)
    again = SpectralNet(2, **{**params, "verbose": 0}).fit(x, resume=True)
    np.testing.assert_array_equal(again.labels_, first.labels_)


def test_a_resume_may_raise_the_epoch_cap_and_a_first_resume_records_the_fit(tmp_path):
    from spectralnet_tf import Schedule, SpectralNet

    x = np.random.default_rng(0).normal(size=(300, 3)).astype(np.float32)
    params = dict(hidden_units=(8,), random_state=np.int64(0),
                  checkpoint_dir=str(tmp_path / "a"))
    SpectralNet(2, schedule=Schedule(max_epochs=2, steps_per_epoch=2),
                **params).fit(x, resume=True)  # nothing to resume: a new fit
    assert (tmp_path / "a" / "fingerprint.json").exists()
    longer = SpectralNet(2, schedule=Schedule(max_epochs=3, steps_per_epoch=2),
                         **{**params, "random_state": 0}).fit(x, resume=True)
    assert len(longer.history_["loss"]) == 3
    with pytest.raises(ValueError, match="X holds other rows"):
        SpectralNet(2, schedule=Schedule(max_epochs=3, steps_per_epoch=2),
                    **params).fit(x + 1, resume=True)
