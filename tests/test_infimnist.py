"""Infinite MNIST (``harness.infimnist``): the originals first, then
deformations that are a function of the index alone, small enough to keep
the digit's identity; and the views of its deformation law (``Deform``,
``Redraw``)."""

import json
import os

import numpy as np
import pytest

from harness import infimnist as inf
from harness.infimnist import SIDE, Deform, Redraw
from spectralnet_tf.datasets import mnist
from spectralnet_tf.streaming import is_lazy, map_batches
from spectralnet_tf.views import make_view, row_uniforms

needs_mnist = pytest.mark.skipif(
    not os.environ.get("SPECTRALNET_DATA_DIR"), reason="needs SPECTRALNET_DATA_DIR (mnist.npz)")


@pytest.fixture(scope="module")
def base():
    return mnist()


def test_bilinear_reads_pixels_at_integer_points_and_interpolates_between():
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(3, 28 * 28)).astype(np.float32)
    r, c = np.meshgrid(np.arange(28.0), np.arange(28.0), indexing="ij")
    rows, cols = np.tile(r.ravel(), (3, 1)), np.tile(c.ravel(), (3, 1))
    np.testing.assert_allclose(inf.bilinear(images, rows, cols), images, atol=1e-6)
    # One pixel down: row 0 reads row 1; the last row reads the zero border.
    shifted = inf.bilinear(images, rows + 1, cols).reshape(3, 28, 28)
    np.testing.assert_allclose(shifted[:, :-1], images.reshape(3, 28, 28)[:, 1:], atol=1e-6)
    assert not shifted[:, -1].any()
    # Halfway between two columns: their mean; far outside: zero.
    half = inf.bilinear(images, rows, cols + 0.5).reshape(3, 28, 28)
    img = images.reshape(3, 28, 28)
    np.testing.assert_allclose(half[:, :, :-1], (img[:, :, :-1] + img[:, :, 1:]) / 2, atol=1e-6)
    assert not inf.bilinear(images, rows - 40.0, cols + 100.0).any()


def test_field_basis_gives_unit_variance_everywhere():
    g = inf.field_basis()
    var = (g**2).sum(axis=1)[:, None] * (g**2).sum(axis=1)[None, :]
    np.testing.assert_allclose(var, 1.0, rtol=1e-5)


@needs_mnist
def test_originals_come_first_then_deformed_training_digits_with_their_labels(base):
    images, labels = base
    x, y = inf.load(n=inf.N_ORIGINAL + 2 * inf.N_BASE + 5)
    assert is_lazy(x) and x.shape == (len(y), 784) and x.dtype == np.float32
    np.testing.assert_array_equal(x[69990:70000], images[69990:70000])
    np.testing.assert_array_equal(y[:inf.N_ORIGINAL], labels)
    cycled = np.arange(inf.N_ORIGINAL, len(y))
    np.testing.assert_array_equal(y[cycled], labels[(cycled - inf.N_ORIGINAL) % inf.N_BASE])
    deformed = x[70000:70200]
    assert deformed.min() >= 0 and deformed.max() <= 1
    assert (np.abs(deformed - images[:200]).sum(axis=1) > 1).all()  # every one moved


@needs_mnist
def test_a_digit_is_the_same_whichever_slice_or_source_reads_it(base):
    images, labels = base
    n = inf.N_ORIGINAL + 3 * inf.BLOCK
    whole = inf.InfiMNIST(images, labels, n)
    at = inf.N_ORIGINAL + inf.BLOCK - 50  # spans a block boundary
    reference = whole[at:at + 100]
    np.testing.assert_array_equal(whole[at + 30:at + 60], reference[30:60])
    fresh = inf.InfiMNIST(images, labels, 100, start=at)
    np.testing.assert_array_equal(fresh[:], reference)
    np.testing.assert_array_equal(fresh.labels, whole.labels[at:at + 100])
    # Chunked streaming (encoding reads 4,096-row chunks) gives the same rows.
    np.testing.assert_array_equal(map_batches(None, inf.InfiMNIST(images, labels, 100, at), 7),
                                  reference)


