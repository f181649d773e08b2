#!/usr/bin/env python3
"""Write a bundle2 file holding two changegroup parts.

usage: twocg.py REPO REV OUT

The first part holds the ancestors of REV (included), the second the rest of
the repository: applying the bundle writes the same revlogs twice in one
transaction.
"""

import sys

from mercurial import bundle2, changegroup, discovery, hg, scmutil, ui as uimod


def main(repo_path, rev, out):
    ui = uimod.ui.load()
    ui.setconfig(b"ui", b"quiet", b"yes")
    ui.setconfig(b"devel", b"all-warnings", b"no")
    repo = hg.repository(ui, repo_path.encode())
    cl = repo.changelog
    middle = scmutil.revsingle(repo, rev.encode()).node()
    heads = repo.heads()
    bundle = bundle2.bundle20(ui)
    for common, tips in (([], [middle]), ([middle], heads)):
        outgoing = discovery.outgoing(repo, commonheads=common, ancestorsof=tips)
        stream = changegroup.makestream(repo, outgoing, b"02", b"bundle")
        part = bundle.newpart(b"changegroup", data=stream)
        part.addparam(b"version", b"02")
    with open(out, "wb") as f:
        for chunk in bundle.getchunks():
            f.write(chunk)


if __name__ == "__main__":
    main(*sys.argv[1:])
