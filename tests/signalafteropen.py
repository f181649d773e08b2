"""Test extension: right after the file whose path ends with
$FASTIO_SIGNAL_AFTER_OPEN is created by ``os.open``, this process sends
itself $FASTIO_SIGNAL (INT or TERM).  Python runs the handler as the open
returns: the moment a descriptor is in hand and nothing else knows of it."""

import os
import signal

_target = os.environ.get("FASTIO_SIGNAL_AFTER_OPEN", "").encode()
_signal = getattr(signal, "SIG" + os.environ.get("FASTIO_SIGNAL", "INT"))
_os_open = os.open


def _open(path, flags, *args, **kwargs):
    fd = _os_open(path, flags, *args, **kwargs)
    name = path.encode() if isinstance(path, str) else path
    if _target and flags & os.O_CREAT and isinstance(name, bytes):
        if name.endswith(_target):
            os.kill(os.getpid(), _signal)
    return fd


os.open = _open
