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

A corrupt changegroup is refused with an ``abort:`` where stock shows a
traceback: a file name with a NUL, newline or carriage return (which would
also corrupt the journal, and so the rollback), a delta chunk shorter than
its header, and a delta that does not apply.
"""

import re
import threading

from mercurial.i18n import _
from mercurial import (
    bundle2,
    changegroup as changegroupmod,
    error,
    extensions,
    policy,
    vfs as vfsmod,
)
from mercurial.utils import stringutil

from . import (
    buffers,
    compat,
    compressors,
    config,
    durable,
    newpaths,
    precompress,
    report,
    revlogwriter,
    storewriter,
)

# the opener of the changegroup being applied (one at a time, main thread)
_active = None


def wire(ui):
    """Wire in, unless stock's internals are not the ones this was written
    for (see ``compat.changegroup_internals``)."""
    problems = compat.changegroup_internals()
    if problems:
        compat.report_unsupported(ui, b"changegroups", problems)
        return
    compressors.setup()
    wrap = extensions.wrapfunction
    wrap(changegroupmod.cg1unpacker, "apply", apply)
    wrap(changegroupmod.cg1unpacker, "filelogheader", _checked_filelogheader)
    for cls in vars(changegroupmod).values():
        if isinstance(cls, type) and "deltachunk" in vars(cls):
            wrap(cls, "deltachunk", _checked_deltachunk)
    wrap(vfsmod.vfs, "__call__", _open)
    for cls in compat.encoding_store_vfs_classes():
        wrap(cls, "__call__", _open_by_name)
    wrap(vfsmod.abstractvfs, "exists", _exists)
    for name in ("rename", "unlink", "tryunlink", "unlinkpath"):
        wrap(vfsmod.abstractvfs, name, _waiting_first)
    read_index = compat.revlog_index_read()
    if read_index is not None:
        wrap(*read_index, _read_index)


# names Mercurial cannot store (its manifest refuses to commit them; its
# fncache and journal are lists of lines)
_unstorable = re.compile(rb"[\0\n\r]").search


def _checked_filelogheader(orig, self):
    header = orig(self)
    name = header.get(b"filename")
    if name and _unstorable(name) is not None:
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
    global _active
    settings = config.settings(repo.ui)
    durable.request(repo, tr, settings)
    if _active is not None or threading.current_thread() is not (
        threading.main_thread()
    ):
        return orig(self, repo, tr, *args, **kwargs)
    stats = report.OperationStats(b"changegroup")
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
    stream = compat.changegroup_source(self)
    # a bundle2 part ends where the changegroup ends: it can be read ahead
    # (not a raw peer stream, where the protocol goes on after it)
    # (under --debug, stock's bundle2 debug lines come in stock's order)
    read_ahead = isinstance(stream, bundle2.unbundlepart) and not repo.ui.debugflag
    ahead = _compressing_ahead(repo, self, settings) if read_ahead else None
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
                        self, buffers.StreamBuffer(source, settings.buffer_size)
                    )
                result = orig(self, repo, tr, *args, **kwargs)
                complete = True
            finally:
                # no more deferred closes: later opens are stock's
                _active = None
                opener.detach(complete)
                if stop_ahead is not None:
                    # (before bundle2 reads the part again)
                    stop_ahead()
                if read_ahead:
                    compat.set_changegroup_source(self, stream)
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
