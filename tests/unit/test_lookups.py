"""Round trips left on the applying thread (issue 41): on a network
filesystem every lookup of a path is one.  A stream apply and a changegroup
apply into an empty repository look up none of the new directories they
make (nothing is in a directory the extension made but what it made
there), counted by the latency shim (fixtures/latency.c) on the applying
(main) thread, for the paths under the store's ``data/``."""

import os
import subprocess
import sys

import pytest

from conftest import EXTPATH, FIXTURES

import latencyshim

HG = os.path.join(os.path.dirname(sys.executable), "hg")
FILES = 800  # 50 directories of 16 files, in 4 parents


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    base = tmp_path_factory.mktemp("lookups")
    try:
        shim = latencyshim.build(str(base))
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no gcc")
    repo = str(base / "repo")
    subprocess.run(
        [sys.executable, os.path.join(FIXTURES, "makerepo.py"), repo, str(FILES)]
        + ["--hg", HG],
        check=True,
    )
    made = {}
    for kind, spec in (("stream", "none-v2;stream=v2"), ("zstd", "zstd-v2")):
        made[kind] = str(base / kind)
        subprocess.run(
            [HG, "-R", repo, "bundle", "-q", "-a", "-t", spec, made[kind]],
            env=dict(os.environ, HGRCPATH=""),
            check=True,
        )
    return base, shim, made


def applying_thread_counts(base, shim, bundle, name):
    dest = str(base / name)
    counts = str(base / (name + ".counts"))
    env = dict(os.environ, HGRCPATH="", HGPLAIN="1")
    subprocess.run([HG, "init", dest], env=env, check=True)
    env.update(
        LD_PRELOAD=shim,
        FASTIO_LATENCY_COUNTS=counts,
        FASTIO_COUNT_PATH=os.path.join(dest, ".hg", "store", "data") + "/",
    )
    subprocess.run(
        [HG, "-R", dest, "--config", "extensions.fastio=" + EXTPATH]
        + ["unbundle", "-q", bundle],
        env=env,
        check=True,
    )
    with open(counts) as f:
        line = [l for l in f if "comm=hg" in l or "comm=python" in l][-1]
    fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    subprocess.run([HG, "-R", dest, "verify", "-q"], env=dict(env, LD_PRELOAD=""))
    return {k[5:]: int(v) for k, v in fields.items() if k.startswith("main.")}


@pytest.mark.parametrize("kind", ["stream", "zstd"])
def test_no_lookup_of_new_directories(bundles, kind):
    base, shim, made = bundles
    counts = applying_thread_counts(base, shim, made[kind], "dest-" + kind)
    directories = FILES // 16
    assert counts["mkdir"] <= directories + 8  # made once each
    # the first of each level (data/src, its first child, ...) is looked
    # up; the 50 directories made under them are not
    assert counts["lookup"] <= 8, (counts, directories)
