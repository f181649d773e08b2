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
for every pending handle.  Nothing is ever left open or silently dropped.

Handles are either raw file descriptors (``int``) or objects with a
``close()`` method (the file objects of a vfs).
"""

import os
import queue
import threading
import time

from mercurial.i18n import _
from mercurial import demandimport, error, pycompat

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

_perf_ns = time.perf_counter_ns

# a drain that has not finished after this long shows a progress bar
PROGRESS_AFTER_S = 1.0
# time to produce one file (open, write, journal) assumed when the latency
# comes from a cache and there is no rate measured yet: a stream apply's on
# tmpfs is ~20 us; backpressure adds threads if the guess is low
ASSUMED_PRODUCE_NS = 50 * 1000
_os_close = os.close


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
        self.windows = 0  # windows of closes timed and decided upon
        self.decision = None  # what the closer chose, for report and debug


def threads_for_latency(latency_ns, produce_ns, max_threads):
    """Closes that must run at once so that a producer spending
    ``produce_ns`` per file never waits for one taking ``latency_ns``."""
    threads = -(-latency_ns // max(1, produce_ns))
    return min(max_threads, max(2, threads))


class _Worker:
    def __init__(self):
        self.done = 0
        self.thread = None


class _Barrier:
    """Put once per thread: each thread that takes it has finished all it
    took before, and waits there until every thread has arrived."""

    def __init__(self, count):
        self._left = count
        self._lock = threading.Lock()
        self._all_there = threading.Event()
        self._arrived = queue.SimpleQueue()

    def reached(self, worker):
        self._arrived.put(worker)
        self._all_there.wait()

    def wait(self, timeout=None):
        """True once every thread arrived, False if ``timeout`` passed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._left:
            left = None if deadline is None else max(0, deadline - time.monotonic())
            try:
                self._arrived.get(timeout=left)
            except queue.Empty:
                return False
            self._left -= 1
        self._all_there.set()
        return True


