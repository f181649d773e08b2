#!/usr/bin/env python3
"""Compare two Mercurial stores byte for byte (the fncache as a set).

usage: storecompare.py [--content-only] SRC_REPO DST_REPO [--ignore NAME]...

File modes are compared too, unless --content-only.

Transaction leftovers (undo*, journal*, lock) and an empty phaseroots (which
stream clones do not send) are not compared.  Prints one
line per difference and a summary; exits 1 if the stores differ.
"""

import hashlib
import os
import sys

SKIP_PREFIXES = ("undo", "journal", "lock")


def store_files(repo, ignore, modes=True):
    base = os.path.join(repo, ".hg", "store")
    if not os.path.isdir(base):
        sys.exit("no store in %s" % repo)
    found = {}
    for root, dirs, files in os.walk(base):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            if rel in ignore or rel.startswith(SKIP_PREFIXES):
                continue
            # no phase root (all public) is not streamed
            if rel == "phaseroots" and not os.path.getsize(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if rel == "fncache":
                found[rel] = sorted(set(data.splitlines()))
            else:
                mode = os.stat(path).st_mode & 0o777 if modes else None
                found[rel] = (hashlib.sha1(data).hexdigest(), mode)
    return found


def main(argv):
    ignore = set()
    modes = True
    args = []
    it = iter(argv)
    for a in it:
        if a == "--ignore":
            ignore.add(next(it))
        elif a == "--content-only":
            modes = False
        else:
            args.append(a)
    src, dst = (store_files(r, ignore, modes) for r in args)
    bad = 0
    for rel in sorted(set(src) | set(dst)):
        if rel not in dst:
            print("missing in destination: %s" % rel)
        elif rel not in src:
            print("extra in destination: %s" % rel)
        elif src[rel] != dst[rel]:
            print("differs: %s" % rel)
        else:
            continue
        bad += 1
    if bad:
        print("stores differ: %d of %d files" % (bad, len(set(src) | set(dst))))
        return 1
    print("stores identical: %d files" % len(src))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
