"""Every private attribute of Mercurial the extension reads is there on the
release under test, where ``compat`` says it is.  A release that moves one
fails here (and the extension keeps stock behaviour for that part, or reads
it with a fallback)."""

import io
import os
import subprocess
import sys

import pytest

from conftest import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from mercurial import (  # noqa: E402
    bundle2,
    changegroup,
    exchange,
    hg,
    store,
    streamclone,
    ui as uimod,
    vfs as vfsmod,
)

from hgext3rd.fastio import compat
from hgext3rd.fastio.txn import storenames


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("compat") / "repo"
    env = dict(os.environ, HGRCPATH=os.devnull, HGUSER="test")
    hg_bin = os.path.join(os.path.dirname(sys.executable), "hg")
    subprocess.check_call([hg_bin, "init", str(path)], env=env)
    (path / "a").write_text("a\n")
    subprocess.check_call([hg_bin, "-R", str(path), "commit", "-qAm", "a"], env=env)
    subprocess.check_call(
        [hg_bin, "-R", str(path), "bundle", "-q", "-a", "-t", "none-v2", "cg.hg"],
        env=env,
        cwd=str(path),
    )
    ui = uimod.ui.load()
    return hg.repository(ui, str(path).encode())


def test_internals_as_expected():
    from mercurial import vfs as vfsmod

    assert compat.stream_internals()[1] == []
    stock = vfsmod.abstractvfs.backgroundclosing
    # stock's as it was before the extension wrapped it, if it did
    stock = getattr(stock, "_origfunc", stock)
    assert compat.closing_internals(stock) == []
    assert compat.changegroup_internals() == []
    assert compat.revlog_index_read() is not None


def test_apply_parameters_as_gates_reads_them():
    # gates reads expectedtotal (the changesets a bundle2 part announces)
    # by position when it is passed by position
    import inspect

    from hgext3rd.fastio import gates

    apply = changegroup.cg1unpacker.apply
    apply = getattr(apply, "_origfunc", apply)
    names = list(inspect.signature(apply).parameters)
    assert names[:7] == [
        "self",
        "repo",
        "tr",
        "srctype",
        "url",
        "targetphase",
        "expectedtotal",
    ]
    assert gates._is_small((b"pull", b"url", 1, 3), {})
    assert not gates._is_small((b"pull", b"url", 1, gates.SMALL_CHANGESETS), {})
    assert not gates._is_small((b"pull", b"url", 1), {})
    assert gates._is_small((), {"expectedtotal": 1})


def test_vfs_attributes(repo):
    rawvfs = storenames.encoder(repo.svfs)[1]
    assert callable(compat.path_checker(rawvfs))
    assert "_trustnlink" in vars(rawvfs)
    rawvfs.createmode = 0o42770
    try:
        assert compat.forced_file_mode(rawvfs) == 0o660
        # what Mercurial's own vfs does with it
        assert callable(rawvfs._fixfilemode)
    finally:
        rawvfs.createmode = None
    assert compat.forced_file_mode(rawvfs) is None


def test_revlog_of(repo):
    # the stores a changegroup emits from: the revlog behind each
    from mercurial import revlog

    filelog = repo.file(b"a")
    assert compat.revlog_of(filelog) is filelog._revlog
    manifest = repo.manifestlog.getstorage(b"")
    assert compat.revlog_of(manifest) is manifest._revlog
    assert compat.revlog_of(repo.changelog) is repo.changelog
    assert isinstance(filelog._revlog, revlog.revlog)


class _NotARevlog:
    """A file store like remotefilelog's: ``len()`` refused, and (worse)
    every attribute it lacks refused too."""

    def __len__(self):
        raise RuntimeError("len not supported")

    def __getattr__(self, name):
        raise RuntimeError("no %s here" % name)


def test_a_store_that_is_not_a_revlog_is_left_to_stock(repo):
    from hgext3rd.fastio import gates

    store = _NotARevlog()
    assert compat.revlog_of(store) is None
    assert compat.revlog_compression(store) is None
    assert gates.reads_most(store, [b"\0" * 20]) is False


def test_store_encoding_attributes(repo):
    encode, rawvfs = storenames.encoder(repo.svfs)
    assert encode(b"data/UPPER.i") == b"data/_u_p_p_e_r.i"
    assert rawvfs.join(b"x") == repo.svfs.vfs.join(b"x")
    assert getattr(store, "_fncachevfs", None) is not None

    def suffix(path):
        return path + b".x"

    suffix.filter_name = b"suffix"  # 7.2 names its filters
    filtered = vfsmod.filtervfs(rawvfs, suffix)
    assert storenames.encoder(filtered)[0](b"a") == b"a.x"


def test_wrapped_file():
    fh = io.BytesIO()
    assert compat.wrapped_file(vfsmod.delayclosedfile(fh, None)) is fh


