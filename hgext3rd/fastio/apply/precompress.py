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

Without compressing ahead (``fastio.compress-ahead`` off, the default),
the reading thread still takes a changegroup whose reading costs the
applying thread CPU time: a bzip2 or gzip bundle (``hg bundle``'s default
is bzip2), decompressed there in C without Python's lock, on the other
core.  A read that is slow only because it waits (a network, a server)
gets no thread then: the hand-overs of Python's lock would cost the client
more CPU time than it saves (measured: a 10k-file ``hg clone ssh://``).
"""

import collections
import struct
import time

from mercurial import demandimport

with demandimport.deactivated():
    try:
        from ._streamscan import revision_spans
    except ImportError:  # not built: the same walk in Python
        revision_spans = None

_chunk_length = struct.Struct(">l").unpack_from
_hunk_header = struct.Struct(">lll").unpack_from

# what is compressed ahead: each result made on the other thread costs the
# applying thread a hand-over of Python's lock, about what compressing half
# a kilobyte of text or a couple of kilobytes of delta costs it (measured:
# 10k new files, and history-rich bundles whose deltas and changelog
# entries are mostly a few hundred bytes)
_MIN_TEXT = 512
_MIN_DELTA = 2048
# a revision larger than this is compressed where stock compresses it
# (also bounds what a corrupt length makes the thread hold)
_MAX_SIZE = 16 << 20
# reading a megabyte slower than this (decompressing bzip2 or gzip, or a
# network) is worth a reading thread whatever there is to compress
_SLOW_READ_S = 0.004
# without compressing ahead, reading a megabyte that costs the applying
# thread this much CPU time is worth a reading thread (measured, the first
# 1 MB block: none 1 ms, zstd 2 to 4.6 ms, gzip 4.6 to 4.8 ms, bzip2 28 to
# 46 ms: the line is well clear of zstd's)
_COSTLY_READ_CPU_S = 0.010
# so is a block of which this share is to be compressed ahead
_WORTH_AHEAD = 0.25
# blocks after which an unclaimed result is dropped (the applying thread
# is at most the prefetch queue behind the reading thread)
_KEEP_BLOCKS = 24

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
        # what was made, oldest first, and how much of it each block made
        # (no tuples: a thread making them would set off the collector)
        self._order = collections.deque()
        self._made_per_block = collections.deque()
        self._tail = b""  # the start of a chunk the next block completes
        self._skip = 0  # bytes of an oversized chunk still to pass
        # bytes the last block had to compress ahead
        self.last_span_bytes = 0
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
        if self._skip:
            passed = min(self._skip, len(block))
            self._skip -= passed
            if self._skip:
                return
            block = block[passed:]
        data = self._tail + block if self._tail else block
        spans, pos, self._skip = _revision_spans(
            data, self._header_size, _MIN_TEXT, _MIN_DELTA, _MAX_SIZE
        )
        self._tail = data[pos:]
        ready = self._ready
        order = self._order
        self.last_span_bytes = sum(spans[1::2]) - sum(spans[0::2])
        made = 0
        if compress_them:
            compress = self._compress
            ends = iter(spans)
            for start in ends:
                text = data[start : next(ends)]
                if text not in ready:
                    ready[text] = compress(text)
                    order.append(text)
                    made += 1
        self.made += made
        # drop what the applying thread went past without claiming
        counts = self._made_per_block
        counts.append(made)
        while len(counts) > _KEEP_BLOCKS:
            for _ in range(counts.popleft()):
                ready.pop(order.popleft(), None)

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
    """``source`` with ``first`` (already read from it) put back in front;
    a read returns no more than one of the two (as stock's reads of a part
    do: a short read is the parser's to complete)."""

    def __init__(self, first, source):
        self._first = first
        self._read = source.read

    def read(self, n):
        first = self._first
        if not first:
            return self._read(n)
        self._first = first[n:]
        return first[:n]


class _Reading:
    """What the applying thread reads a changegroup through.  Its first
    read (asked by the parser, inside Mercurial's apply, where stock reads
    first) reads the first block, which tells whether a thread pays: when
    compressing ahead, if reading is slow (a bundle's bzip2 or gzip, a
    network) or there is much to compress ahead (new files' texts); else
    (``ahead`` None) if reading costs CPU time (decompressing).  Otherwise
    (a zstd bundle of small deltas) a thread would only take Python's lock
    from the applying thread for the little it saves."""

    def __init__(self, source, block, ahead, max_blocks):
        self._source = source
        self._block = block
        self._ahead = ahead
        self._max_blocks = max_blocks
        self._reader = None
        self._stop = None

    @property
    def threaded(self):
        return self._stop is not None

    def read(self, n):
        reader = self._reader
        if reader is None:
            reader = self._reader = self._start()
        return reader.read(n)

    def _start(self):
        source, block, ahead = self._source, self._block, self._ahead
        started, started_cpu = time.perf_counter(), time.thread_time()
        first = source.read(block)
        took = time.perf_counter() - started
        took_cpu = time.thread_time() - started_cpu
        if len(first) < block:
            # the whole changegroup in one block: no thread for it
            return _Replayed(first, source)
        megabytes = block / (1 << 20)
        if ahead is None:
            if took_cpu < _COSTLY_READ_CPU_S * megabytes:
                return _Replayed(first, source)
        else:
            ahead.feed(first, compress=False)
            if (
                took < _SLOW_READ_S * megabytes
                and ahead.last_span_bytes < _WORTH_AHEAD * block
            ):
                return _Replayed(first, source)
        from . import prefetch

        reader = prefetch.PrefetchReader(
            source,
            block=block,
            max_blocks=self._max_blocks,
            on_block=ahead.feed if ahead is not None else None,
            first=first,
        )
        self._stop = reader.close
        return reader

    def stop(self):
        """Stop the reading thread, if one started."""
        if self._stop is not None:
            self._stop()


def reading(source, block, ahead, max_blocks=16):
    """``(reader, stop)``: what the applying thread reads ``source``
    through, read (and compressed ahead by ``ahead``, unless None) on a
    thread of its own when that pays (see ``_Reading``), and what stops
    that thread."""
    reader = _Reading(source, block, ahead, max_blocks)
    return reader, reader.stop


def _revision_spans_py(data, header_size, min_text, min_delta, max_size):
    """``_streamscan.revision_spans`` in Python: ``(spans, pos, skip)``,
    ``spans`` the starts and ends (flat) in ``data`` of what a revlog will
    likely compress of each complete chunk (the text of a delta against
    nothing, else the delta), ``pos`` where the first incomplete chunk
    starts, ``skip`` the bytes still to pass of a chunk over ``max_size``."""
    spans = []
    pos = skip = 0
    end = len(data)
    while end - pos >= 4:
        length = _chunk_length(data, pos)[0]
        if length <= 4:
            # a group's end (or a length the applying thread refuses)
            pos += 4
            continue
        if length > max_size:
            skip = max(0, length - (end - pos))
            pos = min(end, pos + length)
            continue
        if end - pos < length:
            break
        delta = pos + 4 + header_size
        size = pos + length - delta
        pos += length
        if size >= 12 and _hunk_header(data, delta) == (0, 0, size - 12):
            if size - 12 >= min_text:
                spans += (delta + 12, pos)
        elif size >= min_delta and size > 0:
            spans += (delta, pos)
    return spans, pos, skip


_revision_spans = revision_spans or _revision_spans_py
