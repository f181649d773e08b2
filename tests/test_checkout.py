"""A checkout (``hg update``) with the extension: each directory audited and
made once per block (``checkout.py``), the same working copy as stock's,
and stock's path checks still refusing what they refuse."""

import os
import subprocess
import sys

import pytest

from conftest import EXTPATH

HG = os.path.join(os.path.dirname(sys.executable), "hg")
COUNTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wvfscount.py")
DIRS = 12
PER_DIR = 30  # 360 files: enough for stock's worker processes


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("checkout")
    env = dict(os.environ, HGRCPATH=os.devnull, HGPLAIN="1", HGUSER="t")
    src = tmp / "src"
    subprocess.run([HG, "init", str(src)], env=env, check=True)
    for d in range(DIRS):
        sub = src / ("top%d" % (d % 3)) / ("dir%d" % d)
        sub.mkdir(parents=True)
        for i in range(PER_DIR):
            (sub / ("f%d" % i)).write_text("file %d of %d\n" % (i, d) * (i + 1))
    (src / "top0" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "top0" / "run.sh", 0o755)
    os.symlink("top1", src / "link")
    subprocess.run([HG, "-R", str(src), "commit", "-qAm", "tree"], env=env, check=True)
    return tmp, env, src


def checkout(tmp, env, src, name, fastio, *config):
    dest = tmp / name
    subprocess.run([HG, "clone", "-q", "-U", str(src), str(dest)], env=env, check=True)
    args = [HG, "-R", str(dest)]
    if fastio:
        args += ["--config", "extensions.fastio=%s" % EXTPATH]
    for item in config:
        args += ["--config", item]
    done = subprocess.run(
        args + ["update", "-q", "tip"], env=env, capture_output=True, text=True
    )
    return dest, done


def tree(root):
    out = {}
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".hg"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            else:
                with open(path, "rb") as f:
                    out[rel] = (oct(st.st_mode), f.read())
    return out


def test_checkout_with_workers_is_stocks(source):
    tmp, env, src = source
    stock, done = checkout(tmp, env, src, "stock-workers", False)
    assert done.returncode == 0, done.stderr
    fast, done = checkout(tmp, env, src, "fastio-workers", True, "fastio.report=yes")
    assert done.returncode == 0, done.stderr
    # (the report of each worker's block: the extension wrote the files)
    assert "working copy files" in done.stderr, done.stderr
    assert tree(fast) == tree(stock)
    assert len(tree(fast)) == DIRS * PER_DIR + 2
    status = subprocess.run(
        [HG, "-R", str(fast), "status"], env=env, capture_output=True, check=True
    )
    assert status.stdout == b""


def counted(source, name, fastio):
    tmp, env, src = source
    out = tmp / (name + ".count")
    env = dict(env, FASTIO_WVFSCOUNT=str(out))
    dest, done = checkout(
        tmp,
        env,
        src,
        name,
        fastio,
        "worker.enabled=no",
        "extensions.wvfscount=%s" % COUNTER,
    )
    assert done.returncode == 0, done.stderr
    mkdirs, lstats = map(int, out.read_text().split())
    return mkdirs, lstats


def test_each_directory_made_and_audited_once(source):
    stock_mkdirs, stock_lstats = counted(source, "stock-count", False)
    mkdirs, lstats = counted(source, "fastio-count", True)
    files = DIRS * PER_DIR
    # stock: a mkdir per file (EEXIST for all but the first of a directory)
    assert stock_mkdirs >= files
    # fastio: those that make a directory (twice for a directory whose
    # parent is made too: util.makedirs tries it, makes the parent, retries)
    assert mkdirs <= 2 * (DIRS + 3), (mkdirs, stock_mkdirs)
    # stock lstats every ancestor of every file twice (clearunknown, the
    # write); fastio each ancestor once; both lstat each file twice (its
    # flags, the dirstate)
    assert stock_lstats >= 6 * files
    assert lstats <= 2 * files + 4 * (DIRS + 3), (lstats, stock_lstats)


def test_symlinked_directory_still_refused(source):
    # a directory of the checkout replaced by a symlink to elsewhere: stock's
    # audit refuses to write through it, and so does the cached one
    tmp, env, src = source
    results = {}
    for name, fastio in (("stock-link", False), ("fastio-link", True)):
        dest = tmp / name
        subprocess.run(
            [HG, "clone", "-q", "-U", str(src), str(dest)], env=env, check=True
        )
        outside = tmp / (name + "-outside")
        outside.mkdir()
        os.symlink(str(outside), dest / "top2")
        args = [HG, "-R", str(dest)]
        if fastio:
            args += ["--config", "extensions.fastio=%s" % EXTPATH]
        done = subprocess.run(
            args + ["update", "-q", "tip"], env=env, capture_output=True, text=True
        )
        # (which file meets the link first is the workers' race)
        last = done.stderr.splitlines()[-1:]
        results[name] = (
            done.returncode,
            [line.split(" traverses ")[-1] for line in last],
            os.listdir(outside),
        )
    assert results["fastio-link"] == results["stock-link"]
    assert results["fastio-link"] == (255, ["symbolic link 'top2'"], []), results
