"""How long creating and closing a file take on a filesystem: a
measurement, nothing else.

:func:`measure` creates ``count`` small files in a fresh temporary directory
below ``where``, writes each and times its ``open()`` and ``close()`` (the same
``os.open``/``os.write``/``os.close`` the store writer does), then removes
the files and the directory, also when a step fails.  No Mercurial command
code here: ``debugfastio`` and ``autotune`` use it.
"""

import os
import shutil
import tempfile
import time

DEFAULT_SIZE = 4096

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


class ProbeResult:
    """Create and close times of one probe, in nanoseconds."""

    def __init__(self, closes, creates, elapsed_ns, directory):
        self.count = len(closes)
        self.median_ns, self.p90_ns = _median_p90(closes)
        self.create_median_ns, self.create_p90_ns = _median_p90(creates)
        self.elapsed_ns = elapsed_ns
        self.directory = directory

    @property
    def slower_median_ns(self):
        """What auto mode decides from: the slower of creates and closes."""
        return max(self.median_ns, self.create_median_ns)


def _median_p90(samples):
    samples = sorted(samples)
    return (
        samples[len(samples) // 2],
        samples[min(len(samples) - 1, (len(samples) * 9) // 10)],
    )


def measure(where, count, size=DEFAULT_SIZE):
    """Probe the filesystem of directory ``where`` (a ``str`` or ``bytes``
    path); return a :class:`ProbeResult`."""
    count = max(1, count)
    perf = time.perf_counter_ns
    data = b"\0" * size
    start = perf()
    tmp = tempfile.mkdtemp(prefix=b"fastio-probe-", dir=os.fsencode(where))
    closes = []
    creates = []
    try:
        for i in range(count):
            path = os.path.join(tmp, b"f%d" % i)
            before = perf()
            fd = os.open(path, _FLAGS, 0o666)
            creates.append(perf() - before)
            try:
                os.write(fd, data)
            except BaseException:
                os.close(fd)
                raise
            before = perf()
            os.close(fd)
            closes.append(perf() - before)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ProbeResult(closes, creates, perf() - start, tmp)
