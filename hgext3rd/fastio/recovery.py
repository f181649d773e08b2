"""``hg recover`` also removes what ``newpaths`` recorded.

Mercurial's rollback of an abandoned journal (``transaction.rollback``,
called by ``hg recover``) truncates and removes files, restores backups and
removes temporary files, among them the extension's list of new paths.  The
list is read first, and what it names (the directories the interrupted
apply made, the cache files it created) is removed once Mercurial's
playback is done.
"""

from . import newpaths


def rollback(orig, opener, vfsmap, file, *args, **kwargs):
    """``transaction.rollback`` (wrapped in ``gates``) of a journal."""
    leftovers = newpaths.read_leftovers(opener, vfsmap.get(newpaths.PLAIN))
    result = orig(opener, vfsmap, file, *args, **kwargs)
    newpaths.remove(*leftovers)
    return result
