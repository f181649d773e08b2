"""Changegroup application with deferred closes and lean revlog opens: the
machinery of an apply that uses it.

Every changegroup that reaches a repository is applied by
``cg1unpacker.apply`` (and its cg2/cg3/cg4 subclasses): ``hg pull``,
``hg clone`` without ``--stream`` (``--pull``, remote peers, narrow clones),
``hg unbundle`` of v1 and v2 bundles, narrow widening, pushes received by a
server.  ``gates`` wraps it, leaves a small changegroup to stock and calls
:func:`engaged` for the others (or for the files of a small one that has
many).  While the machinery is engaged, the store's raw vfs opens revlogs
through a :class:`~.revlogwriter.RevlogOpener` and revlogs share
compressors (see ``compressors``).  Every deferred close is done, or has
failed and aborted, before ``apply`` returns: the transaction never closes
or rolls back with a handle still open.

Other processes may read the store before that: a hook (run by stock's
apply, ``pretxnchangegroup`` among them) and the commands it starts, which
see the pending changes through ``HG_PENDING``.  So everything handed to
the file writer is on disk (:func:`settle`) before any hook runs, and
before and after the transaction writes its pending data
(``transaction.writepending``).
"""

import threading

from .. import compat, config, wiring


class _Applying(threading.local):
    # the opener of the changegroup this thread applies (a command's main
    # thread; a server's request threads, each applying a push to its
    # repository): the wrappers act on that thread's opens only
    opener = None
    # its report.OperationStats (what workers of a parallel apply add to)
    stats = None


_applying = _Applying()


def applying():
    """Whether this thread applies a changegroup with the machinery
    (``gates.open_file``)."""
    return _applying.opener is not None


def _wire_machinery(ui):
    """Whether the machinery is wired in: now, unless stock's internals are
    not the ones it was written for (see ``compat.changegroup_internals``).
    The wrappers act only on the opens of a thread whose apply has the
    machinery (``_applying``)."""

    def problems():
        found = compat.changegroup_internals()
        if found:
            compat.report_unsupported(ui, b"changegroups", found)
        return found

    if not wiring.wire("changegroup machinery", problems):
        return False
    from . import compressors

    compressors.setup()
    return True


def store_vfs_targets():
    """``(class, "__call__")`` of the store vfs classes that encode a name
    and then call their raw vfs (``wiring``: ``_open_by_name``)."""
    return [(cls, "__call__") for cls in compat.encoding_store_vfs_classes()]


def engaged(operation, run, unpacker, repo, tr):
    """``run()`` (stock's apply, or the part of it adding files) with the
    store's revlogs opened by a ``RevlogOpener``, the changegroup read
    through a buffer and compressed ahead when that pays; every deferred
    close done before this returns.  (A nested apply is stock's.)"""
    applying = _applying
    if applying.opener is not None or not _wire_machinery(repo.ui):
        return run()
    settings = config.settings(repo.ui)
    from mercurial import bundle2
    from . import buffers, compressors, precompress
    from ..txn import newpaths
    from ..diag import report

    stats = report.OperationStats(operation)
    opener, file_writer = _opener(
        repo, settings, stats, tr, newpaths.NewPaths.of(repo, tr)
    )
    stream = compat.changegroup_source(unpacker)
    # a bundle2 part ends where the changegroup ends: it can be read ahead
    # (not a raw peer stream, where the protocol goes on after it)
    # (under --debug, stock's bundle2 debug lines come in stock's order)
    read_ahead = isinstance(stream, bundle2.unbundlepart) and not repo.ui.debugflag
    ahead = _compressing_ahead(repo, unpacker, settings) if read_ahead else None
    stop_ahead = None
    applying.opener = opener
    applying.stats = stats
    try:
        with compressors.shared(), compressors.taking(ahead):
            complete = False
            try:
                if read_ahead:
                    # (reads the first block: it tells whether a thread
                    # pays, to decompress the bundle and, with ``ahead``,
                    # to compress ahead)
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
                applying.opener = None
                applying.stats = None
                try:
                    # (closes what is still open: a failing flush raises)
                    opener.detach(complete)
                finally:
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


