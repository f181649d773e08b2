"""Signals held while the main thread has a descriptor no one else knows.

A descriptor the main thread holds between its ``open`` and its hand-over
to a :class:`~.filewriter.FileWriter` is known to no one else: a signal
handler raising there (Python runs handlers between any two bytecodes)
would leave it open, and on Windows an open file can be neither removed nor
renamed, so the rollback would fail.  Writers mark that window with
:data:`hold` (``hold.depth += 1`` before the open; after the hand-over
``hold.depth -= 1`` then ``hold.deliver()`` if ``hold.pending``; a new
file's window is :func:`.newfile.create`'s): a file writer wraps the Python handlers of SIGINT, SIGTERM, SIGHUP and SIGBREAK so
that a signal arriving in the window is raised once the descriptor is
handed over.  A second signal in the window is raised at once.  A window
never spans a wait for the source (a large file is copied as it comes with
the window closed, its descriptor closed by the interrupt): a stalled
server is interrupted by one Ctrl-C or SIGTERM.

Python ignores an exception raised in a finalizer (``__del__``, a weak
reference's callback), and a handler runs in whatever code is executing:
a signal handled there would be lost, the command going on.  The
extension's per-file objects have no weak reference callbacks, and its
finalizers (of a revlog's write handle, and of a new revlog file kept in
memory, which a revlog may drop unclosed) are windows, registered in
:data:`hold.finalizers` so that a signal handled as one starts is kept
too; so is the callback of Python's ``WeakSet``, which ``threading`` runs
for every thread freed.
"""

import signal
import threading
import types
import weakref


class _Hold:
    """Signals kept while the main thread holds a descriptor no one else
    knows of (see the module's docstring).

    ``depth`` is raised by the writers around the window; a wrapped handler
    called meanwhile appends ``(signum, frame)`` to ``pending`` and returns;
    :meth:`deliver` calls the original handler once ``depth`` is back to 0.
    (The windows of applies on other threads, a server's request threads,
    count too, unlocked.  Only the main thread wraps the handlers, and an
    hgweb server's main thread applies nothing, so there they count for
    nothing.  Beside a main thread's apply in the same process they would
    delay its signals; an update lost between threads could leave
    ``depth`` wrong, holding a first signal until a second one.  No
    command of Mercurial's applies on two threads at once.)
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
        # the code of the extension's finalizers (``__del__``): a handler
        # raising there would be ignored by Python, the signal lost
        self.finalizers = set()
        self._saved = {}  # signum -> the handler we wrapped
        self._users = 0  # file writers that installed the wrapper

    def _handler(self, signum, frame):
        if frame is not None and frame.f_code in self.finalizers:
            # as a finalizer starts: kept for the next window's end (or
            # the uninstall), not raised where it would be ignored
            if not self.pending:
                self.pending.append((signum, frame))
            return
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

    def after_fork(self):
        """In a forked child: nothing is in hand there."""
        self.depth = 0
        del self.pending[:]


hold = _Hold()


def _weakset_callback():
    """The code of the callback a ``WeakSet`` gives its weak references
    (one per set, the same code): ``threading`` keeps every thread in a
    ``WeakSet``, so the writers' threads, once freed, run it wherever that
    happens."""
    for const in weakref.WeakSet.__init__.__code__.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == "_remove":
            return const
    return None


# a finalizer that is not the extension's, where a signal would be lost too
# (seen: a SIGTERM ignored as a stream apply's freed thread left
# threading's set)
_callback = _weakset_callback()
if _callback is not None:
    hold.finalizers.add(_callback)
