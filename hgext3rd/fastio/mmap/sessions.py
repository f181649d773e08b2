"""The mmap population policy (``mmappolicy``) of each running command.

Every ``util.mmapread`` (wrapped in ``__init__``) goes through
``mmappolicy.map_file``, which decides
how the mapping is populated (never whether there is one: callers check
that mmap is safe first).  Each command (``dispatch.runcommand``: one per
process with ``hg``, many with chg and the command server) gets its own
session at its first mapping: the policy of its configuration, and its
population jobs, stopped and joined when the command ends.  A command that
maps nothing the policy populates loads none of it (``__init__`` maps
the others).
"""

import threading

from .. import running_command
from . import mmappolicy

_stop_at_exit = []
# a server's request threads map files under the command serving them
_begin_lock = threading.Lock()


def session():
    """The population session of the running command, begun now if it has
    none yet (``mmappolicy.current()`` outside any command)."""
    command = running_command()
    if command is None:
        return mmappolicy.current()
    if command.session is None:
        with _begin_lock:
            if command.session is None:
                _begin(command)
    return command.session


def _begin(command):
    if not _stop_at_exit:
        import atexit

        # no job left running at interpreter exit (library users)
        atexit.register(mmappolicy.stop_everything)
        _stop_at_exit.append(True)
    ui = command.ui
    command.session = mmappolicy.begin_command(ui, lambda: mmappolicy.configured(ui))


def mmapread(orig, fp, size=None, pre_populate=True):
    session()
    return mmappolicy.map_file(orig, fp, size, pre_populate)


def end_command(session):
    """Stop and join the population jobs of a command that ended."""
    mmappolicy.end_command(session)
