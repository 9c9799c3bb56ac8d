"""The layers hold: each part imports only what its row in :data:`mltraces.layers.LAYERS`
allows, sources are data, engines name no paper, no source and no published number, and
the architecture page is drawn from the code.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from mltraces import layers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mltraces"
ENGINES = ("mltraces.scheduling", "mltraces.simulation", "mltraces.prefixcache")
#: what a source folder may never import, and what an engine may never import
NOT_FOR_SOURCES = ("scheduling", "simulation", "workloads", "interop", "figures", "papers",
                   "commands")
NOT_FOR_ENGINES = ("download", "catalog", "sources", "workloads", "interop", "figures",
                   "papers", "commands")


def test_every_module_belongs_to_exactly_one_part() -> None:
    for module in layers.modules():
        owners = [layer.name for layer in layers.LAYERS if layer.holds(module)]
        assert len(owners) == (module != layers.ROOT), (module, owners)


def test_a_part_imports_only_what_its_row_allows() -> None:
    problems = layers.violations()
    assert not problems, "\n".join(problems)


def test_a_row_allows_only_parts_below_it() -> None:
    """So no module imports a part above it in the documented order."""
    seen: set[str] = set()
    for layer in layers.LAYERS:
        above = set(layer.may_import) - seen
        assert not above, f"{layer.name} may import {sorted(above)}, which are not below it"
        seen.add(layer.name)


def test_sources_and_engines_rows_keep_them_out_of_the_upper_floors() -> None:
    rows = {layer.name: set(layer.may_import) for layer in layers.LAYERS}
    assert not rows["sources"] & set(NOT_FOR_SOURCES)
    for engine in ("scheduling", "simulation", "prefixcache"):
        assert not rows[engine] & set(NOT_FOR_ENGINES), engine


def test_the_check_finds_a_source_that_imports_a_figure(tmp_path: Path) -> None:
    """A planted import from a source folder into the drawing kit is reported (the check
    reads the code, it does not trust the table)."""
    package = tmp_path / "mltraces"
    for folder in ("sources/toy", "figures", "scheduling"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "figures" / "style.py").write_text("RED = 1\n")
    (package / "sources" / "toy" / "readers.py").write_text(
        "def convert():\n    from mltraces.figures import style\n    return style.RED\n")
    (package / "scheduling" / "api.py").write_text("from mltraces.sources.toy import readers\n")
    found = layers.violations(package)
    assert any("mltraces.sources.toy.readers imports mltraces.figures.style" in p for p in found)
    assert any("mltraces.scheduling.api imports mltraces.sources.toy.readers" in p
               for p in found)


def _code_tokens(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every token but comments and docstrings."""
    text = path.read_text(encoding="utf-8")
    docstrings = {node.body[0].value.lineno for node in ast.walk(ast.parse(text))
                  if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
                                | ast.ClassDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    out = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        out.append((token.start[0], token.string))
    return out


def test_engines_name_no_paper_no_source_and_no_published_number() -> None:
    """Outside docstrings and comments, the engines' code names no paper, no figure, no
    published number and no source (a policy called after its system, ``elasticflow`` or
    ``zeus``, is the engine's own name)."""
    from mltraces.papers import all_papers
    from mltraces.registry import all_sources
    from mltraces.scheduling import POLICIES as SCHEDULERS
    from mltraces.simulation import POLICIES as OPTIMIZERS

    own = {name.lower() for name in [*SCHEDULERS, *OPTIMIZERS]}
    sources = [s for s in all_sources() if s not in own]
    names = re.compile(r"\b(" + "|".join(map(re.escape, [*sources, *all_papers()]))
                       + r")\b|\bfig\.?\s*\d|\bpublished\b", re.IGNORECASE)
    found = []
    for module, path in layers.modules().items():
        if not module.startswith(ENGINES):
            continue
        found += [f"{module}:{line}: {text[:70]}" for line, text in _code_tokens(path)
                  if names.search(text)]
    assert not found, "\n".join(found)


def test_the_architecture_page_block_is_drawn_from_the_code() -> None:
    """The documentation's architecture page holds the block; the README links to it."""
    page = layers.PAGE.read_text(encoding="utf-8")
    assert layers.PAGE == ROOT / "docs" / "architecture.md"
    assert layers.refresh(page) == page, "stale: run `python -m mltraces.layers`"
    assert "flowchart BT" in page and "| **sources** |" in page and "| **docs** |" in page
    assert "architecture/" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_page_lists_every_part_and_each_measured_arrow() -> None:
    page = layers.markdown()
    for layer in layers.LAYERS:
        assert f"| **{layer.name}** |" in page
    for (importer, imported), count in layers.part_edges().items():
        if imported != "foundation":
            assert f"  {importer} -->|{count}| {imported}" in page


def test_a_page_without_the_block_is_refused() -> None:
    with pytest.raises(ValueError, match="has no"):
        layers.refresh("# a page\n")
