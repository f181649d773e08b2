"""The whole clone a user waits for (issue 24), for ``bench.py``.

Two rows, stock and fastio (the extension on the client only) taking
turns, on a ``makerepo.py`` repository, locally (tmpfs) and under the
latency models of ``bench.MODELS`` (the shim on the client only; under
``fuse`` the client's repository, store and working copy, is on the FUSE
mount, the servers and the source on tmpfs: a new name each run, as the
kernel keeps a name a second, the last one removed through the backing
directory; ``bench.FuseDestinations``):

  e2e     ``hg clone http://...`` end to end, checkout included: a stock
          ``hg serve`` of the source advertises (clonebundles.manifest) a
          stream v2 clone bundle served by a second, static http server
          (``bench_serve.StaticServer``); the client fetches it, applies
          it, pulls what is left (nothing) and checks out the tip
  update  ``hg update tip`` from null: the checkout alone, in a fresh
          ``hg clone -U`` of the source (its store hard-linked, made
          untimed and without the shim before each run; under ``fuse``
          in the backing directory, at tmpfs speed)

Every run is checked: ``hg verify -q``, ``hg status`` empty, and for e2e
that the client fetched the clone bundle (the static server's log).  On
the first run of each model fastio's result is compared with stock's:
the store (``fixtures/storecompare.py --content-only``: stock's stream writer
gives revlogs mode 0777 minus umask) and the working copy (names, types,
modes, symlink targets, contents: ``worktree_diff``).  Under ``fuse``
the checks read the backing directory (the same files, without the
model's latency).
"""

