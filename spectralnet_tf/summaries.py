"""The seconds of each phase of a fit, for TensorBoard: ``SpectralNet(log_dir=...)``.

Each training phase writes its own run, ``log_dir/<phase>`` ("siamese",
"spectralnet"), one scalar per history value per epoch
(``callbacks.TensorBoardLog``). ``log_dir/phases`` holds the seconds of each
phase of ``fit`` (encoding, Siamese training, SpectralNet training, k-means),
written once at its end. Under a multi-worker strategy only the chief writes.
"""

import os

import tensorflow as tf

def write_phase_seconds(log_dir, seconds):
    """The seconds of each phase (name -> seconds), in the run ``log_dir/phases``."""
    writer = tf.summary.create_file_writer(os.path.join(log_dir, "phases"))
    with writer.as_default():
        for name, value in seconds.items():
            tf.summary.scalar(f"seconds/{name}", value, step=0)
    writer.flush()
    writer.close()
