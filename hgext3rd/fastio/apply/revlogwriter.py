"""Open revlog files for writing with less work, and close them later.

When a changegroup is applied, every new filelog is opened for writing
through the store vfs in three steps: ``r+`` (fails), ``unlink`` (fails),
``w+``, each preceded by an existence probe, a ``makedirs`` and the path
audit; an existing filelog is opened once to count its links and once more to
write.  Then the handle is closed synchronously, which is where NTFS and NFS
spend their time.  A :class:`RevlogOpener`, active on one store vfs for the
duration of one changegroup application:

- answers for a file it knows to be missing (its directory is one it made,
  or its read just failed) without trying to open it: the revlog of a new
  file reads its index and opens it ``r+`` before it creates it
  (``known_absent``, asked by the changegroup wiring);
- creates a new file with one open that refuses an existing file
  (``writer.newfile``: that proves it did not exist, which is all stock's
  ``unlink`` is for), making its directories only when that open says they
  are missing;
- opens an existing file once and reads its link count from that descriptor
  (a hardlinked file still goes through stock's copy-on-write);
- hands every write handle to a :class:`~.filewriter.FileWriter` when the
  revlog closes it: buffered data is flushed first, on the writing thread, so
  the content is complete and a write error surfaces where stock raises it;
  only the descriptor's close is deferred;
- never lets a file be opened, renamed or removed while a deferred close of
  it may be pending: such a call first waits for pending closes;
- closes every write handle still open when the application ends, before
  the transaction closes or rolls back (a signal may leave one open: see
  ``RevlogOpener._close_write_handles``).

Everything else goes to Mercurial's own ``vfs.__call__``: reads, atomic temp
files, files whose stat ambiguity is checked at close (changelog, manifest),
and every platform where ``os.open`` is not ``util.posixfile`` (Windows).
The path audit, the store encoding (done by the store vfs above this one) and
the file mode are those of stock.
"""

import contextlib
import errno
import io
import os
import posixpath
import time
import weakref

from mercurial import pycompat, util, vfs as vfsmod

from .. import compat
from ..writer import filewriter, newfile, signals, writeinline

# signals wait while a descriptor is between its open and the file writer
_hold = signals.hold

_perf_ns = time.perf_counter_ns
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_EXISTING = os.O_RDWR | _O_CLOEXEC

# the modes revlogs write with, after stock's appending of "b"
_APPEND = 1
_CREATE = 2
_FAST_MODES = {
    b"r+b": _APPEND,
    b"rb+": _APPEND,
    b"w+b": _CREATE,
    b"wb+": _CREATE,
}
_WRITE_CHARS = frozenset(b"wa+x")

# the keyword arguments the fast open honours; any other (atomictemp,
# checkambig, backgroundclose, no audit, no parent dirs) goes to stock
_NEUTRAL_KWARGS = {
    "notindexed": None,
    "buffering": -1,
    "auditpath": True,
    "makeparentdirs": True,
    "checkambig": False,
}


def _finalize(self):
    """``__del__`` of the write handles: one a revlog drops without a close
    (a revlog that splits drops its new index's or data file's) is closed
    here, as io's own finalizer closes a real file; a signal handled
    meanwhile waits (Python ignores what a finalizer raises)."""
    hold = _hold
    hold.depth += 1
    try:
        # (inside the try: one whose __init__ failed has no file to ask)
        if not self.closed:
            self.close()
    except Exception:
        pass
    finally:
        hold.depth -= 1


# (a signal handled as it starts waits too, see signals)
_hold.finalizers.add(_finalize.__code__)


def _under(path, made):
    """True if a directory above ``path`` is in ``made`` (directories an
    opener made: anything in them that it did not make is not there)."""
    parent = posixpath.dirname(path)
    while parent:
        if parent in made:
            return True
        parent = posixpath.dirname(parent)
    return False


