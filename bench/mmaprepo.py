"""Build (once, cached) the repository ``make bench-mmap`` measures.

A changelog of ``--revisions`` changesets (default 1,050,000: an index of
over 64 MB) on top of a tree of ``--files`` files (a manifest of a few MB),
then ``--real`` ordinary commits at the tip (``hg log -p`` shows their
diffs), and bundles of the next 1 and 100 changesets for the unbundle and
push workloads.

``hg debugbuilddag`` commits each changeset through the whole commit path
(about 1 ms each: 20 minutes for a million on this machine); here the bulk
of the changelog is appended through Mercurial's own ``changelog.add`` in
one transaction (no file or manifest change: each changeset points to the
manifest of the tree), a few hundred times faster.  Everything else is made
by ``hg`` commands.
"""

import argparse
import os
import subprocess
import sys
import time


def hg(hgbin, *args, cwd=None):
    subprocess.run([hgbin, *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def tree_path(root, i, per_dir=50):
    d = os.path.join(
        root, "src", "mod%03d" % (i // (per_dir * 20)), "d%04d" % (i // per_dir)
    )
    return d, os.path.join(d, "file%06d.c" % i)


def make_tree(root, files):
    for i in range(files):
        d, name = tree_path(root, i)
        os.makedirs(d, exist_ok=True)
        with open(name, "w") as f:
            f.write("/* file %d */\nint f%d(void) { return %d; }\n" % (i, i, i))


def bulk_changesets(path, count):
    from mercurial import hg as hgmod, metadata, node, ui as uimod

    u = uimod.ui.load()
    repo = hgmod.repository(u, path.encode())
    with repo.wlock(), repo.lock(), repo.transaction(b"bulk") as tr:
        cl = repo.changelog
        tip = cl.tip()
        mnode = cl.read(tip)[0]
        p1 = tip
        nofiles = metadata.ChangingFiles()
        start = time.time()
        for i in range(count):
            p1 = cl.add(
                mnode,
                nofiles,
                b"bulk changeset %d" % i,
                tr,
                p1,
                node.nullid,
                b"bench <bench@example.com>",
                (1600000000 + i, 0),
            )
            if i % 100000 == 0:
                print("  %d changesets, %.0f s" % (i, time.time() - start), flush=True)


def real_commits(hgbin, path, count, tag):
    for i in range(count):
        for k in range(3):
            name = tree_path(path, (i * 3 + k) % 300)[1]
            with open(name, "a") as f:
                f.write(
                    "/* %s change %d */\nint g%d_%d(void) { return %d; }\n"
                    % (tag, i, i, k, i)
                )
        hg(
            hgbin,
            "commit",
            "-q",
            "-m",
            "%s commit %d" % (tag, i),
            "-d",
            "%d 0" % (1700000000 + i),
            cwd=path,
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/fastio-mmap-bench")
    ap.add_argument("--hg", default=os.path.join(os.path.dirname(sys.executable), "hg"))
    ap.add_argument("--revisions", type=int, default=1050000)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--real", type=int, default=50)
    args = ap.parse_args()
    base = os.path.join(args.dir, "base")
    done = os.path.join(args.dir, "complete")
    if os.path.exists(done):
        print("cached:", args.dir)
        return
    if os.path.exists(args.dir):
        subprocess.run(["rm", "-rf", args.dir], check=True)
    os.makedirs(args.dir)
    t0 = time.time()
    hg(args.hg, "init", base)
    make_tree(base, args.files)
    hg(
        args.hg,
        "commit",
        "-q",
        "-A",
        "-m",
        "tree",
        "-d",
        "1500000000 0",
        "-u",
        "bench",
        cwd=base,
    )
    print("tree of %d files: %.0f s" % (args.files, time.time() - t0), flush=True)
    bulk_changesets(base, args.revisions)
    print("bulk changesets: %.0f s" % (time.time() - t0), flush=True)
    os.environ["HGUSER"] = "bench"
    real_commits(args.hg, base, args.real, "base")
    hg(args.hg, "phase", "--public", "-r", "tip", cwd=base)
    hg(args.hg, "debugupdatecaches", cwd=base)
    # the changesets the unbundle and push workloads bring in
    src = os.path.join(args.dir, "source")
    hg(args.hg, "clone", "-q", base, src)
    real_commits(args.hg, src, 100, "new")
    for head, name in (("tip~99", "one.hg"), ("tip", "hundred.hg")):
        bundle = os.path.join(args.dir, name)
        hg(args.hg, "bundle", "-q", "-r", head, "--base", "tip~100", bundle, cwd=src)
    hg(args.hg, "update", "-q", "-r", "tip~99", cwd=src)
    hg(args.hg, "debugupdatecaches", cwd=src)
    open(done, "w").close()
    print("built in %.0f s: %s" % (time.time() - t0, args.dir), flush=True)


if __name__ == "__main__":
    main()
