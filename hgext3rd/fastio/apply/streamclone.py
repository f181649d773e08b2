"""Stream clone application through the fast store writer.

Takes the place of Mercurial's ``consumev1``, ``consumev2`` and
``consumev3`` (wrapped in ``gates``, which loads this module at the first
stream): every stream application (``hg clone --stream`` over ssh and
http, stream clonebundles, ``hg unbundle`` of stream bundles,
``hg debugapplystreamclonebundle``) ends up in one of them.  The messages,
the lock, the ``clone`` transaction and the cache invalidation are those of
stock; what differs is how files get on disk (see ``storewriter``) and that a
failure rolls every written file back.
"""

import contextlib

from mercurial.i18n import _
from mercurial import (
    error,
    store,
    streamclone,
    util,
)

from . import buffers, prefetch, prescan, storewriter
from .. import compat, config
from ..txn import durable
from ..diag import report
from ..writer import filewriter

_SRC_STORE = b"s"

# progress bars are updated after this many bytes (per-file updates cost more
# than writing a small file)
_PROGRESS_STEP = 1 << 18


class _Application:
    """State shared by the three stream formats while one is applied."""

    def __init__(self, repo, total, unit, byte_progress=True):
        self.repo = repo
        self.ui = repo.ui
        self.settings = config.settings(repo.ui)
        self.progress = repo.ui.makeprogress(_(b"clone"), total=total, unit=unit)
        self.start = util.timer()
        self.stats = report.OperationStats(b"stream clone", repo.svfs)
        self.writer = None
        self._since_progress = 0
        self._byte_progress = byte_progress
        # what stock's closers are told: v1 knows its file count and has one
        # closer (the store's), v2 and v3 one per destination vfs
        self.expected_files = -1

    @classmethod
    def for_files(cls, repo, filecount, size):
        """A v1 or v2 application: announced, with progress in bytes."""
        repo.ui.status(
            _(b"%d files to transfer, %s of data\n") % (filecount, util.bytecount(size))
        )
        app = cls(repo, size, _(b"bytes"))
        app.progress.update(0)
        return app

    def targets(self):
        vfsmap = streamclone._makemap(self.repo)
        # the repository's own vfs (hgrc, ...) must never be reachable
        if self.repo.vfs in vfsmap.values():
            raise error.ProgrammingError("repo.vfs must not be in the vfs map")
        return {src: (vfs, src == _SRC_STORE) for src, vfs in vfsmap.items()}

    @contextlib.contextmanager
    def transaction(self):
        repo = self.repo
        with repo.transaction(b"clone") as tr:
            durable.request(repo, tr, self.settings, stream=True)
            store_path = compat.store_path(repo)
            targets = self.targets()
            file_writer = filewriter.for_operation(
                self.ui,
                self.settings,
                self.stats.filewriter,
                repo.vfs,
                store_path,
                expectedcount=self.expected_files,
                destinations=len(targets) if self.expected_files < 0 else 1,
            )
            self.writer = storewriter.StoreWriter(
                repo, tr, targets, file_writer, self.stats.writer
            )
            # closes are all done (or failed) before the transaction
            # closes, or before its abort removes the files
            with file_writer:
                yield self.writer
            # force @filecache properties to be reloaded from the
            # streamed files at next access
            repo.invalidate(clearfilecache=True)

    def advance(self, nbytes):
        if not self._byte_progress:
            return
        self._since_progress += nbytes
        if self._since_progress >= _PROGRESS_STEP:
            self.progress.increment(step=self._since_progress)
            self._since_progress = 0

    def done(self, file_count, byte_count):
        if self._since_progress:
            # the bytes since the last step: the bar ends at its total, as
            # stock's does
            self.progress.increment(step=self._since_progress)
            self._since_progress = 0
        self.progress.complete()
        self.stats.elapsed = util.timer() - self.start
        compat.report_transferred(self.repo, self.start, file_count, byte_count)
        report.emit(self.ui, self.settings, self.stats)


def _open_source(repo, fp, settings):
    """``(ahead, buffer)``: the buffer to parse the stream from, and the
    prefetching reader under it when a threaded consumer is asked for (or
    None).  Under ``--debug`` nothing is read ahead, so that Mercurial's own
    debug lines about the stream come where stock's come."""
    if repo.ui.debugflag:
        return None, buffers.StreamBuffer(fp, settings.buffer_size, exact=True)
    ahead = None
    if compat.parallel_stream_processing(repo.ui):
        ahead = prefetch.PrefetchReader(fp, block=settings.buffer_size)
    return ahead, buffers.StreamBuffer(ahead or fp, settings.buffer_size)


def _check_end(buf):
    """Refuse data after the last file.

    Inside the transaction (it is then rolled back), except in exact mode
    (--debug): there the end of the part is read where stock reads it, so
    that bundle2's debug line about it comes in stock's order.
    """
    if not buf.at_eof():
        raise error.Abort(_(b"malformed stream: unexpected data after files"))


def _read_v2_file(buf, app, writer, debug):
    """The slow path: one file whose header or content is not complete in
    the buffer (a large file, or one across a block boundary)."""
    src = buf.read_exact(1)
    namelen = buf.read_uvarint()
    datalen = buf.read_uvarint()
    if namelen > buffers.MAX_NAME:
        raise error.Abort(_(b"malformed stream: file name too long"))
    name = buf.read_exact(namelen)
    if debug:
        app.ui.debug(b"adding [%s] %s (%s)\n" % (src, name, util.bytecount(datalen)))
    writer.write_file(src, name, datalen, buf.copy_to)
    app.advance(datalen)
    return datalen


