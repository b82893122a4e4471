"""No circle of imports between modules (issue 30): a module may not import, at import time,
a module that imports it back, however long the way round.

Every .py file of the layers is parsed with `ast`. Only what runs when the module is imported
counts: statements of the module body, of its classes and of its `if`/`try`/`with` blocks;
imports inside functions and under `if TYPE_CHECKING:` are left out (they are how a module
refers back to its owner without a circle). `from a import b` is an edge to `a.b` when that is a
module, else to `a`. Circles are found as the strongly connected components of the graph.

KNOWN lists the circles the code held when this test was written; they may only shrink: a
module joining a circle, or a new circle, fails and is named with one way round it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("core", "storage", "sync", "app", "ui", "analytics")

# Circles the code holds today; remove one when it is broken, never add one.
KNOWN: list[frozenset[str]] = []


def module_files() -> dict[str, Path]:
    """Every module of the layers by dotted name (a package by its own name)."""
    out = {}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: Iterable[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of `body` that run when it runs (not in functions, not under
    `if TYPE_CHECKING:`)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody,
                          *(h.body for h in node.handlers)):
                yield from import_time_statements(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from import_time_statements(node.body)


def targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
            modules: set[str]) -> set[str]:
    """The modules of the layers that `node`, standing in `module`, imports."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & modules
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    out = set()
    for alias in node.names:
        child = f"{base}.{alias.name}"
        if child in modules:
            out.add(child)
        elif base in modules:
            out.add(base)
    return out


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """{module: the modules it imports at import time} for `sources` {module: (text, is_package)}."""
    modules = set(sources)
    graph: dict[str, set[str]] = {}
    for module, (text, is_package) in sources.items():
        edges: set[str] = set()
        for node in import_time_statements(ast.parse(text).body):
            edges |= targets(node, module, is_package, modules)
        graph[module] = edges - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def way_round(graph: dict[str, set[str]], component: frozenset[str]) -> list[str]:
    """One circle through `component`'s first module: [m, ..., m] (breadth first)."""
    start = min(component)
    came_from: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & component):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no circle in {sorted(component)}")


def layer_graph() -> dict[str, set[str]]:
    return import_graph({module: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
                         for module, path in module_files().items()})


def test_no_new_import_circle() -> None:
    graph = layer_graph()
    new = [c for c in circles(graph) if not any(c <= known for known in KNOWN)]
    assert not new, "modules import each other in a circle:\n" + "\n".join(
        " -> ".join(way_round(graph, c)) for c in new)


def test_the_known_circles_still_exist() -> None:
    """A circle that is broken comes off KNOWN, so it cannot come back unnoticed."""
    current = circles(layer_graph())
    gone = [sorted(k) for k in KNOWN if not any(k & c for c in current)]
    assert not gone, f"these circles are gone, remove them from KNOWN: {gone}"


def test_every_layer_is_read() -> None:
    modules = module_files()
    assert set(LAYERS) <= set(modules)


@pytest.mark.parametrize("source, edges", [
    pytest.param("import pkg.b\n", {"pkg.b"}, id="import"),
    pytest.param("from . import b\n", {"pkg.b"}, id="relative-module"),
    pytest.param("from .b import thing\n", {"pkg.b"}, id="relative-name"),
    pytest.param("from pkg import thing\n", {"pkg"}, id="package-name"),
    pytest.param("def f():\n    import pkg.b\n", set(), id="in-a-function"),
    pytest.param("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n",
                 set(), id="type-checking"),
    pytest.param("import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    import pkg.b\n",
                 {"pkg.b"}, id="type-checking-else"),
    pytest.param("try:\n    import pkg.b\nexcept ImportError:\n    pass\n", {"pkg.b"}, id="try"),
    pytest.param("class C:\n    import pkg.b\n", {"pkg.b"}, id="class-body"),
    pytest.param("import os, json\n", set(), id="outside-the-layers"),
])
def test_edges_are_what_runs_at_import_time(source: str, edges: set[str]) -> None:
    graph = import_graph({"pkg": ("", True), "pkg.a": (source, False), "pkg.b": ("", False)})
    assert graph["pkg.a"] == edges


def test_a_circle_is_found_and_named() -> None:
    graph = import_graph({
        "pkg": ("", True),
        "pkg.a": ("from . import b\n", False),
        "pkg.b": ("from .c import x\n", False),
        "pkg.c": ("import pkg.a\n", False),
        "pkg.d": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
                  "from . import c\n", False),
    })
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
    assert way_round(graph, circles(graph)[0]) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
