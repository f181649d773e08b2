"""The ``[fastio]`` configuration: one reader for it all.

The bottom layer: it defines the values the options take, reads the
options and checks them, and builds nothing; the mechanisms import it,
never the reverse.

The options are registered in the package's ``__init__`` (Mercurial reads
its ``configtable`` at load) and documented in the extension's help
(``hg help -e fastio``); keep the three in step.
"""

import math

from mercurial import error
from mercurial.i18n import _

from . import MMAP_POLICIES

SECTION = b"fastio"

# The values the options take, defined here once: the mechanisms import
# them from here (config is the bottom layer: it imports none of them).

# fastio.background-write: the file writer's modes (writer/filewriter)
MODE_AUTO = b"auto"
MODE_ALWAYS = b"always"
MODE_NEVER = b"never"
# what each accepted spelling means
MODE_NAMES = {
    b"auto": MODE_AUTO,
    b"always": MODE_ALWAYS,
    b"yes": MODE_ALWAYS,
    b"on": MODE_ALWAYS,
    b"true": MODE_ALWAYS,
    b"never": MODE_NEVER,
    b"no": MODE_NEVER,
    b"off": MODE_NEVER,
    b"false": MODE_NEVER,
}

# devel.fastio.durable-method: how txn/durable flushes
DURABLE_AUTO = b"auto"
DURABLE_SYNCFS = b"syncfs"
DURABLE_FSYNC = b"fsync"
DURABLE_METHODS = (DURABLE_AUTO, DURABLE_SYNCFS, DURABLE_FSYNC)

# fastio.mmap-populate: the population policies (mmap/mmappolicy)
# (defined in __init__: every command maps its small mappings there)
MMAP_AUTO, MMAP_BACKGROUND, MMAP_ALWAYS, MMAP_NEVER = MMAP_POLICIES

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


def parse_duration_ns(value, option=b"slow-file-threshold"):
    """``b'50us'`` -> 50000; a bare number is microseconds."""
    return _parse_duration(value, _UNITS, 1000, option)


def parse_timeout_s(value, option=b"pending-timeout"):
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
MAX_PENDING_FILES = 65536
# files timed for one decision (a median of more says nothing new)
MAX_FILE_SAMPLE = 1024
# the floor the blocks always had (stock reads bundles up to 64 KiB a call)
MIN_BUFFER_SIZE = 64 * 1024
# a read or write buffer is allocated whole, and a changegroup's reading
# thread keeps up to 32 blocks ahead
MAX_BUFFER = 64 * 1024 * 1024
MAX_MEMORY_BUDGET = 1 << 40
# the population thread's nice value cannot go above 19
MAX_THREAD_NICE = 19


# Options renamed once threads came to write files, not only close them:
# the old name of each still works (the registrar's alias) and names the
# option in what is said of it when that is the one set.
OLD_NAMES = {
    b"background-write": b"background-close",
    b"slow-file-threshold": b"slow-close-threshold",
    b"file-sample": b"close-sample",
    b"write-threads": b"close-threads",
    b"max-write-threads": b"max-close-threads",
    b"max-pending-files": b"max-pending-closes",
    b"pending-timeout": b"close-timeout",
}


def set_as(ui, name, section=SECTION):
    """The name option ``name`` is set under (its own, or its old name), or
    None when it is not set."""
    if ui.hasconfig(section, name):
        return name
    old = OLD_NAMES.get(name) if section == SECTION else None
    if old is not None and ui.hasconfig(section, old):
        return old
    return None


def option_name(ui, name, section=SECTION):
    """The name to say option ``name`` by: the one it is set under."""
    return set_as(ui, name, section) or name


def _bounded(ui, name, value, lowest, highest, text, section=SECTION):
    """``value`` of option ``name``: refused below ``lowest``, at most
    ``highest`` (None: no bound); ``text`` spells ``lowest``."""
    if value < lowest:
        raise error.Abort(
            _(b"%s.%s must be %s or more, not %s")
            % (section, option_name(ui, name, section), text, ui.config(section, name))
        )
    return value if highest is None else min(value, highest)


