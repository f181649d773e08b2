"""Mercurial's ``vfs.backgroundclosing`` served by the extension's closer.

Stock's closer is off outside Windows, slows fast filesystems down when
forced on, polls at shutdown and drops a failure of the last closes (an
ENOSPC flushing a file exits 0).  Where the extension is active every
``backgroundclosing`` block (checkouts, legacy stream clones, ...) uses a
:class:`~.closer.FileCloser` instead, which decides from timing whether to
use threads and re-raises every failure when the block ends.
"""

import contextlib
import threading

from mercurial.i18n import _
from mercurial import error, exthelper, vfs as vfsmod

from . import compat, config

eh = exthelper.exthelper()


class _VfsCloserAdapter:
    """What ``vfs.__call__(..., backgroundclose=True)`` expects: an object
    with ``close(fh)``; file objects carry their own name."""

    def __init__(self, closer):
        self._closer = closer

    def close(self, fh):
        self._closer.close(fh, getattr(fh, "name", None))


def backgroundclosing(orig, self, ui, expectedcount=-1):
    return _closing(self, ui, expectedcount)


@eh.extsetup
def _wrap_backgroundclosing(ui):
    """Serve ``backgroundclosing``, unless stock's is not the one this was
    written for (see ``compat.closing_internals``)."""
    from mercurial import extensions

    if compat.internals()[b"file closes"]:
        return
    extensions.wrapfunction(vfsmod.abstractvfs, "backgroundclosing", backgroundclosing)


@contextlib.contextmanager
def _closing(self, ui, expectedcount=-1):
    # one closer per vfs and only on the main thread, as stock
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    vfs = getattr(self, "vfs", self)
    if getattr(vfs, "_backgroundfilecloser", None):
        raise error.Abort(_(b"can only have 1 active background file closer"))
    closer = config.settings(ui).make_closer(ui, expectedcount=expectedcount)
    vfs._backgroundfilecloser = _VfsCloserAdapter(closer)
    try:
        try:
            yield closer
        except BaseException:
            closer.finish(raise_errors=False)
            raise
        closer.finish()
    finally:
        vfs._backgroundfilecloser = None
