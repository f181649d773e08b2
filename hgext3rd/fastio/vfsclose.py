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
from mercurial import error, exthelper, util, vfs as vfsmod

from . import compat, config, report

eh = exthelper.exthelper()


class _VfsCloserAdapter:
    """What ``vfs.__call__(..., backgroundclose=True)`` expects: an object
    with ``close(fh)``; file objects carry their own name."""

    def __init__(self, closer, writer_stats=None):
        self._closer = closer
        self._writer_stats = writer_stats

    def close(self, fh):
        stats = self._writer_stats
        if stats is not None:
            # only with fastio.report: what was written, for the report
            stats.files += 1
            try:
                stats.bytes += fh.tell()
            except (AttributeError, OSError, ValueError):
                pass
        self._closer.close(fh, getattr(fh, "name", None))


@eh.reposetup
def _remember_cache(ui, repo):
    # auto mode looks up the close latency of the filesystem a
    # backgroundclosing block writes to in the repository's cache
    cachevfs = getattr(repo, "cachevfs", None)
    if cachevfs is None or not repo.local():
        return
    svfs = getattr(repo, "svfs", None)
    for vfs, role in (
        (getattr(repo, "wvfs", None), b"working copy files"),
        (svfs, b"store files"),
    ):
        if vfs is not None:
            vfs._fastio_repo = (cachevfs, svfs, role)


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
    settings = config.settings(ui)
    cachevfs, svfs, role = getattr(self, "_fastio_repo", (None, None, b"files"))
    tuning = settings.tuning(ui, cachevfs, vfs.base)
    stats = report.OperationStats(role, svfs)
    closer = settings.make_closer(ui, stats.closer, tuning, expectedcount=expectedcount)
    vfs._backgroundfilecloser = _VfsCloserAdapter(
        closer, stats.writer if settings.report else None
    )
    start = util.timer()
    try:
        try:
            yield closer
        except BaseException:
            closer.finish(raise_errors=False)
            raise
        closer.finish()
    finally:
        vfs._backgroundfilecloser = None
    if stats.closer.closes:
        stats.elapsed = util.timer() - start
        report.emit(ui, settings, stats)
