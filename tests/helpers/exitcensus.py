"""A Mercurial extension for the load-cost tests: counts the modules alive
after the first garbage collection of the interpreter's exit, the one that
follows the clearing of sys.modules (CPython's finalization then clears the
dicts of those left, one by one: the slow way).  The count goes to
$FASTIO_EXITCENSUS.

At exit (atexit), the collector is disabled, so that the next collection is
that one, and a weak reference is taken to every module; an object left
unreachable on purpose counts them from its finalizer, which that
collection runs after clearing the weak references to what it frees."""

import atexit
import gc
import os
import sys
import types
import weakref


class _Census:
    def __del__(self):
        alive = sum(1 for ref in self.modules if ref() is not None)
        self.write(self.fd, b"%d\n" % alive)


def _arm():
    gc.disable()
    census = _Census()
    census.modules = [
        weakref.ref(module)
        for module in list(sys.modules.values())
        if isinstance(module, types.ModuleType)
    ]
    # (what the finalizer uses, held: the modules may be gone)
    census.write = os.write
    census.fd = os.open(
        os.environ["FASTIO_EXITCENSUS"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    )
    census.cycle = census


atexit.register(_arm)
