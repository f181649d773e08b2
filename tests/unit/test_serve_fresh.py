"""Clients cloning at once from a freshly started ``hg serve`` with the
extension: every clone, stream or pull, completes, verifies and is a
stock server's clone, and the server logs no error.

hgweb serves each request in a thread of its own, and Mercurial's lazy
modules race between threads on Python before 3.13 (CPython issue
gh-114763): a request using a module whose code another request is
running finds attributes missing (HTTP 500).  The server runs under
``tests/helpers/slowimport/sitecustomize.py``, which delays the code of every
module run by a thread other than the main one, so that a server whose
requests run module code fails them every time, not now and then.  With
the extension, ``hg serve`` runs it all in its main thread before it
serves (``preload.py``).
"""

import os
import random
import subprocess
import sys

import pytest

from conftest import EXTPATH, FIXTURES, HELPERS, free_ports

HG = os.path.join(os.path.dirname(sys.executable), "hg")
STORECOMPARE = os.path.join(FIXTURES, "storecompare.py")
SHIM = os.path.join(HELPERS, "slowimport")
CLIENTS = ("stream", "pull") * 4
EXT = ["--config", "extensions.fastio=%s" % EXTPATH]


def run(args, env, **kwargs):
    return subprocess.run(args, env=env, check=True, capture_output=True, **kwargs)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A repository with small files and a large one, and the stream and
    pull clones a stock server makes of it."""
    tmp = tmp_path_factory.mktemp("servefresh")
    (tmp / "hgrc").write_text("[ui]\nusername = t\n")
    env = dict(os.environ, HGRCPATH=str(tmp / "hgrc"), HGPLAIN="1")
    env.pop("PYTHONPATH", None)
    src = tmp / "src"
    run([HG, "init", str(src)], env)
    rand = random.Random(7)
    for commit in range(4):
        for i in range(60):
            d = src / ("d%d" % (i % 6))
            d.mkdir(exist_ok=True)
            with open(d / ("f%d" % i), "a") as f:
                f.write("commit %d file %d\n" % (commit, i) * (i + 1))
        with open(src / "big", "ab") as f:
            f.write(rand.randbytes(200000))
        run([HG, "-R", str(src), "commit", "-qAm", "c%d" % commit], env)
    run([HG, "-R", str(src), "phase", "--public", "-r", "."], env)
    refs = {}
    with Server(src, tmp, env, []) as server:
        for kind in ("stream", "pull"):
            refs[kind] = tmp / ("ref-" + kind)
            run(clone_args(kind, server.url, refs[kind]), env)
    return tmp, src, env, refs


def clone_args(kind, url, dest, extra=()):
    flags = ["--stream"] if kind == "stream" else []
    return [HG, "clone", "-q", "-U"] + flags + list(extra) + [url, str(dest)]


class Server:
    """``hg serve -d`` of ``repo`` (``args``: more of its arguments)."""

    def __init__(self, repo, tmp, env, args):
        self.port = free_ports(1)[0]
        self.pidfile = tmp / ("serve-%d.pid" % self.port)
        self.errorlog = tmp / ("errors-%d.log" % self.port)
        self.url = "http://127.0.0.1:%d/" % self.port
        run(
            [HG, "-R", str(repo), "serve", "-d", "-a", "127.0.0.1"]
            + ["-p", str(self.port), "--pid-file", str(self.pidfile)]
            + ["--errorlog", str(self.errorlog)]
            + list(args),
            env,
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            os.kill(int(self.pidfile.read_text()), 15)
        except (OSError, ValueError):
            pass

    def errors(self):
        try:
            return self.errorlog.read_text()
        except FileNotFoundError:
            return ""


class WSGIServer(Server):
    """``repo`` served by an hgweb WSGI application in a threaded WSGI
    server (wsgiref), the extension enabled in the configuration."""

    def __init__(self, repo, tmp, env, args):
        self.port = free_ports(1)[0]
        self.errorlog = tmp / ("wsgi-errors-%d.log" % self.port)
        self.url = "http://127.0.0.1:%d/" % self.port
        hgrc = tmp / "wsgi.hgrc"
        hgrc.write_text("[extensions]\nfastio = %s\n" % EXTPATH)
        with open(self.errorlog, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", WSGI, str(repo), str(self.port)],
                env=dict(env, HGRCPATH=str(hgrc)),
                stdout=subprocess.PIPE,
                stderr=log,
            )
        assert self.proc.stdout.readline() == b"ready\n", self.errors()

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()

    def errors(self):
        # its stderr, but for the messages of clones waiting for one
        # another's lock
        return "".join(
            line
            for line in super().errors().splitlines(True)
            if not line.startswith(("waiting for lock on ", "got lock after "))
        )


# an hgweb application served by wsgiref, a thread per request, under
# Mercurial's demandimport
WSGI = r"""
import socketserver, sys
from wsgiref import simple_server
from mercurial import demandimport
demandimport.enable()
from mercurial.hgweb import hgweb

application = hgweb(sys.argv[1].encode())

class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True

class Handler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass

httpd = simple_server.make_server(
    "127.0.0.1", int(sys.argv[2]), application, Server, Handler
)
print("ready", flush=True)
httpd.serve_forever()
"""


def clone_at_once(served, server_args, name, server_class=Server, delay_ms=50):
    """CLIENTS clones started together against a server started just
    before them: the failures (exit status, verify, store, server log)."""
    tmp, src, env, refs = served
    server_env = dict(env, PYTHONPATH=SHIM, FASTIO_SLOW_IMPORT_MS=str(delay_ms))
    failures = []
    with server_class(src, tmp, server_env, server_args) as server:
        dests = [tmp / ("%s-%s-%d" % (name, kind, i)) for i, kind in enumerate(CLIENTS)]
        procs = [
            subprocess.Popen(
                clone_args(kind, server.url, dest, EXT),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for kind, dest in zip(CLIENTS, dests)
        ]
        for kind, dest, proc in zip(CLIENTS, dests, procs):
            err = proc.communicate(timeout=600)[1].decode(errors="replace")
            if proc.returncode:
                failures.append("%s clone: exit %d: %s" % (kind, proc.returncode, err))
                continue
            verify = subprocess.run(
                [HG, "-R", str(dest), "verify", "-q"], env=env, capture_output=True
            )
            if verify.returncode:
                failures.append("%s clone does not verify: %r" % (kind, verify))
            same = subprocess.run(
                [sys.executable, STORECOMPARE, "--content-only", str(refs[kind]), dest],
                env=env,
                capture_output=True,
                text=True,
            )
            if same.returncode:
                failures.append("%s clone differs: %s" % (kind, same.stdout))
        errors = server.errors()
        if errors:
            failures.append("server log:\n" + errors)
    return failures


def test_fresh_server_with_the_extension(served):
    assert clone_at_once(served, EXT, "fastio") == []


def test_the_race_is_reproduced(served):
    # the same without the extension on the server (stock's threads load
    # modules lazily): the test above would catch the race
    failures = clone_at_once(served, [], "stock")
    assert any(" clone: exit " in failure for failure in failures), failures


def test_wsgi_application_with_the_extension(served):
    # its first request loads what the requests may use (a request thread:
    # the shim delays every module by 5 ms there), the others wait for it
    assert clone_at_once(served, [], "wsgi", WSGIServer, delay_ms=5) == []
