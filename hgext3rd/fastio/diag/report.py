"""What an accelerated operation did, printed when ``fastio.report`` is set.

Every line starts with ``fastio:`` and goes to stderr, so that scripts parsing
Mercurial's output are not affected.
"""

from mercurial import util
from mercurial.utils import stringutil

from .. import compat
from ..writer import filewriter
from ..mmap import mmappolicy


class WriterStats:
    """Files and bytes an operation wrote."""

    def __init__(self):
        self.files = 0
        self.bytes = 0


class OperationStats:
    def __init__(self, operation, svfs=None):
        self.operation = operation
        self.writer = WriterStats()
        self.filewriter = filewriter.FileWriterStats()
        self.elapsed = None
        self.svfs = svfs
        self.ahead = None  # a changegroup's precompress.CompressAhead


def mmap_policy(svfs):
    """Which revlog indexes Mercurial maps in a store (the extension's
    policy decides only how mappings are populated), and the option, under
    its name in the running release, that says so."""
    found = compat.mmap_index_threshold(svfs)
    if found is None:
        return None
    (threshold,) = found
    option = compat.mmap_index_option()
    if threshold is None:
        return b"none (Mercurial's %s is off)" % option
    return b"Mercurial's, revlog indexes of %s or more (%s)" % (
        util.bytecount(threshold),
        option,
    )


def lines(stats):
    c = stats.filewriter
    out = [
        b"fastio: %s" % stats.operation,
        b"fastio: files written: %d" % stats.writer.files,
        b"fastio: bytes written: %d (%s)"
        % (stats.writer.bytes, util.bytecount(stats.writer.bytes)),
        b"fastio: closes: %d, in background: %d, threads: %d"
        % (c.closes, c.background, c.threads),
        b"fastio: waiting for closes: %.3f s" % (c.wait_ns / 1e9),
        b"fastio: peak pending files: %d (to make or to close; at most %d,"
        b" holding a descriptor at most %d)"
        % (c.peak_pending, max(c.pending_bound, c.max_pending), c.max_pending),
    ]
    if c.decision is not None:
        out.append(b"fastio: closing: %s" % c.decision)
    if c.median_close_ns is not None:
        out.append(b"fastio: median close: %d us" % (c.median_close_ns // 1000))
    ahead = stats.ahead
    if ahead is not None and ahead.made:
        line = (
            b"fastio: compressed ahead: %d revisions, %d taken, %d compressed on the"
            b" applying thread" % (ahead.made, ahead.hits, ahead.misses)
        )
        if ahead.failure is not None:
            # (the guessing stopped there; the apply went on as stock's)
            line += b" (stopped: %s)" % stringutil.forcebytestr(ahead.failure)
        out.append(line)
    policy = mmap_policy(stats.svfs)
    if policy is not None:
        out.append(b"fastio: mmap policy: %s" % policy)
    # the policy is read when the report is asked for, not by every apply
    from ..mmap import sessions

    out.extend(mmap_population_lines(sessions.session()))
    if stats.elapsed is not None:
        out.append(b"fastio: elapsed: %.3f s" % stats.elapsed)
    return out


def mmap_population_lines(session):
    """The population policy of the command so far, and what it did (jobs
    still running are counted once they end, in the --debug summary)."""
    if session is None:
        return []
    running = session.running()
    out = [b"fastio: mmap populate: %s" % session.policy.describe()]
    if session.stats.mappings:
        line = b"fastio: mmap population: %s" % mmappolicy.summary(session)
        if running:
            line += b", %d still populating" % running
        out.append(line)
    return out


def emit(ui, settings, stats):
    if not settings.report:
        return
    for line in lines(stats):
        ui.write_err(line + b"\n")
