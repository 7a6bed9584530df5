"""The package's shape, held: no module longer than a reader can take in at
once (400 lines: a class whole in one module, never split across modules
by inheritance to fit a count, issue 59), and no import circle between
modules (docs/architecture.md, "The layers": each arrow points one way).

Imports are read from the source (``ast``), wherever they stand in a module:
an import inside a function is still an arrow when the function runs. Only
``if TYPE_CHECKING:`` blocks are left out (they name types; nothing runs).
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "usersvc"
MAX_LINES = 400


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return found


def arrows(found: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other modules of the package: ``from .x
    import y`` is an arrow to ``x.y`` if that is a module, else to ``x``."""
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                inner = f"{source}.{alias.name}"
                targets.add(inner if inner in found else source)
        graph[name] = {t for t in targets if t in found and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_is_longer_than_400_lines():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_modules_import_each_other_even_through_others():
    assert circles(arrows(modules())) == []


def test_the_circle_finder_finds_a_circle_and_its_arrows_resolve():
    # What the test above relies on: arrows are found (app imports routing),
    # a package's face counts as a module, and a circle is seen.
    graph = arrows(modules())
    assert "usersvc.routing" in graph["usersvc.app"]
    assert "usersvc.storage.protocol" in graph["usersvc.storage"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({**graph, "usersvc.fields": graph["usersvc.fields"] | {"usersvc.app"}}) != []
