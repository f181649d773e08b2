"""Create thousands of store files quickly, and every one of them safely.

Opening a file through a vfs costs an ``unlink`` attempt, a ``makedirs`` per
file, a buffered file object and a synchronous close.  For a file this
operation creates none of that is needed, so a :class:`StoreWriter`:

- remembers the directories it has seen, and which of them it created: a
  file in a directory created by this operation cannot exist yet, so it is
  created with ``O_EXCL`` and no existence check;
- writes contents with ``os.write`` straight from the bundle's buffer;
- hands the descriptor to a :class:`~.closer.FileCloser`.

What keeps the store correct is kept, through Mercurial's own objects: the
name is checked (no ``..``, ``.hg``, absolute or control-character names),
encoded and audited by the target vfs, registered in the fncache (and the
file index of newer stores), and journaled in the transaction *before* the
file exists, so that an abort, or ``hg recover`` after a crash, removes it.
"""

import os
import re

from mercurial.i18n import _
from mercurial import error, pycompat, util

from . import closer as closermod, compat

_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOINHERIT = getattr(os, "O_NOINHERIT", 0) or getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOINHERIT
_REPLACE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_BINARY | _O_NOINHERIT
# signals wait while a descriptor is between its open and the closer
_hold = closermod.hold


def bad_name(name, reason):
    return error.Abort(
        _(b"refusing to write %s from stream: %s") % (stringify(name), reason)
    )


def stringify(name):
    """A printable form of a (possibly hostile) name."""
    text = pycompat.bytestr(name)
    return b"'%s'" % text.replace(b"\0", b"\\0").replace(b"\n", b"\\n").replace(
        b"\r", b"\\r"
    )


# anything but a plain relative path: control characters, an absolute or
# drive path, and empty, ".", ".." or ".hg" components (either separator)
_BAD_NAME = re.compile(
    rb"[\0\n\r]|^[/\\]|^[a-zA-Z]:|(?:^|[/\\])(?:\.\.?|\.[hH][gG])?(?:[/\\]|$)"
)

# every name _BAD_NAME refuses matches this (cheaper) pattern too
_SUSPICIOUS = re.compile(rb"[\0\n\r\\:]|/[./]|^[./]|/\Z")


def check_name(name):
    """Refuse names that are not plain relative store paths.

    The store encoding would turn ``..`` or ``.hg`` into harmless names, but
    a bundle carrying them is hostile or corrupt, and is refused outright.
    """
    # one quick scan first: this runs for every file of a clone
    if not name or _SUSPICIOUS.search(name) is not None:
        if not name:
            raise bad_name(name, _(b"empty name"))
        if _BAD_NAME.search(name) is not None:
            raise bad_name(name, _(b"not a relative store path"))


def write_error(name, exc):
    reason = pycompat.bytestr(exc.strerror or str(exc))
    return error.Abort(_(b"error writing %s: %s") % (stringify(name), reason))


class WriterStats:
    def __init__(self):
        self.files = 0
        self.bytes = 0


class _Target:
    """One destination vfs of a stream (the store, or the cache)."""

    def __init__(self, vfs, is_store):
        self.vfs = vfs
        self.is_store = is_store
        # store encoding then the raw vfs: what ``vfs.join`` does, in two
        # steps, so that the auditor sees the relative encoded path
        self.encode, rawvfs = compat.encoder(vfs)
        # rawvfs.join(p) is prefix + p for the relative encoded paths here
        self.prefix = rawvfs.join(b"x")[:-1]
        self.base = rawvfs.join(None)
        self.audit = compat.path_auditor(rawvfs)
        self.register = compat.file_registrar(vfs) if is_store else None
        createmode = vfs.createmode
        self.dirmode = createmode
        self.filemode = 0o666 if createmode is None else createmode & 0o666