class _HandOffFile(io.BufferedRandom):
    """A buffered file whose ``close`` flushes, then gives the descriptor
    away instead of closing it."""

    def close(self):
        if self.closed:
            return
        # revlogs append: the end position is the size (for the report)
        written = self.tell() - self._fastio_start
        hold = _hold
        hold.depth += 1
        try:
            try:
                # flushes (a failing write raises here), closes the FileIO;
                # the FileIO does not own the descriptor
                super().close()
            finally:
                self._fastio_sink(self._fastio_fd, self._fastio_key, written)
        finally:
            hold.depth -= 1
            if hold.pending:
                hold.deliver()

    __del__ = _finalize


class _Followed:
    """Objects followed by weak references without callbacks: a callback
    (or a ``__del__``) is Python code run wherever the object happens to be
    freed, and a signal handled there would be lost (Python ignores what a
    finalizer raises)."""

    __slots__ = ("_refs", "_prune_at")

    def __init__(self):
        self._refs = []
        self._prune_at = 1024

    def add(self, obj):
        refs = self._refs
        refs.append(weakref.ref(obj))
        if len(refs) >= self._prune_at:
            refs[:] = [ref for ref in refs if ref() is not None]
            self._prune_at = max(1024, 2 * len(refs))

    def alive(self):
        return [obj for obj in (ref() for ref in self._refs) if obj is not None]

    def clear(self):
        self._refs = []


class _NewFile:
    """A revlog file this apply creates, kept in memory while the revlog
    writes (and reads back) it, then given whole to the file writer, which
    creates, writes and closes it off the applying thread.  One that grows
    past ``_SPILL_BYTES``, or whose descriptor is asked for, is created
    here and written as it goes (a :class:`_HandOffFile`)."""

    def __init__(self, opener, key, path):
        self._opener = opener
        self._key = key
        self.name = path
        self._fh = io.BytesIO()
        self._spilled = False

    def write(self, data):
        written = self._fh.write(data)
        if not self._spilled and self._fh.tell() > _SPILL_BYTES:
            self._spill()
        return written

    def fileno(self):
        if not self._spilled:
            self._spill()
        return self._fh.fileno()

    def _spill(self):
        position = self._fh.tell()
        content = self._fh.getvalue()
        self._fh = self._opener._create_now(self._key, self.name, content)
        self._fh.seek(position)
        self._spilled = True

    def close(self):
        fh = self._fh
        if fh.closed:
            return
        if self._spilled:
            fh.close()
        else:
            # (a signal raised before the BytesIO is closed leaves it to the
            # opener's detach)
            self._opener._hand_off_new(self._key, self.name, fh.getvalue())
            fh.close()

    def discard(self):
        """Forget it, unwritten (its operation failed)."""
        if not self._spilled:
            self._fh.close()

    __del__ = _finalize

    def tell(self):
        return self._fh.tell()

    def seek(self, offset, whence=io.SEEK_SET):
        return self._fh.seek(offset, whence)

    def read(self, size=-1):
        return self._fh.read(size)

    def flush(self):
        return self._fh.flush()

    @property
    def closed(self):
        return self._fh.closed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.close()

    def __getattr__(self, name):
        # read, seek, tell, flush, truncate, ...: the file's as it is now
        return getattr(self._fh, name)


class _HandOffProxy(vfsmod.closewrapbase):
    """The same for a file object opened by stock."""

    def __init__(self, fh, sink, key):
        super().__init__(fh)
        object.__setattr__(self, "_sink", sink)
        object.__setattr__(self, "_key", key)

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.close()

    def close(self):
        fh = compat.wrapped_file(self)
        if fh.closed:
            return
        hold = _hold
        hold.depth += 1
        try:
            try:
                fh.flush()
            except BaseException:
                with contextlib.suppress(Exception):
                    fh.close()
                raise
            self._sink(fh, self._key)
        finally:
            hold.depth -= 1
            if hold.pending:
                hold.deliver()


# a new revlog file larger than this is created on the applying thread and
# written as it goes, not kept in memory until it is closed
_SPILL_BYTES = 1 << 20

