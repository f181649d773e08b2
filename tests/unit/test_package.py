"""The package installs like a current Python package, and works.

From this checkout: an sdist and a wheel built by ``python -m build``
(PEP 517, setuptools' backend, no deprecation warning), each installed by
pip into a virtualenv holding only the Mercurial release under test (and
the builder; uninstalled again after each test), then
``[extensions] fastio =`` (found in the ``hgext3rd`` namespace) applies a
stream bundle and a changegroup bundle.  The sdist is also installed with
no working compiler: the C helpers are optional, and the extension then
runs on its pure Python fallbacks.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from conftest import ROOT  # noqa: E402


def hg_version():
    from mercurial import util

    return util.version().decode().split("+")[0]


def run(cmd, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, (cmd, out.stdout, out.stderr)
    return out


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """One virtualenv with the Mercurial release under test (and the
    builder), shared by the build and the three installs, each taken out
    again by pip after its test: a virtualenv and a Mercurial install cost
    about 16 s each on the 2-core CI machine."""
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(venv)])
    run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            "build",
            "mercurial==%s" % hg_version(),
        ]
    )
    return venv


@pytest.fixture(scope="module")
def dist(tmp_path_factory, venv):
    """The sdist and the wheel of this checkout, and the builder's output."""
    work = tmp_path_factory.mktemp("dist")
    # a copy without the build products of the working tree
    src = work / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".venv*", "build", "*.egg-info", "__pycache__", "*.so", ".git"
        ),
    )
    out = run(
        [str(venv / "bin" / "python"), "-m", "build", "-o", str(work / "out")],
        cwd=str(src),
    )
    files = sorted(os.listdir(work / "out"))
    sdist = [f for f in files if f.endswith(".tar.gz")]
    wheel = [f for f in files if f.endswith(".whl")]
    assert len(sdist) == 1 and len(wheel) == 1, files
    return work / "out" / sdist[0], work / "out" / wheel[0], out.stdout + out.stderr


def test_build_has_no_deprecation_warning(dist):
    log = dist[2]
    assert "Successfully built" in log
    assert "SetuptoolsDeprecationWarning" not in log
    assert "License classifiers are deprecated" not in log


def test_c_sources_are_in_the_sdist_not_in_the_wheel(dist):
    helpers = {"_writepool.c", "_streamscan.c", "_populate.c"}
    with tarfile.open(dist[0]) as sdist:
        names = {os.path.basename(n) for n in sdist.getnames()}
    assert helpers <= names
    with zipfile.ZipFile(dist[1]) as wheel:
        names = wheel.namelist()
    assert [n for n in names if n.endswith(".c")] == []
    # built into the wheel's helpers
    assert len([n for n in names if n.endswith(".so")]) == len(helpers)


@pytest.fixture
def installed(venv):
    """The shared virtualenv, left as it was found: what a test installed
    is uninstalled after it."""
    pip = str(venv / "bin" / "pip")
    before = run([pip, "freeze"]).stdout
    yield venv
    run([pip, "uninstall", "-q", "-y", "hg-fastio"])
    assert run([pip, "freeze"]).stdout == before


def install_and_use(tmp_path, venv, package, env=None):
    pip = str(venv / "bin" / "pip")
    # no wheel cache: the sdist is built here, with the environment given
    run([pip, "install", "-q", "--no-cache-dir", str(package)], env=env)
    hg = str(venv / "bin" / "hg")
    hgrc = tmp_path / "hgrc"
    hgrc.write_text("[extensions]\nfastio =\n[ui]\nusername = test\n")
    henv = dict(os.environ, HGRCPATH=str(hgrc), HGPLAIN="1")
    src = tmp_path / "src"
    run([hg, "init", str(src)], env=henv)
    for i in range(20):
        (src / ("f%d" % i)).write_text("content %d\n" % i)
    run([hg, "-R", str(src), "commit", "-qAm", "files"], env=henv)
    for kind, spec in (("stream", "none-v2;stream=v2"), ("cg", "zstd-v2")):
        bundle = str(tmp_path / ("%s.hg" % kind))
        run([hg, "-R", str(src), "bundle", "-q", "-a", "-t", spec, bundle], env=henv)
        dest = str(tmp_path / kind)
        run([hg, "init", dest], env=henv)
        out = run(
            [hg, "-R", dest, "unbundle", "-q", bundle, "--config", "fastio.report=yes"]
            # (the bundle is small: applied by the extension all the same)
            + ["--config", "devel.fastio.small-applies=no"],
            env=henv,
        )
        # the extension did the apply
        assert "fastio: files written" in out.stderr, out.stderr
        run([hg, "-R", dest, "verify", "-q"], env=henv)
    helpers = run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.util as u; print("
            "u.find_spec('hgext3rd.fastio.writer._writepool') is not None, "
            "u.find_spec('hgext3rd.fastio.apply._streamscan') is not None)",
        ],
        cwd=str(tmp_path),  # not this checkout's hgext3rd
    )
    return helpers.stdout.split()


@pytest.fixture(autouse=True)
def away_from_checkout(tmp_path, monkeypatch):
    # what runs finds the installed extension, not this checkout's
    monkeypatch.chdir(tmp_path)


def test_wheel(dist, installed, tmp_path):
    assert install_and_use(tmp_path, installed, dist[1]) == ["True", "True"]


def test_sdist(dist, installed, tmp_path):
    assert install_and_use(tmp_path, installed, dist[0]) == ["True", "True"]


def test_sdist_without_a_compiler(dist, installed, tmp_path):
    env = dict(os.environ, CC="false", LDSHARED="false")
    # built from source with a compiler that always fails: no C helpers,
    # and every apply still works
    assert install_and_use(tmp_path, installed, dist[0], env=env) == ["False", "False"]
