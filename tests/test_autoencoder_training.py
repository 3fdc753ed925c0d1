"""Autoencoder training: the loss falls, resume is exact, the augmentations
and the invariance term do what they say, bad arguments are named. (The
weight files and the pretraining script: test_autoencoder.py.)"""

import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf.autoencoder import (build_autoencoder, equal_invariance_weight,
                                        train_autoencoder, translate_images)
from spectralnet_tf.checkpoint import Checkpointer
from spectralnet_tf.losses import nt_xent

def _small_x():
    rng = np.random.default_rng(0)  # points near a 3-d manifold in [0, 1]^20
    return (0.5 + 0.4 * np.tanh(rng.normal(size=(300, 3)) @ rng.normal(size=(3, 20)))).astype(np.float32)


def _small_ae_training(epochs, checkpointer=None, max_shift=0.0, deform=None,
                       invariance_weight=0.0):
    ae, _ = build_autoencoder(20, (32, 32, 64), 3, seed=0)
    hist = train_autoencoder(ae, _small_x(), epochs=epochs, batch_size=32, learning_rate=3e-3,
                             seed=3, max_shift=max_shift,
                             image_shape=(4, 5) if max_shift else None, deform=deform,
                             invariance_weight=invariance_weight,
                             verbose=0, checkpointer=checkpointer)
    return ae, hist


def _noise_by_epoch(x, epoch):
    """A deformation for tests: noise that depends on the epoch."""
    return x + 0.05 * np.random.default_rng(epoch).normal(size=x.shape).astype(np.float32)


@pytest.mark.slow  # trains end to end
@pytest.mark.parametrize("corruption", [{}, {"max_shift": 0.5},
                                        {"deform": _noise_by_epoch, "invariance_weight": 0.5}])