def test_changegroup_source(repo):
    fh = open(os.path.join(repo.root, b"cg.hg"), "rb")
    try:
        bundle = exchange.readbundle(repo.ui, fh, b"cg.hg")
        part = next(iter(bundle.iterparts()))
        assert part.type == b"changegroup"
        part.read(1)
        assert compat.unread_part_file(part) is None  # not from its start
        unpacker = changegroup.getunbundler(b"02", io.BytesIO(b""), None)
        source = compat.changegroup_source(unpacker)
        assert source is not None
        compat.set_changegroup_source(unpacker, io.BytesIO(b"x"))
        assert compat.changegroup_source(unpacker).read() == b"x"
    finally:
        fh.close()


def test_unread_part_file(repo):
    fh = open(os.path.join(repo.root, b"cg.hg"), "rb")
    try:
        bundle = exchange.readbundle(repo.ui, fh, b"cg.hg")
        part = next(iter(bundle.iterparts()))
        assert type(part) is bundle2.unbundlepart
        assert compat.unread_part_file(part) is fh
    finally:
        fh.close()


def test_stream_and_config_internals(repo):
    assert set(streamclone._makemap(repo)) == {b"s", b"c"}
    assert compat._config_registered(repo.ui, b"worker", b"backgroundclose")


def test_a_moved_method_is_reported(monkeypatch):
    monkeypatch.delattr(vfsmod.vfs, "_fixfilemode")
    assert "vfs._fixfilemode is missing" in compat.changegroup_internals()


def _release():
    from mercurial import util

    return util.versiontuple(n=2)


def test_release_shims_say_their_releases(repo):
    # each shim's tag (``# hg <= X.Y (X.Y+1 ...)``) is what the release
    # under test does
    from mercurial import util

    release = _release()
    mmapread = getattr(util.mmapread, "_origfunc", util.mmapread)
    assert compat.mmapread_has_populate(mmapread) == (release >= (6, 9))
    assert compat.mmap_index_option() == (
        b"storage.revlog.mmap.index"
        if release >= (6, 9)
        else b"experimental.mmapindexthreshold"
    )
    assert compat.v2_end_read_before_report() == (release >= (7, 0))
    assert compat._config_registered(
        repo.ui, b"worker", b"parallel-stream-bundle-processing"
    ) == (release >= (7, 0))
    assert hasattr(store.basicstore, "fileindex") == (release >= (7, 2))
    assert hasattr(repo.svfs, "base") == (release >= (7, 2))
    assert compat.store_path(repo) == repo.svfs.vfs.base
    module, name = compat.clone_function()
    assert module.__name__.endswith(
        "cmd_impls.clone" if release >= (7, 2) else "mercurial.hg"
    )
    assert compat.mmap_index_threshold(repo.svfs) is not None


def test_every_shim_is_tagged_with_its_releases():
    # what the module's docstring promises: one search per release finds
    # every shim that serves only it
    import re

    with open(compat.__file__.replace(".pyc", ".py")) as fh:
        source = fh.read()
    sections = re.split(r"^# == ", source, flags=re.M)[1:]
    checked = 0
    for section in sections:
        tag = re.match(r"hg <= (\d+\.\d+) ", section)
        if tag is None:
            continue
        for match in re.finditer(r"^(.*)\ndef (\w+)", section, re.M):
            before, name = match.groups()
            if name.startswith("_"):
                continue
            assert before.startswith("# hg <= %s (" % tag.group(1)), name
            checked += 1
    assert checked >= 10


def test_worker_count():
    from mercurial import ui as uimod

    ui = uimod.ui.load()
    assert 4 <= compat.worker_count(ui) <= 32
    ui.setconfig(b"worker", b"numcpus", b"3")
    assert compat.worker_count(ui) == 3


def test_parallel_apply_internals(repo):
    # what apply/parallel reads: the unpacker classes, a filelog opened to
    # be written and its split index, the arguments of the functions it
    # wraps (by name), the transaction's methods a worker asks for
    from mercurial import transaction

    classes = compat.changegroup_unpacker_classes()
    assert changegroup.cg1unpacker in classes and changegroup.cg3unpacker in classes
    assert compat._FILE_TAKES_WRITABLE.get(type(repo)) in (None, True, False)
    with repo.lock(), repo.transaction(b"compat") as tr:
        fl = compat.writable_filelog(repo, b"a")
        index, split = compat.split_index_files(fl)
        assert index == b"data/a.i" and split != index
        assert tr.findoffset(b"data/a.i") is None
    takes = compat._FILE_TAKES_WRITABLE[type(repo)]
    assert takes == (_release() >= (7, 1))
    bound = compat.bind_args(
        changegroup._addchangegroupfiles, repo, None, None, None, 0, {}
    )
    assert bound["needfiles"] == {} and bound["addrevisioncb"] is None
    assert "debug_info" in bound
    bound = compat.bind_args(
        changegroup.cg1unpacker._unpackmanifests, None, repo, None, None, None
    )
    assert bound["addrevisioncb"] is None and "debug_info" in bound
    for method in ("add", "findoffset", "addbackup", "registertmp", "addfinalize"):
        assert hasattr(transaction.transaction, method)
