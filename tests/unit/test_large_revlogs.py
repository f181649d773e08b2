"""Revlog files the changegroup writer does not keep in memory.

A new revlog file larger than ``revlogwriter._SPILL_BYTES`` is created on
the applying thread and written as it goes, and a revlog that exists is
appended to through a handle whose descriptor goes to the file writer when
it closes.  Both end byte-identical to stock's store.
"""

import os
import subprocess
import sys

import pytest

from conftest import EXTPATH, FIXTURES

HG = os.path.join(os.path.dirname(sys.executable), "hg")


def hg(*args, mode=None, cwd=None):
    env = dict(os.environ, HGRCPATH="", HGPLAIN="1", HGUSER="test")
    cmd = [HG]
    if mode is not None:
        # (a changegroup of one changeset goes through the writer too)
        cmd += ["--config", "extensions.fastio=%s" % EXTPATH]
        cmd += ["--config", "devel.fastio.small-applies=no"]
        cmd += ["--config", "fastio.background-write=%s" % mode]
    out = subprocess.run(
        cmd + list(args), cwd=cwd, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    base = tmp_path_factory.mktemp("large")
    src = str(base / "src")
    hg("init", src)
    big = os.path.join(src, "big")
    # incompressible: the revlog's data file is as large as the file
    with open(big, "wb") as f:
        f.write(os.urandom(3 << 20))
    hg("-R", src, "commit", "-qAm", "big")
    with open(big, "ab") as f:
        f.write(os.urandom(1 << 20))
    with open(os.path.join(src, "small"), "w") as f:
        f.write("small\n")
    hg("-R", src, "commit", "-qAm", "more")
    first, second = str(base / "first.hg"), str(base / "second.hg")
    hg("-R", src, "bundle", "-q", "-t", "none-v2", "-r", "0", first, "--base", "null")
    hg("-R", src, "bundle", "-q", "-t", "none-v2", "-r", "1", "--base", "0", second)
    return base, first, second


# always: new files are kept in memory for the file writer, and one that
# grows past the limit is created on the applying thread; never: each is
# created where it is opened
@pytest.mark.parametrize("mode", ["always", "never"])
def test_large_new_and_appended_revlogs_are_stocks(bundles, mode):
    base, first, second = bundles
    repos = {}
    for variant in ("stock", "fastio"):
        repo = str(base / ("%s-%s" % (variant, mode)))
        hg("init", repo)
        fastio = mode if variant == "fastio" else None
        # a new 3 MB revlog, then appended to
        hg("-R", repo, "unbundle", "-q", first, mode=fastio)
        hg("-R", repo, "unbundle", "-q", second, mode=fastio)
        hg("-R", repo, "verify", "-q")
        repos[variant] = repo
    data = os.path.join(repos["fastio"], ".hg", "store", "data", "big.d")
    assert os.path.getsize(data) > 4 << 20
    compare = subprocess.run(
        [sys.executable, os.path.join(FIXTURES, "storecompare.py")]
        + [repos["stock"], repos["fastio"]],
        capture_output=True,
        text=True,
    )
    assert compare.returncode == 0, compare.stdout
