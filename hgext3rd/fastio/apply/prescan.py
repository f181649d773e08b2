"""Refuse a stream bundle's bad names before anything is written.

A stream's names come with the files' contents, so the writer can only
check each name when it reaches it: the files before a hostile name are
written, then rolled back.  When the stream is read from a file (``hg
unbundle FILE``, ``hg debugapplystreamclonebundle FILE``) the whole stream
can be walked first: headers and names are read, contents are skipped with
``seek``, and every name goes through the writer's own check, so a bundle
with a bad name anywhere is refused before the transaction starts.  Over
the wire (clones from ssh and http peers) there is no going back, and the
per-file check is what refuses.

Only names and record headers are judged here; anything else (a truncated
stream, a bad length) ends the walk quietly and is the apply's to report,
with its own message.  ``_streamscan.c`` walks the plain records quickly;
every record it is not sure of is parsed below.
"""

import io
import os
import struct

from mercurial import store

from . import buffers, storewriter
from .. import compat

try:
    from . import _streamscan
except ImportError:  # built optionally (setup.py)
    _streamscan = None

_V1, _V2, _V3 = 1, 2, 3
# skip_plain() statuses (1, "need more", is what run() does by default)
_DONE, _ASK_PYTHON = 0, 2

_BLOCK = 1 << 20


class _Stop(Exception):
    """The walk cannot go on (truncated, malformed): leave it to the apply."""


class _FileSource:
    """The rest of a seekable file."""

    def __init__(self, fh):
        self.read = fh.read
        self._fh = fh

    def skip(self, n):
        self._fh.seek(n, os.SEEK_CUR)


class _PartSource:
    """The payload of a bundle2 part, read from the bundle's file: a series
    of frames, each a signed 32-bit size and that many bytes."""

    _frame = struct.Struct(">i")

    def __init__(self, fh):
        self._fh = fh
        self._left = 0  # in the current frame
        self._ended = False

    def _next_frame(self):
        if self._ended:
            return False
        header = self._fh.read(4)
        if len(header) < 4:
            raise _Stop()
        (size,) = self._frame.unpack(header)
        if size < 0:
            # an interruption part inside the payload: not walked
            raise _Stop()
        if size == 0:
            self._ended = True
            return False
        self._left = size
        return True

    def read(self, n):
        """Up to ``n`` bytes, from one frame only (no joining: the walk
        keeps only the partial record at the end of each block)."""
        if not self._left and not self._next_frame():
            return b""
        data = self._fh.read(min(n, self._left))
        if not data:
            raise _Stop()
        self._left -= len(data)
        return data

    def skip(self, n):
        while n:
            if not self._left and not self._next_frame():
                raise _Stop()
            step = min(n, self._left)
            self._fh.seek(step, os.SEEK_CUR)
            self._left -= step
            n -= step


def _seekable(fh):
    try:
        return fh.seekable() and fh.tell() >= 0
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return False


class _Walk:
    """The state of a walk over the records of one stream."""

    def __init__(self, mode, files=0, groups=0):
        self.mode = mode
        self.files = files
        self.groups = groups
        self.in_group = 0

    def done(self):
        if self.mode == _V3:
            return self.groups == 0 and not self.in_group
        return not self.files

    def record(self, buf, pos):
        """Parse the record at ``pos`` (checking its name); return the
        position after it (possibly past the buffer), or None when it is
        not complete in ``buf``."""
        end = len(buf)
        if self.groups is None:
            # v3: the entry count comes first
            header = buffers._uvarint_at(buf, pos, end)
            if header is None:
                return None
            self.groups, pos = header
            return pos
        if self.mode == _V3 and not self.in_group:
            header = buffers._uvarint_at(buf, pos, end)
            if header is None:
                return None
            self.in_group, pos = header
            self.groups -= 1
            return pos
        if self.mode == _V1:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                if end - pos > buffers.MAX_NAME + 32:
                    raise _Stop()
                return None
            name, size = buffers.v1_header(buf[pos : nl + 1])
            storewriter.check_name(store.decodedir(name))
            self.files -= 1
            return nl + 1 + size
        header = buffers._uvarint_at(buf, pos + 1, end)
        if header is None:
            return None
        namelen, p = header
        header = buffers._uvarint_at(buf, p, end)
        if header is None:
            return None
        datalen, p = header
        if namelen > buffers.MAX_NAME:
            raise _Stop()
        if p + namelen > end:
            return None
        storewriter.check_name(buf[p : p + namelen])
        if self.mode == _V3:
            self.in_group -= 1
        else:
            self.files -= 1
        return p + namelen + datalen

    def run(self, source):
        buf, pos = b"", 0
        skip_plain = _streamscan.skip_plain if _streamscan is not None else None
        while not self.done():
            if pos < len(buf):
                status = _ASK_PYTHON
                if skip_plain is not None and self.groups is not None:
                    status, pos, self.files, self.groups, self.in_group = skip_plain(
                        buf, pos, self.mode, self.files, self.groups, self.in_group
                    )
                    if status == _DONE:
                        return
                if status == _ASK_PYTHON:
                    after = self.record(buf, pos)
                    if after is not None:
                        pos = after
                        continue
            # the record at pos is not complete in buf (or pos is past it)
            if pos > len(buf):
                source.skip(pos - len(buf))
                buf, pos = b"", 0
            more = source.read(_BLOCK)
            if not more:
                raise _Stop()
            buf, pos = (buf[pos:] + more if pos < len(buf) else more), 0


def _walk(fh, source, walk):
    """Walk ``source`` (reading ``fh``), then put ``fh`` back where it was."""
    start = fh.tell()
    try:
        walk.run(source)
    except (_Stop, OSError, OverflowError, ValueError):
        pass
    finally:
        fh.seek(start)


def check_v1(fp, filecount):
    """Check every name of the v1 stream ``fp`` (after its header) if it
    can be read again from here."""
    if _seekable(fp):
        _walk(fp, _FileSource(fp), _Walk(_V1, files=filecount))


def check_v2(part, filecount):
    """Check every name of a ``stream2`` part read from a file."""
    fh = compat.unread_part_file(part)
    if fh is not None and _seekable(fh):
        _walk(fh, _PartSource(fh), _Walk(_V2, files=filecount))


def check_v3(part):
    """Check every name of a ``stream3-exp`` part read from a file."""
    fh = compat.unread_part_file(part)
    if fh is not None and _seekable(fh):
        _walk(fh, _PartSource(fh), _Walk(_V3, groups=None))
