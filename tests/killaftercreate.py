"""Test extension: SIGKILL this process right after a file whose path ends
with $FASTIO_KILL_AFTER_CREATE is created (any way Python creates it), the
worst moment for a revlog that journals the file only after creating it."""

import builtins
import io
import os
import signal

_target = os.environ.get("FASTIO_KILL_AFTER_CREATE", "").encode()


def _hit(path, creating):
    if not creating or not _target:
        return False
    if isinstance(path, str):
        path = path.encode()
    return isinstance(path, bytes) and path.endswith(_target)


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


_os_open = os.open


def _open_fd(path, flags, *args, **kwargs):
    fd = _os_open(path, flags, *args, **kwargs)
    if _hit(path, flags & os.O_CREAT):
        _die()
    return fd


_io_open = io.open


def _open_file(file, mode="r", *args, **kwargs):
    f = _io_open(file, mode, *args, **kwargs)
    if _hit(file, any(c in mode for c in "wax")):
        _die()
    return f


os.open = _open_fd
io.open = builtins.open = _open_file
