"""The ``[fastio]`` configuration: one reader for it all.

The options are registered in the package's ``__init__`` (Mercurial reads
its ``configtable`` at load) and documented in the extension's help
(``hg help -e fastio``); keep the three in step.
"""

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
        return int(float(number) * scale)
    except ValueError:
        raise error.ConfigError(_(b"fastio.%s is not a duration: %s") % (option, value))


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
        self.close_threads = max(0, ui.configint(SECTION, b"close-threads"))
        self.max_close_threads = max(1, ui.configint(SECTION, b"max-close-threads"))
        self.max_pending = max(1, ui.configint(SECTION, b"max-pending-closes"))
        self.close_sample = max(2, ui.configint(SECTION, b"close-sample"))
        self.buffer_size = max(64 * 1024, ui.configbytes(SECTION, b"buffer-size"))
        # 0: bundle files are read and written as stock does
        self.read_buffer = max(0, ui.configbytes(SECTION, b"read-buffer"))
        self.write_buffer = max(0, ui.configbytes(SECTION, b"write-buffer"))
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
        self.probe_max_age_s = max(0, parse_age_s(ui.config(SECTION, b"probe-max-age")))
        self.memory_budget = max(1 << 20, ui.configbytes(SECTION, b"memory-budget"))
        self.close_timeout_s = max(
            0.0, parse_timeout_s(ui.config(SECTION, b"close-timeout"))
        )
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
        from . import autotune

        return autotune.Tuning(ui, repovfs, path, self.probe_max_age_s)

    def make_file_writer(
        self, ui, stats=None, tuning=None, expectedcount=-1, destinations=1
    ):
        """The file writer of an operation writing ``expectedcount`` files
        (-1: unknown) into ``destinations`` vfs (stock starts a closer, and
        says so under --debug, for each); ``tuning`` is auto mode's cache."""
        from . import filewriter

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
    from . import mmappolicy

    requested = ui.config(SECTION, b"mmap-populate").strip().lower()
    if requested not in mmappolicy.POLICIES:
        raise error.ConfigError(
            _(b"fastio.mmap-populate must be auto, always, never or background, not %s")
            % requested
        )
    helper = ui.config(b"devel", b"fastio.mmap-helper").strip().lower()
    policy = mmappolicy.Policy(
        requested,
        ui.configbytes(SECTION, b"mmap-populate-threshold"),
        mmappolicy.HELPER_CHOICES.get(helper, 0),
    )
    policy.thread_nice = ui.configint(b"devel", b"fastio.mmap-thread-nice")
    return policy
