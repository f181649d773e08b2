"""The extension's mmap pre-population policy: the mechanism.

Mercurial maps store data (revlog indexes above
``storage.revlog.mmap.index:size-threshold``, persistent nodemaps, the
file index, the branch cache) through ``util.mmapread``, after checking
that mmap is safe for the file.  ``map_file`` takes the place of that
function (``sessions`` puts it there) and decides only how the mapping is
populated, never whether there is one:

``never``       mapped without population: pages fault in when read
``always``      populated before the mapping is returned (stock's
                ``MAP_POPULATE`` where stock has it, else the helper
                in the calling thread)
``background``  mapped without population, then populated by a thread of
                ``_populate.c`` that never holds Python's lock
``stock``       what Mercurial does (``auto`` where no background is
                possible)

Mappings smaller than the threshold are not populated (under ``stock``,
Mercurial's rule applies to them), nor counted.  Jobs still running
when a command ends are stopped and joined (``end_command``): no thread
outlives a command, as chg and the command server run many in a process.
"""

import mmap
import threading
import time

from .. import compat, config, map_outside_policy, map_unpopulated

try:
    from . import _populate
except ImportError:  # built without a compiler
    _populate = None

NEVER = config.MMAP_NEVER
ALWAYS = config.MMAP_ALWAYS
BACKGROUND = config.MMAP_BACKGROUND
AUTO = config.MMAP_AUTO
STOCK = b"stock"
POLICIES = config.MMAP_POLICIES

DEFAULT_THRESHOLD = 1 << 20

# the helper's methods (its constants), by the names the output uses
METHOD_NAMES = {
    1: b"madvise(MADV_POPULATE_READ)",
    2: b"madvise(MADV_WILLNEED)",
    3: b"a read per page",
    4: b"PrefetchVirtualMemory",
    5: b"none",
}
# devel.fastio.mmap-helper: forces the pure fallback or a first method
HELPER_CHOICES = {
    b"auto": 0,
    b"pure": None,
    b"populate-read": 1,
    b"willneed": 2,
    b"touch": 3,
}

# how long end_command waits for a thread to leave its chunk
JOIN_TIMEOUT_S = 5.0


def helper():
    """The C helper module, or None (not built, or forced off)."""
    return _populate


class Stats:
    """What population did during one command."""

    def __init__(self):
        self.mappings = 0
        self.mapped_bytes = 0
        self.populated = 0  # mappings populated (in full or stopped)
        self.populated_bytes = 0
        self.populate_ns = 0  # summed over mappings, threads included
        self.stopped = 0  # background jobs stopped before the end
        self.failures = 0
        self.methods = set()

    def add_result(self, result):
        method, done, err, stopped, elapsed_ns = result
        self.populated += 1
        self.populated_bytes += done
        self.populate_ns += elapsed_ns
        self.methods.add(METHOD_NAMES.get(method, b"?"))
        if stopped or err:
            self.stopped += 1


def configured(ui):
    """The population policy ``ui``'s configuration asks for."""
    policy = Policy(
        config.mmap_populate(ui),
        config.mmap_populate_threshold(ui),
        HELPER_CHOICES.get(config.mmap_helper(ui), 0),
    )
    policy.thread_nice = config.mmap_thread_nice(ui)
    return policy


class Policy:
    """The population policy of one command, resolved from its settings."""

    def __init__(self, requested=AUTO, threshold=DEFAULT_THRESHOLD, method=0):
        self.requested = requested
        self.threshold = max(0, threshold)
        self.method = method  # None: the helper is not used
        # a stop is noticed within a chunk (1 MB: about 0.1 ms when cached)
        self.chunk = 1 << 20
        # added to the thread's nice value: a busy core goes to the command
        self.thread_nice = 10
        self.name, self.reason = self._resolve()

    def _resolve(self):
        usable = self.method is not None and _populate is not None
        if self.requested in (ALWAYS, NEVER):
            return self.requested, b"fastio.mmap-populate=%s" % self.requested
        if self.requested == BACKGROUND and not usable:
            return STOCK, b"background asked for, no helper: " + self._why_not()
        if self.requested == BACKGROUND:
            return BACKGROUND, b"fastio.mmap-populate=background"
        if usable:
            return BACKGROUND, b"auto: the helper populates from a thread"
        return STOCK, b"auto: " + self._why_not()

    def _why_not(self):
        if _populate is None:
            return b"_populate not built, stock's population (%s)" % (
                compat.stock_population()
            )
        if self.method is None:
            return b"helper off (devel.fastio.mmap-helper=pure), stock's (%s)" % (
                compat.stock_population()
            )

    def describe(self):
        return b"%s (%s)" % (self.name, self.reason)


