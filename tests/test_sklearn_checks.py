"""scikit-learn's own estimator checks (``parametrize_with_checks``) on a small
configuration of SpectralNet."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from spectralnet_tf import GaussianKNNAffinity, Schedule, SpectralNet

#: Checks that cannot pass, with the reason.
EXPECTED_FAILED_CHECKS = {
    "check_methods_sample_order_invariance": (
        "transform runs float32 matrix products whose result for one row depends, at "
        "float32 rounding (relative 1e-7), on where the row sits in the batch (the "
        "GEMM kernel's blocking); the check demands rtol=1e-7. predict is invariant."
    ),
}


@pytest.mark.slow
@parametrize_with_checks(
    [SpectralNet(hidden_units=(16,), schedule=Schedule(max_epochs=2, steps_per_epoch=5),
                 affinity=GaussianKNNAffinity(n_nbrs=2, scale_nbr=1), random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
