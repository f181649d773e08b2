"""The life of a file the extension writes: its directory made, the file
created, written and closed, here or on threads, whichever pays, and no
error lost.

A :class:`FileWriter` takes new files (:meth:`~FileWriter.write_new`) and
handles written elsewhere (:meth:`~FileWriter.close`), and hands them to
one of its strategies (:mod:`.writestrategy`): :mod:`.writeinline` (this
thread), :mod:`.writepool` (the C pool: descriptors and new files) or
:mod:`.writethreads` (Python threads: file objects, and everything where the
C pool is not built).  Which one is decided here, once per operation.

On local Linux filesystems ``close()`` costs a microsecond or two, and any
thread hand-off costs more than it saves.  On NTFS (with a virus scanner), NFS
and SMB a close flushes or notifies and costs a millisecond or more, and a
clone of 100k files spends minutes in it.  So a file writer in ``auto`` mode
starts *inline*: it closes synchronously and times the creates and closes.
Once the median of a window of them is above the threshold it starts
background threads, sized from the measured latency and the rate at which
files are produced, and grows them when the bounded queue of pending handles
fills up.  New files go to the C pool at once where there is a second core
to run it (its threads never take the GIL).

Every failure of a step (a mkdir, a create, a write, a close or the flush a
buffered file does in close) is kept and re-raised in the thread that owns
the operation: at the next call and, at the latest, by
:meth:`FileWriter.finish`, which waits for every pending file.  Nothing is
left open or silently dropped (a close that hangs is given up on only with
an abort, see below).

Interrupts.  Every wait (for room, :meth:`~FileWriter.drain`,
:meth:`~FileWriter.finish`) is made of short steps, so that a Ctrl-C or a
SIGTERM is handled within a tenth of a second.  When an exception (an
interrupt or any other) leaves the operation, ``finish`` waits for the
pending closes at most ``close_timeout`` seconds (``fastio.pending-timeout``):
a close that has not returned by then (a hard-mounted NFS server that
stopped answering) is abandoned, and the command aborts with the number of
such files and the name of one (a warning only, when the exception leaving
is a failure other than an interrupt: that failure is the abort).  An
abandoned descriptor stays open in the process until its close returns or
the process exits; its thread ends on its own.  The transaction's rollback
goes on without it: on POSIX an open file can be removed (on Windows it
cannot).  Without an exception ``finish`` waits as long as it takes (a
Ctrl-C then ends the wait as above).  An inline close cannot be given up
on: it runs on the thread that would give up.  A signal arriving while the
applying thread holds a descriptor no one else knows of waits until it is
handed over (:mod:`.signals`): a file writer installs that hold.

``fork()``: a child process does not own its parent's pending closes (the
parent's threads close the parent's descriptors; the child's copies close
when it exits, or execs: they are close-on-exec).  A file writer used in a
forked child forgets them and writes inline from then on.
"""

import os
import sys
import time
import weakref

from mercurial.i18n import _
from mercurial import error

from ..config import MODE_ALWAYS, MODE_AUTO, MODE_NEVER
from . import writeinline, writepool, writethreads
from .signals import hold
from .writestrategy import Context, FirstFailure, close_now, describe


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
# fastio.pending-timeout's default: how long pending closes get once an
# exception (a Ctrl-C, a failure) leaves the operation
CLOSE_TIMEOUT_S = 5.0
# time to produce one file (open, write, journal) assumed when the latency
# comes from a cache and there is no rate measured yet: a stream apply's on
# tmpfs is ~20 us; backpressure adds threads if the guess is low
ASSUMED_PRODUCE_NS = 50 * 1000


class FileWriterStats:
    """Counters a file writer keeps for the report and for its own
    decisions."""

    def __init__(self):
        self.closes = 0
        self.background = 0
        self.threads = 0
        self.peak_pending = 0
        # what bounds peak_pending: the tasks the writer holds at once
        # (new files wait in the C pool's ring holding no descriptor)
        self.pending_bound = 0
        self.max_pending = 0  # descriptors held: fastio.max-pending-files
        self.wait_ns = 0
        self.median_close_ns = None
        self.median_create_ns = None
        self.windows = 0  # windows of closes timed and decided upon
        self.decision = None  # what the writer chose, for report and debug


