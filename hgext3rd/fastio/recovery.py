"""``hg recover`` also removes what ``newpaths`` recorded.

Mercurial's rollback of an abandoned journal (``transaction.rollback``,
called by ``hg recover``) truncates and removes files, restores backups and
removes temporary files, among them the extension's list of new paths.  The
list is read first, and what it names (the directories the interrupted
apply made, the cache files it created) is removed once Mercurial's
playback is done (``hooks`` wraps ``transaction.rollback``).
"""

from . import newpaths

# the journal of a repository's transactions (every supported release);
# "undo" journals are never left with a list (it goes when they close)
_JOURNAL = b"journal"


def rollback(orig, opener, vfsmap, file, *args, **kwargs):
    leftovers = ([], [])
    if file == _JOURNAL:
        leftovers = newpaths.read_leftovers(opener, vfsmap.get(newpaths.PLAIN))
    result = orig(opener, vfsmap, file, *args, **kwargs)
    newpaths.remove(*leftovers)
    return result
