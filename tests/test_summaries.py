"""TensorBoard: a fit with ``log_dir`` writes event files that TensorBoard's
own reader reads back, one value per epoch for every curve."""

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util.tensor_util import make_ndarray

from spectralnet_tf import Schedule, SiameseEmbedding, SpectralNet
from spectralnet_tf.datasets import blobs


def _scalars(folder):
    """tag -> [(step, value)] of the event files in ``folder``."""
    events = EventAccumulator(str(folder), size_guidance={"tensors": 0})
    events.Reload()
    return {tag: [(e.step, float(make_ndarray(e.tensor_proto))) for e in events.Tensors(tag)]
            for tag in events.Tags()["tensors"]}


def test_event_files_hold_every_curve_once_per_epoch(tmp_path):
    x, _ = blobs(400, 2, seed=0)
    siamese = SiameseEmbedding(hidden_units=(16, 4),
                               schedule=Schedule(max_epochs=3, steps_per_epoch=4, tol=0.0))
    net = SpectralNet(2, hidden_units=(16,), schedule=Schedule(max_epochs=4, steps_per_epoch=5),
                      init="random", affinity_embedding=siamese, log_dir=tmp_path,
                      random_state=0)
    net.fit(x, eigvecs=np.linalg.qr(np.random.default_rng(0).normal(size=(400, 2)))[0])
    spectral = _scalars(tmp_path / "spectralnet")
    epochs = len(net.history_["loss"])
    assert set(spectral) == {"loss", "val_loss", "lr", "epoch_seconds", "grassmann"}
    for tag, points in spectral.items():
        assert [step for step, _ in points] == list(range(1, epochs + 1)), tag
        if tag != "epoch_seconds":
            np.testing.assert_allclose([v for _, v in points], net.history_[tag], rtol=1e-6)
    siam = _scalars(tmp_path / "siamese")
    assert set(siam) == {"loss", "val_loss", "lr", "epoch_seconds"}
    assert [v for _, v in siam["loss"]] == pytest.approx(net.siamese_history_["loss"], rel=1e-6)
    phases = _scalars(tmp_path / "phases")
    assert set(phases) == {f"seconds/{p}" for p in
                           ("encode", "siamese", "spectralnet", "init", "embed_and_kmeans")}
    assert phases["seconds/spectralnet"][0][1] == pytest.approx(net.history_["seconds"], rel=1e-6)


def test_log_dir_must_be_a_path():
    with pytest.raises(ValueError, match="log_dir must be None or a path, got log_dir=3"):
        SpectralNet(2, log_dir=3).fit(np.zeros((50, 2)) + np.arange(50)[:, None])
