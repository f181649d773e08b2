"""A checkout (``hg update``) with the extension: each directory audited and
made once per block (``checkout.py``), the checks whose answer is known
skipped in a fresh working directory, the same working copy as stock's,
and stock's path checks still refusing what they refuse."""

import os
import subprocess
import sys
import types

import pytest

from conftest import EXTPATH, HELPERS

HG = os.path.join(os.path.dirname(sys.executable), "hg")
COUNTER = os.path.join(HELPERS, "wvfscount.py")
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
    # mkdir, lstat, stat, how many of them ran with gc frozen, unlink
    return tuple(map(int, out.read_text().split()))


def test_each_directory_made_and_audited_once(source):
    stock_mkdirs, stock_lstats, stock_stats, stock_frozen, stock_unlinks = counted(
        source, "stock-count", False
    )
    mkdirs, lstats, stats, frozen, unlinks = counted(source, "fastio-count", True)
    files = DIRS * PER_DIR
    # stock: a mkdir per file (EEXIST for all but the first of a directory)
    assert stock_mkdirs >= files
    # fastio: those that make a directory (twice for a directory whose
    # parent is made too: util.makedirs tries it, makes the parent, retries)
    assert mkdirs <= 2 * (DIRS + 3), (mkdirs, stock_mkdirs)
    # stock lstats every ancestor of every file twice (clearunknown, the
    # write) and each file twice (its flags, the dirstate); fastio each
    # ancestor once, and each file once (the dirstate: in a fresh working
    # directory a plain file just written has no flags to change)
    assert stock_lstats >= 6 * files
    assert lstats <= files + 4 * (DIRS + 3), (lstats, stock_lstats)
    # stock stats each file's path (clearunknown: a directory in the way?);
    # nothing can be in the way in a fresh working directory (what is left:
    # stock's stats of the directories)
    assert stock_stats >= files
    assert stats <= stock_stats - files, (stats, stock_stats)
    # stock's vfs unlinks each file before writing it (a hardlink is not
    # written through); in a fresh working directory none is there yet
    assert stock_unlinks >= files
    assert unlinks == 0, (unlinks, stock_unlinks)
    # fastio's update runs with the command's objects frozen out of the
    # garbage collector (gc.freeze), for the worker processes it forks
    assert stock_frozen == 0
    # (each file's lstat among them)
    assert frozen >= files, (frozen, mkdirs, lstats, stats)


@pytest.fixture(scope="module")
def two_revisions(tmp_path_factory):
    """Revision 0: a few files, one executable; revision 1: that one's
    content and mode changed, a file removed, files added."""
    tmp = tmp_path_factory.mktemp("revisions")
    env = dict(os.environ, HGRCPATH=os.devnull, HGPLAIN="1", HGUSER="t")
    src = tmp / "src"
    subprocess.run([HG, "init", str(src)], env=env, check=True)
    (src / "a").mkdir()
    for i in range(20):
        (src / "a" / ("f%d" % i)).write_text("%d\n" % i)
    (src / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "run.sh", 0o755)
    subprocess.run([HG, "-R", str(src), "commit", "-qAm", "0"], env=env, check=True)
    (src / "run.sh").write_text("not run\n")
    os.chmod(src / "run.sh", 0o644)
    os.unlink(src / "a" / "f0")
    (src / "b").mkdir()
    (src / "b" / "new").write_text("new\n")
    (src / "a" / "added").write_text("added\n")
    subprocess.run([HG, "-R", str(src), "commit", "-qAm", "1"], env=env, check=True)
    return tmp, env, src


