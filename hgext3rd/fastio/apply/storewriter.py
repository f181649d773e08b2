"""Create thousands of store files quickly, and every one of them safely.

Opening a file through a vfs costs an ``unlink`` attempt, a ``makedirs`` per
file, a buffered file object and a synchronous close.  For a file this
operation creates none of that is needed, so a :class:`StoreWriter`:

- remembers the directories it has seen, and which of them it created: a
  file in a directory created by this operation cannot exist yet, so it is
  created (by ``writer.newfile``, which refuses an existing file) with no
  existence check;
- writes contents with ``os.write`` straight from the bundle's buffer;
- hands new files (and the descriptor of a large one) to a
  :class:`~.filewriter.FileWriter`.

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

from .. import compat
from ..txn import journal as txn_journal, newpaths, storenames
from ..diag import report
from ..writer import newfile

# a file read as it comes is gathered up to this size, then written like
# the files of a batch (larger ones are made here as they come)
_GATHERED = 1 << 20


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

# the names the extension keeps files under, now or before, at the top of
# the store or the cache (the list of new paths, the probe cache): a
# stream never writes them (stock never sends them)
_RESERVED_NAME = re.compile(rb"\Afastio-[^/]*\Z")

# every name _BAD_NAME or _RESERVED_NAME refuses matches this (cheaper)
# pattern too
_SUSPICIOUS = re.compile(rb"[\0\n\r\\:]|/[./]|^[./]|/\Z|\Afastio-[^/]*\Z")


def check_name(name):
    """Refuse names that are not plain relative store paths, and the
    names of the extension's own files.

    The store encoding would turn ``..`` or ``.hg`` into harmless names, but
    a bundle carrying them is hostile or corrupt, and is refused outright.
    """
    # one quick scan first: this runs for every file of a clone
    if not name or _SUSPICIOUS.search(name) is not None:
        if not name:
            raise bad_name(name, _(b"empty name"))
        if _BAD_NAME.search(name) is not None:
            raise bad_name(name, _(b"not a relative store path"))
        if _RESERVED_NAME.match(name) is not None:
            raise bad_name(name, _(b"a name the fastio extension keeps"))


def _create_failed(exc, large):
    return write_error(large[0].name, exc)


def write_error(name, exc):
    reason = pycompat.bytestr(exc.strerror or str(exc))
    return error.Abort(_(b"error writing %s: %s") % (stringify(name), reason))


class _Target:
    """One destination vfs of a stream (the store, or the cache)."""

    def __init__(self, vfs, is_store, plainvfs):
        self.vfs = vfs
        self.is_store = is_store
        # store encoding then the raw vfs: what ``vfs.join`` does, in two
        # steps, so that the auditor sees the relative encoded path
        self.encode, rawvfs = storenames.encoder(vfs)
        # rawvfs.join(p) is prefix + p for the relative encoded paths here
        self.prefix = rawvfs.join(b"x")[:-1]
        self.base = rawvfs.join(None)
        self.audit = compat.path_auditor(rawvfs)
        self.register = compat.file_registrar(vfs) if is_store else None
        # a replaced cache file is backed up by its path in ``.hg`` (the
        # transaction's "plain" location); not a cache elsewhere (a share's)
        self.backup_location = self.backup_root = None
        root = plainvfs.join(b"x")[:-1]
        if not is_store and self.prefix.startswith(root):
            self.backup_location, self.backup_root = b"plain", root
        createmode = rawvfs.createmode
        self.dirmode = -1 if createmode is None else createmode
        # a group-shared store: the mode its vfs gives the files it creates
        # (os.open's mode goes through the umask, which may drop group write)
        mode = compat.forced_file_mode(rawvfs)
        self.file_mode = -1 if mode is None else mode


class _Place:
    """Where one file of the stream goes, as checked and decided."""

    __slots__ = ("target", "name", "path", "directory")

    def __init__(self, target, name, path, directory):
        self.target = target
        self.name = name
        self.path = path
        self.directory = directory


class StoreWriter:
    """Write the files of one stream application into its transaction.

    Files come one by one (:meth:`write_file`) or, better, in batches whose
    contents are already in memory (:meth:`write_batch`): a batch is checked
    and journaled as a whole before any of its files is created.
    """

    def __init__(self, repo, tr, targets, file_writer, stats=None):
        """``targets`` maps a stream source id to ``(vfs, is_store)``."""
        self._tr = tr
        self._file_writer = file_writer
        self.stats = stats if stats is not None else report.WriterStats()
        self._fileindex = compat.fileindex(repo)
        self._targets = {
            src: _Target(vfs, is_store, repo.vfs)
            for src, (vfs, is_store) in targets.items()
        }
        self._new_paths = newpaths.NewPaths.of(repo, tr)
        # directory -> True when this writer made it (nothing in it
        # predates the operation), False when it was there
        self._dirs = {}

    # -- placing files ------------------------------------------------------

    def _place(self, src, name):
        """Check, encode, audit and register ``name``."""
        target = self._targets.get(src)
        if target is None:
            raise error.Abort(
                _(b"malformed stream: unknown file location %s") % stringify(src)
            )
        check_name(name)
        encoded = target.encode(name)
        target.audit(encoded)
        if target.is_store:
            if self._fileindex is not None:
                compat.fileindex_add(self._fileindex, name, self._tr)
            target.register(name)
        subdir = encoded.rpartition(b"/")[0]
        directory = target.prefix + subdir if subdir else target.base
        return _Place(target, name, target.prefix + encoded, directory)

    def _prepare(self, places):
        """Record the new directories of ``places`` and journal their
        files, each on disk before what it covers is created; return the
        directories to make (``(path, mode)``, outermost first)."""
        dirs = self._new_dirs(places)
        journal = []
        outside = []
        for place in places:
            if not self._dirs[place.directory] and os.path.lexists(place.path):
                # rare: a file left by an earlier operation
                self._replace(place)
            elif place.target.is_store:
                journal.append(place.name)
            else:
                outside.append(place.path)
        if journal:
            txn_journal.new_files(self._tr, journal)
        if outside:
            self._new_paths.record(files=outside)
        return dirs

    def _new_dirs(self, places):
        known = self._dirs
        missing = {}
        for place in places:
            directory = place.directory
            if directory in known or directory in missing:
                continue
            # up to the first level that exists (or that this writer made)
            while directory not in known and directory not in missing:
                parent = os.path.dirname(directory)
                # under a directory this writer made (or is making), nothing
                # else is: no lookup, a round trip on a network filesystem
                if not self._under_new(parent, missing) and os.path.isdir(directory):
                    known[directory] = False
                    break
                missing[directory] = place.target.dirmode
                if parent == directory:
                    break
                directory = parent
        if not missing:
            return []
        # outermost first: a parent before its children
        order = sorted(missing, key=len)
        self._new_paths.record(dirs=order)
        for directory in order:
            known[directory] = True
        return [(directory, missing[directory]) for directory in order]

    def _under_new(self, directory, missing):
        """True if ``directory`` or one above it is new: made by this
        writer, or in ``missing`` (about to be)."""
        known = self._dirs
        while True:
            made = known.get(directory)
            if made is not None:
                return made
            if directory in missing:
                return True
            parent = os.path.dirname(directory)
            if parent == directory:
                return False
            directory = parent

    def _replace(self, place):
        """Back the existing file up, then remove it: Mercurial's backup is
        a hardlink where it can be, so the new content must go to a new
        inode (a local clone's hardlinks are kept apart the same way)."""
        target = place.target
        if target.is_store:
            self._tr.addbackup(place.name)
        elif target.backup_location is not None:
            relative = util.pconvert(place.path[len(target.backup_root) :])
            self._tr.addbackup(relative, location=target.backup_location)
        else:
            self._new_paths.record(files=[place.path])
        try:
            os.unlink(place.path)
        except OSError as exc:
            raise write_error(place.name, exc)

    # -- writing ------------------------------------------------------------

    def write_file(self, src, name, size, copy):
        """Create ``name`` with ``size`` bytes given by ``copy(write, size)``
        (a file read as it comes: a large one, or any under ``--debug``)."""
        place = self._place(src, name)
        dirs = self._prepare([place])
        if size <= _GATHERED:
            # small enough to go to the file writer whole, like a batch's
            content = bytearray()
            copy(content.extend, size)
            self._file_writer.write_new(dirs, [self._new_file(place, content)])
        else:
            self._write_large(place, dirs, size, copy)
        self.stats.files += 1
        self.stats.bytes += size

    def _write_large(self, place, dirs, size, copy):
        # made here, written as it comes: its directory must be there first
        self._file_writer.write_new(dirs, [])
        self._file_writer.drain()
        newfile.create(
            place.path,
            newfile.FLAGS,
            place.target.file_mode,
            self._copy_large,
            _create_failed,
            (place, size, copy),
        )

    def _copy_large(self, fd, large):
        """The hand-over of a large file (it owns ``fd``)."""
        place, size, copy = large
        try:
            # not held while the copy waits for the source (a stalled
            # server): a signal raises as it comes, the descriptor is
            # closed below
            newfile.unheld(copy, _writer(fd), size)
        except OSError as exc:
            os.close(fd)
            raise write_error(place.name, exc)
        except BaseException:
            os.close(fd)
            raise
        # a signal that came meanwhile is raised once the file writer has it
        self._file_writer.close(fd, place.name)

    @staticmethod
    def _new_file(place, content):
        """What the file writer takes for one new file."""
        return (
            place.path,
            content,
            place.target.file_mode,
            place.name,
            place.directory,
        )

    def write_batch(self, data, entries):
        """Create the files ``entries`` (``(src, name, offset, size)``) whose
        contents are ``data[offset:offset + size]``; all are checked and
        journaled before the first is created."""
        place_file = self._place
        places = [place_file(e[0], e[1]) for e in entries]
        dirs = self._prepare(places)
        view = memoryview(data)
        new_file = self._new_file
        files = []
        total = 0
        for place, (__, __, offset, size) in zip(places, entries):
            files.append(new_file(place, view[offset : offset + size]))
            total += size
        self._file_writer.write_new(dirs, files)
        self.stats.files += len(entries)
        self.stats.bytes += total
        return total


def _write_all(fd, data):
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


def _writer(fd):
    return lambda data: _write_all(fd, data)
