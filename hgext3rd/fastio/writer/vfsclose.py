"""Mercurial's ``vfs.backgroundclosing`` served by the extension's file
writer.

Stock's closer is off outside Windows, slows fast filesystems down when
forced on, polls at shutdown and drops a failure of the last closes (an
ENOSPC flushing a file exits 0).  Where the extension is active, stock's
``backgroundclosing`` (its checks, its one closer per vfs, main thread only)
runs as it is, but the closer it makes for the block hands its files to a
:class:`~.filewriter.FileWriter`, which decides from timing whether to use
threads and re-raises every failure when the block ends.  A thin wrapper of
``backgroundclosing`` tells that closer which vfs the block writes to (auto
mode looks up that filesystem's close latency; the report names it).
"""

import contextlib

from mercurial import util

from .. import compat, config, wiring
from ..diag import report
from . import filewriter

# the vfs whose backgroundclosing block is being entered: stock makes its
# closer (ours, below) while entering, on the main thread only
_entering = []


class FileCloserForBlock:
    """What ``vfs.backgroundfilecloser(ui, expectedcount)`` gives stock's
    ``backgroundclosing``: a context manager with ``close(fh)`` for the
    files of the block (``vfs(..., backgroundclose=True)``)."""

    def __init__(self, ui, expectedcount=-1):
        self._ui = ui
        target = _entering[-1] if _entering else None
        repovfs, svfs, role = getattr(target, "_fastio_repo", (None, None, b"files"))
        self._settings = settings = config.settings(ui)
        base = getattr(getattr(target, "vfs", target), "base", None)
        self._stats = report.OperationStats(role, svfs)
        self._writer = filewriter.for_operation(
            ui,
            settings,
            self._stats.filewriter,
            repovfs,
            base,
            expectedcount=expectedcount,
        )
        # counted only for the report
        self._written = self._stats.writer if settings.report else None
        self._start = None

    def __enter__(self):
        self._start = util.timer()
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        # a failure of a close fails the block, unless another is on its way
        self._writer.finish(raise_errors=exc_type is None)
        if exc_type is None and self._stats.filewriter.closes:
            self._stats.elapsed = util.timer() - self._start
            report.emit(self._ui, self._settings, self._stats)

    def close(self, fh):
        written = self._written
        if written is not None:
            written.files += 1
            try:
                written.bytes += fh.tell()
            except (AttributeError, OSError, ValueError):
                pass
        self._writer.close(fh, getattr(fh, "name", None))


def _served(ui, wrapped):
    """Whether blocks are served (``vfs.backgroundfilecloser`` replaced by
    ``FileCloserForBlock``: see ``wiring.WRAPS``), checked at the first
    block so that a command writing no file pays nothing."""

    def problems():
        found = compat.closing_internals(wrapped)
        if found:
            compat.report_unsupported(ui, b"file closes", found)
        return found

    return wiring.wire("background closer", problems)


# the role reposetup gives the working copy's vfs: its blocks are checkouts
_WORKING_COPY = b"working copy files"


@contextlib.contextmanager
def backgroundclosing(orig, self, ui, *args, **kwargs):
    """``vfs.backgroundclosing``, as ``__init__`` wraps it."""
    with contextlib.ExitStack() as stack:
        if getattr(self, "_fastio_repo", (None, None, None))[2] == _WORKING_COPY:
            from .. import checkout

            stack.enter_context(checkout.block(self))
        if not _served(ui, orig):
            yield stack.enter_context(orig(self, ui, *args, **kwargs))
            return
        _entering.append(self)
        try:
            block = orig(self, ui, *args, **kwargs)
            closer = block.__enter__()
        finally:
            _entering.pop()
        stack.push(block)
        yield closer
