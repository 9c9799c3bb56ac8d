"""No import cycles inside mltraces: the import graph (:mod:`mltraces.layers`) has no loop.

Every ``import`` that runs counts, at module level or inside a function (a lazy
import is still a dependency); only ``if TYPE_CHECKING:`` blocks are left out. A
loop means two modules that cannot be understood, tested or moved apart.
"""

from __future__ import annotations

from pathlib import Path

from mltraces.layers import cycles, graph


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones_when_asked() -> None:
    runs = graph(type_only=False)
    assert "mltraces.catalog.convert" in runs["mltraces.catalog.build"]  # inside a function
    assert "mltraces.schema" not in runs["mltraces.catalog.readers"]  # TYPE_CHECKING only
    assert "mltraces.schema" in graph()["mltraces.catalog.readers"]  # ... counted for layers
    assert "mltraces.jobmap" in runs["mltraces.workloads.cluster"]


def test_no_import_cycle_inside_mltraces() -> None:
    loops = [sorted(c) for c in cycles()]
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
    assert cycles(package) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
