#!/usr/bin/env python3
"""The serving side of clones: what a server reads, and a load run
(``make bench-serve``).

``--strace``: for each protocol (``hg serve`` over http, ``hg serve
--stdio`` over ssh) and each kind of clone (stream, pull), runs the server
under ``strace -f -y``, stock and with the extension, clones from it with a
stock client, and counts the read calls on the served store's files: all
of them, and those on files of 128 KiB or more (the revlogs whose reads can
be large; a smaller file is read in one call either way).  Every clone is
verified and its store compared with the stock server's clone.

``--load``: CLIENTS clients clone at once from one freshly started
``hg serve`` with the extension (stream clones, then pull clones; the
clients have it too; ``--warmup``: after a clone of each kind).
Every clone must complete, verify and be identical to a stock clone; the
server's peak resident memory and open descriptors are sampled from /proc
while they run.

``--clonebundles``: the served repository's clone bundles (stream v2,
packed1, a zstd changegroup) on a plain http server, advertised by an
``hg serve``; a client clones from it under ``strace -f -yy``, stock and
with the extension, and the read calls on its socket to the bundles'
server are counted.  Every clone is verified and compared with a stock
clone.

usage: bench_serve.py [--strace] [--load] [--clonebundles] [--clients N]
                      [--warmup] [--stock-server] [--workdir DIR]
                      [--files N] [--commits N]
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# what the benchmarks share with the tests (fixtures/: repository
# generators, shims, comparisons)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

from bench_io import _STRACE, READ_CALLS, env_base  # noqa: E402
from httplog import count_gets  # noqa: E402

EXT = os.path.join(ROOT, "hgext3rd", "fastio")
HG = os.path.join(os.path.dirname(sys.executable), "hg")
STORECOMPARE = os.path.join(ROOT, "fixtures", "storecompare.py")

LARGE = 128 * 1024


def ext_args(on):
    return ["--config", "extensions.fastio=%s" % EXT] if on else []


def clone_args(kind):
    if kind == "stream":
        return ["--stream"]
    return ["--config", "ui.clonebundles=false"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc):
    for __ in range(300):
        if proc.poll() is not None:
            sys.exit("hg serve exited (%s)" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("hg serve did not start on port %d" % port)


class Server:
    """``hg serve`` of ``repo`` on a free port, optionally under a command
    prefix (strace)."""

    def __init__(self, repo, fastio, env, workdir, prefix=(), extra=()):
        self.port = free_port()
        self.pidfile = os.path.join(workdir, "serve-%d.pid" % self.port)
        self.proc = subprocess.Popen(
            list(prefix)
            + [HG, "-R", repo, "serve", "-a", "127.0.0.1", "-p", str(self.port)]
            + ["--pid-file", self.pidfile]
            + ["--errorlog", os.path.join(workdir, "serve-errors.log")]
            + ext_args(fastio)
            + list(extra),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc)
        with open(self.pidfile) as f:
            self.pid = int(f.read())
        self.url = "http://127.0.0.1:%d/" % self.port

    def stop(self):
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass
        self.proc.wait()


class StaticServer:
    """A plain static http server of ``directory`` on a free port (as
    ``staticserve`` in tests/helpers/common.sh): where clone bundles are fetched
    from.  Its request log goes to ``log`` (``gets`` counts the requests
    for a file)."""

    def __init__(self, directory, env, log=None):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.port = free_port()
        self.log = log
        env = dict(env)
        env.pop("LD_PRELOAD", None)
        with open(log or os.devnull, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "http.server", str(self.port)]
                + ["--bind", "127.0.0.1", "--directory", directory],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        wait_port(self.port, self.proc)
        self.url = "http://127.0.0.1:%d/" % self.port

    def gets(self, name):
        """How many GET requests for ``name`` the server answered 200."""
        with open(self.log) as f:
            return count_gets(f, name)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


# the clonebundles extension advertises a repository's manifest
CLONEBUNDLES = ["--config", "extensions.clonebundles="]


def advertise(repo, static, name, env):
    """Advertise the bundle ``name`` of the StaticServer ``static`` (a file
    of its directory) in ``repo``'s clonebundles.manifest, with its
    BUNDLESPEC."""
    path = os.path.join(static.directory, name)
    spec = subprocess.run(
        [HG, "debugbundle", "--spec", path],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    with open(os.path.join(repo, ".hg", "clonebundles.manifest"), "w") as f:
        f.write("%s%s BUNDLESPEC=%s\n" % (static.url, name, spec))


def unadvertise(repo):
    manifest = os.path.join(repo, ".hg", "clonebundles.manifest")
    if os.path.exists(manifest):
        os.unlink(manifest)


def ssh_wrapper(workdir):
    """A stand-in for ssh running the remote command locally, under strace
    writing to $TRACE."""
    path = os.path.join(workdir, "ssh-strace")
    with open(path, "w") as f:
        f.write(
            "#!/bin/sh\n"
            "# usage: ssh-strace HOST COMMAND (the server's configuration\n"
            "# in $SERVER_HGRCPATH)\n"
            'export HGRCPATH="$SERVER_HGRCPATH"\n'
            'exec strace -f -y -qq -e trace=%s -o "$TRACE" sh -c "$2"\n'
            % ",".join(READ_CALLS)
        )
    os.chmod(path, 0o755)
    return path


def count(trace, store):
    """(calls, mean) of reads on the store's files, all and on files of
    LARGE bytes or more."""
    store = os.path.join(store, "")
    sizes = {}
    stats = {"all": [0, 0], "large": [0, 0]}
    with open(trace) as f:
        for line in f:
            m = _STRACE.match(line)
            if not m or m.group(1) not in READ_CALLS:
                continue
            path = m.group(3)
            if not path.startswith(store):
                continue
            n = int(m.group(4))
            if not n:
                continue
            if path not in sizes:
                try:
                    sizes[path] = os.path.getsize(path)
                except OSError:
                    sizes[path] = 0
            keys = ("all", "large") if sizes[path] >= LARGE else ("all",)
            for key in keys:
                stats[key][0] += 1
                stats[key][1] += n
    return {k: (c, b // c if c else 0) for k, (c, b) in stats.items()}


def clone(source, dest, kind, fastio, env, extra=()):
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run(
        [HG, "clone", "-q", "-U"]
        + clone_args(kind)
        + ext_args(fastio)
        + list(extra)
        + [source, dest],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def check_clone(dest, reference, env):
    """None when ``dest`` verifies and its store is ``reference``'s, else
    what is wrong."""
    v = subprocess.run([HG, "-R", dest, "verify", "-q"], env=env, capture_output=True)
    if v.returncode:
        return "verify failed: %s" % (v.stdout + v.stderr).decode(errors="replace")
    c = subprocess.run(
        [sys.executable, STORECOMPARE, "--content-only", reference, dest],
        env=env,
        capture_output=True,
    )
    if c.returncode:
        return c.stdout.decode(errors="replace")
    return None


def prepare(opts, env):
    repo = os.path.join(opts.workdir, "served")
    if not os.path.exists(os.path.join(repo, ".hg")):
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "fixtures", "makehistory.py"), repo]
            + ["--files", str(opts.files), "--commits", str(opts.commits)]
            + ["--changes", str(opts.changes)],
            env=env,
            check=True,
        )
    references = {}
    for kind in ("stream", "pull"):
        ref = os.path.join(opts.workdir, "reference-%s" % kind)
        if not os.path.exists(os.path.join(ref, ".hg")):
            server = Server(repo, False, env, opts.workdir)
            try:
                clone(server.url, ref, kind, False, env)
            finally:
                server.stop()
        references[kind] = ref
    return repo, references


def fmt(c):
    return "%d / %dK" % (c[0], c[1] // 1024)


def server_hgrc(workdir, fastio):
    """An hgrc for a server started over ssh (its command line is
    Mercurial's): the extension on or not."""
    path = os.path.join(workdir, "server-%s.hgrc" % ("fastio" if fastio else "stock"))
    with open(path, "w") as f:
        if fastio:
            f.write("[extensions]\nfastio = %s\n" % EXT)
    return path


def run_strace(opts, env, repo, references):
    store = os.path.join(repo, ".hg", "store")
    wrapper = ssh_wrapper(opts.workdir)
    strace = ["strace", "-f", "-y", "-qq", "-e", "trace=" + ",".join(READ_CALLS)]
    head = "%-12s %14s %14s %16s %16s %5s" % (
        "server",
        "stock all",
        "fastio all",
        "stock >=128K",
        "fastio >=128K",
        "same",
    )
    print(
        "read calls / mean size on the served store's files (all; files of "
        "128 KiB or more)"
    )
    print(head)
    print("-" * len(head))
    for proto in ("http", "ssh"):
        for kind in ("stream", "pull"):
            counts, same = {}, True
            for fastio in (False, True):
                dest = os.path.join(opts.workdir, "clone")
                trace = os.path.join(
                    opts.workdir,
                    "trace-%s-%s-%s" % (proto, kind, "fastio" if fastio else "stock"),
                )
                if proto == "http":
                    server = Server(
                        repo, fastio, env, opts.workdir, strace + ["-o", trace]
                    )
                    try:
                        clone(server.url, dest, kind, False, env)
                    finally:
                        server.stop()
                else:
                    clone(
                        "ssh://user@dummy/" + repo,
                        dest,
                        kind,
                        False,
                        dict(
                            env,
                            TRACE=trace,
                            SERVER_HGRCPATH=server_hgrc(opts.workdir, fastio),
                        ),
                        [
                            "--config",
                            "ui.ssh=" + wrapper,
                            "--config",
                            "ui.remotecmd=" + HG,
                        ],
                    )
                counts[fastio] = count(trace, store)
                problem = check_clone(dest, references[kind], env)
                if problem:
                    print(problem)
                    same = False
            print(
                "%-12s %14s %14s %16s %16s %5s"
                % (
                    "%s %s" % (proto, kind),
                    fmt(counts[False]["all"]),
                    fmt(counts[True]["all"]),
                    fmt(counts[False]["large"]),
                    fmt(counts[True]["large"]),
                    "yes" if same else "NO",
                ),
                flush=True,
            )


class ProcessWatch:
    """Samples a process's resident memory and open descriptors from /proc
    until stopped: the peaks."""

    def __init__(self, pid, interval=0.05):
        self.pid = pid
        self.interval = interval
        self.peak_rss_kb = self.peak_fds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    self.peak_rss_kb = max(self.peak_rss_kb, int(line.split()[1]))
        fds = len(os.listdir("/proc/%d/fd" % self.pid))
        self.peak_fds = max(self.peak_fds, fds)

    def _run(self):
        while not self._stop.is_set():
            try:
                self._sample()
            except OSError:
                return
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()


def run_load(opts, env, repo, references):
    print(
        "%d clients at once from one hg serve (%s), the extension on the "
        "clients%s"
        % (
            opts.clients,
            "after a clone of each kind" if opts.warmup else "freshly started",
            "" if opts.stock_server else " and the server",
        )
    )
    errorlog = os.path.join(opts.workdir, "serve-errors.log")
    for kind in ("stream", "pull"):
        # a server of its own for each kind: both meet a fresh one
        if os.path.exists(errorlog):
            os.unlink(errorlog)
        server = Server(repo, not opts.stock_server, env, opts.workdir)
        try:
            # --warmup: a stock hg serve can fail the first requests that
            # arrive together: its threads race to load lazy modules
            # ("module 'mercurial.dirstate' has no attribute 'dirstate'");
            # with the extension the server loads them before it serves
            if opts.warmup:
                for warm in ("stream", "pull"):
                    dest = os.path.join(opts.workdir, "warmup")
                    clone(server.url, dest, warm, True, env)
            watch = ProcessWatch(server.pid)
            time.sleep(0.5)
            idle = (watch.peak_rss_kb, watch.peak_fds)
            watch.peak_rss_kb, watch.peak_fds = idle
            failures = load_clients(opts, env, server, kind, references[kind])
            watch.stop()
        finally:
            server.stop()
        errors = 0
        if os.path.exists(errorlog):
            with open(errorlog) as f:
                errors = sum(line.startswith("Traceback") for line in f)
        print(
            "%-6s %d/%d clones complete, verified and identical; server: "
            "%d MiB resident and %d descriptors before, peak %d MiB, %d "
            "descriptors; %d tracebacks in its log"
            % (
                kind,
                opts.clients - len(failures),
                opts.clients,
                idle[0] // 1024,
                idle[1],
                watch.peak_rss_kb // 1024,
                watch.peak_fds,
                errors,
            ),
            flush=True,
        )
        for failure in failures:
            print("  FAILED " + failure)


def load_clients(opts, env, server, kind, reference):
    """opts.clients clones of ``kind`` started together: what failed."""
    dests = [
        os.path.join(opts.workdir, "load-%s-%d" % (kind, i))
        for i in range(opts.clients)
    ]
    for dest in dests:
        shutil.rmtree(dest, ignore_errors=True)
    procs = [
        subprocess.Popen(
            [HG, "clone", "-q", "-U"]
            + clone_args(kind)
            + ext_args(True)
            + [server.url, dest],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for dest in dests
    ]
    failures = []
    for proc, dest in zip(procs, dests):
        err = proc.communicate()[1].decode(errors="replace").strip()
        if proc.returncode:
            failures.append("%s: exit %d: %s" % (dest, proc.returncode, err))
        elif os.path.exists(dest):
            problem = check_clone(dest, reference, env)
            if problem:
                failures.append("%s: %s" % (dest, problem))
    for dest in dests:
        shutil.rmtree(dest, ignore_errors=True)
    return failures


# a read call on a TCP socket (strace -yy); an unfinished call, its end
_SOCKET_CALL = re.compile(
    r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(\w+)\((\d+)<TCP:\[([^\]]*)\]>(.*)"
)
_RESUMED = re.compile(r"(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?<\.\.\. (\w+) resumed>(.*)")
_RESULT = re.compile(r"\)\s+=\s+(\d+)")
SOCKET_READS = ("read", "recvfrom", "recvmsg", "readv", "recv")


def socket_reads(trace, peer):
    """(calls, bytes) of the reads that returned data on the TCP sockets
    connected to ``peer`` ("127.0.0.1:PORT")."""
    calls = total = 0
    unfinished = {}
    with open(trace) as f:
        for line in f:
            m = _SOCKET_CALL.match(line)
            if m:
                pid = m.group(1) or m.group(2)
                name, addresses, rest = m.group(3), m.group(5), m.group(6)
                if name not in SOCKET_READS or not addresses.endswith("->" + peer):
                    continue
                if "<unfinished ...>" in rest:
                    unfinished[pid] = name
                    continue
            else:
                m = _RESUMED.match(line)
                if not m:
                    continue
                pid = m.group(1) or m.group(2)
                if unfinished.pop(pid, None) != m.group(3):
                    continue
                rest = m.group(4)
            r = _RESULT.search(rest)
            if r and int(r.group(1)):
                calls += 1
                total += int(r.group(1))
    return calls, total


def run_clonebundles(opts, env, repo, references):
    static = os.path.join(opts.workdir, "clonebundles")
    bundles = (
        ("stream v2", "v2.hg", ["bundle", "-q", "-a", "-t", "none-v2;stream=v2"]),
        ("packed1", "packed1.hg", ["debugcreatestreamclonebundle"]),
        ("zstd-v2", "zstd.hg", ["bundle", "-q", "-a", "-t", "zstd-v2"]),
    )
    reference = {"zstd-v2": references["pull"]}
    server = StaticServer(static, env)
    peer = "127.0.0.1:%d" % server.port
    print(
        "clone bundles over http: read calls / mean size on the client's "
        "socket to the bundles' server (strace -f -yy)"
    )
    head = "%-10s %10s %16s %16s %5s" % ("bundle", "size", "stock", "fastio", "same")
    print(head)
    print("-" * len(head))
    try:
        for kind, name, command in bundles:
            path = os.path.join(static, name)
            if not os.path.exists(path):
                subprocess.run(
                    [HG, "-R", repo] + command + [path],
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            advertise(repo, server, name, env)
            hgserver = Server(repo, False, env, opts.workdir, extra=CLONEBUNDLES)
            figures, same = {}, True
            try:
                for fastio in (False, True):
                    dest = os.path.join(opts.workdir, "clone")
                    shutil.rmtree(dest, ignore_errors=True)
                    trace = os.path.join(
                        opts.workdir,
                        "trace-clonebundle-%s-%s"
                        % (name, "fastio" if fastio else "stock"),
                    )
                    subprocess.run(
                        ["strace", "-f", "-yy", "-qq", "-o", trace]
                        + ["-e", "trace=" + ",".join(SOCKET_READS)]
                        + [HG, "clone", "-q", "-U"]
                        + ext_args(fastio)
                        + [hgserver.url, dest],
                        env=env,
                        check=True,
                        stdout=subprocess.DEVNULL,
                    )
                    figures[fastio] = socket_reads(trace, peer)
                    problem = check_clone(
                        dest, reference.get(kind, references["stream"]), env
                    )
                    if problem:
                        print(problem)
                        same = False
            finally:
                hgserver.stop()
            print(
                "%-10s %9dK %16s %16s %5s"
                % (
                    kind,
                    os.path.getsize(path) // 1024,
                    fmt((figures[False][0], _mean(*figures[False]))),
                    fmt((figures[True][0], _mean(*figures[True]))),
                    "yes" if same else "NO",
                ),
                flush=True,
            )
    finally:
        unadvertise(repo)
        server.stop()


def _mean(calls, total):
    return total // calls if calls else 0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--clonebundles", action="store_true")
    ap.add_argument(
        "--warmup",
        action="store_true",
        help="--load: one clone of each kind before the clients start",
    )
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument(
        "--stock-server",
        action="store_true",
        help="load run against a server without the extension (for comparison)",
    )
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--changes", type=int, default=30)
    ap.add_argument("--workdir", default="/tmp/hg-fastio-bench-serve")
    opts = ap.parse_args(argv)
    if not (opts.strace or opts.load or opts.clonebundles):
        opts.strace = opts.load = opts.clonebundles = True
    if (opts.strace or opts.clonebundles) and shutil.which("strace") is None:
        sys.exit("strace is needed (apt-get install strace)")
    os.makedirs(opts.workdir, exist_ok=True)
    env = env_base()
    repo, references = prepare(opts, env)
    if opts.strace:
        run_strace(opts, env, repo, references)
    if opts.load:
        run_load(opts, env, repo, references)
    if opts.clonebundles:
        run_clonebundles(opts, env, repo, references)


if __name__ == "__main__":
    main()
