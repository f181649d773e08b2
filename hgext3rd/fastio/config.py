"""The ``[fastio]`` configuration: one reader for it all.

The options are registered in the package's ``__init__`` (Mercurial reads
its ``configtable`` at load) and documented in the extension's help
(``hg help -e fastio``); keep the three in step.
"""

import math

from mercurial import error
from mercurial.i18n import _

SECTION = b"fastio"

# the file writer's modes (filewriter.MODE_*: spelled out here so that
# reading the configuration does not load the writer)
_MODES = {
    b"auto": b"auto",
    b"always": b"always",
    b"yes": b"always",
    b"on": b"always",
    b"true": b"always",
    b"never": b"never",
    b"no": b"never",
    b"off": b"never",
    b"false": b"never",
}

# durable.METHOD_* (spelled out: reading the configuration loads no more)
_DURABLE_METHODS = (b"auto", b"syncfs", b"fsync")

_UNITS = (
    (b"ns", 1),
    (b"us", 1000),
    (b"ms", 1000 * 1000),
    (b"s", 1000 * 1000 * 1000),
)


_AGE_UNITS = (
    (b"s", 1),
    (b"m", 60),
    (b"h", 3600),
    (b"d", 86400),
)


def parse_duration_ns(value, option=b"slow-close-threshold"):
    """``b'50us'`` -> 50000; a bare number is microseconds."""
    return _parse_duration(value, _UNITS, 1000, option)


def parse_timeout_s(value, option=b"close-timeout"):
    """``b'5s'`` -> 5.0; a bare number is seconds."""
    return _parse_duration(value, _UNITS, 10**9, option) / 1e9


def parse_age_s(value, option=b"probe-max-age"):
    """``b'7d'`` -> 604800; a bare number is days."""
    return _parse_duration(value, _AGE_UNITS, 86400, option)


def _parse_duration(value, units, bare_scale, option):
    text = value.strip().lower()
    for suffix, scale in sorted(units, key=lambda u: -len(u[0])):
        if text.endswith(suffix) and text[: -len(suffix)].strip():
            number = text[: -len(suffix)].strip()
            break
    else:
        number, scale = text, bare_scale
    try:
        amount = float(number) * scale
    except ValueError:
        amount = None
    # (float() takes "inf" and "nan", which int() and the waits do not)
    if amount is None or not math.isfinite(amount):
        raise error.ConfigError(_(b"fastio.%s is not a duration: %s") % (option, value))
    if amount < 0:
        raise error.Abort(_(b"fastio.%s must be 0 or more, not %s") % (option, value))
    return int(amount)


# The ranges of the numeric options (documented in the extension's help):
# a value below its range is refused, one above it taken as its largest.
# pending files: their ring in the C pool takes memory for each
MAX_PENDING_CLOSES = 65536
# closes timed for one decision (a median of more says nothing new)
MAX_CLOSE_SAMPLE = 1024
# the floor the blocks always had (stock reads bundles up to 64 KiB a call)
MIN_BUFFER_SIZE = 64 * 1024
# a read or write buffer is allocated whole, and a changegroup's reading
# thread keeps up to 32 blocks ahead
MAX_BUFFER = 64 * 1024 * 1024
MAX_MEMORY_BUDGET = 1 << 40
# the population thread's nice value cannot go above 19
MAX_THREAD_NICE = 19


def _count(ui, name, lowest, highest, section=SECTION):
    """Integer option ``name``: refused below ``lowest``, at most
    ``highest``."""
    value = ui.configint(section, name)
    if value < lowest:
        raise error.Abort(
            _(b"%s.%s must be %d or more, not %s")
            % (section, name, lowest, ui.config(section, name))
        )
    return min(value, highest)


def _size(ui, name, lowest, highest=None):
    """Byte size option ``name``: refused below ``lowest``, at most
    ``highest`` (None: no bound)."""
    value = ui.configbytes(SECTION, name)
    if value < lowest:
        raise error.Abort(
            _(b"%s.%s must be %s or more, not %s")
            % (SECTION, name, _size_text(lowest), ui.config(SECTION, name))
        )
    return value if highest is None else min(value, highest)


