"""``fastio.durable``: an apply's data is flushed before its journal ends.

The order is read from the system calls (strace): with ``durable=yes`` the
flush (``syncfs``, or an ``fsync`` of every file the transaction wrote and
of their directories) comes before the journal is renamed to ``undo``;
with the default there is no flush call at all.  SIGKILLs at random points
of durable applies leave repositories that ``hg recover`` and
``hg verify`` accept.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import EXTPATH, FIXTURES

HG = os.path.join(os.path.dirname(sys.executable), "hg")
FLUSH_CALLS = ("syncfs", "fsync", "fdatasync", "sync", "sync_file_range", "msync")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("durable")
    (tmp / "hgrc").write_text(
        "[ui]\nusername = t\n[experimental]\nstream-v3 = yes\n"
        "[extensions]\nfastio = %s\n" % EXTPATH
    )
    env = dict(os.environ, HGRCPATH=str(tmp / "hgrc"), HGPLAIN="1")
    src = tmp / "src"
    subprocess.run([HG, "init", str(src)], env=env, check=True)
    for i in range(300):
        d = src / ("d%d" % (i % 7)) / ("s%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        (d / ("f%d" % i)).write_text("content %d\n" % i * (1 + i % 40))
    subprocess.run([HG, "-R", str(src), "commit", "-qAm", "a"], env=env, check=True)
    bundles = {}
    for name, spec in (
        ("cg", "none-v2"),
        ("stream2", "none-v2;stream=v2"),
        ("stream3", "none-v2;stream=v3-exp"),
    ):
        path = tmp / ("%s.hg" % name)
        subprocess.run(
            [HG, "-R", str(src), "bundle", "-q", "-a", "-t", spec, str(path)],
            env=env,
            check=True,
        )
        bundles[name] = str(path)
    bundles["packed1"] = str(tmp / "packed1.hg")
    subprocess.run(
        [HG, "-R", str(src), "debugcreatestreamclonebundle", bundles["packed1"]],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return tmp, env, bundles


def apply_command(repo, kind, bundle):
    if kind == "packed1":
        return [HG, "-R", repo, "debugapplystreamclonebundle", bundle]
    return [HG, "-R", repo, "unbundle", "-q", bundle]


def traced_apply(work, kind, *config):
    """The system calls of applying bundle ``kind`` to a new repository:
    ``[(call, argument text)]`` in order."""
    tmp, env, bundles = work
    repo = str(tmp / ("r-%s-%d" % (kind, random.getrandbits(32))))
    subprocess.run([HG, "init", repo], env=env, check=True)
    log = repo + ".strace"
    args = []
    for item in config:
        args += ["--config", item]
    calls = ",".join(
        FLUSH_CALLS + ("rename", "renameat", "renameat2", "unlink", "unlinkat")
    )
    proc = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=" + calls, "-o", log]
        + apply_command(repo, kind, bundles[kind])
        + args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.returncode == 0, proc.stderr
    subprocess.run([HG, "-R", repo, "verify", "-q"], env=env, check=True)
    calls = []
    with open(log) as f:
        for line in f:
            m = re.match(r"\d+\s+(\w+)\((.*)", line)
            if m and "resumed>" not in line:
                calls.append((m.group(1), m.group(2)))
    return repo, calls, proc.stderr


def durable_apply(work, kind, method):
    return traced_apply(
        work,
        kind,
        "fastio.durable=yes",
        "devel.fastio.durable-method=" + method,
        "fastio.report=yes",
    )


def journal_end(calls):
    """Index of the first call that ends what ``hg recover`` needs: the
    rename of the store's journal to undo, or the removal of the list of
    new directories (a stream's)."""
    for i, (call, args) in enumerate(calls):
        if call.startswith("rename") and '/store/journal"' in args:
            return i
        if call.startswith("unlink") and "/fastio-newpaths" in args:
            return i
    raise AssertionError("the journal was never renamed: %r" % calls)


strace = pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")


@strace
@pytest.mark.parametrize("kind", ["cg", "stream2", "stream3", "packed1"])
def test_default_flushes_nothing(work, kind):
    __, calls, __ = traced_apply(work, kind)
    assert [c for c in calls if c[0] in FLUSH_CALLS] == []


@strace
@pytest.mark.parametrize("kind", ["cg", "stream2", "stream3", "packed1"])
def test_syncfs_before_the_journal_ends(work, kind):
    __, calls, err = durable_apply(work, kind, "syncfs")
    end = journal_end(calls)
    flushes = [i for i, c in enumerate(calls) if c[0] == "syncfs"]
    assert re.search(rb"fastio: durable: flushed 1 filesystem\(s\) by syncfs in", err)
    if kind == "cg":
        assert len(flushes) == 1 and flushes[0] < end, calls
    else:
        # then the requirements Mercurial writes after a stream's
        # transaction, once the repository is unlocked
        assert len(flushes) == 2 and flushes[0] < end < flushes[1], calls
        assert b"by syncfs (requirements) in" in err


def store_files(repo):
    out = set()
    for root, __, files in os.walk(os.path.join(repo, ".hg", "store")):
        for name in files:
            # requires: written by hg init, not by the apply
            if not name.startswith(("undo", "journal", "requires")):
                out.add(os.path.join(root, name))
    return out


@strace
@pytest.mark.parametrize("kind", ["cg", "stream2"])
def test_fsync_each_file_and_directory_before_the_journal_ends(work, kind):
    repo, calls, err = durable_apply(work, kind, "fsync")
    end = journal_end(calls)
    before_end = [c for c in calls[:end] if c[0] == "fsync"]
    # strace -y is not used: count instead, every store file and every
    # directory holding one
    files = store_files(repo)
    dirs = {os.path.dirname(p) for p in files}
    m = re.search(rb"flushed (\d+) files and (\d+) directories by fsync", err)
    assert m, err
    assert int(m.group(1)) >= len(files)
    assert int(m.group(2)) >= len(dirs)
    assert len(before_end) >= len(files) + len(dirs)


def durable_flushes(env, args):
    out = subprocess.run(
        [HG] + args + ["--config", "fastio.durable=yes", "--debug"],
        env=env,
        cwd=env["TESTTMP"],
        stdout=subprocess.PIPE,
        check=True,
    ).stdout
    return re.findall(
        rb"fastio: durable: flushed .* by \w+( \((?:requirements|working copy)\))? in",
        out,
    )


def test_clones_and_pull_from_a_peer_are_flushed(work):
    tmp, env, __ = work
    # the remote side runs "hg" from PATH, in TESTTMP
    path = os.pathsep.join([os.path.dirname(HG), env.get("PATH", "")])
    env = dict(env, TESTTMP=str(tmp), PATH=path)
    ssh = ["-e", "%s %s" % (sys.executable, os.path.join(FIXTURES, "dummyssh"))]
    src = "ssh://user@dummy/src"
    stream = durable_flushes(env, ["clone", "-U", "--stream", src, "c1"] + ssh)
    assert stream == [b"", b" (requirements)"]
    # and the checkout, once it is done
    stream = durable_flushes(env, ["clone", "--stream", src, "c3"] + ssh)
    assert stream == [b"", b" (requirements)", b" (working copy)"]
    pull = durable_flushes(env, ["clone", "-U", "--pull", src, "c2"] + ssh)
    assert pull == [b""]
    subprocess.run([HG, "init", str(tmp / "p")], env=env, check=True)
    pull = durable_flushes(env, ["-R", str(tmp / "p"), "pull", src] + ssh)
    assert pull == [b""]


def test_bad_method_is_refused(work):
    tmp, env, bundles = work
    subprocess.run([HG, "init", str(tmp / "bad")], env=env, check=True)
    proc = subprocess.run(
        apply_command(str(tmp / "bad"), "cg", bundles["cg"])
        + ["--config", "fastio.durable=yes"]
        + ["--config", "devel.fastio.durable-method=sometimes"],
        env=env,
        stderr=subprocess.PIPE,
    )
    assert proc.returncode != 0
    assert b"durable-method must be" in proc.stderr


@pytest.mark.parametrize("kind", ["cg", "stream2"])
def test_killed_durable_applies_recover(work, kind):
    """SIGKILL at random points of durable applies (fsync per file: the
    slowest flush, so that kills land inside it too)."""
    tmp, env, bundles = work
    rng = random.Random("durable-kill-%s" % kind)
    template = str(tmp / ("tpl-" + kind))
    subprocess.run([HG, "init", template], env=env, check=True)
    command = ["--config", "fastio.durable=yes"]
    command += ["--config", "devel.fastio.durable-method=fsync"]
    start = time.time()
    ref = str(tmp / ("ref-" + kind))
    shutil.copytree(template, ref)
    subprocess.run(
        apply_command(ref, kind, bundles[kind]) + command, env=env, check=True
    )
    duration = time.time() - start
    outcomes = set()
    for trial in range(8):
        repo = str(tmp / ("kill-%s-%d" % (kind, trial)))
        shutil.copytree(template, repo)
        p = subprocess.Popen(
            apply_command(repo, kind, bundles[kind]) + command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, duration * 1.2))
        killed = p.poll() is None
        if killed:
            p.send_signal(signal.SIGKILL)
        p.wait()
        journal = os.path.join(repo, ".hg", "store", "journal")
        # an apply that ended by itself left no journal behind
        assert killed or (p.returncode == 0 and not os.path.exists(journal))
        subprocess.run(
            [HG, "-R", repo, "recover"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        verify = subprocess.run(
            [HG, "-R", repo, "verify", "-q"], env=env, stderr=subprocess.PIPE
        )
        assert verify.returncode == 0, verify.stderr
        tip = subprocess.run(
            [HG, "-R", repo, "log", "-r", "tip", "-T", "{rev}"],
            env=env,
            stdout=subprocess.PIPE,
            check=True,
        ).stdout
        outcomes.add(tip)
        if not killed:
            assert tip == b"0"
        shutil.rmtree(repo)
    # every repository is either empty or complete
    assert outcomes <= {b"-1", b"0"}, outcomes
