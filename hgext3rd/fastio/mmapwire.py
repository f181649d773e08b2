"""Wiring of the mmap population policy (``mmappolicy``) into Mercurial.

Every ``util.mmapread`` goes through ``mmappolicy.map_file``, which decides
how the mapping is populated (never whether there is one: callers check
that mmap is safe first).  Each command (``dispatch.runcommand``: one per
process with ``hg``, many with chg and the command server) gets its own
session at its first mapping: the policy of its configuration, and its
population jobs, stopped and joined when the command ends.  A command that
maps nothing loads none of it.
"""

from mercurial import dispatch, extensions, util

from . import config, mmappolicy


class _Command:
    __slots__ = ("ui", "session")

    def __init__(self, ui):
        self.ui = ui
        self.session = None


# the commands running, innermost last (chg and the command server nest
# none, but a command may run another through dispatch)
_commands = []
_stop_at_exit = []


def wire(ui):
    extensions.wrapfunction(util, "mmapread", _mmapread)
    extensions.wrapfunction(dispatch, "runcommand", _runcommand)


def session():
    """The population session of the running command, begun now if it has
    none yet (``mmappolicy.current()`` outside any command)."""
    if not _commands:
        return mmappolicy.current()
    command = _commands[-1]
    if command.session is None:
        if not _stop_at_exit:
            import atexit

            # no job left running at interpreter exit (library users)
            atexit.register(mmappolicy.stop_everything)
            _stop_at_exit.append(True)
        ui = command.ui
        command.session = mmappolicy.begin_command(ui, lambda: config.mmap_policy(ui))
    return command.session


def _mmapread(orig, fp, size=None, pre_populate=True):
    session()
    return mmappolicy.map_file(orig, fp, size, pre_populate)


def _runcommand(orig, lui, repo, *args, **kwargs):
    command = _Command(repo.ui if repo is not None else lui)
    _commands.append(command)
    try:
        return orig(lui, repo, *args, **kwargs)
    finally:
        _commands.remove(command)
        if command.session is not None:
            mmappolicy.end_command(command.session)