# files a revlog journals when it creates them (not the changelog's pending
# ``.a`` file, which is a temporary file of the transaction)
_REVLOG_SUFFIXES = (b".i", b".d")


class RevlogOpener:
    """Serve the opens of one raw store vfs while it is active."""

    # os.open and io.FileIO are what util.posixfile is on POSIX only
    fast_open = not pycompat.iswindows

    def __init__(
        self, vfs, writer, stats=None, encode=None, transaction=None, new_paths=None
    ):
        self.vfs = vfs
        self._check_path = compat.path_checker(vfs)
        # the mode stock's vfs gives a new file, for newfile and the file
        # writer (-1: the umask's)
        mode = compat.forced_file_mode(vfs)
        self._create_mode = -1 if mode is None else mode
        self._encode = encode
        # journals a new revlog file before it exists (see _journal_first)
        self._transaction = transaction
        # the store name of the file the store vfs is opening now (set by
        # the wrapper of its __call__; the raw vfs sees only encoded paths)
        self.store_name = None
        self._file_writer = writer
        self._stats = stats
        # keys handed to background threads since the last wait for them
        self._pending = set()
        self._written = set()
        # names whose read just failed (FileNotFoundError) and that nothing
        # has created since, as far as this opener can tell
        self._absent = set()
        # directories this opener made, with the files it created in them:
        # any other file in them does not exist
        self._new_dirs = {}
        # top-level directories known to be missing (revlogs probe data-s/
        # for an interrupted split of every file they open)
        self._missing_tops = {}
        # records the directories made here before they exist (removed,
        # with what is in them, if the transaction aborts or is recovered)
        self._new_paths = new_paths
        # directories known to exist (or to be the file writer's to make)
        self._dirs_known = set()
        # new files kept in memory (those not closed yet matter)
        self._in_memory = _Followed()
        # the buffered write handles given out (those still open are
        # closed at the end: see detach)
        self._write_handles = _Followed()
        self._dir_mode = -1 if vfs.createmode is None else vfs.createmode

    # -- opening ------------------------------------------------------------

    def open(self, orig, path, mode, kwargs):
        vfs = self.vfs
        if self._pending and path in self._pending:
            self.wait_pending()
        if b"b" not in mode:
            mode += b"b"
        kind = _FAST_MODES.get(mode)
        if kind is not None and self.fast_open and self._neutral(kwargs):
            if kind == _APPEND and path in self._absent:
                # a revlog opens a file it just failed to read for appending
                # first, then creates it: spare the second failure
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
            # no signal raised while a descriptor is in hand (see signals;
            # a new file's create holds them too, nested)
            hold = _hold
            fh = None
            hold.depth += 1
            try:
                fh = self._open_fast(path, mode, kind, kwargs)
            finally:
                hold.depth -= 1
                if hold.pending:
                    # close it rather than leave it to the traceback
                    if fh is not None:
                        fh.close()
                    hold.deliver()
            if fh is not None:
                return fh
        if not _WRITE_CHARS.intersection(mode):
            if self._absent_in_new_dir(path):
                # the revlog of a new file tries to read it first (and then
                # to open it for appending)
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
            try:
                return orig(vfs, path, mode, **kwargs)
            except FileNotFoundError:
                self._absent.add(path)
                raise
        if mode[:1] == b"w":
            self._journal_first(path)
        # stock may create files in ways this does not follow
        self._forget_absence()
        try:
            fh = orig(vfs, path, mode, **kwargs)
        except FileNotFoundError:
            if mode[:1] == b"r":
                # r+ creates nothing: the file is missing
                self._absent.add(path)
            raise
        self._count_file(path)
        if kwargs.get("atomictemp") or kwargs.get("backgroundclose"):
            # closed by their own rules (renamed into place, or by the
            # closer of their block)
            return fh
        if not kwargs.get("checkambig"):
            fh = _HandOffProxy(fh, self._hand_off, path)
        self._write_handles.add(fh)
        return fh

    def _journal_first(self, path):
        """Journal a revlog file the revlog is about to create, before it
        exists.  Stock creates it, then journals it: a kill in between
        leaves a file ``hg recover`` does not know of.  Only a file known
        to be absent (its read just failed, or its directory is ours) is
        journaled at offset 0, as the revlog will journal it anyway."""
        name = self.store_name
        tr = self._transaction
        if name is None or tr is None or not name.endswith(_REVLOG_SUFFIXES):
            return
        if path in self._absent or self._in_new_dir(path):
            tr.add(name, 0)

    def known_absent(self, name):
        """True if the store file ``name`` is known not to exist: its read
        failed and nothing has created it since, or it is in a directory
        this opener made and was not created there."""
        path = name if self._encode is None else self._encode(name)
        return path in self._absent or self._absent_in_new_dir(path)

    def _absent_in_new_dir(self, path):
        # a file in a directory this opener made, not created there: missing
        if self._new_dirs and self._in_new_dir(path):
            self._absent.add(path)
            return True
        return False

    def _in_new_dir(self, path):
        if not self._new_dirs:
            # (a pull into existing directories: no walk per new revlog)
            return False
        directory = posixpath.dirname(path)
        created = self._new_dirs.get(directory)
        if created is not None:
            return path not in created
        # a directory this opener did not make, under one it made: not
        # there either (the first file of each new directory is spared a
        # lookup)
        return _under(directory, self._new_dirs)

    @staticmethod
    def _neutral(kwargs):
        for key, value in kwargs.items():
            if key not in _NEUTRAL_KWARGS:
                return False
            default = _NEUTRAL_KWARGS[key]
            if default is not None and value != default:
                return False
        return True

    def _open_fast(self, path, mode, kind, kwargs):
        """The descriptor-level open, or None to let stock do it."""
        vfs = self.vfs
        self._check_path(path, mode)
        f = vfs.join(path)
        if kind == _CREATE:
            self._journal_first(path)
            known_absent = path in self._absent or self._in_new_dir(path)
            self._absent.discard(path)
            if self._missing_tops:
                self._missing_tops.pop(path.partition(b"/")[0], None)
            writer = self._file_writer
            if known_absent and writer is not None and writer.background:
                # files are written in the background: this one too
                return self._new_in_memory(path, f)
            create = newfile.create
            flags = newfile.FLAGS_READ_WRITE
            file_mode = self._create_mode
            reldir = posixpath.dirname(path)
            try:
                if (
                    known_absent
                    and reldir not in self._new_dirs
                    and _under(reldir, self._new_dirs)
                ):
                    # its directory is not there either (under one this
                    # opener made): made first, no create doomed to fail
                    raise FileNotFoundError
                fh = create(
                    f,
                    flags,
                    file_mode,
                    self._new_handle,
                    None,
                    (f, path, writer, _perf_ns()),
                )
            except FileExistsError:
                # stock unlinks it first (breaking hardlinks): let it
                return None
            except FileNotFoundError:
                dirname = os.path.dirname(f)
                dirs = self._dirs_to_make(dirname, reldir)
                if dirs:
                    writeinline.make_dirs(dirs)
                else:
                    # a directory thought to be there is not: as stock
                    self._note_new_dirs(dirname)
                    util.makedirs(dirname, vfs.createmode, kwargs.get("notindexed"))
                fh = create(
                    f, flags, file_mode, self._new_handle, None, (f, path, None, 0)
                )
                self._new_dirs[reldir] = {path}
            else:
                created = self._new_dirs.get(posixpath.dirname(path))
                if created is not None:
                    created.add(path)
        else:
            # a missing file raises FileNotFoundError, as stock does
            try:
                fd = os.open(f, _O_EXISTING)
            except FileNotFoundError:
                self._absent.add(path)
                raise
            # a hardlinked file must be copied before it is written, and
            # stock decides once per vfs whether link counts can be trusted
            st = os.fstat(fd)
            if st.st_nlink > 1 or not compat.trusts_link_count(vfs):
                os.close(fd)
                return None
            fh = self._handle(fd, f, path, st.st_size)
        self._count_file(path)
        return fh

    def _new_handle(self, fd, new):
        """The hand-over of a new file created by :meth:`_open_fast` (it
        owns ``fd``): its handle.  ``new`` is ``(f, key, writer, start)``:
        the create timed from ``start`` for auto mode, which weighs creates
        with closes (``writer`` None: not timed)."""
        f, key, writer, start = new
        if writer is not None:
            writer.note_create(_perf_ns() - start)
        return self._handle(fd, f, key, 0)

    def _spilled_handle(self, fd, spilled):
        """The hand-over of :meth:`_create_now` (it owns ``fd``): its
        handle, ``spilled`` (``(f, key, content)``) written."""
        f, key, content = spilled
        return self._handle(fd, f, key, 0, content)

    def _handle(self, fd, f, key, start, content=b""):
        """A buffered handle on descriptor ``fd`` (file ``f``, ``key`` here,
        ``start`` bytes long) that gives ``fd`` to the file writer when it
        closes, ``content`` written; ``fd`` is closed if this fails."""
        raw = None
        try:
            raw = io.FileIO(fd, "r+", closefd=False)
            raw.name = f
            fh = _HandOffFile(raw)
            fh._fastio_sink = self._hand_off
            fh._fastio_fd = fd
            fh._fastio_key = key
            fh._fastio_start = start
            if content:
                fh.write(content)
        except BaseException:
            # (the handle is closed with it: it hands nothing off)
            if raw is not None:
                raw.close()
            os.close(fd)
            raise
        self._write_handles.add(fh)
        return fh

    def _new_in_memory(self, path, f):
        """A file known not to exist: written in memory, made by the file
        writer when the revlog closes it (its directories now: the
        writer's files wait for them)."""
        dirs = self._dirs_to_make(os.path.dirname(f), posixpath.dirname(path))
        if dirs:
            self._file_writer.write_new(dirs, [])
        created = self._new_dirs.get(posixpath.dirname(path))
        if created is not None:
            created.add(path)
        self._count_file(path)
        fh = _NewFile(self, path, f)
        self._in_memory.add(fh)
        return fh

    def _dirs_to_make(self, fulldir, reldir):
        """The levels of directory ``fulldir`` (``reldir`` in this vfs)
        that do not exist, outermost first, with the mode to give them;
        recorded before anything makes them."""
        known = self._dirs_known
        made = self._new_dirs
        missing = []
        while fulldir not in known:
            # under a directory this opener made, nothing else is: no
            # lookup (a round trip on a network filesystem)
            if not _under(reldir, made) and os.path.isdir(fulldir):
                known.add(fulldir)
                break
            missing.append((fulldir, reldir))
            parent = os.path.dirname(fulldir)
            if parent == fulldir:
                break
            fulldir, reldir = parent, posixpath.dirname(reldir)
        if not missing:
            return []
        missing.reverse()
        if self._new_paths is not None:
            self._new_paths.record(dirs=[full for full, __ in missing])
        mode = self._dir_mode
        for full, rel in missing:
            known.add(full)
            # nothing in it but what this opener creates there
            self._new_dirs[rel] = set()
        return [(full, mode) for full, __ in missing]

    def _create_now(self, key, f, content):
        """Create new file ``f`` here with ``content`` (a file kept in
        memory that grew too large); the handle writes on from there."""
        # its directory may be the file writer's to make: wait for it
        if self._file_writer is not None:
            self._file_writer.drain()
        return newfile.create(
            f,
            newfile.FLAGS_READ_WRITE,
            self._create_mode,
            self._spilled_handle,
            None,
            (f, key, content),
        )

    def _hand_off_new(self, key, f, content):
        """A file kept in memory is complete: to the file writer."""
        writer = self._file_writer
        new = (f, content, self._create_mode, key, os.path.dirname(f))
        if writer is None:
            # closed after the operation ended
            with filewriter.FileWriter(mode=filewriter.MODE_NEVER) as inline:
                inline.write_new([], [new])
            return
        writer.write_new([], [new])
        if self._stats is not None:
            self._stats.bytes += len(content)
        if writer.background:
            self._pending.add(key)

    def _note_new_dirs(self, dirname):
        """Record the levels of ``dirname`` that do not exist yet (about to
        be made): the playback of an aborted transaction removes the files
        it journaled, not the directories made for them."""
        missing = []
        while dirname and not os.path.lexists(dirname):
            missing.append(dirname)
            parent = os.path.dirname(dirname)
            if parent == dirname:
                break
            dirname = parent
        if missing and self._new_paths is not None:
            missing.reverse()
            self._new_paths.record(dirs=missing)

    def _count_file(self, path):
        if self._stats is not None and path not in self._written:
            self._written.add(path)
            self._stats.files += 1

    # -- closing ------------------------------------------------------------

    def _hand_off(self, handle, key, written=0):
        writer = self._file_writer
        if writer is None:
            # closed after the operation ended
            filewriter.close_now(handle, key)
            return
        writer.close(handle, key)
        if self._stats is not None:
            self._stats.bytes += max(0, written)
        if writer.background:
            self._pending.add(key)

    def detach(self, complete=True):
        """The operation is over: files kept in memory that the revlogs
        left open (a revlog that splits drops its data file's handle) go to
        the file writer now, before it finishes, or nowhere when the
        operation failed (the transaction aborts); the write handles still
        open are closed (see :meth:`_close_write_handles`); close whatever
        comes later at once."""
        try:
            for fh in self._in_memory.alive():
                if complete:
                    fh.close()
                else:
                    fh.discard()
            self._in_memory.clear()
            self._close_write_handles(complete)
        finally:
            self._file_writer = None
            self._pending.clear()

    def _close_write_handles(self, complete):
        """Close the buffered write handles still open, before the
        transaction closes or rolls back.

        A handle's ``close`` is Python code: a signal handler that raises
        as it starts (Python runs handlers between any two bytecodes)
        leaves the handle open, its buffer unwritten, in a frame of the
        traceback.  Freed after the rollback truncated the file, it would
        flush the buffer there and put back what the rollback took away.
        (Stock's plain handles close in C, where no handler runs; its
        ambiguity-checking wrapper, the manifest's, is Python too.)  Flushed
        now, the data lands before the truncation.  On failure, errors are
        dropped (the transaction aborts anyway); on success, they fail the
        operation, as a failing close does in the revlog."""
        failure = None
        for fh in self._write_handles.alive():
            if fh.closed:
                # (stock's wrapper would check the ambiguity again)
                continue
            try:
                fh.close()
            except BaseException as exc:
                if failure is None:
                    failure = exc
        self._write_handles.clear()
        if failure is not None and (complete or not isinstance(failure, Exception)):
            raise failure

    def in_missing_tree(self, path):
        """True if ``path`` (of the store vfs above) is known not to exist
        because its top-level directory does not."""
        if self._encode is None:
            return False
        top, sep, __ = self._encode(path).partition(b"/")
        if not sep:
            return False
        missing = self._missing_tops.get(top)
        if missing is None:
            missing = not os.path.lexists(self.vfs.join(top))
            self._missing_tops[top] = missing
        return missing

    def _forget_absence(self):
        self._absent.clear()
        self._new_dirs.clear()
        self._missing_tops.clear()

    def forget(self):
        """A file was renamed or removed: wait for pending closes, and trust
        no earlier absence."""
        self._forget_absence()
        self.wait_pending()

    def settle(self):
        """Wait until everything handed to the file writer so far is
        created, written and closed (before another process reads the
        store: a hook, pending data)."""
        self._pending.clear()
        if self._file_writer is not None:
            self._file_writer.drain()

    def wait_pending(self):
        """Wait for every deferred close so far (before a file is reopened,
        renamed or removed: Windows refuses it while a handle is open)."""
        if self._pending:
            self._pending.clear()
            if self._file_writer is not None:
                self._file_writer.drain()
