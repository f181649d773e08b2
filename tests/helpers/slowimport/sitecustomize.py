"""Test shim, put first on PYTHONPATH of a server: the code of a module run
by a thread other than the main one starts FASTIO_SLOW_IMPORT_MS
milliseconds late.

Mercurial's lazy modules (``demandimport``) race between threads on Python
before 3.13 (CPython issue gh-114763): the thread that uses one first
turns it into a plain module, then runs its code, and another thread using
it meanwhile finds attributes missing.  The delay widens that window, so
that a server whose request threads run module code fails its first
concurrent requests every time instead of now and then.
"""

import importlib._bootstrap_external as _external
import os
import threading
import time

_delay = float(os.environ.get("FASTIO_SLOW_IMPORT_MS") or 0) / 1000.0
_exec_module = _external._LoaderBasics.exec_module


def _late_exec_module(self, module):
    if threading.current_thread() is not threading.main_thread():
        time.sleep(_delay)
    return _exec_module(self, module)


if _delay:
    _external._LoaderBasics.exec_module = _late_exec_module
