"""The kernel model of a slow filesystem (fixtures/fuselat.c, mounted by
fixtures/fusemount.py): a store works on it, and the kernel does what the
LD_PRELOAD shim cannot model: it serializes the creates of one directory
(its i_rwsem), while closes from several threads overlap."""

import os
import subprocess
import sys
import threading
import time

import pytest

import fusemount

HG = os.path.join(os.path.dirname(sys.executable), "hg")

ok, reason = fusemount.available()
pytestmark = pytest.mark.skipif(not ok, reason=reason)

# microseconds: large enough that Python's own costs do not blur them
LOOKUP_US = 2000
CREATE_US = 5000
FLUSH_US = 40000
THREADS = 8
CREATES = 40


@pytest.fixture(scope="module")
def defaults(tmp_path_factory):
    """The model at its default latencies."""
    top = tmp_path_factory.mktemp("fuse-defaults")
    with fusemount.Mount(str(top / "mnt")) as m:
        yield m


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    """The model with larger latencies, the ones the timing tests count."""
    top = tmp_path_factory.mktemp("fuse-slow")
    lat = {"lookup": LOOKUP_US, "create": CREATE_US, "flush": FLUSH_US}
    lat.update(mkdir=0, open=0, remove=0, setattr=0)
    with fusemount.Mount(str(top / "mnt"), latencies=lat) as m:
        yield m


def test_files_round_trip(defaults):
    root = defaults.mountpoint
    path = os.path.join(root, "a")
    with open(path, "xb") as f:
        f.write(b"x" * 100000)
    with pytest.raises(FileExistsError):
        open(path, "xb")
    with open(path, "r+b") as f:
        f.seek(99998)
        f.write(b"yz")
        f.truncate(100001)
        assert os.fstat(f.fileno()).st_size == 100001
    fd = os.open(path, os.O_WRONLY)
    os.pwrite(fd, b"p", 0)
    os.close(fd)
    with open(path, "rb") as f:
        data = f.read()
    assert data == b"p" + b"x" * 99997 + b"yz\0"
    # the backing directory holds the same bytes
    with open(os.path.join(defaults.backing, "a"), "rb") as f:
        assert f.read() == data
    os.chmod(path, 0o600)
    assert os.stat(path).st_mode & 0o777 == 0o600
    os.utime(path, (1000000000, 1000000000))
    assert os.lstat(path).st_mtime == 1000000000
    with open(os.path.join(root, "b"), "w") as f:
        f.write("old")
    os.rename(path, os.path.join(root, "b"))
    assert not os.path.exists(path)
    assert os.path.getsize(os.path.join(root, "b")) == 100001
    os.link(os.path.join(root, "b"), os.path.join(root, "c"))
    assert os.stat(os.path.join(root, "c")).st_nlink == 2
    os.symlink("b", os.path.join(root, "s"))
    assert os.readlink(os.path.join(root, "s")) == "b"
    os.mkdir(os.path.join(root, "d"))
    assert sorted(os.listdir(root)) == ["b", "c", "d", "s"]
    for name in ("b", "c", "s"):
        os.unlink(os.path.join(root, name))
    os.rmdir(os.path.join(root, "d"))
    assert os.listdir(root) == []
    assert os.statvfs(root).f_bsize > 0


def test_hg_repository(defaults):
    repo = os.path.join(defaults.mountpoint, "repo")
    env = dict(os.environ, HGRCPATH="", HGUSER="test", HGPLAIN="1")

    def hg(*args):
        return subprocess.run(
            [HG] + list(args),
            env=env,
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    subprocess.run([HG, "init", repo], env=env, check=True)
    os.makedirs(os.path.join(repo, "dir", "sub"))
    for i in range(20):
        with open(
            os.path.join(repo, "dir", "sub" if i % 2 else "", "f%d" % i), "w"
        ) as f:
            f.write("content %d\n" % i)
    hg("commit", "-qAm", "one")
    with open(os.path.join(repo, "dir", "f0"), "a") as f:
        f.write("more\n")
    hg("rm", "dir/sub/f1")
    hg("commit", "-qm", "two")
    hg("verify", "-q")
    assert hg("log", "-T", "{rev}\n") == "1\n0\n"
    assert hg("status") == ""


def creates(dirs):
    """Seconds that THREADS threads take to create CREATES new files spread
    over ``dirs`` (each thread in one directory, in turn)."""
    per = CREATES // THREADS

    def work(i):
        d = dirs[i % len(dirs)]
        for j in range(per):
            fd = os.open(
                os.path.join(d, "t%d-%d" % (i, j)),
                os.O_CREAT | os.O_EXCL | os.O_RDONLY,
                0o644,
            )
            os.close(fd)  # read only: no flush latency

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


@pytest.mark.serial
def test_creates_serialized_per_directory(slow):
    root = slow.mountpoint
    one = os.path.join(root, "one")
    os.mkdir(one)
    many = [os.path.join(root, "many%d" % i) for i in range(THREADS)]
    for d in many:
        os.mkdir(d)
    # each create: the lookup of the new name, then the create, both under
    # the directory's lock
    serial = CREATES * (LOOKUP_US + CREATE_US) / 1e6
    in_one = creates([one])
    in_many = creates(many)
    assert in_one >= 0.8 * serial, (in_one, serial)
    assert in_many < 0.5 * in_one, (in_many, in_one)


@pytest.mark.serial
def test_closes_overlap(slow):
    root = slow.mountpoint
    fds = []
    for i in range(THREADS):
        fd = os.open(os.path.join(root, "c%d" % i), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"data")
        fds.append(fd)
    threads = [threading.Thread(target=os.close, args=(fd,)) for fd in fds]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    flush = FLUSH_US / 1e6
    # each close waits for its flush; the flushes overlap
    assert took >= 0.9 * flush, took
    assert took < 0.5 * THREADS * flush, took
