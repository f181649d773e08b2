"""Changegroup application with deferred closes and lean revlog opens.

Every changegroup that reaches a repository is applied by
``cg1unpacker.apply`` (and its cg2/cg3/cg4 subclasses): ``hg pull``,
``hg clone`` without ``--stream`` (``--pull``, remote peers, narrow clones),
``hg unbundle`` of v1 and v2 bundles, narrow widening, pushes received by a
server.  While one is applied, the store's raw vfs opens revlogs through a
:class:`~.revlogwriter.RevlogOpener` and revlogs share compressors (see
``compressors``).  Every deferred close is done, or has failed and aborted,
before ``apply`` returns: the transaction never closes or rolls back with a
handle still open.

A small changegroup (a bundle2 part announcing fewer than
``SMALL_CHANGESETS`` changesets: the everyday pull, push or unbundle) is
applied as stock applies it, and none of that machinery is loaded: it
would cost more than it saves.  Its files still go through the opener
when they turn out to be many (``SMALL_FILES`` or more, known once its
changesets are in: one changeset may add a whole tree).

A corrupt changegroup is refused with an ``abort:`` where stock shows a
traceback: a file name with a NUL, newline or carriage return (which would
also corrupt the journal, and so the rollback), a delta chunk shorter than
its header, and a delta that does not apply.
"""

import threading

from mercurial.i18n import _
from mercurial import (
    changegroup as changegroupmod,
    error,
    extensions,
    policy,
    vfs as vfsmod,
)
from mercurial.utils import stringutil

# (the apply machinery, the ``buffers``, ``precompress``, ``report``,
# ``revlogwriter`` and ``storewriter`` modules, is imported by the applies
# that use it: a small one loads none of it)
from . import compat, config

# a changegroup announcing fewer changesets is applied as stock applies it
SMALL_CHANGESETS = 16
# ... unless it has at least this many files to write
SMALL_FILES = 32

# the opener of the changegroup being applied (one at a time, main thread)
_active = None


def wire(ui):
    """Wrap the apply.  What serves an apply that uses the machinery is put
    in place by the first such apply (``_wire_machinery``): a command that
    applies only small changegroups pays for none of it."""
    wrap = extensions.wrapfunction
    wrap(changegroupmod.cg1unpacker, "apply", apply)
    wrap(changegroupmod.cg1unpacker, "filelogheader", _checked_filelogheader)
    for cls in vars(changegroupmod).values():
        # (type(), not isinstance(): the latter asks a lazy module of
        # changegroup's namespace for its __class__, which runs its code)
        if issubclass(type(cls), type) and "deltachunk" in vars(cls):
            wrap(cls, "deltachunk", _checked_deltachunk)
    # (without it, the files of a small changegroup are stock's)
    if hasattr(changegroupmod, "_addchangegroupfiles"):
        wrap(changegroupmod, "_addchangegroupfiles", _addchangegroupfiles)


# what stock's internals lack for the machinery (empty: it is wired in), or
# None before the first apply that uses it
_machinery_problems = None


def _wire_machinery(ui):
    """Whether the machinery is wired in: now, unless stock's internals are
    not the ones it was written for (see ``compat.changegroup_internals``).
    The wrappers act only while an apply has the machinery (``_active``)."""
    global _machinery_problems
    if _machinery_problems is None:
        problems = compat.changegroup_internals()
        if problems:
            compat.report_unsupported(ui, b"changegroups", problems)
        else:
            from . import compressors

            compressors.setup()
            wrap = extensions.wrapfunction
            wrap(vfsmod.vfs, "__call__", _open)
            for cls in compat.encoding_store_vfs_classes():
                wrap(cls, "__call__", _open_by_name)
            wrap(vfsmod.abstractvfs, "exists", _exists)
            for name in ("rename", "unlink", "tryunlink", "unlinkpath"):
                wrap(vfsmod.abstractvfs, name, _waiting_first)
            read_index = compat.revlog_index_read()
            if read_index is not None:
                wrap(*read_index, _read_index)
        _machinery_problems = problems
    return not _machinery_problems


