"""How long ``close()`` takes on a filesystem: a measurement, nothing else.

:func:`measure` creates ``count`` small files in a fresh temporary directory
below ``where``, writes each and times its ``close()`` (the same
``os.open``/``os.write``/``os.close`` the store writer does), then removes
the files and the directory, also when a step fails.  No Mercurial command
code here: ``debugcommands`` and ``autotune`` use it.
"""

import os
import shutil
import tempfile
import time

DEFAULT_COUNT = 256
DEFAULT_SIZE = 4096

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


class ProbeResult:
    """Close times of one probe, in nanoseconds."""

    def __init__(self, samples, elapsed_ns, directory):
        samples = sorted(samples)
        self.count = len(samples)
        self.median_ns = samples[len(samples) // 2]
        self.p90_ns = samples[min(len(samples) - 1, (len(samples) * 9) // 10)]
        self.elapsed_ns = elapsed_ns
        self.directory = directory


def measure(where, count=DEFAULT_COUNT, size=DEFAULT_SIZE):
    """Probe the filesystem of directory ``where`` (a ``str`` or ``bytes``
    path); return a :class:`ProbeResult`."""
    count = max(1, count)
    perf = time.perf_counter_ns
    data = b"\0" * size
    start = perf()
    tmp = tempfile.mkdtemp(prefix=b"fastio-probe-", dir=os.fsencode(where))
    samples = []
    try:
        for i in range(count):
            fd = os.open(os.path.join(tmp, b"f%d" % i), _FLAGS, 0o666)
            try:
                os.write(fd, data)
            except BaseException:
                os.close(fd)
                raise
            before = perf()
            os.close(fd)
            samples.append(perf() - before)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ProbeResult(samples, perf() - start, tmp)