def test_warp_composes_translation_affine_map_and_field_as_documented():
    rng = np.random.default_rng(1)
    images = rng.uniform(size=(2, 784)).astype(np.float32)
    img = images.reshape(2, 28, 28)
    eye, zero = np.tile(np.eye(2), (2, 1, 1)), np.zeros((2, 2, 784))
    # t = (1, -2): pixel (r, c) reads (r + 1, c - 2).
    moved = inf.warp(images, (eye, np.tile([1.0, -2.0], (2, 1)), zero)).reshape(2, 28, 28)
    np.testing.assert_allclose(moved[:, :-1, 2:], img[:, 1:, :-2], atol=1e-6)
    # A 90 degree rotation about the centre maps (r, c) to (c, 27 - r) exactly.
    rot = np.tile([[0.0, 1.0], [-1.0, 0.0]], (2, 1, 1))
    turned = inf.warp(images, (rot, np.zeros((2, 2)), zero)).reshape(2, 28, 28)
    r, c = np.meshgrid(np.arange(28), np.arange(28), indexing="ij")
    np.testing.assert_allclose(turned, img[:, c, 27 - r], atol=1e-5)
    # A constant field is a translation.
    field = np.broadcast_to(np.array([1.0, -2.0])[None, :, None], (2, 2, 784))
    np.testing.assert_allclose(inf.warp(images, (eye, np.zeros((2, 2)), field)),
                               moved.reshape(2, 784), atol=1e-6)


def test_drawn_deformations_lie_in_the_documented_ranges():
    index = inf.N_ORIGINAL + np.arange(0, 3 * inf.BLOCK, 7)
    a, t, field = inf.deformation(index, inf.field_basis())
    length = np.linalg.norm(t, axis=1)
    assert length.min() >= inf.TRANSLATION_PX[0] - 1e-5
    assert length.max() <= inf.TRANSLATION_PX[1] + 1e-5
    # det A = scale_r * scale_c (a rotation times an upper triangular map).
    det = np.linalg.det(a)
    assert (1 - inf.MAX_SCALE) ** 2 - 1e-5 <= det.min() and det.max() <= (1 + inf.MAX_SCALE) ** 2 + 1e-5
    std = np.sqrt(np.mean(field**2))
    assert abs(std - inf.ELASTIC_STD) < 0.05 * inf.ELASTIC_STD
    # A function of the index alone: the same draws in other company.
    some = index[1::3]
    np.testing.assert_array_equal(inf.deformation(some, inf.field_basis())[2], field[1::3])


def test_redeform_warps_each_image_by_a_borrowed_deformation_new_each_epoch():
    rng = np.random.default_rng(4)
    images = rng.uniform(size=(inf.BLOCK + 3, 784)).astype(np.float32)
    first = inf.REDEFORM_START + (2 * 2**16 + 5) * inf.REDEFORM_STRIDE  # seed 2, epoch 5
    index = first + np.array([0, 1, inf.BLOCK, inf.BLOCK + 2])
    rows = index - first
    expected = inf.warp(images[rows], inf.deformation(index, inf.field_basis()))
    got = inf.redeform(images, 5, seed=2)  # two chunks
    np.testing.assert_array_equal(got[rows], expected)
    np.testing.assert_array_equal(inf.redeform(images[:7], 5, seed=2), got[:7])
    for other in (inf.redeform(images[:7], 6, seed=2), inf.redeform(images[:7], 5, seed=3)):
        assert (np.abs(other - got[:7]).sum(axis=1) > 1).all()
    # Borrowed from indices far beyond any data set's, each chunk from one stream.
    assert inf.REDEFORM_START > 2**40 and (inf.REDEFORM_START - inf.N_ORIGINAL) % inf.BLOCK == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"epoch": -1}, r"epoch must be an integer in \[0, 65535\], got epoch=-1\."),
    ({"epoch": 2**16}, r"got epoch=65536\."),
    ({"epoch": 1.5}, r"got epoch=1\.5\."),
    ({"epoch": True}, r"got epoch=True\."),
    ({"epoch": 0, "seed": -1}, r"seed must be an integer in \[0, 65535\], got seed=-1\."),
    ({"epoch": 0, "images": np.zeros((2, 28, 28))}, r"images must have shape \(m, 784\), "
                                                    r"got images.shape=\(2, 28, 28\)\."),
])
def test_redeform_names_a_bad_argument(kwargs, message):
    kwargs = {"images": np.zeros((2, 784), np.float32), **kwargs}
    with pytest.raises(ValueError, match=message):
        inf.redeform(**kwargs)


