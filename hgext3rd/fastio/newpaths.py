"""What an apply creates that the transaction's journal does not cover.

Mercurial's journal lists files (to truncate or remove) and backups; a
rollback, in the process or by ``hg recover`` after a crash, never removes
a directory, nor a file written outside the store (the caches a stream
clone carries).  A :class:`NewPaths`, one per transaction, records those:
every directory an apply makes (store and cache) and every new cache file,
each **on disk before it is created**, in ``.hg/store/fastio-newpaths``.

- The list is a temporary file of the transaction (``tr.registertmp``):
  Mercurial removes it when the transaction closes or rolls back, with or
  without the extension.
- When the transaction aborts, the abort callback removes what was
  recorded; ``hg recover`` does the same from the list on disk (see
  ``recovery``), after Mercurial's own playback.
- A store directory recorded here was made under the store lock by this
  transaction, so everything inside it is the transaction's and goes with
  it; outside the store only the recorded files go, and a directory only
  when it is empty.

Each line is ``<location>\\0<path>\\n``: ``store`` (relative to the raw store
directory, i.e. already encoded) or ``plain`` (relative to ``.hg``); a path
ending in ``/`` is a directory.
"""

import os
import weakref

from mercurial import util

from . import compat

LIST_NAME = b"fastio-newpaths"
STORE = b"store"
PLAIN = b"plain"

# the one NewPaths of each running transaction (nested ones are the same
# object: every writer of a transaction shares the list and its callback)
_BY_TRANSACTION = weakref.WeakKeyDictionary()


class NewPaths:
    """The paths one transaction creates outside its journal's reach."""

    def __init__(self, repo, tr):
        # weakly: this object is the value of ``tr``'s entry in
        # _BY_TRANSACTION, which a strong reference would keep alive with
        # the transaction (and stock's ``transaction.__del__``, which aborts
        # a transaction dropped with its journal, would never run)
        self._tr = weakref.ref(tr)
        self._roots = {
            STORE: _root(compat.encoder(repo.svfs)[1]),
            PLAIN: _root(repo.vfs),
        }
        self._rawstore = compat.encoder(repo.svfs)[1]
        self._list = None
        self._dirs = []  # (location, absolute path)
        self._files = []

    @classmethod
    def of(cls, repo, tr):
        new = _BY_TRANSACTION.get(tr)
        if new is None:
            new = _BY_TRANSACTION[tr] = cls(repo, tr)
        return new

    def _relative(self, path):
        """``(location, relative path)`` of absolute ``path``, or None when
        it is under neither root (a share's cache, ...)."""
        for location, root in self._roots.items():
            if path.startswith(root):
                return location, util.pconvert(path[len(root) :])
        return None

    def record(self, dirs=(), files=()):
        """Note absolute paths about to be created: ``dirs`` outermost
        first, then ``files``.  On disk when this returns."""
        lines = []
        for path in dirs:
            where = self._relative(path)
            if where is not None:
                self._dirs.append((where[0], path))
                lines.append(b"%s\0%s/\n" % where)
        for path in files:
            where = self._relative(path)
            if where is not None:
                self._files.append(path)
                lines.append(b"%s\0%s\n" % where)
        if not lines:
            return
        if self._list is None:
            tr = self._tr()
            # registered first: a crash in between leaves an entry for a
            # missing file, which Mercurial's rollback accepts
            tr.registertmp(LIST_NAME)
            # not through the vfs: an apply's opener serves it (and would
            # count and defer this file); a fixed name needs no audit
            path = self._rawstore.join(LIST_NAME)
            self._list = util.posixfile(path, b"ab")
            mode = compat.forced_file_mode(self._rawstore)
            if mode is not None:
                os.chmod(path, mode)
            tr.addabort(b"fastio-newpaths", self._abort)
            # closed before Mercurial removes it (Windows)
            tr.addfinalize(b"fastio-newpaths", self._close)
        self._list.write(b"".join(lines))
        self._list.flush()

    def _close(self, tr=None):
        if self._list is not None:
            self._list.close()

    def _abort(self, tr=None):
        # abort callbacks run before the playback, which then finds the new
        # files of new directories gone (it accepts that)
        self._close()
        remove(self._dirs, self._files)


def recorded(tr):
    """``(dirs, files)``: absolute paths of what ``tr`` recorded so far."""
    new = _BY_TRANSACTION.get(tr)
    if new is None:
        return [], []
    return [path for __, path in new._dirs], list(new._files)


def _root(vfs):
    return vfs.join(b"x")[:-1]


def remove(dirs, files):
    """Remove recorded ``files`` and ``dirs`` (``(location, absolute
    path)``): store directories with everything in them, others only when
    empty.  Best effort: what cannot go stays."""
    for path in files:
        try:
            os.unlink(path)
        except OSError:
            pass
    for location, path in sorted(dirs, key=lambda d: len(d[1]), reverse=True):
        if location == STORE:
            _empty_tree(path)
        try:
            os.rmdir(path)
        except OSError:
            pass


def _empty_tree(top):
    for root, dirnames, filenames in os.walk(top, topdown=False):
        for name in filenames:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirnames:
            path = os.path.join(root, name)
            try:
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
            except OSError:
                pass


def read_leftovers(storevfs, plainvfs):
    """``(dirs, files)`` recorded by a transaction that did not end (for
    ``hg recover``), as :func:`remove` takes them; nothing when there is
    no list.  Entries that are not plain relative paths are ignored."""
    rawstore = compat.encoder(storevfs)[1]
    try:
        data = rawstore.tryread(LIST_NAME)
    except OSError:
        return [], []
    roots = {STORE: _root(rawstore)}
    if plainvfs is not None:
        roots[PLAIN] = _root(plainvfs)
    dirs, files = [], []
    for line in data.splitlines():
        location, sep, path = line.partition(b"\0")
        root = roots.get(location)
        if not sep or root is None:
            continue
        is_dir = path.endswith(b"/")
        path = path.rstrip(b"/")
        if not _plain_relative(path):
            continue
        path = root + util.localpath(path)
        if is_dir:
            dirs.append((location, path))
        else:
            files.append(path)
    return dirs, files


def _plain_relative(path):
    if not path or path.startswith(b"/") or b"\\" in path or b"\0" in path:
        return False
    return all(part not in (b"", b".", b"..") for part in path.split(b"/"))
