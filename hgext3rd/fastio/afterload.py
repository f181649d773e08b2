"""Wire into a Mercurial module once its code has run, not before.

Mercurial loads its modules lazily (``demandimport``, importlib's
``LazyLoader``): ``from mercurial import changegroup`` only creates the
module object, and its code runs at the first attribute access.  Wrapping
one of its functions when the extension is set up would run that code, and
that of everything it imports, in every command: ``hg status`` would pay
for the changegroup, bundle2 and streamclone modules it never uses.

``when_loaded(name, setup)`` calls ``setup(module)`` right after the code
of module ``name`` has run instead: at once if it has already run, else
from the loader (a lazy module's own loader, or the loader of a module not
imported yet, found through a finder at the front of ``sys.meta_path``).
Nothing is imported, and no module code runs, earlier than it would have
without the extension.

A setup that raises does not break the import (Mercurial would fail in a
place unrelated to the extension): the error goes to the ``on_error``
given with the setup (a debug line), and ``failures()`` keeps it.
"""

import importlib.util
import sys
import threading
import types

_lock = threading.RLock()
# module name -> setups waiting for its code to run
_waiting = {}
# names waited for that are not imported yet: the finder hooks them
_unhooked = set()
# (module name, setup, exception) of setups that raised
_failed = []
# importlib's class of a module whose code has not run yet
_LAZY_MODULE = getattr(importlib.util, "_LazyModule", ())


def _raw(module, name):
    # a lazy module's __getattribute__ would run its code
    return types.ModuleType.__getattribute__(module, name)


def is_lazy(module):
    return isinstance(module, _LAZY_MODULE)


def name_of(module):
    """A module's name, read without running a lazy module's code."""
    return _raw(module, "__name__")


def when_loaded(name, setup, on_error=None):
    """Call ``setup(module)`` once the code of Mercurial module ``name``
    has run (at once when it already has); ``on_error(exception)`` if it
    raises."""
    if on_error is not None:
        setup = _Guarded(setup, on_error)
    with _lock:
        module = sys.modules.get(name)
        if module is not None and not is_lazy(module):
            _run(name, setup, module)
            return
        first = name not in _waiting
        _waiting.setdefault(name, []).append(setup)
        if not first:
            return
        if module is not None:
            spec = _raw(module, "__spec__")
            spec.loader = _ThenSetup(spec.loader, name)
        else:
            _unhooked.add(name)
            _finder.install()


def pending():
    """Names of the modules whose setups have not run yet."""
    with _lock:
        return sorted(_waiting)


def failures():
    """``(module name, setup, exception)`` of the setups that raised."""
    return list(_failed)


class _Guarded:
    def __init__(self, setup, on_error):
        self.setup = setup
        self.on_error = on_error

    def __call__(self, module):
        try:
            self.setup(module)
        except Exception as exc:
            try:
                self.on_error(exc)
            finally:
                raise exc


def _run(name, setup, module):
    try:
        setup(module)
    except Exception as exc:
        _failed.append((name, setup, exc))


def _loaded(name, module):
    with _lock:
        setups = _waiting.pop(name, [])
    for setup in setups:
        _run(name, setup, module)


class _ThenSetup:
    """A module's loader, followed by the setups waiting for it."""

    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # the module keeps its own loader (reloads, tracebacks, resources)
        spec = _raw(module, "__spec__")
        if spec.loader is self:
            spec.loader = self._loader
        if _raw(module, "__dict__").get("__loader__") is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        _loaded(self._name, module)


class _Finder:
    """At the front of ``sys.meta_path`` while a module waited for is not
    imported yet: gives its spec a loader that runs the setups after it."""

    def install(self):
        if not any(f is self for f in sys.meta_path):
            sys.meta_path.insert(0, self)

    def uninstall(self):
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]

    def find_spec(self, fullname, path, target=None):
        # (asked about every import while it is installed: the common answer
        # without the lock)
        if fullname not in _unhooked:
            return None
        with _lock:
            if fullname not in _unhooked:
                return None
            # found by the finders behind this one (Mercurial's lazy ones)
            spec = None
            for finder in sys.meta_path:
                if finder is self or getattr(finder, "_finder", None) is self:
                    continue
                find_spec = getattr(finder, "find_spec", None)
                if find_spec is not None:
                    spec = find_spec(fullname, path, target)
                    if spec is not None:
                        break
            if spec is None or spec.loader is None:
                return spec
            outer = spec.loader
            if isinstance(outer, importlib.util.LazyLoader):
                # the lazy loader hands the module to this one when an
                # attribute is first used
                outer.loader = _ThenSetup(outer.loader, fullname)
            else:
                spec.loader = _ThenSetup(outer, fullname)
            _unhooked.discard(fullname)
            if not _unhooked:
                self.uninstall()
            return spec


_finder = _Finder()
