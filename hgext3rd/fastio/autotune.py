"""Auto mode's memory: the close latency measured on each filesystem.

``.hg/cache/fastio-probe`` holds one line per filesystem (``st_dev``) a
repository writes to: when the close latency was measured, its median and
90th percentile, and how (``probe``: ``hg debugfastio``, the only writer).
It is read only in ``auto`` mode, and an entry is ignored once older than
``fastio.probe-max-age`` or when the directory written to is on another
filesystem.

Nothing is probed implicitly and no operation writes the file: an operation
without a fresh entry samples its own first closes (as the closer always
does) and keeps its decision to itself.
"""

import os
import time

from mercurial import error

CACHE_NAME = b"fastio-probe"
_HEADER = b"fastio-probe 1\n"


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


def load(cachevfs):
    """``{st_dev: Entry}`` from the cache; empty if missing or unreadable."""
    try:
        data = cachevfs.tryread(CACHE_NAME)
    except (IOError, OSError):
        return {}
    if not data.startswith(_HEADER):
        return {}
    entries = {}
    for line in data[len(_HEADER) :].splitlines():
        fields = line.split()
        try:
            dev, when, median, p90 = (int(f) for f in fields[:4])
            source = fields[4]
        except (ValueError, IndexError):
            continue
        entries[dev] = Entry(dev, when, median, p90, source)
    return entries


def store(cachevfs, entry):
    """Add or replace ``entry``; a failure to write is not an error."""
    entries = load(cachevfs)
    entries[entry.dev] = entry
    data = _HEADER + b"".join(e.line() for __, e in sorted(entries.items()))
    try:
        with cachevfs(CACHE_NAME, b"wb", atomictemp=True) as fp:
            fp.write(data)
    except (IOError, OSError, error.Abort):
        return False
    return True


class Tuning:
    """What auto mode knows about closes into directory ``path``, whose
    repository caches in ``cachevfs``."""

    def __init__(self, ui, cachevfs, path, max_age_s, now=None):
        self._ui = ui
        self._cachevfs = cachevfs
        self._max_age_s = max_age_s
        self.now = int(time.time()) if now is None else now
        self.dev = device(path)
        self.entry = None
        if self.dev is not None:
            entry = load(cachevfs).get(self.dev)
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
        if not store(self._cachevfs, entry):
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
