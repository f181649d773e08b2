"""The wrappers of Mercurial's stream, changegroup, bundle and transaction
functions (``wiring.WRAPS`` says which, and when they are wired).

Each wrapper here decides whether the call is work for the extension and
only then imports the module doing it: ``streamclone`` (applying a
stream), ``changegroup`` (applying a changegroup that is not small),
``serving`` (generating a stream or a changegroup), ``bundleio`` (bundle
files), ``recovery`` (``hg recover``).  An ``hg unbundle`` or ``hg pull``
of a few changesets generates no stream, applies none, applies its
changegroup as stock does, reads no revlog in large calls and its bundle
file in the calls stock makes: it loads none of them.  What those modules rely on in Mercurial is checked
at their first call (``compat.supported``), on the functions as they were
before they were wrapped (``wiring.originals``).

This module's globals hold no modules: its functions stay in Mercurial's
modules until the process exits, and keep these globals alive.
"""

# (a class and a dict, not modules: see above)
from sys import modules as _loaded_modules
from threading import local as _per_thread

# -- stream application: streamclone ------------------------------------------


def consume_v1(orig, repo, *args, **kwargs):
    from .apply import streamclone

    return streamclone.consume("consumev1", orig, repo, *args, **kwargs)


def consume_v2(orig, repo, *args, **kwargs):
    from .apply import streamclone

    return streamclone.consume("consumev2", orig, repo, *args, **kwargs)


def consume_v3(orig, repo, *args, **kwargs):
    from .apply import streamclone

    return streamclone.consume("consumev3", orig, repo, *args, **kwargs)


# -- changegroup application: changegroup ------------------------------------


# a changegroup announcing fewer changesets (its bundle2 part's
# "nbchanges": the everyday pull, push or unbundle) is applied as stock
# applies it: the machinery would cost more to load than it saves ...
SMALL_CHANGESETS = 16
# ... but its files get the machinery when they are this many or more (one
# changeset may add a whole tree)
SMALL_FILES = 32

# per thread (a command's main thread; each of a server's request threads
# applying a push): ``.current``, the small changegroup it applies,
# ``(unpacker, transaction)``
_small = _per_thread()


def apply_changegroup(orig, self, repo, tr, *args, **kwargs):
    """A changegroup's apply; a delta that does not apply is an abort (stock
    shows a traceback)."""
    from mercurial import policy

    try:
        return _apply(orig, self, repo, tr, *args, **kwargs)
    except policy.importmod("mpatch").mpatchError as exc:
        raise _corrupt(b"corrupt changegroup: a delta does not apply (%s)", exc)


def _apply(orig, self, repo, tr, *args, **kwargs):
    ui = repo.ui
    if ui.configbool(b"fastio", b"durable"):
        from . import config
        from .txn import durable

        durable.request(repo, tr, config.settings(ui))
    small = _small
    if getattr(small, "current", None) is not None:
        return orig(self, repo, tr, *args, **kwargs)
    if not (
        ui.configbool(b"devel", b"fastio.small-applies") and _is_small(args, kwargs)
    ):
        from .apply import changegroup

        return changegroup.engaged(
            b"changegroup",
            lambda: orig(self, repo, tr, *args, **kwargs),
            self,
            repo,
            tr,
        )
    small.current = (self, tr)
    try:
        result = orig(self, repo, tr, *args, **kwargs)
    finally:
        small.current = None
    if ui.configbool(b"fastio", b"report"):
        ui.write_err(b"fastio: small changegroup: applied as stock applies it\n")
    return result


def _is_small(args, kwargs):
    # the changesets a bundle2 part announces; a bundle1 and a raw stream
    # do not say
    if "expectedtotal" in kwargs:
        expected = kwargs["expectedtotal"]
    else:
        # apply(repo, tr, srctype, url, targetphase, expectedtotal, ...)
        # in 6.7 to 7.2 (tests/unit/test_compat.py; read here, not through
        # compat, whose imports a small apply would pay for)
        expected = args[3] if len(args) > 3 else None
    return expected is not None and expected < SMALL_CHANGESETS


def addchangegroupfiles(orig, repo, source, revmap, trp, expected, *args, **kw):
    small = getattr(_small, "current", None)
    if small is not None and small[0] is source:
        if expected < SMALL_FILES:
            return orig(repo, source, revmap, trp, expected, *args, **kw)
        from .apply import changegroup, parallel

        return changegroup.engaged(
            b"changegroup files",
            lambda: parallel.apply_files(
                orig, repo, source, revmap, trp, expected, *args, **kw
            ),
            source,
            repo,
            small[1],
        )
    # (the files of a changegroup that is not small: in worker processes
    # when they are enough, its manifests then applied meanwhile)
    if expected < SMALL_FILES and "_fastio_manifests" not in vars(source):
        return orig(repo, source, revmap, trp, expected, *args, **kw)
    from .apply import parallel

    return parallel.apply_files(orig, repo, source, revmap, trp, expected, *args, **kw)


def unpackmanifests(orig, self, repo, *args, **kwargs):
    small = getattr(_small, "current", None)
    if small is not None and small[0] is self:
        return orig(self, repo, *args, **kwargs)
    from .apply import parallel

    return parallel.unpack_manifests(
        addchangegroupfiles, orig, self, repo, *args, **kwargs
    )


def checked_filelogheader(orig, self):
    header = orig(self)
    name = header.get(b"filename")
    # names Mercurial cannot store: its manifest refuses to commit them, its
    # fncache and journal are lists of lines
    if name and (b"\0" in name or b"\n" in name or b"\r" in name):
        from .apply import storewriter

        raise _corrupt(
            b"corrupt changegroup: invalid file name %s", storewriter.stringify(name)
        )
    return header


