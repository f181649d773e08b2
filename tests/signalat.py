"""Test extension: this process sends itself $FASTIO_SIGNAL (INT or TERM)
at one of the moments a signal does the most harm.  Python runs the handler
as the call that sends it returns.

FASTIO_SIGNAL_AFTER_OPEN=SUFFIX
    right after ``os.open`` creates the file whose path ends with SUFFIX:
    a descriptor is in hand and nothing else knows of it.
FASTIO_SIGNAL_BEFORE_CLOSE=SUFFIX
    as the close of the revlog write handle of the file whose path ends
    with SUFFIX starts (the first time; the extension's handles, and
    stock's ambiguity-checking ones): its buffer is not written yet.
"""

import importlib
import os
import signal

from mercurial import extensions, vfs as vfsmod

_after_open = os.environ.get("FASTIO_SIGNAL_AFTER_OPEN", "").encode()
_before_close = os.environ.get("FASTIO_SIGNAL_BEFORE_CLOSE", "").encode()
_signal = getattr(signal, "SIG" + os.environ.get("FASTIO_SIGNAL", "INT"))
_os_open = os.open


def _open(path, flags, *args, **kwargs):
    fd = _os_open(path, flags, *args, **kwargs)
    name = path.encode() if isinstance(path, str) else path
    if flags & os.O_CREAT and isinstance(name, bytes):
        if name.endswith(_after_open):
            os.kill(os.getpid(), _signal)
    return fd


def _signalling_close(orig):
    sent = []

    def close(self):
        name = getattr(self, "name", b"")
        name = name.encode() if isinstance(name, str) else name
        if not sent and not self.closed and name.endswith(_before_close):
            sent.append(name)
            os.kill(os.getpid(), _signal)
        return orig(self)

    return close


def uisetup(ui):
    if _after_open:
        os.open = _open
    if _before_close:
        # (stock's, for the changelog and the manifest)
        classes = [vfsmod.checkambigatclosing]
        try:
            package = extensions.find(b"fastio").__name__
        except KeyError:
            pass  # stock alone
        else:
            revlogwriter = importlib.import_module(package + ".apply.revlogwriter")
            classes += [revlogwriter._HandOffFile, revlogwriter._HandOffProxy]
        for cls in classes:
            cls.close = _signalling_close(cls.close)