class StoreWriter:
    """Write the files of one stream application into its transaction.

    Files come one by one (:meth:`write_file`) or, better, in batches whose
    contents are already in memory (:meth:`write_batch`): a batch is checked
    and journaled as a whole before any of its files is created.
    """

    def __init__(self, repo, tr, targets, closer, stats=None):
        """``targets`` maps a stream source id to ``(vfs, is_store)``."""
        self._tr = tr
        self._closer = closer
        self.stats = stats if stats is not None else WriterStats()
        self._fileindex = compat.fileindex(repo)
        self._targets = {
            src: _Target(vfs, is_store) for src, (vfs, is_store) in targets.items()
        }
        self._new_dirs = set()
        self._old_dirs = set()
        self._created_outside_store = []
        self._abort_registered = False

    # -- directories ------------------------------------------------------

    def _ensure_dir(self, path, mode):
        """Make sure directory ``path`` exists; True if this writer made it
        (then nothing inside it predates the operation)."""
        if path in self._new_dirs:
            return True
        if path in self._old_dirs:
            return False
        try:
            util.makedir(path, True)
        except FileExistsError:
            self._old_dirs.add(path)
            return False
        except FileNotFoundError:
            parent = os.path.dirname(path)
            if not parent or parent == path:
                raise
            self._ensure_dir(parent, mode)
            util.makedir(path, True)
        if mode is not None:
            os.chmod(path, mode)
        if not self._new_dirs:
            # the outermost transaction may be another command's (unbundle,
            # pull): its rollback comes after this operation has returned
            self._tr.addabort(b"fastio-new-dirs", self._remove_new_tree)
        self._new_dirs.add(path)
        return True

    # -- files ------------------------------------------------------------

    def _prepare(self, src, name, journal):
        """Check, register and place ``name``; return ``(path, flags, mode)``.

        The store names that must be journaled before the file is created
        are appended to ``journal``.
        """
        target = self._targets.get(src)
        if target is None:
            raise error.Abort(
                _(b"malformed stream: unknown file location %s") % stringify(src)
            )
        check_name(name)
        encoded = target.encode(name)
        target.audit(encoded)
        path = target.prefix + encoded
        if target.is_store:
            if self._fileindex is not None:
                compat.fileindex_add(self._fileindex, name, self._tr)
            target.register(name)
        subdir = encoded.rpartition(b"/")[0]
        directory = target.prefix + subdir if subdir else target.base
        new_dir = self._ensure_dir(directory, target.dirmode)
        if not new_dir and os.path.lexists(path):
            # rare: a file left by an earlier operation; back it up
            if target.is_store:
                self._tr.addbackup(name)
            return path, _REPLACE_FLAGS, target.filemode
        if target.is_store:
            # journaled before it exists: a crash leaves an entry, never a
            # stray file
            journal.append(name)
        else:
            self._track_outside_store(path)
        return path, _NEW_FLAGS, target.filemode

    def _track_outside_store(self, path):
        # cache files are not journaled by Mercurial; remove ours on abort
        if not self._abort_registered:
            self._tr.addabort(b"fastio-cache-files", self._remove_tracked)
            self._abort_registered = True
        self._created_outside_store.append(path)

    def _remove_tracked(self, tr=None):
        for path in self._created_outside_store:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _create(self, place, name, content, size):
        """Create one prepared file; ``content`` is a buffer slice, or a
        ``copy(write, size)`` function for contents not in memory."""
        path, flags, mode = place
        hold = _hold
        hold.depth += 1
        try:
            try:
                fd = os.open(path, flags, mode)
            except OSError as exc:
                raise write_error(name, exc)
            try:
                if size:
                    if content.__class__ is memoryview:
                        _write_all(fd, content)
                    else:
                        content(_writer(fd), size)
            except OSError as exc:
                os.close(fd)
                raise write_error(name, exc)
            except BaseException:
                os.close(fd)
                raise
            self._closer.close(fd, name)
        finally:
            # a signal that came meanwhile is raised now, with the
            # descriptor closed or the closer's
            hold.depth -= 1
            if hold.pending:
                hold.deliver()

    def write_file(self, src, name, size, copy):
        """Create ``name`` with ``size`` bytes given by ``copy(write, size)``."""
        journal = []
        place = self._prepare(src, name, journal)
        if journal:
            compat.journal_new_files(self._tr, journal)
        self._create(place, name, copy, size)
        self.stats.files += 1
        self.stats.bytes += size

    def write_batch(self, data, entries):
        """Create the files ``entries`` (``(src, name, offset, size)``) whose
        contents are ``data[offset:offset + size]``; all are checked and
        journaled before the first is created."""
        journal = []
        prepare = self._prepare
        places = [prepare(e[0], e[1], journal) for e in entries]
        if journal:
            compat.journal_new_files(self._tr, journal)
        view = memoryview(data)
        create = self._create
        total = 0
        for place, (__, name, offset, size) in zip(places, entries):
            create(place, name, view[offset : offset + size], size)
            total += size
        self.stats.files += len(entries)
        self.stats.bytes += total
        return total

    def remove_new_dirs(self):
        """After an abort: remove the (now empty) directories we created."""
        for path in sorted(self._new_dirs, key=len, reverse=True):
            try:
                os.rmdir(path)
            except OSError:
                pass

    def _remove_new_tree(self, tr=None):
        """Abort callback: empty and remove the directories we created.

        Abort callbacks run before the journal is played back, and the
        playback does not remove directories.  Nothing in a directory made
        under this transaction predates it, so every file in one goes (the
        playback then finds the new files already gone, which it accepts).
        Every close is done by then: the writer's closer is finished when
        the stream is, before any abort.
        """
        remove_new_trees(self._new_dirs)


def remove_new_trees(dirs):
    """Empty and remove the directories ``dirs`` (absolute paths), made
    under a transaction that is aborting: nothing in them predates it."""
    dirs = sorted(dirs, key=len, reverse=True)
    for path in dirs:
        try:
            with os.scandir(path) as it:
                names = [e.path for e in it if not e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            try:
                os.unlink(name)
            except OSError:
                pass
    for path in dirs:
        try:
            os.rmdir(path)
        except OSError:
            pass


def _write_all(fd, data):
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


def _writer(fd):
    return lambda data: _write_all(fd, data)