def _count(ui, name, lowest, highest, section=SECTION):
    """Integer option ``name``: refused below ``lowest``, at most
    ``highest``."""
    value = ui.configint(section, name)
    return _bounded(ui, name, value, lowest, highest, b"%d" % lowest, section)


def _size(ui, name, lowest, highest=None):
    """Byte size option ``name``: refused below ``lowest``, at most
    ``highest`` (None: no bound)."""
    value = ui.configbytes(SECTION, name)
    return _bounded(ui, name, value, lowest, highest, _size_text(lowest))


def _size_text(size):
    for unit, scale in ((b"MB", 1 << 20), (b"KB", 1 << 10)):
        if size and size % scale == 0:
            return b"%d%s" % (size // scale, unit)
    return b"%d" % size


class Settings:
    """The effective ``[fastio]`` settings of one ui, read once."""

    def __init__(self, ui):
        mode = ui.config(SECTION, b"background-write").lower()
        if mode not in MODE_NAMES:
            raise error.ConfigError(
                _(b"fastio.%s must be auto, always or never, not %s")
                % (option_name(ui, b"background-write"), mode)
            )
        self.write_mode = MODE_NAMES[mode]
        self.threshold_ns = parse_duration_ns(
            ui.config(SECTION, b"slow-file-threshold"),
            option_name(ui, b"slow-file-threshold"),
        )
        # each thread holds a descriptor while it writes a file: the
        # threads are bounded by the pending files
        self.max_pending = _count(ui, b"max-pending-files", 1, MAX_PENDING_FILES)
        self.write_threads = _count(ui, b"write-threads", 0, self.max_pending)
        self.max_write_threads = _count(ui, b"max-write-threads", 1, self.max_pending)
        self.file_sample = _count(ui, b"file-sample", 1, MAX_FILE_SAMPLE)
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
        if self.durable_method not in DURABLE_METHODS:
            raise error.ConfigError(
                _(b"devel.fastio.durable-method must be auto, syncfs or fsync")
            )
        self.report = ui.configbool(SECTION, b"report")
        self.probe_max_age_s = parse_age_s(ui.config(SECTION, b"probe-max-age"))
        # (the C pool counts the budget in a Py_ssize_t)
        self.memory_budget = _size(ui, b"memory-budget", 1, MAX_MEMORY_BUDGET)
        self.pending_timeout_s = parse_timeout_s(
            ui.config(SECTION, b"pending-timeout"), option_name(ui, b"pending-timeout")
        )
        # read again by the mmap policy at a mapping, which may come inside
        # a transaction: an apply refuses a wrong value before it begins
        self.mmap_populate_threshold = mmap_populate_threshold(ui)
        self.mmap_thread_nice = mmap_thread_nice(ui)
        # stock's own switch, set explicitly and fastio's mode not: honoured
        # as stock does (threads for any operation of enough files); a
        # ``(threads, minfilecount)`` pair
        self.stock_close = None
        if ui.hasconfig(b"worker", b"backgroundclose") and not set_as(
            ui, b"background-write"
        ):
            if ui.configbool(b"worker", b"backgroundclose", False):
                self.stock_close = (
                    max(1, ui.configint(b"worker", b"backgroundclosethreadcount")),
                    ui.configint(b"worker", b"backgroundcloseminfilecount"),
                )
            else:
                self.write_mode = MODE_NEVER


def settings(ui):
    return Settings(ui)


def mmap_populate(ui):
    """The population policy ``fastio.mmap-populate`` asks for (one of
    ``MMAP_POLICIES``)."""
    requested = ui.config(SECTION, b"mmap-populate").strip().lower()
    if requested not in MMAP_POLICIES:
        raise error.ConfigError(
            _(b"fastio.mmap-populate must be auto, always, never or background, not %s")
            % requested
        )
    return requested


def mmap_helper(ui):
    """``devel.fastio.mmap-helper``: how the population helper is forced
    (``auto``: not at all)."""
    return ui.config(b"devel", b"fastio.mmap-helper").strip().lower()


def mmap_populate_threshold(ui):
    return _size(ui, b"mmap-populate-threshold", 0)


def mmap_thread_nice(ui):
    return _count(ui, b"fastio.mmap-thread-nice", 0, MAX_THREAD_NICE, section=b"devel")