def test_autoencoder_training_lowers_the_loss_and_resumes_exactly(tmp_path, corruption):
    full, full_hist = _small_ae_training(6, **corruption)
    # The validation loss is on clean inputs: the reconstruction error itself.
    assert full_hist["val_loss"][-1] < 0.5 * full_hist["val_loss"][0]
    ckpt = Checkpointer(str(tmp_path / "ae"))
    _small_ae_training(3, ckpt, **corruption)  # "killed" after epoch 3
    resumed, resumed_hist = _small_ae_training(6, ckpt, **corruption)
    for a, b in zip(full.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(resumed_hist["loss"], full_hist["loss"], rtol=1e-5)


def test_translate_images_moves_each_image_by_its_own_offset_within_the_bound():
    images = np.zeros((64, 28, 28), np.float32)
    images[:, 12:16, 12:16] = 1.0  # a 4 x 4 square in the middle: stays inside when moved
    moved = translate_images(tf.constant(images.reshape(64, -1)), 2.0,
                             tf.random.Generator.from_seed(0), (28, 28)).numpy().reshape(64, 28, 28)
    np.testing.assert_allclose(moved.sum(axis=(1, 2)), 16.0, rtol=1e-5)  # nothing lost
    grid = np.arange(28)

    def centre(imgs):
        return np.stack([(imgs.sum(2) * grid).sum(1), (imgs.sum(1) * grid).sum(1)], 1) / imgs.sum((1, 2))[:, None]

    offset = centre(moved) - centre(images)
    assert np.abs(offset).max() <= 2.0 + 1e-4
    assert np.abs(offset).max() > 1.0 and len(np.unique(offset.round(3), axis=0)) == 64


def test_deform_draws_each_epochs_views_once_before_it():
    calls = []

    def noise(x, epoch):
        calls.append(epoch)
        return _noise_by_epoch(x, epoch)

    _small_ae_training(3, deform=noise, invariance_weight=0.5)
    assert calls == [0, 1, 2]


@pytest.mark.slow  # trains end to end
def test_invariance_training_with_shifts_resumes_exactly(tmp_path):
    # The two views move by offsets of their own: two draws per batch to replay.
    kwargs = {"deform": _noise_by_epoch, "invariance_weight": 0.5, "max_shift": 0.5}
    full, full_hist = _small_ae_training(4, **kwargs)
    ckpt = Checkpointer(str(tmp_path / "ae"))
    _small_ae_training(2, ckpt, **kwargs)
    resumed, resumed_hist = _small_ae_training(4, ckpt, **kwargs)
    for a, b in zip(full.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(resumed_hist["loss"], full_hist["loss"], rtol=1e-5)
    unshifted, _ = _small_ae_training(4, deform=_noise_by_epoch, invariance_weight=0.5)
    assert not np.allclose(full.get_weights()[0], unshifted.get_weights()[0])


def test_invariance_loss_is_the_reconstruction_plus_the_weighted_nt_xent_of_the_views():
    # Learning rate 0 and one batch of all rows: the epoch's loss is that of the
    # initial net, whatever the shuffle (NT-Xent does not see the row order).
    x = _small_x()
    ae, encoder = build_autoencoder(20, (32, 32, 64), 3, seed=0)
    hist = train_autoencoder(ae, x, epochs=1, batch_size=len(x), learning_rate=0.0, seed=3,
                             deform=_noise_by_epoch, invariance_weight=0.7, temperature=0.3,
                             verbose=0)
    views = _noise_by_epoch(x, 0)
    mse = np.mean((ae.predict(x, verbose=0) - x) ** 2)
    contrast = nt_xent(tf.constant(encoder.predict(x, verbose=0)),
                       tf.constant(encoder.predict(views, verbose=0)), 0.3).numpy()
    np.testing.assert_allclose(hist["loss"][0], mse + 0.7 * contrast, rtol=1e-5)


def test_invariance_training_ties_each_code_to_its_deformed_views():
    x = _small_x()

    def contrast(encoder, epoch):  # views the training never drew
        codes = encoder.predict(x, verbose=0), encoder.predict(_noise_by_epoch(x, epoch), verbose=0)
        return float(nt_xent(*map(tf.constant, codes)).numpy())

    trained = {}
    for weight in (0.0, 1.0):  # 0: plain reconstruction, no views
        ae, encoder = build_autoencoder(20, (32, 32, 64), 3, seed=0)
        hist = train_autoencoder(ae, x, epochs=6, batch_size=32, learning_rate=3e-3, seed=3,
                                 deform=_noise_by_epoch if weight else None,
                                 invariance_weight=weight, verbose=0)
        trained[weight] = contrast(encoder, 100), hist["val_loss"]
    assert trained[1.0][0] < trained[0.0][0] - 0.5
    assert trained[1.0][1][-1] < 0.5 * trained[1.0][1][0]  # and it still reconstructs


@pytest.mark.parametrize("kwargs, message", [
    ({"invariance_weight": -1.0}, r"invariance_weight must be >= 0, got invariance_weight=-1\.0\."),
    ({"invariance_weight": 1.0}, r"invariance_weight=1\.0 compares each code with that of a "
                                 r"deformed view; it needs deform, got deform=None\."),
    ({"temperature": 0.0}, r"temperature must be > 0, got temperature=0\.0\."),
    ({"deform": _noise_by_epoch}, r"deform gives the second views of the invariance term; it "
                                  r"needs invariance_weight > 0, got invariance_weight=0\.0\."),
])
def test_bad_invariance_arguments_are_named(kwargs, message):
    ae, _ = build_autoencoder(20, (8, 8, 8), 2, seed=0)
    with pytest.raises(ValueError, match=message):
        train_autoencoder(ae, np.zeros((10, 20), np.float32), epochs=1, verbose=0, **kwargs)


@pytest.mark.parametrize("deform, message", [
    ("warp", r"deform must be None or a function \(x, epoch\) -> deformed x, got deform='warp'\."),
    (lambda x, epoch: x[:, :10], r"deform must return an array of x's shape \(10, 20\), got "
                                 r"shape \(10, 10\) for epoch=0\."),
])
def test_bad_deform_is_named(deform, message):
    ae, _ = build_autoencoder(20, (8, 8, 8), 2, seed=0)
    with pytest.raises(ValueError, match=message):
        train_autoencoder(ae, np.zeros((10, 20), np.float32), epochs=1, verbose=0, deform=deform,
                          invariance_weight=1.0)


def test_translate_images_moves_stacked_images_by_one_offset():
    rng = np.random.default_rng(5)
    images = tf.constant(rng.uniform(size=(16, 784)).astype(np.float32))
    alone = translate_images(images, 2.0, tf.random.Generator.from_seed(1), (28, 28))
    both = translate_images(tf.stack([images, 1 - images], -1), 2.0,
                            tf.random.Generator.from_seed(1), (28, 28)).numpy()
    np.testing.assert_allclose(both[..., 0], alone.numpy(), atol=1e-6)
    moved_ones = translate_images(tf.ones_like(images), 2.0, tf.random.Generator.from_seed(1),
                                  (28, 28)).numpy()
    np.testing.assert_allclose(both[..., 1], moved_ones - alone.numpy(), atol=1e-5)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_shift": -1.0}, r"max_shift must be >= 0, got max_shift=-1.0"),
    ({"max_shift": 1.0}, r"max_shift needs the image_shape of x's rows \(20 values each\), got image_shape=None"),
    ({"max_shift": 1.0, "image_shape": (4, 4)}, r"got image_shape=\(4, 4\)"),
])
def test_bad_translation_arguments_are_named(kwargs, message):
    ae, _ = build_autoencoder(20, (8, 8, 8), 2, seed=0)
    with pytest.raises(ValueError, match=message):
        train_autoencoder(ae, np.zeros((10, 20), np.float32), epochs=1, verbose=0, **kwargs)


