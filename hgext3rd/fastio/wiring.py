"""What the extension puts into Mercurial, and when: the one module that
wraps (``extensions.wrapfunction``, ``wrapcommand``, or the replacement of
a Mercurial attribute), and undoes.

``PARTS`` names each part of the wiring, when it is wired and what is
undone at exit; ``WRAPS`` lists, for each part, what is wrapped, by which
wrapper, and which calls are the extension's work (the wrapper's cheap
test: every other call goes to Mercurial's function at once).

A part is wired either

- ``AT_LOAD``: right after the code of the Mercurial module it wraps has
  run (``when_loaded``, below), never earlier: ``hg status`` does not load
  ``mercurial.changegroup``, so it pays for none of the changegroup's
  wiring; or
- ``AT_FIRST_USE``: by the extension's first call that needs it
  (``wire(part, ui)``): wrapping ``vfs.__call__`` for every command would
  slow every open down, so it is wrapped by the first changegroup apply or
  stream generation that uses it; or
- ``DURING``: for the duration of a ``with during(part):`` block.

Each part is wired once per process (a server's request threads may ask
at once).  A wrapper is named ``"module:function"`` (``":function"``: the
package's ``__init__``) and its module imported only when its part is
wired.  A target that Mercurial lacks is not wrapped; the part's first
call finds it in ``compat`` and keeps stock behaviour.
"""

import importlib
import importlib.util
import sys
import threading
import types

# when a part is wired
AT_LOAD = "at load"
AT_FIRST_USE = "at first use"
DURING = "during"

# part -> (when, Mercurial module, undone at exit).  Undone at exit: the
# parts of modules every command loads, whose wrappers would keep the
# extension's globals alive into the slow part of the interpreter's
# finalization (see ``unwire``).
PARTS = {
    "mmap population": (AT_LOAD, "mercurial.util", True),
    "command sessions": (AT_LOAD, "mercurial.dispatch", True),
    "background closes": (AT_LOAD, "mercurial.vfs", True),
    "background closer": (AT_FIRST_USE, "mercurial.vfs", False),
    # hg <= 7.1 (7.2 moved it to merge_utils.update.apply_updates)
    "checkout (hg <= 7.1)": (AT_LOAD, "mercurial.merge", True),
    "checkout": (AT_LOAD, "mercurial.merge_utils.update", True),
    "checkout writes": (AT_FIRST_USE, "mercurial.util", False),
    "checkout workers": (AT_FIRST_USE, "mercurial.worker", False),
    "clone command": (AT_LOAD, "mercurial.commands", False),
    "durable clone": (DURING, None, False),
    "durable commit": (AT_FIRST_USE, "mercurial.transaction", False),
    "recovery": (AT_LOAD, "mercurial.transaction", False),
    "stream apply": (AT_LOAD, "mercurial.streamclone", False),
    "changegroup apply": (AT_LOAD, "mercurial.changegroup", False),
    "changegroup machinery": (AT_FIRST_USE, "mercurial.vfs", False),
    "apply worker": (AT_FIRST_USE, "mercurial.util", False),
    "shared compressors": (AT_FIRST_USE, "mercurial.util", False),
    "bundle reads": (AT_LOAD, "mercurial.exchange", False),
    "bundle copies": (AT_LOAD, "mercurial.bundlerepo", False),
    "packed bundles": (AT_LOAD, "mercurial.streamclone", False),
    "bundle writes": (AT_LOAD, "mercurial.changegroup", False),
    "stream generation": (AT_LOAD, "mercurial.streamclone", False),
    "changegroup generation": (AT_LOAD, "mercurial.changegroup", False),
    "stream file reads": (AT_FIRST_USE, "mercurial.vfs", False),
    "hgweb service": (AT_LOAD, "mercurial.hgweb", True),
    "hgweb applications": (AT_LOAD, "mercurial.hgweb", True),
}

