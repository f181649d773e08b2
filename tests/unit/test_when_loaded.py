"""wiring.when_loaded: setups run right after a
module's code, never before it would have run without the extension.

Each case runs in a fresh interpreter (``sys.modules`` and Mercurial's
demandimport are process-wide), on a package of its own whose module
records when its code runs.
"""

import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT  # noqa: E402

PRELUDE = """
import sys
sys.path[:0] = [%(root)r, %(tmp)r]
events = []
import builtins
builtins.events = events
from mercurial import demandimport
if %(lazy)r:
    demandimport.enable()
from hgext3rd.fastio import wiring
def setup(module):
    events.append(("setup", module.VALUE))
"""


def run(tmp_path, body, lazy=True):
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "target.py").write_text(
        "import builtins\nbuiltins.events.append(('code',))\nVALUE = 42\n"
    )
    script = PRELUDE % {"root": ROOT, "tmp": str(tmp_path), "lazy": lazy}
    script += textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()


@pytest.mark.parametrize("lazy", [True, False])
def test_not_imported_yet(tmp_path, lazy):
    lines = run(
        tmp_path,
        """
        wiring.when_loaded("pkg.target", setup)
        print(wiring.pending(), events)
        from pkg import target
        print(events)
        print(target.VALUE, events)
        print(any(f is wiring._finder for f in sys.meta_path))
        """,
        lazy=lazy,
    )
    assert lines[0] == "['pkg.target'] []"
    if lazy:
        # imported, but its code has not run: neither has the setup
        assert lines[1] == "[]"
    else:
        assert lines[1] == "[('code',), ('setup', 42)]"
    assert lines[2] == "42 [('code',), ('setup', 42)]"
    # the finder is gone once every module waited for was found
    assert lines[3] == "False"


def test_imported_lazily_before(tmp_path):
    lines = run(
        tmp_path,
        """
        from pkg import target
        wiring.when_loaded("pkg.target", setup)
        print(events)
        print(target.VALUE, events, wiring.pending())
        print(target.__spec__.loader.__class__.__name__)
        """,
    )
    assert lines[0] == "[]"
    assert lines[1] == "42 [('code',), ('setup', 42)] []"
    # the module keeps its own loader
    assert lines[2] == "SourceFileLoader"


def test_loaded_already(tmp_path):
    lines = run(
        tmp_path,
        """
        from pkg import target
        target.VALUE
        wiring.when_loaded("pkg.target", setup)
        print(events)
        """,
    )
    assert lines[0] == "[('code',), ('setup', 42)]"


def test_two_setups_run_once_each(tmp_path):
    lines = run(
        tmp_path,
        """
        wiring.when_loaded("pkg.target", setup)
        wiring.when_loaded("pkg.target", lambda m: events.append("second"))
        from pkg import target
        target.VALUE
        target.VALUE
        import importlib; importlib.reload(target).VALUE
        print(events)
        """,
    )
    assert lines[0] == "[('code',), ('setup', 42), 'second', ('code',)]"


def test_failing_setup_does_not_break_the_import(tmp_path):
    lines = run(
        tmp_path,
        """
        def broken(module):
            raise RuntimeError("no such internals")
        wiring.when_loaded("pkg.target", broken)
        wiring.when_loaded("pkg.target", setup)
        from pkg import target
        print(target.VALUE, events)
        print([(n, str(e)) for n, s, e in wiring.failures()])
        """,
    )
    assert lines[0] == "42 [('code',), ('setup', 42)]"
    assert lines[1] == "[('pkg.target', 'no such internals')]"


def test_failing_setup_told_to_its_error_handler(tmp_path):
    lines = run(
        tmp_path,
        """
        def broken(module):
            raise RuntimeError("no such internals")
        wiring.when_loaded("pkg.target", broken, lambda e: events.append(str(e)))
        from pkg import target
        print(target.VALUE, events)
        """,
    )
    assert lines[0] == "42 [('code',), 'no such internals']"