# the filesystems (st_dev) on which a file writer of this process found
# creating or closing files slow
_slow_devices = set()


def slow_filesystem(path):
    """True if a file writer of this process found the filesystem of
    ``path`` slow (its threads kept waiting by creates and closes)."""
    if not _slow_devices:
        return False
    try:
        return os.stat(path).st_dev in _slow_devices
    except OSError:
        return False


def threads_for_latency(latency_ns, produce_ns, max_threads):
    """Closes that must run at once so that a producer spending
    ``produce_ns`` per file never waits for one taking ``latency_ns``."""
    threads = -(-latency_ns // max(1, produce_ns))
    return min(max_threads, max(2, threads))


# file writers with threads or a pool, for the fork hook
_background = weakref.WeakSet()


def _after_fork_in_child():
    hold.after_fork()
    for writer in list(_background):
        writer._forget_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class FileWriter:
    """Write new files and close handles inline or on background threads,
    whichever pays.

    ``mode`` is ``auto`` (decide from timing), ``always`` or ``never``.
    ``threshold_ns`` is the median create or close time above which auto
    mode goes to the background.  ``threads`` fixes the thread count (0:
    derive it).  ``max_pending`` bounds the handles queued but not yet
    closed, so that descriptor limits (512 by default on Windows) are never
    reached.  ``close_timeout`` is how long :meth:`finish` waits for
    pending closes while an exception leaves the operation (seconds).
    ``budget`` bounds the contents of new files waiting for the C pool.
    """

    def __init__(
        self,
        ui=None,
        mode=MODE_AUTO,
        threshold_ns=50000,
        threads=0,
        max_threads=256,
        max_pending=256,
        window=8,
        stats=None,
        initial_latency_ns=None,
        close_timeout=CLOSE_TIMEOUT_S,
        budget=64 << 20,
        path=None,
    ):
        self._ui = ui
        self._path = path  # where it writes (see slow_filesystem)
        self._mode = mode
        self._threshold_ns = threshold_ns
        self._max_pending = max(1, max_pending)
        # a fixed count is what was asked for, even above the bound; each
        # thread holds a descriptor while it writes a file: no more
        # threads than descriptors may be open
        self._max_threads = max(1, min(max(max_threads, threads), self._max_pending))
        self._fixed_threads = min(max(0, threads), self._max_threads)
        self._window = max(1, window)
        self._close_timeout = max(0.0, close_timeout)
        self._budget = budget
        self.stats = stats if stats is not None else FileWriterStats()
        self.stats.max_pending = self._max_pending

        # the strategies, once writing moved to the background: Python
        # threads (always there then), the C pool (where it is built), and
        # which of them takes descriptors and new files
        self._threads = None
        self._pool = None
        self._strategies = ()
        self._descriptors = None
        self._new_files = None
        self._failures = FirstFailure()
        # auto mode's window of timed closes (and the creates before them)
        self._samples = []
        self._create_samples = []  # creates timed with the window's closes
        self._create_ns = None  # the create before the next close
        self._slow = 0  # files of the window with a create or close as slow
        self._window_start = None
        self._finished = False
        self.abandoned = 0  # closes given up on by finish()
        self._give_up_at = None  # see _give_up_time
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

    def write_new(self, dirs, files):
        """Make the directories ``dirs`` (``(path, mode)``, outermost
        first) and the files ``files`` (``(path, data, mode, name,
        directory)``: created as :mod:`.newfile` creates a file, ``data``
        written, closed).  ``mode`` is given with chmod unless -1.  Here, or on the pool's
        threads when closing moved there (a directory's files wait for it).

        Everything about them must be journaled before this is called."""
        if (
            self._threads is None
            and self._mode == MODE_AUTO
            and _SECOND_CORE
            and writepool.FdPool is not None
        ):
            # a second core makes and writes them while this one goes on
            # (threads are then sized from the measured load: a slow
            # filesystem gets more)
            self.stats.decision = b"auto: new files on threads (%d CPUs)" % _CPUS
            self._start_background(_FIRST_THREADS)
        if self._threads is None:
            writeinline.make_dirs(dirs)
            dirs = ()
            # here, timed, until closing moves to the background (the
            # rest of the batch goes there)
            for done, (path, data, mode, name, __) in enumerate(files):
                writeinline.write_file(
                    path, data, mode, name, self.note_create, self.close
                )
                if self._threads is not None:
                    files = files[done + 1 :]
                    break
            else:
                return
        if self._failures.value is not None:
            self._failures.raise_it()
        self._new_files.write_new(dirs, files)

    def close(self, handle, name=None):
        """Close ``handle`` now or later; raise a pending failure early.

        Once called, the handle is the writer's: closed or queued even when
        this raises."""
        stats = self.stats
        stats.closes += 1
        threads = self._threads
        if threads is not None:
            if handle.__class__ is int:
                self._descriptors.close(handle, name)
            else:
                threads.close(handle, name)
            return
        if self._mode != MODE_AUTO:
            close_now(handle, name)
            return
        start = _perf_ns()
        if self._window_start is None:
            self._window_start = start
        close_now(handle, name)
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

    def note_create(self, took_ns):
        """A writer created the file it hands over next in ``took_ns``:
        auto mode weighs creates with closes."""
        self._create_ns = took_ns

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
        # a fixed count, else one within the bound (the first threads,
        # always mode's, a measured latency's): the pool refuses more
        threads = self._fixed_threads or max(1, min(threads, self._max_threads))
        context = Context(
            self._failures,
            self.stats,
            self._max_pending,
            self._fixed_threads,
            self._max_threads,
            self._count_threads,
        )
        self._threads = writethreads.Threads(context, threads, self._over_bound)
        _background.add(self)
        if writepool.FdPool is not None:
            # descriptors and new files go to the pool (started at the
            # first one); Python threads start only if a file object comes
            self._pool = writepool.CPool(context, threads, self._budget)
            self._strategies = (self._threads, self._pool)
            self._descriptors = self._new_files = self._pool
            return
        self._strategies = (self._threads,)
        self._descriptors = self._new_files = self._threads
        self._threads.start(threads)

    def _count_threads(self):
        # (the pool also grows by itself)
        threads = sum(s.peak_threads() for s in self._strategies)
        self.stats.threads = max(self.stats.threads, threads)

    def pending(self):
        """Handles handed to the threads and not closed yet."""
        return sum(s.pending() for s in self._strategies)

    def _over_bound(self):
        pending = self.pending()
        if pending > self.stats.peak_pending:
            self.stats.peak_pending = pending
        return pending >= self._max_pending

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
        if pool is not None and not pool.settle(stopping, step, expired):
            return False
        threads = self._threads
        if threads is None:
            return True
        return threads.settle(stopping, step, expired)

    def _give_up_time(self):
        """When waiting for pending closes stops, once something failed:
        ``close_timeout`` after the failure was first seen; None while
        nothing failed."""
        if self._give_up_at is None:
            pool = self._pool
            if self._failures.value is not None or (pool is not None and pool.failed()):
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
        interrupted drain leaves the writer as it was: ``finish`` still
        closes everything.
        """
        if self._finished or self._threads is None:
            if self._failures.value is not None:
                self._failures.raise_it()
            return
        self._check_process()
        if self._threads is not None:
            self._threads.flush()
        pending = self.pending()
        if pending > self.stats.peak_pending:
            self.stats.peak_pending = pending
        start = _perf_ns()
        try:
            self._wait(lambda s: self._closed_within(s, False), pending)
        finally:
            self.stats.wait_ns += _perf_ns() - start
            if self._pool is not None:
                self._pool.take_failure()
        if self._failures.value is not None:
            self._failures.raise_it()

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
            if self._threads is not None:
                self._threads.flush()
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
        if complete and self._threads is not None:
            # the threads have ended: what their arenas, and the process
            # before them, freed goes back to the system (a long-running
            # process would keep it resident)
            writepool.trim()
        if self._holding:
            self._holding = False
            hold.uninstall()
        stats = self.stats
        if self._pool is not None and self._pool.started:
            stats.wait_ns += self._pool.wait_ns
            self._count_threads()
            if complete:
                self._note_filesystem()
        if self._samples and stats.median_close_ns is None:
            samples = sorted(self._samples)
            stats.median_close_ns = samples[len(samples) // 2]
        if not complete:
            failed = self._failures.value is not None
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
                self._failures.raise_it()
            # the exception propagating says what went wrong first
            if self._ui is not None:
                self._ui.warn(_(b"fastio: %s\n") % abandoned.message)
            return
        if interrupted is not None:
            raise interrupted
        if raise_errors and self._failures.value is not None:
            self._failures.raise_it()

    def _note_filesystem(self):
        # the filesystem kept the pool's threads waiting on a tenth of its
        # files or more (each slept in a create or close): remembered for
        # the rest of the command (the checkout of hg clone sizes its
        # workers by it)
        waited, tasks = self._pool.waited
        if self._path is not None and tasks and waited >= max(8, tasks // 10):
            try:
                _slow_devices.add(os.stat(self._path).st_dev)
            except OSError:
                pass

    def _complete(self, timeout):
        """Close everything and stop the threads, waiting at most
        ``timeout`` seconds (None: no limit); True if all is done."""
        if self._threads is None:
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
            if pool is not None and pool.started:
                stats.peak_pending = max(stats.peak_pending, pool.peak)
                stats.pending_bound = max(stats.pending_bound, pool.ring)
                pool.take_failure()

    def _abandon(self):
        """Give up on the closes still pending; the Abort that says so."""
        left = self.pending()
        name = None
        if self._threads is not None:
            name = self._threads.unfinished()[1]
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
            msg += _(b", e.g. %s") % describe(name)
        abort = error.Abort(msg)
        self._failures.record(name, abort)
        return abort

    # -- fork -----------------------------------------------------------------

    def _check_process(self):
        # a fork that Python's hook did not see (the hook covers os.fork)
        if self._pid != os.getpid():
            self._forget_parent()

    def _forget_parent(self):
        """In a forked child: the pending closes are the parent's; write
        inline from now on."""
        self._pid = os.getpid()
        self._threads = None
        self._pool = None  # (its C side leaves the parent's threads alone)
        self._strategies = ()
        self._descriptors = self._new_files = None
        self._failures = FirstFailure()
        self._mode = MODE_NEVER
        self._holding = False
        self.stats.decision = b"never (forked child)"

    @property
    def failure(self):
        return self._failures.value

    @property
    def background(self):
        return self._threads is not None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.finish(raise_errors=exc_type is None)


def for_operation(
    ui, settings, stats=None, repovfs=None, path=None, expectedcount=-1, destinations=1
):
    """The file writer of an operation writing ``expectedcount`` files (-1:
    unknown) into ``destinations`` vfs (stock starts a closer, and says so
    under --debug, for each), with the ``config.Settings`` of ``ui``;
    ``repovfs`` and ``path`` (where it writes) find auto mode's cached
    latency (``diag/autotune``)."""
    mode, threads = settings.write_mode, settings.write_threads
    tuning = None
    if mode == MODE_AUTO and settings.probe_max_age_s and repovfs is not None and path:
        from ..diag import autotune

        tuning = autotune.Tuning(ui, repovfs, path, settings.probe_max_age_s)
    if settings.stock_close is not None:
        tuning = None
        threads, minfilecount = settings.stock_close
        if 0 < expectedcount < minfilecount:
            mode = MODE_NEVER
        else:
            mode = MODE_ALWAYS
            for __ in range(destinations):
                ui.debug(b"starting %d threads for background file closing\n" % threads)
    return FileWriter(
        ui=ui,
        mode=mode,
        threshold_ns=settings.threshold_ns,
        threads=threads,
        max_threads=settings.max_write_threads,
        max_pending=settings.max_pending,
        window=settings.file_sample,
        stats=stats,
        initial_latency_ns=tuning and tuning.initial_latency_ns,
        close_timeout=settings.pending_timeout_s,
        budget=settings.memory_budget,
        path=path,
    )