# (part, what is wrapped, wrapper, the calls that are the extension's
# work).  What is wrapped, in the part's module: ``name`` or
# ``Class.name``; ``*.name``: every class of the module defining it;
# ``=name``: the attribute replaced by the wrapper (a class); ``command
# name``: a command; ``mercurial.x:Class.name``: in another module (parts
# wired at first use only); ``@module:function``: the ``(container, name)``
# that ``function()`` finds (a release difference, or what only exists at
# run time), or ``(container, name, wrapper)``.
# fmt: off
WRAPS = (
    # -- every command ----------------------------------------------------
    ("mmap population", "mmapread", ":mmapread",
     "a mapping at or above fastio.mmap-populate-threshold"),
    ("command sessions", "runcommand", ":runcommand",
     "every command (its population session ends with it)"),
    ("background closes", "abstractvfs.backgroundclosing", ":backgroundclosing",
     "every block (checkouts, stock's stream writer)"),
    ("background closer", "=backgroundfilecloser",
     "writer.vfsclose:FileCloserForBlock",
     "the closer of every block backgroundclosing serves"),
    ("checkout (hg <= 7.1)", "applyupdates", ":apply_updates",
     "an update into a fresh working copy (hg clone, hg update from null)"),
    ("checkout", "apply_updates", ":apply_updates",
     "an update into a fresh working copy (hg clone, hg update from null)"),
    ("checkout writes", "makedirs", "checkout:_makedirs",
     "a directory of a checkout block (made once)"),
    ("checkout writes", "unlink", "checkout:_unlink",
     "a file of a fresh checkout block (known not there)"),
    ("checkout writes", "mercurial.context:workingfilectx.clearunknown",
     "checkout:_clearunknown", "a file of a checkout block"),
    ("checkout writes", "mercurial.vfs:abstractvfs.setflags",
     "checkout:_setflags", "a file of a checkout block"),
    ("checkout workers", "partition", "checkout:_partition",
     "the files of an update's workers (split by directory)"),
    ("clone command", "command clone", ":clone_command",
     "a clone under fastio.durable"),
    ("durable clone", "@compat:clone_function", "txn.durable:_clone",
     "the clone of a clone command under fastio.durable"),
    ("durable commit", "@compat:transaction_commit_point",
     "txn.durable:_commit_point",
     "the close of a transaction an apply asked to flush"),
    ("recovery", "rollback", "gates:rollback",
     "the rollback of a journal (hg recover)"),
    # -- applying a stream or a changegroup -------------------------------
    ("stream apply", "consumev1", "gates:consume_v1", "a stream"),
    ("stream apply", "consumev2", "gates:consume_v2", "a stream"),
    ("stream apply", "consumev3", "gates:consume_v3", "a stream"),
    ("changegroup apply", "cg1unpacker.apply", "gates:apply_changegroup",
     "a changegroup of 16 changesets or more (or not saying)"),
    ("changegroup apply", "_addchangegroupfiles", "gates:addchangegroupfiles",
     "the files of a changegroup: in worker processes when they are many "
     "(of a small one: the machinery when they are 32 or more)"),
    ("apply worker", "makedirs", "apply.parallel:_recorded_makedirs",
     "a directory a worker of a parallel apply makes (recorded first)"),
    ("changegroup apply", "cg1unpacker._unpackmanifests",
     "gates:unpackmanifests",
     "the manifests of a changegroup whose files go to workers (applied "
     "while they work)"),
    ("changegroup apply", "cg1unpacker.filelogheader",
     "gates:checked_filelogheader",
     "every file header (a name Mercurial cannot store is an abort)"),
    ("changegroup apply", "*.deltachunk", "gates:checked_deltachunk",
     "every delta (a short one is an abort)"),
    ("changegroup machinery", "vfs.__call__", "gates:open_file",
     "an open on the store vfs of the thread's apply"),
    ("changegroup machinery", "@apply.changegroup:store_vfs_targets",
     "apply.changegroup:_open_by_name",
     "an open through the store vfs of the thread's apply"),
    ("changegroup machinery", "abstractvfs.exists", "apply.changegroup:_exists",
     "a path in a directory the thread's apply knows is missing"),
    ("changegroup machinery", "abstractvfs.rename",
     "apply.changegroup:_waiting_first",
     "a rename during the thread's apply (its pending closes first)"),
    ("changegroup machinery", "abstractvfs.unlink",
     "apply.changegroup:_waiting_first",
     "a removal during the thread's apply (its pending closes first)"),
    ("changegroup machinery", "abstractvfs.tryunlink",
     "apply.changegroup:_waiting_first",
     "a removal during the thread's apply (its pending closes first)"),
    ("changegroup machinery", "abstractvfs.unlinkpath",
     "apply.changegroup:_waiting_first",
     "a removal during the thread's apply (its pending closes first)"),
    ("changegroup machinery", "@compat:revlog_index_read",
     "apply.changegroup:_read_index",
     "the index of a revlog the thread's apply creates"),
    ("changegroup machinery", "mercurial.hook:runhooks",
     "apply.changegroup:_settled_before_hooks",
     "hooks run during the thread's apply (its files closed first)"),
    ("changegroup machinery", "mercurial.transaction:transaction.writepending",
     "apply.changegroup:_settled_around_pending",
     "pending data written during the thread's apply"),
    ("shared compressors", "@apply.compressors:engine_targets", None,
     "a revlog compressor made during an apply or a checkout"),
    # -- bundle files -----------------------------------------------------
    ("bundle reads", "readbundle", "gates:readbundle",
     "a bundle file larger than its buffer (or under fastio.report)"),
    ("bundle reads", "trypullbundlefromurl", "gates:fetch_clonebundle",
     "a clone bundle fetched"),
    ("bundle copies", "bundlerepository._writetempbundle",
     "gates:writetempbundle",
     "the uncompressed copy of a bundle that pull and incoming read"),
    ("packed bundles", "applybundlev1", "gates:applybundlev1",
     "a packed1 bundle"),
    ("bundle writes", "writechunks", "gates:writechunks",
     "a bundle file written"),
    # -- serving ----------------------------------------------------------
    ("stream generation", "_emit2", "gates:emit", "a v2 stream generated"),
    ("stream generation", "_emit3", "gates:emit", "a v3 stream generated"),
    ("stream generation", "generatev1", "gates:generatev1",
     "a v1 stream generated"),
    ("changegroup generation", "deltagroup", "gates:deltagroup",
     "the revisions of most of a large revlog"),
    ("changegroup generation", "makestream", "gates:makestream",
     "a changegroup generated under fastio.report"),
    ("stream file reads", "vfs.__call__", "gates:open_file",
     "a small store file a stream generation reads"),
    ("stream file reads", "mercurial.util:filechunkiter", "serve.serving:_filechunkiter",
     "the chunks of a file a stream generation reads"),
    ("hgweb service", "httpservice.run", ":run_service",
     "hg serve, before it serves"),
    ("hgweb applications", "@:hgweb_applications", ":first_request",
     "the first request of an hgweb or hgwebdir application"),
)
# fmt: on


