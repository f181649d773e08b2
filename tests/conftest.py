"""pytest runs both the unit tests and the ``*.t`` cram tests.

Each ``.t`` file is one test item, run by the ``cram`` package in a fresh
directory ($TESTTMP) with an environment in the style of Mercurial's own
run-tests.py: a private HGRCPATH enabling the extension, free ports in
$HGPORT..$HGPORT2, a dummy ssh, a fixed user, timezone and encoding.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

TESTDIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTDIR)
EXTPATH = os.path.join(ROOT, "hgext3rd", "fastio")
# the programs and modules the tests run (tests/helpers), the LD_PRELOAD
# shims they build (tests/shims), and what the tests share with the
# benchmarks (fixtures/: repository generators, bundle kit, store
# comparison, dummy ssh, latency shim)
HELPERS = os.path.join(TESTDIR, "helpers")
SHIMS = os.path.join(TESTDIR, "shims")
FIXTURES = os.path.join(ROOT, "fixtures")
for _path in (HELPERS, FIXTURES):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# Mercurial's harness runs these (make test-upstream), not this one
collect_ignore = ["upstream"]

# The interrupt tests need SIGINT delivered, as a user's terminal delivers
# it; a shell without job control starts its background jobs (``make test
# &``) with SIGINT ignored, and every process started from here would
# inherit that.  Handled here, it is back to its default in each program
# run from the tests.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def build_preload(source, so):
    """LD_PRELOAD shim ``so`` built from C file ``source`` (the test is
    skipped where there is no gcc)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", "-o", str(so), source, "-ldl"], check=True
    )
    return str(so)


def free_ports(count):
    socks, ports = [], []
    for __ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def cram_environment(tmpdir):
    tmp = str(tmpdir)
    home = os.path.join(tmp, ".home")
    os.makedirs(home)
    hgrc = os.path.join(tmp, ".hgrc")
    with open(hgrc, "w") as f:
        f.write(
            "[ui]\n"
            "slash = True\n"
            "interactive = False\n"
            "merge = internal:merge\n"
            "mergemarkers = detailed\n"
            "promptecho = True\n"
            'ssh = "%s" "%s"\n'
            "timeout.warn = 15\n"
            "[devel]\n"
            "all-warnings = true\n"
            # small changegroups too go through the extension's apply (the
            # tests apply small ones; test-small-apply.t checks the default)
            "fastio.small-applies = false\n"
            "default-date = 0 0\n"
            "[web]\n"
            "address = localhost\n"
            "ipv6 = False\n"
            "[extensions]\n"
            "fastio = %s\n"
            % (sys.executable, os.path.join(FIXTURES, "dummyssh"), EXTPATH)
        )
    ports = free_ports(3)
    bindir = os.path.dirname(sys.executable)
    env = {
        "PATH": os.pathsep.join([bindir, os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": home,
        "TESTTMP": tmp,
        "ROOTDIR": ROOT,
        "EXTPATH": EXTPATH,
        "PYTHON": sys.executable,
        "HGRCPATH": hgrc,
        "HGUSER": "test",
        "HGENCODING": "ascii",
        "HGENCODINGMODE": "strict",
        "HGEDITOR": "true",
        "HGMERGE": "internal:merge",
        "HGPORT": str(ports[0]),
        "HGPORT1": str(ports[1]),
        "HGPORT2": str(ports[2]),
        "LANG": "C",
        "LC_ALL": "C",
        "TZ": "GMT",
        "COLUMNS": "80",
        "TERM": "xterm",
        "CDPATH": "",
    }
    # "import hgext3rd.fastio" in a test is this checkout's, not the
    # one an editable install of another checkout points to
    env["PYTHONPATH"] = ROOT
    for passthrough in ("LD_LIBRARY_PATH", "TMPDIR"):
        if passthrough in os.environ:
            env[passthrough] = os.environ[passthrough]
    return env


# Started first by make test's pytest-xdist workers (--dist loadfile, in
# collection order): the slowest files, so that none is left to run alone
# at the end (per-file times of a serial 7.2.4 run and a 4-worker 6.7.4
# run, 2026-12-07); an order only, files not listed follow in pytest's order
SLOW_FIRST = [
    "test_cmdserver_growth.py",
    "test_options.py",
    "test-pending.t",
    "test-remotefilelog.t",
    "test_durable.py",
    "test_package.py",
    "test-serve.t",
    "test-narrow.t",
    "test-stream-clone.t",
    "test-interrupt.t",
    "test-bundleio.t",
    "test-rollback.t",
    "test-silent.t",
    "test-small-apply.t",
    "test-changegroup.t",
    "test-hostile.t",
    "test-indirect.t",
    "test_checkout.py",
    "test-faults.t",
    "test-compress-ahead.t",
    "test_large_revlogs.py",
    "test_serve_fresh.py",
    "test-mmap.t",
    "test-modes.t",
    "test_makeproject.py",
    "test_load_cost.py",
]

# Run alone after the parallel phase (make test-serial): tests whose timing
# fails them under the load of the other workers (test-interrupt.t: the
# closes still pending at a SIGTERM not done within fastio.pending-timeout,
# with 4 workers)
SERIAL = {"test-interrupt.t"}


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    # stable: each file's tests stay together and in order
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.name in SERIAL:
            item.add_marker(pytest.mark.serial)


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".t" and file_path.name.startswith("test-"):
        return CramFile.from_parent(parent, path=file_path)


class CramFile(pytest.File):
    def collect(self):
        yield CramItem.from_parent(self, name=self.path.name)


class CramFailure(Exception):
    pass


class CramItem(pytest.Item):
    def runtest(self):
        import cram

        tmpdir = self.config._tmp_path_factory.mktemp(self.path.stem)
        env = cram_environment(tmpdir)
        cwd = os.getcwd()
        os.chdir(str(tmpdir))
        try:
            refout, postout, diff = cram.testfile(
                os.fsencode(str(self.path)),
                shell="/bin/sh",
                env=env,
                cleanenv=False,
                testname=os.fsencode(self.path.name),
            )
            diff = b"".join(diff)
        finally:
            os.chdir(cwd)
            # kill servers a failed test left behind
            _kill_daemons(str(tmpdir))
        if postout is None:
            pytest.skip("test exited with status 80")
        if diff:
            with open(str(self.path) + ".err", "wb") as f:
                f.writelines(postout)
            raise CramFailure(diff.decode("utf-8", "replace"))
        err = str(self.path) + ".err"
        if os.path.exists(err):
            os.unlink(err)
        shutil.rmtree(str(tmpdir), ignore_errors=True)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, CramFailure):
            return "cram test %s failed:\n%s" % (self.path.name, excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, "cram: %s" % self.path.name


def _kill_daemons(tmpdir):
    import signal

    for root, __, files in os.walk(tmpdir):
        for name in files:
            if name.endswith(".pid"):
                try:
                    with open(os.path.join(root, name)) as f:
                        for pid in f.read().split():
                            try:
                                os.kill(int(pid), signal.SIGTERM)
                            except (OSError, ValueError):
                                pass
                except OSError:
                    pass
