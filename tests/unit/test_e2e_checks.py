"""The checks of the end-to-end clone bench (``bench/e2e.py``,
``bench/bench_serve.py``): the working-copy comparison that judges
fastio's checkout against stock's (``fixtures/worktree.py``), and the count
of clone bundle fetches in a static server's log (``fixtures/httplog.py``)."""

import os

import httplog
import worktree


def tree(top, files):
    for rel, data in files.items():
        path = top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (top / ".hg").mkdir()
    (top / ".hg" / "dirstate").write_bytes(os.urandom(16))
    return top


def test_worktree_same(tmp_path):
    files = {"a": b"one\n", "d/b": b"two\n", "d/e/c": b""}
    a, b = tree(tmp_path / "a", files), tree(tmp_path / "b", files)
    os.symlink("a", a / "link")
    os.symlink("a", b / "link")
    # .hg is left out
    (b / ".hg" / "extra").write_bytes(b"x")
    assert worktree.worktree_diff(str(a), str(b)) == []


def test_worktree_differences(tmp_path):
    a = tree(tmp_path / "a", {"a": b"one\n", "x": b"1", "m": b"m", "only-a": b""})
    b = tree(tmp_path / "b", {"a": b"One\n", "x": b"1", "m": b"m", "d/only-b": b""})
    os.chmod(b / "m", 0o755)
    os.chmod(a / "m", 0o644)
    os.symlink("a", a / "link")
    os.symlink("x", b / "link")
    got = worktree.worktree_diff(str(a), str(b), limit=10)
    assert "a: contents differ" in got
    assert "m: modes differ (644, 755)" in got
    assert "link: symlink targets differ" in got
    assert "only-a: only in %s" % a in got
    assert "d: only in %s" % b in got
    assert "d/only-b: only in %s" % b in got
    assert not any(line.startswith("x") for line in got)
    assert len(worktree.worktree_diff(str(a), str(b), limit=2)) == 3


def test_count_gets():
    log = [
        '127.0.0.1 - - [05/Dec/2026 18:00:00] "GET /repo.v2 HTTP/1.1" 200 -\n',
        '127.0.0.1 - - [05/Dec/2026 18:00:01] "GET /repo.v2 HTTP/1.1" 404 -\n',
        '127.0.0.1 - - [05/Dec/2026 18:00:02] "GET /repo.v2x HTTP/1.1" 200 -\n',
        '127.0.0.1 - - [05/Dec/2026 18:00:03] "HEAD /repo.v2 HTTP/1.1" 200 -\n',
        '127.0.0.1 - - [05/Dec/2026 18:00:04] "GET /repo.v2 HTTP/1.1" 200 -\n',
    ]
    assert httplog.count_gets(log, "repo.v2") == 2
