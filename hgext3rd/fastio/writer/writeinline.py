"""Writing files on the applying thread: a :class:`~.filewriter.FileWriter`
starts so (auto mode times these steps to decide whether threads pay), and
stays so with ``fastio.background-write=never``.

A new file is created by :mod:`.newfile` (given its mode), written and
handed to the writer's ``close``; the signals of :mod:`.signals` are held
from the open to that hand-over.  Every failure raises at once, as an ``Abort``
naming the file.
"""

import os
import time

from mercurial import util

from .newfile import FLAGS, create
from .writestrategy import STEP_CREATE, STEP_MKDIR, STEP_WRITE, step_error

_perf_ns = time.perf_counter_ns


def make_dirs(dirs):
    """Make ``dirs`` (``(path, mode)``, outermost first)."""
    for path, mode in dirs:
        try:
            try:
                util.makedir(path, True)
            except FileExistsError:
                # made meanwhile by someone else (another worker of a
                # parallel apply): a directory is all it takes, as in the
                # C pool
                if not os.path.isdir(path):
                    raise
            if mode >= 0:
                os.chmod(path, mode)
        except OSError as exc:
            raise step_error(STEP_MKDIR, path, exc)


def write_file(path, data, mode, name, note_create, close):
    """Create ``path``, tell ``note_create`` how long that took, write
    ``data`` and give the descriptor to ``close(fd, name)``."""
    task = (data, name, note_create, close, _perf_ns())
    create(path, FLAGS, mode, _write, _create_failed, task)


def _create_failed(exc, task):
    return step_error(STEP_CREATE, task[1], exc)


def _write(fd, task):
    """The hand-over of :func:`write_file` (it owns ``fd``)."""
    data, name, note_create, close, start = task
    note_create(_perf_ns() - start)
    try:
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
