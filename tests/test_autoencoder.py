import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import tensorflow as tf

from spectralnet_tf.autoencoder import (build_autoencoder, load_ae_weights, load_encoder,
                                        read_ae_weights, save_ae_weights, train_autoencoder,
                                        translate_images)
from spectralnet_tf.checkpoint import Checkpointer
from spectralnet_tf.losses import nt_xent

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRETRAIN = os.path.join(ROOT, "scripts", "pretrain_ae.py")
SIZES = [(784, 500), (500, 500), (500, 2000), (2000, 10),
         (10, 2000), (2000, 500), (500, 500), (500, 784)]
REUTERS_SIZES = [(2000, 500), (500, 500), (500, 2000), (2000, 10),
                 (10, 2000), (2000, 500), (500, 500), (500, 2000)]


def _write_vade_style(path, weights, with_input_layer=True):
    """A file in the Keras 1 layout of VaDE's ae_mnist_weights.h5."""
    with h5py.File(path, "w") as f:
        names = (["input_1"] if with_input_layer else []) + [f"dense_{i + 1}" for i in range(len(weights))]
        f.attrs["layer_names"] = np.array([n.encode() for n in names])
        if with_input_layer:
            f.create_group("input_1").attrs["weight_names"] = np.array([], dtype="S1")
        for i, (kernel, bias) in enumerate(weights):
            g = f.create_group(f"dense_{i + 1}")
            g.attrs["weight_names"] = np.array([f"dense_{i + 1}_W".encode(), f"dense_{i + 1}_b".encode()])
            g.create_dataset(f"dense_{i + 1}_W", data=kernel)
            g.create_dataset(f"dense_{i + 1}_b", data=bias)


def _random_weights(seed=0, sizes=SIZES):
    rng = np.random.default_rng(seed)
    return [(rng.normal(scale=0.05, size=s).astype(np.float32),
             rng.normal(scale=0.05, size=s[1]).astype(np.float32)) for s in sizes]


def test_legacy_layout_reproduces_the_expected_encoding(tmp_path):
    weights = _random_weights()
    path = tmp_path / "ae_mnist_weights.h5"
    _write_vade_style(path, weights)
    encoder = load_encoder(str(path))
    x = np.random.default_rng(1).uniform(size=(5, 784)).astype(np.float32)
    h = x
    for i, (kernel, bias) in enumerate(weights[:4]):
        h = h @ kernel + bias
        if i < 3:
            h = np.maximum(h, 0)  # ReLU; the code layer is linear
    np.testing.assert_allclose(encoder.predict(x, verbose=0), h, rtol=1e-4, atol=1e-5)


def test_our_files_round_trip_through_the_same_loader(tmp_path):
    ae, _ = build_autoencoder(seed=3)
    path = tmp_path / "ours.h5"
    save_ae_weights(ae, str(path))
    with h5py.File(path, "r") as f:
        assert [n.decode() for n in f.attrs["layer_names"]][:2] == ["encoder1", "encoder2"]
    other, _ = build_autoencoder(seed=4)
    load_ae_weights(other, str(path))
    x = np.random.default_rng(0).uniform(size=(3, 784)).astype(np.float32)
    np.testing.assert_array_equal(other.predict(x, verbose=0), ae.predict(x, verbose=0))


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.h5.*does not exist.*Keras 1 layout"):
        read_ae_weights(str(tmp_path / "nope.h5"))


def test_corrupt_file_is_named(tmp_path):
    path = tmp_path / "bad.h5"
    path.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(ValueError, match="bad.h5.*not a readable HDF5"):
        read_ae_weights(str(path))


def test_wrong_layout_is_named(tmp_path):
    path = tmp_path / "keras3.h5"
    with h5py.File(path, "w") as f:
        f.create_group("layers")
    with pytest.raises(ValueError, match="keras3.h5.*no top-level 'layer_names'"):
        read_ae_weights(str(path))