# -- wiring a part -----------------------------------------------------------

# part -> {name: the function wrapped, as it was}
_originals = {}
# (container, name, wrapper or None, replaced value, part) of what is wired
_wired = []
# (id of the container, name, id of the wrapper) of what is wired
_wired_keys = set()
# part -> problems (empty: wired) of the parts asked for
_parts = {}
# parts wired that found nothing to wrap (another release's)
_absent = set()
# (a server's request threads may ask at once; re-entrant: wiring one part
# may load a module another waits for)
_wiring = threading.RLock()


def wire(part, problems=None):
    """Wire ``part`` in (once), unless ``problems()`` (called once) lists
    why Mercurial's internals are not the ones it was written for; whether
    the part is wired."""
    done = _parts.get(part)
    if done is None:
        with _wiring:
            done = _parts.get(part)
            if done is None:
                found = problems() if problems is not None else []
                if not found:
                    _wire(part)
                done = _parts[part] = list(found)
    return not done


def wired(part):
    """Whether ``part`` is wired in (``None``: not asked for yet)."""
    done = _parts.get(part)
    return None if done is None else not done


def originals(part):
    """``{name: function}``: what ``part`` wrapped, as it was (what the
    part's first call checks)."""
    return _originals.get(part, {})


def _wire(part):
    from mercurial import extensions

    targets = _part_targets(part)
    if not targets:
        _absent.add(part)
    for container, name, wrapper in targets:
        key = (id(container), name, id(wrapper))
        if key in _wired_keys:
            # (vfs.__call__: one wrapper for the parts that share it)
            continue
        _wired_keys.add(key)
        if type(wrapper) is tuple and wrapper[0] is _REPLACEMENT:
            _wired.append((container, name, None, getattr(container, name), part))
            setattr(container, name, wrapper[1])
        elif container is _COMMANDS:
            from mercurial import commands

            extensions.wrapcommand(commands.table, name.encode(), wrapper)
        else:
            original = extensions.wrapfunction(container, name, wrapper)
            _originals.setdefault(part, {})[name] = original
            _wired.append((container, name, wrapper, None, part))