def test_redeform_takes_numpy_integers():
    images = np.random.default_rng(0).uniform(size=(3, 784)).astype(np.float32)
    np.testing.assert_array_equal(inf.redeform(images, np.int32(3), seed=np.int64(1)),
                                  inf.redeform(images, 3, seed=1))


@needs_mnist
def test_sources_name_the_mnist_digit_each_row_shows(base):
    """``sources`` (fit's ``groups`` for --deformation-pairs): the index itself
    below 70,000, then the training digit deformed, cycling over the 60,000."""
    images, labels = base
    rows = inf.InfiMNIST(images, labels, 6, start=69998)
    np.testing.assert_array_equal(rows.sources, [69998, 69999, 0, 1, 2, 3])
    later = inf.InfiMNIST(images, labels, 2, start=70000 + 60000 - 1)
    np.testing.assert_array_equal(later.sources, [59999, 0])
    np.testing.assert_array_equal(rows.labels, labels[rows.sources])


@needs_mnist
def test_deformation_pairs_need_deformed_digits(tmp_path, capsys):
    """Up to 70,000 digits every source is one digit: the flag is refused in
    one line, before a run directory is made."""
    from harness import reproduce as cli

    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        cli.run_command(["--dset", "infimnist", "--n", "1000", "--batch-size", "64",
                         "--deformation-pairs", "--out", str(out), "--quiet"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "run.py: error: --deformation-pairs pairs deformed digits, which come after "
        "MNIST's 70,000; got --n 1000."]
    assert not out.exists()


@needs_mnist
def test_bad_arguments_are_named(base):
    images, labels = base
    with pytest.raises(ValueError, match="n must be an integer >= 0, got n=-1"):
        inf.InfiMNIST(images, labels, -1)
    with pytest.raises(ValueError, match="start must be an integer >= 0, got start=1.5"):
        inf.InfiMNIST(images, labels, 5, start=1.5)
    with pytest.raises(ValueError, match=r"images must have shape \(70000, 784\)"):
        inf.InfiMNIST(images[:10], labels, 5)
    with pytest.raises(TypeError, match="slices only"):
        inf.InfiMNIST(images, labels, 5)[3]


@needs_mnist
@pytest.mark.slow
@pytest.mark.research
def test_run_py_trains_on_infimnist_codes_and_scores_fresh_digits(tmp_path):
    """``run.py --dset infimnist --n N --split``: codes of N digits (MNIST, then
    deformed ones) and 10,000 fresh digits (the indices after N) through the
    trained net. Kept cheap: a Siamese net of 3 epochs of 4 steps, random start,
    a few steps."""
    from harness import reproduce as cli

    results = cli.run_command([
        "--dset", "infimnist", "--n", "71000", "--split", "--out", str(tmp_path / "run"),
        "--siamese-epochs", "3", "--siamese-steps-per-epoch", "4", "--init", "random",
        "--hidden", "64", "--epochs", "2", "--steps-per-epoch", "5", "--no-plots", "--quiet"])
    assert results["n"] == 71000 and results["n_test"] == cli.INFIMNIST_FRESH
    # The Siamese net's history is kept beside SpectralNet's, one value per epoch.
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [len(saved["siamese_history"][key]) for key in ("loss", "val_loss", "lr")] == [3, 3, 3]
    assert saved["siamese_history"]["val_loss"] == results["siamese_history"]["val_loss"]
    assert results["autoencoder"]["file"] == cli.AE_INFIMNIST
    assert results["source_pairs"] is True  # the graph joins digits of one source
    # Codes of the pretrained autoencoder: well above chance even after 10 steps.
    assert results["acc"] > 0.5 and results["test_acc"] > 0.5
    # The ACC is of each source's digits given one cluster (fit's group_labels_);
    # each digit alone beside it, and on each part under the one matching.
    assert results["acc_alone"] > 0.5 and 0 < results["nmi_alone"] < 1
    # ACC on MNIST's own 70,000 and the 1,000 deformed digits, under one matching:
    # their weighted mean is the ACC of all.
    for key in ("acc", "acc_alone", "kmeans_acc"):
        parts = results["by_part"]["original"][key], results["by_part"]["deformed"][key]
        assert (70000 * parts[0] + 1000 * parts[1]) / 71000 == pytest.approx(results[key], abs=1e-12)


@needs_mnist
def test_autoencoders_are_scored_on_infimnist_digits(load_script, tmp_path):
    """``selection.py codes --split infimnist``: the same digits for every file,
    drawn from the pool, deformations included; one file given twice ties."""
    ae = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "pretrained_ae", "ae_mnist_shift2_seed1_weights.h5")  # AE_ALL
    record = load_script("selection").main(
        ["codes", "--split", "infimnist", "--pool", "90000", "--n", "400", "--no-record", ae, ae])
    assert record["split"] == "infimnist" and record["pool"] == 90000 and record["n"] == 400
    first, second = record["trials"]
    assert first["eigengap"] == second["eigengap"] and 0 < first["eigengap"] < 1
    assert first["acc"] == second["acc"] and first["kmeans_acc"] > 0.5


