"""Writing files on the C pool: ``_writepool.Pool`` (``_writepool.c``, POSIX
builds), threads of its own that never take the GIL.

Descriptors to close and new files to make (directories, then files
created, written and closed) go to one ring of tasks; a file's task waits
for the task making its directory, and holds a descriptor only while a
thread runs it.  The pool starts with the first task, grows by itself while
the filesystem keeps its threads waiting, and by one more thread whenever
the applying thread had to wait for room (unless the thread count is
fixed); the contents waiting in it are bounded by ``fastio.memory-budget``.
Its failures come back as ``(name, errno, step)``.
"""

import os

from mercurial import demandimport

from .signals import hold
from .writestrategy import STEP_CLOSE, Background, close_now, step_error

# loaded with the background strategies, not by every writer (an inline
# writer never needs it)
with demandimport.deactivated():
    try:
        from . import _writepool
    except ImportError:
        # (not built: no compiler there) os.close and Python threads
        _writepool = None

# threads of its own that close descriptors without ever taking the GIL
# (POSIX builds of _writepool.c); descriptors go there when it exists, file
# objects always go to Python threads
FdPool = getattr(_writepool, "Pool", None)

# the free pages of malloc's arenas given back (glibc), or nothing
trim = getattr(_writepool, "trim", None) or (lambda: None)

# tasks (new files, directories, closes) the pool holds at once; a file
# task holds a descriptor only while a thread runs it
_RING = 4096


class CPool(Background):
    """The C pool, started with ``threads`` threads at the first task."""

    def __init__(self, context, threads, budget):
        super().__init__(context)
        self._threads = threads
        self._budget = budget
        self._pool = None  # the FdPool, once started
        self._dir_seqs = {}  # directory -> seq of the pool task making it

    def _start(self):
        pool = self._pool = FdPool(
            self._max_pending,
            self._threads,
            self._fixed_threads or self._max_threads,
            hold.is_pending,
            budget=self._budget,
            ring=self.ring,
        )
        self._count_threads()
        return pool

    @property
    def started(self):
        return self._pool is not None

    # -- handing over -------------------------------------------------------

    def close(self, fd, name):
        pool = self._pool
        if pool is None:
            try:
                pool = self._start()
            except BaseException:
                close_now(fd, name)
                raise
        # (a signal while it waits for room: fd is queued all the same)
        flags = pool.submit(fd, name)
        self._stats.background += 1
        failures = self._failures
        if flags or failures.value is not None:
            if flags & 2:
                self.take_failure()
            if failures.value is not None:
                failures.raise_it()
            # it waited for room: closes are slower than the producer
            if flags & 1 and not self._fixed_threads:
                pool.add_thread(only_if_blocked=True)
                self._count_threads()

    def write_new(self, dirs, files):
        pool = self._pool or self._start()
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
        self._stats.closes += len(files)
        self._stats.background += len(files)
        if flags & 2:
            self.take_failure()
        if self._failures.value is not None:
            self._failures.raise_it()
        # the pool grows by itself while the filesystem keeps its threads
        # waiting; one more whenever the producer had to wait for threads
        # the filesystem kept waiting (not for threads a busy CPU runs late)
        if flags & 1 and not self._fixed_threads:
            pool.add_thread(only_if_blocked=True)
            self._count_threads()

    # -- completion -------------------------------------------------------------

    def take_failure(self):
        if self._pool is None:
            return
        failure = self._pool.failure()
        if failure is not None:
            name, err, step = failure
            exc = OSError(err, os.strerror(err))
            if step != STEP_CLOSE:
                exc = step_error(step, name, exc)
            self._failures.record(name, exc)

    def failed(self):
        return self._pool is not None and self._pool.failure() is not None

    def pending(self):
        return 0 if self._pool is None else self._pool.pending

    def settle(self, stopping, step, expired):
        pool = self._pool
        if pool is not None:
            wait = pool.finish if stopping else pool.drain
            while not wait(step()):
                if expired():
                    return False
        return True

    def unfinished(self):
        if self._pool is None:
            return 0, None
        return self._pool.unfinished()

    def peak_threads(self):
        return 0 if self._pool is None else self._pool.peak_threads

    @property
    def peak(self):
        """The most tasks pending at once."""
        return self._pool.peak

    @property
    def ring(self):
        """The most tasks it holds at once (closes: ``max_pending``)."""
        return max(self._max_pending, _RING)

    @property
    def waited(self):
        """Tasks the filesystem kept waiting, and tasks in all."""
        if self._pool is None:
            return 0, 0
        return self._pool.waited, self._pool.submitted

    @property
    def wait_ns(self):
        """Time the applying thread waited for room."""
        return self._pool.wait_ns
