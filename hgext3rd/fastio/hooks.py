"""What the extension puts into the Mercurial modules every command loads.

``util`` (``mmapread``), ``dispatch`` (``runcommand``), ``vfs``
(``backgroundclosing``), ``merge`` (the apply of an update's actions) and
``hgweb`` (``httpservice.run``, and the
application classes once their modules load, for ``preload``) are loaded
by every command, so their wiring runs
in every ``hg status``: it must cost nothing more than the wrapping.  The
functions installed there live in this module, whose globals hold nothing:
a function keeps its module's globals alive, and with them every module
those import, so a wrapper defined in ``mmapwire`` or ``vfsclose`` made
the interpreter's finalization clear and free that whole graph at exit
(measured: 5.3 million instructions, about 1.5 ms, on every
``hg status``).  Each function imports the module doing the work when it
is called and there is work, and nothing else is kept here but the
commands running (the functions run in every command: they load nothing
more).  A mapping the population policy leaves alone (below
``fastio.mmap-populate-threshold``: a small repository's) is mapped here as
``mmappolicy.map_file`` would map it, without beginning the command's
session.
"""


def wire_util(ui):
    from mercurial import dispatch, extensions, util

    # every mapping of store data: the population policy (mmapwire)
    extensions.wrapfunction(util, "mmapread", mmapread)
    # each command's population session, ended with the command
    extensions.wrapfunction(dispatch, "runcommand", runcommand)


def wire_vfs(ui):
    """Serve ``backgroundclosing`` with the extension's file writer (from
    its first block on: see ``vfsclose``)."""
    from mercurial import extensions, vfs as vfsmod

    if getattr(vfsmod.abstractvfs, "backgroundclosing", None) is None:
        from . import compat

        problems = ["abstractvfs.backgroundclosing is missing"]
        compat.report_unsupported(ui, b"file closes", problems)
        return
    extensions.wrapfunction(vfsmod.abstractvfs, "backgroundclosing", backgroundclosing)


def wire_merge(ui):
    """Before Mercurial 7.x's ``merge_utils``: ``merge.applyupdates``."""
    from mercurial import extensions, merge

    if getattr(merge, "applyupdates", None) is not None:
        extensions.wrapfunction(merge, "applyupdates", apply_updates)


def wire_update(ui):
    """Mercurial 7.x: ``merge_utils.update.apply_updates``."""
    from mercurial import extensions
    from mercurial.merge_utils import update

    extensions.wrapfunction(update, "apply_updates", apply_updates)


def apply_updates(orig, *args, **kwargs):
    from . import checkout

    return checkout.apply_updates(orig, *args, **kwargs)


def wire_hgweb(ui):
    """An hgweb server runs the code of what its requests may use before
    they run (see ``preload``): ``hg serve`` before it serves, a WSGI
    application at its first request."""
    from mercurial import extensions, hgweb
    from . import afterload

    extensions.wrapfunction(hgweb.httpservice, "run", run_service)
    # the modules of the application classes (hgweb_mod, hgwebdir_mod, or
    # from 7.2 the _inner modules they come from), wired when they load
    for attr, cls in (("hgweb_mod", "hgweb"), ("hgwebdir_mod", "hgwebdir")):
        module = vars(hgweb).get(attr)
        if module is None:
            continue

        def wire_app(loaded, cls=cls):
            # loaded now (first_request must not run a lazy module's code
            # in a request thread)
            from . import preload

            preload.done()
            extensions.wrapfunction(getattr(loaded, cls), "__call__", first_request)

        def failed(exc, cls=cls):
            ui.debug(
                b"fastio: %s requests not preceded by a preload: %r\n"
                % (cls.encode(), exc)
            )

        afterload.when_loaded(afterload.name_of(module), wire_app, failed)


def run_service(orig, self, *args, **kwargs):
    # hg serve: its application and listening socket are made, no request
    # thread runs yet
    from . import preload

    preload.once(self.ui)
    return orig(self, *args, **kwargs)


def first_request(orig, self, env, respond):
    from . import preload

    if not preload.done():
        preload.once(getattr(self, "ui", None))
    return orig(self, env, respond)