def test_a_sparse_selection_generates_only_the_rows_selected(monkeypatch):
    from spectralnet_tf.streaming import Rows, block_rows

    rng = np.random.default_rng(0)
    images = rng.uniform(size=(inf.N_ORIGINAL, inf.SIDE ** 2)).astype(np.float32)
    # Rows on both sides of the last original digit, spread over 1,200 rows.
    x = inf.InfiMNIST(images, np.arange(inf.N_ORIGINAL) % 10, 200_000,
                      start=inf.N_ORIGINAL - 600)
    rows = np.sort(rng.choice(1200, 40, replace=False))
    made = []
    digits = x.digits
    monkeypatch.setattr(x, "digits", lambda index: made.append(len(index)) or digits(index))
    got = Rows(x, rows)[:]
    assert made == [40]  # not the span of about 1,200 rows
    np.testing.assert_array_equal(got, block_rows(x, rows))  # the rows the span holds
    np.testing.assert_array_equal(got[-1], x[rows[-1]:rows[-1] + 1][0])
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 200000\)"):
        x.take_rows(np.array([3, 200_000]))


def test_a_selection_of_a_selection_stays_sparse_and_unsorted_rows_are_refused(monkeypatch):
    from spectralnet_tf.streaming import Rows

    images = np.random.default_rng(1).uniform(
        size=(inf.N_ORIGINAL, inf.SIDE ** 2)).astype(np.float32)
    x = inf.InfiMNIST(images, np.arange(inf.N_ORIGINAL) % 10, 200_000,
                      start=inf.N_ORIGINAL)
    outer = np.arange(0, 200_000, 1000)  # every 1,000th digit, then every 7th of those
    made = []
    digits = x.digits
    monkeypatch.setattr(x, "digits", lambda index: made.append(len(index)) or digits(index))
    got = Rows(Rows(x, outer), np.arange(0, len(outer), 7))[2:5]
    assert made == [3]
    np.testing.assert_array_equal(got, digits(inf.N_ORIGINAL + outer[[14, 21, 28]]))
    with pytest.raises(ValueError, match="strictly increasing"):
        x.take_rows(np.array([5, 3]))