def _unstorable(name):
    """A name Mercurial cannot store (its manifest refuses to commit it; its
    fncache and journal are lists of lines).  (Not a regular expression:
    compiling one at load costs every command that loads changegroup.)"""
    return b"\0" in name or b"\n" in name or b"\r" in name


def _checked_filelogheader(orig, self):
    header = orig(self)
    name = header.get(b"filename")
    if name and _unstorable(name):
        from . import storewriter

        raise error.Abort(
            _(b"corrupt changegroup: invalid file name %s")
            % storewriter.stringify(name)
        )
    return header


def _checked_deltachunk(orig, self, *args, **kwargs):
    try:
        return orig(self, *args, **kwargs)
    except ValueError as exc:
        # a chunk shorter than its delta header: stock reads a negative
        # length and shows the traceback
        raise error.Abort(
            _(b"corrupt changegroup: invalid delta chunk (%s)")
            % stringutil.forcebytestr(exc)
        )


def apply(orig, self, repo, tr, *args, **kwargs):
    try:
        return _apply(orig, self, repo, tr, *args, **kwargs)
    except policy.importmod("mpatch").mpatchError as exc:
        raise error.Abort(
            _(b"corrupt changegroup: a delta does not apply (%s)")
            % stringutil.forcebytestr(exc)
        )


def _apply(orig, self, repo, tr, *args, **kwargs):
    settings = config.settings(repo.ui)
    if settings.durable:
        from . import durable

        durable.request(repo, tr, settings)
    if (
        _active is not None
        or _small is not None
        or threading.current_thread() is not threading.main_thread()
    ):
        return orig(self, repo, tr, *args, **kwargs)
    if settings.small_applies and _is_small(args, kwargs):
        return _apply_small(orig, self, repo, tr, settings, *args, **kwargs)
    return _engaged(
        b"changegroup",
        lambda: orig(self, repo, tr, *args, **kwargs),
        self,
        repo,
        tr,
        settings,
    )


def _is_small(args, kwargs):
    # the changesets a bundle2 part announces (its "nbchanges"); a bundle1
    # and a raw stream do not say
    if "expectedtotal" in kwargs:
        expected = kwargs["expectedtotal"]
    else:
        # apply(repo, tr, srctype, url, targetphase, expectedtotal, ...)
        expected = args[3] if len(args) > 3 else None
    return expected is not None and expected < SMALL_CHANGESETS


# the small changegroup being applied as stock applies it: (unpacker, tr,
# settings), for its files (_addchangegroupfiles)
_small = None


def _apply_small(orig, self, repo, tr, settings, *args, **kwargs):
    global _small
    _small = (self, tr, settings)
    try:
        result = orig(self, repo, tr, *args, **kwargs)
    finally:
        _small = None
    if settings.report:
        repo.ui.write_err(b"fastio: small changegroup: applied as stock applies it\n")
    return result


def _addchangegroupfiles(orig, repo, source, revmap, trp, expectedfiles, *args, **kw):
    small = _small
    if small is None or small[0] is not source or expectedfiles < SMALL_FILES:
        return orig(repo, source, revmap, trp, expectedfiles, *args, **kw)
    # a few changesets adding many files: the files get the machinery
    unpacker, tr, settings = small
    return _engaged(
        b"changegroup files",
        lambda: orig(repo, source, revmap, trp, expectedfiles, *args, **kw),
        unpacker,
        repo,
        tr,
        settings,
    )


