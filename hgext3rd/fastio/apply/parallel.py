"""A changegroup's file revlogs applied by worker processes.

After the changelog and the manifests, a changegroup is one group of
deltas per file, and each group depends only on its own filelog and on the
changelog's node -> rev map (the linkrevs).  Stock applies them one after
the other on one core (``changegroup._addchangegroupfiles``): on a
history-rich repository that is two thirds of an apply, delta computation
and compression in Python.  Here, when the files begin, the applying
process forks workers (they share the loaded Mercurial, the repository,
its extensions and the changelog with the new changesets); the parent
reads the changegroup once, each file's group whole (its chunks, framed as
they came), and hands it to the next free worker, which applies it with
Mercurial's own ``filelog.addgroup`` (the same deltas, the same
compression: the same bytes as stock).

Files go over in tasks (up to 64 files or 512 KiB of groups: fewer
messages for small files); the parent journals the index of each new file
of a task (one the store's file list does not name) in one write before
handing it over.  The manifest group, read whole first
(:func:`unpack_manifests`), is applied by the parent meanwhile, from
memory, handing files to idle workers as it goes (:class:`_Pumping`).

The transaction stays the parent's.  A worker applies with a stand-in
(:class:`_ParentsTransaction`) that asks the parent, and waits for the
answer, for everything a revlog asks of a transaction: ``add`` (a file's
offset journaled before the worker writes it), ``findoffset``,
``addbackup``, ``registertmp``; the split of an inline revlog has its
finalization (the split index renamed over the old one) registered in the
parent's transaction.  Every directory a worker makes is recorded by the
parent first (``txn.newpaths``: a rollback removes it).  The store's file
list (fncache) entries a worker adds go back to the parent with the end of
each task.  A worker writes through an opener and a file writer of its own
(``changegroup.worker_machinery``: the parent's threads are not in the
fork), and closes every file before it reports its end; its counts go to
the parent's ``fastio.report``.  A worker never writes a journal, never
closes or aborts the transaction, and dies with its parent
(``PR_SET_PDEATHSIG`` on Linux; elsewhere at the end of its task).

A failure in a worker (any exception: a bad delta, a censored base, a full
disk) is raised by the parent, as stock raises it, after every worker has
been stopped: the transaction then rolls back what they wrote, since every
file they wrote was journaled first.  An interrupt stops them the same way.

Used for changegroups of ``devel.fastio.parallel-min-files`` files or more
(``fastio.apply-workers`` workers: by default one per core, none with one
core), where nothing needs the one-process order: not with
``server.validate`` (it checks files against manifests as they come), a
callback per file revision (sidedata), delta statistics or
``debug.revlog.debug-delta`` (what they print comes in stock's order),
another extension wrapping the same function, a file index, revlog v2, an
unpacker Mercurial does not list, or without ``fork``.  A group larger than
its share of ``fastio.apply-memory`` is applied by the parent itself, read
on from the changegroup as stock reads it.
"""

import io
import os
import pickle
import select
import signal
import socket
import struct
import time
import warnings

from mercurial import changegroup as cgmod, error
from mercurial.i18n import _
from mercurial.utils import stringutil

from .. import compat

# workers at most when the option says "auto"
MAX_AUTO_WORKERS = 8

# what the parent answers a worker's request with
_OK = 0
_FAILED = 1

# the split of an inline revlog (revlog._enforceinlinesize) registers
# callbacks under this prefix (6.7 to 7.2)
_SPLIT_CATEGORY = b"001-revlog-split-"


