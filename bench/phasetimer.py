"""Bench-only extension: where a clone's or an update's time goes.

Appends ``PHASE SECONDS CALLS`` lines to $FASTIO_BENCH_PHASES when the
command ends (wall time of the main thread in each phase; nested phases
are included in their parents):

  pull            exchange.pull (the clone's data: clone bundle and pull)
  clonebundle     exchange._maybeapplyclonebundle (fetch + apply)
  stream-apply    streamclone.applybundlev2 (the stream, read as applied)
  checkout        merge._update (hg clone's checkout, hg update)
  calculate       merge.calculateupdates (the actions)
  prefetch        update._prefetchfiles
  apply-updates   update.apply_updates (the files written: workers)
  recordupdates   mergestate.recordupdates (the dirstate entries)
  dirstate-write  dirstate.write

Loaded for stock and fastio alike (``--config
extensions.phasetimer=bench/phasetimer.py``); used for the profiles of
issue 24.
"""

import atexit
import os
import time

from mercurial import (
    dirstate,
    exchange,
    extensions,
    merge,
    mergestate,
    streamclone,
)
from mercurial.merge_utils import update

PHASES = [
    ("pull", exchange, "pull"),
    ("clonebundle", exchange, "_maybeapplyclonebundle"),
    ("stream-apply", streamclone, "applybundlev2"),
    ("checkout", merge, "_update"),
    ("calculate", merge, "calculateupdates"),
    ("prefetch", update, "_prefetchfiles"),
    ("apply-updates", update, "apply_updates"),
    ("recordupdates", mergestate, "recordupdates"),
    ("dirstate-write", dirstate.dirstate, "write"),
]

_totals = {}
_pid = os.getpid()


def _timer(name):
    def timed(orig, *args, **kwargs):
        start = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            spent, calls = _totals.get(name, (0.0, 0))
            _totals[name] = (spent + time.perf_counter() - start, calls + 1)

    return timed


def _report():
    path = os.environ.get("FASTIO_BENCH_PHASES")
    if path and os.getpid() == _pid:
        with open(path, "a") as f:
            for name, __, __ in PHASES:
                if name in _totals:
                    f.write("%s %.6f %d\n" % ((name,) + _totals[name]))


def uisetup(ui):
    for name, owner, attr in PHASES:
        extensions.wrapfunction(owner, attr, _timer(name))
    atexit.register(_report)