def _opener(repo, settings, stats, tr, new_paths):
    """``(RevlogOpener, FileWriter)`` of one apply (or one worker's part of
    it) on ``repo``'s store, counting into ``stats``."""
    from . import revlogwriter
    from ..txn import storenames
    from ..writer import filewriter

    file_writer = filewriter.for_operation(
        repo.ui, settings, stats.filewriter, repo.vfs, compat.store_path(repo)
    )
    encode, rawvfs = storenames.encoder(repo.svfs)
    opener = revlogwriter.RevlogOpener(
        rawvfs,
        file_writer,
        stats.writer,
        encode,
        transaction=tr,
        new_paths=new_paths,
    )
    opener.store_vfs = repo.svfs
    return opener, file_writer


def settle():
    """Everything this thread's apply handed to the file writer on disk
    (created, written, closed): another process may read the store next."""
    opener = _applying.opener
    if opener is not None:
        opener.settle()


def _settled_before_hooks(orig, ui, repo, htype, hooks, *args, **kwargs):
    if hooks:
        settle()
    return orig(ui, repo, htype, hooks, *args, **kwargs)


def _settled_around_pending(orig, self, *args, **kwargs):
    # before: what the pending data points to; after: the pending data
    # itself, written through the apply's opener
    settle()
    written = orig(self, *args, **kwargs)
    settle()
    return written


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
    opener = _applying.opener
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
    opener = _applying.opener
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
    opener = _applying.opener
    if (
        opener is not None
        and self.opener is opener.store_vfs
        and opener.known_absent(filepath)
    ):
        return b""
    return orig(self, filepath, mmap_threshold, size)


def _exists(orig, self, path=None):
    opener = _applying.opener
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
    opener = _applying.opener
    if opener is not None:
        opener.forget()
    return orig(self, *args, **kwargs)


def worker_machinery(repo, tr, new_paths):
    """In a forked worker of a parallel apply (``parallel``): this thread
    opens revlogs through an opener and a file writer of its own (its
    parent's threads are not in this process), with ``tr`` and
    ``new_paths`` asking the parent; compression ahead is the parent's.
    Returns ``finish(complete)``: every file closed (a close that failed
    raises, when ``complete``)."""
    from . import compressors
    from ..diag import report

    compressors.stop_taking()
    _applying.opener = None
    if not _wire_machinery(repo.ui):
        return lambda complete: {}
    settings = config.settings(repo.ui)
    stats = report.OperationStats(b"changegroup worker")
    opener, file_writer = _opener(repo, settings, stats, tr, new_paths)
    _applying.opener = opener

    def finish(complete):
        _applying.opener = None
        if not complete:
            try:
                opener.detach(False)
            finally:
                file_writer.finish(raise_errors=False)
            return {}
        try:
            opener.detach(True)
        except BaseException:
            file_writer.finish(raise_errors=False)
            raise
        file_writer.finish()
        return _counts(stats)

    return finish


def _counts(stats):
    c = stats.filewriter
    return {
        "files": stats.writer.files,
        "bytes": stats.writer.bytes,
        "closes": c.closes,
        "background": c.background,
        "wait_ns": c.wait_ns,
        "threads": c.threads,
        "peak_pending": c.peak_pending,
        "slow_devices": sorted(_slow_devices()),
    }


def _slow_devices():
    from ..writer import filewriter

    return filewriter._slow_devices


def add_worker_counts(counts):
    """Add what a worker of this thread's parallel apply wrote to the
    apply's report (and the filesystems it found slow to this process's)."""
    _slow_devices().update(counts.get("slow_devices", ()))
    stats = _applying.stats
    if stats is None:
        return
    stats.writer.files += counts["files"]
    stats.writer.bytes += counts["bytes"]
    c = stats.filewriter
    c.closes += counts["closes"]
    c.background += counts["background"]
    c.wait_ns += counts["wait_ns"]
    c.threads = max(c.threads, counts["threads"])
    c.peak_pending = max(c.peak_pending, counts["peak_pending"])
