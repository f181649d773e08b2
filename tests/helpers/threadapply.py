"""Apply a bundle into several repositories at once, one thread each, in
one process, as an hgweb server applies pushes to its repositories in its
request threads (hg's configuration, the extension's included, from
HGRCPATH).

usage: threadapply.py BUNDLE REPO [REPO ...]

Prints, per repository in the order given, what its apply printed on
stderr (each repository's ui writes to its own buffer), then whether the
applies ran at the same time.
"""

import io
import sys
import threading
import time

from mercurial import bundle2, exchange, extensions, ui as uimod

try:
    from mercurial.repo.factory import repository  # 7.2
except ImportError:
    from mercurial.hg import repository

try:
    # 7.2 registers bundle2's part handlers (among others) there, as hg's
    # dispatch and an hgweb server import it; 6.7 at bundle2's load
    from mercurial import initialization  # noqa: F401
except ImportError:
    pass


def main(bundle, paths):
    ui = uimod.ui.load()
    extensions.loadall(ui)
    repos = [repository(ui, path.encode()) for path in paths]
    errs = [io.BytesIO() for _ in repos]
    spans = [None] * len(repos)
    failures = []
    start = threading.Barrier(len(repos))

    def apply(i):
        repo = repos[i]
        repo.ui.ferr = errs[i]
        path = paths[i].encode()
        try:
            with open(bundle, "rb") as fh:
                unbundler = exchange.readbundle(repo.ui, fh, bundle.encode())
                start.wait()
                began = time.monotonic()
                with repo.lock(), repo.transaction(b"push") as tr:
                    # (as hg unbundle: a push to a publishing server would
                    # make the changesets public, where stock's unbundle
                    # leaves them draft)
                    bundle2.applybundle(
                        repo, unbundler, tr, source=b"unbundle", url=b"bundle:" + path
                    )
                spans[i] = (began, time.monotonic())
        except BaseException as exc:
            failures.append((paths[i], repr(exc)))

    threads = [threading.Thread(target=apply, args=(i,)) for i in range(len(repos))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for path, err in zip(paths, errs):
        sys.stdout.write("%s:\n" % path)
        sys.stdout.write(err.getvalue().decode())
    for path, failure in failures:
        sys.stdout.write("%s failed: %s\n" % (path, failure))
    if None not in spans:
        overlap = min(end for _, end in spans) > max(began for began, _ in spans)
        sys.stdout.write("at the same time: %s\n" % ("yes" if overlap else "no"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