def test_wrong_shapes_are_named(tmp_path):
    weights = _random_weights()[:6]  # a smaller autoencoder
    path = tmp_path / "small.h5"
    _write_vade_style(path, weights, with_input_layer=False)
    with pytest.raises(ValueError, match="small.h5.*expected"):
        load_encoder(str(path))


def test_reuters_layout_loads_with_its_sizes_read_from_the_file(tmp_path):
    # VaDE's ae_reuters10k weights: 2000-500-500-2000-10, same Keras 1 layout.
    weights = _random_weights(1, REUTERS_SIZES)
    path = tmp_path / "ae_reuters10k.h5"
    _write_vade_style(path, weights)
    x = np.random.default_rng(2).uniform(size=(5, 2000)).astype(np.float32)
    h = x
    for kernel, bias in weights[:4]:
        h = h @ kernel + bias
        h = np.maximum(h, 0) if kernel.shape[1] != 10 else h
    encoder = load_encoder(str(path))
    assert encoder.input_shape == (None, 2000)
    np.testing.assert_allclose(encoder.predict(x, verbose=0), h, rtol=1e-4, atol=1e-5)


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


@pytest.mark.parametrize("flags, message", [
    (["--max-shift", "1"], "--max-shift moves images; --dset reuters has none."),
    (["--invariance-weight", "1"], "--invariance-weight warps images; --dset reuters has none."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--seed", "-1"],
     "--invariance-weight needs --seed in [0, 65535], got -1."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--seed", "70000"],
     "--invariance-weight needs --seed in [0, 65535], got 70000."),
    (["--dset", "infimnist", "--invariance-weight", "-0.5"],
     "--invariance-weight must be a finite number >= 0, got -0.5."),
    (["--dset", "infimnist", "--invariance-weight", "nan"],
     "--invariance-weight must be a finite number >= 0, got nan."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--temperature", "0"],
     "--temperature must be a finite number > 0, got 0.0."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--temperature", "inf"],
     "--temperature must be a finite number > 0, got inf."),
    (["--dset", "infimnist", "--temperature", "0.1"],
     "--temperature 0.1 is NT-Xent's; it needs --invariance-weight."),
    (["--dset", "infimnist", "--init-weights", "/nonexistent/ae.h5"],
     "--init-weights /nonexistent/ae.h5: no such file."),
])
def test_pretrain_script_names_bad_image_augmentation(load_script, capsys, flags,
                                                                    message):
    with pytest.raises(SystemExit):
        load_script("pretrain_ae").parse_args(
            flags if "--dset" in flags else ["--dset", "reuters", *flags])
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_pretrain_script_killed_then_resumed_writes_the_uninterrupted_weights(tmp_path):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    args = [sys.executable, PRETRAIN, "--limit", "512", "--epochs", "8", "--quiet"]

    def files(name):
        return ["--out", str(tmp_path / f"{name}.h5"), "--checkpoint-dir", str(tmp_path / name)]

    subprocess.run([*args, *files("ref")], check=True, env=env, capture_output=True, timeout=300)
    proc = subprocess.Popen([*args, *files("run")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pointer = tmp_path / "run" / "latest"
    deadline = time.time() + 240
    while time.time() < deadline and not (pointer.exists() and pointer.read_text() >= "ckpt-000002"):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert pointer.exists() and not (tmp_path / "run.h5").exists()
    again = subprocess.run([*args, *files("run")], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode != 0 and "--resume" in again.stderr  # no silent restart
    subprocess.run([*args, *files("run"), "--resume"], check=True, env=env,
                   capture_output=True, timeout=300)
    for (k1, b1), (k2, b2) in zip(read_ae_weights(str(tmp_path / "ref.h5")),
                                  read_ae_weights(str(tmp_path / "run.h5"))):
        np.testing.assert_allclose(k1, k2, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b1, b2, rtol=1e-5, atol=1e-6)
    ref = json.loads((tmp_path / "ref.json").read_text())
    got = json.loads((tmp_path / "run.json").read_text())
    assert got["final_loss"] == pytest.approx(ref["final_loss"], rel=1e-5)
    assert got["epochs"] == ref["epochs"] == 8
    assert not (tmp_path / "run").exists()  # checkpoints removed once the weights exist


@pytest.mark.skipif(not os.environ.get("SPECTRALNET_DATA_DIR"),
                    reason="needs mnist.npz in $SPECTRALNET_DATA_DIR")
def test_pretrain_script_trains_on_infinite_mnist_rows(load_script, capsys):
    from spectralnet_tf.datasets import infimnist

    script = load_script("pretrain_ae")
    data_dir = os.environ["SPECTRALNET_DATA_DIR"]
    x, y, split, path = script.load_data(script.parse_args(
        ["--dset", "infimnist", "--n", "70030", "--data-dir", data_dir]))
    source, labels = infimnist(data_dir=data_dir, n=70030)
    assert x.shape == (70030, 784) and x.dtype == np.float32
    np.testing.assert_array_equal(x[-30:], source[70000:70030])  # deformations, as generated
    np.testing.assert_array_equal(y, labels)
    assert split == "first 70,030 (70,000 originals, then deformations)"
    assert path.endswith("mnist.npz")
    for argv, message in ((["--n", "5"], "--n 5: only --dset infimnist takes a size."),
                          (["--dset", "infimnist", "--split", "train"],
                           "--split train is for MNIST; --dset infimnist has no test split."),
                          (["--dset", "infimnist", "--n", "0"], "--n must be >= 1, got 0.")):
        with pytest.raises(SystemExit):
            script.parse_args(argv)
        assert message in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("SPECTRALNET_DATA_DIR"),
                    reason="needs mnist.npz in $SPECTRALNET_DATA_DIR")
def test_pretrain_script_starts_from_init_weights_and_records_them(load_script, tmp_path):
    from spectralnet_tf.resources import sha256

    init = tmp_path / "init.h5"
    weights = _random_weights(7, SIZES)
    _write_vade_style(init, weights)
    before = sha256(str(init))
    script = load_script("pretrain_ae")
    common = ["--dset", "infimnist", "--limit", "300", "--epochs", "1", "--quiet",
              "--invariance-weight", "0.5", "--temperature", "0.2", "--init-weights", str(init)]
    # Learning rate 0: Adam does not move, so the weights written are the ones read.
    provenance = script.main([*common, "--lr", "0", "--out", str(tmp_path / "same.h5"),
                              "--checkpoint-dir", str(tmp_path / "ck")])
    for (kernel, bias), (k0, b0) in zip(read_ae_weights(str(tmp_path / "same.h5")), weights):
        np.testing.assert_array_equal(kernel, k0)
        np.testing.assert_array_equal(bias, b0)
    assert provenance["init_weights"] == {"file": "init.h5", "sha256": before}
    assert provenance["loss"] == "mse + 0.5 nt_xent"
    assert (provenance["invariance_weight"], provenance["temperature"]) == (0.5, 0.2)
    # The file read is never the file written.
    with pytest.raises(SystemExit, match=r"pretrain_ae\.py: --init-weights .*init\.h5 is the "
                                         r"file this run writes; pass --out another path\."):
        script.main([*common, "--out", str(init), "--checkpoint-dir", str(tmp_path / "ck2")])
    assert sha256(str(init)) == before
    wrong = tmp_path / "wrong.h5"
    _write_vade_style(wrong, _random_weights(8, REUTERS_SIZES))
    with pytest.raises(SystemExit, match=r"pretrain_ae\.py: --init-weights .*wrong\.h5: "
                                         r"Autoencoder weight file .* holds layers with shapes"):
        script.main([*common[:-1], str(wrong), "--out", str(tmp_path / "w.h5"),
                     "--checkpoint-dir", str(tmp_path / "ck3")])
