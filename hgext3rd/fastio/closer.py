"""Close many written files without waiting on each close, and lose no error.

On local Linux filesystems ``close()`` costs a microsecond or two, and any
thread hand-off costs more than it saves.  On NTFS (with a virus scanner), NFS
and SMB a close flushes or notifies and costs a millisecond or more, and a
clone of 100k files spends minutes in it.  So a :class:`FileCloser` starts
*inline*: it closes synchronously and times the closes.  Once the median of a
window of closes is above the threshold it starts background threads, sized
from the measured close latency and the rate at which files are produced, and
grows them when the bounded queue of pending handles fills up.

Every failure of a close (or of the flush a buffered file does in close) is
kept and re-raised in the thread that owns the operation: at the next
``close()`` call and, at the latest, by :meth:`FileCloser.finish`, which waits
for every pending handle.  Nothing is left open or silently dropped (a close
that hangs is given up on only with an abort, see below).

Handles are either raw file descriptors (``int``) or objects with a
``close()`` method (the file objects of a vfs).

Interrupts.  Every wait (for room, :meth:`~FileCloser.drain`,
:meth:`~FileCloser.finish`) is made of short steps, so that a Ctrl-C or a
SIGTERM is handled within a tenth of a second.  When an exception (an
interrupt or any other) leaves the operation, ``finish`` waits for the
pending closes at most ``close_timeout`` seconds (``fastio.close-timeout``):
a close that has not returned by then (a hard-mounted NFS server that
stopped answering) is abandoned, and the command aborts with the number of
such files and the name of one (a warning only, when the exception leaving
is a failure other than an interrupt: that failure is the abort).  An
abandoned descriptor stays open in the process until its close returns or
the process exits; its thread ends on its own.  The transaction's rollback
goes on without it: on POSIX an open file can be removed (on Windows it
cannot).  Without an exception ``finish`` waits as long as it takes (a
Ctrl-C then ends the wait as above).  An inline close cannot be given up
on: it runs on the thread that would give up.

A descriptor the main thread holds between its ``open`` and its hand-over
to a closer is known to no one else: a signal handler raising there (Python
runs handlers between any two bytecodes) would leave it open, and on Windows
an open file can be neither removed nor renamed, so the rollback would fail.
Writers mark that window with :data:`hold` (``hold.depth += 1`` before the
open; after the hand-over ``hold.depth -= 1`` then ``hold.deliver()`` if
``hold.pending``): a closer wraps the Python handlers of SIGINT, SIGTERM,
SIGHUP and SIGBREAK so that a signal arriving in the window is raised once
the descriptor is handed over.  A second signal in the window is raised at
once.

``fork()``: a child process does not own its parent's pending closes (the
parent's threads close the parent's descriptors; the child's copies close
when it exits, or execs: they are close-on-exec).  A closer used in a forked
child forgets them and closes inline from then on.
"""

import os
import queue
import signal
import sys
import threading
import time
import weakref

from mercurial.i18n import _
from mercurial import demandimport, error, pycompat, util

with demandimport.deactivated():
    try:
        from . import _fdclose
    except ImportError:
        _fdclose = None

# closes a list of descriptors with the GIL released once (built from
# _fdclose.c when a compiler was there); else one os.close per handle
close_fds = getattr(_fdclose, "close_all", None)
# threads of its own that close descriptors without ever taking the GIL
# (POSIX builds of _fdclose.c); descriptors go there when it exists, file
# objects always go to Python threads
FdPool = getattr(_fdclose, "Pool", None)

MODE_AUTO = b"auto"
MODE_ALWAYS = b"always"
MODE_NEVER = b"never"

# handles queued together (the bound on pending handles counts them too)
_BATCH = 16
# tasks (new files, directories, closes) the pool holds at once; a file
# task holds a descriptor only while a thread runs it
_RING = 4096


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_CPUS = _cpu_count()
# with the C pool (its threads never take the GIL) and another core to run
# them, new files are made off the applying thread even where creating one
# is fast: a 10k-file stream apply takes ~20% less on tmpfs (Python threads
# would contend for the GIL: they only start where the filesystem is slow)
_SECOND_CORE = _CPUS >= 2
# threads a pool starts with when no latency was measured
_FIRST_THREADS = 2

_perf_ns = time.perf_counter_ns

