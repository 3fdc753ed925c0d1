"""Atomic writes: a directory or file appears complete under its final name, or not at all.

Everything is written into a hidden temporary sibling first and moved into place with
one ``os.rename`` (atomic on POSIX within one file system). A TF-Serving poller, a
notebook or a resumed run therefore never sees a half-written export or checkpoint;
after a crash only a ``.tmp-*`` sibling may be left, which nothing reads.
"""

import contextlib
import errno
import os
import shutil
import tempfile


@contextlib.contextmanager
def atomic_directory(parent):
    """Yield a fresh temporary directory inside ``parent``; delete it on error.

    The caller moves it into place with ``publish``; if the body raises, the
    temporary directory is removed and the error propagates.
    """
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        yield tmp
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp, final):
    """Move a finished temporary directory to ``final``; refuse to overwrite.

    Raises FileExistsError if ``final`` already exists (even empty).
    """
    if os.path.lexists(final):
        raise FileExistsError(f"{final} already exists; not overwriting it.")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; give the usual directory mode
    try:
        os.rename(tmp, final)
    except OSError as err:  # another writer created it in between
        if err.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise FileExistsError(f"{final} already exists; not overwriting it.") from err
        raise


@contextlib.contextmanager
def atomic_file(path, mode="w"):
    """Open a temporary file beside ``path``; on success, rename it onto ``path``."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; give the usual file mode
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
