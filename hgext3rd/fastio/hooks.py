"""What the extension puts into the Mercurial modules every command loads.

``util`` (``mmapread``), ``dispatch`` (``runcommand``), ``vfs``
(``backgroundclosing``) and ``hgweb`` (``httpservice.run``, and the
application classes once their modules load, for ``preload``) are loaded
by every command, ``transaction`` (``rollback``) by every command that
writes, so their wiring runs
in every ``hg status``: it must cost nothing more than the wrapping.  The
functions installed there live in this module, whose globals hold nothing:
a function keeps its module's globals alive, and with them every module
those import, so a wrapper defined in ``mmapwire`` or ``vfsclose`` made
the interpreter's finalization clear and free that whole graph at exit
(measured: 5.3 million instructions, about 1.5 ms, on every
``hg status``).  Each function imports the module doing the work when it
is called, and nothing else is kept here but the commands running (the
functions run in every command: they load nothing more).
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


def wire_transaction(ui):
    """``hg recover`` also removes the directories an apply made."""
    from mercurial import extensions, transaction

    extensions.wrapfunction(transaction, "rollback", rollback)


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
    from . import mmapwire

    return mmapwire.mmapread(orig, fp, size, pre_populate)


class RunningCommand:
    """A command ``dispatch.runcommand`` is running: its ui, and the mmap
    population session it began at its first mapping (``mmapwire``)."""

    __slots__ = ("ui", "session")

    def __init__(self, ui):
        self.ui = ui
        self.session = None


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


def rollback(orig, *args, **kwargs):
    from . import recovery

    return recovery.rollback(orig, *args, **kwargs)


def backgroundclosing(orig, self, ui, *args, **kwargs):
    from . import vfsclose

    return vfsclose.backgroundclosing(orig, self, ui, *args, **kwargs)
