"""The one way the extension's Python code creates a file.

A new file is created with ``O_EXCL`` (it must not exist: nothing is ever
appended to, or truncated in, a file that was there), given the mode the
vfs gives the files it creates, and handed over, all inside one window of
:data:`.signals.hold`: a signal arriving between the open and the hand-over
is raised once the descriptor belongs to someone (see :mod:`.signals`).
The C pool (``_writepool.c``) is the only other creator, with the same
flags.

:func:`create` serves the main thread; :func:`create_on_thread` the
writer's threads, which no signal reaches (and whose windows would race
the main thread's on the hold's unlocked count).
"""

import os

from .signals import hold

_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOINHERIT = getattr(os, "O_NOINHERIT", 0) or getattr(os, "O_CLOEXEC", 0)
_NEW = os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOINHERIT
# a file that is written, then closed (the file writer's; the C pool's too)
FLAGS = os.O_WRONLY | _NEW
# a revlog's, which reads back what it writes through the same descriptor
FLAGS_READ_WRITE = os.O_RDWR | _NEW


def create(path, flags, mode, hand_over, failed, arg):
    """Create the new file ``path`` (``flags``: :data:`FLAGS` or
    :data:`FLAGS_READ_WRITE`), give it ``mode`` unless -1 (the mode the vfs
    gives: ``compat.forced_file_mode``), and call ``hand_over(fd, arg)``;
    return what it returns.  ``arg`` is what the hand-over needs (a tuple
    when it is several things: one argument keeps the calls of this hot
    path cheap).  Signals are held from before the open until ``hand_over``
    returns or raises; one that came meanwhile is raised then.

    An ``OSError`` of the open or the chmod leaves no descriptor open and
    raises ``failed(exc, arg)`` (the caller's error naming the file), or
    itself when ``failed`` is None.  From its call on, ``hand_over`` owns
    the descriptor: it closes it or gives it to its owner (a file writer, a
    file object) also when it raises, and what it raises goes through as
    it is.  (``os.open`` is looked up at each call: tests wrap it.)"""
    hold_ = hold
    hold_.depth += 1
    try:
        try:
            fd = _open_new(path, flags, mode)
        except OSError as exc:
            if failed is None:
                raise
            raise failed(exc, arg)
        return hand_over(fd, arg)
    finally:
        hold_.depth -= 1
        if hold_.pending:
            hold_.deliver()


def unheld(function, *args):
    """Call ``function(*args)`` inside a hand-over with signals not held:
    a wait for the source of a large file (a stalled server must be
    interruptible).  The hand-over closes its descriptor when this
    raises."""
    hold_ = hold
    hold_.depth -= 1
    try:
        if hold_.pending:
            hold_.deliver()
        return function(*args)
    finally:
        hold_.depth += 1


def create_on_thread(path, mode):
    """The same create on a thread other than the main one (a file
    writer's): the descriptor, the caller's to close.  An ``OSError`` of
    the open or the chmod propagates, no descriptor left open."""
    return _open_new(path, FLAGS, mode)


def _open_new(path, flags, mode):
    fd = os.open(path, flags, 0o666)
    if mode >= 0:
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            raise
    return fd