# a drain that has not finished after this long shows a progress bar
PROGRESS_AFTER_S = 1.0
# longest wait between two looks at signals (and at the progress bar)
_STEP_S = 0.1
# fastio.close-timeout's default: how long pending closes get once an
# exception (a Ctrl-C, a failure) leaves the operation
CLOSE_TIMEOUT_S = 5.0
# time to produce one file (open, write, journal) assumed when the latency
# comes from a cache and there is no rate measured yet: a stream apply's on
# tmpfs is ~20 us; backpressure adds threads if the guess is low
ASSUMED_PRODUCE_NS = 50 * 1000
_os_close = os.close
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOINHERIT = getattr(os, "O_NOINHERIT", 0) or getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOINHERIT
# the step of a new file's life that failed (the C pool's numbers)
_STEP_CLOSE, _STEP_CREATE, _STEP_WRITE, _STEP_MODE, _STEP_MKDIR = range(5)


def _step_error(step, name, exc):
    reason = pycompat.bytestr(getattr(exc, "strerror", None) or str(exc))
    what = _describe(name)
    if step == _STEP_MKDIR:
        return error.Abort(_(b"error creating directory %s: %s") % (what, reason))
    if step == _STEP_CLOSE:
        return close_error(name, exc)
    return error.Abort(_(b"error writing %s: %s") % (what, reason))


def _close_handle(handle):
    if handle.__class__ is int:
        _os_close(handle)
    else:
        handle.close()


def _describe(name):
    if name is None:
        return b"file"
    return b"'%s'" % pycompat.bytestr(name)


def close_error(name, exc):
    """The Abort an OSError of a close turns into (one line, with the path)."""
    if isinstance(exc, OSError) and exc.strerror:
        reason = pycompat.bytestr(exc.strerror)
    else:
        reason = pycompat.bytestr(str(exc) or exc.__class__.__name__)
    return error.Abort(_(b"error closing %s: %s") % (_describe(name), reason))


def close_now(handle, name=None):
    """Close ``handle`` here; a failure is an Abort naming the file."""
    try:
        _close_handle(handle)
    except Exception as exc:
        raise close_error(name, exc)


class CloserStats:
    """Counters a closer keeps for the report and for its own decisions."""

    def __init__(self):
        self.closes = 0
        self.background = 0
        self.threads = 0
        self.peak_pending = 0
        self.wait_ns = 0
        self.median_close_ns = None
        self.median_create_ns = None
        self.windows = 0  # windows of closes timed and decided upon
        self.decision = None  # what the closer chose, for report and debug


