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
from mercurial import error, pycompat

MODE_AUTO = b"auto"
MODE_ALWAYS = b"always"
MODE_NEVER = b"never"

_perf_ns = time.perf_counter_ns
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


class CloserStats:
    """Counters a closer keeps for the report and for its own decisions."""

    def __init__(self):
        self.closes = 0
        self.background = 0
        self.threads = 0
        self.peak_pending = 0
        self.wait_ns = 0
        self.median_close_ns = None


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
        max_threads=64,
        max_pending=256,
        window=16,
        stats=None,
    ):
        self._ui = ui
        self._mode = mode
        self._threshold_ns = threshold_ns
        self._fixed_threads = threads
        self._max_threads = max(1, max_threads)
        self._max_pending = max(1, max_pending)
        self._window = max(2, window)
        self.stats = stats if stats is not None else CloserStats()

        self._queue = None  # set once closing moved to the background
        self._threads = []
        self._error = None  # (name, exception) of the first failure
        self._error_lock = threading.Lock()
        self._samples = []
        self._window_start = None
        self._finished = False
        if mode == MODE_ALWAYS:
            self._start_background(self._fixed_threads or 4)

    # -- the hot path -----------------------------------------------------

    def close(self, handle, name=None):
        """Close ``handle`` now or later; raise a pending failure early."""
        stats = self.stats
        stats.closes += 1
        q = self._queue
        if q is not None:
            if self._error is not None:
                # the handle must still be closed, then the failure surfaces
                self._close_inline(handle, name)
                self._raise_error()
            stats.background += 1
            if not stats.background & 31:
                pending = q.qsize()
                if pending > stats.peak_pending:
                    stats.peak_pending = pending
            try:
                q.put_nowait((handle, name))
            except queue.Full:
                self._on_full(q, (handle, name))
            return
        if self._mode != MODE_AUTO:
            self._close_inline(handle, name)
            return
        start = _perf_ns()
        if self._window_start is None:
            self._window_start = start
        self._close_inline(handle, name)
        self._samples.append(_perf_ns() - start)
        if len(self._samples) >= self._window:
            self._decide(_perf_ns())

    def _close_inline(self, handle, name):
        try:
            _close_handle(handle)
        except Exception as exc:
            raise close_error(name, exc)

    # -- decisions --------------------------------------------------------

    def _decide(self, now):
        samples = sorted(self._samples)
        median = samples[len(samples) // 2]
        self.stats.median_close_ns = median
        elapsed = now - self._window_start
        count = len(samples)
        self._samples = []
        self._window_start = None
        if median < self._threshold_ns:
            return
        if self._fixed_threads:
            threads = self._fixed_threads
        else:
            # time spent producing one file, closes excluded: that many
            # closes must run at once to keep the producer from waiting
            produce = max(1, (elapsed - sum(samples)) // count)
            threads = -(-median // produce)
        threads = min(self._max_threads, max(2, threads))
        if self._ui is not None:
            self._ui.debug(
                b"fastio: median close %d us over %d files, "
                b"closing in background with %d threads\n"
                % (median // 1000, count, threads)
            )
        self._start_background(threads)

    def _start_background(self, threads):
        self._queue = queue.Queue(maxsize=self._max_pending)
        for __ in range(threads):
            self._add_thread()

    def _add_thread(self):
        t = threading.Thread(target=self._worker, name="fastio-closer", daemon=True)
        t.start()
        self._threads.append(t)
        self.stats.threads = len(self._threads)

    def _on_full(self, q, item):
        """Backpressure: the queue is full, so closes are slower than the
        producer; add a thread if allowed, then wait for a free slot."""
        if not self._fixed_threads and len(self._threads) < self._max_threads:
            self._add_thread()
        self.stats.peak_pending = self._max_pending
        start = _perf_ns()
        q.put(item)
        self.stats.wait_ns += _perf_ns() - start

    # -- background threads -----------------------------------------------

    def _worker(self):
        q = self._queue
        get = q.get
        done = q.task_done
        while True:
            item = get()
            if item is None:
                done()
                return
            handle, name = item
            try:
                _close_handle(handle)
            except BaseException as exc:
                with self._error_lock:
                    if self._error is None:
                        self._error = (name, exc)
            done()

    def _raise_error(self):
        name, exc = self._error
        if isinstance(exc, error.Abort):
            raise exc
        raise close_error(name, exc)

    # -- completion -------------------------------------------------------

    def drain(self):
        """Wait until every handle given so far is closed; raise a failure."""
        q = self._queue
        if q is not None:
            pending = q.qsize()
            if pending > self.stats.peak_pending:
                self.stats.peak_pending = pending
            start = _perf_ns()
            q.join()
            self.stats.wait_ns += _perf_ns() - start
        if self._error is not None:
            self._raise_error()

    def finish(self, raise_errors=True):
        """Close everything pending, stop the threads, report a failure.

        With ``raise_errors=False`` (used while another exception is already
        propagating) failures are only kept in ``self.failure``.
        """
        if self._finished:
            return
        self._finished = True
        q = self._queue
        if q is not None:
            start = _perf_ns()
            # no timed polling: each thread stops on its own sentinel
            for __ in self._threads:
                q.put(None)
            for t in self._threads:
                t.join()
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
