"""The ``[fastio]`` configuration: registration and one reader for it all.

Every option is documented in the extension's help (``hg help -e fastio``);
keep the two in step.
"""

from mercurial import error, exthelper
from mercurial.i18n import _

from . import closer

eh = exthelper.exthelper()

SECTION = b"fastio"

eh.configitem(SECTION, b"background-close", default=b"auto")
eh.configitem(SECTION, b"slow-close-threshold", default=b"50us")
eh.configitem(SECTION, b"close-threads", default=0)
eh.configitem(SECTION, b"max-close-threads", default=64)
eh.configitem(SECTION, b"max-pending-closes", default=256)
eh.configitem(SECTION, b"close-sample", default=16)
eh.configitem(SECTION, b"buffer-size", default=b"1MB")
eh.configitem(SECTION, b"stream-writer", default=True)
eh.configitem(SECTION, b"report", default=False)

_MODES = {
    b"auto": closer.MODE_AUTO,
    b"always": closer.MODE_ALWAYS,
    b"yes": closer.MODE_ALWAYS,
    b"on": closer.MODE_ALWAYS,
    b"true": closer.MODE_ALWAYS,
    b"never": closer.MODE_NEVER,
    b"no": closer.MODE_NEVER,
    b"off": closer.MODE_NEVER,
    b"false": closer.MODE_NEVER,
}

_UNITS = (
    (b"ns", 1),
    (b"us", 1000),
    (b"ms", 1000 * 1000),
    (b"s", 1000 * 1000 * 1000),
)


def parse_duration_ns(value):
    """``b'50us'`` -> 50000; a bare number is microseconds."""
    text = value.strip().lower()
    for suffix, scale in sorted(_UNITS, key=lambda u: -len(u[0])):
        if text.endswith(suffix) and text[: -len(suffix)].strip():
            number = text[: -len(suffix)].strip()
            break
    else:
        number, scale = text, 1000
    try:
        return int(float(number) * scale)
    except ValueError:
        raise error.ConfigError(
            _(b"fastio.slow-close-threshold is not a duration: %s") % value
        )


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
        self.stream_writer = ui.configbool(SECTION, b"stream-writer")
        self.report = ui.configbool(SECTION, b"report")
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
                self.close_mode = closer.MODE_NEVER

    def make_closer(self, ui, stats=None, expectedcount=-1, destinations=1):
        """A closer for an operation writing ``expectedcount`` files (-1:
        unknown) into ``destinations`` vfs (stock starts a closer, and says
        so under --debug, for each)."""
        mode, threads = self.close_mode, self.close_threads
        if self.stock_close is not None:
            threads, minfilecount = self.stock_close
            if 0 < expectedcount < minfilecount:
                mode = closer.MODE_NEVER
            else:
                mode = closer.MODE_ALWAYS
                for __ in range(destinations):
                    ui.debug(
                        b"starting %d threads for background file closing\n" % threads
                    )
        return closer.FileCloser(
            ui=ui,
            mode=mode,
            threshold_ns=self.threshold_ns,
            threads=threads,
            max_threads=self.max_close_threads,
            max_pending=self.max_pending,
            window=self.close_sample,
            stats=stats,
        )


def settings(ui):
    return Settings(ui)
