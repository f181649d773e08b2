"""The history-rich benchmark repository (``fixtures/makeproject.py``) is the
same store byte for byte for the same seed, and another for another seed:
the changegroup bench caches it by its parameters."""

import os
import subprocess
import sys

from conftest import ROOT  # noqa: E402

MAKEPROJECT = os.path.join(ROOT, "fixtures", "makeproject.py")
STORECOMPARE = os.path.join(ROOT, "fixtures", "storecompare.py")


def build(dest, seed):
    env = dict(os.environ, HGRCPATH="", HGPLAIN="1")
    subprocess.run(
        [sys.executable, MAKEPROJECT, str(dest), "--files", "80"]
        + ["--commits", "120", "--seed", str(seed)],
        env=env,
        check=True,
        capture_output=True,
    )


def same(a, b):
    return (
        subprocess.run(
            [sys.executable, STORECOMPARE, str(a), str(b)], capture_output=True
        ).returncode
        == 0
    )


def test_deterministic(tmp_path):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        build(tmp_path / name, seed)
    assert same(tmp_path / "a", tmp_path / "b")
    assert not same(tmp_path / "a", tmp_path / "c")
