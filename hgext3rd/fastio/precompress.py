"""Compressing a changegroup's revisions ahead, on a thread of its own.

Mercurial compresses every revision it stores (zstd or zlib, in C) on the
thread that applies the changegroup: a third of a 10k-file unbundle, while
the second core idles.  Here a reading thread (``prefetch``) takes the
changegroup a few blocks ahead of the applying thread (decompressing the
bundle there too), finds the revisions in each block and, before handing
the block over, compresses what a revlog will most likely be asked to
store: a new file's full text, or a delta as it came.  It uses a compressor
of its own, of the same engine and options as the revlogs'.

The revlogs' compressors (see ``compressors``) then find the result
waiting, keyed by the very bytes they are asked to compress: what is
stored is what stock stores, byte for byte.  A guess no revlog asks for
(a delta the revlog recomputes, a name mistaken for a revision) is only
work wasted on the other core, and is dropped a few blocks later.  A
failure of the thread's guessing stops the guessing, never the apply.
"""

import collections
import struct

_chunk_length = struct.Struct(">l").unpack_from
_hunk_header = struct.Struct(">lll").unpack_from

# compressors leave shorter data as it is; not worth a lookup
_MIN_SIZE = 64
# a revision larger than this is compressed where stock compresses it
# (also bounds what a corrupt length makes the thread hold)
_MAX_SIZE = 16 << 20
# blocks after which an unclaimed result is dropped (the applying thread
# is at most the prefetch queue behind the reading thread)
_KEEP_BLOCKS = 40

MISS = object()


class CompressAhead:
    """Compression results of a changegroup's revisions, made by the
    reading thread (``feed``) and claimed by the applying thread
    (``take``)."""

    MISS = MISS

    def __init__(self, compressor, key, header_size):
        self.key = key
        self._compress = compressor.compress
        self._header_size = header_size
        self._ready = {}  # bytes -> what the compressor returns for them
        self._order = collections.deque()  # (block, bytes), oldest first
        self._block = 0
        self._tail = b""  # the start of a chunk the next block completes
        self._skip = 0  # bytes of an oversized chunk still to pass
        self.failure = None
        # applying thread's counts
        self.hits = 0
        self.misses = 0
        self.made = 0

    # -- the reading thread -------------------------------------------------

    def feed(self, block, compress=True):
        """Compress the revisions that ``block`` completes (reading thread,
        before the block is handed over); with ``compress`` false, only
        follow the chunks (a block the applying thread already has)."""
        if self.failure is not None or not block:
            return
        try:
            self._feed(block, compress)
        except Exception as exc:  # a guess gone wrong stops the guessing
            self.failure = exc

    def _feed(self, block, compress_them):
        self._block += 1
        if self._skip:
            passed = min(self._skip, len(block))
            self._skip -= passed
            block = block[passed:]
        data = self._tail + block if self._tail else block
        pos = 0
        end = len(data)
        ready = self._ready
        order = self._order
        compress = self._compress
        number = self._block
        while end - pos >= 4:
            length = _chunk_length(data, pos)[0]
            if length <= 4:
                # a group's end (or a corrupt length the applying thread
                # refuses): nothing to compress
                pos += 4
                continue
            if length > _MAX_SIZE:
                available = end - pos
                self._skip = max(0, length - available)
                pos = min(end, pos + length)
                continue
            if end - pos < length:
                break
            text = compress_them and self._revision(data, pos + 4, pos + length)
            pos += length
            if text and text not in ready:
                ready[text] = compress(text)
                order.append((number, text))
                self.made += 1
        self._tail = data[pos:]
        # drop what the applying thread went past without claiming
        while order and order[0][0] < number - _KEEP_BLOCKS:
            ready.pop(order.popleft()[1], None)

    def _revision(self, data, start, end):
        """What a revlog is likely to compress for the chunk ``data[start:
        end]``: the full text of a delta against nothing, else the delta."""
        delta = start + self._header_size
        if end - delta < _MIN_SIZE:
            return None
        hunk_start, hunk_end, size = _hunk_header(data, delta)
        if hunk_start == 0 and hunk_end == 0 and size == end - delta - 12:
            return bytes(data[delta + 12 : end])
        return bytes(data[delta:end])

    # -- the applying thread ------------------------------------------------

    def take(self, data):
        """The compressed form of ``data`` if it was made ahead, else
        ``MISS``."""
        # (a bytearray or a view: not looked up, compressed where it is)
        found = self._ready.pop(data, MISS) if type(data) is bytes else MISS
        if found is MISS:
            self.misses += 1
        else:
            self.hits += 1
        return found


class _Replayed:
    """``source`` with ``first`` (already read from it) put back in front."""

    def __init__(self, first, source):
        self._first = first
        self._read = source.read

    def read(self, n):
        first = self._first
        if not first:
            return self._read(n)
        self._first = first[n:]
        return first[:n]


def reading(source, block, ahead, max_blocks=16):
    """``(reader, stop)``: what the applying thread reads ``source``
    through, compressed ahead by ``ahead`` on a thread of its own when
    there is more than a block of it, and what stops that thread."""
    first = source.read(block)
    if len(first) < block:
        # the whole changegroup in one block: no thread for it
        return _Replayed(first, source), None
    from . import prefetch

    ahead.feed(first, compress=False)
    reader = prefetch.PrefetchReader(
        source, block=block, max_blocks=max_blocks, on_block=ahead.feed, first=first
    )
    return reader, reader.close
