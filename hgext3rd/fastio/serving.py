"""Large system calls on revlog files while a stream or a changegroup is
generated (``hg serve`` over http, ``hg serve --stdio`` over ssh, local
clones and ``hg bundle``).

Stream clones: Mercurial streams a store file of more than 64 KiB with
``util.filechunkiter(fp, limit=size)``, 128 KiB per system call (and a
short call at each file's end).  While a stream is generated, such a file
is read in calls of ``fastio.read-buffer`` bytes instead, from the file
object Mercurial opened (the same file, the same position, the same
``size`` bytes; a file Mercurial preserved under the lock stays the one
read).  A smaller file is read by Mercurial in one or two calls and left
so.

Changegroups: a revlog's data is read in windows of 64 KiB (read two at a
time, each byte twice, on a fresh open for each window).  When a
changegroup sends most revisions of a revlog whose data is larger than
128 KiB (a clone, a first pull), the data file is opened once for all of
them and read through a buffer of ``fastio.read-buffer`` bytes: one system
call per buffer.  A pull of a few revisions reads them as stock does.

Nothing else changes: the bytes sent are those stock sends, the files are
opened by Mercurial's vfs, and a revlog already open for reading or
writing is left alone.
"""

import contextlib
import io
import threading

from mercurial import changegroup, extensions, streamclone, util

from . import bundleio, compat, config

# data files at most this large are read in a call or two by stock
LARGE_REVLOG = 128 * 1024

served = bundleio.Counts()

# the fastio.read-buffer of the stream this thread is generating (0: none)
_scope = threading.local()


def wire_streamclone(ui):
    problems = compat.serving_stream_internals()
    if problems:
        compat.report_unsupported(ui, b"stream generation", problems)
        return
    extensions.wrapfunction(util, "filechunkiter", _filechunkiter)
    for name in ("_emit2", "_emit3"):
        if hasattr(streamclone, name):
            extensions.wrapfunction(streamclone, name, _emit)
    extensions.wrapfunction(streamclone, "generatev1", _generatev1)


def wire_changegroup(ui):
    problems = compat.serving_changegroup_internals()
    if problems:
        compat.report_unsupported(ui, b"changegroup generation", problems)
        return
    extensions.wrapfunction(changegroup, "deltagroup", _deltagroup)


# -- stream clones -------------------------------------------------------------


def _emit(orig, repo, *args, **kwargs):
    size = config.settings(repo.ui).read_buffer
    chunks = orig(repo, *args, **kwargs)
    return _scoped(chunks, size) if size else chunks


def _generatev1(orig, repo, *args, **kwargs):
    size = config.settings(repo.ui).read_buffer
    filecount, bytecount, chunks = orig(repo, *args, **kwargs)
    if size:
        chunks = _scoped(chunks, size)
    return filecount, bytecount, chunks


def _scoped(chunks, size):
    """The items of the generator ``chunks``, with the thread in the scope
    of a stream generation while ``chunks`` runs (not while the consumer
    does: a server thread may read bundles or other files in between)."""
    try:
        while True:
            outer = getattr(_scope, "read_buffer", 0)
            _scope.read_buffer = size
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            finally:
                _scope.read_buffer = outer
            yield chunk
    finally:
        # its files and preserved copies are released now, as stock's
        # are when its generator ends
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _filechunkiter(orig, f, *args, **kwargs):
    size = getattr(_scope, "read_buffer", 0)
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
    try:
        raw.seek(start)
        while remaining:
            data = raw.read(min(size, remaining))
            if not data:
                break
            served.reads += 1
            served.read_bytes += len(data)
            remaining -= len(data)
            yield data
    finally:
        try:
            raw.seek(resume)
            fh.seek(start + limit - remaining)
        except (OSError, ValueError):
            # closed under us: nothing reads it any more
            pass


# -- changegroups --------------------------------------------------------------


def _deltagroup(orig, repo, store, nodes, *args, **kwargs):
    revisions = orig(repo, store, nodes, *args, **kwargs)
    revlog = compat.delta_store_revlog(store)
    if revlog is None or not _reads_most(revlog, nodes):
        return revisions
    size = config.settings(repo.ui).read_buffer
    if not size:
        return revisions
    return _reading_large(revlog, revisions, size)


def _reads_most(revlog, nodes):
    """Whether emitting ``nodes`` reads most of a large data file (a
    clone, a first pull), not a few revisions of it."""
    count = len(revlog)
    if not count or len(nodes) * 2 < count:
        return False
    try:
        return revlog.end(count - 1) > LARGE_REVLOG
    except (IndexError, LookupError):
        return False


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
        reader = (
            bundleio.large_reader(handle, size, served) if handle is not None else None
        )
        if reader is None or reader is handle:
            yield
            return
        segments.reading_handle = reader
        try:
            yield
        finally:
            segments.reading_handle = handle
            # reading() closes its own handle
            reader.detach().release()