@pytest.mark.parametrize("case", ["modes", "modes-atomic", "dir-in-the-way"])
def test_update_in_a_used_working_copy_is_stocks(two_revisions, case):
    # not fresh: the checks run as stock's (the executable loses its exec
    # bit, also when written through a temporary copy of the old file,
    # which has its mode; an empty directory where a new file goes is
    # removed)
    tmp, env, src = two_revisions
    in_the_way = case == "dir-in-the-way"
    trees = {}
    for fastio in (False, True):
        dest = tmp / ("%s-%s" % ("fastio" if fastio else "stock", case))
        subprocess.run(
            [HG, "clone", "-q", "-U", str(src), str(dest)], env=env, check=True
        )
        args = [HG, "-R", str(dest)]
        if fastio:
            args += ["--config", "extensions.fastio=%s" % EXTPATH]
        if case == "modes-atomic":
            args += ["--config", "experimental.update.atomic-file=yes"]
        subprocess.run(args + ["update", "-q", "0"], env=env, check=True)
        assert os.stat(dest / "run.sh").st_mode & 0o111
        if in_the_way:
            (dest / "b" / "new").mkdir(parents=True)
        done = subprocess.run(
            args + ["update", "-q", "1"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        trees[fastio] = tree(dest)
        status = subprocess.run(
            [HG, "-R", str(dest), "status"], env=env, capture_output=True, check=True
        )
        assert status.stdout == b""
    assert trees[True] == trees[False]
    assert trees[True]["run.sh"][0] == oct(0o100644)
    assert trees[True]["b/new"][1] == b"new\n"


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


def test_workers_get_whole_directories(monkeypatch):
    """During an update, Mercurial's workers get runs of whole directories
    (the kernel lets one create at a time into a directory), not every
    n-th file; elsewhere Mercurial's partition is untouched."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(EXTPATH)))
    from hgext3rd.fastio import checkout as co

    items = [(b"a/%d" % i, None, b"") for i in range(10)]
    items += [(b"b/%d" % i, None, b"") for i in range(3)]
    items += [(b"c/d/%d" % i, None, b"") for i in range(7)]
    everynth = lambda lst, n: [lst[i::n] for i in range(n)]  # noqa: E731
    assert co._partition(everynth, items, 3) == everynth(items, 3)
    monkeypatch.setattr(co, "_applying", 1)
    for slices in (2, 3, 4, 20):
        runs = co._partition(everynth, items, slices)
        assert [x for run in runs for x in run] == items
        assert all(runs) and len(runs) <= slices
    assert [len(run) for run in co._partition(everynth, items, 3)] == [10, 3, 7]
    assert [len(run) for run in co._partition(everynth, items, 2)] == [10, 10]


def test_more_workers_on_a_filesystem_known_slow(source, monkeypatch):
    """Twice Mercurial's workers when an apply of this command found the
    working copy's filesystem slow; Mercurial's own count otherwise, and
    whenever worker.numcpus is set."""
    tmp, env, src = source
    sys.path.insert(0, os.path.dirname(os.path.dirname(EXTPATH)))
    from mercurial import hg, ui as uimod

    from hgext3rd.fastio import checkout as co, compat, config
    from hgext3rd.fastio.writer import filewriter

    # (the extension is not loaded here: its wrappers would stay in this
    # process for the tests after this one; no probe entry either)
    monkeypatch.setattr(
        config,
        "settings",
        lambda ui: types.SimpleNamespace(
            write_mode=config.MODE_AUTO, probe_max_age_s=0, threshold_ns=0
        ),
    )
    ui = uimod.ui.load()
    repo = hg.repository(ui, str(src).encode())
    base = repo.wvfs.base
    ui = repo.ui
    default = compat.worker_count(ui)
    with co._workers_for(repo, base):
        assert compat.worker_count(ui) == default
    monkeypatch.setattr(filewriter, "_slow_devices", {os.stat(base).st_dev})
    with co._workers_for(repo, base):
        assert compat.worker_count(ui) == min(32, 2 * default)
    assert compat.worker_count(ui) == default
    ui.setconfig(b"worker", b"numcpus", b"3")
    with co._workers_for(repo, base):
        assert compat.worker_count(ui) == 3
