"""What an accelerated operation did, printed when ``fastio.report`` is set.

Every line starts with ``fastio:`` and goes to stderr, so that scripts parsing
Mercurial's output are not affected.
"""

from mercurial import util

from . import closer, storewriter


class OperationStats:
    def __init__(self, operation):
        self.operation = operation
        self.writer = storewriter.WriterStats()
        self.closer = closer.CloserStats()
        self.elapsed = None
        self.mmap_policy = None


def lines(stats):
    c = stats.closer
    out = [
        b"fastio: %s" % stats.operation,
        b"fastio: files written: %d" % stats.writer.files,
        b"fastio: bytes written: %d (%s)"
        % (stats.writer.bytes, util.bytecount(stats.writer.bytes)),
        b"fastio: closes: %d, in background: %d, threads: %d"
        % (c.closes, c.background, c.threads),
        b"fastio: waiting for closes: %.3f s" % (c.wait_ns / 1e9),
        b"fastio: peak pending closes: %d" % c.peak_pending,
    ]
    if c.median_close_ns is not None:
        out.append(b"fastio: median close: %d us" % (c.median_close_ns // 1000))
    if stats.mmap_policy is not None:
        out.append(b"fastio: mmap policy: %s" % stats.mmap_policy)
    if stats.elapsed is not None:
        out.append(b"fastio: elapsed: %.3f s" % stats.elapsed)
    return out


def emit(ui, settings, stats):
    if not settings.report:
        return
    for line in lines(stats):
        ui.write_err(line + b"\n")
