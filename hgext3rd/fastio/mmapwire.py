"""Wiring of the mmap population policy (``mmappolicy``) into Mercurial.

Every ``util.mmapread`` goes through ``mmappolicy.map_file``, which decides
how the mapping is populated (never whether there is one: callers check
that mmap is safe first).  Each command (``dispatch.runcommand``: one per
process with ``hg``, many with chg and the command server) gets its own
session: the policy of its configuration, and its population jobs, stopped
and joined when it ends.
"""

import atexit

from mercurial import dispatch, extensions, exthelper, util

from . import config, mmappolicy

eh = exthelper.exthelper()


@eh.extsetup
def _extsetup(ui):
    extensions.wrapfunction(util, "mmapread", _mmapread)
    extensions.wrapfunction(dispatch, "runcommand", _runcommand)
    atexit.register(mmappolicy.stop_everything)


def _mmapread(orig, fp, size=None, pre_populate=True):
    return mmappolicy.map_file(orig, fp, size, pre_populate)


def _runcommand(orig, lui, repo, *args, **kwargs):
    ui = repo.ui if repo is not None else lui
    session = mmappolicy.begin_command(ui, lambda: config.mmap_policy(ui))
    try:
        return orig(lui, repo, *args, **kwargs)
    finally:
        mmappolicy.end_command(session)
