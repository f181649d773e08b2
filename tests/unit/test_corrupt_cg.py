"""Corrupt changegroups that stock Mercurial answers with a traceback (found
by ``make stress``) end with one ``abort:`` line and an unchanged
repository: a file name with a newline or a NUL (the newline also corrupts
the journal, so that stock's rollback itself fails), and a delta that does
not apply."""

import os
import shutil
import struct
import subprocess
import sys

import pytest

import bundlekit
from conftest import EXTPATH

HG = os.path.join(os.path.dirname(sys.executable), "hg")
CG1_HEADER = 80  # node, p1, p2, changeset


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corruptcg")
    (tmp / "hgrc").write_text(
        "[ui]\nusername = t\n[extensions]\nfastio = %s\n" % EXTPATH
    )
    env = dict(os.environ, HGRCPATH=str(tmp / "hgrc"), HGPLAIN="1")
    src = tmp / "src"
    subprocess.run([HG, "init", str(src)], env=env, check=True)
    os.makedirs(src / "dir")
    for i in range(5):
        (src / "dir" / ("f%d" % i)).write_text("content %d\n" % i * 20)
    subprocess.run([HG, "-R", str(src), "commit", "-qAm", "a"], env=env, check=True)
    bundle = tmp / "cg1.hg"
    subprocess.run(
        [HG, "-R", str(src), "bundle", "-q", "-a", "-t", "none-v1", str(bundle)],
        env=env,
        check=True,
    )
    return tmp, env, bundle.read_bytes()


def snapshot(repo):
    out = {}
    for root, dirs, files in os.walk(repo):
        rel = os.path.relpath(root, repo)
        if rel.startswith(os.path.join(".hg", "cache")):
            continue
        out[rel] = None
        for f in files:
            if f == "journal.desc" and rel == ".hg":
                continue
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.join(rel, f)] = fh.read()
    return out


def unbundle(work, data):
    tmp, env, __ = work
    dest = tmp / "dest"
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run([HG, "init", str(dest)], env=env, check=True)
    before = snapshot(dest)
    bundle = tmp / "corrupt.hg"
    bundle.write_bytes(data)
    proc = subprocess.run(
        [HG, "-R", str(dest), "unbundle", "-q", str(bundle)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.returncode == 255, proc.stdout
    assert b"Traceback" not in proc.stdout, proc.stdout
    aborts = [l for l in proc.stdout.splitlines() if l.startswith(b"abort:")]
    assert len(aborts) == 1, proc.stdout
    assert snapshot(dest) == before
    return aborts[0]


def with_name(cg, name):
    pos, length = cg.name_chunks()[0]
    chunk = struct.pack(">i", len(name) + 4) + name
    return cg.build(cg.payload[:pos] + chunk + cg.payload[pos + length :])


@pytest.mark.parametrize("name", [b"dir/a\nb", b"dir/a\0b", b"dir/a\rb"])
def test_unstorable_file_name(work, name):
    cg = bundlekit.Changegroup.parse(work[2])
    line = unbundle(work, with_name(cg, name))
    assert line.startswith(b"abort: corrupt changegroup: invalid file name"), line


def test_delta_that_does_not_apply(work):
    cg = bundlekit.Changegroup.parse(work[2])
    pos, length = cg.name_chunks()[0]
    # the first revision of the first file: a delta against nothing, whose
    # one hunk now claims more data than the chunk has
    delta = pos + length + 4 + CG1_HEADER
    payload = bytearray(cg.payload)
    payload[delta : delta + 12] = struct.pack(">lll", 0, 0, 1 << 20)
    line = unbundle(work, cg.build(bytes(payload)))
    assert line.startswith(b"abort: corrupt changegroup: a delta does not apply"), line


def test_chunk_shorter_than_its_delta_header(work):
    cg = bundlekit.Changegroup.parse(work[2])
    pos, length = cg.name_chunks()[0]
    # the first delta chunk of the first file: 10 bytes long, less than
    # the 80-byte header (stock reads a negative length)
    delta = pos + length
    payload = cg.payload[:delta] + struct.pack(">i", 14) + cg.payload[delta + 4 :]
    line = unbundle(work, cg.build(payload))
    assert line.startswith(b"abort: corrupt changegroup: invalid delta chunk"), line
