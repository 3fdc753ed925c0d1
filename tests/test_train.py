import keras
import numpy as np
import tensorflow as tf

from spectralnet_tf.train import PlateauSchedule, sample_rows


def test_plateau_schedule_divides_by_ten_after_patience_and_stops_at_min_lr():
    opt = keras.optimizers.RMSprop(1e-3)
    sched = PlateauSchedule(opt, patience=2, min_lr=1e-5)
    assert sched.update(1.0) is False  # improvement
    assert sched.update(1.0) is False  # 1 epoch without improvement
    assert sched.update(2.0) is False  # 2 -> decay
    np.testing.assert_allclose(sched.lr, 1e-4, rtol=1e-6)
    assert sched.update(0.5) is False  # improvement resets the wait
    sched.update(0.5)
    assert sched.update(0.5) is True   # decays to 1e-5 = min_lr: stop
    np.testing.assert_allclose(sched.lr, 1e-5, rtol=1e-6)


def test_sample_rows_draws_distinct_indices_and_is_seeded():
    gen = tf.random.Generator.from_seed(0)
    idx = sample_rows(gen, 100, 40).numpy()
    assert len(set(idx)) == 40 and idx.min() >= 0 and idx.max() < 100
    again = sample_rows(tf.random.Generator.from_seed(0), 100, 40).numpy()
    np.testing.assert_array_equal(idx, again)


def test_sample_rows_oversamples_the_preferred_rows_exactly():
    gen = tf.random.Generator.from_seed(0)
    preferred = tf.constant([3, 17, 42, 77, 90], tf.int32)
    for _ in range(20):
        idx = sample_rows(gen, 100, 30, preferred, 4).numpy()
        assert len(set(idx)) == 30 and idx.min() >= 0 and idx.max() < 100
        assert len(set(idx) & {3, 17, 42, 77, 90}) >= 4
    # No preferred rows: the same stream as before oversampling existed.
    np.testing.assert_array_equal(
        sample_rows(tf.random.Generator.from_seed(0), 100, 40, preferred, 0).numpy(),
        sample_rows(tf.random.Generator.from_seed(0), 100, 40).numpy())