def _size_text(size):
    for unit, scale in ((b"MB", 1 << 20), (b"KB", 1 << 10)):
        if size and size % scale == 0:
            return b"%d%s" % (size // scale, unit)
    return b"%d" % size


class Settings:
    """The effective ``[fastio]`` settings of one ui, read once."""

    def __init__(self, ui):
        mode = ui.config(SECTION, b"background-close").lower()
        if mode not in _MODES:
            raise error.ConfigError(
                _(b"fastio.background-close must be auto, always or never," b" not %s")
                % mode
            )
        self.close_mode = _MODES[mode]
        self.threshold_ns = parse_duration_ns(
            ui.config(SECTION, b"slow-close-threshold")
        )
        # each thread holds a descriptor while it writes a file: the
        # threads are bounded by the pending files
        self.max_pending = _count(ui, b"max-pending-closes", 1, MAX_PENDING_CLOSES)
        self.close_threads = _count(ui, b"close-threads", 0, self.max_pending)
        self.max_close_threads = _count(ui, b"max-close-threads", 1, self.max_pending)
        self.close_sample = _count(ui, b"close-sample", 1, MAX_CLOSE_SAMPLE)
        self.buffer_size = _size(ui, b"buffer-size", MIN_BUFFER_SIZE, MAX_BUFFER)
        # 0: bundle files are read and written as stock does
        self.read_buffer = _size(ui, b"read-buffer", 0, MAX_BUFFER)
        self.write_buffer = _size(ui, b"write-buffer", 0, MAX_BUFFER)
        self.stream_writer = ui.configbool(SECTION, b"stream-writer")
        self.durable = ui.configbool(SECTION, b"durable")
        self.compress_ahead = ui.configbool(SECTION, b"compress-ahead")
        self.small_applies = ui.configbool(b"devel", b"fastio.small-applies")
        self.durable_method = (
            ui.config(b"devel", b"fastio.durable-method").strip().lower()
        )
        if self.durable_method not in _DURABLE_METHODS:
            raise error.ConfigError(
                _(b"devel.fastio.durable-method must be auto, syncfs or fsync")
            )
        self.report = ui.configbool(SECTION, b"report")
        self.probe_max_age_s = parse_age_s(ui.config(SECTION, b"probe-max-age"))
        # (the C pool counts the budget in a Py_ssize_t)
        self.memory_budget = _size(ui, b"memory-budget", 1, MAX_MEMORY_BUDGET)
        self.close_timeout_s = parse_timeout_s(ui.config(SECTION, b"close-timeout"))
        # read again by mmap_policy at a mapping, which may come inside a
        # transaction: an apply refuses a wrong value before it begins
        self.mmap_populate_threshold = _mmap_populate_threshold(ui)
        self.mmap_thread_nice = _mmap_thread_nice(ui)
        # stock's own switch, set explicitly and fastio's mode not: honoured
        # as stock does (threads for any operation of enough files)
        self.stock_close = None
        if ui.hasconfig(b"worker", b"backgroundclose") and not ui.hasconfig(
            SECTION, b"background-close"
        ):
            if ui.configbool(b"worker", b"backgroundclose", False):
                self.stock_close = (
                    max(1, ui.configint(b"worker", b"backgroundclosethreadcount")),
                    ui.configint(b"worker", b"backgroundcloseminfilecount"),
                )
            else:
                self.close_mode = _MODES[b"never"]

    def tuning(self, ui, repovfs, path):
        """Auto mode's cached latency for closes into ``path``, or None
        (not auto mode, cache disabled, or no repository)."""
        if (
            self.close_mode != _MODES[b"auto"]
            or not self.probe_max_age_s
            or repovfs is None
        ):
            return None
        from .diag import autotune

        return autotune.Tuning(ui, repovfs, path, self.probe_max_age_s)

    def make_file_writer(
        self, ui, stats=None, tuning=None, expectedcount=-1, destinations=1
    ):
        """The file writer of an operation writing ``expectedcount`` files
        (-1: unknown) into ``destinations`` vfs (stock starts a closer, and
        says so under --debug, for each); ``tuning`` is auto mode's cache."""
        from .writer import filewriter

        mode, threads = self.close_mode, self.close_threads
        if self.stock_close is not None:
            tuning = None
            threads, minfilecount = self.stock_close
            if 0 < expectedcount < minfilecount:
                mode = filewriter.MODE_NEVER
            else:
                mode = filewriter.MODE_ALWAYS
                for __ in range(destinations):
                    ui.debug(
                        b"starting %d threads for background file closing\n" % threads
                    )
        return filewriter.FileWriter(
            ui=ui,
            mode=mode,
            threshold_ns=self.threshold_ns,
            threads=threads,
            max_threads=self.max_close_threads,
            max_pending=self.max_pending,
            window=self.close_sample,
            stats=stats,
            initial_latency_ns=tuning and tuning.initial_latency_ns,
            close_timeout=self.close_timeout_s,
            budget=self.memory_budget,
        )


def settings(ui):
    return Settings(ui)


def mmap_policy(ui):
    """The mmap population policy ``ui`` asks for (see ``mmappolicy``)."""
    from .mmap import mmappolicy

    requested = ui.config(SECTION, b"mmap-populate").strip().lower()
    if requested not in mmappolicy.POLICIES:
        raise error.ConfigError(
            _(b"fastio.mmap-populate must be auto, always, never or background, not %s")
            % requested
        )
    helper = ui.config(b"devel", b"fastio.mmap-helper").strip().lower()
    policy = mmappolicy.Policy(
        requested,
        _mmap_populate_threshold(ui),
        mmappolicy.HELPER_CHOICES.get(helper, 0),
    )
    policy.thread_nice = _mmap_thread_nice(ui)
    return policy


def _mmap_populate_threshold(ui):
    return _size(ui, b"mmap-populate-threshold", 0)


def _mmap_thread_nice(ui):
    return _count(ui, b"fastio.mmap-thread-nice", 0, MAX_THREAD_NICE, section=b"devel")