# the container of a ``command`` target
_COMMANDS = object()


def _Replacement(value):
    # what an ``=name`` target is replaced with (told from a wrapper by
    # its type)
    return (_REPLACEMENT, value)


_REPLACEMENT = object()


def _part_targets(part):
    """``(container, name, wrapper)`` of what ``part`` wraps, leaving out
    what this Mercurial lacks."""
    module_name = PARTS[part][1]
    found = []
    for target, wrapper_name in _rows_of(part):
        wrapper = _resolve(wrapper_name) if wrapper_name else None
        if target[0] == "=":
            wrapper = _Replacement(wrapper)
        found.extend(_targets(module_name, target, wrapper))
    return found


# part -> [(target, wrapper)], made at the first wiring
_rows = {}


def _rows_of(part):
    if not _rows:
        for row_part, target, wrapper_name, _work in WRAPS:
            _rows.setdefault(row_part, []).append((target, wrapper_name))
    return _rows.get(part, ())


def _targets(module_name, target, wrapper):
    if target.startswith("command "):
        return [(_COMMANDS, target.split(" ", 1)[1], wrapper)]
    if target.startswith("@"):
        result = _resolve(target[1:])()
        if not result:
            return []
        if isinstance(result, tuple):
            result = [result]
        return [(t[0], t[1], t[2] if len(t) > 2 else wrapper) for t in result]
    path = target.lstrip("=")
    if ":" in path:
        module_name, path = path.split(":")
        module = _module(module_name)
    else:
        # (the part's own module: loaded, or the part's wiring loaded it)
        module = sys.modules[module_name]
    if path.startswith("*."):
        name = path[2:]
        # (type(), not isinstance(): the latter asks a lazy module of the
        # namespace for its __class__, which runs its code)
        return [
            (value, name, wrapper)
            for value in list(vars(module).values())
            if issubclass(type(value), type) and name in vars(value)
        ]
    container = module
    *classes, name = path.split(".")
    for cls in classes:
        container = getattr(container, cls, None)
        if container is None:
            return []
    if not target.startswith("=") and getattr(container, name, None) is None:
        return []
    return [(container, name, wrapper)]


def _module(name):
    module = sys.modules.get(name)
    if module is None or is_lazy(module):
        module = importlib.import_module(name)
    return module


_PACKAGE = __name__.rpartition(".")[0]


def _resolve(spec):
    """The function ``"module:function"`` names (``":function"``: in the
    package's ``__init__``), its module imported now."""
    module_name, function = spec.split(":")
    full = _PACKAGE + "." + module_name if module_name else _PACKAGE
    # (once loaded, from sys.modules: the import system's path costs more)
    module = sys.modules.get(full)
    if module is None:
        module = importlib.import_module(full)
    return getattr(module, function)


def wire_found(part, container, name, wrapper):
    """Wrap ``container.name``, found at run time (a compressor's class),
    as part of ``part``, once."""
    from mercurial import extensions

    with _wiring:
        for wired_container, wired_name, _w, _r, _p in _wired:
            if wired_container is container and wired_name == name:
                return
        extensions.wrapfunction(container, name, wrapper)
        _wired.append((container, name, wrapper, None, part))


