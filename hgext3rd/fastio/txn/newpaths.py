"""What an apply creates that the transaction's journal does not cover.

Mercurial's journal lists files (to truncate or remove) and backups; a
rollback, in the process or by ``hg recover`` after a crash, never removes
a directory, nor a file written outside the store (the caches a stream
clone carries).  A :class:`NewPaths`, one per transaction, records those:
every directory an apply makes (store and cache) and every new cache file,
each **on disk before it is created**, in a list of its own.

The list is obeyed only where it can be trusted:

- It is ``.hg/fastio-newpaths-<token>``, ``<token>`` random: in ``.hg``
  itself, where no stream, bundle or pull writes (streams write the store
  and ``.hg/cache``), created by ``writer.newfile`` (never appended to a
  file that was there), its first line naming the token again.
- It is a temporary file of its transaction (``tr.registertmp``, location
  ``plain``): the transaction's own journal (``journal.backupfiles``)
  names it, and Mercurial removes it when the transaction closes or rolls
  back, with or without the extension.  ``hg recover`` (see ``recovery``)
  reads only the list that the journal being rolled back names; any other
  file is ignored and left in place.
- Removal never goes beyond what the transaction created: the files the
  list names; then each recorded directory, deepest first, emptied of the
  files in it that are not older than the list (a directory made by the
  transaction cannot hold older ones), and removed when that leaves it
  empty.  A directory made by someone else inside it stays, and so does
  its parent.

Each entry line is ``<location>\0<path>\n``: ``store`` (relative to the raw
store directory, i.e. already encoded) or ``plain`` (relative to ``.hg``); a
path ending in ``/`` is a directory.  Entries that are not plain relative
paths are ignored.
"""

import os
import re
import stat
import weakref

from mercurial import util

from .. import compat
from . import storenames
from ..writer import newfile

# the list's name: this prefix and a random token (hex)
LIST_PREFIX = b"fastio-newpaths-"
_LIST_NAME = re.compile(rb"\Afastio-newpaths-([0-9a-f]{32})\Z")
# its first line: the token again, and the list's creation time as its own
# filesystem tells it (``st_ctime_ns``), against which entries are dated
_HEADER = re.compile(rb"\Afastio-newpaths 2 ([0-9a-f]{32}) ([0-9]+)\n")
# where the list lives: a transaction location (``.hg``)
LOCATION = b"plain"
STORE = b"store"
PLAIN = b"plain"

_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)

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
        self._rawstore = storenames.encoder(repo.svfs)[1]
        self._plain = repo.vfs
        self._roots = {STORE: _root(self._rawstore), PLAIN: _root(repo.vfs)}
        self._list = None
        self._since_ns = None
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
            self._create()
        self._list.write(b"".join(lines))
        self._list.flush()

    def _create(self):
        tr = self._tr()
        token = os.urandom(16).hex().encode("ascii")
        name = LIST_PREFIX + token
        # registered first: a crash in between leaves an entry for a
        # missing file, which Mercurial's rollback accepts
        tr.registertmp(name, location=LOCATION)
        # not through the vfs: an apply's opener serves it (and would
        # count and defer this file); a fixed name needs no audit
        path = self._plain.join(name)
        mode = compat.forced_file_mode(self._plain)
        newfile.create(
            path, newfile.FLAGS, -1 if mode is None else mode, self._adopt, None, None
        )
        self._list.write(b"fastio-newpaths 2 %s %d\n" % (token, self._since_ns))
        tr.addabort(b"fastio-newpaths", self._abort)
        # closed before Mercurial removes it (Windows)
        tr.addfinalize(b"fastio-newpaths", self._close)

    def _adopt(self, fd, __):
        """The hand-over of the new list (it owns ``fd``)."""
        try:
            self._since_ns = os.fstat(fd).st_ctime_ns
            self._list = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise

    def _close(self, tr=None):
        if self._list is not None:
            self._list.close()

    def _abort(self, tr=None):
        # abort callbacks run before the playback, which then finds the new
        # files of new directories gone (it accepts that)
        self._close()
        remove(self._dirs, self._files, self._since_ns)


def recorded(tr):
    """``(dirs, files)``: absolute paths of what ``tr`` recorded so far."""
    new = _BY_TRANSACTION.get(tr)
    if new is None:
        return [], []
    return [path for __, path in new._dirs], list(new._files)


def _root(vfs):
    return vfs.join(b"x")[:-1]


def remove(dirs, files, since_ns):
    """Remove recorded ``files`` and ``dirs`` (``(location, absolute
    path)``), deepest first: a store directory is emptied of the files in
    it that are not older than ``since_ns`` (the list's creation), any
    directory removed once empty.  Best effort: what cannot go stays."""
    for path in files:
        try:
            os.unlink(path)
        except OSError:
            pass
    if since_ns is None:
        return
    for location, path in sorted(dirs, key=lambda d: len(d[1]), reverse=True):
        if location == STORE:
            _empty_of_new_files(path, since_ns)
        try:
            os.rmdir(path)
        except OSError:
            pass


def _empty_of_new_files(directory, since_ns):
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) and st.st_ctime_ns >= since_ns:
                os.unlink(path)
        except OSError:
            pass


def read_leftovers(vfsmap, backup_entries):
    """``(dirs, files, since_ns)`` recorded by a transaction that did not
    end (for ``hg recover``), as :func:`remove` takes them: from the list
    that ``backup_entries`` (the journal's, as Mercurial reads them) name,
    and only from it; nothing when there is none."""
    plainvfs = vfsmap.get(LOCATION)
    storevfs = vfsmap.get(b"")
    if plainvfs is None or storevfs is None:
        return [], [], None
    for location, name, backup, __ in backup_entries:
        match = _LIST_NAME.match(backup)
        if location != LOCATION or name or match is None:
            continue
        data = _read_plain_file(plainvfs.join(backup))
        header = _HEADER.match(data)
        if header is None or header.group(1) != match.group(1):
            continue
        roots = {
            STORE: _root(storenames.encoder(storevfs)[1]),
            PLAIN: _root(plainvfs),
        }
        dirs, files = _entries(data[header.end() :], roots)
        return dirs, files, int(header.group(2))
    return [], [], None


def _read_plain_file(path):
    """The content of regular file ``path`` (b"" when it is missing, or is
    not a regular file)."""
    try:
        fd = os.open(path, _O_READ)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return fh.read()


def _entries(data, roots):
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