class _Stop(Exception):
    pass


@needs_mnist
@pytest.mark.parametrize("flags, groups, siamese_pairs", [
    ([], True, False), (["--no-source-pairs"], False, False),
    (["--deformation-pairs"], True, True)])
def test_infimnist_runs_give_fit_each_digits_source_as_groups(monkeypatch, tmp_path, flags,
                                                               groups, siamese_pairs):
    """By default SpectralNet's graph joins digits of one source and the Siamese
    net takes its source pairs from the views alone; --deformation-pairs adds
    the Siamese group pairs, --no-source-pairs drops the groups."""
    from harness import reproduce as cli
    from spectralnet_tf import SpectralNet

    seen = {}

    def fit(self, x, y=None, *, partial_labels=None, groups=None, **kwargs):
        seen.update(groups=groups, n=len(x), pairs=self.affinity_embedding.group_pairs)
        raise _Stop

    monkeypatch.setattr(SpectralNet, "fit", fit)
    with pytest.raises(_Stop):
        cli.run_command(["--dset", "infimnist", "--n", "71000", "--out", str(tmp_path / "run"),
                         "--no-plots", "--quiet", *flags])
    assert seen["pairs"] is siamese_pairs
    if groups:
        sources = seen["groups"]
        assert len(sources) == seen["n"] == 71000
        np.testing.assert_array_equal(sources[[0, 69999, 70000, 70999]], [0, 69999, 0, 999])
    else:
        assert seen["groups"] is None


