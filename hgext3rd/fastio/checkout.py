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
skips three calls per file whose answer is known: ``clearunknown``'s look
for a directory at the file's path (only files of the revision and their
directories are made there, and a path of the revision is never a
directory of another), the vfs' ``unlink`` of the file before it writes it
(there to keep a hardlink from being written through: no file is there
yet, and one the checkout wrote has one link), and ``setflags`` of a plain
file just written (a new file is made without exec bits and is not a
link).  The path is still audited.

The kernel lets one create at a time into a directory (on a network
filesystem, a round trip each), and Mercurial deals an update's files to
its worker processes in turn, so that they all create in the same
directory at once: during an update each worker gets a run of whole
directories instead.  When the working copy's filesystem is known slow (an
apply of this command found it so: the checkout of ``hg clone``; or ``hg
debugfastio`` measured it), the update starts twice Mercurial's number of
workers (at most 32), which wait on round trips rather than on the
processor; never when ``worker.numcpus`` is set.

And while an update applies its actions, the objects the
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
import errno
import gc
import os
import posixpath

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
    from . import wiring

    # (worker.partition: see wiring.WRAPS)
    wiring.wire("checkout workers")
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
        with _workers_for(repo, base):
            return orig(repo, mresult, wctx, *args, **kwargs)
    finally:
        _applying -= 1
        if not _applying and _froze:
            _froze = False
            gc.unfreeze()
        if fresh:
            _fresh_roots.discard(base)


# Mercurial's workers (processes) per core when the working copy's
# filesystem is slow: they wait on round trips, not on the processor
_SLOW_WORKERS_FACTOR = 2
_MAX_WORKERS = 32


def _workers_for(repo, base):
    """More worker processes than Mercurial's default while the update
    applies its actions, when the working copy's filesystem is known slow:
    an apply of this command found it so (hg clone's checkout), or ``hg
    debugfastio`` measured it (auto mode); never when ``worker.numcpus`` is
    set, never on a filesystem not known slow."""
    ui = repo.ui
    if ui.config(b"worker", b"numcpus") or not _known_slow(repo, base):
        return contextlib.nullcontext()
    from . import compat

    count = min(_MAX_WORKERS, _SLOW_WORKERS_FACTOR * compat.worker_count(ui))
    ui.debug(b"fastio: slow filesystem: %d workers for the checkout\n" % count)
    return ui.configoverride({(b"worker", b"numcpus"): b"%d" % count}, b"fastio")


def _known_slow(repo, base):
    from . import config
    from .diag import autotune
    from .writer import filewriter

    if filewriter.slow_filesystem(base):
        return True
    settings = config.settings(repo.ui)
    if settings.write_mode != config.MODE_AUTO or not settings.probe_max_age_s:
        return False
    tuning = autotune.Tuning(repo.ui, repo.vfs, base, settings.probe_max_age_s)
    latency = tuning.initial_latency_ns
    return latency is not None and latency >= settings.threshold_ns


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


def _partition(orig, items, slices):
    # Mercurial deals an update's files to its workers in turn (every
    # worker gets every slices-th file), so that all of them create files in
    # the same directory at once, where the kernel lets one create at a time
    # (the directory's lock: a round trip each on a network filesystem).
    # During an update, each worker gets a run of whole directories instead
    # (a directory larger than a slice is shared by neighbours).
    if not _applying or slices < 2:
        return orig(items, slices)
    try:
        dirs = [posixpath.dirname(item[0]) for item in items]
    except (TypeError, IndexError, AttributeError):
        return orig(items, slices)
    return _by_directory(items, dirs, slices)


def _by_directory(items, dirs, slices):
    """``items`` in ``slices`` runs of about equal size (none empty), each
    cut where the directory ``dirs[i]`` changes when one is near."""
    count = len(items)
    size = count / slices
    cuts = [0]
    for k in range(1, slices):
        ideal = round(k * size)
        cut = ideal
        # the nearest change of directory within half a slice
        for delta in range(int(size // 2) + 1):
            after, before = ideal + delta, ideal - delta
            if 0 < after < count and dirs[after] != dirs[after - 1]:
                cut = after
                break
            if 0 < before < count and dirs[before] != dirs[before - 1]:
                cut = before
                break
        if cuts[-1] < cut < count:
            cuts.append(cut)
    cuts.append(count)
    return [items[a:b] for a, b in zip(cuts, cuts[1:])]


def _unlink(orig, path, *args, **kwargs):
    # the vfs unlinks a file before writing it anew (so that a hardlink is
    # not written through): in a fresh checkout no file of the working copy
    # is there before this block writes it, and one it wrote has one link,
    # so the answer is known without a round trip (see the docstring)
    base = _fresh_block
    if (
        base is not None
        and path.startswith(base)
        and path[len(base) : len(base) + 1] == b"/"
        and b"/.hg/" not in path[len(base) :]
    ):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    return orig(path, *args, **kwargs)


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
