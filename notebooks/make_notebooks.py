"""Write the paper notebooks from the cells each source folder contributes (outputs never stored).

Run ``python notebooks/make_notebooks.py`` after editing a story. Nothing here
lists sources: every source folder ``mltraces/sources/<source>/`` may hold a
``notebook.py`` (plain data, no imports), found by scanning, with

- ``NOTEBOOK``: the notebook file the cells go into, e.g. ``"itp_elasticflow.ipynb"``;
- ``CELLS``: (markdown, code) pairs, in order;
- ``ORDER`` (optional, default 100): where the cells go among the contributions
  to the same notebook (smaller first; ties by source name);
- ``INTRO`` (optional): the notebook's opening markdown, taken from its first
  contribution.

Several sources may contribute to one notebook: a future ``elasticflow`` source
adds its scheduling figures to ``itp_elasticflow.ipynb`` with a
``notebook.py`` of its own (``NOTEBOOK = "itp_elasticflow.ipynb"``, ``ORDER = 10``),
without touching this file or the ``itp`` folder. Each notebook starts with one
generated setup cell that connects to the tables every contributing source's
figures read and imports each source's figure module under its source name.

The notebooks are generated so their setup cells, figure calls and wording stay
consistent, and so the repository never carries rendered outputs. Each figure
is one call to :func:`mltraces.figures.show`, which draws it (or says what to
fetch) and, when ``MLTRACES_FIGURES_DIR`` is set, also writes PNG + PDF there.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mltraces.registry import source_folders

HERE = Path(__file__).resolve().parent

SETUP_NOTE = (
    "The first call downloads the files it needs (or takes them from `MLTRACES_MIRROR`), "
    "verifies them against pinned hashes and builds the catalog. Set "
    "`MLTRACES_FIGURES_DIR=figures` to also write every figure as PNG and PDF; "
    "`mltraces figures {sources} --output figures/` does the same from the shell."
)


@dataclass(frozen=True)
class Contribution:
    """One source's cells for one notebook."""

    source: str
    notebook: str
    order: int
    intro: str | None
    cells: list[tuple[str, str]]


def contributions() -> list[Contribution]:
    """Every source folder's ``notebook.py``, in notebook order."""
    found = []
    for folder in source_folders():
        if not (folder / "notebook.py").is_file():
            continue
        module = importlib.import_module(f"mltraces.sources.{folder.name}.notebook")
        found.append(Contribution(folder.name, module.NOTEBOOK, getattr(module, "ORDER", 100),
                                  getattr(module, "INTRO", None), list(module.CELLS)))
    return sorted(found, key=lambda c: (c.notebook, c.order, c.source))


def setup_code(sources: list[str]) -> str:
    """The first code cell: inline figures, a connection, each source's figure module."""
    imports = "".join(f"from mltraces.sources.{s} import figures as {s}\n" for s in sources)
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


def cells_of(parts: list[Contribution]) -> list[tuple[str, str]]:
    """A notebook's (markdown, code) pairs: intro + setup, then every contribution's cells."""
    sources = [p.source for p in parts]
    intro = next((p.intro for p in parts if p.intro), f"# {', '.join(sources)}")
    note = SETUP_NOTE.format(sources=" ".join(sources))
    return [(f"{intro}\n\n{note}", setup_code(sources))] + [c for p in parts for c in p.cells]


def notebooks() -> dict[str, list[tuple[str, str]]]:
    """Every notebook's cells by file name."""
    grouped: dict[str, list[Contribution]] = {}
    for part in contributions():
        grouped.setdefault(part.notebook, []).append(part)
    return {name: cells_of(parts) for name, parts in grouped.items()}


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
