"""Large system calls on revlog files while a stream or a changegroup is
generated (``hg serve`` over http, ``hg serve --stdio`` over ssh, local
clones and ``hg bundle``).

Stream clones: Mercurial streams a store file of more than 64 KiB with
``util.filechunkiter(fp, limit=size)``, 128 KiB per system call (and a
short call at each file's end).  While a stream is generated, such a file
is read in calls of ``fastio.read-buffer`` bytes instead, from the file
object Mercurial opened (the same file, the same position, the same
``size`` bytes; a file Mercurial preserved under the lock stays the one
read).  A smaller file is read by Mercurial with ``read(size)``, after
the first bytes of a revlog index: two or three calls of the file's block
size (4 KiB) when it is larger than that block.  Such a file, opened by the
vfs while a stream is generated, gets a reader with a buffer of its size:
one call.

Changegroups: a revlog's data is read in windows of 64 KiB (read two at a
time, each byte twice, on a fresh open for each window).  When a
changegroup sends most revisions of a revlog whose data is larger than
128 KiB (a clone, a first pull), the data file is opened once for all of
them and read through a buffer of ``fastio.read-buffer`` bytes: one system
call per buffer.  A pull of a few revisions reads them as stock does.

Nothing else changes: the bytes sent are those stock sends, the files are
opened by Mercurial's vfs, and a revlog already open for reading or
writing is left alone.

What each generation read in large calls is counted in the generating
thread (a server generates for several clients at once), and printed when
it ends under ``fastio.report``.
"""

import contextlib
import io
import os
import stat
import threading

from . import bundleio
from .. import compat, config, wiring

# store files at most this large are sent by one read(size) (larger ones
# through filechunkiter)
SMALL_FILE = 64 * 1024


class Generation:
    """What one stream or changegroup generation read in large calls:
    files (a stream's) or revlogs (a changegroup's), system calls and
    bytes."""

    def __init__(self, kind):
        self.kind = kind
        self.files = 0
        self.reads = 0
        self.read_bytes = 0
        # small files given a buffer of their size (a stream's)
        self.whole = 0

    def report_line(self):
        unit = b"revlogs" if self.kind == b"changegroup" else b"files"
        line = b"fastio: %s generation: large reads of %d %s: %d calls, %d bytes" % (
            self.kind,
            self.files,
            unit,
            self.reads,
            self.read_bytes,
        )
        if self.kind == b"stream":
            line += b"; %d small files read in one call" % self.whole
        return line


# what this thread is generating: read_buffer, the fastio.read-buffer of a
# stream (0: none); generation, its counts (None: none)
_scope = threading.local()


# -- stream clones -------------------------------------------------------------


def emit(orig, repo, *args, **kwargs):
    """``streamclone._emit2`` and ``_emit3`` (wrapped in ``gates``)."""
    if not compat.supported(repo.ui, b"stream generation", _stream_problems):
        return orig(repo, *args, **kwargs)
    return _stream_scope(repo.ui, orig(repo, *args, **kwargs))


def generatev1(orig, repo, *args, **kwargs):
    if not compat.supported(repo.ui, b"stream generation", _stream_problems):
        return orig(repo, *args, **kwargs)
    filecount, bytecount, chunks = orig(repo, *args, **kwargs)
    return filecount, bytecount, _stream_scope(repo.ui, chunks)


def _stream_problems():
    return compat.serving_stream_internals(wiring.originals("stream generation"))


def _changegroup_problems():
    return compat.serving_changegroup_internals(
        wiring.originals("changegroup generation")
    )


def _wire_reads():
    """Wrap the functions a stream's files are read through: only once a
    stream is generated, as every command calls them (``vfs.__call__``
    opens every file)."""
    wiring.wire("stream file reads")


def reading():
    """Whether this thread reads a stream's files (``gates.open_file``)."""
    return bool(getattr(_scope, "read_buffer", None))


def _stream_scope(ui, chunks):
    settings = config.settings(ui)
    if not settings.read_buffer and not settings.report:
        return chunks
    _wire_reads()
    return _scoped(
        chunks,
        ui if settings.report else None,
        read_buffer=settings.read_buffer,
        generation=Generation(b"stream"),
    )


def _scoped(chunks, report_ui, **scope):
    """The items of the generator ``chunks``, with the thread's ``_scope``
    set to ``scope`` while ``chunks`` runs (not while the consumer does: a
    server thread may read bundles or other files in between); the
    generation's report line to ``report_ui`` once ``chunks`` is done."""
    try:
        while True:
            outer = {name: getattr(_scope, name, None) for name in scope}
            for name, value in scope.items():
                setattr(_scope, name, value)
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            finally:
                for name, value in outer.items():
                    setattr(_scope, name, value)
            yield chunk
    finally:
        # its files and preserved copies are released now, as stock's
        # are when its generator ends
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    if report_ui is not None:
        report_ui.write_err(scope["generation"].report_line() + b"\n")


