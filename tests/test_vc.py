"""Paper Sec. 4: the VC-dimension construction shatters its m grid points."""

import os
import re

import numpy as np
import pytest

from harness import vc_construction as vc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("bits", [(1, 0, 0, 1, 1), (0, 0, 0, 0, 0), (1, 1, 1, 1, 1)])
def test_construction_has_the_properties_of_lemma_c1(bits):
    d = np.array(bits, bool)
    points, in_s = vc.construction(d)
    m = d.size
    assert points.shape == (10 * m, 3) and in_s.sum() == 5 * m  # n = 10m, balanced
    np.testing.assert_array_equal(points[:m], vc.grid(m)[:m])  # the shattered points, in order
    np.testing.assert_array_equal(in_s[:m], d)
    b, gap = vc.separation(points, in_s)
    assert b < 1.0 and gap >= 1.0 - 1e-12  # properties a and b


@pytest.mark.parametrize("m", [2, 3, 4])
def test_every_dichotomy_is_realized_at_the_proofs_scale(m):
    r = vc.shattered(m)
    assert r["dichotomies"] == 2 ** m
    assert r["realized"] == r["separates"] == r["within_bound"] == 2 ** m, r["failed"]
    assert r["eigengap_min"] > 10  # the Fiedler vector is unique up to sign


def test_too_wide_a_scale_breaks_the_construction():
    # The check can fail: at sigma = 1 the Gaussian affinity joins S and T.
    r = vc.shattered(4, sigma=1.0)
    assert r["realized"] < 16 and len(r["failed"]) == 16 - r["realized"]


def test_bad_dichotomy_names_its_shape():
    with pytest.raises(ValueError, match=r"m >= 2 booleans, got shape \(1,\)"):
        vc.construction(np.array([True]))


def test_script_prints_the_table(capsys):
    from harness import vc as vc_check

    vc_check.main(["--m", "3", "--sigmas", "5", "--no-record"])
    out = capsys.readouterr().out
    assert "| 3 | 30 | 0.173 (0.9 × proof's) | 8 | 8 | 8 | 8 | 0.500 | 1.000 |" in out
    # the check reads these lines; a too-large sigma realizes fewer
    assert "m = 3, sigma from the proof: 8 / 8 dichotomies shattered" in out
    realized = re.search(r"m = 3, sigma = 5\.0: (\d+) / 8 dichotomies shattered", out)
    assert realized and int(realized.group(1)) < 8
