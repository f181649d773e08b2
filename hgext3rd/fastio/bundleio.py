"""Large system calls on bundle files, read and written.

Reading: every bundle Mercurial reads goes through ``exchange.readbundle``
(``hg unbundle``, ``hg debugapplystreamclonebundle``, ``hg pull`` and
``hg incoming`` from a bundle file, strip and rebase recovery, shelve).
When the file it gets is one this process opened by its path (a local
bundle, ``/dev/stdin`` redirected from a file, a temporary bundle), its
reads go through a buffer of ``fastio.read-buffer`` bytes instead of the
file's default (4 KiB on most filesystems): one system call per buffer.
Seeking (``bundlerepo``) goes through the same buffer.  A file handed over
by a descriptor (a protocol stream, a server's temporary file) is left as
it is: nothing is read ahead of what belongs to the bundle.

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

from mercurial import changegroup, exchange, exthelper

from . import config

eh = exthelper.exthelper()


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
    counted; closing it closes the file object the caller opened."""

    def __init__(self, owner):
        super().__init__()
        self._owner = owner
        self._raw = owner.raw

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = self._raw.readinto(b)
        if n:
            _counts.reads += 1
            _counts.read_bytes += n
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

    def close(self):
        if not self.closed:
            super().close()
            self._owner.close()


def _readable_by_path(fh):
    """True when ``fh`` is a buffered reader of a regular file this process
    opened by its path, at a position where nothing is buffered."""
    if type(fh) is not io.BufferedReader:
        return False
    raw = fh.raw
    if type(raw) is not io.FileIO or not isinstance(raw.name, (bytes, str)):
        return False
    try:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            return False
        return fh.tell() == raw.tell()
    except (OSError, ValueError):
        return False


def large_reader(fh, size):
    """``fh``, or a reader of the same file with a buffer of ``size``."""
    if not _readable_by_path(fh):
        return fh
    return io.BufferedReader(_CountingRaw(fh), buffer_size=size)


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


@eh.wrapfunction(exchange, "readbundle")
def _readbundle(orig, ui, fh, fname, *args, **kwargs):
    settings = config.settings(ui)
    if settings.read_buffer:
        _wire_bundlerepo()
        _report_at_exit(ui, settings)
        fh = large_reader(fh, settings.read_buffer)
    return orig(ui, fh, fname, *args, **kwargs)


_bundlerepo_wired = []


def _wire_bundlerepo():
    """Wrap ``bundlerepository._writetempbundle`` once, when a bundle is
    first read (a bundle repository reads its bundle before it writes a
    temporary one): not at load time, where ``bundlerepo`` is not needed."""
    if _bundlerepo_wired:
        return
    _bundlerepo_wired.append(True)
    from mercurial import bundlerepo, extensions

    extensions.wrapfunction(
        bundlerepo.bundlerepository, "_writetempbundle", _writetempbundle
    )


def _writetempbundle(orig, self, *args, **kwargs):
    # the uncompressed copy of a compressed bundle, read back at random
    # (every revision the bundle repository is asked for) through the file
    # this returns
    fh = orig(self, *args, **kwargs)
    settings = config.settings(self.ui)
    if settings.read_buffer:
        fh = large_reader(fh, settings.read_buffer)
    return fh


@eh.wrapfunction(changegroup, "writechunks")
def _writechunks(orig, ui, chunks, filename, *args, **kwargs):
    settings = config.settings(ui)
    if settings.write_buffer:
        _report_at_exit(ui, settings)
        chunks = _blocks(chunks, settings.write_buffer)
    return orig(ui, chunks, filename, *args, **kwargs)
