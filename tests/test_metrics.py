import numpy as np
import pytest

from spectralnet_tf.metrics import acc, grassmann, label_permutation, matched, nmi


def test_acc_is_invariant_under_label_permutation():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 5, 500)
    pred = np.where(rng.uniform(size=500) < 0.8, true, rng.integers(0, 5, 500))
    perm = rng.permutation(5)
    assert acc(true, perm[pred]) == acc(true, pred)
    assert acc(perm[true], pred) == acc(true, pred)


def test_acc_uses_the_best_one_to_one_matching():
    # Cluster 0 -> label 1 (3 hits), cluster 1 -> label 0 (2 hits); 5/6.
    assert acc([1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 0]) == pytest.approx(5 / 6)


def test_nmi_normalizes_by_the_larger_entropy():
    true = np.array([0, 0, 1, 1])
    pred = np.array([0, 0, 1, 2])
    # I = H(true) = ln 2 (pred refines true); H(pred) = 1.5 ln 2.
    assert nmi(true, pred) == pytest.approx(1 / 1.5)


def test_grassmann_ignores_basis_and_counts_orthogonal_directions():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(100, 3))
    assert grassmann(a, a @ rng.normal(size=(3, 3))) == pytest.approx(0, abs=1e-10)
    q, _ = np.linalg.qr(rng.normal(size=(100, 6)))
    assert grassmann(q[:, :3], q[:, 3:]) == pytest.approx(3.0)
    # One shared direction and two orthogonal ones: distance 2.
    assert grassmann(q[:, :3], q[:, [0, 3, 4]]) == pytest.approx(2.0)


def test_mismatched_shapes_are_reported():
    with pytest.raises(ValueError, match="same shape"):
        acc([0, 1], [0, 1, 1])


def test_matched_renames_clusters_so_that_acc_can_be_read_on_a_subset():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 4, size=500)
    pred = np.where(rng.uniform(size=500) < 0.8, (true + 1) % 4, rng.integers(0, 4, size=500))
    assert np.mean(matched(true, pred) == true) == pytest.approx(acc(true, pred))
    # A part read under the matching of all points, not its own: the last two
    # points are swapped against the rest.
    t, p = np.array([0, 0, 1, 1, 0, 1]), np.array([0, 0, 1, 1, 1, 0])
    assert matched(t, p).tolist() == p.tolist()
    assert np.mean(matched(t, p)[4:] == t[4:]) == 0.0 and acc(t[4:], p[4:]) == 1.0
    # More clusters than labels: the unmatched cluster counts as wrong, also
    # where -1 is a label.
    assert matched([0, 0, 1, 1], [0, 0, 1, 2]).tolist() == [0, 0, 1, -1]
    t = np.array([-1, -1, 0, 0, -1])
    p = np.array([0, 0, 1, 1, 2])
    assert np.mean(matched(t, p) == t) == acc(t, p) == 0.8


def test_label_permutation_renames_clusters_to_the_labels_they_agree_with_most():
    rng = np.random.default_rng(0)
    true = rng.integers(0, 4, size=300)
    shuffle = rng.permutation(4)
    pred = np.where(rng.uniform(size=300) < 0.8, shuffle[true], rng.integers(0, 4, size=300))
    perm = label_permutation(true, pred, 4)
    assert sorted(perm.tolist()) == [0, 1, 2, 3]
    assert np.mean(perm[pred] == true) == pytest.approx(acc(true, pred))
    np.testing.assert_array_equal(perm[shuffle], np.arange(4))
    # A few labels of two classes among three clusters: the cluster that
    # holds no labeled point takes the label left over.
    perm = label_permutation([2, 2, 0], [1, 1, 0], 3)
    assert perm[1] == 2 and perm[0] == 0 and perm[2] == 1


def test_acc_refuses_empty_and_non_1d_labels():
    with pytest.raises(ValueError, match=r"non-empty 1-d arrays of the same shape, got \(0,\)"):
        acc([], [])
    with pytest.raises(ValueError, match=r"got \(2, 1\) and \(2, 1\)"):
        acc([[0], [1]], [[0], [1]])
