"""What an apply creates outside the journal's reach goes when its
transaction aborts, whichever writer made it; the list ``hg recover`` reads
is only trusted for plain relative paths."""

import gc
import os
import subprocess
import sys
import weakref

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mercurial import hg, ui as uimod  # noqa: E402

from hgext3rd.fastio import filewriter, newpaths, storewriter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HG = os.path.join(os.path.dirname(sys.executable), "hg")


def hg_recover(repo):
    """``hg recover`` with the extension on (it wraps the rollback)."""
    env = dict(os.environ, HGRCPATH=os.devnull)
    ext = "extensions.fastio=" + os.path.join(ROOT, "hgext3rd", "fastio")
    return subprocess.run(
        [HG, "-R", repo.root, "recover", "--config", ext, "-q"],
        env=env,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    ui = uimod.ui.load()
    ui.setconfig(b"ui", b"quiet", b"yes")
    return hg.repository(ui, str(tmp_path / "repo").encode(), create=True)


def _writer(repo, tr):
    targets = {b"s": (repo.svfs, True), b"c": (repo.cachevfs, False)}
    return storewriter.StoreWriter(
        repo, tr, targets, filewriter.FileWriter(mode=filewriter.MODE_NEVER)
    )


def _listing(repo):
    found = []
    for root, dirs, files in os.walk(repo.root):
        for name in dirs + files:
            path = os.path.relpath(os.path.join(root, name), repo.root)
            found.append(path.decode())
    return sorted(p for p in found if not p.startswith(".hg/journal"))


def test_two_writers_of_one_transaction_are_both_undone(repo):
    before = _listing(repo)
    with repo.lock():
        tr = repo.transaction(b"test")
        first, second = _writer(repo, tr), _writer(repo, tr)
        first.write_batch(b"xy", [(b"s", b"data/one/x.i", 0, 1)])
        second.write_batch(b"xy", [(b"s", b"data/two/deep/y.i", 1, 1)])
        first.write_batch(b"xy", [(b"c", b"newcache/z", 0, 2)])
        assert os.path.isdir(repo.svfs.join(b"data/two/deep"))
        assert os.path.exists(repo.cachevfs.join(b"newcache/z"))
        assert os.path.exists(repo.svfs.join(newpaths.LIST_NAME))
        tr.release()
    assert _listing(repo) == before


def test_the_list_is_gone_after_a_successful_transaction(repo):
    with repo.lock():
        with repo.transaction(b"test") as tr:
            _writer(repo, tr).write_batch(b"x", [(b"s", b"data/one/x.i", 0, 1)])
    assert not os.path.exists(repo.svfs.join(newpaths.LIST_NAME))
    assert os.path.exists(repo.svfs.join(b"data/one/x.i"))


def test_a_transaction_that_recorded_paths_is_freed(repo):
    # (the list's entry is keyed weakly by the transaction: its value must
    # not keep the key alive)
    with repo.lock():
        with repo.transaction(b"test") as tr:
            _writer(repo, tr).write_batch(b"x", [(b"s", b"data/one/x.i", 0, 1)])
            assert any(newpaths.recorded(tr))
    ref = weakref.ref(tr)
    del tr
    gc.collect()
    assert ref() is None


def test_recover_removes_what_a_killed_apply_recorded(repo, tmp_path):
    script = (
        "import os, signal, sys\n"
        "sys.path.insert(0, %r)\n"
        "from mercurial import hg, ui as uimod\n"
        "from hgext3rd.fastio import filewriter, storewriter\n"
        "repo = hg.repository(uimod.ui.load(), %r)\n"
        "lock = repo.lock()\n"
        "tr = repo.transaction(b'test')\n"
        "w = storewriter.StoreWriter(repo, tr, {b's': (repo.svfs, True)},"
        " filewriter.FileWriter(mode=filewriter.MODE_NEVER))\n"
        "w.write_batch(b'x', [(b's', b'data/one/two/x.i', 0, 1)])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    ) % (ROOT, repo.root)
    before = _listing(repo)
    killed = subprocess.run([sys.executable, "-c", script])
    assert killed.returncode == -9
    assert os.path.isdir(repo.svfs.join(b"data/one/two"))
    assert hg_recover(repo).returncode == 0
    assert _listing(repo) == before


def test_a_hostile_list_removes_nothing_outside(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    inside = repo.svfs.join(b"data/new")
    os.makedirs(inside)
    entries = [
        b"store\0../../../outside/",
        b"store\0/%s/" % str(outside).encode(),
        b"plain\0../outside/keep",
        b"store\0data/./new/",
        b"store\0data/new/",
    ]
    with open(repo.svfs.join(newpaths.LIST_NAME), "wb") as fh:
        fh.write(b"".join(e + b"\n" for e in entries))
    with open(repo.svfs.join(b"journal"), "wb"):
        pass
    assert hg_recover(repo).returncode == 0
    assert (outside / "keep").read_text() == "keep"
    assert not os.path.exists(inside)


def test_recover_removes_the_temporaries_of_atomic_writes(repo):
    # a process killed while Mercurial wrote the fncache or the phaseroots
    # at a transaction's close (seen in make stress's SIGKILL trials)
    store = repo.svfs.join(b"").decode()
    temporaries = [".fncache-gfv__sz0~", ".phaseroots-05zdwel3~"]
    kept = ["notes~", ".fncache-toolong123~", "fncache-abcdefgh~"]
    for name in temporaries + kept:
        with open(os.path.join(store, name), "w") as f:
            f.write("x")
    os.mkdir(os.path.join(store, ".dir-abcdefgh~"))
    # stock's hg recover: Mercurial's rollback does not know of them
    open(repo.svfs.join(b"journal"), "wb").close()
    env = dict(os.environ, HGRCPATH=os.devnull)
    cmd = [HG, "-R", repo.root, "recover", "-q"]
    assert subprocess.run(cmd, env=env).returncode == 0
    assert all(os.path.exists(os.path.join(store, n)) for n in temporaries)
    open(repo.svfs.join(b"journal"), "wb").close()
    assert hg_recover(repo).returncode == 0
    left = set(os.listdir(store))
    assert not set(temporaries) & left
    assert set(kept) | {".dir-abcdefgh~"} <= left