def test_equal_invariance_weight_is_the_ratio_of_the_two_terms_measured_directly():
    x = _small_x()
    ae, encoder = build_autoencoder(20, (32, 32, 64), 3, seed=0)
    # One batch holds every row, so each term is the whole data's, in any order.
    weight, mse, contrast = equal_invariance_weight(ae, x, _noise_by_epoch, batch_size=300,
                                                    batches=2, temperature=0.5)
    expected_mse = float(tf.reduce_mean(tf.square(ae(x) - x)))
    expected_nt = float(nt_xent(encoder(x), encoder(_noise_by_epoch(x, 0)), 0.5))
    np.testing.assert_allclose([mse, contrast], [expected_mse, expected_nt], rtol=1e-5)
    assert weight == pytest.approx(expected_mse / expected_nt, rel=1e-5)
    # A sharper temperature separates the same codes more: another weight.
    assert equal_invariance_weight(ae, x, _noise_by_epoch, batch_size=300, batches=1,
                                   temperature=0.1)[0] != pytest.approx(weight)


@pytest.mark.parametrize("kwargs, message", [
    ({"batches": 0}, "batches must be an integer >= 1, got batches=0."),
    ({"batch_size": 2.5}, "batch_size must be an integer >= 1, got batch_size=2.5."),
    ({"max_shift": 1.0}, "max_shift needs the image_shape of x's rows (20 values each), "
                         "got image_shape=None."),
    ({"deform": lambda x, epoch: x[:, :10]},
     "deform must return an array of x's shape (300, 20), got shape (300, 10) for epoch=0."),
])
def test_equal_invariance_weight_names_bad_arguments(kwargs, message):
    ae, _ = build_autoencoder(20, (32, 32, 64), 3, seed=0)
    kwargs = {"deform": _noise_by_epoch, **kwargs}
    with pytest.raises(ValueError) as err:
        equal_invariance_weight(ae, _small_x(), **kwargs)
    assert str(err.value) == message
