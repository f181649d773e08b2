"""The extension's commands, declared here and loaded when they run: every
hg command loads this module (the command table), not their code."""

from mercurial.i18n import _
from mercurial import registrar

cmdtable = {}
command = registrar.command(cmdtable)

# files hg debugfastio creates to time creates and closes
PROBE_FILES = 256


@command(
    b"debugfastio",
    [
        (b"", b"files", PROBE_FILES, _(b"number of files to probe with")),
        (b"", b"no-cache", None, _(b"do not store the measurement for auto mode")),
    ],
    b"[--files N] [--no-cache]",
    helpcategory=b"maintenance",
)
def debugfastio(ui, repo, **opts):
    """show fastio's settings and measure this repository's file latencies

    Prints the effective ``[fastio]`` settings, then creates, writes and
    closes ``--files`` small files in a temporary directory under ``.hg``
    (removed afterwards), times each create (``open()``) and ``close()``,
    prints their medians and 90th percentiles, and what ``auto`` mode
    chooses from the slower.  Unless ``--no-cache`` is given, the
    measurement is stored for ``auto`` mode (see ``fastio.probe-max-age``).
    """
    from . import debugfastio as implementation

    return implementation.run(ui, repo, **opts)
