"""What ``hg debugfastio`` does: the effective settings, the mmap
population policy at work, and a create/close latency probe (declared in
the package's ``__init__``, loaded only when the command runs)."""

from mercurial.i18n import _
from mercurial import pycompat, util

import importlib

from .. import PROBE_FILES, compat, config, configtable, metadata, wiring
from . import autotune, probe, report
from ..writer import filewriter
from ..mmap import mmappolicy, sessions

# the C helpers: (module, what it does, what the extension does without it)
HELPERS = (
    (
        "writer._writepool",
        b"the writing pool (threads that never take Python's lock)",
        b"files written on Python threads",
    ),
    (
        "apply._streamscan",
        b"the stream pre-scan of a bundle's names",
        b"names scanned in Python (slower)",
    ),
    (
        "mmap._populate",
        b"mmap population without Python's lock",
        b"no background population; stock's population",
    ),
)


def _helpers_lines():
    """Whether each C helper is built and loads, and what is lost without
    it (the extension enabled by path from a checkout that did not build
    them runs without them, silently otherwise)."""
    package = __name__.rsplit(".", 2)[0]
    out = []
    for module, does, without in HELPERS:
        try:
            importlib.import_module(package + "." + module)
        except ImportError as exc:
            out.append(b"  %s: not built (%s): %s\n" % (module.encode(), does, without))
            del exc
            continue
        out.append(b"  %s: built, in use: %s\n" % (module.encode(), does))
    return out


def _wiring_lines(ui):
    """The parts of ``wiring.WRAPS``: how many are in force, each part
    with ``--verbose``."""
    parts = wiring.in_force()
    active = [p for p in parts if p[2] == "in force"]
    out = [
        _(b"wiring: %d of %d parts in force in this command\n")
        % (len(active), len(parts))
    ]
    if ui.verbose:
        for part, when, state, wraps in parts:
            out.append(
                b"  %s (%s): %s\n" % (part.encode(), when.encode(), state.encode())
            )
            for target, wrapper, work in wraps:
                out.append(
                    b"    %s <- %s: %s\n"
                    % (target.encode(), (wrapper or "-").encode(), work.encode())
                )
    return out


def _settings_lines(ui):
    """``name: value`` of every registered option, with ``(default)`` when
    not set by the user."""
    out = []
    for name, item in sorted(configtable[config.SECTION].items()):
        value = ui.config(config.SECTION, name)
        if value is None:
            value = item.default
        if isinstance(value, bool):
            value = b"yes" if value else b"no"
        value = pycompat.bytestr(value)
        source = ui.configsource(config.SECTION, name)
        old = config.OLD_NAMES.get(name)
        if not source and old is not None:
            source = ui.configsource(config.SECTION, old)
        suffix = b" (default)" if not source else b""
        out.append(b"  %s: %s%s\n" % (name, value, suffix))
    return out


def _auto_choice(settings, median_ns):
    """What auto mode does with a filesystem whose creates or closes (the
    slower) take ``median_ns``: the words, as the file writer would do it."""
    threshold = settings.threshold_ns
    if median_ns < threshold:
        return _(b"close inline (median %d us < threshold %d us)") % (
            median_ns // 1000,
            threshold // 1000,
        )
    threads = settings.write_threads or filewriter.threads_for_latency(
        median_ns, filewriter.ASSUMED_PRODUCE_NS, settings.max_write_threads
    )
    return _(
        b"close in background, starting with %d threads "
        b"(median %d us >= threshold %d us)"
    ) % (threads, median_ns // 1000, threshold // 1000)


def _mmap_population(ui, repo):
    """The population policy, and what it does with the changelog index
    (mapped when Mercurial maps it: loaded here, population waited for)."""
    session = sessions.session()
    ui.write(_(b"mmap populate: %s\n") % session.policy.describe())
    ui.debug(
        b"fastio: mmap: helper %s, stock's population: %s\n"
        % (
            b"built" if mmappolicy.helper() is not None else b"not built",
            compat.stock_population(),
        )
    )
    repo.unfiltered().changelog.index
    session.wait_all()
    if not session.stats.mappings:
        ui.write(_(b"mmap population: nothing mapped (changelog index)\n"))
        return
    ui.write(_(b"mmap population: %s\n") % mmappolicy.summary(session))


def run(ui, repo, **opts):
    settings = config.settings(ui)
    ui.write(_(b"fastio %s\n") % pycompat.bytestr(metadata.__version__))
    ui.write(_(b"settings:\n"))
    for line in _settings_lines(ui):
        ui.write(line)
    ui.write(_(b"C helpers:\n"))
    for line in _helpers_lines():
        ui.write(line)
    for line in _wiring_lines(ui):
        ui.write(line)
    policy = report.mmap_policy(repo.svfs)
    ui.write(_(b"mmap policy: %s\n") % (policy or b"none"))
    _mmap_population(ui, repo)

    count = max(1, int(opts.get("files") or PROBE_FILES))
    where = repo.vfs.base
    ui.status(_(b"probing: %d files in %s\n") % (count, where))
    result = probe.measure(where, count)
    ui.write(
        _(b"create latency: %.1f us (median), %.1f us (90th percentile)\n")
        % (result.create_median_ns / 1000.0, result.create_p90_ns / 1000.0)
    )
    ui.write(
        _(b"close latency: %.1f us (median), %.1f us (90th percentile)\n")
        % (result.median_ns / 1000.0, result.p90_ns / 1000.0)
    )
    ui.write(_(b"probe time: %.3f s\n") % (result.elapsed_ns / 1e9))
    ui.write(
        _(b"auto mode would: %s\n") % _auto_choice(settings, result.slower_median_ns)
    )
    if settings.write_mode != config.MODE_AUTO:
        ui.write(
            _(b"in effect: %s (fastio.%s)\n")
            % (settings.write_mode, config.option_name(ui, b"background-write"))
        )
    if opts.get("no_cache"):
        return 0
    if not settings.probe_max_age_s:
        ui.write(_(b"cache: disabled (fastio.probe-max-age=0)\n"))
        return 0
    tuning = autotune.Tuning(ui, repo.vfs, where, settings.probe_max_age_s)
    slower = max(result.p90_ns, result.create_p90_ns)
    # a file of .hg: written under the working copy's lock
    with repo.wlock():
        remembered = tuning.remember(result.slower_median_ns, slower, b"probe")
    if remembered:
        ui.write(
            _(b"cached for auto mode in %s\n")
            % util.pconvert(repo.vfs.join(autotune.CACHE_NAME))
        )
    else:
        ui.write(_(b"cache: not written\n"))
    return 0
