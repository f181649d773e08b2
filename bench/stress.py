#!/usr/bin/env python3
"""Randomized reliability runs of hg-fastio (``make stress``).

Two kinds of trial, each in a repository of its own:

mutation
    A real bundle of each format (stream v1, v2, v3; changegroup v1, v2) is
    changed at random (bit flips in its payload or anywhere, truncations,
    length fields, file names) and applied with fastio to a fresh repository
    (changegroups: every other trial to a repository that already has some
    of the revisions).  Pass: no traceback; on failure an ``abort:`` line, a
    non-zero exit and the repository byte for byte as before (every file,
    every directory, outside ``.hg/cache`` and ``.hg/journal.desc``, which
    every aborted transaction leaves, stock's too); on success ``hg verify``
    passes.  A failing trial is replayed with stock Mercurial to tell the
    extension's faults from Mercurial's.
kill
    A larger bundle is applied with a slow ``close()`` (fixtures/latency.c)
    and SIGKILLed at a random time; then ``hg recover`` runs.  Pass:
    ``hg verify`` passes and no stray file: the store holds exactly the files
    it held before (the apply was rolled back) or exactly those of a complete
    apply of the bundle (it had committed), transaction leftovers
    (``undo.*``) aside.  Empty directories left by the recovery are counted
    apart (Mercurial's rollback never removes directories).
interrupt
    The same apply gets SIGINT or SIGTERM at a random time (Ctrl-C, a
    service stopped).  Pass: no traceback; an apply still running when the
    signal came ends with ``interrupted!`` or ``killed!`` and exit 255, or
    is ended by the signal itself outside any transaction (it came after
    Python's exit took Mercurial's handlers away); the signal comes once the
    store is locked (before, it would test Mercurial's start-up);
    ``hg verify`` passes; the repository is byte for byte as before (rolled
    back) or the store holds exactly the files of a complete apply.  Or
    (``in-close``, Mercurial's own window, stock the same) the signal came
    as ``transaction.close()`` ran between the point where the transaction
    stops counting as running and its journal's rename to ``undo``: no
    rollback runs, the journal stays for ``hg recover``.  Then the store
    holds the files of a complete apply plus the journal's, no
    ``transaction abort!`` was printed, and ``hg recover`` rolls the apply
    back to a verified store of the files it held before.  Or (``in-init``,
    the same in ``transaction.__init__``) the signal came once the journal
    was created and before the transaction was whole: nothing applied, the
    journal left, ``hg recover`` removes it.

Usage: stress.py [--seed N] [--count N] [--kills N] [--interrupts N]
       [--formats v1,v2,...] [--jobs N] [--workdir DIR] [--stock-kills N]
       [--durable METHOD] [--parallel]

``--parallel`` applies the files of every changegroup in two worker
processes (``fastio.apply-workers=2``, ``devel.fastio.parallel-min-files=1``),
so that faults, kills and signals land in workers and in the handing over.
``--durable`` runs every fastio apply with ``fastio.durable=yes`` (the
method: ``auto``, ``syncfs`` or ``fsync`` per file), so that kills also
land in the flush.
"""

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# what the benchmarks share with the tests (fixtures/: repository
# generators, shims, comparisons)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

import bundlekit  # noqa: E402
import latencyshim  # noqa: E402

EXT = os.path.join(ROOT, "hgext3rd", "fastio")
FORMATS = ("v1", "v2", "v3", "cg1", "cg2")
HG = os.path.join(os.path.dirname(sys.executable), "hg")
BAD_OUTPUT = (b"Traceback", b"** Unknown exception", b"** unknown exception")
HOSTILE = [
    b"../evil.i",
    b"data/../../evil.i",
    b"/tmp/fastio-stress-evil.i",
    b".hg/hgrc",
    b"data/.hg/hgrc.i",
    b"data/a\0b.i",
    b"data/a\nb.i",
    b"",
    b"data/./x.i",
    b"data//x.i",
    b"data/",
    b"C:/x.i",
    b"data\\..\\x.i",
]

# -- environment ----------------------------------------------------------------


def write_hgrc(path, fastio, durable=None, parallel=False):
    with open(path, "w") as f:
        f.write("[ui]\nusername = stress\n[experimental]\nstream-v3 = yes\n")
        if fastio:
            f.write("[extensions]\nfastio = %s\n" % EXT)
        if fastio and durable:
            f.write("[fastio]\ndurable = yes\n")
            f.write("[devel]\nfastio.durable-method = %s\n" % durable)
        if fastio and parallel:
            # every changegroup's files applied by two worker processes
            f.write("[fastio]\napply-workers = 2\n")
            f.write("[devel]\nfastio.parallel-min-files = 1\n")
            f.write("fastio.small-applies = false\n")


