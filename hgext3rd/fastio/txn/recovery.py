"""``hg recover`` also removes what ``newpaths`` recorded.

Mercurial's rollback of an abandoned journal (``transaction.rollback``,
called by ``hg recover``) truncates and removes files, restores backups and
removes temporary files, among them the extension's list of new paths.  The
list is read first, and only the list that this journal names (its
``journal.backupfiles``, read by Mercurial's own reader): what it names
(the directories the interrupted apply made, the cache files it created) is
removed once Mercurial's playback is done.  A list the journal does not
name, or whose first line does not match its name, is ignored and left in
place.

So are the temporary files of Mercurial's atomic writes in the store's
top directory (``util.atomictempfile``: the ``fncache`` and
``phaseroots`` of a transaction's close are written to ``.NAME-XXXXXXXX~``,
then renamed over ``NAME``).  A process killed between the two leaves one,
with or without the extension, and Mercurial's rollback does not know of
it.  Only those not older than the transaction (its ``.hg/journal.desc``,
which Mercurial writes as the transaction starts) go: a file of that shape
that was there before, say one a stream carried, stays.  ``hg recover``
holds the store's lock, so no writer can still own one.
"""

import re
import stat

from . import newpaths

# util.mktempcopy's name: a dot, the file's name, a dash, tempfile.mkstemp's
# eight random characters, a tilde
_ATOMIC_TEMPORARY = re.compile(rb"\A\..+-[a-z0-9_]{8}~\Z")
# written by Mercurial as a transaction starts, in .hg (no stream reaches it)
_JOURNAL_DESC = b"journal.desc"


def rollback(orig, opener, vfsmap, file, *args, **kwargs):
    """``transaction.rollback`` (wrapped in ``gates``) of a journal."""
    leftovers = newpaths.read_leftovers(vfsmap, _backup_entries(opener, file))
    started_ns = _started_ns(vfsmap.get(newpaths.PLAIN))
    result = orig(opener, vfsmap, file, *args, **kwargs)
    newpaths.remove(*leftovers)
    if started_ns is not None:
        remove_atomic_temporaries(opener, started_ns)
    return result


def _backup_entries(opener, journal):
    """The entries of ``journal``'s backup file, as Mercurial's rollback
    reads them (none when it is missing or unreadable)."""
    from mercurial import transaction

    name = b"%s.backupfiles" % journal
    try:
        with opener(name, b"rb") as fp:
            return transaction.read_backup_files(lambda message: None, fp)
    except (OSError, ValueError):
        return []


def _started_ns(plainvfs):
    if plainvfs is None:
        return None
    try:
        return plainvfs.lstat(_JOURNAL_DESC).st_mtime_ns
    except OSError:
        return None


def remove_atomic_temporaries(vfs, since_ns):
    """Remove the temporary files of interrupted atomic writes, not older
    than ``since_ns``, from the top directory of ``vfs`` (the store)."""
    # their names are not encoded: the store's own vfs, under the encoding
    # one (the fncache store's)
    vfs = getattr(vfs, "vfs", vfs)
    for name in vfs.listdir():
        if not _ATOMIC_TEMPORARY.match(name):
            continue
        try:
            st = vfs.lstat(name)
            if stat.S_ISREG(st.st_mode) and st.st_ctime_ns >= since_ns:
                vfs.tryunlink(name)
        except OSError:
            pass
