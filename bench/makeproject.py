#!/usr/bin/env python3
"""Build a deterministic repository shaped like a real project's history:
the history-rich repository of the changegroup benchmark (issue 21).

FILES files at the tip (a third of them in the first changeset, the rest
added in bursts over the history), COMMITS changesets in all:

- most changesets edit 1 to 3 files, picked with a heavy tail (a tenth of
  the files get about half of the edits, most files change rarely); one in
  ten edits 4 to 30 files, mostly of one directory; one in 200 edits 100 to
  600 files (a header changed everywhere, a reformat);
- topic branches: one changeset in 25 opens one from the main line (at most
  4 open), it gets 1 to 10 changesets interleaved with the main line's and
  is merged back (files changed on both sides get two filelog parents);
- renames of files and of whole directories and copies (copy metadata
  recorded), deletions, tags (``.hgtags``), executables and symlinks;
- binary files (assets and one in 100 elsewhere: random bytes in part,
  rewritten in part or whole); a few large files: a 1 MB NEWS text edited
  often, a 3 MB lock file and 2, 4 and 6 MB binary data files with a few
  blocks changed now and then.

Deterministic for a SEED (no hash-ordered iteration); committed in one
process with Mercurial's API (no extension loaded), a transaction per 500
changesets.  Writes what it built (changesets, merges, files, filelogs,
file revisions, ...) to DEST/.hg/makeproject.json, outside the store.

usage: makeproject.py DEST [--files N] [--commits N] [--seed N]
       (run with the python of Mercurial's virtualenv)
"""

import argparse
import json
import os
import random
import sys

from mercurial import context, hg, node as nodemod, phases, ui as uimod

from makehistory import WORDS

# bump when the shape changes: bench.py caches the repository by it
VERSION = 2

_vrng = random.Random(0)
VOCAB = list(WORDS) + [
    b"%s_%s" % (_vrng.choice(WORDS), _vrng.choice(WORDS)) for _ in range(400)
]
VOCAB += [b"%s%d" % (_vrng.choice(WORDS), _vrng.randrange(100)) for _ in range(200)]
USERS = [b"dev%02d <dev%02d@example.org>" % (i, i) for i in range(60)]

# top-level directories: (name, weight, extension, binary, executable)
TOPS = [
    (b"src", 58, b".py", False, False),
    (b"lib", 8, b".c", False, False),
    (b"tests", 20, b".py", False, False),
    (b"docs", 7, b".rst", False, False),
    (b"assets", 4, b".png", True, False),
    (b"tools", 3, b".sh", False, True),
]
LARGE_TEXT = [(b"NEWS.rst", 20000), (b"deps/lock.txt", 50000)]
LARGE_BINARY = [
    (b"data/reference-%d.bin" % i, mb << 20) for i, mb in enumerate((2, 4, 6))
]


def lines(rng, n):
    out = []
    for _ in range(n):
        indent = b"    " * rng.choice((0, 1, 1, 2, 2, 3))
        out.append(indent + b" ".join(rng.choices(VOCAB, k=rng.randint(2, 12))) + b"\n")
    return b"".join(out)


def text_file(rng):
    return lines(rng, min(4000, max(2, int(rng.lognormvariate(3.8, 1.0)))))


def binary(rng, size):
    """A header, then 1 KiB blocks: most random, some runs (an image)."""
    blocks = [b"\x89BIN\r\n\x1a\n"]
    for _ in range(max(1, size >> 10)):
        if rng.random() < 0.7:
            blocks.append(rng.randbytes(1024))
        else:
            blocks.append(bytes([rng.randrange(256)]) * 1024)
    return b"".join(blocks)


def binary_file(rng):
    return binary(rng, min(2 << 20, max(256, int(rng.lognormvariate(9.5, 1.2)))))


def edit_text(rng, old, edits=None):
    """``old`` with lines replaced, inserted and deleted."""
    ls = old.splitlines(True)
    for _ in range(edits or rng.randint(1, 3)):
        k = rng.random()
        at = rng.randrange(len(ls) + 1)
        if k < 0.5 and at < len(ls):
            ls[at] = lines(rng, 1)
        elif k < 0.85 or len(ls) < 6:
            ls.insert(at, lines(rng, rng.randint(1, 8)))
        else:
            del ls[at : at + rng.randint(1, 4)]
    return b"".join(ls)