@needs_mnist
def test_deformation_pairs_and_no_source_pairs_are_refused_together(tmp_path, capsys):
    from harness import reproduce as cli

    with pytest.raises(SystemExit) as exit_:
        cli.run_command(["--dset", "infimnist", "--n", "71000", "--deformation-pairs",
                         "--no-source-pairs", "--out", str(tmp_path / "run"), "--quiet"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "run.py: error: --deformation-pairs gives SpectralNet's graph the pairs of one source "
        "too; it cannot go with --no-source-pairs."]


# ------------------------------------------------ views of the deformation law
from test_views import digits  # noqa: E402  (the same fake digits the package's views use)


def test_deform_is_reproducible_from_index_and_seed_alone():
    x = digits(40)
    index = np.arange(1000, 1040)
    whole = Deform()(x, index, 7)
    assert not np.array_equal(whole, x)  # it transforms
    # Each row alone, and the rows in another order, give the same rows.
    order = np.random.default_rng(1).permutation(40)
    np.testing.assert_array_equal(Deform()(x[order], index[order], 7), whole[order])
    np.testing.assert_array_equal(Deform()(x[3:4], index[3:4], 7), whole[3:4])
    # Another seed, or another index, another deformation of the same row.
    for other in (Deform()(x, index, 8), Deform()(x, index + 1, 7)):
        assert np.mean([not np.array_equal(a, b) for a, b in zip(other, whole)]) > 0.8


def test_deform_follows_the_infinite_mnist_law_of_the_source_digit():
    images = digits(3)
    out = Deform()(images, np.array([0, 1, 2]), 5)
    assert out.shape == images.shape and out.dtype == np.float32
    assert 0 <= out.min() and out.max() <= 1
    # A deformation moves mass a little: the view stays closer to its source
    # than to the other digits.
    dist = ((out[:, None] - images[None]) ** 2).sum(-1)
    assert (dist.argmin(axis=1) == np.arange(3)).all()


def test_deforms_normals_are_standard_normal_and_its_uniforms_kept():
    u = row_uniforms(np.arange(100000), 2, 10)
    z = inf._normal_then_uniform(u, 8)
    assert z.dtype == np.float32 and np.isfinite(z).all()
    normal = z[:, :8]
    assert abs(normal.mean()) < 0.005 and abs(normal.var() - 1) < 0.01
    assert abs(np.mean(normal ** 4) - 3) < 0.05  # a normal's fourth moment
    assert abs(np.corrcoef(normal[:, 0], normal[:, 4])[0, 1]) < 0.01  # cos and sin of a pair
    np.testing.assert_array_equal(z[:, 8:], u[:, 8:].astype(np.float32))


def test_deform_draws_no_block_stream_and_keeps_the_data_sets_law(monkeypatch):
    x = digits(4000)
    same_law = inf.deform_at(x, inf.N_ORIGINAL + np.arange(4000))

    def refused(*args):
        raise AssertionError("a view drew a block of the data set's streams")

    # Each row's draws are its own: none costs a block's, whatever its index.
    monkeypatch.setattr(inf, "_block_draws", refused)
    out = Deform()(x, np.arange(4000) * 7919, 3)
    np.testing.assert_array_equal(Deform()(x[5:6], np.array([5 * 7919]), 3), out[5:6])
    # The same law as the data set's deformed digits: as far from the source
    # on average (squared pixel distance), and the ink kept.
    moved, law = ((out - x) ** 2).sum(1).mean(), ((same_law - x) ** 2).sum(1).mean()
    assert abs(moved / law - 1) < 0.03
    assert abs(out.sum(1).mean() / same_law.sum(1).mean() - 1) < 0.01


def test_deform_names_rows_that_are_not_28x28_digits():
    with pytest.raises(ValueError, match="Deform warps 28x28 digits: rows of 784 pixels, got 64"):
        Deform()(np.zeros((2, 64)), np.arange(2), 0)


@needs_mnist
def test_redraw_views_are_the_law_drawn_afresh_on_each_rows_source():
    x, _ = inf.load(n=72_000)
    index = np.arange(70_000, 72_000)  # deformations of training digits 0..1,999
    rows, sources = x[70_000:], x.images[inf.source_index(index)]
    views = Redraw()(rows, index, 3)
    # Each view is made from its row's source, by Deform's draws for (row, seed):
    # reproducible from (index, seed) alone, whatever rows come with it.
    np.testing.assert_array_equal(views, Deform()(sources, index, 3))
    np.testing.assert_array_equal(Redraw()(rows[7:8], index[7:8], 3), views[7:8])
    # So a view is as far from its source as the data set's own deformations
    # are (squared pixel distance), where Deform's view of a deformed digit,
    # deformed twice, lies farther.
    def dist(a):
        return ((a - sources) ** 2).sum(1).mean()
    assert abs(dist(views) / dist(rows) - 1) < 0.05
    assert dist(Deform()(rows, index, 3)) > 1.1 * dist(rows)
    # MNIST's own digits are their own sources: there the two views agree.
    np.testing.assert_array_equal(Redraw()(x[:5], np.arange(5), 3),
                                  Deform()(x[:5], np.arange(5), 3))
    with pytest.raises(ValueError, match="Redraw needs infinite MNIST's rows numbered from its "
                                         "index 0: .* the row with index=0 is not"):
        Redraw()(x[1:3], np.arange(2), 3)  # digits 1 and 2 numbered as 0 and 1
    # A Redraw object given as views is copied, so the digits it reads stay off the parameter.
    given = Redraw()
    made = make_view(given)
    made(x[:2], np.arange(2), 0)
    assert made is not given and made.get_params() == given.get_params()
    assert getattr(given, "_sources", None) is None
    with pytest.raises(ValueError, match="Redraw warps 28x28 digits: rows of 784 pixels, got 64"):
        Redraw()(np.zeros((2, 64)), np.arange(2), 0)
