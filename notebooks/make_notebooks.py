"""Write the paper notebooks from the cells each paper folder holds (outputs never stored).

Run ``python notebooks/make_notebooks.py`` after editing a story. Nothing here
lists papers: every paper folder ``mltraces/papers/<paper>/`` may hold a
``notebook.py`` (plain data, no imports), found by scanning, with

- ``NOTEBOOK``: the notebook file the cells go into, e.g. ``"itp_elasticflow.ipynb"``;
- ``MODULES``: the paper's modules the setup cell imports, by the name the cells call
  them (``{"itp": "itp_figures", "elasticflow": "figures"}``);
- ``INTRO``: the notebook's opening markdown;
- ``CELLS``: (markdown, code) pairs, in order;
- ``ORDER`` (optional, default 0): where the paper's cells go when several papers name one
  ``NOTEBOOK`` (a family of papers, such as the LLM-serving traces'): the papers follow
  each other by ``ORDER`` (then name), the first one's ``INTRO`` opens the notebook and
  each later one's ``INTRO`` opens its first cell.

Each notebook starts with one generated setup cell that connects to the tables the
figures of its papers' sources read (their ``paper.json``) and imports their modules.
The notebooks are generated so their setup cells, figure calls and wording stay
consistent, and so the repository never carries rendered outputs. Each figure is
one call to :func:`mltraces.figures.show`, which draws it (or says what to fetch)
and, when ``MLTRACES_FIGURES_DIR`` is set, also writes PNG + PDF there.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mltraces.papers import all_papers

HERE = Path(__file__).resolve().parent

SETUP_NOTE = (
    "The first call downloads the files it needs (or takes them from `MLTRACES_MIRROR`), "
    "verifies them against pinned hashes and builds the catalog. Set "
    "`MLTRACES_FIGURES_DIR=figures` to also write every figure as PNG and PDF; "
    "`mltraces figures {sources} --output figures/` does the same from the shell."
)


@dataclass(frozen=True)
class Story:
    """One paper's notebook: its file, its sources, the modules it imports, its cells."""

    paper: str
    notebook: str
    sources: tuple[str, ...]
    modules: dict[str, str]
    intro: str
    cells: list[tuple[str, str]]
    order: int = 0


def stories() -> list[Story]:
    """Every paper folder's ``notebook.py``, by notebook file (then ``ORDER`` and name)."""
    found = []
    for name, paper in all_papers().items():
        if not (paper.folder / "notebook.py").is_file():
            continue
        module = importlib.import_module(f"mltraces.papers.{name}.notebook")
        found.append(Story(name, module.NOTEBOOK, paper.sources, dict(module.MODULES),
                           module.INTRO, list(module.CELLS), getattr(module, "ORDER", 0)))
    return sorted(found, key=lambda s: (s.notebook, s.order, s.paper))


def setup_code(group: list[Story]) -> str:
    """The first code cell: inline figures, a connection, the papers' modules."""
    imports = "".join(f"from mltraces.papers.{story.paper} import {module} as {name}\n"
                      for story in group for name, module in story.modules.items())
    sources = dict.fromkeys(source for story in group for source in story.sources)
    names = ", ".join(f'"{s}"' for s in sources)
    return (
        "%matplotlib inline\n"
        "import mltraces\n"
        "from mltraces import figures\n"
        f"{imports}"
        "\n"
        f"con = mltraces.connect(figures.tables_for([{names}]))  # the tables these figures read\n"
        "OUT = figures.output_dir_from_env()  # None: display only"
    )


def cells_of(group: list[Story]) -> list[tuple[str, str]]:
    """A notebook's (markdown, code) pairs: the first paper's intro + setup, then each
    paper's cells in order, a later paper's intro opening its first cell."""
    first, *later = group
    sources = dict.fromkeys(source for story in group for source in story.sources)
    note = SETUP_NOTE.format(sources=" ".join(sources))
    cells = [(f"{first.intro}\n\n{note}", setup_code(group)), *first.cells]
    for story in later:
        (markdown, code), *rest = story.cells
        cells += [(f"{story.intro}\n\n{markdown}", code), *rest]
    return cells


def notebooks() -> dict[str, list[tuple[str, str]]]:
    """Every notebook's cells by file name (papers that share one notebook, together)."""
    groups: dict[str, list[Story]] = {}
    for story in stories():
        groups.setdefault(story.notebook, []).append(story)
    return {name: cells_of(group) for name, group in groups.items()}


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """A notebook of (markdown, code) pairs, with a python3 kernel and no outputs."""
    notebook = new_notebook()
    for markdown, code in cells:
        notebook.cells.append(new_markdown_cell(markdown))
        notebook.cells.append(new_code_cell(code))
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index:02d}"  # stable ids: regenerating gives a clean diff
    notebook.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def main() -> None:
    for name, cells in notebooks().items():
        path = HERE / name
        nbformat.write(build(cells), path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
