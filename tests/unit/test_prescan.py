"""The name pre-scan of stream bundles read from files (prescan.py): every
bad name is found wherever it is, contents are skipped, the file is put back
where it was, and the C walk (_streamscan.c) and the Python one agree."""

import io
import random
import struct

import pytest

from mercurial import error

import bundlekit
from hgext3rd.fastio.apply import prescan

WALKERS = ["python"] + (["c"] if prescan._streamscan is not None else [])


@pytest.fixture(params=WALKERS)
def walker(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setattr(prescan, "_streamscan", None)
    return request.param


def framed(payload, size=4096):
    """A bundle2 part payload as it is in a bundle file, after a prefix."""
    out = [b"PREFIX"]
    for i in range(0, len(payload), size):
        chunk = payload[i : i + size]
        out.append(struct.pack(">i", len(chunk)) + chunk)
    out.append(struct.pack(">i", 0) + b"AFTER")
    return io.BytesIO(b"".join(out))


_BIG = random.Random(1).randbytes(300000)


def files(names, big=()):
    return [bundlekit.File(b"s", n, _BIG if n in big else _BIG[:50]) for n in names]


def v2_payload(fs):
    return b"".join(bundlekit.build_v2_file(f) for f in fs)


def v3_payload(fs):
    # entries of one or two files
    out, i, groups = [], 0, []
    while i < len(fs):
        n = min(len(fs) - i, 1 + i % 2)
        groups.append(n)
        out.append(bundlekit.uvarint(n) + v2_payload(fs[i : i + n]))
        i += n
    return bundlekit.uvarint(len(groups)) + b"".join(out)


def v1_payload(fs):
    return b"".join(b"%s\0%d\n%s" % (f.name, len(f.data), f.data) for f in fs)


def scan(version, fs, walk_files=None):
    count = len(fs) if walk_files is None else walk_files
    if version == 1:
        fh = io.BytesIO(b"PREFIX" + v1_payload(fs) + b"AFTER")
        fh.seek(6)
        source, walk = prescan._FileSource(fh), prescan._Walk(1, files=count)
    else:
        payload = v2_payload(fs) if version == 2 else v3_payload(fs)
        fh = framed(payload)
        fh.seek(6)
        source = prescan._PartSource(fh)
        if version == 2:
            walk = prescan._Walk(2, files=count)
        else:
            walk = prescan._Walk(3, groups=None)
    prescan._walk(fh, source, walk)
    assert fh.tell() == 6  # put back
    return walk


NAMES = [b"data/f%05d.i" % i for i in range(3000)]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_plain_stream_walked_to_the_end(walker, version):
    walk = scan(version, files(NAMES + [b"data/.hgtags.i"], big={NAMES[5]}))
    assert walk.done()


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("at", [0, 1500, -1])
@pytest.mark.parametrize(
    "bad", [b"data/../evil.i", b"/abs.i", b"data/.hg/hgrc.i", b"a\\..\\x", b"c:x", b""]
)
def test_bad_name_found_anywhere(walker, version, at, bad):
    names = list(NAMES)
    names[at] = bad
    # a large file before it: its content is skipped, not read
    with pytest.raises(error.Abort, match="refusing to write"):
        scan(version, files(names, big={NAMES[1]}))


def test_v1_names_checked_decoded(walker):
    names = list(NAMES)
    names[-1] = b"data/.hg.hg/x.i"
    with pytest.raises(error.Abort, match=r"'data/\.hg/x\.i'"):
        scan(1, files(names))


def test_v1_malformed_line_refused(walker):
    fs = files(NAMES[:10])
    fh = io.BytesIO(v1_payload(fs[:5]) + b"data/x.i\0NaN\n" + v1_payload(fs[5:]))
    with pytest.raises(error.ResponseError):
        prescan._walk(fh, prescan._FileSource(fh), prescan._Walk(1, files=10))
    assert fh.tell() == 0


@pytest.mark.parametrize("version", [1, 2, 3])
def test_truncated_stream_left_to_the_apply(walker, version):
    # the walk stops quietly, before the end: the apply reports it, in its
    # own words; the file is put back
    fs = files(NAMES[:100], big={NAMES[50]})
    if version == 1:
        data = v1_payload(fs)
        fh = io.BytesIO(data[: len(data) // 2])
        source, walk = prescan._FileSource(fh), prescan._Walk(1, files=100)
    else:
        payload = v2_payload(fs) if version == 2 else v3_payload(fs)
        fh = framed(payload[: len(payload) // 2])
        fh.seek(6)
        source = prescan._PartSource(fh)
        walk = prescan._Walk(version, files=100, groups=None if version == 3 else 0)
    start = fh.tell()
    prescan._walk(fh, source, walk)
    assert fh.tell() == start
    assert not walk.done()


def test_c_and_python_agree_on_mutated_streams(monkeypatch):
    if prescan._streamscan is None:
        pytest.skip("_streamscan not built")
    rng = random.Random(7)
    c_module = prescan._streamscan
    base = files(NAMES[:300], big={NAMES[3]})
    for trial in range(300):
        version = rng.choice((1, 2, 3))
        fs = [bundlekit.File(f.src, f.name, f.data) for f in base]
        for __ in range(rng.randrange(1, 3)):
            f = rng.choice(fs)
            name = bytearray(f.name)
            name[rng.randrange(len(name))] = rng.choice(b"/\\.\0\n:hg")
            f.name = bytes(name)
        outcomes = []
        for module in (c_module, None):
            monkeypatch.setattr(prescan, "_streamscan", module)
            try:
                walk = scan(version, fs)
                outcomes.append(("walked", walk.done()))
            except error.Abort as exc:
                outcomes.append(("refused", bytes(exc.message)))
            except error.ResponseError as exc:
                outcomes.append(("malformed", exc.args))
        assert outcomes[0] == outcomes[1], (trial, version, outcomes)
