"""Large-buffer reading of bundle streams.

Stock parsing of a stream bundle issues several small ``read()`` calls per
file (one byte for the source, one per varint byte, the name, then the data)
on a bundle2 part, whose ``read`` is itself layered over payload chunks.  A
:class:`StreamBuffer` reads big blocks instead and parses headers out of
memory; file contents are written from the block with no extra copy.

It must only be used on a stream that ends where the data of interest ends
(a bundle2 part): it reads ahead up to ``size`` bytes.
"""

from mercurial.i18n import _
from mercurial import error

_EMPTY = b""


def truncated(got, expected):
    return error.Abort(
        _(b"stream ended unexpectedly (got %d bytes, expected %d)") % (got, expected)
    )


# longer than any name a filesystem takes: a corrupt or hostile header
MAX_NAME = 1 << 16
# a v1 header line: a name, NUL, the size in decimal digits, newline
_MAX_V1_LINE = MAX_NAME + 24


def v1_header(line):
    """``(name, size)`` of a v1 stream's file header line ``name\\0size\\n``.

    Stricter than ``int()``: the size is plain decimal digits (no sign,
    space or underscore), and the line is complete.
    """
    name, nul, size = line[:-1].partition(b"\0")
    if not nul or not line.endswith(b"\n") or not size.isdigit():
        raise error.ResponseError(_(b"unexpected response from remote server:"), line)
    return name, int(size)


class V1HeaderReader:
    """The header lines of a v1 stream, read without reading past them: a
    v1 stream may be followed by more of the protocol (``stream_out``)."""

    def __init__(self, fp):
        self._fp = fp
        # files and ssh pipes split lines themselves; a chunk buffer (inline
        # clone bundles) has no readline and is asked byte by byte
        self._readline = getattr(fp, "readline", None)

    def next(self):
        """``(name, size)`` of the next file."""
        if self._readline is not None:
            line = self._readline()
        else:
            line = self._line_bytewise()
        return v1_header(line)

    def _line_bytewise(self):
        line = bytearray()
        read = self._fp.read
        while len(line) < _MAX_V1_LINE:
            byte = read(1)
            line += byte
            if byte in (b"\n", b""):
                break
        return bytes(line)


def _uvarint_at(buf, pos, end):
    """``(value, next_pos)`` of the varint at ``pos``, None if incomplete."""
    value = shift = 0
    while pos < end:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise error.Abort(_(b"malformed stream: varint too long"))
    return None


def _file_at(buf, pos, end):
    """``(src, name, offset, size)`` of the v2 file at ``pos`` if its header
    and content are complete in ``buf[:end]``, else None."""
    if pos >= end:
        return None
    header = _uvarint_at(buf, pos + 1, end)
    if header is None:
        return None
    namelen, p = header
    header = _uvarint_at(buf, p, end)
    if header is None:
        return None
    datalen, p = header
    start = p + namelen
    if start + datalen > end:
        return None
    return buf[pos : pos + 1], buf[p:start], start, datalen


class StreamBuffer:
    """Read-ahead parser over a ``read(n)`` file-like object.

    With ``exact``, nothing is read ahead: each read asks the source for
    what the parser needs next and no more, as stock's parser does (used
    under ``--debug``, so that the bundle2 debug output of the part comes
    in stock's order).
    """

    def __init__(self, fp, size=1 << 20, exact=False):
        self._read = fp.read
        self._size = size
        self._exact = exact
        self._buf = _EMPTY
        self._pos = 0

    def _fill(self, need):
        """Make at least ``need`` bytes available at ``self._pos``."""
        rest = self._buf[self._pos :]
        chunks = [rest]
        have = len(rest)
        while have < need:
            want = need - have
            data = self._read(want if self._exact else max(self._size, want))
            if not data:
                break
            chunks.append(data)
            have += len(data)
        self._buf = _EMPTY.join(chunks)
        self._pos = 0
        return have

    def read(self, n):
        """Up to ``n`` bytes, fewer only where the stream ends: a file-like
        face for readers that check lengths themselves (changegroups)."""
        pos = self._pos
        end = pos + n
        if end > len(self._buf):
            self._fill(n)
            pos, end = 0, n
        buf = self._buf
        self._pos = min(end, len(buf))
        return buf[pos:end]

    @property
    def exact(self):
        return self._exact

    def read_exact(self, n):
        pos = self._pos
        end = pos + n
        if end > len(self._buf):
            have = self._fill(n)
            if have < n:
                raise truncated(have, n)
            pos, end = 0, n
        self._pos = end
        return self._buf[pos:end]

    def read_uvarint(self):
        buf = self._buf
        pos = self._pos
        result = 0
        shift = 0
        while True:
            if pos >= len(buf):
                self._pos = pos
                if not self._fill(1):
                    raise truncated(0, 1)
                buf = self._buf
                pos = 0
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self._pos = pos
                return result
            shift += 7
            if shift > 63:
                raise error.Abort(_(b"malformed stream: varint too long"))

    def copy_to(self, write, n):
        """Pass the next ``n`` bytes to ``write``: slices of the buffer, or
        blocks read straight from the source when a content is large."""
        left = n
        size = self._size
        while left:
            pos = self._pos
            avail = len(self._buf) - pos
            if avail:
                take = avail if avail < left else left
                write(memoryview(self._buf)[pos : pos + take])
                self._pos = pos + take
                left -= take
            elif left >= size:
                data = self._read(size)
                if not data:
                    raise truncated(n - left, n)
                write(data)
                left -= len(data)
            elif not self._fill(left):
                raise truncated(n - left, n)

    def scan_files(self, limit):
        """Parse up to ``limit`` v2 file headers whose contents are entirely
        in the buffer, without copying: return ``(data, entries)`` where
        each entry is ``(src, name, offset, size)`` into ``data``.

        Returns no entry when the next file is not complete in the buffer
        (the caller then tops the buffer up, or streams a large file).
        """
        buf = self._buf
        end = len(buf)
        pos = self._pos
        entries = []
        append = entries.append
        while len(entries) < limit:
            entry = _file_at(buf, pos, end)
            if entry is None:
                break
            append(entry)
            pos = entry[2] + entry[3]
        self._pos = pos
        return buf, entries

    def scan_entries(self, limit):
        """Like :meth:`scan_files` for v3 entries (a file count, then the
        files): return ``(data, files, entry_count)`` for up to ``limit``
        entries that are complete in the buffer."""
        buf = self._buf
        end = len(buf)
        pos = self._pos
        files = []
        count = 0
        while count < limit:
            header = _uvarint_at(buf, pos, end)
            if header is None:
                break
            nfiles, p = header
            first = len(files)
            while nfiles:
                entry = _file_at(buf, p, end)
                if entry is None:
                    break
                files.append(entry)
                p = entry[2] + entry[3]
                nfiles -= 1
            if nfiles:
                del files[first:]
                break
            pos = p
            count += 1
        self._pos = pos
        return buf, files, count

    def top_up(self):
        """Refill so that a full block is available; False at the end (and
        always in exact mode: the caller then reads one file at a time)."""
        if self._exact:
            return False
        before = len(self._buf) - self._pos
        return self._fill(self._size) > before

    def at_eof(self):
        """True when nothing is left, neither buffered nor in the source."""
        if self._pos < len(self._buf):
            return False
        return not self._fill(1)