def hg(work, args, cwd=None, stock=False, env_extra=None, timeout=120, **kw):
    env = dict(os.environ)
    env["HGRCPATH"] = os.path.join(work, "hgrc-stock" if stock else "hgrc")
    env["HGPLAIN"] = "1"
    env.pop("HGUSER", None)
    if env_extra:
        env.update(env_extra)
    return subprocess.run(
        [HG] + args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        **kw,
    )


def check(proc, what):
    if proc.returncode:
        sys.exit("stress: %s failed:\n%s" % (what, proc.stdout.decode()))


def make_source(work, name, nfiles, ndirs, seed):
    """A repository: ``nfiles`` files in ``ndirs`` directories, three
    revisions (the third also adds files)."""
    rng = random.Random(seed)
    repo = os.path.join(work, name)
    check(hg(work, ["init", repo]), "init")

    def write_files(count, rev):
        for i in range(count):
            d = os.path.join(repo, "d%02d" % (i % ndirs), "sub" if i % 3 else "")
            os.makedirs(d, exist_ok=True)
            size = rng.choice((10, 100, 1000, 5000))
            with open(os.path.join(d, "f%05d.txt" % i), "wb") as f:
                f.write(b"rev %d file %d\n" % (rev, i))
                f.write(bytes(rng.randrange(32, 127) for __ in range(size)))

    write_files(nfiles, 0)
    check(hg(work, ["-R", repo, "commit", "-qAm", "r0"]), "commit")
    write_files(nfiles // 4, 1)
    check(hg(work, ["-R", repo, "commit", "-qAm", "r1"]), "commit")
    write_files(nfiles + nfiles // 10, 2)
    check(hg(work, ["-R", repo, "commit", "-qAm", "r2"]), "commit")
    check(hg(work, ["-R", repo, "phase", "--public", "-r", "."]), "phase")
    return repo


def make_bundles(work, repo, prefix):
    out = {}
    for fmt, args in (
        ("v1", None),
        ("v2", ["-t", "none-v2;stream=v2"]),
        ("v3", ["-t", "none-v2;stream=v3-exp"]),
        ("cg1", ["-t", "none-v1"]),
        ("cg2", ["-t", "none-v2"]),
    ):
        path = os.path.join(work, "%s-%s.hg" % (prefix, fmt))
        if args is None:
            proc = hg(work, ["-R", repo, "debugcreatestreamclonebundle", path])
        else:
            proc = hg(work, ["-R", repo, "bundle", "-q", "-a"] + args + [path])
        check(proc, "bundle %s" % fmt)
        out[fmt] = path
    for fmt, t in (("cg1", "none-v1"), ("cg2", "none-v2")):
        path = os.path.join(work, "%s-%s-base0.hg" % (prefix, fmt))
        proc = hg(work, ["-R", repo, "bundle", "-q", "--base", "0", "-t", t, path])
        check(proc, "bundle --base 0")
        out[fmt + "-base0"] = path
    return out


def apply_args(fmt, path):
    if fmt == "v1":
        return ["debugapplystreamclonebundle", path]
    return ["unbundle", "-q", path]


# -- repository snapshots ---------------------------------------------------------


def snapshot(repo):
    """Every path under ``repo`` (and its parent's other entries are the
    trial's own), with a digest of each file's content."""
    out = {}
    for root, dirs, files in os.walk(repo):
        rel = os.path.relpath(root, repo)
        if rel == os.path.join(".hg", "cache") or rel.startswith(
            os.path.join(".hg", "cache") + os.sep
        ):
            continue
        for name in files:
            p = os.path.join(rel, name)
            if p == os.path.join(".hg", "journal.desc"):
                continue
            full = os.path.join(root, name)
            if os.path.islink(full):
                out[p] = "link:" + os.readlink(full)
                continue
            with open(full, "rb") as f:
                out[p] = hashlib.sha1(f.read()).hexdigest()
    return out


def store_files(repo):
    store = os.path.join(repo, ".hg", "store")
    files, dirs = set(), set()
    for root, dnames, fnames in os.walk(store):
        rel = os.path.relpath(root, store)
        for d in dnames:
            dirs.add(os.path.normpath(os.path.join(rel, d)))
        for n in fnames:
            p = os.path.normpath(os.path.join(rel, n))
            if not p.startswith("undo"):
                files.add(p)
    return files, dirs


def empty_dirs(repo):
    store = os.path.join(repo, ".hg", "store")
    return sum(
        1
        for root, dnames, fnames in os.walk(store)
        if root != store and not dnames and not fnames
    )


# -- mutations ----------------------------------------------------------------------


def flip_bits(rng, data, start=0):
    data = bytearray(data)
    if len(data) <= start:
        return bytes(data)
    for __ in range(rng.choice((1, 1, 2, 3, 8))):
        pos = rng.randrange(start, len(data))
        data[pos] ^= 1 << rng.randrange(8)
    return bytes(data)


def odd_length(rng, value):
    return max(
        0,
        rng.choice(
            (
                value + rng.choice((1, -1, 2, -2, 7)),
                0,
                value * 2 + 1,
                rng.randrange(1 << 16),
                (1 << rng.choice((20, 31, 32, 40, 62))) + rng.randrange(100),
            )
        ),
    )


def odd_name(rng, sb):
    choice = rng.random()
    if choice < 0.5:
        return rng.choice(HOSTILE)
    if choice < 0.7:
        return rng.choice(sb.files).name  # a duplicate
    if choice < 0.85:
        return bytes(rng.randrange(256) for __ in range(rng.randrange(1, 40)))
    name = bytearray(rng.choice(sb.files).name)
    name[rng.randrange(len(name))] = rng.choice(b"/\\.\0\n:")
    return bytes(name)


def mutate_stream(rng, fmt, data):
    sb = bundlekit.StreamBundle.parse(data)
    kind = rng.choice(
        ("flip", "flip", "rawflip", "truncate", "ptruncate", "length", "length", "name")
    )
    if kind == "rawflip":
        return kind, flip_bits(rng, data)
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip":
        return kind, sb.build(payload=flip_bits(rng, sb.payload()))
    if kind == "ptruncate":
        payload = sb.payload()
        return kind, sb.build(payload=payload[: rng.randrange(len(payload))])
    if kind == "name":
        target = rng.choice(sb.files)
        if fmt != "v1" and rng.random() < 0.2:
            target.src = rng.choice((b"x", b"\0", b"c", b"s"))
        else:
            target.name = odd_name(rng, sb)
        return kind, sb.build()
    # a length field: per file, or the counts of the whole stream
    i = rng.randrange(len(sb.files))
    f = sb.files[i]
    which = rng.choice(("data", "data", "name", "count"))
    if which == "count":
        n = len(sb.files)
        if fmt == "v3" and rng.random() < 0.5:
            g = rng.randrange(len(sb.groups))
            sb.groups[g] = odd_length(rng, sb.groups[g])
            return kind, sb.build()
        if fmt == "v3":
            payload = sb.payload()
            __, pos = bundlekit.read_uvarint(payload, 0)
            payload = bundlekit.uvarint(odd_length(rng, len(sb.groups))) + payload[pos:]
            return kind, sb.build(payload=payload)
        if rng.random() < 0.5:
            return kind, sb.build(filecount=odd_length(rng, n))
        return kind, sb.build(
            bytecount=odd_length(rng, sum(len(x.data) for x in sb.files))
        )
    if fmt == "v1":
        size = odd_length(rng, len(f.data))
        pieces = []
        for j, g in enumerate(sb.files):
            n = size if j == i else len(g.data)
            pieces.append(b"%s\0%d\n%s" % (g.name, n, g.data))
        return kind, sb.build(payload=b"".join(pieces))
    nl, dl = len(f.name), len(f.data)
    if which == "name":
        nl = odd_length(rng, nl)
    else:
        dl = odd_length(rng, dl)
    header = f.src + bundlekit.uvarint(nl) + bundlekit.uvarint(dl)
    marker = bundlekit.build_v2_file(f)
    payload = sb.payload()
    at = payload.find(marker)
    payload = payload[:at] + header + f.name + f.data + payload[at + len(marker) :]
    return kind, sb.build(payload=payload)


def mutate_cg(rng, fmt, data):
    cg = bundlekit.Changegroup.parse(data)
    kind = rng.choice(
        ("flip", "flip", "rawflip", "truncate", "ptruncate", "length", "length", "name")
    )
    payload = cg.payload
    if kind == "rawflip":
        return kind, flip_bits(rng, data)
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip":
        return kind, cg.build(flip_bits(rng, payload))
    if kind == "ptruncate":
        return kind, cg.build(payload[: rng.randrange(len(payload))])
    if kind == "length":
        pos, length = rng.choice(cg.chunks())
        new = rng.choice(
            (
                length + rng.choice((1, -1, 4, -4, 20)),
                0,
                4,
                3,
                -1,
                rng.randrange(1 << 31),
                length * 2,
            )
        )
        new = max(-(1 << 31), min(new, (1 << 31) - 1))
        field = new.to_bytes(4, "big", signed=True)
        return kind, cg.build(payload[:pos] + field + payload[pos + 4 :])
    # a file name chunk
    pos, length = rng.choice(cg.name_chunks())
    r = rng.random()
    if r < 0.6:
        name = rng.choice(HOSTILE)
        if name.startswith(b"data/"):
            name = name[5:]
    elif r < 0.8:
        name = bytes(rng.randrange(256) for __ in range(rng.randrange(1, 30)))
    else:
        name = payload[pos + 4 : pos + length]  # its neighbour's name
        other = rng.choice(cg.name_chunks())
        name = payload[other[0] + 4 : other[0] + other[1]]
    chunk = (len(name) + 4).to_bytes(4, "big") + name
    return kind, cg.build(payload[:pos] + chunk + payload[pos + length :])


# -- one trial ----------------------------------------------------------------------


def classify(work, fmt, bundle, template, trial_dir, stock=False):
    repo = os.path.join(trial_dir, "repo")
    if os.path.exists(trial_dir):
        shutil.rmtree(trial_dir)
    os.makedirs(trial_dir)
    shutil.copytree(template, repo, symlinks=True)
    before = snapshot(repo)
    empty_before = empty_dirs(repo)
    parent_before = sorted(os.listdir(trial_dir))
    try:
        proc = hg(
            work, ["-R", repo] + apply_args(fmt, bundle), stock=stock, timeout=120
        )
    except subprocess.TimeoutExpired:
        return "BAD-timeout", b""
    out = proc.stdout
    if any(b in out for b in BAD_OUTPUT):
        return "BAD-traceback", out
    if sorted(os.listdir(trial_dir)) != parent_before or os.path.exists(
        "/tmp/fastio-stress-evil.i"
    ):
        return "BAD-outside", out
    if proc.returncode == 0:
        v = hg(work, ["-R", repo, "verify", "-q"], stock=stock)
        if v.returncode:
            return "BAD-verify-after-success", out + v.stdout
        return "applied", out
    aborts = [l for l in out.splitlines() if l.startswith(b"abort:")]
    if len(aborts) != 1:
        return "BAD-abort-lines", out
    after = snapshot(repo)
    if after != before:
        diff = sorted(set(after.items()) ^ set(before.items()))
        return "BAD-changed", out + repr(diff[:10]).encode()
    if empty_dirs(repo) != empty_before:
        return "refused-dirs-left", out
    return "refused", out


def mutation_trial(job):
    try:
        return _mutation_trial(job)
    except Exception:
        # a harness error is a result too: an exception (StopIteration above
        # all) must not end the pool's iteration and lose trials unnoticed
        __, __, fmt, i = job
        traceback.print_exc()
        return ("mutation", fmt, "harness", "-", "BAD-harness", None, i)


def _mutation_trial(job):
    work, seed, fmt, i = job
    rng = random.Random("%s-%s-%d" % (seed, fmt, i))
    existing = fmt.startswith("cg") and i % 2 == 1
    key = fmt + ("-base0" if existing else "")
    with open(os.path.join(work, "small-%s.hg" % key), "rb") as f:
        data = f.read()
    mutate = mutate_cg if fmt.startswith("cg") else mutate_stream
    kind, mutated = mutate(rng, fmt, data)
    trial_dir = os.path.join(work, "trials", "%s-%d" % (fmt, i))
    os.makedirs(trial_dir, exist_ok=True)
    bundle = trial_dir + ".hg"
    with open(bundle, "wb") as f:
        f.write(mutated)
    template = os.path.join(work, "tpl-base0" if existing else "tpl-empty")
    outcome, out = classify(work, fmt, bundle, template, trial_dir)
    stock = None
    if outcome.startswith("BAD"):
        stock, __ = classify(
            work, fmt, bundle, template, trial_dir + "-stock", stock=True
        )
        with open(trial_dir + ".log", "wb") as f:
            f.write(out)
        if stock == outcome:
            # Mercurial's own behaviour (the bundle is accepted, or fails,
            # the same way without the extension): not the extension's
            outcome = "as-stock:" + outcome[4:]
    if not outcome.startswith("BAD"):
        shutil.rmtree(trial_dir, ignore_errors=True)
        os.unlink(bundle)
    return (
        "mutation",
        fmt,
        kind,
        "existing" if existing else "fresh",
        outcome,
        stock,
        i,
    )


def start_apply(work, path, trial_dir, stock, output):
    """The apply of a kill or interrupt trial started in a copy of its
    template (slow closes): ``(repo, process)``."""
    fmt = path.split("-")[0]
    existing = path.endswith("existing")
    bundle = os.path.join(work, "big-%s.hg" % (fmt + ("-base0" if existing else "")))
    template = os.path.join(work, "tplbig-base0" if existing else "tpl-empty")
    if os.path.exists(trial_dir):
        shutil.rmtree(trial_dir)
    os.makedirs(trial_dir)
    repo = os.path.join(trial_dir, "repo")
    shutil.copytree(template, repo, symlinks=True)
    env = dict(os.environ)
    env["HGRCPATH"] = os.path.join(work, "hgrc-stock" if stock else "hgrc")
    env["HGPLAIN"] = "1"
    env["LD_PRELOAD"] = os.path.join(work, "closedelay.so")
    env["FASTIO_CLOSE_DELAY_US"] = "300"
    return repo, lambda: subprocess.Popen(
        [HG, "-R", repo] + apply_args(fmt, bundle),
        env=env,
        stdout=output,
        stderr=subprocess.STDOUT,
    )


def complete_files(work, path):
    """The store files a complete apply of the trial's bundle leaves."""
    with open(os.path.join(work, "complete-%s.lst" % path)) as f:
        return set(f.read().split("\n")) - {""}


def kill_trial(job):
    work, seed, path, i, duration, stock = job
    rng = random.Random("%s-kill-%s-%d-%s" % (seed, path, i, stock))
    trial_dir = os.path.join(
        work, "kills", "%s-%d%s" % (path, i, "-stock" if stock else "")
    )
    repo, start = start_apply(work, path, trial_dir, stock, subprocess.DEVNULL)
    before_files, __ = store_files(repo)
    delay = rng.uniform(0.2, duration)
    p = start()
    time.sleep(delay)
    killed = p.poll() is None
    if killed:
        p.send_signal(signal.SIGKILL)
    p.wait()
    rec = hg(work, ["-R", repo, "recover"], stock=stock)
    out = rec.stdout
    if any(b in out for b in BAD_OUTPUT):
        return ("kill", path, killed, "BAD-recover-traceback", stock, i)
    v = hg(work, ["-R", repo, "verify", "-q"], stock=stock)
    files, __ = store_files(repo)
    complete = complete_files(work, path)
    if v.returncode:
        outcome = "BAD-verify"
    elif files == before_files:
        outcome = "rolled-back"
    elif files == complete:
        outcome = "complete"
    else:
        outcome = "BAD-stray-files"
        with open(trial_dir + ".log", "w") as f:
            f.write(
                "stray: %r\nmissing: %r\n"
                % (
                    sorted(files - complete - before_files)[:20],
                    sorted((complete | before_files) - files)[:20],
                )
            )
    dirs = empty_dirs(repo)
    if not outcome.startswith("BAD"):
        shutil.rmtree(trial_dir, ignore_errors=True)
    return ("kill", path, killed, outcome, stock, i, dirs)


# what Mercurial prints when it stops for each signal
INTERRUPTED = {"INT": b"interrupted!", "TERM": b"killed!"}

# what stock prints as it exits after a signal in one of its transaction's
# own windows (the ``in-close`` and ``in-init`` outcomes): the
# transaction's finalizer fails, and Python ignores the error; the line
# ending the error, for the outcome it goes with
STOCK_DEL_START = b"Exception ignored in: <function transaction.__del__"
STOCK_DEL_ENDS = {
    # in close(): it tries to abort a transaction no longer running
    "in-close": b"cannot use transaction when it is already committed/aborted",
    # in __init__(): the transaction is half made
    "in-init": b"'transaction' object has no attribute ",
}


def without_stock_del_noise(out):
    """``out`` without the ignored errors of ``STOCK_DEL_ENDS``, and the
    outcomes they go with (an error ending otherwise is kept)."""
    lines, block, kinds = [], None, set()
    for line in out.splitlines(True):
        if line.startswith(STOCK_DEL_START):
            lines.extend(block or ())
            block = [line]
            continue
        if block is None:
            lines.append(line)
            continue
        block.append(line)
        for kind, end in STOCK_DEL_ENDS.items():
            if end in line:
                kinds.add(kind)
                block = None
                break
    lines.extend(block or ())
    return b"".join(lines), kinds


def left_for_recover(work, repo, out, stock, before_files, expected):
    """Whether the store holds the ``expected`` files and a journal, no
    rollback was started, and ``hg recover`` brings it back to a verified
    store of ``before_files``."""
    store = os.path.join(repo, ".hg", "store")
    if not os.path.exists(os.path.join(store, "journal")):
        return False
    if b"transaction abort!" in out:
        return False  # a rollback started: judged as such, not here
    files, __ = store_files(repo)
    if {f for f in files if not f.startswith("journal")} != expected:
        return False
    rec = hg(work, ["-R", repo, "recover"], stock=stock)
    if rec.returncode or any(b in rec.stdout for b in BAD_OUTPUT):
        return False
    if hg(work, ["-R", repo, "verify", "-q"], stock=stock).returncode:
        return False
    return store_files(repo)[0] == before_files


def in_close(work, path, repo, out, stock, before_files):
    """Whether the signal came in Mercurial's own window of
    ``transaction.close()``: once the transaction stopped counting as
    running (so no rollback runs) and before it renamed its journal to
    ``undo``.  The journal stays and ``hg recover`` rolls the apply back.
    Stock leaves the same (a signal sent there by the process itself, on
    Mercurial 7.2.4); the extension holds no signal there."""
    expected = complete_files(work, path)
    return left_for_recover(work, repo, out, stock, before_files, expected)


def in_init(work, repo, out, stock, before_files):
    """Whether the signal came in Mercurial's own window of
    ``transaction.__init__``: once its journal is created and before the
    transaction is whole (nothing applied; its finalizer then fails on
    it).  The journal stays and ``hg recover`` removes it.  Stock leaves
    the same (a signal sent there by the process itself, on Mercurial
    7.2.4); the extension runs no code there."""
    return left_for_recover(work, repo, out, stock, before_files, before_files)


def interrupt_trial(job):
    work, seed, path, i, duration, stock, signame = job
    rng = random.Random("%s-%s-%s-%d-%s" % (seed, signame, path, i, stock))
    trial_dir = os.path.join(
        work, "interrupts", "%s-%s-%d%s" % (signame, path, i, "-stock" if stock else "")
    )
    repo, start = start_apply(work, path, trial_dir, stock, subprocess.PIPE)
    before = snapshot(repo)
    before_files, __ = store_files(repo)
    delay = rng.uniform(0, duration)
    p = start()
    # (from the lock on: a signal during Mercurial's start-up, before it
    # sets its handlers, tests Python's imports, not the apply)
    lock = os.path.join(repo, ".hg", "store", "lock")
    deadline = time.time() + 30
    while not os.path.lexists(lock) and p.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(delay)
    signalled = p.poll() is None
    if signalled:
        p.send_signal(getattr(signal, "SIG" + signame))
    out = p.communicate()[0]
    # ended by the signal's default action: it came after Python took
    # Mercurial's handlers away at exit; then no transaction may be open
    died = p.returncode == -getattr(signal, "SIG" + signame)
    result = ("interrupt", path, signalled, None, stock, i, signame, died)
    # (stock's noise is judged with the outcome it goes with, below)
    quiet, del_noise = without_stock_del_noise(out)
    if any(b in quiet for b in BAD_OUTPUT):
        outcome = "BAD-traceback"
    elif died and os.path.exists(os.path.join(repo, ".hg", "store", "journal")):
        outcome = "BAD-died-in-transaction"
    elif (
        p.returncode
        and not died
        and (p.returncode != 255 or INTERRUPTED[signame] not in out.splitlines())
    ):
        outcome = "BAD-exit"
    elif hg(work, ["-R", repo, "verify", "-q"], stock=stock).returncode:
        outcome = "BAD-verify"
    elif snapshot(repo) == before:
        outcome = "rolled-back"
    elif store_files(repo)[0] == complete_files(work, path):
        outcome = "complete"
    elif in_close(work, path, repo, out, stock, before_files):
        outcome = "in-close"
    elif in_init(work, repo, out, stock, before_files):
        outcome = "in-init"
    else:
        outcome = "BAD-changed"
    if del_noise - {outcome} and not outcome.startswith("BAD"):
        outcome = "BAD-traceback"
    if outcome.startswith("BAD"):
        with open(trial_dir + ".log", "wb") as f:
            f.write(b"exit %d\n%s" % (p.returncode, out))
    else:
        shutil.rmtree(trial_dir, ignore_errors=True)
    return result[:3] + (outcome,) + result[4:]


# -- driver -------------------------------------------------------------------------


def setup(work, durable=None, parallel=False):
    write_hgrc(os.path.join(work, "hgrc"), True, durable, parallel)
    write_hgrc(os.path.join(work, "hgrc-stock"), False)
    latencyshim.build(work, "closedelay.so")
    small = make_source(work, "src-small", 40, 5, 1)
    big = make_source(work, "src-big", 1500, 30, 2)
    for prefix, repo in (("small", small), ("big", big)):
        for key, path in make_bundles(work, repo, prefix).items():
            os.rename(path, os.path.join(work, "%s-%s.hg" % (prefix, key)))
    check(hg(work, ["init", os.path.join(work, "tpl-empty")]), "init")
    for name, src in (("tpl-base0", small), ("tplbig-base0", big)):
        check(
            hg(work, ["clone", "-q", "-U", "-r", "0", src, os.path.join(work, name)]),
            "clone",
        )
    # what a complete apply of each big bundle leaves in the store
    for path in KILL_PATHS:
        fmt = path.split("-")[0]
        existing = path.endswith("existing")
        ref = os.path.join(work, "ref-%s" % path)
        shutil.copytree(
            os.path.join(work, "tplbig-base0" if existing else "tpl-empty"),
            ref,
            symlinks=True,
        )
        bundle = os.path.join(
            work, "big-%s.hg" % (fmt + ("-base0" if existing else ""))
        )
        check(
            hg(work, ["-R", ref] + apply_args(fmt, bundle), stock=True),
            "reference apply",
        )
        files, __ = store_files(ref)
        with open(os.path.join(work, "complete-%s.lst" % path), "w") as f:
            f.write("\n".join(sorted(files)))
        shutil.rmtree(ref)


KILL_PATHS = ("v1", "v2", "v3", "cg1", "cg2", "cg2-existing")


def measure(work, path):
    """How long an uninterrupted apply of the kill trials takes."""
    fmt = path.split("-")[0]
    existing = path.endswith("existing")
    repo = os.path.join(work, "measure")
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(
        os.path.join(work, "tplbig-base0" if existing else "tpl-empty"),
        repo,
        symlinks=True,
    )
    bundle = os.path.join(work, "big-%s.hg" % (fmt + ("-base0" if existing else "")))
    start = time.time()
    check(
        hg(
            work,
            ["-R", repo] + apply_args(fmt, bundle),
            env_extra={
                "LD_PRELOAD": os.path.join(work, "closedelay.so"),
                "FASTIO_CLOSE_DELAY_US": "300",
            },
        ),
        "timed apply",
    )
    took = time.time() - start
    shutil.rmtree(repo)
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=500, help="mutations per format")
    ap.add_argument("--kills", type=int, default=30, help="SIGKILL trials per path")
    ap.add_argument(
        "--interrupts",
        type=int,
        default=10,
        help="SIGINT and SIGTERM trials per path (each)",
    )
    ap.add_argument(
        "--stock-kills", type=int, default=0, help="the same with stock (not judged)"
    )
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument(
        "--durable",
        choices=("auto", "syncfs", "fsync"),
        help="applies with fastio.durable=yes, flushing by this method",
    )
    ap.add_argument(
        "--parallel",
        action="store_true",
        help="every changegroup's files applied by two worker processes",
    )
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    for f in formats:
        if f not in FORMATS:
            ap.error("unknown format %s" % f)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # started in the background by a shell without job control, which
        # ignores SIGINT: the applies would inherit that, and every SIGINT
        # trial would pass by completing, testing nothing
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print("stress: SIGINT was ignored here; the applies get it again")
    work = args.workdir or tempfile.mkdtemp(prefix="fastio-stress-")
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    print(
        "stress: seed %d, %d mutations per format, %d kills and %d interrupts"
        " per path, %d jobs, in %s%s"
        % (
            args.seed,
            args.count,
            args.kills,
            args.interrupts,
            args.jobs,
            work,
            ", durable (%s)" % args.durable if args.durable else "",
        ),
        flush=True,
    )
    setup(work, args.durable, args.parallel)
    jobs = [(work, args.seed, fmt, i) for fmt in formats for i in range(args.count)]
    kill_paths = [p for p in KILL_PATHS if p.split("-")[0] in formats]
    timed = args.kills or args.interrupts
    durations = {p: measure(work, p) for p in kill_paths} if timed else {}
    kills = [
        (work, args.seed, p, i, durations[p], False)
        for p in kill_paths
        for i in range(args.kills)
    ]
    kills += [
        (work, args.seed, p, i, durations[p], True)
        for p in kill_paths
        for i in range(args.stock_kills)
    ]
    interrupts = [
        (work, args.seed, p, i, durations[p], stock, signame)
        for stock, count in ((False, args.interrupts), (True, args.stock_kills))
        for signame in ("INT", "TERM")
        for p in kill_paths
        for i in range(min(count, args.interrupts))
    ]
    results = []
    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.Pool(args.jobs) as pool:
            for r in pool.imap_unordered(mutation_trial, jobs, chunksize=4):
                results.append(r)
            for r in pool.imap_unordered(kill_trial, kills):
                results.append(r)
            for r in pool.imap_unordered(interrupt_trial, interrupts):
                results.append(r)
    else:
        for j in jobs:
            results.append(mutation_trial(j))
        for j in kills:
            results.append(kill_trial(j))
        for j in interrupts:
            results.append(interrupt_trial(j))
    bad = report(results, durations)
    trials = len(jobs) + len(kills) + len(interrupts)
    if len(results) != trials:
        print("stress: BAD: %d results for %d trials" % (len(results), trials))
        bad += 1
    print("stress: %d s, work directory %s" % (time.time() - t0, work))
    if not bad and not args.keep and not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


def report(results, durations):
    from collections import Counter

    bad = 0
    muts = [r for r in results if r[0] == "mutation"]
    print("\nmutations (outcome per format; kinds in parentheses)")
    print(
        "%-6s %6s %8s %8s %9s %5s  %s"
        % ("format", "trials", "applied", "refused", "as-stock", "BAD", "kinds")
    )
    for fmt in FORMATS:
        rs = [r for r in muts if r[1] == fmt]
        if not rs:
            continue
        c = Counter(r[4] for r in rs)
        nbad = sum(v for k, v in c.items() if k.startswith("BAD"))
        bad += nbad
        kinds = Counter(r[2] for r in rs)
        extra = (
            " fresh/existing %d/%d"
            % (
                sum(r[3] == "fresh" for r in rs),
                sum(r[3] == "existing" for r in rs),
            )
            if fmt.startswith("cg")
            else ""
        )
        asstock = sum(v for k, v in c.items() if k.startswith("as-stock"))
        print(
            "%-6s %6d %8d %8d %9d %5d  (%s)%s"
            % (
                fmt,
                len(rs),
                c["applied"],
                c["refused"] + c["refused-dirs-left"],
                asstock,
                nbad,
                " ".join("%s %d" % kv for kv in sorted(kinds.items())),
                extra,
            )
        )
    print(
        "refused with empty directories left in the store (stock does the same):",
        ", ".join(
            "%s %d" % (f, sum(r[4] == "refused-dirs-left" for r in muts if r[1] == f))
            for f in FORMATS
        ),
    )
    c = Counter((r[1], r[4]) for r in muts if r[4].startswith("as-stock"))
    for (f, o), n in sorted(c.items()):
        print("  %s %s: %d (stock the same)" % (f, o, n))
    for r in sorted(muts, key=lambda r: (r[1], r[6])):
        if r[4].startswith("BAD"):
            print(
                "  BAD %s #%d %s %s: %s (stock: %s)"
                % (r[1], r[6], r[2], r[3], r[4], r[5])
            )
    kills = [r for r in results if r[0] == "kill"]
    if kills:
        print(
            "\nSIGKILL trials (kill at a random time, then hg recover, hg verify, stray files)"
        )
        print(
            "%-13s %-6s %6s %6s %11s %9s %5s %10s  %s"
            % (
                "path",
                "hg",
                "trials",
                "killed",
                "rolled-back",
                "complete",
                "BAD",
                "empty-dirs",
                "apply time",
            )
        )
        for stock in (False, True):
            for p in KILL_PATHS:
                rs = [r for r in kills if r[1] == p and r[4] == stock]
                if not rs:
                    continue
                c, nbad = outcomes(rs)
                if not stock:
                    bad += nbad
                print(
                    "%-13s %-6s %6d %6d %11d %9d %5d %10d  %.2f s"
                    % (
                        p,
                        "stock" if stock else "fastio",
                        len(rs),
                        sum(r[2] for r in rs),
                        c["rolled-back"],
                        c["complete"],
                        nbad,
                        sum(r[6] for r in rs if len(r) > 6),
                        durations.get(p, 0),
                    )
                )
        for r in sorted(kills, key=lambda r: (r[4], r[1], r[5])):
            if r[3].startswith("BAD"):
                print(
                    "  BAD %s %s #%d: %s"
                    % ("stock" if r[4] else "fastio", r[1], r[5], r[3])
                )
    bad += report_interrupts([r for r in results if r[0] == "interrupt"], durations)
    print("\nstress: %s" % ("%d BAD" % bad if bad else "all passed"))
    return bad


def outcomes(trials):
    """The outcomes of kill or interrupt trials counted, and their BAD."""
    from collections import Counter

    c = Counter(r[3] for r in trials)
    return c, sum(v for k, v in c.items() if k.startswith("BAD"))


def report_interrupts(trials, durations):
    """The table of the interrupt trials; the number of fastio's BAD."""
    if not trials:
        return 0
    bad = 0
    print(
        "\nSIGINT and SIGTERM trials (signal at a random time, then hg verify,"
        " the repository as before or complete; in-close: in Mercurial's"
        " window of the transaction's close, the journal left and hg recover"
        " rolling back; in-init: in its __init__, the journal made and"
        " nothing applied; died: ended by the signal itself, after Python's exit"
        " took Mercurial's handlers away)"
    )
    print(
        "%-13s %-4s %-6s %6s %10s %11s %9s %8s %7s %5s %5s  %s"
        % (
            "path",
            "sig",
            "hg",
            "trials",
            "signalled",
            "rolled-back",
            "complete",
            "in-close",
            "in-init",
            "died",
            "BAD",
            "apply time",
        )
    )
    for stock in (False, True):
        for signame in ("INT", "TERM"):
            for p in KILL_PATHS:
                rs = [r for r in trials if (r[1], r[4], r[6]) == (p, stock, signame)]
                if not rs:
                    continue
                c, nbad = outcomes(rs)
                if not stock:
                    bad += nbad
                print(
                    "%-13s %-4s %-6s %6d %10d %11d %9d %8d %7d %5d %5d  %.2f s"
                    % (
                        p,
                        signame,
                        "stock" if stock else "fastio",
                        len(rs),
                        sum(r[2] for r in rs),
                        c["rolled-back"],
                        c["complete"],
                        c["in-close"],
                        c["in-init"],
                        sum(r[7] for r in rs),
                        nbad,
                        durations.get(p, 0),
                    )
                )
    for r in sorted(trials, key=lambda r: (r[4], r[6], r[1], r[5])):
        if r[3].startswith("BAD"):
            print(
                "  BAD %s %s %s #%d: %s"
                % ("stock" if r[4] else "fastio", r[6], r[1], r[5], r[3])
            )
    return bad


if __name__ == "__main__":
    sys.exit(main())