import os
import shutil
import statistics
import subprocess
import sys
from contextlib import nullcontext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what the benchmarks share with the tests (fixtures/: repository
# generators, shims, comparisons)
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

from bench_serve import (  # noqa: E402
    CLONEBUNDLES,
    Server,
    StaticServer,
    advertise,
    ext_args,
    unadvertise,
)
from cgpaths import (  # noqa: E402
    HEAD,
    STORECOMPARE,
    TIMER,
    cells,
    run_usage,
    yes_no,
)
from worktree import worktree_diff  # noqa: E402

HG = os.path.join(os.path.dirname(sys.executable), "hg")

KINDS = {
    "e2e": "hg clone http:// from a stream v2 clone bundle over http, checkout included",
    "update": "hg update from null to tip",
}
# issue 24's targets, fastio / stock (wall): (kind, model) -> ratio
TARGETS = {
    ("e2e", "none"): 0.7,
    ("e2e", "net"): 0.3,
    ("update", "none"): 0.8,
    ("update", "net"): 0.5,
}


class Row:
    """One repository's e2e or update runs: the servers it needs and one
    run of a variant."""

    def __init__(self, kind, workdir, data, env):
        self.kind = kind
        self.workdir = workdir
        self.repo = data["repo"]
        self.env = env
        self.times = os.path.join(workdir, "e2e-times")
        self.static = self.server = None
        if kind != "e2e":
            return
        # the stream v2 bundle bench.prepare made, served by name
        self.bundle = os.path.basename(data["v2"])
        static = os.path.join(workdir, "e2e-static")
        os.makedirs(static, exist_ok=True)
        served = os.path.join(static, self.bundle)
        if not (os.path.exists(served) and os.path.samefile(served, data["v2"])):
            if os.path.exists(served):
                os.unlink(served)
            os.link(data["v2"], served)
        self.static = StaticServer(static, env, os.path.join(workdir, "e2e-static.log"))
        try:
            advertise(self.repo, self.static, self.bundle, env)
            self.server = Server(self.repo, False, env, workdir, extra=CLONEBUNDLES)
            # stock hg serve loads lazy modules on its first requests: one
            # untimed clone first (as cgpaths.Row)
            warm = os.path.join(workdir, "e2e-warmup")
            shutil.rmtree(warm, ignore_errors=True)
            subprocess.run(
                [HG, "clone", "-q", "-U", self.server.url, warm],
                env=env,
                check=True,
            )
            shutil.rmtree(warm)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        if self.server is not None:
            self.server.stop()
        if self.static is not None:
            unadvertise(self.repo)
            self.static.stop()

    def run(self, variant, dest, menv, seen=None):
        """``(body, wall, CPU, peak RSS MB)`` of one run into ``dest``
        under the model's environment ``menv``; ``seen``: the same
        directory without the model (a mount's backing directory), where
        what is not timed is done."""
        seen = seen or dest
        shutil.rmtree(seen, ignore_errors=True)
        if os.path.exists(self.times):
            os.unlink(self.times)
        cmd = [HG, "--config", "extensions.benchtimer=%s" % TIMER]
        # (no advice to enable fsmonitor in the middle of the table)
        cmd += ["--config", "fsmonitor.warn_when_unused=no"]
        cmd += ext_args(variant == "fastio")
        if self.kind == "e2e":
            cmd += ["clone", "-q", self.server.url, dest]
            before = self.static.gets(self.bundle)
        else:
            # (untimed: at tmpfs speed, the store hard-linked, even when
            # the checkout is timed on a mount)
            subprocess.run(
                [HG, "clone", "-q", "-U", self.repo, seen], env=self.env, check=True
            )
            cmd += ["-R", dest, "update", "-q", "tip"]
        wall, usage = run_usage(cmd, dict(menv, FASTIO_BENCH_TIMES=self.times))
        if self.kind == "e2e" and self.static.gets(self.bundle) != before + 1:
            sys.exit("%s: the clone did not fetch the clone bundle" % dest)
        with open(self.times) as f:
            body = float(f.read().split()[-1])
        cpu = usage.ru_utime + usage.ru_stime
        return body, wall, cpu, usage.ru_maxrss / 1024.0


def check(dest, env):
    """None when ``dest`` verifies and ``hg status`` is empty, else what
    is wrong."""
    v = subprocess.run([HG, "-R", dest, "verify", "-q"], env=env, capture_output=True)
    if v.returncode:
        return "verify failed: %s" % (v.stdout + v.stderr).decode(errors="replace")
    s = subprocess.run([HG, "-R", dest, "status"], env=env, capture_output=True)
    if s.returncode or s.stdout or s.stderr:
        return "hg status not clean: %s" % (s.stdout + s.stderr).decode(
            errors="replace"
        )
    return None


def same_as(reference, dest, kind, env):
    """None when fastio's ``dest`` is stock's ``reference`` (store for e2e,
    working copy always), else what differs."""
    problems = []
    if kind == "e2e":
        c = subprocess.run(
            [sys.executable, STORECOMPARE, "--content-only", reference, dest],
            env=env,
            capture_output=True,
        )
        if c.returncode:
            problems.append(c.stdout.decode(errors="replace").strip())
    problems += worktree_diff(reference, dest)
    return "; ".join(problems) or None


def alternate(rounds, dests, workdir, run, compare, each):
    """``rounds`` rounds of stock then fastio, as ``cgpaths.alternate``,
    each run into the next of ``dests`` (``dests.next()``: ``(path, the
    same without the model)``, on a mount a new name every run) or, where
    the model has no mount (no ``dests``, or ``(None, None)``), into one
    directory of ``workdir`` per variant: ``run(variant, path, seen)``
    gives a sample, ``each(variant, seen)`` is called after every run,
    and the first round's results are compared (``compare(stock's,
    fastio's)``, None or what differs): ``({variant: [samples]}, what
    differs)``."""
    samples = {"stock": [], "fastio": []}
    problem = None
    ref = os.path.join(workdir, "e2e-ref")
    made = set()
    try:
        for i in range(rounds):
            for variant in ("stock", "fastio"):
                dest, seen = dests.next() if dests else (None, None)
                if dest is None:
                    dest = seen = os.path.join(workdir, "e2e-dest-%s" % variant)
                made.add(seen)
                samples[variant].append(run(variant, dest, seen))
                each(variant, seen)
                if i:
                    continue
                if variant == "stock":
                    # (off the mount by a rename in its backing directory:
                    # the next destination's removes the last one's)
                    shutil.rmtree(ref, ignore_errors=True)
                    os.rename(seen, ref)
                else:
                    problem = compare(ref, seen)
                    shutil.rmtree(ref)
    finally:
        for path in made | {ref}:
            shutil.rmtree(path, ignore_errors=True)
    return samples, problem


def measure(kind, workdir, data, runs, env, model_envs, destinations=None):
    """One row, ``runs`` rounds of each model (``{model: runs}``):
    ``{model: {variant: [samples]}}``, and per model whether
    every run checked out (``ok``) and fastio's result was stock's
    (``same``).  ``destinations(model)``: a context manager whose
    ``next()`` gives where each run clones or checks out (see
    ``alternate``; ``bench.FuseDestinations`` for the fuse model: the
    client's repository on the mount, the servers and the source on
    tmpfs); by default fixed directories in ``workdir``.  The
    checks read the results without the model."""
    row = Row(kind, workdir, data, env)
    samples, ok, same = {}, {}, {}

    def each(variant, dest):
        problem = check(dest, env)
        if problem:
            ok[model] = False
            print("%s %s %s: %s" % (kind, model, variant, problem))

    try:
        for model, rounds in runs.items():
            menv = model_envs(model)
            ok[model] = True
            mounts = destinations(model) if destinations else nullcontext()
            with mounts as dests:
                samples[model], problem = alternate(
                    rounds,
                    dests,
                    workdir,
                    lambda variant, dest, seen: row.run(variant, dest, menv, seen),
                    lambda ref, dest: same_as(ref, dest, kind, env),
                    each,
                )
            same[model] = problem is None
            if problem:
                print("%s %s: NOT the same as stock: %s" % (kind, model, problem))
            print("(%s %s: %d runs)" % (kind, model, rounds), flush=True)
    finally:
        row.stop()
    return samples, ok, same


def print_table(name, kind, size, samples, ok, same, runs):
    print(
        "== %s: %s, %d files, stock vs fastio, medians of %s =="
        % (
            name,
            KINDS[kind],
            size,
            " and ".join("%d (%s)" % (n, m) for m, n in runs.items()),
        )
    )
    print("%-10s %s %5s %5s" % ("model", HEAD, "ok", "same"))
    for model, by in samples.items():
        print(
            "%-10s %s %5s %5s"
            % (model, cells(by), yes_no(ok[model]), yes_no(same.get(model)))
        )
    print(
        "(ratios are fastio / stock; CPU: user+sys of the client and its "
        "workers; body: the command without hg's start-up; ok: every run verified "
        "and hg status clean; same: fastio's store and working copy are stock's)"
    )
    print()


def label(size):
    return "%dk" % (size // 1000) if size % 1000 == 0 else "%d" % size


def summary_lines(name, kind, size, samples):
    """fastio / stock (wall) per model, with issue 24's target."""
    out = []
    for model, by in samples.items():
        s = statistics.median(x[1] for x in by["stock"])
        f = statistics.median(x[1] for x in by["fastio"])
        # (the targets are about 10k and 100k files)
        target = TARGETS.get((kind, model)) if size >= 10000 else None
        out.append(
            "%-62s %6.2f%s"
            % (
                "%s %s %s: fastio / stock (wall)" % (kind, label(size), model),
                f / s,
                "  (target <= %.1f)" % target if target else "",
            )
        )
    return out
