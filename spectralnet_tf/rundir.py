"""Run directories of ``scripts/run.py``: claimed by one process at a time, never
overwritten silently, and resumable.

A run directory holds ``args.json`` (the command-line arguments), ``.lock``
(the pid of the process using it), ``checkpoints/`` and, when the run has
finished, ``results.json``.
"""

import contextlib
import json
import os

from .atomic import atomic_file

ARGS, LOCK, RESULTS = "args.json", ".lock", "results.json"


class RunDirectoryError(RuntimeError):
    """The run directory cannot be used as asked."""


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    lock = os.path.join(path, LOCK)
    _acquire(lock)
    try:
        if resume:
            with open(os.path.join(path, ARGS)) as f:
                argv = json.load(f)
        else:
            with atomic_file(os.path.join(path, ARGS)) as f:
                json.dump(list(argv), f)
        yield argv
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)


def _acquire(lock):
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                with open(lock) as f:
                    pid = int(f.read().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and _pid_alive(pid):
                raise RunDirectoryError(
                    f"{os.path.dirname(lock)} is in use by process {pid} ({lock}).") from None
            os.remove(lock)  # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return
    raise RunDirectoryError(f"could not lock {lock}")
