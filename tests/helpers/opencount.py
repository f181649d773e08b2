"""A Mercurial extension for the tests: counts the opens of files under the
store's ``data/``, at exit written to $FASTIO_OPENCOUNT in one line: how many
files were opened, how many times the store vfs was asked to open one (a
revlog asks for each read and write attempt), how many files the system
opened (``util.posixfile`` and ``os.open``, the two ways a vfs opens one)
and how many of those failed."""

import atexit
import os

from mercurial import store, util

_opens = {}
_failed = [0]
_asked = [0]


def _counted(orig):
    def open_counted(path, *args, **kwargs):
        name = os.fsdecode(path)
        tracked = "/.hg/store/data/" in name.replace(os.sep, "/")
        if tracked:
            _opens[name] = _opens.get(name, 0) + 1
        try:
            return orig(path, *args, **kwargs)
        except OSError:
            if tracked:
                _failed[0] += 1
            raise

    return open_counted


def _asked_counted(orig):
    def call_counted(self, path, *args, **kwargs):
        if path.startswith(b"data/"):
            _asked[0] += 1
        return orig(self, path, *args, **kwargs)

    return call_counted


def _report():
    with open(os.environ["FASTIO_OPENCOUNT"], "w") as f:
        f.write(
            "data/: %d files, store vfs asked %d times, %d opens, %d failed\n"
            % (len(_opens), _asked[0], sum(_opens.values()), _failed[0])
        )


def uisetup(ui):
    util.posixfile = _counted(util.posixfile)
    os.open = _counted(os.open)
    # before the extension wraps it (its wrapper always calls this one)
    cls = store._fncachevfs
    cls.__call__ = _asked_counted(cls.__call__)
    atexit.register(_report)