def worker_count(ui):
    """The workers ``fastio.apply-workers`` asks for (0: none)."""
    value = ui.config(b"fastio", b"apply-workers").strip().lower()
    if value in (b"auto", b""):
        cores = _cores()
        return min(cores, MAX_AUTO_WORKERS) if cores >= 2 else 0
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count < 0:
        raise error.ConfigError(
            _(b"fastio.apply-workers must be auto or a number of workers, not %s")
            % value
        )
    return min(count, 64)


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def why_not(orig, repo, source, bound):
    """Why this apply of files stays in one process (bytes), or None."""
    if not hasattr(os, "fork"):
        return b"no fork on this platform"
    if getattr(orig, "_origfunc", None) is not None:
        return b"_addchangegroupfiles is wrapped by another extension"
    if bound is None:
        return b"_addchangegroupfiles takes other arguments"
    if bound.get("needfiles"):
        return b"server.validate checks the files as they come"
    if bound.get("addrevisioncb") is not None:
        return b"a callback per file revision (sidedata)"
    if bound.get("debug_info") is not None:
        return b"delta statistics are collected"
    if repo.ui.configbool(b"debug", b"revlog.debug-delta"):
        # (it prints per revision: in stock's order only from one process)
        return b"debug.revlog.debug-delta prints every revision"
    if compat.fileindex(repo) is not None:
        return b"the store has a file index"
    if any(b"revlogv2" in r for r in repo.requirements):
        return b"revlog v2"
    if type(source) not in compat.changegroup_unpacker_classes():
        return b"an unpacker Mercurial does not list"
    return None


def apply_files(orig, repo, source, revmap, trp, expected, *args, **kwargs):
    """``_addchangegroupfiles`` with the file groups applied by workers when
    that pays and is possible; else stock's (after the manifests, when
    :func:`unpack_manifests` kept them for now)."""
    ui = repo.ui
    manifests = vars(source).pop("_fastio_manifests", None)
    workers = worker_count(ui)
    bound = None
    if workers < 1 or expected < ui.configint(b"devel", b"fastio.parallel-min-files"):
        reason = b""
    else:
        bound = compat.bind_args(
            orig, repo, source, revmap, trp, expected, *args, **kwargs
        )
        reason = why_not(orig, repo, source, bound)
    if reason is not None:
        if reason:
            ui.debug(b"fastio: files applied in one process: %s\n" % reason)
        if manifests is not None:
            manifests.apply()
        return orig(repo, source, revmap, trp, expected, *args, **kwargs)
    addgroup_kwargs = {
        name: bound[name]
        for name in ("delta_base_reuse_policy", "use_hasmeta_flag")
        if name in bound
    }
    applier = _Applier(repo, source, revmap, trp, addgroup_kwargs)
    pool = _Workers(applier, workers, _group_budget(ui, workers))
    return pool.run(expected, manifests)


