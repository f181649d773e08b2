#!/usr/bin/env python3
"""Build a deterministic Mercurial repository with N tracked files.

The layout mimics a real source tree: files spread over nested directories,
a few hundred bytes to a few KiB each, and a second revision of every tenth
file so filelogs are not all single-revision.

usage: makerepo.py DEST NFILES [--hg HG]
"""

import argparse
import os
import random
import subprocess
import sys

WORDS = (
    b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu "
    b"xi omicron pi rho sigma tau upsilon phi chi psi omega revlog store "
    b"changeset manifest filelog bundle stream clone pull push"
).split()


def content(rng, index):
    n = rng.randint(20, 400)
    words = [WORDS[rng.randrange(len(WORDS))] for _ in range(n)]
    return b"file %d\n" % index + b" ".join(words) + b"\n"


def path_for(index):
    # about 16 files per directory, 16 directories per parent: a source tree
    return os.path.join(
        "src",
        "mod%03d" % (index // 256),
        "pkg%02d" % ((index // 16) % 16),
        "f%06d.txt" % index,
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("nfiles", type=int)
    ap.add_argument("--hg", default="hg")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    env = dict(os.environ, HGPLAIN="1", HGRCPATH="", HGUSER="bench <bench@example>")
    hg = [args.hg, "--config", "extensions.fastio=!"]
    subprocess.check_call(hg + ["init", args.dest], env=env)
    for i in range(args.nfiles):
        p = os.path.join(args.dest, path_for(i))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content(rng, i))
    run = lambda *a: subprocess.check_call(hg + ["-R", args.dest] + list(a), env=env)
    run("commit", "-q", "-A", "-m", "initial", "-d", "0 0")
    for i in range(0, args.nfiles, 10):
        with open(os.path.join(args.dest, path_for(i)), "ab") as f:
            f.write(content(rng, i))
    run("commit", "-q", "-m", "second", "-d", "1 0")
    # published, as a served repository is: the stream then carries it all
    run("phase", "--public", "-r", "tip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