def threads_for_latency(latency_ns, produce_ns, max_threads):
    """Closes that must run at once so that a producer spending
    ``produce_ns`` per file never waits for one taking ``latency_ns``."""
    threads = -(-latency_ns // max(1, produce_ns))
    return min(max_threads, max(2, threads))


class _Hold:
    """Signals kept while the main thread holds a descriptor no one else
    knows of (see the module's docstring).

    ``depth`` is raised by the writers around the window; a wrapped handler
    called meanwhile appends ``(signum, frame)`` to ``pending`` and returns;
    :meth:`deliver` calls the original handler once ``depth`` is back to 0.
    """

    # the signals Mercurial (or Python) turns into exceptions
    SIGNALS = tuple(
        getattr(signal, name)
        for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")
        if hasattr(signal, name)
    )

    def __init__(self):
        self.depth = 0
        self.pending = []
        self._saved = {}  # signum -> the handler we wrapped
        self._users = 0  # closers that installed the wrapper

    def _handler(self, signum, frame):
        if self.depth and not self.pending:
            self.pending.append((signum, frame))
            return
        # nothing in hand, or a second signal: now
        del self.pending[:]
        self._call(signum, frame)

    def _call(self, signum, frame):
        handler = self._saved.get(signum)
        if handler is None:
            handler = signal.getsignal(signum)
        if callable(handler) and handler != self._handler:
            handler(signum, frame)

    def is_pending(self):
        """A signal is waiting for the window to close (the pool asks
        while it waits for room, to stop waiting)."""
        return bool(self.pending)

    def deliver(self):
        """Act on the signal kept, if the window is closed (main thread)."""
        if self.depth or not self.pending:
            return
        if threading.current_thread() is not threading.main_thread():
            return
        signum, frame = self.pending[0]
        del self.pending[:]
        self._call(signum, frame)

    def install(self):
        """Wrap the handlers (main thread only); True if this call counts
        as a user, to be matched by :meth:`uninstall`."""
        if threading.current_thread() is not threading.main_thread():
            return False
        handler = self._handler
        try:
            for signum in self.SIGNALS:
                current = signal.getsignal(signum)
                if current == handler or not callable(current):
                    continue
                self._saved[signum] = current
                signal.signal(signum, handler)
        except (ValueError, OSError):
            # not the main interpreter: handlers cannot be set here
            return False
        self._users += 1
        return True

    def uninstall(self):
        self._users -= 1
        if self._users > 0:
            return
        self._users = 0
        for signum, saved in list(self._saved.items()):
            try:
                if signal.getsignal(signum) == self._handler:
                    signal.signal(signum, saved)
            except (ValueError, OSError):
                continue
            del self._saved[signum]
        if self.pending and not self.depth:
            # kept and not delivered (a window closed on another thread):
            # to the restored handler, at the next bytecode
            signum = self.pending[0][0]
            del self.pending[:]
            signal.raise_signal(signum)

    def _forked(self):
        self.depth = 0
        del self.pending[:]


hold = _Hold()

# closers with threads or a pool, for the fork hook
_background = weakref.WeakSet()


def _after_fork_in_child():
    hold._forked()
    for closer in list(_background):
        closer._forget_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Worker:
    def __init__(self):
        self.done = 0
        self.thread = None
        self.current = None  # name of the handle being closed


class FileCloser:
    """Close handles inline or on background threads, whichever pays.

    ``mode`` is ``auto`` (decide from timing), ``always`` or ``never``.
    ``threshold_ns`` is the median close time above which auto mode goes to
    the background.  ``threads`` fixes the thread count (0: derive it).
    ``max_pending`` bounds the handles queued but not yet closed, so that
    descriptor limits (512 by default on Windows) are never reached.
    ``close_timeout`` is how long :meth:`finish` waits for pending closes
    while an exception leaves the operation (seconds).
    """

    def __init__(
        self,
        ui=None,
        mode=MODE_AUTO,
        threshold_ns=50000,
        threads=0,
        max_threads=128,
        max_pending=256,
        window=8,
        stats=None,
        initial_latency_ns=None,
        close_timeout=CLOSE_TIMEOUT_S,
        budget=64 << 20,
    ):
        self._ui = ui
        self._mode = mode
        self._threshold_ns = threshold_ns
        self._fixed_threads = threads
        self._max_pending = max(1, max_pending)
        # a fixed count is what was asked for, even above the bound; each
        # thread holds a descriptor while it writes a file: no more
        # threads than descriptors may be open
        self._max_threads = max(1, min(max(max_threads, threads), self._max_pending))
        self._window = max(2, window)
        self._close_timeout = max(0.0, close_timeout)
        self.stats = stats if stats is not None else CloserStats()

        self._queue = None  # set once closing moved to the background
        self._pool = None  # the FdPool descriptors go to, if there is one
        self._pool_threads = 0  # threads the pool (or Python) starts with
        self._batch = []  # handles for the threads, not queued yet
        self._batch_size = min(_BATCH, max(1, self._max_pending // 4))
        self._workers = []
        self._submitted = 0
        # Python threads: counts done under it, the owner waits on it
        self._cond = threading.Condition(threading.Lock())
        self._waiting = False  # the owner waits on _cond
        self._exited = 0  # threads that took their sentinel
        self._stopping = False  # sentinels sent
        self._error = None  # (name, exception) of the first failure
        self._error_lock = threading.Lock()
        self._samples = []
        self._create_samples = []  # creates timed with the window's closes
        self._create_ns = None  # the create before the next close
        self._slow = 0  # files of the window with a create or close as slow
        self._window_start = None
        self._finished = False
        self.abandoned = 0  # closes given up on by finish()
        self._dir_seqs = {}  # directory -> seq of the pool task making it
        self._give_up_at = None  # see _give_up_time
        self._budget = budget
        self._pid = os.getpid()
        self._holding = hold.install()
        if mode == MODE_ALWAYS:
            self._start_background(self._fixed_threads or 4)
            self.stats.decision = b"always"
        elif mode == MODE_NEVER:
            self.stats.decision = b"never"
        elif initial_latency_ns is not None and initial_latency_ns >= threshold_ns:
            # a measurement of this filesystem says closes are slow: no
            # sampling, threads from the start
            threads = self._fixed_threads or threads_for_latency(
                initial_latency_ns, ASSUMED_PRODUCE_NS, self._max_threads
            )
            self.stats.decision = b"auto: background, cached close latency %d us" % (
                initial_latency_ns // 1000
            )
            if ui is not None:
                ui.debug(
                    b"fastio: cached close latency %d us, closing in background"
                    b" with %d threads\n" % (initial_latency_ns // 1000, threads)
                )
            self._start_background(threads)
        else:
            self.stats.decision = b"auto: inline"

    # -- the hot path -----------------------------------------------------

    def close(self, handle, name=None):
        """Close ``handle`` now or later; raise a pending failure early.

        Once called, the handle is the closer's: closed or queued even when
        this raises."""
        stats = self.stats
        stats.closes += 1
        q = self._queue
        if q is not None:
            if handle.__class__ is int and self._pool_threads:
                self._submit_fd(handle, name)
                return
            if self._error is not None:
                # the handle must still be closed, then the failure surfaces
                self._close_inline(handle, name)
                self._raise_error()
            if not self._workers:
                # the first file object: Python threads for those
                for __ in range(self._pool_threads):
                    self._add_thread()
            batch = self._batch
            batch.append((handle, name))
            if len(batch) >= self._batch_size:
                self._send_batch()
            return
        if self._mode != MODE_AUTO:
            self._close_inline(handle, name)
            return
        start = _perf_ns()
        if self._window_start is None:
            self._window_start = start
        self._close_inline(handle, name)
        took = _perf_ns() - start
        self._samples.append(took)
        created = self._create_ns
        if created is not None:
            self._create_ns = None
            self._create_samples.append(created)
            if created >= self._threshold_ns:
                took = max(took, created)
        if took >= self._threshold_ns:
            self._slow += 1
        # decided as soon as the window's median is sure to be slow: every
        # close still to time there would cost a slow close inline
        if len(self._samples) >= self._window or self._slow > self._window // 2:
            self._decide(_perf_ns())

    def _submit_fd(self, fd, name):
        pool = self._pool
        if pool is None:
            try:
                pool = self._start_pool()
            except BaseException:
                self._close_inline(fd, name)
                raise
        # (a signal while it waits for room: fd is queued all the same)
        flags = pool.submit(fd, name)
        self.stats.background += 1
        if flags or self._error is not None:
            if flags & 2:
                self._take_pool_failure()
            if self._error is not None:
                self._raise_error()
            # it waited for room: closes are slower than the producer
            if flags & 1 and not self._fixed_threads:
                pool.add_thread()
                self._count_threads()

    def _start_pool(self):
        pool = self._pool = FdPool(
            self._max_pending,
            self._pool_threads,
            self._fixed_threads or self._max_threads,
            hold.is_pending,
            budget=self._budget,
            ring=max(self._max_pending, _RING),
        )
        self._count_threads()
        return pool

    def _take_pool_failure(self):
        failure = self._pool.failure()
        if failure is not None:
            name, err, step = failure
            exc = OSError(err, os.strerror(err))
            if step != _STEP_CLOSE:
                exc = _step_error(step, name, exc)
            self._record_error(name, exc)

    # -- new files ------------------------------------------------------------

    def write_new(self, dirs, files):
        """Make the directories ``dirs`` (``(path, mode)``, outermost
        first) and the files ``files`` (``(path, data, mode, name,
        directory)``: created with ``O_EXCL``, ``data`` written, closed).
        ``mode`` is given with chmod unless -1.  Here, or on the pool's
        threads when closing moved there (a directory's files wait for it).

        Everything about them must be journaled before this is called."""
        if (
            self._queue is None
            and self._mode == MODE_AUTO
            and _SECOND_CORE
            and FdPool is not None
        ):
            # a second core makes and writes them while this one goes on
            # (threads are then sized from the measured load: a slow
            # filesystem gets more)
            self.stats.decision = b"auto: new files on threads (%d CPUs)" % _CPUS
            self._start_background(_FIRST_THREADS)
        if self._queue is None:
            self._make_dirs_here(dirs)
            dirs = ()
            # here, timed, until closing moves to the background (the
            # rest of the batch goes there)
            for done, (path, data, mode, name, __) in enumerate(files):
                self._write_new_here(path, data, mode, name)
                if self._queue is not None:
                    files = files[done + 1 :]
                    break
            else:
                return
        if self._error is not None:
            self._raise_error()
        if self._pool_threads:
            self._submit_new(dirs, files)
            return
        # Python threads: directories here (their files wait for none)
        self._make_dirs_here(dirs)
        if not self._workers:
            for __ in range(self._pool_threads or self._fixed_threads or 4):
                self._add_thread()
        for path, data, mode, name, __ in files:
            self.stats.closes += 1
            self._batch.append((path, data, mode, name))
            if len(self._batch) >= self._batch_size:
                self._send_batch()
        if self._error is not None:
            self._raise_error()

    def note_create(self, took_ns):
        """A writer created the file it hands over next in ``took_ns``:
        auto mode weighs creates with closes."""
        self._create_ns = took_ns

    def _make_dirs_here(self, dirs):
        for path, mode in dirs:
            try:
                util.makedir(path, True)
                if mode >= 0:
                    os.chmod(path, mode)
            except OSError as exc:
                raise _step_error(_STEP_MKDIR, path, exc)

    def _write_new_here(self, path, data, mode, name):
        hold_ = hold
        hold_.depth += 1
        try:
            start = _perf_ns()
            try:
                fd = os.open(path, _NEW_FLAGS, 0o666)
            except OSError as exc:
                raise _step_error(_STEP_CREATE, name, exc)
            self.note_create(_perf_ns() - start)
            try:
                if mode >= 0:
                    os.fchmod(fd, mode)
                if data:
                    written = os.write(fd, data)
                    while written < len(data):
                        written += os.write(fd, data[written:])
            except OSError as exc:
                os.close(fd)
                raise _step_error(_STEP_WRITE, name, exc)
            except BaseException:
                os.close(fd)
                raise
            self.close(fd, name)
        finally:
            hold_.depth -= 1
            if hold_.pending:
                hold_.deliver()

    def _submit_new(self, dirs, files):
        pool = self._pool or self._start_pool()
        seqs = self._dir_seqs
        seq = pool.submitted
        tasks = []
        for path, mode in dirs:
            parent = seqs.get(os.path.dirname(path), -1)
            tasks.append((path, None, mode, path, parent))
            seqs[path] = seq
            seq += 1
        for path, data, mode, name, directory in files:
            tasks.append((path, data, mode, name, seqs.get(directory, -1)))
        flags = pool.submit_files(tasks)
        self.stats.closes += len(files)
        self.stats.background += len(files)
        if flags & 2:
            self._take_pool_failure()
        if self._error is not None:
            self._raise_error()
        # the pool grows by itself while the filesystem keeps its threads
        # waiting; one more whenever the producer had to wait
        if flags & 1 and not self._fixed_threads:
            pool.add_thread()
            self._count_threads()

    def _send_batch(self):
        """Hand the collected handles to the threads, in one queue item: a
        thread takes the GIL once for the lot instead of once per handle.
        Never raises for a failed close (kept for later): every handle of
        the batch must be queued or closed."""
        batch = self._batch
        self._batch = []
        self._submitted += len(batch)
        if self._over_bound():
            # backpressure: closes are slower than the producer
            self._grow()
            start = _perf_ns()
            try:
                while batch and self._over_bound():
                    task = batch.pop()
                    self._submitted -= 1
                    if len(task) == 4:
                        # a new file: written here
                        self._write_new_task(None, *task)
                    else:
                        self._close_recorded(*task)
            finally:
                self.stats.wait_ns += _perf_ns() - start
                self.stats.background += len(batch)
                if batch:
                    self._queue.put(batch)
            return
        self.stats.background += len(batch)
        if batch:
            self._queue.put(batch)

    def _close_inline(self, handle, name):
        close_now(handle, name)

    def _close_recorded(self, handle, name):
        try:
            _close_handle(handle)
        except Exception as exc:
            self._record_error(name, exc)

    # -- decisions --------------------------------------------------------

    def _decide(self, now):
        samples = sorted(self._samples)
        median = samples[len(samples) // 2]
        creates = sorted(self._create_samples)
        create = creates[len(creates) // 2] if creates else 0
        stats = self.stats
        stats.median_close_ns = median
        if creates:
            stats.median_create_ns = create
        stats.windows += 1
        elapsed = now - self._window_start
        count = len(samples)
        spent = sum(samples) + sum(creates)
        self._samples = []
        self._create_samples = []
        self._slow = 0
        self._window_start = None
        slowest = max(median, create)
        what = b"close" if median >= create else b"create"
        if slowest < self._threshold_ns:
            stats.decision = b"auto: inline, median %s %d us < %d us" % (
                what,
                slowest // 1000,
                self._threshold_ns // 1000,
            )
            return
        if self._fixed_threads:
            threads = self._fixed_threads
        else:
            # time spent producing one file, creates and closes excluded
            produce = (elapsed - spent) // count
            threads = threads_for_latency(median + create, produce, self._max_threads)
        stats.decision = b"auto: background, median %s %d us" % (what, slowest // 1000)
        if self._ui is not None:
            self._ui.debug(
                b"fastio: median %s %d us over %d files, "
                b"writing in background with %d threads\n"
                % (what, slowest // 1000, count, threads)
            )
        self._start_background(threads)

    def _start_background(self, threads):
        # SimpleQueue is implemented in C: workers block in it without the
        # GIL, and a put or get costs far less than queue.Queue's Python
        # locking (with tens of threads, GIL hand-offs dominate)
        self._queue = queue.SimpleQueue()
        _background.add(self)
        if FdPool is not None:
            # descriptors go to the pool (started at the first one); Python
            # threads start only if a file object comes
            self._pool_threads = threads
            return
        for __ in range(threads):
            self._add_thread()

    def _add_thread(self):
        worker = _Worker()
        t = threading.Thread(
            target=self._work, args=(worker,), name="fastio-closer", daemon=True
        )
        worker.thread = t
        self._workers.append(worker)
        t.start()
        self._count_threads()
        # a thread closes its batch one handle after the other: keep enough
        # batches within the pending bound for every thread to have one
        self._batch_size = max(
            1, min(_BATCH, self._max_pending // (2 * len(self._workers)))
        )

    def _count_threads(self):
        threads = len(self._workers)
        if self._pool is not None:
            # (it also grows by itself)
            threads += self._pool.peak_threads
        self.stats.threads = max(self.stats.threads, threads)

    def _thread_pending(self):
        return self._submitted - sum(w.done for w in self._workers)

    def pending(self):
        """Handles handed to the threads and not closed yet."""
        pending = self._thread_pending()
        if self._pool is not None:
            pending += self._pool.pending
        return pending

    def _over_bound(self):
        pending = self.pending()
        if pending > self.stats.peak_pending:
            self.stats.peak_pending = pending
        return pending >= self._max_pending

    def _grow(self):
        if not self._fixed_threads and len(self._workers) < self._max_threads:
            self._add_thread()

    # -- background threads -----------------------------------------------

    def _work(self, worker):
        get = self._queue.get
        cond = self._cond
        while True:
            item = get()
            if item is None:
                with cond:
                    self._exited += 1
                    cond.notify_all()
                return
            # only this thread writes its counter: no lock needed for it
            if close_fds is not None and self._closed_in_c(item, worker):
                worker.done += len(item)
            else:
                for task in item:
                    if len(task) == 4:
                        self._write_new_task(worker, *task)
                        worker.done += 1
                        continue
                    handle, name = task
                    worker.current = name
                    try:
                        if handle.__class__ is int:
                            _os_close(handle)
                        else:
                            handle.close()
                    except BaseException as exc:
                        self._record_error(name, exc)
                    worker.done += 1
            worker.current = None
            if self._waiting:
                with cond:
                    cond.notify_all()

    def _write_new_task(self, worker, path, data, mode, name):
        """A new file's whole life, on a Python thread (each system call
        releases the GIL); skipped once something failed."""
        if self._error is not None:
            return
        if worker is not None:
            worker.current = name
        try:
            fd = os.open(path, _NEW_FLAGS, 0o666)
        except BaseException as exc:
            self._record_error(name, _step_error(_STEP_CREATE, name, exc))
            return
        failure = None
        try:
            if mode >= 0:
                os.fchmod(fd, mode)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except BaseException as exc:
            failure = _step_error(_STEP_WRITE, name, exc)
        try:
            os.close(fd)
        except BaseException as exc:
            failure = failure or _step_error(_STEP_CLOSE, name, exc)
        if failure is not None:
            self._record_error(name, failure)

    def _closed_in_c(self, item, worker):
        """Close a batch of descriptors with one close_all call; False if
        the batch is not all descriptors, or if close_all raised (it does
        only before closing any of them)."""
        for task in item:
            if task[0].__class__ is not int or len(task) != 2:
                return False
        worker.current = item[0][1]
        try:
            errs = close_fds([handle for handle, __ in item])
        except Exception:
            return False
        if errs is not None:
            for index, err in enumerate(memoryview(errs).cast("i")):
                if err:
                    self._record_error(item[index][1], OSError(err, os.strerror(err)))
        return True

    def _record_error(self, name, exc):
        with self._error_lock:
            if self._error is None:
                self._error = (name, exc)

    def _raise_error(self):
        name, exc = self._error
        if isinstance(exc, error.Abort):
            raise exc
        raise close_error(name, exc)

    # -- completion -------------------------------------------------------

    def _closed_within(self, seconds, stopping):
        """Wait until every handle handed over is closed (with
        ``stopping``, until the threads have ended too) or ``seconds`` (None:
        no limit) have passed; True if they are.  The waits are short, so
        that a signal handler runs (and may raise) in between."""
        asked = None if seconds is None else time.monotonic() + seconds

        def deadline():
            # a failure bounds an endless wait: the operation is aborting
            give_up = self._give_up_time()
            if asked is None or give_up is None:
                return asked if give_up is None else give_up
            return min(asked, give_up)

        def step():
            end = deadline()
            if end is None:
                return _STEP_S
            return max(0.0, min(_STEP_S, end - time.monotonic()))

        def expired():
            end = deadline()
            return end is not None and time.monotonic() >= end

        pool = self._pool
        if pool is not None:
            wait = pool.finish if stopping else pool.drain
            while not wait(step()):
                if expired():
                    return False
        if not self._workers:
            return True
        if stopping and not self._stopping:
            self._stopping = True
            for __ in self._workers:
                self._queue.put(None)
        workers = len(self._workers)
        cond = self._cond
        with cond:
            self._waiting = True
            try:
                while self._thread_pending() or (stopping and self._exited < workers):
                    if expired():
                        return False
                    cond.wait(step())
            finally:
                self._waiting = False
        return True

    def _give_up_time(self):
        """When waiting for pending closes stops, once something failed:
        ``close_timeout`` after the failure was first seen; None while
        nothing failed."""
        if self._give_up_at is None:
            pool = self._pool
            if self._error is not None or (
                pool is not None and pool.failure() is not None
            ):
                self._give_up_at = time.monotonic() + self._close_timeout
        return self._give_up_at

    def _wait(self, done, pending, timeout=None):
        """Wait until ``done(seconds)`` is true, at most ``timeout`` seconds
        (None: no limit); True if it came.  After PROGRESS_AFTER_S, with a
        progress bar of the ``pending`` closes (nothing is polled before
        that)."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def left(seconds):
            if deadline is None:
                return seconds
            remaining = max(0.0, deadline - time.monotonic())
            return remaining if seconds is None else min(seconds, remaining)

        if done(left(PROGRESS_AFTER_S)):
            return True
        if self._ui is None:
            return done(left(None))
        progress = self._ui.makeprogress(
            _(b"closing files"), unit=_(b"files"), total=pending
        )
        try:
            while not done(left(_STEP_S)):
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return False
                give_up = self._give_up_at
                if give_up is not None and now >= give_up:
                    return False
                progress.update(pending - self.pending())
        finally:
            progress.complete()
        return True

    def drain(self):
        """Wait until every handle given so far is closed; raise a failure.

        The threads stay available for more closes afterwards.  An
        interrupted drain leaves the closer as it was: ``finish`` still
        closes everything.
        """
        if self._finished or self._queue is None:
            if self._error is not None:
                self._raise_error()
            return
        self._check_process()
        if self._batch:
            self._send_batch()
        pending = self.pending()
        if pending > self.stats.peak_pending:
            self.stats.peak_pending = pending
        start = _perf_ns()
        try:
            self._wait(lambda s: self._closed_within(s, False), pending)
        finally:
            self.stats.wait_ns += _perf_ns() - start
            if self._pool is not None:
                self._take_pool_failure()
        if self._error is not None:
            self._raise_error()

    def finish(self, raise_errors=True):
        """Close everything pending, stop the threads, report a failure.

        With ``raise_errors=False`` (used while another exception is already
        propagating) failures are only kept in ``self.failure``, and pending
        closes get at most ``close_timeout`` seconds, as they do when this
        wait is interrupted: those still not done are abandoned (see the
        module's docstring) and raise an Abort saying so, unless an
        exception other than an interrupt propagates (then it is only
        written to the ui).  After an interrupt it handled, ``finish``
        raises that interrupt again.
        """
        if self._finished:
            return
        propagating = sys.exc_info()[1]
        interrupted = None
        complete = True
        try:
            self._check_process()
            if self._batch:
                self._send_batch()
            complete = self._complete(None if raise_errors else self._close_timeout)
        except BaseException as exc:
            # interrupted while waiting (Ctrl-C, SIGTERM): what is pending
            # gets the grace time, not forever
            interrupted = exc
            try:
                complete = self._complete(self._close_timeout)
            except BaseException:
                # again: give up on them now
                complete = False
        self._finished = True
        if self._holding:
            self._holding = False
            hold.uninstall()
        stats = self.stats
        if self._pool is not None:
            stats.wait_ns += self._pool.wait_ns
            self._count_threads()
        if self._samples and stats.median_close_ns is None:
            samples = sorted(self._samples)
            stats.median_close_ns = samples[len(samples) // 2]
        if not complete:
            failed = self._error is not None
            abandoned = self._abandon()
            if interrupted is not None:
                abandoned.__context__ = interrupted
            if (
                raise_errors
                and not failed
                or interrupted is not None
                or isinstance(propagating, KeyboardInterrupt)
            ):
                raise abandoned
            if failed and raise_errors:
                # the failure that came first is the abort
                if self._ui is not None:
                    self._ui.warn(_(b"fastio: %s\n") % abandoned.message)
                self._raise_error()
            # the exception propagating says what went wrong first
            if self._ui is not None:
                self._ui.warn(_(b"fastio: %s\n") % abandoned.message)
            return
        if interrupted is not None:
            raise interrupted
        if raise_errors and self._error is not None:
            self._raise_error()

    def _complete(self, timeout):
        """Close everything and stop the threads, waiting at most
        ``timeout`` seconds (None: no limit); True if all is done."""
        if self._queue is None:
            return True
        pending = self.pending()
        if pending > self.stats.peak_pending:
            self.stats.peak_pending = pending
        start = _perf_ns()
        try:
            return self._wait(lambda s: self._closed_within(s, True), pending, timeout)
        finally:
            stats = self.stats
            stats.wait_ns += _perf_ns() - start
            pool = self._pool
            if pool is not None:
                stats.peak_pending = max(stats.peak_pending, pool.peak)
                self._take_pool_failure()

    def _abandon(self):
        """Give up on the closes still pending; the Abort that says so."""
        left = self.pending()
        name = None
        for w in self._workers:
            if w.current is not None:
                name = w.current
                break
        if self._pool is not None:
            pool_left, pool_name = self._pool.unfinished()
            if pool_left and pool_name is not None:
                name = pool_name
        # the threads still closing end on their own when their closes
        # return (the pool's ring outlives it); nothing waits for them
        self.abandoned = left
        if left == 1:
            msg = _(b"1 file not closed after %.1f s (filesystem not responding)")
            msg %= self._close_timeout
        else:
            msg = _(b"%d files not closed after %.1f s (filesystem not responding)")
            msg %= (left, self._close_timeout)
        if name is not None:
            msg += _(b", e.g. %s") % _describe(name)
        abort = error.Abort(msg)
        self._record_error(name, abort)
        return abort

    def _check_process(self):
        # a fork that Python's hook did not see (the hook covers os.fork)
        if self._pid != os.getpid():
            self._forget_parent()

    def _forget_parent(self):
        """In a forked child: the pending closes are the parent's; close
        inline from now on."""
        self._pid = os.getpid()
        self._queue = None
        self._pool = None  # (its C side leaves the parent's threads alone)
        self._pool_threads = 0
        self._batch = []
        self._workers = []
        self._submitted = 0
        self._cond = threading.Condition(threading.Lock())
        self._waiting = False
        self._exited = 0
        self._stopping = False
        self._error = None
        self._error_lock = threading.Lock()
        self._mode = MODE_NEVER
        self._holding = False
        self.stats.decision = b"never (forked child)"

    @property
    def failure(self):
        return self._error

    @property
    def background(self):
        return self._queue is not None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.finish(raise_errors=exc_type is None)
