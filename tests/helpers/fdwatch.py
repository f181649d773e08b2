"""A Mercurial extension for the resource tests: a thread counts the
process' open descriptors (/proc/self/fd) every millisecond; at exit the
peak and the peak RSS (KiB) go to $FASTIO_FDWATCH as "PEAK_FDS MAXRSS"."""

import atexit
import os
import resource
import threading

_peak = [0]


def _watch():
    while True:
        try:
            n = len(os.listdir("/proc/self/fd")) - 1  # listdir's own
        except OSError:
            n = 0
        if n > _peak[0]:
            _peak[0] = n
        threading.Event().wait(0.001)


def _report():
    with open(os.environ["FASTIO_FDWATCH"], "w") as f:
        f.write(
            "%d %d\n" % (_peak[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        )


def uisetup(ui):
    if os.environ.get("FASTIO_FDWATCH"):
        threading.Thread(target=_watch, daemon=True).start()
        atexit.register(_report)
