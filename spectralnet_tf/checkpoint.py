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

import numpy as np
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


#: The fit a checkpoint directory belongs to (``fingerprint``).
FINGERPRINT = "fingerprint.json"
#: Rows of X hashed into the fingerprint, evenly spaced.
FINGERPRINT_ROWS = 64


def digest(array):
    """A short hash of an array's dtype, shape and values (for fingerprints)."""
    import hashlib

    array = np.ascontiguousarray(array)
    return hashlib.sha256(str(array.dtype).encode() + str(array.shape).encode()
                          + array.tobytes()).hexdigest()[:16]


def fingerprint(x, params, **arrays):
    """What a resumed fit must share with the one that wrote the checkpoints:
    X's shape, a hash of its rows (a numpy X: all of them; one on disk:
    ``FINGERPRINT_ROWS`` evenly spaced rows, read one at a time), a hash of
    each of ``arrays`` (e.g. the partial labels; None: absent) and the
    parameters (JSON)."""
    n = len(x)
    if isinstance(x, np.ndarray):
        sample = x
    else:
        rows = np.unique(np.linspace(0, n - 1, min(n, FINGERPRINT_ROWS)).astype(np.int64))
        sample = np.stack([np.asarray(x[int(i):int(i) + 1], np.float32)[0] for i in rows])
    found = {"X shape": list(np.shape(x)), "X rows": digest(sample)}
    for name, value in arrays.items():
        found[name] = None if value is None else digest(np.asarray(value))
    found["parameters"] = json.loads(json.dumps(params, sort_keys=True, default=repr))
    return found


def check_fingerprint(directory, found, resume, write=True):
    """On a fresh fit, record ``found`` in ``directory`` (atomically; not if
    ``write`` is False: a non-chief worker). On resume, compare it with the
    recorded one and raise a ValueError that says what differs. A directory
    without a record (written before fingerprints) is resumed unchecked."""
    path = os.path.join(directory, FINGERPRINT)
    if not resume:
        if write:
            os.makedirs(directory, exist_ok=True)
            with atomic_file(path) as f:
                json.dump(found, f, indent=1)
        return
    if not os.path.exists(path):
        return
    with open(path) as f:
        recorded = json.load(f)
    differs = []
    for key in sorted(set(recorded) | set(found)):
        if key == "parameters":
            old, new = recorded.get(key, {}), found.get(key, {})
            differs += [f"{name}={old.get(name)!r} then, {name}={new.get(name)!r} now"
                        for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]
        elif recorded.get(key) != found.get(key):
            what = {"X rows": "X holds other rows"}.get(key, f"{key}: {recorded.get(key)!r} then, "
                                                              f"{found.get(key)!r} now")
            differs.append(what)
    if differs:
        raise ValueError(
            f"resume=True, but the checkpoints in {directory!r} are of another fit: "
            f"{'; '.join(differs)}. Resume with the same data and parameters, or use an "
            "empty checkpoint_dir.")