def checked_deltachunk(orig, self, *args, **kwargs):
    try:
        return orig(self, *args, **kwargs)
    except ValueError as exc:
        # a chunk shorter than its delta header: stock reads a negative
        # length and shows the traceback
        raise _corrupt(b"corrupt changegroup: invalid delta chunk (%s)", exc)


def _corrupt(message, detail):
    """The abort of a corrupt changegroup: ``message % detail``."""
    from mercurial import error
    from mercurial.i18n import _
    from mercurial.utils import stringutil

    if not isinstance(detail, bytes):
        detail = stringutil.forcebytestr(detail)
    return error.Abort(_(message) % detail)


# -- hg recover: recovery ----------------------------------------------------


# the journal of a repository's transactions (every supported release);
# "undo" journals are never left with a list of new paths (it goes when
# they close)
_JOURNAL = b"journal"


def rollback(orig, opener, vfsmap, file, *args, **kwargs):
    if file != _JOURNAL:
        return orig(opener, vfsmap, file, *args, **kwargs)
    from .txn import recovery

    return recovery.rollback(orig, opener, vfsmap, file, *args, **kwargs)


# -- bundle files: bundleio ---------------------------------------------------


def readbundle(orig, ui, fh, *args, **kwargs):
    if _read_as_stock(ui, fh):
        return orig(ui, fh, *args, **kwargs)
    from .serve import bundleio

    return bundleio.readbundle(orig, ui, fh, *args, **kwargs)


def _read_as_stock(ui, fh):
    """Whether ``bundleio`` would read ``fh`` in the calls stock makes:
    under ``fastio.read-buffer=0``, or, with nothing to report
    (``fastio.report`` counts the calls), when ``fh`` is a file its own
    buffer holds whole (a bundle of a few changesets), as the extension's
    would."""
    import io
    import os
    import stat

    read_buffer = ui.configbytes(b"fastio", b"read-buffer")
    if read_buffer <= 0:
        return True
    if type(fh) is not io.BufferedReader or type(fh.raw) is not io.FileIO:
        return False
    if ui.configbool(b"fastio", b"report"):
        return False
    try:
        st = os.fstat(fh.fileno())
    except (OSError, ValueError):
        return False
    # (the buffer open() gives a file: its block size, or more in later
    # Pythons)
    buffer = st.st_blksize if st.st_blksize > 1 else io.DEFAULT_BUFFER_SIZE
    return stat.S_ISREG(st.st_mode) and st.st_size <= min(buffer, read_buffer)


# (every other bundle file is read and written in large calls)


def fetch_clonebundle(orig, *args, **kwargs):
    from .serve import bundleio

    return bundleio.fetch_clonebundle(orig, *args, **kwargs)


def applybundlev1(orig, repo, *args, **kwargs):
    from .serve import bundleio

    return bundleio.applybundlev1(orig, repo, *args, **kwargs)


def writetempbundle(orig, self, *args, **kwargs):
    from .serve import bundleio

    return bundleio.writetempbundle(orig, self, *args, **kwargs)


def writechunks(orig, ui, *args, **kwargs):
    from .serve import bundleio

    return bundleio.writechunks(orig, ui, *args, **kwargs)


# -- generating streams and changegroups: serving -----------------------------


# (the extension's modules are looked up among those loaded: a process that
# applies no changegroup and generates no stream never loads them)
_CHANGEGROUP = __name__.rpartition(".")[0] + ".apply.changegroup"
_SERVING = __name__.rpartition(".")[0] + ".serve.serving"


def open_file(orig, self, *args, **kwargs):
    """``vfs.__call__`` once a changegroup apply or a stream generation
    has used it: the opens of a thread applying a changegroup go to its
    revlog opener, the reads of a thread generating a stream get buffers
    that hold a small file whole, every other open is stock's."""
    changegroup = _loaded_modules.get(_CHANGEGROUP)
    if changegroup is not None and changegroup.applying():
        return changegroup._open(orig, self, *args, **kwargs)
    serving = _loaded_modules.get(_SERVING)
    if serving is not None and serving.reading():
        return serving._open(orig, self, *args, **kwargs)
    return orig(self, *args, **kwargs)


def emit(orig, repo, *args, **kwargs):
    from .serve import serving

    return serving.emit(orig, repo, *args, **kwargs)


def generatev1(orig, repo, *args, **kwargs):
    from .serve import serving

    return serving.generatev1(orig, repo, *args, **kwargs)


def makestream(orig, repo, *args, **kwargs):
    # serving's only work here is fastio.report's line (the option read
    # alone: config.settings reads them all)
    if not repo.ui.configbool(b"fastio", b"report"):
        return orig(repo, *args, **kwargs)
    from .serve import serving

    return serving.makestream(orig, repo, *args, **kwargs)


def deltagroup(orig, repo, store, nodes, *args, **kwargs):
    revisions = orig(repo, store, nodes, *args, **kwargs)
    if not reads_most(store, nodes):
        return revisions
    from .serve import serving

    return serving.deltagroup(repo, store, nodes, revisions)


# data files at most this large are read in a call or two by stock
LARGE_REVLOG = 128 * 1024


def reads_most(store, nodes):
    """Whether emitting ``nodes`` of ``store`` reads most of a large data
    file (a clone, a first pull), not a few revisions of it.  A store that
    is not a revlog (``compat.revlog_of``: remotefilelog's, whose ``len()``
    raises) is left to stock."""
    from . import compat

    rl = compat.revlog_of(store)
    if rl is None:
        return False
    try:
        count = len(rl)
        if not count or len(nodes) * 2 < count:
            return False
        return rl.end(count - 1) > LARGE_REVLOG
    except (AttributeError, TypeError, IndexError, LookupError):
        return False