def _engaged(operation, run, unpacker, repo, tr, settings):
    """``run()`` (stock's apply, or the part of it adding files) with the
    store's revlogs opened by a ``RevlogOpener``, the changegroup read
    through a buffer and compressed ahead when that pays; every deferred
    close done before this returns."""
    global _active
    if not _wire_machinery(repo.ui):
        return run()
    from mercurial import bundle2
    from . import buffers, compressors, newpaths, precompress, report, revlogwriter

    stats = report.OperationStats(operation)
    tuning = settings.tuning(
        repo.ui, getattr(repo, "cachevfs", None), compat.store_path(repo)
    )
    file_writer = settings.make_file_writer(repo.ui, stats.filewriter, tuning)
    encode, rawvfs = compat.encoder(repo.svfs)
    opener = revlogwriter.RevlogOpener(
        rawvfs,
        file_writer,
        stats.writer,
        encode,
        transaction=tr,
        new_paths=newpaths.NewPaths.of(repo, tr),
    )
    opener.store_vfs = repo.svfs
    stream = compat.changegroup_source(unpacker)
    # a bundle2 part ends where the changegroup ends: it can be read ahead
    # (not a raw peer stream, where the protocol goes on after it)
    # (under --debug, stock's bundle2 debug lines come in stock's order)
    read_ahead = isinstance(stream, bundle2.unbundlepart) and not repo.ui.debugflag
    ahead = _compressing_ahead(repo, unpacker, settings) if read_ahead else None
    stop_ahead = None
    _active = opener
    try:
        with compressors.shared(), compressors.taking(ahead):
            complete = False
            try:
                if read_ahead:
                    source = stream
                    if ahead is not None:
                        # (reads the first block: it tells whether a
                        # thread pays)
                        source, stop_ahead = precompress.reading(
                            stream, settings.buffer_size, ahead
                        )
                    compat.set_changegroup_source(
                        unpacker, buffers.StreamBuffer(source, settings.buffer_size)
                    )
                result = run()
                complete = True
            finally:
                # no more deferred closes: later opens are stock's
                _active = None
                opener.detach(complete)
                if stop_ahead is not None:
                    # (before bundle2 reads the part again)
                    stop_ahead()
                if read_ahead:
                    compat.set_changegroup_source(unpacker, stream)
            # a close that failed fails the application (and so the
            # transaction), like a write that failed
            file_writer.finish()
    except BaseException:
        file_writer.finish(raise_errors=False)
        raise
    stats.ahead = ahead
    report.emit(repo.ui, settings, stats)
    return result


def _compressing_ahead(repo, unpacker, settings):
    """The ``precompress.CompressAhead`` for this changegroup, or None
    (switched off, no compression, or internals not the expected ones)."""
    if not settings.compress_ahead:
        return None
    engine = compat.revlog_compression(repo.unfiltered().changelog)
    header_size = getattr(unpacker, "deltaheadersize", None)
    if engine is None or header_size is None or engine[0] == b"none":
        return None
    from . import compressors, precompress

    name, opts = engine
    compressor = compressors.private(name, opts)
    return precompress.CompressAhead(
        compressor, compressors.engine_key(name, opts), header_size
    )


def _open(orig, self, path, mode=b"rb", *args, **kwargs):
    opener = _active
    if opener is None or opener.vfs is not self or args:
        return orig(self, path, mode, *args, **kwargs)
    if opener.store_vfs is not self:
        # the store vfs encoded the name and told it (_open_by_name)
        return opener.open(orig, path, mode, kwargs)
    # a store without encoding: the path is the store name
    opener.store_name = path
    try:
        return opener.open(orig, path, mode, kwargs)
    finally:
        opener.store_name = None


def _open_by_name(orig, self, path, *args, **kwargs):
    # the store vfs encodes the name, then calls the raw vfs (_open): tell
    # the opener which store name the encoded path it gets stands for
    opener = _active
    if opener is None or opener.store_vfs is not self:
        return orig(self, path, *args, **kwargs)
    opener.store_name = path
    try:
        return orig(self, path, *args, **kwargs)
    finally:
        opener.store_name = None


def _read_index(orig, self, filepath, mmap_threshold, size=None):
    # the revlog of a new file reads its index first; stock's open fails
    # and the revlog takes the FileNotFoundError for an empty file (then
    # it opens the index "r+", which the opener refuses without a system
    # call, and creates it "w+")
    opener = _active
    if (
        opener is not None
        and self.opener is opener.store_vfs
        and opener.known_absent(filepath)
    ):
        return b""
    return orig(self, filepath, mmap_threshold, size)


def _exists(orig, self, path=None):
    opener = _active
    if (
        opener is not None
        and path
        and self is opener.store_vfs
        and opener.in_missing_tree(path)
    ):
        return False
    return orig(self, path)


def _waiting_first(orig, self, *args, **kwargs):
    # a file may be renamed or removed while its close is pending only where
    # the filesystem allows it: not on Windows
    opener = _active
    if opener is not None:
        opener.forget()
    return orig(self, *args, **kwargs)
