"""Writing files on the applying thread: a :class:`~.filewriter.FileWriter`
starts so (auto mode times these steps to decide whether threads pay), and
stays so with ``fastio.background-write=never``.

A new file is created with ``O_EXCL``, given its mode, written and handed to
the writer's ``close``; the signals of :mod:`.signals` are held from the
open to that hand-over.  Every failure raises at once, as an ``Abort``
naming the file.
"""

import os
import time

from mercurial import util

from .signals import hold
from .writestrategy import NEW_FLAGS, STEP_CREATE, STEP_MKDIR, STEP_WRITE, step_error

_perf_ns = time.perf_counter_ns


def make_dirs(dirs):
    """Make ``dirs`` (``(path, mode)``, outermost first)."""
    for path, mode in dirs:
        try:
            util.makedir(path, True)
            if mode >= 0:
                os.chmod(path, mode)
        except OSError as exc:
            raise step_error(STEP_MKDIR, path, exc)


def write_file(path, data, mode, name, note_create, close):
    """Create ``path``, tell ``note_create`` how long that took, write
    ``data`` and give the descriptor to ``close(fd, name)``."""
    hold_ = hold
    hold_.depth += 1
    try:
        start = _perf_ns()
        try:
            fd = os.open(path, NEW_FLAGS, 0o666)
        except OSError as exc:
            raise step_error(STEP_CREATE, name, exc)
        note_create(_perf_ns() - start)
        try:
            if mode >= 0:
                os.fchmod(fd, mode)
            if data:
                written = os.write(fd, data)
                while written < len(data):
                    written += os.write(fd, data[written:])
        except OSError as exc:
            os.close(fd)
            raise step_error(STEP_WRITE, name, exc)
        except BaseException:
            os.close(fd)
            raise
        close(fd, name)
    finally:
        hold_.depth -= 1
        if hold_.pending:
            hold_.deliver()
