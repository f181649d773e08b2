"""Large system calls on bundle files, read and written.

Reading: every bundle Mercurial reads goes through ``exchange.readbundle``
(``hg unbundle``, ``hg debugapplystreamclonebundle``, ``hg pull`` and
``hg incoming`` from a bundle file, strip and rebase recovery, shelve).
When the file it gets is one this process opened by its path (a local
bundle, ``/dev/stdin`` redirected from a file, a temporary bundle), its
reads go through a buffer of ``fastio.read-buffer`` bytes instead of the
file's default (4 KiB on most filesystems): one system call per buffer.
Seeking (``bundlerepo``) goes through the same buffer.  A clone bundle
fetched over http (``exchange.trypullbundlefromurl``) is read the same
way through the response's own ``read``: the response holds the bundle
and nothing else, and its socket is then read in calls of up to a buffer
(http.client's reads go through its 8 KiB buffer).  A file handed over by
a descriptor (a protocol stream, a server's temporary file) is left as it
is: nothing is read ahead of what belongs to the bundle.

Writing: every bundle file Mercurial writes goes through
``changegroup.writechunks`` (``hg bundle`` of every type, stream bundles
included, ``hg debugcreatestreamclonebundle``, strip and rebase backups,
temporary bundles of ``hg incoming --bundle`` and pulls).  Its chunks are
gathered into blocks of ``fastio.write-buffer`` bytes before they reach
the file: one system call per block, and the same bytes in the same order.
"""

import io
import os
import stat
import sys
import threading

from .. import config
from ..wiring import is_lazy


class Counts:
    """System calls on bundle files of this process."""

    def __init__(self):
        self.reads = self.read_bytes = 0
        self.writes = self.write_bytes = 0
        self.reported = False
        self.registered = False


_counts = Counts()


class _CountingRaw(io.RawIOBase):
    """The raw file of a bundle as a buffered reader sees it: its reads are
    counted in ``counts``; closing it closes the file object the caller
    opened."""

    def __init__(self, owner, counts):
        super().__init__()
        self._owner = owner
        self._raw = owner.raw
        self._counts = counts

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = self._raw.readinto(b)
        if n:
            self._counts.reads += 1
            self._counts.read_bytes += n
        return n

    def seek(self, pos, whence=os.SEEK_SET):
        return self._raw.seek(pos, whence)

    def tell(self):
        return self._raw.tell()

    def fileno(self):
        return self._raw.fileno()

    @property
    def name(self):
        return self._raw.name

    def release(self):
        """Leave the caller's file open when this one is closed."""
        self._owner = None

    def close(self):
        if not self.closed:
            super().close()
            if self._owner is not None:
                self._owner.close()


class _ResponseRaw(io.RawIOBase):
    """The body of an HTTP response as the raw file of a buffered reader:
    read through the response's own ``read`` (its Content-Length or
    chunks, Mercurial's error messages, byte counts and digest check);
    its reads are counted in ``counts``."""

    def __init__(self, response, counts):
        super().__init__()
        self._response = response
        self._counts = counts

    def readable(self):
        return True

    def readinto(self, b):
        data = self._response.read(len(b))
        n = len(data)
        if n:
            b[:n] = data
            self._counts.reads += 1
            self._counts.read_bytes += n
        return n

    def close(self):
        if not self.closed:
            super().close()
            self._response.close()


# set while exchange.trypullbundlefromurl fetches and applies a clone
# bundle: the HTTP response it reads holds the bundle and nothing else
_fetching = threading.local()


def _is_http_response(fh):
    # http.client is loaded (not merely imported lazily) once a response
    # exists: checking costs a command that fetched nothing no import
    client = sys.modules.get("http.client")
    if client is None or is_lazy(client):
        return False
    return isinstance(fh, client.HTTPResponse)


def _mode_if_opened_by_path(fh):
    """The file mode of what ``fh`` reads if it is a buffered reader of a
    file this process opened by its path, else None."""
    if type(fh) is not io.BufferedReader:
        return None
    raw = fh.raw
    if type(raw) is not io.FileIO or not isinstance(raw.name, (bytes, str)):
        return None
    try:
        return os.fstat(raw.fileno()).st_mode
    except (OSError, ValueError):
        return None


def _readable_by_path(fh):
    """True when ``fh`` is a buffered reader of a regular file this process
    opened by its path."""
    mode = _mode_if_opened_by_path(fh)
    return mode is not None and stat.S_ISREG(mode)


def large_reader(fh, size, counts=_counts):
    """``fh``, or a reader of the same file, from where ``fh`` is, with a
    buffer of ``size`` (``fh`` is not to be read from afterwards); its
    reads are counted in ``counts``."""
    if not _readable_by_path(fh):
        return fh
    try:
        pos = fh.tell()
        reader = io.BufferedReader(_CountingRaw(fh, counts), buffer_size=size)
        if fh.raw.tell() != pos:
            # what fh had buffered is read again
            reader.seek(pos)
    except (OSError, ValueError):
        return fh
    return reader


class _PipeRaw(io.RawIOBase):
    """A pipe or FIFO a bundle is read from, as the raw file of a buffered
    reader: what the caller's reader had buffered comes first; reads are
    counted in ``counts``; closing it closes the caller's file."""

    def __init__(self, owner, first, counts):
        super().__init__()
        self._owner = owner
        self._raw = owner.raw
        self._first = first
        self._counts = counts

    def readable(self):
        return True

    def readinto(self, b):
        first = self._first
        if first:
            n = min(len(b), len(first))
            b[:n] = first[:n]
            self._first = first[n:]
            return n
        n = self._raw.readinto(b)
        if n:
            self._counts.reads += 1
            self._counts.read_bytes += n
        return n

    def fileno(self):
        return self._raw.fileno()

    def close(self):
        if not self.closed:
            super().close()
            self._owner.close()


