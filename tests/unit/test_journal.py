"""``txn/journal.new_files`` journals as ``tr.add`` does, on the release
under test: the same journal bytes and the same in-memory transaction
state, with one write instead of one per file; and it steps aside (calls
``tr.add``) whenever the transaction is not Mercurial's own, untouched."""

import sys

import pytest

from conftest import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import extensions, hg, transaction, ui as uimod  # noqa: E402

from hgext3rd.fastio.txn import journal

NAMES = [b"data/a/f%d.i" % i for i in range(20)] + [
    b"data/a/f3.i",  # twice in one batch
    b"data/existing.i",  # journaled with an offset before
    b"data/backedup.i",  # backed up before
    b"tmpfile",  # a temporary file of the transaction
]


class CountingFile:
    """The journal file, counting its writes."""

    def __init__(self, fh):
        self._fh = fh
        self.writes = 0

    def write(self, data):
        self.writes += 1
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)


def _normal(value):
    """A comparable form of transaction state: plain values as they are,
    containers element by element, other objects by their type."""
    if value is None or isinstance(value, (bytes, str, int, float)):
        return value
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(_normal(v) for v in value))
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return ("object", type(value).__name__)


def _state(tr):
    state = {k: _normal(v) for k, v in vars(tr).items()}
    state["hookargs"].pop(b"txnid")  # random
    return state


@pytest.fixture
def open_transaction(tmp_path):
    repos = []

    def make(name):
        path = str(tmp_path / name).encode()
        ui = uimod.ui.load()
        ui.setconfig(b"ui", b"quiet", b"yes")
        repo = hg.repository(ui, path, create=True)
        for name in (b"data/existing.i", b"data/backedup.i"):
            with repo.svfs(name, b"wb") as fh:
                fh.write(b"0123456789")
        lock = repo.lock()
        tr = repo.transaction(b"test")
        tr.add(b"data/existing.i", 10)
        tr.addbackup(b"data/backedup.i")
        tr.registertmp(b"tmpfile")
        tr._file = CountingFile(tr._file)
        repos.append((repo, lock, tr))
        return repo, tr

    yield make
    for repo, lock, tr in repos:
        tr.release()
        lock.release()


def _journal(repo):
    return repo.svfs.read(b"journal")


def test_same_journal_and_state_as_tr_add(open_transaction):
    stock_repo, stock = open_transaction("stock")
    fast_repo, fast = open_transaction("fast")
    for name in NAMES:
        stock.add(name, 0)
    before = fast._file.writes
    journal.new_files(fast, NAMES[:10])
    journal.new_files(fast, NAMES[10:])
    stock._file.flush()
    assert _journal(fast_repo) == _journal(stock_repo)
    assert b"data/a/f0.i\x000\n" in _journal(fast_repo)
    assert _state(fast) == _state(stock)
    # the point of it: one write per batch, not one per file
    assert fast._file.writes - before == 2
    assert stock._file.writes >= 20


def test_a_wrapped_add_is_called(open_transaction):
    repo, tr = open_transaction("wrapped")
    seen = []

    def add(orig, self, name, offset):
        seen.append(name)
        return orig(self, name, offset)

    extensions.wrapfunction(transaction.transaction, "add", add)
    try:
        journal.new_files(tr, [b"data/x.i", b"data/y.i"])
    finally:
        extensions.unwrapfunction(transaction.transaction, "add", add)
    assert seen == [b"data/x.i", b"data/y.i"]
    assert b"data/y.i\x000\n" in _journal(repo)


def test_an_instance_override_is_called(open_transaction):
    repo, tr = open_transaction("instance")
    seen = []
    tr.add = lambda name, offset: seen.append(name)
    journal.new_files(tr, [b"data/x.i"])
    assert seen == [b"data/x.i"]


def test_a_group_is_left_to_tr_add(open_transaction):
    repo, tr = open_transaction("group")
    tr.startgroup()
    journal.new_files(tr, [b"data/x.i"])
    assert b"data/x.i" not in _journal(repo)
    tr.endgroup()
    assert b"data/x.i\x000\n" in _journal(repo)
