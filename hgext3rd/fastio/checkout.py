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

Within a checkout, a directory that holds a file to write is never removed
or replaced (``clearunknown`` and the backups remove or move a file, or the
path of the file itself, which is never an ancestor of another), and the
worker processes only add to the tree, so what was found stays true.
"""

import contextlib

# the directories (absolute, as vfs.join gives them) known to exist in the
# checkout block running in this process, or None outside one
_known_dirs = None

# whether util.makedirs is wrapped (once per process)
_wired = False


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
    global _known_dirs, _wired
    if _known_dirs is not None:
        # (nested: the outer block's)
        yield
        return
    from . import compressors

    if not _wired:
        from mercurial import extensions, util

        extensions.wrapfunction(util, "makedirs", _makedirs)
        compressors.setup()
        _wired = True
    audit = getattr(wvfs, "audit", None)
    caching = getattr(audit, "cached", None)
    with contextlib.ExitStack() as stack:
        if caching is not None:
            stack.enter_context(caching())
        # the filelogs read for the files share their decompressors
        stack.enter_context(compressors.shared())
        _known_dirs = set()
        try:
            yield
        finally:
            _known_dirs = None
