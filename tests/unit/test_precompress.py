"""Unit tests of precompress.CompressAhead: the revisions it finds in a
changegroup stream however the stream is cut into blocks, what it hands
over, and that its failures stay its own; and that no reading thread
outlives an apply."""

import os
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest

from conftest import EXTPATH, ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from hgext3rd.fastio.apply import precompress

HEADER = 102  # a cg3 delta header


@pytest.fixture(autouse=True, params=["c", "python"])
def walk(request, monkeypatch):
    """Every test with the C walk (when built) and the Python one."""
    if request.param == "c":
        if precompress.revision_spans is None:
            pytest.skip("_streamscan not built")
        monkeypatch.setattr(precompress, "_revision_spans", precompress.revision_spans)
    else:
        monkeypatch.setattr(
            precompress, "_revision_spans", precompress._revision_spans_py
        )
    return request.param


class Zlib:
    """A revlog compressor's face: compress(data) -> bytes or None."""

    calls = 0

    def compress(self, data):
        self.calls += 1
        out = zlib.compress(data)
        return out if len(out) < len(data) else None


def chunk(data):
    return struct.pack(">l", len(data) + 4) + data


def delta_against_nothing(text):
    return b"H" * HEADER + struct.pack(">lll", 0, 0, len(text)) + text


def delta(base_len, text):
    return b"H" * HEADER + struct.pack(">lll", 3, base_len, len(text)) + text


TEXTS = [(b"revision %d " % i) * (50 + i * 13) for i in range(40)]


def stream():
    """A changelog group, a filelog name, its group, then the end."""
    out = [chunk(delta_against_nothing(TEXTS[0])), b"\0\0\0\0"]
    out.append(chunk(b"a/file/name"))
    for i, text in enumerate(TEXTS[1:], 1):
        if i % 3:
            out.append(chunk(delta_against_nothing(text)))
        else:
            out.append(chunk(delta(100, text)))
    out.append(b"\0\0\0\0\0\0\0\0")
    return b"".join(out)


def fed(data, block):
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    for pos in range(0, len(data), block):
        ahead.feed(data[pos : pos + block])
    return ahead


def expected():
    """What is compressed ahead: texts of deltas against nothing, the other
    deltas as they came, unless small (the applying thread's to compress)."""
    for i, text in enumerate(TEXTS):
        if i == 0 or i % 3:
            if len(text) >= precompress._MIN_TEXT:
                yield text
        elif len(text) + 12 >= precompress._MIN_DELTA:
            yield struct.pack(">lll", 3, 100, len(text)) + text


MADE = len(list(expected()))


@pytest.mark.parametrize("block", [1, 7, 100, 4096, 1 << 20])
def test_every_revision_found_however_the_blocks_fall(block):
    ahead = fed(stream(), block)
    assert ahead.failure is None
    assert ahead.made == MADE
    # (tiny blocks: what is more than _KEEP_BLOCKS behind is dropped)
    last = list(expected())[-1]
    assert ahead.take(last) == zlib.compress(last)


@pytest.mark.parametrize("block", [16384, 1 << 20])
def test_every_revision_handed_over(block):
    ahead = fed(stream(), block)
    for data in expected():
        found = ahead.take(data)
        assert found == zlib.compress(data)
    assert ahead.made == MADE
    assert ahead.hits == MADE and ahead.misses == 0


def test_what_was_not_made_is_a_miss():
    ahead = fed(stream(), 1 << 20)
    assert ahead.take(b"never seen" * 20) is precompress.MISS
    # taken once: a second ask is the applying thread's to compress
    first = next(expected())
    assert ahead.take(first) is not precompress.MISS
    assert ahead.take(first) is precompress.MISS
    # only bytes are looked up (a bytearray is compressed where it is)
    assert ahead.take(bytearray(list(expected())[1])) is precompress.MISS
    assert ahead.misses == 3


def test_first_block_is_followed_not_compressed():
    data = stream()
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    ahead.feed(data[:3000], compress=False)
    ahead.feed(data[3000:])
    # the revisions completed in the first block were not compressed; the
    # rest were, found from the right chunk boundaries
    assert 0 < ahead.made < MADE
    assert ahead.take(TEXTS[-2]) == zlib.compress(TEXTS[-2])
    assert ahead.failure is None


