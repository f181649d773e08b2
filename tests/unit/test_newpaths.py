"""What an apply creates outside the journal's reach goes when its
transaction aborts, whichever writer made it; ``hg recover`` obeys only the
list that the journal it rolls back names, only for plain relative paths,
and removes no file older than that list."""

import gc
import glob
import os
import time
import subprocess
import sys
import weakref

import pytest

from conftest import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import hg, ui as uimod  # noqa: E402

from hgext3rd.fastio.writer import filewriter
from hgext3rd.fastio.txn import newpaths
from hgext3rd.fastio.apply import storewriter

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


def _lists(repo):
    """The lists of new paths in the repository's .hg."""
    return glob.glob(os.path.join(repo.vfs.base.decode(), "fastio-newpaths*"))


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
        assert len(_lists(repo)) == 1
        tr.release()
    assert _listing(repo) == before


def test_the_list_is_gone_after_a_successful_transaction(repo):
    with repo.lock():
        with repo.transaction(b"test") as tr:
            _writer(repo, tr).write_batch(b"x", [(b"s", b"data/one/x.i", 0, 1)])
    assert _lists(repo) == []
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
        "from hgext3rd.fastio.writer import filewriter\n"
        "from hgext3rd.fastio.apply import storewriter\n"
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


def _journal(repo, *tmp_files):
    """An abandoned journal (empty) whose backup file names ``tmp_files``
    (``(location, name)``) as its temporary files, as Mercurial writes it."""
    with open(repo.svfs.join(b"journal"), "wb"):
        pass
    with open(repo.svfs.join(b"journal.backupfiles"), "wb") as fh:
        fh.write(b"2\n")
        for location, name in tmp_files:
            fh.write(b"%s\0\0%s\00\n" % (location, name))
    repo.vfs.write(b"journal.desc", b"0\ntest\n")


def _plant_list(repo, token, entries, since_ns=0, where=None):
    name = newpaths.LIST_PREFIX + token
    path = where or repo.vfs.join(name)
    with open(path, "wb") as fh:
        fh.write(b"fastio-newpaths 2 %s %d\n" % (token, since_ns))
        fh.write(b"".join(e + b"\n" for e in entries))
    return name


TOKEN = b"0123456789abcdef" * 2


def test_a_list_the_journal_does_not_name_is_ignored(repo, tmp_path):
    # the list of earlier releases, in the store (a stream could carry one)
    # and one in .hg that no journal names: both stay, and so does data/
    os.makedirs(repo.svfs.join(b"data/kept"))
    with open(repo.svfs.join(b"data/kept/x.i"), "wb") as fh:
        fh.write(b"x")
    with open(repo.svfs.join(b"fastio-newpaths"), "wb") as fh:
        fh.write(b"store\0data/\nstore\0data/kept/\nplain\0hgrc\n")
    repo.vfs.write(b"hgrc", b"[ui]\n")
    name = _plant_list(repo, TOKEN, [b"store\0data/", b"store\0data/kept/"])
    _journal(repo, (b"", b"fastio-newpaths"))
    before = _listing(repo)
    assert hg_recover(repo).returncode == 0
    after = _listing(repo)
    # Mercurial's rollback removes the temporary file its journal names
    gone = {p for p in set(before) - set(after) if "/journal" not in p}
    assert gone == {".hg/store/fastio-newpaths"}
    assert os.path.exists(repo.vfs.join(name))
    assert os.path.exists(repo.svfs.join(b"data/kept/x.i"))


def test_a_list_whose_header_names_another_token_is_ignored(repo):
    os.makedirs(repo.svfs.join(b"data/kept"))
    other = b"f" * 32
    name = newpaths.LIST_PREFIX + TOKEN
    _plant_list(repo, other, [b"store\0data/kept/"], where=repo.vfs.join(name))
    _journal(repo, (b"plain", name))
    assert hg_recover(repo).returncode == 0
    assert os.path.isdir(repo.svfs.join(b"data/kept"))


def test_a_named_list_removes_nothing_outside_nor_older(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    inside = repo.svfs.join(b"data/new")
    os.makedirs(inside)
    older = repo.svfs.join(b"data/older")
    os.makedirs(older)
    with open(os.path.join(older, b"x.i"), "wb") as fh:
        fh.write(b"x")
    time.sleep(0.05)
    since = os.stat(repo.svfs.join(b"data/older/x.i")).st_ctime_ns + 1
    entries = [
        b"store\0../../../outside/",
        b"store\0/%s/" % str(outside).encode(),
        b"plain\0../outside/keep",
        b"store\0data/./new/",
        b"store\0data/new/",
        b"store\0data/older/",
    ]
    name = _plant_list(repo, TOKEN, entries, since_ns=since)
    _journal(repo, (b"plain", name))
    assert hg_recover(repo).returncode == 0
    assert (outside / "keep").read_text() == "keep"
    assert not os.path.exists(inside)
    # a file older than the list is not the transaction's: it stays, and
    # so does its directory
    assert os.path.exists(os.path.join(older, b"x.i"))


def test_recover_removes_the_temporaries_of_atomic_writes(repo):
    # a process killed while Mercurial wrote the fncache or the phaseroots
    # at a transaction's close (seen in make stress's SIGKILL trials)
    store = repo.svfs.join(b"").decode()
    # one from before the transaction (a stream may carry such a name)
    with open(os.path.join(store, ".fncache-before00~"), "w") as f:
        f.write("x")
    time.sleep(0.05)
    _journal(repo)
    time.sleep(0.05)
    temporaries = [".fncache-gfv__sz0~", ".phaseroots-05zdwel3~"]
    kept = ["notes~", ".fncache-toolong123~", "fncache-abcdefgh~"]
    for name in temporaries + kept:
        with open(os.path.join(store, name), "w") as f:
            f.write("x")
    os.mkdir(os.path.join(store, ".dir-abcdefgh~"))
    # stock's hg recover: Mercurial's rollback does not know of them
    env = dict(os.environ, HGRCPATH=os.devnull)
    cmd = [HG, "-R", repo.root, "recover", "-q"]
    assert subprocess.run(cmd, env=env).returncode == 0
    assert all(os.path.exists(os.path.join(store, n)) for n in temporaries)
    _journal(repo)
    # the journal of the transaction, and its temporaries, after the others
    for name in temporaries:
        os.utime(os.path.join(store, name))
    assert hg_recover(repo).returncode == 0
    left = set(os.listdir(store))
    assert not set(temporaries) & left
    assert set(kept) | {".dir-abcdefgh~", ".fncache-before00~"} <= left
