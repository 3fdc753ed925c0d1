"""Training checkpoints that survive a kill at any moment.

``Checkpointer(directory)`` keeps numbered checkpoints ``directory/ckpt-<epoch>/``
(TensorFlow variables: weights, optimizer slots, RNG state; plus ``state.json``:
epoch, schedule, history) and a pointer file ``directory/latest`` naming the
newest complete one. A checkpoint is written into a hidden temporary directory
and renamed into place before the pointer is replaced (``os.replace``), so the
pointer always names a complete checkpoint; older ones are deleted afterwards.
A kill loses at most the work since the last checkpoint.
"""

import json
import os
import shutil

import tensorflow as tf

from .atomic import atomic_directory, atomic_file, publish

POINTER = "latest"
STATE = "state.json"


class Checkpointer:
    """Save and restore ``objects`` (name -> trackable) and a JSON ``state``.

    Parameters
    ----------
    directory : str
        Where checkpoints of this training phase live.
    every : int, default=1
        Save after every ``every``-th epoch (and always after the last).
    write : bool, default=True
        False: ``save`` writes nothing (a non-chief worker of a multi-worker
        strategy, which only restores the chief's checkpoints).
    """

    def __init__(self, directory, every=1, write=True):
        self.directory = directory
        self.every = every
        self.write = write

    def latest(self):
        """Path of the newest complete checkpoint, or None."""
        pointer = os.path.join(self.directory, POINTER)
        if not os.path.exists(pointer):
            return None
        with open(pointer) as f:
            path = os.path.join(self.directory, f.read().strip())
        return path if os.path.exists(os.path.join(path, STATE)) else None

    def save(self, epoch, objects, state):
        """Write checkpoint ``epoch`` atomically and make it the latest."""
        if not self.write:
            return None
        final = os.path.join(self.directory, f"ckpt-{epoch:06d}")
        previous = self.latest()
        with atomic_directory(self.directory) as tmp:
            tf.train.Checkpoint(**objects).write(os.path.join(tmp, "vars"))
            with open(os.path.join(tmp, STATE), "w") as f:
                json.dump({"epoch": epoch, **state}, f)
            if os.path.exists(final):  # a rerun of the same epoch after a crash
                shutil.rmtree(final)
            publish(tmp, final)
        with atomic_file(os.path.join(self.directory, POINTER)) as f:
            f.write(os.path.basename(final))
        if previous and os.path.abspath(previous) != os.path.abspath(final):
            shutil.rmtree(previous, ignore_errors=True)
        return final

    def restore(self, objects):
        """Load the latest checkpoint into ``objects``; return its state or None."""
        path = self.latest()
        if path is None:
            return None
        tf.train.Checkpoint(**objects).read(os.path.join(path, "vars")).assert_consumed()
        with open(os.path.join(path, STATE)) as f:
            return json.load(f)