def test_an_oversized_chunk_is_passed_over():
    big = struct.pack(">l", precompress._MAX_SIZE + 10) + b"x" * 200
    rest = precompress._MAX_SIZE + 10 - 4 - 200
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    ahead.feed(big)
    ahead.feed(b"y" * rest + chunk(delta_against_nothing(TEXTS[5])))
    assert ahead.take(TEXTS[5]) == zlib.compress(TEXTS[5])
    assert ahead.made == 1


def test_a_failing_compressor_stops_the_guessing_not_the_reading():
    class Broken:
        def compress(self, data):
            raise MemoryError("no room")

    ahead = precompress.CompressAhead(Broken(), b"key", HEADER)
    ahead.feed(stream())  # no exception
    assert isinstance(ahead.failure, MemoryError)
    ahead.feed(stream())
    assert ahead.made == 0
    assert ahead.take(TEXTS[0]) is precompress.MISS


def test_unclaimed_results_are_dropped():
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    ahead.feed(chunk(delta_against_nothing(TEXTS[3])))
    for _ in range(precompress._KEEP_BLOCKS + 2):
        ahead.feed(b"\0\0\0\0")
    assert ahead.take(TEXTS[3]) is precompress.MISS


class Source:
    def __init__(self, data, fail_at=None):
        self._data = data
        self._pos = 0
        self._fail_at = fail_at

    def read(self, n):
        if self._fail_at is not None and self._pos >= self._fail_at:
            raise OSError("connection reset")
        out = self._data[self._pos : self._pos + n]
        self._pos += len(out)
        return out


def test_reading_gives_the_stream_back_whole():
    data = stream() * 3
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    reader, stop = precompress.reading(Source(data), 256, ahead)
    got = []
    while True:
        block = reader.read(97)
        if not block:
            break
        got.append(block)
    stop()
    assert b"".join(got) == data
    assert ahead.made > 0


def test_reading_a_small_stream_starts_no_thread():
    data = stream()
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    source = Source(data)
    reader, stop = precompress.reading(source, len(data) + 1, ahead)
    # nothing read before the parser asks (stock's order of reads and errors)
    assert source._pos == 0
    assert reader.read(10) + reader.read(len(data)) == data
    assert not reader.threaded
    assert reader.read(10) == b""


def test_a_read_error_reaches_the_applying_thread():
    data = stream() * 3
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    reader, stop = precompress.reading(Source(data, fail_at=1024), 256, ahead)
    with pytest.raises(OSError, match="connection reset"):
        while reader.read(256):
            pass
    stop()


APPLY = textwrap.dedent(r"""
    import sys, threading
    from mercurial import demandimport
    demandimport.enable()
    from mercurial import dispatch
    try:
        from mercurial.main_script import request
    except ImportError:
        request = dispatch.request
    code = dispatch.dispatch(request([a.encode() for a in sys.argv[1:]]))
    names = sorted(t.name for t in threading.enumerate())
    sys.stderr.write("threads: %s\n" % names)
    sys.exit(code)
    """)


def test_no_reading_thread_outlives_an_apply(tmp_path):
    ext = EXTPATH
    env = dict(os.environ, HGRCPATH=os.devnull, HGUSER="test")
    src = tmp_path / "src"
    script = tmp_path / "apply.py"
    script.write_text(APPLY)

    def run(*args):
        return subprocess.run(
            [sys.executable, str(script)] + list(args),
            env=env,
            capture_output=True,
            cwd=str(tmp_path),
        )

    assert run("init", str(src)).returncode == 0
    for i in range(60):
        (src / ("f%02d" % i)).write_bytes(TEXTS[i % len(TEXTS)] * 3)
    assert run("-R", str(src), "commit", "-qAm", "one").returncode == 0
    bundle = str(tmp_path / "all.hg")
    assert run("-R", str(src), "bundle", "-q", "-a", bundle).returncode == 0
    assert run("init", str(tmp_path / "dst")).returncode == 0
    out = run(
        "-R",
        str(tmp_path / "dst"),
        "unbundle",
        bundle,
        "--config",
        "extensions.fastio=%s" % ext,
        "--config",
        "fastio.buffer-size=64k",
        "--config",
        "fastio.report=yes",
        "--config",
        "fastio.compress-ahead=yes",
    )
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert "fastio: compressed ahead:" in err
    assert "threads: ['MainThread']" in err