def edit_binary(rng, old, whole=0.4):
    """``old`` rewritten (probability ``whole``) or a few blocks changed."""
    if rng.random() < whole:
        return binary(rng, len(old))
    data = bytearray(old)
    for _ in range(rng.randint(1, max(1, len(old) >> 14))):
        at = rng.randrange(len(data))
        data[at : at + 1024] = rng.randbytes(1024)
    return bytes(data)


class Project:
    """The main line: contents, flags and what picks files to change."""

    def __init__(self, rng):
        self.rng = rng
        self.contents = {}  # path -> data
        self.flags = {}  # path -> b"x" or b"l" (all lines of development)
        self.binary = set()
        self.order = []  # editable paths, the most edited first
        self.editable = set()  # the same, for membership
        self.dirs = {}  # directory -> {path: None} (ordered, deterministic)
        self.ever = {}  # every path ever committed
        self.serial = 0
        self.ndirs = 0
        self.head = None

    # -- paths -----------------------------------------------------------

    def new_dir(self, top):
        self.ndirs += 1
        depth = self.rng.choice((1, 2, 2, 3))
        parts = [top] + [
            b"%s%d" % (self.rng.choice(WORDS), self.ndirs * 4 + i) for i in range(depth)
        ]
        return b"/".join(parts)

    def new_path(self, directory=None):
        rng = self.rng
        top = rng.choices(TOPS, weights=[t[1] for t in TOPS])[0]
        if directory is None:
            known = [d for d in self.dirs if d.startswith(top[0] + b"/")]
            if known and rng.random() < 0.9:
                directory = known[rng.randrange(len(known))]
            else:
                directory = self.new_dir(top[0])
        else:
            top = next((t for t in TOPS if directory.startswith(t[0] + b"/")), top)
        self.serial += 1
        isbinary = top[3] or rng.random() < 0.01
        ext = b".dat" if isbinary and not top[3] else top[2]
        path = b"%s/%s_%05d%s" % (directory, rng.choice(WORDS), self.serial, ext)
        if isbinary:
            self.binary.add(path)
        if top[4]:
            self.flags[path] = b"x"
        return path

    def add(self, path, data, editable=True, at=None):
        """``path`` in the tree; ``editable``: one the edits may pick, at
        ``at`` in ``order`` (how hot it is; random by default)."""
        self.contents[path] = data
        self.ever[path] = None
        self.dirs.setdefault(path.rsplit(b"/", 1)[0], {})[path] = None
        if editable:
            if at is None:
                at = self.rng.randrange(len(self.order) + 1)
            self.order.insert(at, path)
            self.editable.add(path)

    def remove(self, path):
        """``path`` out of the tree: its place in ``order`` (or None)."""
        del self.contents[path]
        d = path.rsplit(b"/", 1)[0]
        del self.dirs[d][path]
        if not self.dirs[d]:
            del self.dirs[d]
        if path in self.editable:
            self.editable.discard(path)
            at = self.order.index(path)
            del self.order[at]
            return at
        return None

    def hot(self):
        """A path, the front of ``order`` far more often than the rest."""
        return self.order[int(len(self.order) * self.rng.random() ** 3)]

    def edit(self, path, data=None):
        old = data if data is not None else self.contents[path]
        if path in self.binary:
            return edit_binary(self.rng, old)
        return edit_text(self.rng, old)


def commit(repo, parents, changes, copies, flags, n, rng, message=None):
    """A changeset of ``changes`` (path -> data, None: removed)."""

    def filectx(repo, memctx, path):
        data = changes[path]
        if data is None:
            return None
        flag = flags.get(path)
        return context.memfilectx(
            repo,
            memctx,
            path,
            data,
            islink=flag == b"l",
            isexec=flag == b"x",
            copysource=copies.get(path),
        )

    if message is None:
        message = b"change %d: " % n + lines(rng, rng.choice((1, 1, 2, 4))).strip()
    ctx = context.memctx(
        repo,
        parents,
        message,
        sorted(changes),
        filectx,
        user=rng.choice(USERS),
        date=(1_300_000_000 + n * 1800, 0),
    )
    return repo.commitctx(ctx)


