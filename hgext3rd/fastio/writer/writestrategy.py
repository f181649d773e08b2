"""What the strategies of a :class:`~.filewriter.FileWriter` share.

A file writer makes new files (their directories, then each file created
by :mod:`.newfile`, written and closed) and closes handles written elsewhere,
in one of three ways:

- :mod:`.writeinline`: on the applying thread, one system call after the
  other (the writer times them in auto mode);
- :mod:`.writethreads`: Python threads, each system call releasing the GIL
  (file objects always; everything where the C pool is not built);
- :mod:`.writepool`: the threads of ``_writepool.Pool``, which never take the
  GIL (descriptors and new files, POSIX builds).

The two background ones implement :class:`Background`.  All of them turn
a failed step into the same ``Abort`` (:func:`close_error`,
:func:`step_error`), and keep the first failure of an operation in one
:class:`FirstFailure`, raised in the thread that owns the operation.

Handles are either raw file descriptors (``int``) or objects with a
``close()`` method (the file objects of a vfs).
"""

import os
import threading

from mercurial.i18n import _
from mercurial import error, pycompat

_os_close = os.close
# the step of a new file's life that failed (the C pool's numbers)
STEP_CLOSE, STEP_CREATE, STEP_WRITE, STEP_MODE, STEP_MKDIR = range(5)


class Context:
    """What a writer gives each of its background strategies: the
    :class:`FirstFailure` and the stats they share, the bounds (pending
    handles, threads; ``fixed_threads`` is 0 unless the count is fixed),
    and ``count_threads()``, told whenever a thread starts."""

    def __init__(
        self, failures, stats, max_pending, fixed_threads, max_threads, count_threads
    ):
        self.failures = failures
        self.stats = stats
        self.max_pending = max_pending
        self.fixed_threads = fixed_threads
        self.max_threads = max_threads
        self.count_threads = count_threads


class Background:
    """The interface of a strategy writing files off the applying thread.

    ``dirs`` are ``(path, mode)``, outermost first; ``files`` are ``(path,
    data, mode, name, directory)`` (see :meth:`.FileWriter.write_new`).
    Failures go to the context's :class:`FirstFailure`; a call that finds
    one there raises it (after taking what it was given: a handle is
    closed or queued even then).
    """

    def __init__(self, context):
        self._failures = context.failures
        self._stats = context.stats
        self._max_pending = context.max_pending
        self._fixed_threads = context.fixed_threads
        self._max_threads = context.max_threads
        self._count_threads = context.count_threads

    def close(self, handle, name):
        """Close ``handle`` (its file is ``name``) later."""
        raise NotImplementedError

    def write_new(self, dirs, files):
        """Make ``dirs``, then create, write and close ``files``."""
        raise NotImplementedError

    def flush(self):
        """Hand over what is collected and not queued yet."""

    def pending(self):
        """Tasks handed over and not done yet."""
        raise NotImplementedError

    def settle(self, stopping, step, expired):
        """Wait until every task handed over is done (with ``stopping``,
        until the threads have ended too); False as soon as ``expired()``.
        Each wait lasts at most ``step()`` seconds, so that a signal
        handler runs (and may raise) in between."""
        raise NotImplementedError

    def take_failure(self):
        """Move a failure known to the threads to the :class:`FirstFailure`."""

    def failed(self):
        """Whether something failed that the owner may not know yet."""
        return False

    def unfinished(self):
        """``(count, name)``: tasks not done, and a file being written or
        closed now (or None)."""
        raise NotImplementedError

    def peak_threads(self):
        """The most threads this strategy ran at once."""
        raise NotImplementedError


class FirstFailure:
    """The first failure of an operation, ``(name, exception)``, from
    whichever thread saw it."""

    def __init__(self):
        self.value = None
        self._lock = threading.Lock()

    def record(self, name, exc):
        with self._lock:
            if self.value is None:
                self.value = (name, exc)

    def raise_it(self):
        name, exc = self.value
        if isinstance(exc, error.Abort):
            raise exc
        raise close_error(name, exc)


def describe(name):
    if name is None:
        return b"file"
    return b"'%s'" % pycompat.bytestr(name)


def step_error(step, name, exc):
    """The Abort a failed step of a new file's life turns into."""
    reason = pycompat.bytestr(getattr(exc, "strerror", None) or str(exc))
    what = describe(name)
    if step == STEP_MKDIR:
        return error.Abort(_(b"error creating directory %s: %s") % (what, reason))
    if step == STEP_CLOSE:
        return close_error(name, exc)
    return error.Abort(_(b"error writing %s: %s") % (what, reason))


def close_error(name, exc):
    """The Abort an OSError of a close turns into (one line, with the path)."""
    if isinstance(exc, OSError) and exc.strerror:
        reason = pycompat.bytestr(exc.strerror)
    else:
        reason = pycompat.bytestr(str(exc) or exc.__class__.__name__)
    return error.Abort(_(b"error closing %s: %s") % (describe(name), reason))


def close_handle(handle):
    if handle.__class__ is int:
        _os_close(handle)
    else:
        handle.close()


def close_now(handle, name=None):
    """Close ``handle`` here; a failure is an Abort naming the file."""
    try:
        close_handle(handle)
    except Exception as exc:
        raise close_error(name, exc)
