"""``hg recover`` also removes what ``newpaths`` recorded.

Mercurial's rollback of an abandoned journal (``transaction.rollback``,
called by ``hg recover``) truncates and removes files, restores backups and
removes temporary files, among them the extension's list of new paths.  The
list is read first, and what it names (the directories the interrupted
apply made, the cache files it created) is removed once Mercurial's
playback is done.

So are the temporary files of Mercurial's atomic writes in the store's
top directory (``util.atomictempfile``: the ``fncache`` and
``phaseroots`` of a transaction's close are written to ``.NAME-XXXXXXXX~``,
then renamed over ``NAME``).  A process killed between the two leaves one,
with or without the extension, and Mercurial's rollback does not know of
it.  ``hg recover`` holds the store's lock, so no writer can still own one.
"""

import re
import stat

from . import newpaths

# util.mktempcopy's name: a dot, the file's name, a dash, tempfile.mkstemp's
# eight random characters, a tilde
_ATOMIC_TEMPORARY = re.compile(rb"\A\..+-[a-z0-9_]{8}~\Z")


def rollback(orig, opener, vfsmap, file, *args, **kwargs):
    """``transaction.rollback`` (wrapped in ``gates``) of a journal."""
    leftovers = newpaths.read_leftovers(opener, vfsmap.get(newpaths.PLAIN))
    result = orig(opener, vfsmap, file, *args, **kwargs)
    newpaths.remove(*leftovers)
    remove_atomic_temporaries(opener)
    return result


def remove_atomic_temporaries(vfs):
    """Remove the temporary files of interrupted atomic writes from the
    top directory of ``vfs`` (the store)."""
    # their names are not encoded: the store's own vfs, under the encoding
    # one (the fncache store's)
    vfs = getattr(vfs, "vfs", vfs)
    for name in vfs.listdir():
        if not _ATOMIC_TEMPORARY.match(name):
            continue
        try:
            if stat.S_ISREG(vfs.lstat(name).st_mode):
                vfs.tryunlink(name)
        except OSError:
            pass
