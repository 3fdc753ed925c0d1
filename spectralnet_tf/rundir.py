"""Run directories of ``scripts/run.py``: claimed by one process at a time, never
overwritten silently, and resumable.

A run directory holds ``args.json`` (the command-line arguments), ``.lock``
(flock-ed by the process using it, which writes its pid there), ``checkpoints/`` and, when the run has
finished, ``results.json``.
"""

import contextlib
import fcntl
import json
import os

from .atomic import atomic_file

ARGS, LOCK, RESULTS = "args.json", ".lock", "results.json"


class RunDirectoryError(RuntimeError):
    """The run directory cannot be used as asked."""


@contextlib.contextmanager
def claim(path, argv=None, resume=False):
    """Hold ``path`` for this process; yield the run's argument list.

    New run (``resume=False``): ``path`` must not exist or be empty; ``argv``
    is written to ``args.json``. Resume: ``path`` must hold ``args.json`` and
    no ``results.json``; its arguments are returned. Either way a live lock by
    another process is an error, a stale one (dead pid) is taken over.
    """
    if resume:
        if not os.path.exists(os.path.join(path, ARGS)):
            raise RunDirectoryError(f"--resume {path}: no {ARGS} there; not a run directory.")
        if os.path.exists(os.path.join(path, RESULTS)):
            raise RunDirectoryError(
                f"--resume {path}: the run has finished ({RESULTS} exists); nothing to resume.")
    elif os.path.exists(path) and os.listdir(path):
        raise RunDirectoryError(
            f"--out {path} already exists and is not empty; choose a new directory, or "
            f"continue an interrupted run with --resume {path}.")
    os.makedirs(path, exist_ok=True)
    lock = _acquire(os.path.join(path, LOCK))
    try:
        if resume:
            with open(os.path.join(path, ARGS)) as f:
                argv = json.load(f)
        else:
            with atomic_file(os.path.join(path, ARGS)) as f:
                json.dump(list(argv), f)
        yield argv
    finally:
        lock.close()  # releases the flock; the file stays (deleting it would race)


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
