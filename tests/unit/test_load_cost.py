"""A command the extension does not accelerate loads nothing more with it.

``hg status`` and ``hg log`` run in a fresh interpreter, with and without
the extension, under Mercurial's demandimport as ``hg`` runs them; the
modules whose code ran (lazy modules left untouched do not count) are
compared.  With the extension, only its package may be added (one
module: the tables Mercurial reads at load, the loader hook and the
wrappers of modules every command loads) and Python's ``atexit``; the
modules that the wiring wraps, and what they import, must not be, nor
``mercurial.__version__`` (Mercurial's check of ``minimumhgversion``,
asked for on older releases only).
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT  # noqa: E402

EXT = os.path.join(ROOT, "hgext3rd", "fastio")

# runs the command given on its command line as hg does
RUN = r"""
import importlib.util, sys
from mercurial import demandimport
demandimport.enable()
from mercurial import dispatch
try:
    from mercurial.main_script import request  # where 7.2 has it
except ImportError:
    request = dispatch.request
code = dispatch.dispatch(request([a.encode() for a in sys.argv[1:]]))
"""

LOADED = RUN + r"""
lazy = getattr(importlib.util, "_LazyModule", ())
loaded = sorted(
    n for n, m in list(sys.modules.items())
    if m is not None and not isinstance(m, lazy)
)
sys.stderr.write("\n".join(loaded) + "\n")
sys.exit(code)
"""

# what the extension may add to a command it does not accelerate: its
# package, which holds the tables Mercurial reads at load, the setups, the
# loader hook and the wrappers of the modules every command loads (vfs,
# util, dispatch, merge, hgweb); what serves them loads at their first call
# with work to do (vfsclose, sessions, checkout, preload); and Python's
# built-in atexit (the setups never run go at exit)
# (wiring: the table every command reads to know what to wire when)
ALLOWED = {"hgext_fastio", "hgext_fastio.wiring", "atexit"}


# loaded for an accelerated path only (the list: what the eager
# wiring used to pull in)
HEAVY = {
    "mercurial.changegroup",
    "mercurial.streamclone",
    "mercurial.exchange",
    "mercurial.transaction",
    "http.client",
    "xmlrpc.client",
    "concurrent.futures",
    "_hashlib",
}


def loaded_modules(repo, args, extension, by_name=False):
    env = dict(os.environ, HGRCPATH="", HGPLAIN="1", HGUSER="test")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-c", LOADED] + args
    if extension:
        cmd += ["--config", "extensions.fastio=%s" % ("" if by_name else EXT)]
    out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(out.stderr.split())


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("repo"))
    hg = os.path.join(os.path.dirname(sys.executable), "hg")
    env = dict(os.environ, HGRCPATH="", HGUSER="test")
    subprocess.run([hg, "init", path], check=True, env=env)
    with open(os.path.join(path, "a"), "w") as f:
        f.write("a\n")
    subprocess.run([hg, "-R", path, "commit", "-qAm", "a"], check=True, env=env)
    return path


@pytest.mark.parametrize(
    "args", [["status"], ["log", "-r", "tip"], ["diff"], ["version"]]
)
def test_nothing_heavy_loaded(repo, args):
    stock = loaded_modules(repo, args, extension=False)
    fastio = loaded_modules(repo, args, extension=True)
    assert "hgext_fastio" in fastio  # the extension was on
    added = fastio - stock
    allowed = ALLOWED
    if args == ["version"]:
        # it prints the extension's version (read where asked for)
        allowed = ALLOWED | {"hgext_fastio.metadata"}
    assert added <= allowed, sorted(added - allowed)
    assert not (fastio & HEAVY) - stock


# what Mercurial itself imports to find an extension enabled by name
# (``fastio =``): it looks for ``hgext.fastio`` first, in its ``hgext``
# package, then in ``hgext3rd``; both packages' ``__init__`` extend their
# path with ``pkgutil``
NAME_LOOKUP = {"hgext", "hgext3rd", "pkgutil"}


def installed_here():
    """Whether ``hgext3rd.fastio`` is this checkout's (``make test``
    installs it with ``pip install -e .``)."""
    import importlib.util

    spec = importlib.util.find_spec("hgext3rd.fastio")
    locations = spec and spec.submodule_search_locations
    return bool(locations) and os.path.realpath(locations[0]) == os.path.realpath(EXT)


@pytest.mark.skipif(not installed_here(), reason="hgext3rd.fastio not installed")
@pytest.mark.parametrize("args", [["status"], ["log", "-r", "tip"]])
def test_nothing_heavy_loaded_by_name(repo, args):
    # enabled as users enable it once installed: the same modules as by
    # path, under the package's own name, and Mercurial's lookup
    stock = loaded_modules(repo, args, extension=False)
    fastio = loaded_modules(repo, args, extension=True, by_name=True)
    assert "hgext3rd.fastio" in fastio  # the extension was on
    added = fastio - stock
    allowed = {"hgext3rd.fastio", "hgext3rd.fastio.wiring", "atexit"} | NAME_LOOKUP
    assert added <= allowed, sorted(added - allowed)


# the extension's changegroup apply machinery: a small changegroup is
# applied as stock applies it (gates.SMALL_CHANGESETS)
APPLY_MACHINERY = {
    "hgext_fastio.apply.changegroup",
    "hgext_fastio.apply.revlogwriter",
    "hgext_fastio.writer.filewriter",
    "hgext_fastio.writer.writestrategy",
    "hgext_fastio.apply.compressors",
    "hgext_fastio.apply.buffers",
    "hgext_fastio.diag.report",
    "hgext_fastio.txn.newpaths",
}

# what an unbundle of one changeset in a small repository uses none of: the
# changegroup apply machinery, the stream writer, the generation of streams
# and changegroups (wrapped in gates, loaded at their first call that is the
# extension's), large reads of bundle files (its own buffer holds it
# whole), the mmap population policy (its mappings are all below the
# threshold)
NOT_FOR_ONE_CHANGESET = APPLY_MACHINERY | {
    # (loaded by fastio.compress-ahead only)
    "hgext_fastio.apply.precompress",
    "hgext_fastio.serve.serving",
    "hgext_fastio.serve.bundleio",
    "hgext_fastio.apply.streamclone",
    "hgext_fastio.apply.storewriter",
    "hgext_fastio.apply.prescan",
    "hgext_fastio.apply.prefetch",
    "hgext_fastio.mmap.sessions",
    "hgext_fastio.mmap.mmappolicy",
    "hgext_fastio.mmap._populate",
}


@pytest.mark.parametrize("small_applies", [True, False])
def test_one_changeset_unbundle_loads_what_it_uses(repo, tmp_path, small_applies):
    hg = os.path.join(os.path.dirname(sys.executable), "hg")
    env = dict(os.environ, HGRCPATH="", HGUSER="test")

    def run(*args):
        subprocess.run([hg, *args], check=True, env=env, cwd=str(tmp_path))

    run("clone", "-q", repo, "ahead")
    with open(str(tmp_path / "ahead" / "a"), "a") as f:
        f.write("more\n")
    run("-R", "ahead", "commit", "-qm", "one")
    run("-R", "ahead", "bundle", "-q", "-r", "tip", "--base", "0", "one.hg")
    bundle = str(tmp_path / "one.hg")
    loaded = {}
    for extension in (False, True):
        dest = "dest-%s" % extension
        run("clone", "-q", repo, dest)
        args = ["unbundle", "-q", bundle]
        if not small_applies:
            args += ["--config", "devel.fastio.small-applies=no"]
        loaded[extension] = loaded_modules(str(tmp_path / dest), args, extension)
    added = loaded[True] - loaded[False]
    assert "hgext_fastio.gates" in added  # the extension was on
    if small_applies:
        assert not added & NOT_FOR_ONE_CHANGESET, sorted(added & NOT_FOR_ONE_CHANGESET)
    else:
        # (and the check sees the machinery where an apply uses it)
        assert APPLY_MACHINERY <= added, sorted(APPLY_MACHINERY - added)


def test_config_loads_no_mechanism():
    # config is the bottom layer: the mechanisms import it, never the
    # reverse (and take the option values from it)
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from hgext3rd.fastio import config\n"
        "print(sorted(m for m in sys.modules if m.startswith('hgext3rd.fastio.')))\n"
        % ROOT
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['hgext3rd.fastio.config']", out
    sys.path.insert(0, ROOT)
    from hgext3rd.fastio import config
    from hgext3rd.fastio.writer import filewriter

    assert filewriter.MODE_AUTO is config.MODE_AUTO
    assert set(config.MODE_NAMES.values()) == {
        config.MODE_AUTO,
        config.MODE_ALWAYS,
        config.MODE_NEVER,
    }


CENSUS = os.path.join(ROOT, "tests", "helpers", "exitcensus.py")

# modules the extension may keep alive into the slow part of the exit (1
# on 6.7, 0 on 7.2, measured); the wrappers installed in modules that
# outlive the collection (util, and on 6.7 vfs), left in place, keep 23
# (7.2) and 98 (6.7) more alive here (180 more cost 5 ms on every hg
# status)
MORE_ALIVE_AT_EXIT = 3


def alive_at_exit(repo, tmp_path, extension):
    census = str(tmp_path / ("census-%s" % extension))
    env = dict(os.environ, HGRCPATH="", HGPLAIN="1", FASTIO_EXITCENSUS=census)
    hg = os.path.join(os.path.dirname(sys.executable), "hg")
    cmd = [hg, "status", "--config", "extensions.census=%s" % CENSUS]
    if extension:
        cmd += ["--config", "extensions.fastio=%s" % EXT]
    out = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    with open(census) as f:
        return int(f.read())


def test_exit_keeps_few_modules_alive(repo, tmp_path):
    # a function put into a module Mercurial always loads keeps its own
    # module's globals alive, and what they hold: at exit, what is still
    # alive after the collection that follows the clearing of sys.modules
    # has its module dict cleared one by one, the slow way
    stock = alive_at_exit(repo, tmp_path, extension=False)
    fastio = alive_at_exit(repo, tmp_path, extension=True)
    assert stock > 100  # the census saw the exit
    assert fastio - stock <= MORE_ALIVE_AT_EXIT, (stock, fastio)
