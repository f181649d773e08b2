"""The package's structure, read from its source (AST, not timing):
no import cycle between the extension's modules, and no wrap of
Mercurial outside ``wiring.py``."""

import ast
import os

PACKAGE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "hgext3rd",
    "fastio",
)
WIRING = "hgext3rd.fastio.wiring"
# what only the wiring module may call
WRAPPING = {
    "wrapfunction",
    "wrapcommand",
    "unwrapfunction",
    "wrappedfunction",
    "wrapclass",
}


def _modules():
    """``{dotted name: path}`` of the package's Python modules."""
    found = {}
    for dirpath, _dirs, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, os.path.dirname(os.path.dirname(PACKAGE)))
            dotted = rel[:-3].replace(os.sep, ".")
            if dotted.endswith(".__init__"):
                dotted = dotted[: -len(".__init__")]
            found[dotted] = path
    return found


def _imports(dotted, path, modules):
    """The package's modules that ``dotted`` imports (at any level of its
    code: a function's import is a dependency too)."""
    is_package = path.endswith("__init__.py")
    base = dotted.split(".") if is_package else dotted.split(".")[:-1]
    tree = ast.parse(open(path).read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base[: len(base) - (node.level - 1)]
                target = ".".join(
                    parent + (node.module.split(".") if node.module else [])
                )
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = target + "." + alias.name
                if candidate in modules:
                    found.add(candidate)
                elif target in modules:
                    found.add(target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    found.add(alias.name)
    # a package's __init__ imported by its own modules is not a cycle that
    # matters here (Python runs it first); a module importing itself neither
    found.discard(dotted)
    return found


def _graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    found = []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    graph = _graph()
    # (the package's own __init__ is imported by every module that takes a
    # name from it: an edge back to it is not a cycle of the design)
    for name in graph:
        graph[name].discard("hgext3rd.fastio")
    assert _cycles(graph) == []


def test_the_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]


def _wrapping_calls(path):
    tree = ast.parse(open(path).read(), path)
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in WRAPPING:
            calls.append((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id in WRAPPING:
            calls.append((node.lineno, node.id))
    return calls


def test_only_the_wiring_module_wraps():
    outside = {}
    for name, path in _modules().items():
        if name == WIRING:
            continue
        calls = _wrapping_calls(path)
        if calls:
            outside[name] = calls
    assert outside == {}
    # (and the check sees the wiring module's own)
    assert _wrapping_calls(_modules()[WIRING])


def test_only_the_wiring_module_replaces_mercurial_attributes():
    """An assignment to an attribute of a Mercurial module or class
    (``vfsmod.backgroundfilecloser = ...``) is a wrap too."""
    outside = {}
    for name, path in _modules().items():
        if name == WIRING:
            continue
        tree = ast.parse(open(path).read(), path)
        mercurial_names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "mercurial"
            ):
                mercurial_names.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                mercurial_names.update(
                    a.asname or a.name
                    for a in node.names
                    if a.name.startswith("mercurial")
                )
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in mercurial_names
                ):
                    outside.setdefault(name, []).append(target.lineno)
    assert outside == {}
