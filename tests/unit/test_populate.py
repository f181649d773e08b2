"""The mmap population helper (``_populate.c``) and policy (``mmappolicy``):
what is read through a populated mapping, stopping, no thread left behind,
closed and truncated mappings, failures kept to the debug output, the
fallback methods and the pure fallback."""

import mmap
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from conftest import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from hgext3rd.fastio import compat
from hgext3rd.fastio.mmap import mmappolicy

P = mmappolicy.helper()
needs_helper = pytest.mark.skipif(P is None, reason="_populate not built")
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")

MB = 1 << 20


def make_file(path, size, sparse=False):
    with open(path, "wb") as f:
        if sparse:
            f.truncate(size)
        else:
            block = bytes(range(256)) * 4096
            for offset in range(0, size, len(block)):
                f.write(block[: size - offset])
    return str(path)


def mapping(path):
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)


def stock_mmapread(fp, size=None, pre_populate=True):
    """A stand-in for util.mmapread: maps, never populates."""
    fd = fp if isinstance(fp, int) else fp.fileno()
    return mmap.mmap(fd, size or 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)


class FakeUi:
    def __init__(self):
        self.lines = []

    def debug(self, message):
        self.lines.append(message)


def session_with(policy, ui=None):
    return mmappolicy.begin_command(ui or FakeUi(), lambda: policy)


@needs_helper
@pytest.mark.parametrize("method", ["populate-read", "willneed", "touch"])
def test_data_read_through_a_populated_mapping_is_the_file(tmp_path, method):
    path = make_file(tmp_path / "f", 3 * MB + 123)
    m = mapping(path)
    code = mmappolicy.HELPER_CHOICES[method.encode()]
    result = P.populate(m, code)
    assert result[:4] == (code, 3 * MB + 123, 0, 0)
    job = P.start(m, code, 64 * 1024)
    assert job.join(10.0)
    assert job.result[1] == 3 * MB + 123
    with open(path, "rb") as f:
        assert m[:] == f.read()


@needs_helper
def test_stop_ends_the_job_before_the_end(tmp_path):
    path = make_file(tmp_path / "big", 256 * MB, sparse=True)
    m = mapping(path)
    job = P.start(m, 0, 4096)
    job.stop()
    assert job.join(10.0)
    method, done, err, stopped, elapsed = job.result
    assert stopped == 1 and done < 256 * MB and err == 0


@needs_helper
def test_a_mapping_closed_mid_population_ends_the_job(tmp_path):
    path = make_file(tmp_path / "big", 256 * MB, sparse=True)
    for method in (1, 3):  # madvise, and reads (which must not fault)
        m = mapping(path)
        job = P.start(m, method, 4096)
        m.close()  # never refused: the job holds no export
        assert job.join(10.0)
        method_used, done, err, stopped, elapsed = job.result
        assert done < 256 * MB
        assert err in (0, 12, 14) and (err or stopped)  # ENOMEM, EFAULT


@needs_helper
@linux
def test_a_truncated_file_ends_the_job_without_a_signal(tmp_path):
    path = make_file(tmp_path / "f", 8 * MB)
    for method in (1, 3):
        m = mapping(path)
        os.truncate(path, MB)
        result = P.populate(m, method)
        assert result[1] <= MB and result[2] in (14, 12)  # EFAULT
        m.close()
        make_file(path, 8 * MB)


@needs_helper
def test_no_thread_left_when_a_command_ends(tmp_path):
    path = make_file(tmp_path / "big", 256 * MB, sparse=True)
    before = P.threads_alive()
    policy = mmappolicy.Policy(mmappolicy.BACKGROUND, 0, 0)
    policy.chunk = 4096
    session = session_with(policy)
    with open(path, "rb") as f:
        m = mmappolicy.map_file(stock_mmapread, f)
    assert session.jobs and P.threads_alive() == before + 1
    mmappolicy.end_command(session)
    assert P.threads_alive() == before
    assert session.jobs == []
    assert session.stats.stopped == 1
    assert session.stats.populated_bytes < 256 * MB
    assert b"1 stopped early" in session.ui.lines[-1]
    del m