def mmapread(orig, fp, size=None, pre_populate=True):
    command = running_command()
    if command is not None and command.session is None:
        # before the command's first mapping that is the policy's: one that
        # is not is mapped here, as mmappolicy.map_file would map it
        populated = _small_mapping(command, fp, size, pre_populate)
        if populated is not None:
            if populated:
                return orig(fp, size)
            return _unpopulated(orig, fp, size)
    from . import mmapwire

    return mmapwire.mmapread(orig, fp, size, pre_populate)


# fastio.mmap-populate values (mmappolicy.POLICIES) under which a small
# mapping is stock's when the helper cannot populate (policy ``stock``)
_STOCK_WITHOUT_HELPER = (b"auto", b"background")
_OTHER_POLICIES = (b"always", b"never")


def _small_mapping(command, fp, size, pre_populate):
    """None when the mapping is the population policy's (or is not known
    to be without loading it); else whether it is stock's own mapping
    (True) or an unpopulated one (False), as in ``mmappolicy.map_file``."""
    rule = command.small_mappings
    if rule is None:
        rule = command.small_mappings = _small_mapping_rule(command.ui)
    if not rule:
        return None
    threshold, stock = rule
    if pre_populate:
        import os

        try:
            length = size
            if length is None:
                length = os.fstat(fp if isinstance(fp, int) else fp.fileno()).st_size
        except (OSError, AttributeError, ValueError):
            length = 0
        if length >= threshold:
            return None
    return stock and pre_populate


def _small_mapping_rule(ui):
    """``(threshold, stock)`` of the policy ``ui`` asks for (read as
    ``config.mmap_policy`` reads it: a wrong value is left to it, to say),
    or False."""
    requested = ui.config(b"fastio", b"mmap-populate").strip().lower()
    if requested not in _STOCK_WITHOUT_HELPER + _OTHER_POLICIES:
        return False
    helper = ui.config(b"devel", b"fastio.mmap-helper").strip().lower()
    threshold = max(0, ui.configbytes(b"fastio", b"mmap-populate-threshold"))
    ui.configint(b"devel", b"fastio.mmap-thread-nice")
    stock = requested in _STOCK_WITHOUT_HELPER and (
        helper == b"pure" or not _helper_built()
    )
    return threshold, stock


def _helper_built():
    # whether mmappolicy finds _populate, without loading it (one that is
    # there but fails to load counts as built here); looked for on the
    # package's path only (where the import finds it): the finders of
    # sys.meta_path, Mercurial's lazy ones first, take 5 times as long
    import importlib.machinery
    import sys

    path = sys.modules[__package__].__path__
    spec = importlib.machinery.PathFinder.find_spec(__package__ + "._populate", path)
    return spec is not None


def _unpopulated(orig, fp, size):
    """``compat.map_unpopulated``: 7.2's ``pre_populate=False``, nothing on
    6.7 (no such parameter), told from stock's function's code where it is
    a plain function: loading compat costs more than the mapping."""
    code = getattr(orig, "__code__", None)
    if code is None:
        from . import compat

        return compat.map_unpopulated(orig, fp, size)
    if "pre_populate" in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        return orig(fp, size, pre_populate=False)
    return orig(fp, size)


class RunningCommand:
    """A command ``dispatch.runcommand`` is running: its ui, and the mmap
    population session it began at its first mapping (``mmapwire``)."""

    __slots__ = ("ui", "session", "small_mappings")

    def __init__(self, ui):
        self.ui = ui
        self.session = None
        # (threshold, stock): how mappings not the policy's are mapped
        # before the session begins (False: by the session)
        self.small_mappings = None


# the commands running, innermost last (chg and the command server run one
# at a time, but a command may run another through dispatch); empty when
# no command runs
_running = []


def running_command():
    return _running[-1] if _running else None


def runcommand(orig, lui, repo, *args, **kwargs):
    command = RunningCommand(repo.ui if repo is not None else lui)
    _running.append(command)
    try:
        return orig(lui, repo, *args, **kwargs)
    finally:
        _running.remove(command)
        if command.session is not None:
            # no population job outlives its command
            from . import mmapwire

            mmapwire.end_command(command.session)


def backgroundclosing(orig, self, ui, *args, **kwargs):
    from . import vfsclose

    return vfsclose.backgroundclosing(orig, self, ui, *args, **kwargs)