class Session:
    """The policy in effect, its jobs and its statistics.  ``resolve()``
    gives the policy, called at the first mapping (a command that maps
    nothing reads no option)."""

    def __init__(self, resolve, ui=None):
        self._resolve = resolve
        self._policy = None
        self.ui = ui
        self.stats = Stats()
        self.jobs = []
        self.lock = threading.Lock()
        self.announced = False

    @property
    def policy(self):
        if self._policy is None:
            self._policy = self._resolve()
        return self._policy

    def debug(self, message):
        if self.ui is not None:
            self.ui.debug(b"fastio: mmap: " + message + b"\n")

    def reap(self):
        """Collect the results of finished jobs (any thread)."""
        with self.lock:
            running = []
            for job in self.jobs:
                result = job.result
                if result is None:
                    running.append(job)
                else:
                    job.join()
                    self.stats.add_result(result)
            self.jobs = running
            return len(running)

    def stop_all(self, timeout=JOIN_TIMEOUT_S):
        """Stop every job and wait for its thread (within one chunk)."""
        with self.lock:
            jobs, self.jobs = self.jobs, []
        for job in jobs:
            job.stop()
        for job in jobs:
            if job.join(timeout):
                self.stats.add_result(job.result)
            else:
                # still inside one chunk (a stalled disk): leave it to
                # the next stop_all rather than block the command
                self.stats.failures += 1
                with self.lock:
                    self.jobs.append(job)

    def wait_all(self, timeout=JOIN_TIMEOUT_S):
        """Let every job finish (``hg debugfastio``), then collect them."""
        with self.lock:
            jobs = list(self.jobs)
        for job in jobs:
            job.join(timeout)
        self.reap()

    def running(self):
        return self.reap()


_default = None
_sessions = []  # innermost command last
_sessions_lock = threading.Lock()


def current():
    """The session of the running command (a default one outside any)."""
    global _default
    try:
        return _sessions[-1]
    except IndexError:
        # (another thread may have ended the last one since)
        pass
    if _default is None:
        with _sessions_lock:
            if _default is None:
                _default = Session(Policy)
    return _default


def begin_command(ui, resolve):
    session = Session(resolve, ui)
    with _sessions_lock:
        _sessions.append(session)
    return session


def end_command(session):
    """Stop and join the command's jobs; its summary under --debug."""
    try:
        session.stop_all()
        if session.stats.mappings:
            session.debug(summary(session))
    finally:
        with _sessions_lock:
            if session in _sessions:
                _sessions.remove(session)


def stop_everything():
    """At interpreter exit: no job left running (library users)."""
    for session in list(_sessions) + ([_default] if _default else []):
        session.stop_all()


def summary(session):
    s = session.stats
    line = b"%s: %d mappings (%d bytes), %d populated (%d bytes) in %.1f ms" % (
        session.policy.name,
        s.mappings,
        s.mapped_bytes,
        s.populated,
        s.populated_bytes,
        s.populate_ns / 1e6,
    )
    if s.methods:
        line += b" by %s" % b", ".join(sorted(s.methods))
    if s.stopped:
        line += b", %d stopped early" % s.stopped
    if s.failures:
        line += b", %d failed" % s.failures
    return line


def map_file(orig, fp, size=None, pre_populate=True):
    """``util.mmapread`` under the session's policy (``orig`` is stock's)."""
    session = current()
    policy = session.policy
    # not the policy's (Mercurial's own small caches, or a caller asking
    # for no population): neither counted nor said
    data = map_outside_policy(
        orig, fp, size, pre_populate, policy.threshold, policy.name == STOCK
    )
    if data is not None:
        return data
    name = policy.name
    if not session.announced:
        session.announced = True
        session.debug(b"policy %s" % policy.describe())
    start = time.perf_counter_ns()
    if name == STOCK:
        data = orig(fp, size)
    elif name == ALWAYS:
        data = _map_now(session, orig, fp, size)
    else:
        data = map_unpopulated(orig, fp, size)
    if not len(data):
        return data
    stats = session.stats
    stats.mappings += 1
    stats.mapped_bytes += len(data)
    if name == STOCK:
        name = _stock_did(stats)
    if name == ALWAYS:
        stats.populated += 1
        stats.populated_bytes += len(data)
        stats.populate_ns += time.perf_counter_ns() - start
    elif name == BACKGROUND:
        _start_job(session, data)
    return data


def _stock_did(stats):
    """How stock populated the mapping it made: as ``always`` did
    (``MAP_POPULATE``), or from its own thread (not timed), or not."""
    if compat.stock_populates_synchronously():
        stats.methods.add(b"MAP_POPULATE (stock)")
        return ALWAYS
    if compat.stock_background_helper() is not None:
        stats.methods.add(b"osutil.background_mmap_populate (stock, not timed)")
    return STOCK


def _map_now(session, orig, fp, size):
    """A mapping populated before it is returned."""
    if compat.stock_populates_synchronously():
        data = orig(fp, size, pre_populate=True)
        session.stats.methods.add(b"MAP_POPULATE")
        return data
    data = map_unpopulated(orig, fp, size)
    if not len(data):
        return data
    method = session.policy.method
    if _populate is not None and method is not None:
        try:
            result = _populate.populate(data, method, session.policy.chunk)
            session.stats.methods.add(METHOD_NAMES.get(result[0], b"?"))
        except Exception as exc:  # never the user's problem
            session.stats.failures += 1
            session.debug(b"populating failed: %s" % _exc_bytes(exc))
    else:
        # every page read once, in C (a slice of the mapping)
        data[:: mmap.PAGESIZE]
        session.stats.methods.add(b"a read per page (pure)")
    return data


def _start_job(session, data):
    session.reap()
    try:
        policy = session.policy
        job = _populate.start(data, policy.method, policy.chunk, policy.thread_nice)
    except Exception as exc:  # no thread, no memory: the mapping stays
        session.stats.failures += 1
        session.debug(b"background population not started: %s" % _exc_bytes(exc))
        return
    with session.lock:
        session.jobs.append(job)


def _exc_bytes(exc):
    return ("%s: %s" % (type(exc).__name__, exc)).encode("utf-8", "replace")