def _is_pipe_by_path(fh):
    """True when ``fh`` is a buffered reader of a pipe or FIFO this process
    opened by its path (``hg unbundle /dev/stdin``)."""
    mode = _mode_if_opened_by_path(fh)
    return mode is not None and stat.S_ISFIFO(mode)


def _pipe_reader(fh, size):
    """A large reader of a bundle coming through a pipe: the pipe made to
    hold ``size`` bytes where the system lets it (Linux, up to
    ``/proc/sys/fs/pipe-max-size``), so that one read takes what the writer
    put in it (a pipe holds 64 KiB by default)."""
    try:
        import fcntl

        fcntl.fcntl(fh.raw.fileno(), fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # as large as it gets: reads are still a buffer's worth at most
    first = fh.read1(size) if fh.peek(1) else b""
    return io.BufferedReader(_PipeRaw(fh, first, _counts), buffer_size=size)


def _bundle_reader(fh, size):
    """A large reader for ``exchange.readbundle``, except for a packed1
    bundle (``HGS1``): ``exchange.getbundlespec`` reads its header from the
    caller's file after ``readbundle`` (it is read in large blocks when it
    is applied, see ``applybundlev1``).  Costs no extra system call for
    other bundles (the header is in the reader's first block)."""
    if _is_pipe_by_path(fh):
        try:
            packed = fh.peek(4)[:4] == b"HGS1"
        except (OSError, ValueError):
            return fh
        return fh if packed else _pipe_reader(fh, size)
    reader = large_reader(fh, size)
    if reader is fh:
        return fh
    raw = fh.raw
    before = raw.tell()
    try:
        packed = reader.peek(4)[:4] == b"HGS1"
    except (OSError, ValueError):
        packed = True
    if packed:
        reader.detach().release()
        raw.seek(before)
        return fh
    return reader


def _blocks(chunks, size):
    """The bytes of ``chunks``, in order, in blocks of ``size`` bytes or
    more (the last one may be shorter)."""
    pending = []
    have = 0
    for chunk in chunks:
        if not chunk:
            continue
        pending.append(chunk)
        have += len(chunk)
        if have >= size:
            block = b"".join(pending)
            pending = []
            have = 0
            _counts.writes += 1
            _counts.write_bytes += len(block)
            yield block
    if pending:
        block = b"".join(pending)
        _counts.writes += 1
        _counts.write_bytes += len(block)
        yield block


def _mean(total, calls):
    return total // calls if calls else 0


def _report(ui):
    c = _counts
    if c.reported:
        return
    c.reported = True
    if c.reads:
        ui.write_err(
            b"fastio: bundle reads: %d, mean size: %d bytes\n"
            % (c.reads, _mean(c.read_bytes, c.reads))
        )
    if c.writes:
        ui.write_err(
            b"fastio: bundle writes: %d, mean size: %d bytes\n"
            % (c.writes, _mean(c.write_bytes, c.writes))
        )


def _report_at_exit(ui, settings):
    if settings.report and not _counts.registered:
        _counts.registered = True
        ui.atexit(_report, ui)


# -- what the wrappers ``gates`` installs call --------------------------------


def fetch_clonebundle(orig, *args, **kwargs):
    _fetching.depth = getattr(_fetching, "depth", 0) + 1
    try:
        return orig(*args, **kwargs)
    finally:
        _fetching.depth -= 1


def readbundle(orig, ui, fh, fname, *args, **kwargs):
    settings = config.settings(ui)
    if settings.read_buffer:
        _report_at_exit(ui, settings)
        if getattr(_fetching, "depth", 0) and _is_http_response(fh):
            # a clone bundle over http: its socket read in calls of up to
            # a buffer (http.client's own buffer is 8 KiB); under --debug as
            # stock reads it, so that bundle2's debug lines come before the
            # abort of a digest mismatch, found at the response's end, as in
            # stock (Mercurial's test-clonebundles.t)
            if not ui.debugflag:
                fh = io.BufferedReader(
                    _ResponseRaw(fh, _counts), buffer_size=settings.read_buffer
                )
        else:
            fh = _bundle_reader(fh, settings.read_buffer)
    return orig(ui, fh, fname, *args, **kwargs)


def applybundlev1(orig, repo, fp, *args, **kwargs):
    # a packed1 bundle (hg debugapplystreamclonebundle, clonebundles): the
    # caller's file, its header read
    settings = config.settings(repo.ui)
    if settings.read_buffer:
        fp = large_reader(fp, settings.read_buffer)
    return orig(repo, fp, *args, **kwargs)


def writetempbundle(orig, self, *args, **kwargs):
    # the uncompressed copy of a compressed bundle, read back at random
    # (every revision the bundle repository is asked for) through the file
    # this returns
    fh = orig(self, *args, **kwargs)
    settings = config.settings(self.ui)
    if settings.read_buffer:
        fh = large_reader(fh, settings.read_buffer)
    return fh


def writechunks(orig, ui, chunks, filename, *args, **kwargs):
    settings = config.settings(ui)
    if settings.write_buffer:
        _report_at_exit(ui, settings)
        chunks = _blocks(chunks, settings.write_buffer)
    return orig(ui, chunks, filename, *args, **kwargs)