def during(part):
    """``with during(part):`` the wraps of ``part`` in force for the block
    only (in the thread running it and every other)."""
    import contextlib

    from mercurial import extensions

    stack = contextlib.ExitStack()
    with stack:
        for container, name, wrapper in _part_targets(part):
            stack.enter_context(extensions.wrappedfunction(container, name, wrapper))
        return stack.pop_all()


def unwire():
    """At exit (atexit): the setups never run go, and the parts of the
    modules every command loads are taken out.  What a wrapper holds (the
    extension's globals, and Mercurial's ``extensions`` module's, whose
    ``bind`` wraps a method) would otherwise be kept alive by the wrapped
    modules that outlive the first collection of the interpreter's
    finalization (``util``, and on 6.7 ``vfs``: their classes are in
    typing's caches), into its slow part, which clears module dicts one by
    one: 180 modules more cost every ``hg status`` 5 ms (measured).  The
    other parts stay: an apply's wrappers may still run in what exits after
    this (a transaction's abort)."""
    from mercurial import extensions

    with _lock:
        _waiting.clear()
        del _failed[:]
    with _wiring:
        kept = []
        while _wired:
            entry = _wired.pop()
            container, name, wrapper, replaced, part = entry
            if not PARTS[part][2]:
                kept.append(entry)
                continue
            # (the functions as they were hold their modules' globals)
            _originals.pop(part, None)
            try:
                if wrapper is None:
                    setattr(container, name, replaced)
                else:
                    extensions.unwrapfunction(container, name, wrapper)
            except Exception:
                # (another extension took it apart): left as it is
                pass
        _wired.extend(reversed(kept))


def in_force():
    """``(part, when, state, [(target, wrapper, work)])`` of each part,
    for ``hg debugfastio``: its state ``"in force"``, ``"not yet"`` (its
    module not loaded, or not used yet) or ``"stock: <problems>"``."""
    rows = []
    for part, (when, module, _undone) in PARTS.items():
        done = _parts.get(part)
        if done is None:
            state = "not yet"
        elif done:
            state = "stock: " + "; ".join(map(str, done))
        elif part in _absent:
            state = "nothing to wrap in this Mercurial"
        else:
            state = "in force"
        wraps = [(t, w, work) for p, t, w, work in WRAPS if p == part]
        rows.append((part, when, state, wraps))
    return rows


def setup(ui):
    """Wire each ``AT_LOAD`` part when its module loads (``extsetup``); a
    part that fails keeps stock behaviour, with a debug line."""
    parts_of = {}
    for part, (when, module, _undone) in PARTS.items():
        if when == AT_LOAD:
            parts_of.setdefault(module, []).append(part)

    def at_load(module, parts):
        def wire_parts(loaded):
            for part in parts:
                try:
                    wire(part)
                except Exception as exc:
                    from mercurial.utils import stringutil

                    ui.debug(
                        b"fastio: not wired in after %s loaded: %s\n"
                        % (module.encode(), stringutil.forcebytestr(exc))
                    )
                    _failed.append((module, part, exc))

        return wire_parts

    for module, parts in parts_of.items():
        when_loaded(module, at_load(module, parts))


# -- wiring into a module once its code has run, not before -----------------
#
# Mercurial loads its modules lazily (``demandimport``, importlib's
# ``LazyLoader``): ``from mercurial import changegroup`` only creates the
# module object, and its code runs at the first attribute access.  Wrapping
# one of its functions when the extension is set up would run that code, and
# that of everything it imports, in every command: ``hg status`` would pay
# for the changegroup, bundle2 and streamclone modules it never uses.
#
# ``when_loaded(name, setup)`` calls ``setup(module)`` right after the code
# of module ``name`` has run instead: at once if it has already run, else
# from the loader (a lazy module's own loader, or the loader of a module not
# imported yet, found through a finder at the front of ``sys.meta_path``).
# Nothing is imported, and no module code runs, earlier than it would have
# without the extension.
#
# A setup that raises does not break the import (Mercurial would fail in a
# place unrelated to the extension): the error goes to the ``on_error``
# given with the setup (a debug line), and ``failures()`` keeps it.

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
