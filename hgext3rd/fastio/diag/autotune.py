"""Auto mode's memory: the close latency measured on each filesystem.

``.hg/fastio-probe`` holds one line per filesystem (``st_dev``) a
repository writes to: when the close latency was measured, its median and
90th percentile, and how (``probe``: ``hg debugfastio``, the only writer).
It is read only in ``auto`` mode, and an entry is ignored once older than
``fastio.probe-max-age`` or when the directory written to is on another
filesystem.

Written by whom, trusted for what: the file is in ``.hg`` itself, where no
stream, bundle or pull writes (a stream writes the store and
``.hg/cache``, where earlier releases kept this file: that copy is never
read).  What is read is only a starting point for auto mode (threads or
not, before the operation's own samples decide), and an entry out of range
(a latency above a minute, a 90th percentile below the median, a time in
the future, another source) is ignored with a debug line.

Nothing is probed implicitly and no operation writes the file: an operation
without a fresh entry samples its own first closes (as the closer always
does) and keeps its decision to itself.
"""

import os
import time

from mercurial import error

CACHE_NAME = b"fastio-probe"
_HEADER = b"fastio-probe 1\n"
# what an entry may say: a latency a filesystem can have, written by
# ``hg debugfastio``
_MAX_LATENCY_NS = 60 * 10**9
_SOURCES = (b"probe",)


def device(path):
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


class Entry:
    def __init__(self, dev, when, median_ns, p90_ns, source):
        self.dev = dev
        self.when = when
        self.median_ns = median_ns
        self.p90_ns = p90_ns
        self.source = source

    def line(self):
        return b"%d %d %d %d %s\n" % (
            self.dev,
            self.when,
            self.median_ns,
            self.p90_ns,
            self.source,
        )


def load(repovfs, ui=None):
    """``{st_dev: Entry}`` from the file; empty if missing or unreadable.
    Lines out of range are left out (a debug line on ``ui`` says so)."""
    try:
        data = repovfs.tryread(CACHE_NAME)
    except (IOError, OSError):
        return {}
    if not data:
        return {}
    if not data.startswith(_HEADER):
        _ignored(ui, b"not a probe cache")
        return {}
    entries = {}
    for line in data[len(_HEADER) :].splitlines():
        entry = _parse(line)
        if entry is None:
            _ignored(ui, b"an entry out of range")
            continue
        entries[entry.dev] = entry
    return entries


def _parse(line):
    fields = line.split()
    if len(fields) != 5:
        return None
    try:
        dev, when, median, p90 = (int(f) for f in fields[:4])
    except ValueError:
        return None
    if (
        dev < 0
        or when < 0
        or not 0 <= median <= p90 <= _MAX_LATENCY_NS
        or fields[4] not in _SOURCES
    ):
        return None
    return Entry(dev, when, median, p90, fields[4])


def _ignored(ui, why):
    if ui is not None:
        ui.debug(b"fastio: .hg/%s ignored: %s\n" % (CACHE_NAME, why))


def store(repovfs, entry):
    """Add or replace ``entry``; a failure to write is not an error."""
    entries = load(repovfs)
    entries[entry.dev] = entry
    data = _HEADER + b"".join(e.line() for __, e in sorted(entries.items()))
    try:
        with repovfs(CACHE_NAME, b"wb", atomictemp=True) as fp:
            fp.write(data)
    except (IOError, OSError, error.Abort):
        return False
    return True


class Tuning:
    """What auto mode knows about closes into directory ``path``, whose
    repository's ``.hg`` is ``repovfs``."""

    def __init__(self, ui, repovfs, path, max_age_s, now=None):
        self._ui = ui
        self._repovfs = repovfs
        self._max_age_s = max_age_s
        self.now = int(time.time()) if now is None else now
        self.dev = device(path)
        self.entry = None
        if self.dev is not None:
            entry = load(repovfs, ui).get(self.dev)
            if entry is not None and self.fresh(entry):
                self.entry = entry
        if self.entry is not None:
            ui.debug(
                b"fastio: close latency of this filesystem: %d us (%s, %s ago)\n"
                % (
                    self.entry.median_ns // 1000,
                    self.entry.source,
                    describe_age(self.now - self.entry.when),
                )
            )
        # nothing said otherwise: Mercurial's own --debug output is unchanged

    def fresh(self, entry):
        return 0 <= self.now - entry.when <= self._max_age_s

    @property
    def initial_latency_ns(self):
        return None if self.entry is None else self.entry.median_ns

    def remember(self, median_ns, p90_ns, source):
        """Store a measurement (of ``hg debugfastio``: ``source`` is
        ``probe``), replacing this filesystem's."""
        if self.dev is None:
            return False
        entry = Entry(self.dev, self.now, median_ns, p90_ns, source)
        if not store(self._repovfs, entry):
            return False
        self.entry = entry
        self._ui.debug(
            b"fastio: cached close latency %d us (%s) for this filesystem\n"
            % (median_ns // 1000, source)
        )
        return True


def describe_age(seconds):
    for unit, size in ((b"d", 86400), (b"h", 3600), (b"m", 60)):
        if seconds >= size:
            return b"%d%s" % (seconds // size, unit)
    return b"%ds" % max(0, seconds)
