import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from spectralnet_tf.autoencoder import (build_autoencoder, load_ae_weights, load_encoder,
                                        read_ae_weights, save_ae_weights)

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


@pytest.mark.parametrize("flags, message", [
    (["--max-shift", "1"], "--max-shift moves images; --dset reuters has none."),
    (["--invariance-weight", "1"], "--invariance-weight warps images; --dset reuters has none."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--seed", "-1"],
     "--invariance-weight needs --seed in [0, 65535], got -1."),
    (["--dset", "infimnist", "--invariance-weight", "1", "--seed", "70000"],
     "--invariance-weight needs --seed in [0, 65535], got 70000."),
    (["--dset", "infimnist", "--invariance-weight", "-0.5"],
     "--invariance-weight must be a finite number >= 0, got -0.5."),
    (["--dset", "infimnist", "--invariance-weight", "half"],
     "argument --invariance-weight: invalid invariance_weight value: 'half'"),
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
@pytest.mark.research
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
    from harness import infimnist

    script = load_script("pretrain_ae")
    data_dir = os.environ["SPECTRALNET_DATA_DIR"]
    x, y, split, path = script.load_data(script.parse_args(
        ["--dset", "infimnist", "--n", "70030", "--data-dir", data_dir]))
    source, labels = infimnist.load(data_dir=data_dir, n=70030)
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
@pytest.mark.slow
def test_pretrain_script_starts_from_init_weights_and_records_them(load_script, tmp_path):
    from spectralnet_tf.resources import sha256

    init = tmp_path / "init.h5"
    weights = _random_weights(7, SIZES)
    _write_vade_style(init, weights)
    before = sha256(str(init))
    script = load_script("pretrain_ae")
    common = ["--dset", "infimnist", "--limit", "300", "--epochs", "1", "--quiet",
              "--invariance-weight", "equal", "--temperature", "0.2", "--init-weights", str(init)]
    # Learning rate 0: Adam does not move, so the weights written are the ones read.
    provenance = script.main([*common, "--lr", "0", "--out", str(tmp_path / "same.h5"),
                              "--checkpoint-dir", str(tmp_path / "ck")])
    for (kernel, bias), (k0, b0) in zip(read_ae_weights(str(tmp_path / "same.h5")), weights):
        np.testing.assert_array_equal(kernel, k0)
        np.testing.assert_array_equal(bias, b0)
    assert provenance["init_weights"] == {"file": "init.h5", "sha256": before}
    # The rule's weight, from the two terms measured at the file's weights.
    balance, weight = provenance["invariance_balance"], provenance["invariance_weight"]
    assert weight == pytest.approx(balance["mse"] / balance["nt_xent"]) and weight > 0
    assert provenance["loss"] == f"mse + {weight} nt_xent"
    assert provenance["temperature"] == 0.2
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