class FileCloser:
    """Close handles inline or on background threads, whichever pays.

    ``mode`` is ``auto`` (decide from timing), ``always`` or ``never``.
    ``threshold_ns`` is the median close time above which auto mode goes to
    the background.  ``threads`` fixes the thread count (0: derive it).
    ``max_pending`` bounds the handles queued but not yet closed, so that
    descriptor limits (512 by default on Windows) are never reached.
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
    ):
        self._ui = ui
        self._mode = mode
        self._threshold_ns = threshold_ns
        self._fixed_threads = threads
        # a fixed count is what was asked for, even above the bound
        self._max_threads = max(1, max_threads, threads)
        self._max_pending = max(1, max_pending)
        self._window = max(2, window)
        self.stats = stats if stats is not None else CloserStats()

        self._queue = None  # set once closing moved to the background
        self._pool = None  # the FdPool descriptors go to, if there is one
        self._pool_threads = 0  # threads the pool (or Python) starts with
        self._batch = []  # handles for the threads, not queued yet
        self._batch_size = min(_BATCH, max(1, self._max_pending // 4))
        self._workers = []
        self._submitted = 0
        self._error = None  # (name, exception) of the first failure
        self._error_lock = threading.Lock()
        self._samples = []
        self._slow = 0  # samples of the window at or above the threshold
        self._window_start = None
        self._finished = False
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
        """Close ``handle`` now or later; raise a pending failure early."""
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
        if took >= self._threshold_ns:
            self._slow += 1
        # decided as soon as the window's median is sure to be slow: every
        # close still to time there would cost a slow close inline
        if len(self._samples) >= self._window or self._slow > self._window // 2:
            self._decide(_perf_ns())

    def _submit_fd(self, fd, name):
        pool = self._pool
        if pool is None:
            pool = self._pool = FdPool(
                self._max_pending, self._pool_threads, self._max_threads
            )
            self._count_threads()
        flags = pool.submit(fd, name)
        self.stats.background += 1
        if flags or self._error is not None:
            if flags & 2:
                self._take_pool_failure()
            if self._error is not None:
                self._raise_error()
            # it waited for room: closes are slower than the producer
            if not self._fixed_threads:
                pool.add_thread()
                self._count_threads()

    def _take_pool_failure(self):
        failure = self._pool.failure()
        if failure is not None:
            name, err = failure
            self._record_error(name, OSError(err, os.strerror(err)))

    def _send_batch(self):
        """Hand the collected handles to the threads, in one queue item: a
        thread takes the GIL once for the lot instead of once per handle."""
        batch = self._batch
        self._batch = []
        self._submitted += len(batch)
        if self._over_bound():
            # backpressure: closes are slower than the producer
            self._grow()
            while batch and self._over_bound():
                handle, name = batch.pop()
                self._submitted -= 1
                start = _perf_ns()
                self._close_inline(handle, name)
                self.stats.wait_ns += _perf_ns() - start
        self.stats.background += len(batch)
        if batch:
            self._queue.put(batch)

    def _close_inline(self, handle, name):
        close_now(handle, name)

    # -- decisions --------------------------------------------------------

    def _decide(self, now):
        samples = sorted(self._samples)
        median = samples[len(samples) // 2]
        self.stats.median_close_ns = median
        self.stats.windows += 1
        elapsed = now - self._window_start
        count = len(samples)
        self._samples = []
        self._slow = 0
        self._window_start = None
        if median < self._threshold_ns:
            self.stats.decision = b"auto: inline, median close %d us < %d us" % (
                median // 1000,
                self._threshold_ns // 1000,
            )
            return
        if self._fixed_threads:
            threads = self._fixed_threads
        else:
            # time spent producing one file, closes excluded
            produce = (elapsed - sum(samples)) // count
            threads = threads_for_latency(median, produce, self._max_threads)
        self.stats.decision = b"auto: background, median close %d us" % (median // 1000)
        if self._ui is not None:
            self._ui.debug(
                b"fastio: median close %d us over %d files, "
                b"closing in background with %d threads\n"
                % (median // 1000, count, threads)
            )
        self._start_background(threads)

    def _start_background(self, threads):
        # SimpleQueue is implemented in C: workers block in it without the
        # GIL, and a put or get costs far less than queue.Queue's Python
        # locking (with tens of threads, GIL hand-offs dominate)
        self._queue = queue.SimpleQueue()
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
            threads += self._pool.threads
        self.stats.threads = max(self.stats.threads, threads)

    def pending(self):
        """Handles handed to the threads and not closed yet."""
        pending = self._submitted - sum(w.done for w in self._workers)
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
        while True:
            item = get()
            if item is None:
                return
            if item.__class__ is _Barrier:
                item.reached(worker)
                continue
            if close_fds is not None and all(h.__class__ is int for h, __ in item):
                try:
                    failures = close_fds([h for h, __ in item])
                except BaseException as exc:
                    failures = None
                    self._record_error(item[0][1], exc)
                if failures:
                    index, err = failures[0]
                    self._record_error(item[index][1], OSError(err, os.strerror(err)))
                worker.done += len(item)
                continue
            for handle, name in item:
                try:
                    if handle.__class__ is int:
                        _os_close(handle)
                    else:
                        handle.close()
                except BaseException as exc:
                    self._record_error(name, exc)
                # only this thread writes its counter: no lock needed
                worker.done += 1

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

    def drain(self):
        """Wait until every handle given so far is closed; raise a failure.

        The threads stay available for more closes afterwards.
        """
        q = self._queue
        if self._batch:
            self._send_batch()
        if self._pool is not None:
            self._drain_pool(finish=False)
        if q is not None and self._workers:
            pending = self.pending()
            if pending > self.stats.peak_pending:
                self.stats.peak_pending = pending
            start = _perf_ns()
            barrier = _Barrier(len(self._workers))
            for __ in self._workers:
                q.put(barrier)
            self._wait(barrier.wait, pending)
            self.stats.wait_ns += _perf_ns() - start
        if self._error is not None:
            self._raise_error()

    def _drain_pool(self, finish):
        pool = self._pool

        def drained(timeout):
            # short waits in C: back here in between, where Python runs
            # the handler of a SIGINT that came meanwhile
            deadline = None if timeout is None else time.monotonic() + timeout
            while not pool.drain(0.1):
                if deadline is not None and time.monotonic() >= deadline:
                    return False
            return True

        start = _perf_ns()
        try:
            self._wait(drained, pool.pending)
        finally:
            stats = self.stats
            if finish:
                # the threads close what is still queued before they stop
                pool.finish()
                stats.wait_ns += pool.wait_ns
            stats.wait_ns += _perf_ns() - start
            stats.peak_pending = max(stats.peak_pending, pool.peak)
        self._take_pool_failure()

    def _joined(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        for w in self._workers:
            w.thread.join(
                None if deadline is None else max(0, deadline - time.monotonic())
            )
            if w.thread.is_alive():
                return False
        return True

    def _wait(self, done, pending):
        """Wait until ``done(timeout)`` is true; after PROGRESS_AFTER_S,
        with a progress bar of the ``pending`` closes (nothing is polled
        before that)."""
        if done(PROGRESS_AFTER_S):
            return
        if self._ui is None:
            done(None)
            return
        progress = self._ui.makeprogress(
            _(b"closing files"), unit=_(b"files"), total=pending
        )
        left = self.pending()
        progress.update(pending - left)
        while not done(0.1):
            left = self.pending()
            progress.update(pending - left)
        progress.complete()

    def finish(self, raise_errors=True):
        """Close everything pending, stop the threads, report a failure.

        With ``raise_errors=False`` (used while another exception is already
        propagating) failures are only kept in ``self.failure``.
        """
        if self._finished:
            return
        self._finished = True
        q = self._queue
        if self._batch:
            self._send_batch()
        if self._pool is not None:
            self._drain_pool(finish=True)
        if q is not None and self._workers:
            pending = self.pending()
            if pending > self.stats.peak_pending:
                self.stats.peak_pending = pending
            start = _perf_ns()
            # no timed polling: each thread stops on its own sentinel
            for __ in self._workers:
                q.put(None)
            self._wait(self._joined, pending)
            self.stats.wait_ns += _perf_ns() - start
        if self._samples and self.stats.median_close_ns is None:
            samples = sorted(self._samples)
            self.stats.median_close_ns = samples[len(samples) // 2]
        if raise_errors and self._error is not None:
            self._raise_error()

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