def _filechunkiter(orig, f, *args, **kwargs):
    size = getattr(_scope, "read_buffer", None)
    # the stream's calls: filechunkiter(fp, limit=size) on a file by path
    if not size or args or set(kwargs) != {"limit"} or not _plain_file(f):
        return orig(f, *args, **kwargs)
    return _large_chunks(f, kwargs["limit"], size)


def _plain_file(fh):
    """A buffered reader of a seekable file opened by path (not a pipe or
    a socket, where reading ahead would take what is not ours)."""
    if type(fh) is not io.BufferedReader or type(fh.raw) is not io.FileIO:
        return False
    try:
        return fh.seekable()
    except (OSError, ValueError):
        return False


def _large_chunks(fh, limit, size):
    """The next ``limit`` bytes of ``fh`` (fewer at its end), read from its
    raw file in calls of ``size`` bytes.  ``fh`` is then at the position it
    would be after reading them itself."""
    raw = fh.raw
    start = fh.tell()
    # where fh, with what it has buffered, believes its raw file to be
    resume = raw.tell()
    remaining = limit
    counts = _generation(b"stream")
    counts.files += 1
    try:
        raw.seek(start)
        while remaining:
            data = raw.read(min(size, remaining))
            if not data:
                break
            counts.reads += 1
            counts.read_bytes += len(data)
            remaining -= len(data)
            yield data
    finally:
        try:
            raw.seek(resume)
            fh.seek(start + limit - remaining)
        except (OSError, ValueError):
            # closed under us: nothing reads it any more
            pass


def _open(orig, self, path, *args, **kwargs):
    fp = orig(self, path, *args, **kwargs)
    if not getattr(_scope, "read_buffer", None):
        return fp
    mode = args[0] if args else kwargs.get("mode", b"r")
    if mode not in (b"r", b"rb") or len(args) > 1 or set(kwargs) - {"mode"}:
        return fp
    return _whole_file_reader(fp)


def _whole_file_reader(fp):
    """``fp`` (just opened), or when it is a small regular file that its
    buffer does not hold whole, a reader of the same file whose buffer
    does: stock reads a stream's small file with ``read(size)``, after
    reading its first bytes for revlogs (two or three system calls of the
    file's block size); its first read then gets the whole file."""
    if type(fp) is not io.BufferedReader or type(fp.raw) is not io.FileIO:
        return fp
    try:
        st = os.fstat(fp.fileno())
    except (OSError, ValueError):
        return fp
    # (Python's buffer is the file's block size: a small file within it is
    # read in one call already)
    if not stat.S_ISREG(st.st_mode) or not st.st_blksize < st.st_size <= SMALL_FILE:
        return fp
    _generation(b"stream").whole += 1
    return io.BufferedReader(fp.detach(), buffer_size=st.st_size)


def _generation(kind):
    """The counts of what this thread generates (not kept when it
    generates nothing the extension scoped)."""
    generation = getattr(_scope, "generation", None)
    return generation if generation is not None else Generation(kind)


# -- changegroups --------------------------------------------------------------


def makestream(orig, repo, *args, **kwargs):
    """``changegroup.makestream`` under ``fastio.report`` (``gates``
    checked it)."""
    if not compat.supported(repo.ui, b"changegroup generation", _changegroup_problems):
        return orig(repo, *args, **kwargs)
    chunks = orig(repo, *args, **kwargs)
    return _scoped(chunks, repo.ui, generation=Generation(b"changegroup"))


def deltagroup(repo, store, nodes, revisions):
    """The ``revisions`` that ``changegroup.deltagroup`` generates from
    most of a large revlog (``gates.reads_most``), read through a large
    buffer."""
    if not compat.supported(repo.ui, b"changegroup generation", _changegroup_problems):
        return revisions
    revlog = compat.revlog_of(store)
    if revlog is None:
        return revisions
    size = config.settings(repo.ui).read_buffer
    if not size:
        return revisions
    return _reading_large(revlog, revisions, size)


def _reading_large(revlog, revisions, size):
    with _large_read_handle(revlog, size):
        yield from revisions


@contextlib.contextmanager
def _large_read_handle(revlog, size):
    """The revlog's data file kept open, as ``revlog.reading()`` keeps it,
    and read through a buffer of ``size`` bytes."""
    segments = compat.revlog_segment_file(revlog)
    if segments is None or segments.is_open:
        # already read or written through its own handle: left as it is
        yield
        return
    with revlog.reading():
        handle = segments.reading_handle
        counts = _generation(b"changegroup")
        reader = (
            bundleio.large_reader(handle, size, counts) if handle is not None else None
        )
        if reader is None or reader is handle:
            yield
            return
        counts.files += 1
        segments.reading_handle = reader
        try:
            yield
        finally:
            segments.reading_handle = handle
            # reading() closes its own handle
            reader.detach().release()