class Builder:
    def __init__(self, repo, args):
        self.repo = repo
        self.rng = rng = random.Random(args.seed)
        self.p = Project(rng)
        self.args = args
        self.branches = []
        self.stats = dict.fromkeys(
            ("merges", "renames", "directory_renames", "copies", "removed", "tags"), 0
        )

    def first(self):
        p, rng = self.p, self.rng
        changes = {}
        for __ in range(max(1, self.args.files // 3)):
            path = p.new_path()
            p.add(path, binary_file(rng) if path in p.binary else text_file(rng))
            changes[path] = p.contents[path]
        for path, nlines in LARGE_TEXT:
            p.add(path, lines(rng, nlines), editable=False)
            changes[path] = p.contents[path]
        for path, size in LARGE_BINARY:
            p.add(path, binary(rng, size), editable=False)
            p.binary.add(path)
            changes[path] = p.contents[path]
        for i, target in enumerate(sorted(changes)[:3]):
            path = b"link%d" % i
            p.flags[path] = b"l"
            p.add(path, target, editable=False)
            changes[path] = target
        p.head = commit(
            self.repo,
            (self.repo.nullid, self.repo.nullid),
            changes,
            {},
            p.flags,
            0,
            rng,
        )

    def main_step(self, n):
        p, rng, args = self.p, self.rng, self.args
        changes, copies = {}, {}

        def edit(path):
            p.contents[path] = p.edit(path)
            changes[path] = p.contents[path]

        def untouched():
            for __ in range(20):
                path = p.order[rng.randrange(len(p.order))]
                if path not in changes:
                    return path
            return None

        kind = rng.random()
        if kind < 0.005:  # a header changed all over the tree
            for path in rng.sample(p.order, min(len(p.order), rng.randint(100, 600))):
                if path in p.binary:
                    continue
                data = p.contents[path]
                cut = data.find(b"\n") + 1
                p.contents[path] = lines(rng, 1) + data[cut:]
                changes[path] = p.contents[path]
        elif kind < 0.105:  # a change to a module: mostly one directory
            first = p.hot()
            siblings = list(p.dirs[first.rsplit(b"/", 1)[0]])
            want = rng.randint(4, 30)
            for path in rng.sample(siblings, min(want, len(siblings))):
                if path in p.editable:
                    edit(path)
            for __ in range(want):
                if len(changes) >= want // 2:
                    break
                edit(p.hot())
        else:
            for __ in range(rng.choice((1, 1, 1, 2, 2, 3))):
                edit(p.hot())

        # the tree grows in bursts (a new module and its tests)
        target = args.files // 3 + (args.files - args.files // 3) * n // args.commits
        deficit = target - len(p.contents)
        if deficit > 0 and rng.random() < 0.3:
            directory = None if rng.random() < 0.5 else p.new_dir(b"src")
            for __ in range(rng.randint(1, min(40, deficit))):
                path = p.new_path(directory)
                p.add(path, binary_file(rng) if path in p.binary else text_file(rng))
                changes[path] = p.contents[path]
        event = rng.random()
        if event < 0.01:  # a file renamed, maybe edited too
            old = untouched()
            if old:
                self.rename(old, p.new_path(), changes, copies)
                self.stats["renames"] += 1
        elif event < 0.012:  # a directory moved
            old = untouched()
            directory = old and old.rsplit(b"/", 1)[0]
            if old and len(p.dirs[directory]) <= 150:
                top = directory.split(b"/", 1)[0]
                new = p.new_dir(top)
                for path in list(p.dirs[directory]):
                    if path not in changes and path in p.editable:
                        self.rename(path, new + path[len(directory) :], changes, copies)
                self.stats["directory_renames"] += 1
        elif event < 0.017:  # a copy
            old = untouched()
            if old:
                new = p.new_path(old.rsplit(b"/", 1)[0])
                if old in p.binary:
                    p.binary.add(new)
                p.add(new, p.edit(new, p.contents[old]))
                changes[new], copies[new] = p.contents[new], old
                self.stats["copies"] += 1
        elif event < 0.021:  # files removed
            for __ in range(rng.randint(1, 5)):
                old = untouched()
                if old:
                    self.drop(old, changes)
                    self.stats["removed"] += 1
        large = rng.random()
        if large < 0.03:
            path = b"NEWS.rst"
            head, tail = p.contents[path][:4096], p.contents[path][4096:]
            p.contents[path] = edit_text(rng, head, 2) + tail
            changes[path] = p.contents[path]
        elif large < 0.033:
            path = b"deps/lock.txt"
            p.contents[path] = edit_text(rng, p.contents[path], rng.randint(5, 60))
            changes[path] = p.contents[path]
        elif large < 0.0345:
            path = rng.choice(LARGE_BINARY)[0]
            p.contents[path] = edit_binary(rng, p.contents[path], whole=0)
            changes[path] = p.contents[path]
        if n % 1000 == 0:
            tags = p.contents.get(b".hgtags", b"")
            tags += b"%s v%d.%d\n" % (nodemod.hex(p.head), n // 10000, n // 1000 % 10)
            p.add(b".hgtags", tags, editable=False)
            changes[b".hgtags"] = tags
            self.stats["tags"] += 1
        p.head = commit(
            self.repo, (p.head, self.repo.nullid), changes, copies, p.flags, n, rng
        )

    def rename(self, old, new, changes, copies):
        p = self.p
        if old in p.binary:
            p.binary.add(new)
        if old in p.flags:
            p.flags[new] = p.flags[old]
        data = p.contents[old]
        if self.rng.random() < 0.5:
            data = p.edit(old)
        p.add(new, data, at=p.remove(old))
        changes[old] = None
        changes[new], copies[new] = data, old

    def drop(self, old, changes):
        p = self.p
        p.remove(old)
        changes[old] = None

    def open_branch(self):
        self.branches.append(
            {
                "head": self.p.head,
                "contents": dict(self.p.contents),
                "changed": {},
                "added": {},
                "length": self.rng.randint(1, 10),
            }
        )

    def branch_step(self, b, n):
        p, rng = self.p, self.rng
        changes = {}
        for __ in range(rng.randint(1, 4)):
            path = p.hot()
            if path in b["contents"]:
                b["contents"][path] = p.edit(
                    path, changes.get(path, b["contents"][path])
                )
                changes[path] = b["contents"][path]
        if rng.random() < 0.15:
            path = p.new_path()
            b["contents"][path] = (
                binary_file(rng) if path in p.binary else text_file(rng)
            )
            changes[path] = b["contents"][path]
            b["added"][path] = None
        b["changed"].update(dict.fromkeys(changes))
        b["length"] -= 1
        b["head"] = commit(
            self.repo, (b["head"], self.repo.nullid), changes, {}, p.flags, n, rng
        )

    def merge(self, b, n):
        p = self.p
        changes = {}
        for path in b["changed"]:
            data = b["contents"][path]
            if path in b["added"]:
                p.add(path, data)
            elif path not in p.contents or p.contents[path] == data:
                continue  # removed or renamed on the main line meanwhile
            p.contents[path] = changes[path] = data
        self.branches.remove(b)
        self.stats["merges"] += 1
        p.head = commit(
            self.repo,
            (p.head, b["head"]),
            changes,
            {},
            p.flags,
            n,
            self.rng,
            b"merge topic at %d" % n,
        )

    def step(self, n):
        rng, args = self.rng, self.args
        left = args.commits - n
        done = [b for b in self.branches if b["length"] <= 0]
        if done and (rng.random() < 0.5 or left <= len(self.branches)):
            self.merge(done[0], n)
        elif self.branches and rng.random() < 0.25 and left > len(self.branches) * 11:
            self.branch_step(rng.choice(self.branches), n)
        elif left <= len(self.branches) * 11 and self.branches:
            b = self.branches[0]
            if b["length"] > 0:
                self.branch_step(b, n)
            else:
                self.merge(b, n)
        else:
            self.main_step(n)
        if len(self.branches) < 4 and rng.random() < 0.04 and left > 50:
            self.open_branch()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--commits", type=int, default=30000)
    ap.add_argument("--seed", type=int, default=21)
    args = ap.parse_args(argv)

    ui = uimod.ui.load()
    ui.setconfig(b"ui", b"username", b"bench <bench@example>")
    repo = hg.repository(ui, os.fsencode(args.dest), create=True)
    builder = Builder(repo, args)
    with repo.wlock(), repo.lock():
        tr = repo.transaction(b"makeproject")
        try:
            builder.first()
            for n in range(1, args.commits):
                if n % 500 == 0:
                    tr.close()
                    tr.release()
                    tr = repo.transaction(b"makeproject")
                builder.step(n)
            assert not builder.branches, builder.branches
            phases.advanceboundary(repo, tr, phases.public, [builder.p.head])
            tr.close()
        finally:
            tr.release()
    repo = hg.repository(ui, os.fsencode(args.dest))
    cl = repo.unfiltered().changelog
    stats = dict(builder.stats)
    stats.update(
        changesets=len(cl),
        heads=len(repo.heads()),
        files_at_tip=len(repo[b"tip"].manifest()),
        filelogs=len(builder.p.ever),
        file_revisions=sum(len(repo.file(f)) for f in builder.p.ever),
        binary_files=len(builder.p.binary),
        seed=args.seed,
        version=VERSION,
    )
    with open(os.path.join(args.dest, ".hg", "makeproject.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    print(json.dumps(stats, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
