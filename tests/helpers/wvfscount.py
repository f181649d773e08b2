"""A Mercurial extension for the tests: counts the ``mkdir``, ``lstat`` and
``stat`` calls made on paths in the working copy (not under ``.hg``), and
how many of them ran with objects frozen out of the garbage collector
(``gc.freeze``), written at exit to $FASTIO_WVFSCOUNT as ``mkdir lstat stat
frozen`` (one process: run with ``worker.enabled=no``)."""

import atexit
import gc
import os

_counts = {"mkdir": 0, "lstat": 0, "stat": 0, "frozen": 0}
_root = []


def _counted(name, orig):
    def call(path, *args, **kwargs):
        if _root:
            text = os.fsdecode(path)
            if text.startswith(_root[0]) and "/.hg" not in text[len(_root[0]) :]:
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
    out = os.environ.get("FASTIO_WVFSCOUNT")
    if out:

        def write():
            with open(out, "w") as f:
                f.write("%(mkdir)d %(lstat)d %(stat)d %(frozen)d\n" % _counts)

        atexit.register(write)