def _debug_files(app, entries, debug):
    if debug:
        for src, name, __, size in entries:
            app.ui.debug(b"adding [%s] %s (%s)\n" % (src, name, util.bytecount(size)))


def _apply_files(buf, app, writer, count, debug):
    """Write ``count`` v2-encoded files from ``buf``; return their size."""
    total = 0
    while count:
        data, entries = buf.scan_files(count)
        if not entries:
            if buf.top_up():
                continue
            total += _read_v2_file(buf, app, writer, debug)
            count -= 1
            continue
        _debug_files(app, entries, debug)
        size = writer.write_batch(data, entries)
        app.advance(size)
        total += size
        count -= len(entries)
    return total


def consume_v2(orig, repo, fp, filecount, filesize):
    """Apply a version 2 stream (``stream2`` bundle2 part)."""
    settings = config.settings(repo.ui)
    if not settings.stream_writer:
        return orig(repo, fp, filecount, filesize)
    prescan.check_v2(fp, filecount)
    with repo.lock():
        app = _Application.for_files(repo, filecount, filesize)
        ahead, buf = _open_source(repo, fp, settings)
        debug = repo.ui.debugflag
        byte_count = 0
        try:
            with app.transaction() as writer:
                byte_count = _apply_files(buf, app, writer, filecount, debug)
                if not buf.exact:
                    _check_end(buf)
        finally:
            if ahead is not None:
                ahead.close()
        late = buf.exact
        if late and compat.v2_end_read_before_report():
            _check_end(buf)
            late = False
        app.done(filecount, byte_count)
        if late:
            _check_end(buf)


def consume_v3(orig, repo, fp):
    """Apply a version 3 stream (``stream3-exp`` part): entries of files."""
    settings = config.settings(repo.ui)
    if not settings.stream_writer:
        return orig(repo, fp)
    prescan.check_v3(fp)
    with repo.lock():
        ahead, buf = _open_source(repo, fp, settings)
        try:
            entrycount = buf.read_uvarint()
            repo.ui.status(_(b"%d entries to transfer\n") % entrycount)
            app = _Application(repo, entrycount, _(b"entries"), byte_progress=False)
            app.progress.update(0)
            debug = repo.ui.debugflag
            file_count = byte_count = 0
            with app.transaction() as writer:
                left = entrycount
                while left:
                    data, files, count = buf.scan_entries(left)
                    if count:
                        _debug_files(app, files, debug)
                        byte_count += writer.write_batch(data, files)
                        file_count += len(files)
                    elif buf.top_up():
                        continue
                    else:
                        # an entry larger than the buffer
                        nfiles = buf.read_uvarint()
                        if not nfiles and debug:
                            repo.ui.debug(
                                b"entry with no files [%d]\n" % (entrycount - left)
                            )
                        byte_count += _apply_files(buf, app, writer, nfiles, debug)
                        file_count += nfiles
                        count = 1
                    left -= count
                    app.progress.increment(step=count)
                if not buf.exact:
                    _check_end(buf)
        finally:
            if ahead is not None:
                ahead.close()
        app.done(file_count, byte_count)
        if buf.exact:
            _check_end(buf)


def _v1_copier(fp, bufsize):
    read = fp.read

    def copy(write, n):
        left = n
        while left:
            data = read(min(left, bufsize))
            if not data:
                raise buffers.truncated(n - left, n)
            write(data)
            left -= len(data)

    return copy


def consume_v1(orig, repo, fp, filecount, bytecount):
    """Apply a version 1 stream (``stream_out``, packed1 bundles)."""
    settings = config.settings(repo.ui)
    if not settings.stream_writer:
        return orig(repo, fp, filecount, bytecount)
    prescan.check_v1(fp, filecount)
    with repo.lock():
        app = _Application.for_files(repo, filecount, bytecount)
        app.expected_files = filecount
        headers = buffers.V1HeaderReader(fp)
        copy = _v1_copier(fp, settings.buffer_size)
        debug = repo.ui.debugflag
        with app.transaction() as writer:
            for __ in range(filecount):
                name, size = headers.next()
                if debug:
                    repo.ui.debug(b"adding %s (%s)\n" % (name, util.bytecount(size)))
                # v1 sends store names with their directories encoded
                # (``encodedir``: ``.hg/`` and revlog-like directory names)
                path = store.decodedir(name)
                writer.write_file(_SRC_STORE, path, size, copy)
                app.advance(size)
        app.done(writer.stats.files, bytecount)


_CONSUMERS = {
    "consumev1": consume_v1,
    "consumev2": consume_v2,
    "consumev3": consume_v3,
}


def consume(name, orig, repo, *args, **kwargs):
    """Stock's consumer ``name`` (``orig``) through the store writer, or
    as stock where stock's consumers are not the ones the wrappers were
    written for (see ``compat.stream_internals``: checked at the first
    stream, said once)."""
    if not compat.supported(repo.ui, b"stream clones", _problems):
        return orig(repo, *args, **kwargs)
    return _CONSUMERS[name](orig, repo, *args, **kwargs)


def _problems():
    from .. import wiring

    return compat.stream_internals(wiring.originals("stream apply"))[1]
