"""Writing files on Python threads: file objects always (their ``close()``
is Python code), and descriptors and new files too where the C pool is not
built (Windows, no compiler).

Tasks are handed over in batches of up to :data:`_BATCH`, one queue item
each, so that a thread takes the GIL once for the lot.  A thread closes a
batch of descriptors with ``_writepool.close_all`` (the GIL released once)
when it is built, else one ``os.close`` each; it makes a new file (create,
write, close) with one system call after the other, each releasing the
GIL.  When the tasks pending reach the bound (``fastio.max-pending-files``,
counted with the C pool's), one more thread starts (unless the count is
fixed) and the applying thread does the batch's tasks itself until there is
room.
"""

import os
import queue
import threading
import time

from mercurial import error

from . import writeinline
from .signals import hold
from .writepool import _writepool
from .newfile import create_on_thread
from .writestrategy import (
    STEP_CLOSE,
    STEP_CREATE,
    STEP_WRITE,
    Background,
    close_handle,
    close_now,
    step_error,
)

# closes a list of descriptors with the GIL released once (built from
# _writepool.c when a compiler was there); else one os.close per handle
close_fds = getattr(_writepool, "close_all", None)

# handles queued together (the bound on pending handles counts them too)
_BATCH = 16

_os_close = os.close
_perf_ns = time.perf_counter_ns


def _ignore(*args):
    pass


class _Worker:
    def __init__(self):
        self.done = 0
        self.thread = None
        self.current = None  # name of the handle being closed


class Threads(Background):
    """Python threads taking batches of closes and new files from a queue.

    ``first_threads`` start with the first task (or at once with
    :meth:`start`); ``over_bound()`` says whether the tasks pending (of
    every strategy of the writer) reached the bound.
    """

    def __init__(self, context, first_threads, over_bound):
        super().__init__(context)
        self._first_threads = first_threads
        self._over_bound = over_bound
        # SimpleQueue is implemented in C: workers block in it without the
        # GIL, and a put or get costs far less than queue.Queue's Python
        # locking (with tens of threads, GIL hand-offs dominate)
        self._queue = queue.SimpleQueue()
        self._batch = []  # handles for the threads, not queued yet
        self._batch_size = min(_BATCH, max(1, self._max_pending // 4))
        self._workers = []
        self._submitted = 0
        # counts done under it, the owner waits on it
        self._cond = threading.Condition(threading.Lock())
        self._waiting = False  # the owner waits on _cond
        self._exited = 0  # threads that took their sentinel
        self._stopping = False  # sentinels sent

    # -- handing over -------------------------------------------------------

    def start(self, threads):
        for __ in range(threads):
            self._add_thread()

    def _ensure_started(self):
        if not self._workers:
            self.start(self._first_threads)

    def close(self, handle, name):
        if self._failures.value is not None:
            # the handle must still be closed, then the failure surfaces
            close_now(handle, name)
            self._failures.raise_it()
        self._ensure_started()
        batch = self._batch
        batch.append((handle, name))
        if len(batch) >= self._batch_size:
            self._send_batch()

    def write_new(self, dirs, files):
        # directories here (their files wait for none)
        writeinline.make_dirs(dirs)
        self._ensure_started()
        stats = self._stats
        for path, data, mode, name, __ in files:
            stats.closes += 1
            self._batch.append((path, data, mode, name))
            if len(self._batch) >= self._batch_size:
                self._send_batch()
        if self._failures.value is not None:
            self._failures.raise_it()

    def flush(self):
        if self._batch:
            self._send_batch()

    def _send_batch(self):
        """Hand the collected handles to the threads, in one queue item: a
        thread takes the GIL once for the lot instead of once per handle.
        Never raises for a failed close (kept for later): every handle of
        the batch must be queued or closed.  A signal waits until then (one
        raised as a task is taken off the batch would lose it: a handle
        left open, or a task counted that no one does, waited for until
        the close timeout)."""
        hold_ = hold
        hold_.depth += 1
        try:
            self._hand_over()
        finally:
            hold_.depth -= 1
            if hold_.pending:
                hold_.deliver()

    def _hand_over(self):
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
                self._stats.wait_ns += _perf_ns() - start
                self._stats.background += len(batch)
                if batch:
                    self._queue.put(batch)
            return
        self._stats.background += len(batch)
        if batch:
            self._queue.put(batch)

    def _close_recorded(self, handle, name):
        try:
            close_handle(handle)
        except Exception as exc:
            self._failures.record(name, exc)

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

    def _grow(self):
        if not self._fixed_threads and len(self._workers) < self._max_threads:
            self._add_thread()

    # -- the threads ----------------------------------------------------------

    def _work(self, worker):
        get = self._queue.get
        cond = self._cond
        record = self._failures.record
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
                        record(name, exc)
                    worker.done += 1
            worker.current = None
            if self._waiting:
                with cond:
                    cond.notify_all()

    def _write_new_task(self, worker, path, data, mode, name):
        """A new file's whole life, on a Python thread (each system call
        releases the GIL), or on the applying thread (``worker`` None) when
        the threads are behind; skipped once something failed."""
        failures = self._failures
        if failures.value is not None:
            return
        if worker is None:
            # as the inline writer writes it: a signal waits until the
            # descriptor is closed, then is raised as the interrupt it is
            # (not a failure of this file)
            try:
                writeinline.write_file(path, data, mode, name, _ignore, close_now)
            except error.Abort as failure:
                failures.record(name, failure)
            return
        worker.current = name
        # (on a thread no signal is raised: whatever raises is this file's)
        try:
            fd = create_on_thread(path, mode)
        except BaseException as exc:
            failures.record(name, step_error(STEP_CREATE, name, exc))
            return
        failure = None
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except BaseException as exc:
            failure = step_error(STEP_WRITE, name, exc)
        try:
            os.close(fd)
        except BaseException as exc:
            failure = failure or step_error(STEP_CLOSE, name, exc)
        if failure is not None:
            failures.record(name, failure)

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
                    self._failures.record(
                        item[index][1], OSError(err, os.strerror(err))
                    )
        return True

    # -- completion -------------------------------------------------------------

    def pending(self):
        return self._submitted - sum(w.done for w in self._workers)

    def settle(self, stopping, step, expired):
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
                while self.pending() or (stopping and self._exited < workers):
                    if expired():
                        return False
                    cond.wait(step())
            finally:
                self._waiting = False
        return True

    def unfinished(self):
        name = None
        for w in self._workers:
            if w.current is not None:
                name = w.current
                break
        return self.pending(), name

    def peak_threads(self):
        return len(self._workers)
