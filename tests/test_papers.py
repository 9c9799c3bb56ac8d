"""Papers are folders found by scanning: adding one is adding its folder, nothing else."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mltraces import papers
from mltraces.figures import specs

FIGURES_PY = '''
from mltraces.figures import FigureSpec


def data(con):
    return con.sql("SELECT 1 AS x")


def plot(frame):
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    axes.plot(frame["x"])
    return figure


FIGURES = (FigureSpec("toy_fig1", "zeus", "Toy Fig. 1: one point", (), data, plot,
                      figure="Fig. 1", paper="Toy (SOSP'99)"),)
'''
NOTEBOOK_PY = '''
NOTEBOOK = "toy_sosp99.ipynb"
MODULES = {"toy": "figures"}
INTRO = "# Toy (SOSP'99)"
CELLS = [("## Toy Fig. 1", 'figures.show("toy_fig1", con, OUT)')]
'''


def _forget() -> None:
    papers.get_paper.cache_clear()
    papers.published.cache_clear()
    specs._registry.cache_clear()


@pytest.fixture
def toy_paper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A paper folder outside the package, put on ``mltraces.papers``' path."""
    folder = tmp_path / "toy_sosp99"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""Toy (SOSP\'99)."""\n')
    (folder / "paper.json").write_text(json.dumps({
        "name": "toy_sosp99", "title": "A toy", "venue": "SOSP'99", "sources": ["zeus"],
        "cites": "zeus"}))
    (folder / "published.json").write_text(json.dumps({"fig1": {"x": 1}}))
    (folder / "figures.py").write_text(FIGURES_PY)
    (folder / "notebook.py").write_text(NOTEBOOK_PY)
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    _forget()
    yield folder
    for name in [m for m in sys.modules if m.startswith("mltraces.papers.toy_sosp99")]:
        del sys.modules[name]
    monkeypatch.undo()
    _forget()


def test_a_paper_folder_brings_its_card_numbers_figures_and_notebook(toy_paper: Path) -> None:
    assert papers.get_paper("toy_sosp99").folder == toy_paper
    assert papers.published("toy_sosp99") == {"fig1": {"x": 1}}
    assert specs.get("toy_fig1").reproduces == "Toy (SOSP'99) Fig. 1"
    assert "toy_fig1" in specs.registry("zeus")
    spec = importlib.util.spec_from_file_location(
        "make_notebooks", Path(__file__).resolve().parents[1] / "notebooks" / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    cells = module.notebooks()["toy_sosp99.ipynb"]
    assert "from mltraces.papers.toy_sosp99 import figures as toy" in cells[0][1]
    assert cells[1] == ("## Toy Fig. 1", 'figures.show("toy_fig1", con, OUT)')


def test_the_shipped_papers_have_cards_numbers_and_figures() -> None:
    shipped = papers.all_papers()
    assert set(shipped) >= {"zeus_nsdi23", "elasticflow_asplos23", "acme_nsdi24"}
    for paper in shipped.values():
        assert paper.published(), paper.name
        assert (paper.folder / "figures.py").is_file(), paper.name
        assert {spec.source for spec in specs.registry().values()} >= set(paper.sources)


def test_an_unknown_paper_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown paper 'nope'; known papers: acme_nsdi24"):
        papers.get_paper("nope")
