"""A Mercurial extension for the tests: counts the ``mkdir``, ``lstat``,
``stat`` and ``unlink`` calls made on paths in the working copy (not under
``.hg``), and how many of them ran with objects frozen out of the garbage
collector (``gc.freeze``), written at exit to $FASTIO_WVFSCOUNT as ``mkdir
lstat stat frozen unlink`` (one process: run with ``worker.enabled=no``)."""

import atexit
import gc
import os

_counts = {"mkdir": 0, "lstat": 0, "stat": 0, "frozen": 0, "unlink": 0}
_root = []


def _counted(name, orig):
    def call(path, *args, **kwargs):
        if _root:
            text = os.fsdecode(path)
            rest = text[len(_root[0]) :]
            if (
                text.startswith(_root[0])
                and not rest.startswith(".hg")
                and "/.hg" not in rest
            ):
                _counts[name] += 1
                if gc.get_freeze_count():
                    _counts["frozen"] += 1
        return orig(path, *args, **kwargs)

    return call


def reposetup(ui, repo):
    if not _root and repo.local():
        _root.append(os.fsdecode(repo.root) + os.sep)


def uisetup(ui):
    for name in ("mkdir", "lstat", "stat"):
        setattr(os, name, _counted(name, getattr(os, name)))
    # (Mercurial's vfs unlinks through util.unlink, bound to os.unlink when
    # its module loaded)
    from mercurial import util

    util.unlink = _counted("unlink", util.unlink)
    out = os.environ.get("FASTIO_WVFSCOUNT")
    if out:

        def write():
            with open(out, "w") as f:
                f.write(
                    "%(mkdir)d %(lstat)d %(stat)d %(frozen)d %(unlink)d\n" % _counts
                )

        atexit.register(write)
