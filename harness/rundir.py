"""Run directories of the paper reproduction (``scripts/run.py``): claimed by one process at
a time, never overwritten silently, and resumable.

A run directory holds ``args.json`` (the command-line arguments), ``.lock``
(flock-ed by the process using it, which writes its pid there), ``checkpoints/`` and, when the run has
finished, ``results.json``. A new run that fails before its first checkpoint
leaves nothing behind (the directory is removed if the run made it, emptied
otherwise), so the same command can simply be tried again.
"""

import contextlib
import fcntl
import json
import os
import shutil

from spectralnet_tf.atomic import atomic_file

ARGS, LOCK, RESULTS, CHECKPOINTS = "args.json", ".lock", "results.json", "checkpoints"


class RunDirectoryError(RuntimeError):
    """The run directory cannot be used as asked."""


def check_new(path):
    """Refuse ``path`` for a new run unless it is missing or empty."""
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise RunDirectoryError(
            f"--out {path} already exists and is not empty; choose a new directory, or "
            f"continue an interrupted run with --resume {path}.")


def resumable_args(path):
    """The argument list of the interrupted run in ``path``, or RunDirectoryError."""
    if not os.path.exists(os.path.join(path, ARGS)):
        raise RunDirectoryError(f"--resume {path}: no {ARGS} there; not a run directory.")
    if os.path.exists(os.path.join(path, RESULTS)):
        raise RunDirectoryError(
            f"--resume {path}: the run has finished ({RESULTS} exists); nothing to resume.")
    with open(os.path.join(path, ARGS)) as f:
        return json.load(f)


@contextlib.contextmanager
def claim(path, argv=None, resume=False):
    """Hold ``path`` for this process; yield the run's argument list.

    New run (``resume=False``): ``path`` must not exist or be empty; ``argv``
    is written to ``args.json``. Resume: ``path`` must hold ``args.json`` and
    no ``results.json``; its arguments are returned. Either way a live lock by
    another process is an error, a stale one (dead pid) is taken over. If a
    new run's body raises before any checkpoint was written, what this made
    is removed again.
    """
    if resume:
        resumable_args(path)
    else:
        check_new(path)
    made = not os.path.exists(path)
    os.makedirs(path, exist_ok=True)
    lock = _acquire(os.path.join(path, LOCK))
    try:
        if resume:
            argv = resumable_args(path)
        else:
            with atomic_file(os.path.join(path, ARGS)) as f:
                json.dump(list(argv), f)
        yield argv
    except BaseException:
        if not resume and not _has_checkpoint(path):
            _discard(path, made)
        raise
    finally:
        lock.close()  # releases the flock; the file stays (deleting it would race)


def _has_checkpoint(path):
    return any(files for _, _, files in os.walk(os.path.join(path, CHECKPOINTS)))


def _discard(path, made):
    """Undo a new run that wrote nothing resumable (called while holding its lock)."""
    if made:
        shutil.rmtree(path, ignore_errors=True)
        return
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.remove(full)


def _acquire(path):
    """Open and flock ``path``; the pid written into it is for people only."""
    lock = open(path, "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        owner = lock.read().strip() or "another process"
        lock.close()
        raise RunDirectoryError(f"{os.path.dirname(path)} is in use by process {owner} ({path}).") from None
    lock.seek(0)
    lock.truncate()
    lock.write(str(os.getpid()))
    lock.flush()
    return lock
