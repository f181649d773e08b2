"""The working copy files of a checkout: each directory checked and made
once per block, not once per file.

A checkout writes its files in ``batchget`` (in each worker process), inside
``repo.wvfs.backgroundclosing``, where ``vfsclose`` enters :func:`block`.
Per file, stock audits the path twice (``clearunknown``, then the write),
each time with an ``lstat`` of every ancestor directory and a stat of its
``.hg``, and calls ``mkdir`` on the file's directory, which fails with
EEXIST for all files but the first of each directory: on a network
filesystem each of those calls is a round trip.  For the block:

- the working copy's auditor caches what it has checked, through
  Mercurial's own ``pathauditor.cached()`` (as ``hg grep`` and the
  dirstate's walk do): each path and each ancestor is still checked,
  once, with stock's checks (illegal components, nested repositories,
  symbolic links); the cache is cleared when the block ends;
- ``util.makedirs`` returns at once for a directory that this block
  already made or found to exist;
- the filelogs read for the files share one decompressor per engine
  (``compressors``): building one per filelog was the first line of the
  checkout's profile.

A checkout into a working directory that held nothing but ``.hg`` when the
update began (a clone's, an ``hg update`` from null after ``hg clone -U``)
skips two checks per file whose answer is known: ``clearunknown``'s look
for a directory at the file's path (only files of the revision and their
directories are made there, and a path of the revision is never a
directory of another), and ``setflags`` of a plain file just written (a
new file is made without exec bits and is not a link).  The path is still
audited.  And while an update applies its actions, the objects the
command has made so far are frozen out of the garbage collector
(``gc.freeze``), so that the worker processes forked for the files
neither scan them nor copy their pages by touching them.  ``gc.freeze``
zeroes the collector's counts (every release): in a process that checks
out again and again (a command server, hgweb) the full collection that
stock reaches after ten collections of the middle generation would never
come, and the cycles of every command before (repositories, with their
revlog indexes and the maps of their caches) would stay.  So the young
garbage is collected before each freeze (not frozen into the oldest
generation), and the counts the freezes zeroed are kept here: once they
make a full collection's worth, it runs before the freeze (from the
process's second checkout on: a one-shot command never pays one here).

Within a checkout, a directory that holds a file to write is never removed
or replaced (``clearunknown`` and the backups remove or move a file, or the
path of the file itself, which is never an ancestor of another), and the
worker processes only add to the tree, so what was found stays true.
"""

import contextlib
import gc
import os

# the directories (absolute, as vfs.join gives them) known to exist in the
# checkout block running in this process, or None outside one
_known_dirs = None

# the working directories (``wvfs.base``) an update is applying its actions
# to while they held nothing but .hg when it began: set in the process that
# forks the workers, which inherit it
_fresh_roots = set()
# the working directory of the checkout block running in this process when
# it is one of those, else None
_fresh_block = None
# updates applying their actions in this process (one inside another:
# a subrepository's), and whether the outermost froze gc (not when someone
# else had: gc.unfreeze would undo their freeze too)
_applying = 0
_froze = False
# collections of the middle generation counted since the last full one,
# across the freezes that zeroed the collector's own count (None before the
# process's first freeze)
_middle_collections = None


def _holds_only_dothg(base):
    try:
        return os.listdir(base) == [b".hg"]
    except OSError:
        return False


def _freeze():
    global _middle_collections
    if not gc.isenabled():
        # (someone turned collections off: none made here either)
        gc.freeze()
        return
    gc.collect(1)
    # (the collection above counts as one, as stock's would)
    counted = gc.get_count()[2]
    if _middle_collections is None:
        # the first checkout: what its freeze zeroes matters only to a
        # process that checks out again (a one-shot command pays no more)
        _middle_collections = counted
    else:
        _middle_collections += counted
        if _middle_collections >= gc.get_threshold()[2]:
            gc.collect()
            _middle_collections = 0
    gc.freeze()


def apply_updates(orig, repo, mresult, wctx, *args, **kwargs):
    """What applies an update's actions to the working copy (Mercurial's
    ``merge_utils.update.apply_updates``, ``merge.applyupdates`` before
    7.x), wrapped."""
    global _applying, _froze
    if wctx.isinmemory():
        return orig(repo, mresult, wctx, *args, **kwargs)
    base = repo.wvfs.base
    fresh = base not in _fresh_roots and _holds_only_dothg(base)
    if fresh:
        _fresh_roots.add(base)
    if not _applying:
        _froze = not gc.get_freeze_count()
        if _froze:
            _freeze()
    _applying += 1
    try:
        return orig(repo, mresult, wctx, *args, **kwargs)
    finally:
        _applying -= 1
        if not _applying and _froze:
            _froze = False
            gc.unfreeze()
        if fresh:
            _fresh_roots.discard(base)


def _clearunknown(orig, self):
    base = _fresh_block
    if base is None or self._repo.wvfs.base != base:
        return orig(self)
    # nothing is in the way in a fresh checkout: the path is still audited
    self._repo.wvfs.audit(self._path)
    return None


def _setflags(orig, self, path, l, x):
    # a plain file of a fresh checkout, just written: a new file, made
    # without exec bits (and without a link) (see the docstring)
    if l or x or _fresh_block is None or getattr(self, "base", None) != _fresh_block:
        return orig(self, path, l, x)
    return None


def _makedirs(orig, name, *args, **kwargs):
    known = _known_dirs
    if known is None:
        return orig(name, *args, **kwargs)
    if name in known:
        return None
    result = orig(name, *args, **kwargs)
    # (made, or there: makedirs returns on EEXIST)
    known.add(name)
    return result


@contextlib.contextmanager
def block(wvfs):
    """The checkout block writing into the working copy ``wvfs``."""
    global _known_dirs, _fresh_block
    if _known_dirs is not None:
        # (nested: the outer block's)
        yield
        return
    from . import wiring
    from .apply import compressors

    # (util.makedirs, clearunknown and setflags: see wiring.WRAPS)
    wiring.wire("checkout writes")
    compressors.setup()
    audit = getattr(wvfs, "audit", None)
    caching = getattr(audit, "cached", None)
    with contextlib.ExitStack() as stack:
        if caching is not None:
            stack.enter_context(caching())
        # the filelogs read for the files share their decompressors
        stack.enter_context(compressors.shared())
        _known_dirs = set()
        base = getattr(wvfs, "base", None)
        if base in _fresh_roots:
            _fresh_block = base
        try:
            yield
        finally:
            _known_dirs = _fresh_block = None
