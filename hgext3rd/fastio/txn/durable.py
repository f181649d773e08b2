"""Durable applies (``fastio.durable``): flushed before the commit.

Mercurial never flushes what it writes to stable storage.  With
``fastio.durable=yes``, an apply (stream or changegroup) asks its
transaction (:func:`request`) to flush everything it wrote once the last
file of the transaction is written, before its journal is gone:
``transaction.close`` generates its last files, then removes its
temporary files (the list of ``newpaths`` among them) and renames the
journal to ``undo``; the flush runs between the two (see
``compat.transaction_commit_point``).  A crash before the flush ends finds
the journal and the list (``hg recover`` rolls back, directories
included); a crash after it finds the complete repository.

Every write of the apply is done by then: the writing and closing threads
are waited for before the apply returns (see ``filewriter``).

Methods, chosen by measurement (bench/durablebench.py: 10k files on ext4,
one ``syncfs`` costs a fraction of an ``fsync`` per file):

``syncfs`` (Linux)
  one ``syncfs`` per filesystem the repository's ``.hg`` and store are on:
  the filesystem writes out every dirty page and commits its journal once,
  so data, new directories and renames are all stable.  It also writes
  out what other processes left dirty on the same filesystem.

``fsync``
  elsewhere (and ``devel.fastio.durable-method=fsync``): every file in the
  transaction's journal and backups, every file and directory the apply
  recorded in ``newpaths``, and the directories of all of them, each
  flushed with its own ``fsync`` (directories are skipped on Windows, which
  cannot open them; its ``fsync`` is ``FlushFileBuffers``).
"""

import errno
import os

from mercurial import error, util
from mercurial.i18n import _
from mercurial.utils import stringutil

from .. import compat, config, wiring
from . import newpaths


def _wire(ui):
    """Whether transactions call back before removing the journal (wired
    at the first apply asking for durability: a command that does not
    loads none of this)."""

    def problems():
        if compat.transaction_commit_point() is None:
            ui.debug(b"fastio: durable applies unavailable on this Mercurial\n")
            return ["no commit point"]
        return []

    return wiring.wire("durable commit", problems)


def request(repo, tr, settings, stream=False):
    """Have ``tr`` flush what it wrote before it commits, when
    ``fastio.durable`` asks for it.  A ``stream`` apply also flushes the
    requirements Mercurial writes after its transaction, once the
    repository is unlocked."""
    if not settings.durable or getattr(tr, "_fastio_flush", None) is not None:
        return
    # (the transaction is open: the class's method is wrapped before this
    # one reaches it)
    if not _wire(repo.ui):
        # never claim durability that cannot be delivered
        raise error.Abort(
            _(b"fastio.durable is set but this Mercurial cannot flush transactions")
        )
    flush = tr._fastio_flush = _Flush(repo, settings)
    if stream:
        repo._afterlock(lambda success: success and flush.run_requirements())


def _clone(orig, ui, *args, **kwargs):
    result = orig(ui, *args, **kwargs)
    destpeer = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    repo = destpeer.local() if destpeer is not None else None
    if repo is not None:
        settings = config.settings(repo.ui)
        if settings.durable and repo.dirstate.p1() != repo.nullid:
            _Flush(repo, settings).run_working_copy(repo.dirstate)
    return result


def _commit_point(orig, tr, *args, **kwargs):
    result = orig(tr, *args, **kwargs)
    flush = getattr(tr, "_fastio_flush", None)
    if flush is not None and compat.ends_writes(args, kwargs):
        tr._fastio_flush = None
        flush.run(tr)
    return result


def _syncfs_function():
    """libc's ``syncfs(fd)``, or None where the system has none."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError, ImportError):
        return None
    syncfs.argtypes = (ctypes.c_int,)
    syncfs.restype = ctypes.c_int

    def call(fd):
        if syncfs(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return call


class _Flush:
    """What one transaction flushes, and how."""

    def __init__(self, repo, settings):
        self._ui = repo.ui
        self._report = settings.report
        self._method = settings.durable_method
        self._vfs = repo.vfs
        self._root = repo.root
        self._store = compat.store_path(repo)

    def run(self, tr):
        self._run(lambda: self._fsync_each(tr), b"")

    def run_working_copy(self, dirstate):
        def fsync_each():
            files = [self._vfs.join(b"dirstate")]
            files += [os.path.join(self._root, util.localpath(f)) for f in dirstate]
            return _fsync_all(files, (self._root,))

        self._run(fsync_each, b" (working copy)", roots=(self._root,))

    def run_requirements(self):
        files = [self._vfs.join(b"requires"), os.path.join(self._store, b"requires")]
        self._run(lambda: _fsync_all(files, ()), b" (requirements)")

    def _run(self, fsync_each, what_for, roots=()):
        start = util.timer()
        syncfs = None
        if self._method != config.DURABLE_FSYNC:
            syncfs = _syncfs_function()
        if syncfs is None and self._method == config.DURABLE_SYNCFS:
            raise error.Abort(_(b"fastio.durable: syncfs is not available here"))
        try:
            if syncfs is not None:
                count = self._syncfs(syncfs, roots)
                what = b"%d filesystem(s) by syncfs" % count
            else:
                files, dirs = fsync_each()
                what = b"%d files and %d directories by fsync" % (files, dirs)
        except OSError as exc:
            # raised inside transaction.close: the journal stays, and
            # hg recover rolls back what could not be made durable
            raise error.Abort(
                _(b"fastio.durable: flushing to stable storage failed: %s")
                % stringutil.forcebytestr(exc)
            )
        seconds = util.timer() - start
        line = b"fastio: durable: flushed %s%s in %.3f s\n" % (what, what_for, seconds)
        if self._report:
            self._ui.write_err(line)
        else:
            self._ui.debug(line)

    def _syncfs(self, syncfs, roots):
        devices = set()
        for path in (self._store, self._vfs.base) + tuple(roots):
            fd = os.open(path, os.O_RDONLY)
            try:
                device = os.fstat(fd).st_dev
                if device not in devices:
                    devices.add(device)
                    syncfs(fd)
            finally:
                os.close(fd)
        return len(devices)

    def _fsync_each(self, tr):
        files = set(compat.transaction_files(tr))
        dirs = {self._store, self._vfs.base, os.path.dirname(self._root)}
        new_dirs, new_files = newpaths.recorded(tr)
        files.update(new_files)
        dirs.update(new_dirs)
        return _fsync_all(files, dirs)


def _fsync_all(files, dirs):
    """fsync ``files``, then ``dirs`` and the directory of every file;
    ``(files, directories)`` flushed."""
    dirs = set(dirs)
    dirs.update(os.path.dirname(p) for p in files)
    flushed_files = sum(_fsync_path(p) for p in sorted(files))
    flushed_dirs = 0
    if os.name != "nt":
        flushed_dirs = sum(_fsync_path(p) for p in sorted(dirs))
    return flushed_files, flushed_dirs


def _fsync_path(path):
    """fsync ``path`` (a file or a directory); False when it is gone."""
    try:
        # FlushFileBuffers (Windows' fsync) needs a handle open for writing
        flags = os.O_RDWR | os.O_BINARY if os.name == "nt" else os.O_RDONLY
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return True