def test_small_revisions_are_left_to_the_applying_thread():
    text = b"short" * 20
    small = struct.pack(">lll", 3, 100, len(text)) + text
    data = chunk(b"H" * HEADER + small) + chunk(delta_against_nothing(text))
    ahead = fed(data + b"\0\0\0\0", 4096)
    assert ahead.made == 0
    assert ahead.take(small) is precompress.MISS
    assert ahead.take(text) is precompress.MISS


def test_the_c_walk_is_the_python_walk():
    import random

    if precompress.revision_spans is None:
        pytest.skip("_streamscan not built")
    rng = random.Random(7)
    base = stream()
    for trial in range(300):
        data = bytearray(base[: rng.randrange(len(base))])
        for _ in range(rng.randrange(4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        if trial % 3 == 0:
            data = bytearray(rng.randbytes(rng.randrange(200)))
        args = (bytes(data), rng.choice([80, 100, 102, 103]), 64, 2048, 1 << 12)
        assert precompress.revision_spans(*args) == precompress._revision_spans_py(
            *args
        )


def small_deltas(count):
    text = b"a small change\n" * 10
    one = chunk(b"H" * HEADER + struct.pack(">lll", 3, 100, len(text)) + text)
    return one * count


class Clock:
    """``time`` for precompress: every reading takes 1 us, wall and CPU
    (a busy machine's pauses do not make a fast source look slow)."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1e-6
        return self.now

    thread_time = perf_counter


def test_no_thread_where_it_would_not_pay(monkeypatch):
    # a fast source of small deltas: nothing worth the lock's hand-overs
    monkeypatch.setattr(precompress, "time", Clock())
    block = 4096
    data = small_deltas(200)
    assert len(data) > 2 * block
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    reader, stop = precompress.reading(Source(data), block, ahead)
    got = b""
    while True:
        block = reader.read(len(data) + 1)
        if not block:
            break
        got += block
    assert got == data
    assert not reader.threaded
    stop()


def test_a_thread_where_reading_is_slow():
    import time

    class Slow(Source):
        def read(self, n):
            time.sleep(0.01)
            return super().read(n)

    data = small_deltas(200)
    ahead = precompress.CompressAhead(Zlib(), b"key", HEADER)
    reader, stop = precompress.reading(Slow(data), 4096, ahead)
    got = b""
    while len(got) < len(data):
        block = reader.read(4096)
        assert block
        got += block
        assert reader.threaded
    stop()
    assert got == data


class Costly(Source):
    """A source whose reads cost CPU time (as decompressing bzip2 does)."""

    def read(self, n):
        import time

        started = time.thread_time()
        while time.thread_time() - started < 0.03:
            pass
        return super().read(n)


class Waiting(Source):
    """A source whose reads wait without costing CPU time (a network)."""

    def read(self, n):
        import time

        time.sleep(0.02)
        return super().read(n)


@pytest.mark.parametrize(
    "kind, threaded", [(Source, False), (Waiting, False), (Costly, True)]
)
def test_without_compressing_ahead_a_thread_only_where_reading_costs_cpu(
    kind, threaded
):
    # fastio.compress-ahead off: a reading thread decompresses a bzip2 or
    # gzip bundle on the other core; a read that only waits gets none
    # (1 MB blocks: a thread where a block costs 10 ms of CPU time; a
    # Waiting read sleeps 20 ms and costs well under 1 ms, a Costly one 30)
    block = 1 << 20
    data = small_deltas(10000)
    assert len(data) > 2 * block
    reader, stop = precompress.reading(kind(data), block, None)
    got = b""
    while len(got) < len(data):
        part = reader.read(block)
        assert part
        got += part
    assert reader.read(block) == b""
    stop()
    assert got == data
    assert reader.threaded == threaded
