"""``make bench-mmap``: every mmap population policy on every workload.

The repository is ``fixtures/mmaprepo.py``'s (built once, cached).  Each run
is one ``hg`` process, timed from outside; the policies take turns within
each round (their order rotates from round to round), and the table gives
medians of ``--runs`` rounds with the ratio of ``background`` to the better
of ``always`` and ``never`` (the issue's target: at most 1.03).

Workloads, as upstream measured them: ``hg log -r tip``, ``hg log -l 10 -p``,
``hg unbundle`` of 1 and of 100 changesets, and a push of 1 changeset over
ssh (a local stand-in for ssh: both ends are ``hg`` processes with the
policy).  Unbundles and pushes go to a copy of the repository, put back
with ``hg rollback`` (and its cache directory restored) after each run.

``--cold`` evicts the store's files from the page cache before each run
(``posix_fadvise(POSIX_FADV_DONTNEED)``: dropping all caches needs a
privilege containers lack); on tmpfs this does nothing, so the repository
is built on a disk (``/tmp``).  ``--strace`` shows each policy's system
calls on the changelog index instead of timing.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXT = os.path.join(os.path.dirname(HERE), "hgext3rd", "fastio")
POLICIES = ("never", "always", "background", "auto", "stock")
WORKLOADS = ("log-tip", "log-p", "unbundle-1", "unbundle-100", "push-ssh")
BUNDLES = {"unbundle-1": "one.hg", "unbundle-100": "hundred.hg"}


def hgrc_for(policy, tmp):
    path = os.path.join(tmp, "hgrc-%s" % policy)
    with open(path, "w") as f:
        f.write("[ui]\nusername = bench\n")
        f.write(
            'ssh = "%s" "%s"\n'
            % (sys.executable, os.path.join(HERE, "..", "fixtures", "dummyssh"))
        )
        if policy != "stock":
            # "background-nice0": a variant, the thread at the command's priority
            name, _, nice = policy.partition("-nice")
            f.write("[extensions]\nfastio = %s\n" % EXT)
            f.write("[fastio]\nmmap-populate = %s\n" % name)
            if nice:
                f.write("[devel]\nfastio.mmap-thread-nice = %s\n" % nice)
    return path


def env_for(policy, tmp, hgbin):
    env = dict(os.environ)
    # the far end of the push runs "hg" from PATH
    env["PATH"] = os.pathsep.join([os.path.dirname(hgbin), env.get("PATH", "")])
    env["HGRCPATH"] = hgrc_for(policy, tmp)
    env["TESTTMP"] = tmp  # dummyssh runs there
    env["HGPLAIN"] = "1"
    return env


def evict(root):
    """Drop from the page cache (clean pages only) what the workloads read
    first: the bundles, and each repository's revlogs at the top of its
    store and its caches (not the many small filelogs: a walk over them
    would take longer than a run)."""
    paths = [os.path.join(root, name) for name in os.listdir(root)]
    for repo in ("base", "source", "target"):
        for sub in ("store", "cache"):
            where = os.path.join(root, repo, ".hg", sub)
            if os.path.isdir(where):
                paths += [os.path.join(where, name) for name in os.listdir(where)]
    for path in paths:
        if not os.path.isfile(path):
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Bench:
    def __init__(self, args):
        self.args = args
        self.hg = args.hg
        self.dir = args.dir
        self.base = os.path.join(self.dir, "base")
        self.source = os.path.join(self.dir, "source")
        self.target = os.path.join(self.dir, "target")
        self.tmp = tempfile.mkdtemp(prefix="fastio-mmapbench-")
        self.envs = {p: env_for(p, self.tmp, self.hg) for p in POLICIES}
        self.envs.update(
            (p, env_for(p, self.tmp, self.hg))
            for p in args.policies
            if p not in POLICIES
        )
        self.push_rev = subprocess.run(
            [self.hg, "-R", self.source, "log", "-r", "tip~99", "-T", "{node}"],
            check=True,
            capture_output=True,
            env=self.envs["stock"],
        ).stdout.decode()

    def prepare_target(self):
        if os.path.exists(os.path.join(self.target, ".hg", "fastio-bench-ready")):
            return
        shutil.rmtree(self.target, ignore_errors=True)
        os.makedirs(self.target)
        # a real copy: appending to a hardlinked revlog would copy it first
        shutil.copytree(
            os.path.join(self.base, ".hg"), os.path.join(self.target, ".hg")
        )
        shutil.copytree(
            os.path.join(self.target, ".hg", "cache"),
            os.path.join(self.dir, "target-cache"),
            dirs_exist_ok=True,
        )
        open(os.path.join(self.target, ".hg", "fastio-bench-ready"), "w").close()

    def restore_target(self, env):
        subprocess.run(
            [
                self.hg,
                "-R",
                self.target,
                "rollback",
                "-q",
                "--config",
                "ui.rollback=yes",
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cache = os.path.join(self.target, ".hg", "cache")
        shutil.rmtree(cache)
        shutil.copytree(os.path.join(self.dir, "target-cache"), cache)

    def command(self, workload):
        hg = self.hg
        if workload == "log-tip":
            return [hg, "-R", self.base, "log", "-r", "tip"], False
        if workload == "log-p":
            return [hg, "-R", self.base, "log", "-l", "10", "-p"], False
        if workload in BUNDLES:
            bundle = os.path.join(self.dir, BUNDLES[workload])
            return [hg, "-R", self.target, "unbundle", "-q", bundle], True
        if workload == "push-ssh":
            return [
                hg,
                "-R",
                self.source,
                "push",
                "-q",
                "-r",
                self.push_rev,
                "ssh://user@dummy/%s" % self.target,
            ], True
        raise ValueError(workload)

    def run_once(self, workload, policy):
        cmd, writes = self.command(workload)
        env = self.envs[policy]
        if self.args.cold:
            evict(self.dir)
        start = time.perf_counter()
        proc = subprocess.run(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        elapsed = time.perf_counter() - start
        if proc.returncode not in (0, 1) or proc.stderr.strip():
            sys.exit(
                "%s under %s failed: %s" % (workload, policy, proc.stderr.decode())
            )
        if writes:
            self.restore_target(env)
        return elapsed

    def run(self):
        self.prepare_target()
        policies = self.args.policies
        times = {(w, p): [] for w in self.args.workloads for p in policies}
        for workload in self.args.workloads:
            for policy in policies:  # warm-up, not counted
                self.run_once(workload, policy)
            for round_ in range(self.args.runs):
                shift = round_ % len(policies)
                for policy in policies[shift:] + policies[:shift]:
                    times[workload, policy].append(self.run_once(workload, policy))
            print(self.row(workload, times), flush=True)
        return times

    def row(self, workload, times):
        med = {p: statistics.median(times[workload, p]) for p in self.args.policies}
        cells = " ".join("%10.1f" % (med[p] * 1000) for p in self.args.policies)
        ratios = ""
        if "never" in med and "always" in med:
            best = min(med["never"], med["always"])
            ratios = "".join(
                "  %.3f" % (med[p] / best)
                for p in self.args.policies
                if p.startswith("background")
            )
        return "%-13s %s%s" % (workload, cells, ratios)

    def header(self):
        cells = " ".join("%10s" % p for p in self.args.policies)
        return "%-13s %s  background/best-fixed" % ("median ms", cells)


def strace(args):
    """Each policy's mmap and madvise calls on the changelog index."""
    tmp = tempfile.mkdtemp(prefix="fastio-mmapstrace-")
    index = os.path.getsize(
        os.path.join(args.dir, "base", ".hg", "store", "00changelog.i")
    )
    for policy in args.policies:
        out = os.path.join(tmp, policy)
        subprocess.run(
            [
                "strace",
                "-f",
                "-e",
                "trace=mmap,madvise",
                "-o",
                out,
                args.hg,
                "-R",
                os.path.join(args.dir, "base"),
                "log",
                "-r",
                "tip",
                "-q",
            ],
            env=env_for(policy, tmp, args.hg),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with open(out) as f:
            lines = f.read().splitlines()
        main_pid = lines[0].split()[0]
        print("== %s" % policy)
        mapped = [l for l in lines if "mmap(NULL, %d," % index in l]
        populated = [l for l in lines if "MADV_POPULATE" in l or "MADV_WILLNEED" in l]
        for line in mapped:
            print("  " + line)
        if populated:
            threads = sorted({l.split()[0] for l in populated})
            kind = (
                "main thread"
                if threads == [main_pid]
                else "thread(s) %s (main: %s)" % (", ".join(threads), main_pid)
            )
            print(
                "  %d madvise calls from %s, first and last:" % (len(populated), kind)
            )
            print("  " + populated[0])
            print("  " + populated[-1])
    shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/fastio-mmap-bench")
    ap.add_argument("--hg", default=os.path.join(os.path.dirname(sys.executable), "hg"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--strace", action="store_true")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--policies", default=",".join(POLICIES))
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.policies = args.policies.split(",")
    if args.strace:
        strace(args)
        return
    bench = Bench(args)
    print(
        "%s, %d runs each, %s page cache"
        % (args.dir, args.runs, "cold" if args.cold else "warm")
    )
    print(bench.header(), flush=True)
    bench.run()


if __name__ == "__main__":
    main()
