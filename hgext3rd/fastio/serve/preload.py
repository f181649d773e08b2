"""What the requests of a threaded server may load, loaded before they run.

Mercurial loads its modules lazily (``demandimport``: importlib's lazy
modules).  Before Python 3.13 (CPython issue gh-114763) a lazy module is
not safe across threads: the first thread that uses one turns it into a
plain module, then runs its code, and another thread using it meanwhile
finds it without the attribute it wants (``module 'mercurial.dirstate'
has no attribute 'dirstate'``): its request fails (HTTP 500).  hgweb
(``hg serve``, a WSGI server) serves each request in a thread of its own,
so the first requests reaching a freshly started server race that way,
with or without the extension.  The extension adds to it: its parts are
wired when the module they wrap loads (``when_loaded``), so the first
request loading streamclone or changegroup would also run the wiring, and
load the extension's own modules, which are lazy too.

So an hgweb server with the extension loads, once and in one thread,
before requests run:

* the extension's own modules, and hgweb's;
* the modules its wiring waits for (the wiring runs then);
* every module imported lazily so far, and what their code imports
  lazily, until no lazy module is left.

``hg serve`` does it in its main thread once its server is set up, before
it serves (``httpservice.run``); any other hgweb application (WSGI) at its
first request, the other requests waiting for it to finish (``__init__``
wraps both, since every command loads ``mercurial.hgweb``).  A command
that serves nothing over http loads none of it; ``hg serve --stdio`` (ssh)
serves one request at a time in one thread, and loads as stock does.
"""

import importlib
import os
import pkgutil
import sys
import threading

from ..wiring import is_lazy, pending

_lock = threading.Lock()
_done = False


class Loaded:
    """What ``load_everything`` did."""

    def __init__(self):
        self.extension = 0  # the extension's modules imported
        self.hgweb = 0  # hgweb's modules imported
        self.wired = 0  # modules the wiring waited for
        self.lazy = 0  # lazy modules whose code was run
        self.failures = []  # (module name, exception)


def done():
    return _done


def once(ui=None):
    """``load_everything()`` the first time, in the calling thread; any
    other thread calling meanwhile waits for it."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        try:
            loaded = load_everything()
        except Exception as exc:
            # never the server's problem: it serves as stock does
            loaded = Loaded()
            loaded.failures.append(("everything", exc))
        finally:
            _done = True
    if ui is not None:
        ui.debug(
            b"fastio: serving: loaded before the first request: %d modules of "
            b"the extension, %d of hgweb, %d the wiring waited for, %d lazy "
            b"modules\n" % (loaded.extension, loaded.hgweb, loaded.wired, loaded.lazy)
        )
        for name, exc in loaded.failures:
            ui.debug(
                b"fastio: serving: %s not loaded: %s\n"
                % (name.encode(), str(exc).encode("utf-8", "replace"))
            )


def load_everything():
    loaded = Loaded()
    # every module of the extension, its packages' too
    package = __name__.rsplit(".", 2)[0]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for info in pkgutil.walk_packages([here], package + "."):
        if _load(info.name, loaded):
            loaded.extension += 1
    # hgweb's modules: a function may import one (6.7 to 7.1's request.py
    # imports wsgiheaders as a request starts), out of reach of the loop
    # below
    from mercurial import hgweb

    for info in pkgutil.iter_modules(hgweb.__path__):
        if _load(hgweb.__name__ + "." + info.name, loaded):
            loaded.hgweb += 1
    tried = set()
    while True:
        # the modules the wiring waits for (wiring one may add another),
        # imported: lazy, their code runs below, the wiring with it
        waited = [name for name in pending() if name not in tried]
        for name in waited:
            tried.add(name)
            _load(name, loaded)
        if not _run_lazy(loaded) and not waited:
            break
    loaded.wired = len(tried - set(pending()))
    return loaded


def _run_lazy(loaded):
    """Run the code of every lazy module, and of those it imports lazily;
    how many there were."""
    count = 0
    while True:
        lazy = [
            (name, module)
            for name, module in list(sys.modules.items())
            if module is not None and is_lazy(module)
        ]
        if not lazy:
            return count
        for name, module in lazy:
            if not is_lazy(module):
                # run by the code of one before it
                continue
            count += 1
            loaded.lazy += 1
            try:
                module.__name__  # the first attribute used runs its code
            except Exception as exc:
                # no longer lazy either: not seen again
                loaded.failures.append((name, exc))


def _load(name, loaded):
    try:
        importlib.import_module(name)
        return True
    except Exception as exc:
        loaded.failures.append((name, exc))
        return False
