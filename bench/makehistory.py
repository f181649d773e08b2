#!/usr/bin/env python3
"""Build a deterministic repository with a history: revlogs of many
revisions, some of them large (a served repository, where a server reads
changelog, manifest and filelog data files of megabytes, not a single
revision of each file as in makerepo.py).

FILES files, then COMMITS changesets, each changing CHANGES files (a few
of them far more often than the rest, so their filelogs grow past the
inline limit) and appending to a log file that every changeset touches.
Committed in one process with Mercurial's API (no extension loaded), so
that a few thousand changesets take seconds.

usage: makehistory.py DEST [--files N] [--commits N] [--changes N]
       (run with the python of Mercurial's virtualenv)
"""

import argparse
import os
import random
import sys

from mercurial import context, hg, ui as uimod

WORDS = (
    b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu "
    b"xi omicron pi rho sigma tau upsilon phi chi psi omega revlog store "
    b"changeset manifest filelog bundle stream clone pull push"
).split()


def text(rng, lines):
    return b"".join(
        b" ".join(WORDS[rng.randrange(len(WORDS))] for _ in range(rng.randint(4, 14)))
        + b"\n"
        for _ in range(lines)
    )


def path_for(index):
    return b"src/mod%03d/pkg%02d/f%06d.txt" % (index // 256, (index // 16) % 16, index)


def edit(rng, old):
    """``old`` with a few lines replaced and a few added."""
    lines = old.splitlines(True)
    for _ in range(rng.randint(1, 4)):
        lines[rng.randrange(len(lines))] = text(rng, 1)
    lines.insert(rng.randrange(len(lines) + 1), text(rng, rng.randint(1, 6)))
    return b"".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--changes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    ui = uimod.ui.load()
    ui.setconfig(b"ui", b"username", b"bench <bench@example>")
    repo = hg.repository(ui, os.fsencode(args.dest), create=True)
    contents = {path_for(i): text(rng, rng.randint(10, 120)) for i in range(args.files)}
    contents[b"ChangeLog"] = b""
    # a tenth of the files get most of the changes
    hot = [path_for(i) for i in range(0, args.files, 10)]
    names = sorted(contents)

    with repo.wlock(), repo.lock():
        parent = repo.nullid
        for n in range(args.commits + 1):
            if n == 0:
                changed = names
            else:
                changed = {b"ChangeLog"}
                while len(changed) < args.changes:
                    pool = hot if rng.random() < 0.7 else names
                    changed.add(pool[rng.randrange(len(pool))])
                for path in changed:
                    if path == b"ChangeLog":
                        contents[path] += b"change %d\n" % n + text(rng, 3)
                    else:
                        contents[path] = edit(rng, contents[path])
            changed = sorted(changed)

            def filectx(repo, memctx, path):
                return context.memfilectx(repo, memctx, path, contents[path])

            ctx = context.memctx(
                repo,
                (parent, repo.nullid),
                b"change %d" % n,
                changed,
                filectx,
                date=(n, 0),
            )
            parent = repo.commitctx(ctx)
    with repo.lock(), repo.transaction(b"phase") as tr:
        from mercurial import phases

        phases.advanceboundary(repo, tr, phases.public, [parent])
    return 0


if __name__ == "__main__":
    sys.exit(main())