@needs_helper
def test_a_failing_helper_shows_in_debug_only(tmp_path, monkeypatch):
    path = make_file(tmp_path / "f", 2 * MB)

    def refuse(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(P, "start", refuse)
    monkeypatch.setattr(P, "populate", refuse)
    for name in (mmappolicy.BACKGROUND, mmappolicy.ALWAYS):
        monkeypatch.setattr(compat, "stock_populates_synchronously", lambda: False)
        session = session_with(mmappolicy.Policy(name, 0, 0))
        with open(path, "rb") as f:
            m = mmappolicy.map_file(stock_mmapread, f)
            assert m[:] == f.read()
        mmappolicy.end_command(session)
        assert session.stats.failures == 1
        assert any(b"Resource temporarily unavailable" in l for l in session.ui.lines)


def test_pure_fallback(tmp_path, monkeypatch):
    """Without the helper: auto and background are stock's, always reads
    every page in the calling thread, and no thread is started."""
    monkeypatch.setattr(mmappolicy, "_populate", None)
    monkeypatch.setattr(compat, "stock_populates_synchronously", lambda: False)
    path = make_file(tmp_path / "f", 2 * MB)
    for name in (mmappolicy.AUTO, mmappolicy.BACKGROUND):
        policy = mmappolicy.Policy(name, 0, 0)
        assert policy.name == mmappolicy.STOCK
        assert b"not built" in policy.reason
    threads = threading.active_count()
    session = session_with(mmappolicy.Policy(mmappolicy.ALWAYS, 0, 0))
    with open(path, "rb") as f:
        m = mmappolicy.map_file(stock_mmapread, f)
        assert m[:] == f.read()
    mmappolicy.end_command(session)
    assert session.stats.populated == 1
    assert session.stats.methods == {b"a read per page (pure)"}
    assert threading.active_count() == threads


def test_threshold_and_callers_asking_for_none(tmp_path):
    path = make_file(tmp_path / "f", 2 * MB)
    session = session_with(mmappolicy.Policy(mmappolicy.ALWAYS, 4 * MB, 0))
    with open(path, "rb") as f:
        mmappolicy.map_file(stock_mmapread, f)
    session.policy.threshold = 0
    with open(path, "rb") as f:
        mmappolicy.map_file(stock_mmapread, f, None, False)
    mmappolicy.end_command(session)
    assert session.stats.populated == 0 and session.ui.lines == []


SHIM = os.path.join(ROOT, "tests", "shims", "madviseshim.c")


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    if not sys.platform.startswith("linux") or P is None:
        pytest.skip("Linux with the helper")
    out = str(tmp_path_factory.mktemp("shim") / "madviseshim.so")
    try:
        subprocess.check_call(
            ["gcc", "-O2", "-shared", "-fPIC", "-o", out, SHIM, "-ldl"]
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no compiler")
    return out


@pytest.mark.parametrize(
    "refused, expected",
    [("", 1), ("22", 2), ("22,3", 3)],
    ids=["populate-read", "old-kernel-willneed", "no-madvise-touch"],
)
def test_fallbacks_are_found_at_run_time(tmp_path, shim, refused, expected):
    """A kernel refusing MADV_POPULATE_READ (older than 5.14), and one
    refusing MADV_WILLNEED too: the job falls back, populates everything."""
    path = make_file(tmp_path / "f", 4 * MB)
    script = textwrap.dedent("""
        import mmap, sys
        sys.path.insert(0, %r)
        from hgext3rd.fastio.mmap import _populate as P
        f = open(%r, "rb")
        m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
        job = P.start(m)
        job.join()
        print(job.result[0], job.result[1], job.result[2], P.populate(m)[0])
        """) % (ROOT, path)
    env = dict(os.environ, LD_PRELOAD=shim, FASTIO_MADVISE_EINVAL=refused)
    out = subprocess.check_output([sys.executable, "-c", script], env=env)
    assert out.split() == [
        str(expected).encode(),
        b"%d" % (4 * MB),
        b"0",
        str(expected).encode(),
    ]


COMMANDS = textwrap.dedent("""
    import sys, threading
    sys.path.insert(0, %(root)r)
    from mercurial import dispatch
    try:  # 7.2
        from mercurial.main_script import request
    except ImportError:  # 6.7
        request = dispatch.request
    from hgext3rd.fastio.mmap import _populate, mmappolicy
    threads = threading.active_count()
    summaries = []
    for n in range(3):
        args = [b"-R", %(repo)r, b"log", b"-r", b"tip", b"-q", b"--debug"]
        req = request(args)
        assert dispatch.dispatch(req) == 0
        # as chg and the command server: commands follow each other
        summaries.append(_populate.threads_alive())
    print(summaries, threading.active_count() - threads)
    """)


@needs_helper
def test_no_thread_left_after_commands_in_one_process(tmp_path):
    env = dict(os.environ, HGUSER="test")
    hgrc = tmp_path / "hgrc"
    hgrc.write_text(
        "[extensions]\nfastio = %s\n"
        "[storage]\nrevlog.mmap.index:size-threshold = 1\n"
        "[experimental]\nmmapindexthreshold = 1\n"
        "[fastio]\nmmap-populate = background\nmmap-populate-threshold = 0\n"
        % os.path.join(ROOT, "hgext3rd", "fastio")
    )
    env["HGRCPATH"] = str(hgrc)
    repo = tmp_path / "repo"
    hg_bin = os.path.join(os.path.dirname(sys.executable), "hg")
    subprocess.check_call([hg_bin, "init", str(repo)], env=env)
    (repo / "a").write_text("a\n")
    subprocess.check_call([hg_bin, "-R", str(repo), "commit", "-qAm", "a"], env=env)
    script = COMMANDS % {"root": ROOT, "repo": str(repo).encode()}
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, check=True
    )
    last = proc.stdout.splitlines()[-1]
    assert last == b"[0, 0, 0] 0"
    # each command populated its mapping from a thread, and said so
    assert proc.stdout.count(b"fastio: mmap: background: ") == 3
