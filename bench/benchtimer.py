"""Bench-only extension: time the command body, start-up excluded.

Appends the seconds spent in the command to $FASTIO_BENCH_TIMES.  Loaded for
stock and fastio runs alike, so both are measured the same way.
"""

import os
import time

from mercurial import dispatch, extensions


def _timed(orig, *args, **kwargs):
    start = time.perf_counter()
    try:
        return orig(*args, **kwargs)
    finally:
        path = os.environ.get("FASTIO_BENCH_TIMES")
        if path:
            with open(path, "a") as f:
                f.write("%.6f\n" % (time.perf_counter() - start))


def extsetup(ui):
    extensions.wrapfunction(dispatch, "_runcommand", _timed)
