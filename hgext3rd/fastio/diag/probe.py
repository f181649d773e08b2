"""How long creating and closing a file take on a filesystem: a
measurement, nothing else.

:func:`measure` creates ``count`` small files in a fresh temporary directory
below ``where``, writes each and times its create and ``close()`` (the same
create (``writer.newfile``), ``os.write`` and ``os.close`` the store writer
does), then removes the files and the directory, also when a step fails.
No Mercurial command code here: ``debugfastio`` and ``autotune`` use it.
"""

import os
import shutil
import tempfile
import time

from ..writer import newfile

DEFAULT_SIZE = 4096


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


def _write_close(fd, probe):
    """The hand-over of a probe's file (it owns ``fd``): the create timed,
    the file written and closed, the close timed."""
    data, start, creates, closes = probe
    perf = time.perf_counter_ns
    creates.append(perf() - start)
    try:
        os.write(fd, data)
    except BaseException:
        os.close(fd)
        raise
    before = perf()
    os.close(fd)
    closes.append(perf() - before)


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
            newfile.create(
                path,
                newfile.FLAGS,
                -1,
                _write_close,
                None,
                (data, perf(), creates, closes),
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ProbeResult(closes, creates, perf() - start, tmp)
