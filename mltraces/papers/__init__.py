"""One folder per paper (and per study of our own): the only layer that knows a paper.

A folder ``mltraces/papers/<paper>/`` holds everything about one paper, found by
scanning, so adding a paper is adding a folder:

- ``paper.json``: the card (title, venue, the sources whose data it draws, the source
  whose ``citation.bib`` cites it, the notebook its cells go into);
- ``published.json``: the paper's published numbers (bar heights, Pareto fronts,
  setups of its experiments), read by its figures and reports; never in a source card;
- ``figures.py``: a ``FIGURES`` tuple of :class:`~mltraces.figures.FigureSpec`, found by
  the figure registry (:mod:`mltraces.figures.specs`);
- ``notebook.py``: the notebook's cells as plain data (``notebooks/make_notebooks.py``);
- ``status.json``: every figure and table of the paper with its status here
  (:data:`FIGURE_STATUSES`: reproduced, approximated, not public, ...), the figures of
  ours that draw it and the ``published.json`` key of its numbers
  (:func:`figure_statuses`; the documentation's paper pages are drawn from it);
- its setups and analyses (replay cases, evaluation sweeps, reports), as modules.

Papers sit above the engines, the catalog and the drawing kit, and below the
commands: a paper imports what it needs; nothing below imports a paper (figures and
notebooks find them by scanning), and a command asks a paper for its defaults.

>>> from mltraces import papers
>>> sorted(papers.all_papers())[:1]
['acme_nsdi24']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from mltraces.errors import RegistryError

PAPERS_DIR = Path(__file__).resolve().parent
CARD_FILE = "paper.json"
PUBLISHED_FILE = "published.json"
STATUS_FILE = "status.json"
#: what a paper figure's status may be, and what each means
FIGURE_STATUSES = {
    "reproduced": "drawn here from the public data (or a replay on it), published numbers beside "
                  "ours",
    "approximated": "drawn here in the paper's form from what is public, where the paper "
                    "measured something that is not (a testbed run replayed in simulation)",
    "synthetic-tested": "drawn once its files are fetched (not obtainable here); the code runs "
                        "in the tests on synthetic files in the exact upstream format",
    "not drawn yet": "its data is public; no figure of ours draws it yet",
    "not public": "its data is not released (testbed measurements, logs)",
    "no data": "a diagram or an example: nothing to draw from data",
    "our analysis": "not a paper figure: our own view of the paper's data",
}
_CARD_KEYS = {"name", "title", "venue", "sources", "cites", "notebook", "summary", "url"}


@dataclass(frozen=True)
class Paper:
    """One paper's card: what it is, which sources it draws on, where its cells go."""

    name: str
    title: str
    venue: str
    sources: tuple[str, ...]
    cites: str
    notebook: str = ""
    summary: str = ""
    url: str = ""
    folder: Path = PAPERS_DIR

    def published(self) -> dict[str, Any]:
        """The paper's published numbers (``published.json``)."""
        return published(self.name)


@dataclass(frozen=True)
class FigureStatus:
    """One figure or table of a paper: its status here and the figures of ours that draw it."""

    figure: str  # the paper's label: "Fig. 1", "Table 2", "evaluation: cumulative regret"
    status: str  # one of FIGURE_STATUSES
    note: str = ""
    drawn_by: tuple[str, ...] = ()  # figure names (mltraces figures --only NAME)
    published: str = ""  # the key of its numbers in published.json


def figure_statuses(paper: str) -> tuple[FigureStatus, ...]:
    """The paper's figures with their status (``status.json``; none when the folder has none).

    Every problem is named at once: an unknown status or key, a ``published`` key that
    ``published.json`` lacks.
    """
    folder = _folder(paper)
    path = (folder or PAPERS_DIR / paper) / STATUS_FILE
    if not path.is_file():
        return ()
    raw = _json(path)
    entries = raw.get("figures")
    if set(raw) - {"$comment", "figures"} or not isinstance(entries, list):
        raise RegistryError(f"{path}: expected {{\"figures\": [...]}}")
    numbers = published(paper) if any(isinstance(e, dict) and e.get("published")
                                       for e in entries) else {}
    found, problems = [], []
    for index, entry in enumerate(entries):
        where = f"{path} figures[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("figure"), str):
            problems.append(f"{where}: an object with a 'figure' label")
            continue
        unknown = set(entry) - {"figure", "status", "note", "drawn_by", "published"}
        if unknown:
            problems.append(f"{where}: unknown keys {sorted(unknown)}")
        if entry.get("status") not in FIGURE_STATUSES:
            problems.append(f"{where}: status {entry.get('status')!r} is not one of "
                            f"{', '.join(FIGURE_STATUSES)}")
        if entry.get("published") and entry["published"] not in numbers:
            problems.append(f"{where}: published {entry['published']!r} is not a key of "
                            f"{PUBLISHED_FILE}")
        found.append(FigureStatus(entry["figure"], str(entry.get("status")),
                                  str(entry.get("note", "")), tuple(entry.get("drawn_by", ())),
                                  str(entry.get("published", ""))))
    if problems:
        raise RegistryError("; ".join(problems))
    return tuple(found)


def paper_folders() -> list[Path]:
    """Every paper folder (one holding ``paper.json``) on this package's path, by name."""
    found = {p.parent.name: p.parent for root in map(Path, __path__)
             for p in sorted(root.glob(f"*/{CARD_FILE}"))}
    return [found[name] for name in sorted(found)]


def _folder(name: str) -> Path | None:
    return next((folder for folder in paper_folders() if folder.name == name), None)


@cache
def get_paper(name: str) -> Paper:
    """The card of paper ``name``; the error lists the known papers."""
    folder = _folder(name) if "/" not in name else None
    if folder is None:
        known = ", ".join(p.name for p in paper_folders())
        raise KeyError(f"unknown paper {name!r}; known papers: {known}")
    path = folder / CARD_FILE
    raw = _json(path)
    unknown = set(raw) - _CARD_KEYS
    missing = {"name", "title", "venue", "sources", "cites"} - set(raw)
    if unknown or missing or raw.get("name") != name:
        raise RegistryError(f"{path}: unknown keys {sorted(unknown)}, missing {sorted(missing)}"
                            f", name {raw.get('name')!r} (must be the folder's, {name!r})")
    return Paper(name=name, title=raw["title"], venue=raw["venue"],
                 sources=tuple(raw["sources"]), cites=raw["cites"],
                 notebook=raw.get("notebook", ""), summary=raw.get("summary", ""),
                 url=raw.get("url", ""), folder=folder)


def all_papers() -> dict[str, Paper]:
    """Every paper's card by name."""
    return {folder.name: get_paper(folder.name) for folder in paper_folders()}


@cache
def published(paper: str) -> dict[str, Any]:
    """Paper ``paper``'s published numbers, from its folder's ``published.json``."""
    folder = _folder(paper)
    path = (folder or PAPERS_DIR / paper) / PUBLISHED_FILE
    if not path.is_file():
        raise KeyError(f"paper {paper!r} has no {PUBLISHED_FILE} ({path})")
    return _json(path)


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RegistryError(f"cannot read {path}: {error}") from error
    if not isinstance(value, dict):
        raise RegistryError(f"{path}: expected a JSON object")
    return value