def _group_budget(ui, workers):
    # a group in each worker, one being read, the manifests: each a share
    return max(1, ui.configbytes(b"fastio", b"apply-memory") // (workers + 2))


def unpack_manifests(
    files_gate, orig, source, repo, revmap, trp, prog, *args, **kwargs
):
    """``cg1unpacker._unpackmanifests``: when the files will go to workers,
    the manifest group is only read here, and applied by this process
    while they work (:func:`apply_files`)."""
    ui = repo.ui
    workers = worker_count(ui)
    bound = compat.bind_args(orig, source, repo, revmap, trp, prog, *args, **kwargs)
    if (
        workers < 1
        or bound is None
        or bound.get("addrevisioncb") is not None
        or bound.get("debug_info") is not None
        or ui.configbool(b"server", b"validate")
        or not _files_come_here(files_gate)
        or why_not(None, repo, source, {}) is not None
    ):
        return orig(source, repo, revmap, trp, prog, *args, **kwargs)
    stream = compat.changegroup_source(source)
    group, whole = _read_group(stream, _group_budget(ui, workers))
    if not whole:
        # too large to hold: applied now, read on as stock reads it
        reader = io.BufferedReader(_Joined(group, stream))
        unpacker = type(source)(reader, b"UN")
        return orig(unpacker, repo, revmap, trp, prog, *args, **kwargs)
    source._fastio_manifests = _DeferredManifests(
        orig, source, group, (repo, revmap, trp, prog) + args, kwargs
    )


def _files_come_here(files_gate):
    """Whether ``changegroup._addchangegroupfiles`` is the extension's gate
    (``files_gate``) over stock's and nothing else: then the manifests kept
    for later are applied (another wrapper might not call it)."""
    from mercurial import changegroup

    outer = changegroup._addchangegroupfiles
    inner = getattr(outer, "_origfunc", None)
    return (
        getattr(outer, "_unboundwrapper", None) is files_gate
        and inner is not None
        and getattr(inner, "_origfunc", None) is None
    )


class _DeferredManifests:
    """A manifest group read whole, applied later by stock's
    ``_unpackmanifests`` from memory."""

    def __init__(self, orig, source, group, args, kwargs):
        self._orig = orig
        self._class = type(source)
        self._group = group
        self._args = args
        self._kwargs = kwargs

    def apply(self, pump=None):
        """Apply them; ``pump()`` is called as they are read."""
        group, self._group = self._group, None
        reader = io.BytesIO(group) if pump is None else _Pumping(group, pump)
        self._orig(self._class(reader, b"UN"), *self._args, **self._kwargs)


class _Pumping(io.RawIOBase):
    """Reads ``data``, calling ``pump()`` every ``every`` bytes read."""

    def __init__(self, data, pump, every=64 * 1024):
        self._data = memoryview(data)
        self._pos = 0
        self._pump = pump
        self._every = every
        self._next_pump = every

    def readable(self):
        return True

    def read(self, size=-1):
        pos = self._pos
        end = len(self._data) if size < 0 else min(pos + size, len(self._data))
        self._pos = end
        if end >= self._next_pump:
            self._next_pump = end + self._every
            self._pump()
        return bytes(self._data[pos:end])


class _Applier:
    """Applies one file's group with Mercurial's own code (a worker, or the
    parent for a group too large to hand over)."""

    def __init__(self, repo, source, revmap, trp, addgroup_kwargs):
        self.repo = repo
        self.source = source
        self.revmap = revmap
        self.trp = trp
        self.kwargs = addgroup_kwargs
        self.unpacker_class = type(source)

    def apply(self, name, fh, tr=None):
        """Add the group read from ``fh`` to filelog ``name``; the number of
        revisions added."""
        fl = compat.writable_filelog(self.repo, name)
        if isinstance(tr, _ParentsTransaction):
            tr.filelog = fl
        before = len(fl)
        deltas = self.unpacker_class(fh, b"UN").deltaiter()
        try:
            added = fl.addgroup(
                deltas, self.revmap, tr if tr is not None else self.trp, **self.kwargs
            )
            if not added:
                raise error.Abort(_(b"received file revlog group is empty"))
        except error.CensoredBaseError as e:
            raise error.Abort(_(b"received delta base is censored: %s") % e)
        return len(fl) - before


def _read_group(stream, budget):
    """``(bytes, whole)``: one revlog's chunks, framed, with the empty
    chunk ending them (``whole``), or as many as fit ``budget``."""
    parts = []
    size = 0
    while True:
        chunk = cgmod.getchunk(stream)
        if not chunk:
            parts.append(cgmod.closechunk())
            return b"".join(parts), True
        parts.append(cgmod.chunkheader(len(chunk)))
        parts.append(chunk)
        size += len(chunk) + 4
        if size > budget:
            return b"".join(parts), False


class _Joined(io.RawIOBase):
    """``first`` (bytes already read), then the rest of ``stream``."""

    def __init__(self, first, stream):
        self._first = memoryview(first)
        self._stream = stream

    def readable(self):
        return True

    def read(self, size=-1):
        if self._first:
            if size < 0 or size >= len(self._first):
                data, self._first = bytes(self._first), memoryview(b"")
            else:
                data, self._first = bytes(self._first[:size]), self._first[size:]
            return data
        return self._stream.read(size)


class _Worker:
    def __init__(self, pid, sock):
        self.pid = pid
        self.sock = sock
        self.task = None  # the names of the files it applies, None when idle
        self.finished = False  # stopped, every file it wrote closed


# a message: its payload's length, its kind, the payload
_HEADER = struct.Struct(">IB")
# parent -> worker: files to apply, stop, an answer
_TASK, _STOP, _ANSWER = 1, 2, 3
# worker -> parent: a question, the files applied, a failure
_QUESTION, _DONE, _FAILURE = 4, 5, 6
# worker -> parent: every file it wrote is closed (after a stop)
_FINISHED = 8
# (what the parent read: a file too large to hand over)
_LARGE = 7


def _send(sock, kind, payload=b"", data=b""):
    sock.sendall(_HEADER.pack(len(payload) + len(data), kind) + payload)
    if data:
        sock.sendall(data)


def _recv(sock):
    """``(kind, payload)`` of the next message; EOFError at the end."""
    header = _recv_exactly(sock, _HEADER.size)
    size, kind = _HEADER.unpack(header)
    return kind, _recv_exactly(sock, size)


def _recv_exactly(sock, size):
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if not n:
            raise EOFError
        got += n
    return buf


class _Workers:
    """The worker processes of one apply of files, and the parent's loop."""

    # a task: files handed over together (fewer messages for small files)
    TASK_FILES = 64
    TASK_BYTES = 512 * 1024

    def __init__(self, applier, count, group_budget):
        self.applier = applier
        self.repo = applier.repo
        self.tr = applier.trp
        self.count = count
        self.group_budget = group_budget
        self.workers = []
        self.revisions = 0
        self.fncache = getattr(self.repo.store, "fncache", None)
        from .. import config

        self.wait_s = config.parse_timeout_s(
            self.repo.ui.config(b"fastio", b"pending-timeout"),
            config.option_name(self.repo.ui, b"pending-timeout"),
        )

    # -- the parent ----------------------------------------------------------

    def run(self, expected, manifests=None):
        """Apply the files (and ``manifests``, a deferred manifest group, in
        this process meanwhile); ``(revisions, files)``."""
        ui = self.repo.ui
        self.source = self.applier.source
        self.stream = compat.changegroup_source(self.source)
        self.progress = ui.makeprogress(_(b"files"), unit=_(b"files"), total=expected)
        self.files = 0
        self._held = None  # what was read and not handed over yet
        self._ended = False  # the last file was read
        self._pumping = True  # the manifests' apply may hand files over
        complete = False
        self._start()
        try:
            if manifests is not None:
                manifests.apply(self._pump)
            while True:
                item = self._next()
                if item is None:
                    break
                self._take(item)
            while any(w.task is not None for w in self.workers):
                self._serve()
            # (the hooks and the transaction's close read what they wrote)
            for worker in self.workers:
                _send(worker.sock, _STOP)
            while not all(w.finished for w in self.workers):
                self._serve()
            self.progress.complete()
            complete = True
        finally:
            self._stop(complete)
        ui.debug(
            b"fastio: %d files applied by %d worker processes%s\n"
            % (
                self.files,
                self.count,
                b" (the manifests meanwhile)" if manifests is not None else b"",
            )
        )
        return self.revisions, self.files

    def _take(self, item):
        if item[0] == _LARGE:
            # too large to hold: applied here, read on as stock does
            _kind, name, group = item
            self.revisions += self.applier.apply(
                name, io.BufferedReader(_Joined(group, self.stream))
            )
        else:
            self._hand_over(item[1], item[2])

    def _pump(self):
        """While the manifests are applied here: answer the workers, hand
        the idle ones files (never blocks on a worker)."""
        self._serve(0)
        while self._pumping and any(w.task is None for w in self.workers):
            item = self._next()
            if item is None or item[0] == _LARGE:
                # (a large group waits for the manifests: applied here)
                self._held = item
                self._pumping = False
                return
            self._hand_over(item[1], item[2])

    def _next(self):
        """What comes next in the changegroup: ``(_TASK, names, groups)``,
        ``(_LARGE, name, part of its group)``, or None at the end."""
        if self._held is not None:
            item, self._held = self._held, None
            return item
        names, groups, size = [], [], 0
        while (
            not self._ended and len(names) < self.TASK_FILES and size < self.TASK_BYTES
        ):
            chunkdata = self.source.filelogheader()
            if not chunkdata:
                self._ended = True
                break
            self.files += 1
            name = chunkdata[b"filename"]
            self.repo.ui.debug(b"adding %s revisions\n" % name)
            self.progress.increment()
            group, whole = _read_group(self.stream, self.group_budget)
            if not whole:
                large = (_LARGE, name, group)
                if not names:
                    return large
                self._held = large
                break
            names.append(name)
            groups.append(group)
            size += len(group)
        return (_TASK, names, groups) if names else None

    def _hand_over(self, names, groups):
        journaled = self._journal_new(names)
        worker = self._idle_worker()
        worker.task = names
        meta = pickle.dumps((names, [len(g) for g in groups], journaled))
        _send(worker.sock, _TASK, _LENGTH.pack(len(meta)) + meta, b"".join(groups))

    def _journal_new(self, names):
        """Journal the index of each new file (one the store does not list)
        as its revlog would (``tr.add(index, 0)``), in one write: the
        worker need not ask.  The journaled names."""
        fncache = self.fncache
        if fncache is None:
            return []
        indexes = [b"data/%s.i" % name for name in names]
        new = [index for index in indexes if index not in fncache]
        if new:
            from ..txn import journal

            journal.new_files(self.tr, new)
        return new

    def _start(self):
        parent = os.getpid()
        self._poll = select.poll()
        self._by_fd = {}
        for _index in range(self.count):
            mine, theirs = socket.socketpair()
            with warnings.catch_warnings():
                # (3.12 warns about forking a process that has threads: the
                # worker uses none of theirs)
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    mine.close()
                    for other in self.workers:
                        other.sock.close()
                    code = self._work(theirs, parent)
                finally:
                    os._exit(code)
            theirs.close()
            worker = _Worker(pid, mine)
            self.workers.append(worker)
            self._by_fd[mine.fileno()] = worker
            self._poll.register(mine.fileno(), select.POLLIN)

    def _idle_worker(self):
        while True:
            for worker in self.workers:
                if worker.task is None:
                    return worker
            self._serve()

    def _serve(self, timeout=None):
        """Answer what the workers ask, note the ends of their tasks; raise
        what one of them failed with (waits for one of them, at most
        ``timeout`` ms)."""
        for fd, _event in self._poll.poll(timeout):
            worker = self._by_fd[fd]
            try:
                kind, payload = _recv(worker.sock)
            except (EOFError, OSError):
                raise error.Abort(
                    _(b"a worker applying file revlogs died (%s)") % _end_of(worker)
                )
            if kind == _DONE:
                revisions, entries = pickle.loads(payload)
                self.revisions += revisions
                if self.fncache is not None:
                    for entry in entries:
                        self.fncache.add(entry)
                worker.task = None
            elif kind == _FINISHED:
                worker.finished = True
                counts = pickle.loads(payload)
                if counts:
                    from . import changegroup

                    changegroup.add_worker_counts(counts)
                # (it exits: its end is no news)
                self._poll.unregister(fd)
            elif kind == _FAILURE:
                raise _rebuilt(pickle.loads(payload))
            else:
                question = pickle.loads(payload)
                answer = self._answer(question[0], question[1:])
                _send(worker.sock, _ANSWER, pickle.dumps(answer))

    # the transaction's methods a worker's question names, answered as they
    # are (the others: _split, _record_dirs)
    _ASKED_AS_IS = frozenset(
        ("add", "findoffset", "addbackup", "registertmp", "_report")
    )

    def _answer(self, kind, args):
        try:
            if kind in self._ASKED_AS_IS:
                result = getattr(self.tr, kind)(*args)
            elif kind == "split":
                result = self._split(*args)
            elif kind == "dirs":
                result = self._record_dirs(*args)
            else:
                raise error.ProgrammingError(b"fastio: unknown request %r" % kind)
        except Exception as exc:
            return (_FAILED, _portable(exc))
        return (_OK, result)

    def _record_dirs(self, dirs):
        from ..txn import newpaths

        # (the transaction itself: self.tr is the weak proxy stock passes)
        real = self.repo.currenttransaction()
        newpaths.NewPaths.of(self.repo, real).record(dirs=dirs)

    def _split(self, category, old_index, new_index):
        # what the worker's revlog registered: at the transaction's close,
        # its split index replaces the inline one (nothing to undo at an
        # abort but the worker's own revlog object, gone with the worker)
        svfs = self.repo.svfs

        def finalize(tr):
            svfs.rename(new_index, old_index, checkambig=True)

        self.tr.addfinalize(category, finalize)

    def _stop(self, complete):
        """The workers ended: killed unless ``complete`` (they finished)."""
        workers, self.workers = self.workers, []
        for worker in workers:
            if worker.pid is not None and not complete:
                try:
                    os.kill(worker.pid, signal.SIGKILL)
                except OSError:
                    pass
        # (a worker killed in a close that does not return, a hung network
        # filesystem, ends when it returns: waited for as long as closes
        # are once interrupted, then left; it dies with this process)
        deadline = time.monotonic() + self.wait_s
        for worker in workers:
            worker.sock.close()
            while worker.pid is not None:
                try:
                    pid, _status = os.waitpid(worker.pid, 0 if complete else os.WNOHANG)
                except OSError:
                    break
                if pid or time.monotonic() > deadline:
                    break
                time.sleep(0.005)

    # -- a worker ------------------------------------------------------------

    def _work(self, sock, parent):
        """A worker's life: tasks until the parent says stop; the exit
        code."""
        _die_with(parent)
        for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE"):
            sig = getattr(signal, name, None)
            if sig is not None:
                # the parent is interrupted too and stops the workers
                signal.signal(
                    sig, signal.SIG_IGN if name == "SIGINT" else signal.SIG_DFL
                )
        entries = []
        if self.fncache is not None:
            # (the parent adds them to its list: this one is never written)
            self.fncache.add = entries.append
        tr = _ParentsTransaction(sock)
        # (the directories it makes: recorded by the parent first)
        _asking.transaction = tr
        from .. import wiring
        from . import changegroup

        wiring.wire("apply worker")
        # its own opener and file writer (the parent's threads are not in
        # this process)
        finish = changegroup.worker_machinery(self.repo, tr, _ParentsNewPaths(tr))
        while True:
            try:
                kind, payload = _recv(sock)
            except EOFError:
                return 0
            if kind != _TASK:
                break
            (meta_size,) = _LENGTH.unpack_from(payload)
            meta_end = _LENGTH.size + meta_size
            names, sizes, journaled = pickle.loads(payload[_LENGTH.size : meta_end])
            tr.journaled(journaled)
            view = memoryview(payload)
            pos = meta_end
            revisions = 0
            try:
                for name, size in zip(names, sizes):
                    group = io.BytesIO(view[pos : pos + size])
                    pos += size
                    revisions += self.applier.apply(name, group, tr)
            except BaseException as exc:
                finish(False)
                _send(sock, _FAILURE, pickle.dumps(_portable(exc)))
                return 0
            _send(sock, _DONE, pickle.dumps((revisions, entries[:])))
            del entries[:]
        # stop: every file closed (a close that fails fails the apply)
        try:
            counts = finish(True)
        except BaseException as exc:
            _send(sock, _FAILURE, pickle.dumps(_portable(exc)))
            return 0
        _send(sock, _FINISHED, pickle.dumps(counts))
        return 0


_LENGTH = struct.Struct(">I")


class _ParentsNewPaths:
    """A worker's ``txn.newpaths.NewPaths``: the parent records."""

    def __init__(self, tr):
        self._tr = tr

    def record(self, dirs=(), files=()):
        if files:
            raise error.ProgrammingError(b"fastio: a worker records no file")
        if dirs:
            self._tr.ask("dirs", list(dirs))


class _ParentsTransaction:
    """A worker's transaction: what the revlog asks of it is asked of the
    parent's, through the worker's connection, before the worker goes on."""

    def __init__(self, sock):
        self._sock = sock
        self._added = set()
        self.filelog = None  # the filelog the worker applies

    def journaled(self, names):
        """``names`` were journaled by the parent (new files)."""
        self._added.update(names)

    def ask(self, kind, *args):
        _send(self._sock, _QUESTION, pickle.dumps((kind,) + args))
        reply, payload = _recv(self._sock)
        status, result = pickle.loads(payload)
        if status == _FAILED:
            raise _rebuilt(result)
        return result

    def add(self, file, offset):
        if file not in self._added:
            self.ask("add", file, offset)
            self._added.add(file)

    def findoffset(self, file):
        return self.ask("findoffset", file)

    def addbackup(self, file, hardlink=True, location=b"", for_offset=False):
        self.ask("addbackup", file, hardlink, location, for_offset)

    def registertmp(self, tmpfile, location=b""):
        self.ask("registertmp", tmpfile, location)

    def addfinalize(self, category, callback):
        if not category.startswith(_SPLIT_CATEGORY):
            self._unsupported(b"a finalizer " + category)
        old_index, new_index = compat.split_index_files(self.filelog)
        self.ask("split", category, old_index, new_index)

    def addabort(self, category, callback):
        # the split's abort callback restores the worker's revlog object
        if not category.startswith(_SPLIT_CATEGORY):
            self._unsupported(b"an abort callback " + category)

    def _report(self, message):
        self.ask("_report", message)

    def _unsupported(self, what):
        raise error.ProgrammingError(
            b"fastio: a revlog applied in a worker registered %s" % what
        )

    def __getattr__(self, name):
        # (what else a revlog might ask of a transaction is refused: the
        # apply fails, and rolls back, rather than lose it in the worker)
        raise AttributeError(
            "fastio: a revlog applied in a worker asked its transaction for %s" % name
        )


class _Asking:
    # a worker's _ParentsTransaction (None in the applying process)
    transaction = None


_asking = _Asking()


def _recorded_makedirs(orig, name, *args, **kwargs):
    """``util.makedirs`` in a worker: the directories it is about to make
    are recorded by the parent first (``txn.newpaths``: a rollback removes
    them)."""
    tr = _asking.transaction
    if tr is not None:
        missing = []
        path = os.path.abspath(name)
        while not os.path.isdir(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        if missing:
            tr.ask("dirs", missing[::-1])
    return orig(name, *args, **kwargs)


def _end_of(worker):
    """How a worker that closed its connection ended (bytes)."""
    try:
        _pid, status = os.waitpid(worker.pid, 0)
    except OSError:
        return b"its end unknown"
    worker.pid = None
    if os.WIFSIGNALED(status):
        return b"killed by signal %d" % os.WTERMSIG(status)
    return b"exit status %d" % os.WEXITSTATUS(status)


def _die_with(parent):
    """End this process when ``parent`` ends (Linux: the kernel's signal;
    elsewhere the end of the parent's connection at the next file)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _portable(exc):
    """What of ``exc`` crosses to the other process: the exception itself
    when it survives pickling, else its message as an abort's."""
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
        return ("pickled", data)
    except Exception:
        return (
            "message",
            stringutil.forcebytestr(exc),
            getattr(exc, "hint", None),
        )


def _rebuilt(portable):
    if portable[0] == "pickled":
        return pickle.loads(portable[1])
    return error.Abort(portable[1], hint=portable[2])
