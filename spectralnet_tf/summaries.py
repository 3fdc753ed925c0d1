"""Training curves for TensorBoard: ``SpectralNet(log_dir=...)``.

Each training phase writes its own run, ``log_dir/<phase>`` ("siamese",
"spectralnet"), with ``tf.summary`` (the event files TensorBoard reads), one
scalar per history value per epoch, at step = epoch: the loss, the
validation loss, the learning rate, the epoch's seconds, and the Grassmann
distance when it is computed. ``log_dir/phases`` holds the seconds of each
phase of ``fit`` (encoding, Siamese training, SpectralNet training, k-means),
written once at its end. Under a multi-worker strategy only the chief writes.
"""

import os

import tensorflow as tf

#: History keys that are not per-epoch curves.
NOT_CURVES = ("iteration",)


class EpochLog:
    """``log(epoch, values)`` for ``train.run_epochs``: the values as scalars
    of the run ``log_dir/run`` at step ``epoch + 1``, flushed every epoch so
    that TensorBoard shows a training in progress."""

    def __init__(self, log_dir, run):
        self.writer = tf.summary.create_file_writer(os.path.join(log_dir, run))

    def __call__(self, epoch, values):
        with self.writer.as_default():
            for name, value in values.items():
                if name not in NOT_CURVES:
                    tf.summary.scalar(name, value, step=epoch + 1)
        self.writer.flush()


def write_phase_seconds(log_dir, seconds):
    """The seconds of each phase (name -> seconds), in the run ``log_dir/phases``."""
    writer = tf.summary.create_file_writer(os.path.join(log_dir, "phases"))
    with writer.as_default():
        for name, value in seconds.items():
            tf.summary.scalar(f"seconds/{name}", value, step=0)
    writer.flush()
    writer.close()
