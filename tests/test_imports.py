"""No import cycles inside mltraces: the import graph, built with ``ast``, has no loop.

Every ``import`` counts, at module level or inside a function (a lazy import is
still a dependency); only ``if TYPE_CHECKING:`` blocks are left out. A loop means
two modules that cannot be understood, tested or moved apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mltraces"


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (``from a import b`` is ``a.b``
    when ``b`` is a module, else ``a``)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        stack: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
        while stack:
            for node in ast.iter_child_nodes(stack.pop()):
                if _type_checking(node):
                    continue
                stack.append(node)
                if isinstance(node, ast.Import):
                    graph[name] |= {a.name for a in node.names if a.name in modules}
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                        base = ".".join([*parts, *([node.module] if node.module else [])])
                    for alias in node.names:
                        target = f"{base}.{alias.name}"
                        if target in modules:
                            graph[name].add(target)
                        elif base in modules:
                            graph[name].add(base)
        graph[name].discard(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in graph:
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


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones() -> None:
    graph = import_graph()
    assert "mltraces.catalog.convert" in graph["mltraces.catalog.build"]  # inside a function
    assert "mltraces.schema" not in graph["mltraces.catalog.readers"]  # TYPE_CHECKING only
    assert "mltraces.jobmap" in graph["mltraces.workloads.cluster"]


def test_no_import_cycle_inside_mltraces() -> None:
    loops = [sorted(c) for c in cycles(import_graph())]
    assert not loops, f"import cycles: {loops}"


def test_cycles_are_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text("from pkg.c import x\n")
    (package / "c.py").write_text("from . import a\nx = 1\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from pkg import a\n")
    assert cycles(import_graph(package)) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
