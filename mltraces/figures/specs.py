"""The figure registry: :class:`FigureSpec` and the specs each paper folder declares.

Each paper folder's ``figures.py`` (``mltraces/papers/<paper>/figures.py``) ends with
a ``FIGURES`` tuple of specs, found by scanning and imported when first asked for:
the drawing kit never imports a paper by name. Figures are chosen by the source whose
data they draw (``mltraces figures zeus itp``), the names each paper's ``paper.json``
lists, read without importing a figure module. Kept apart from the drawing code
(:mod:`mltraces.figures`, :mod:`.render`) so both can look figures up by name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FigureSpec", "figure_sources", "get", "registry", "tables_for"]


@dataclass(frozen=True)
class FigureSpec:
    """One figure: where it comes from, what it needs, and how to compute and draw it.

    Attributes:
        name: File stem and registry key, e.g. ``"zeus_fig1"``.
        source: The source whose data it draws (``"zeus"``, ``"itp"``, ``"acme"``), by which
            ``mltraces figures SOURCE`` chooses it.
        title: One line for galleries and listings.
        tables: Catalog tables the data function needs, all of them.
        data: ``data(con) -> duckdb.DuckDBPyRelation`` (or a pandas frame).
        plot: ``plot(frame) -> Figure``.
        any_of: Tables of which at least one is needed (figures that draw
            whichever of Seren and Kalos is available).
        figure: The paper figure it reproduces (``"Fig. 7"``); else what it draws of the
            authors' (``"repository figure cdf_temperature.pdf"``, ``"our extension of
            Fig. 1"``); empty for our own analysis.
        paper: The paper ``figure`` refers to, e.g. ``"Zeus (NSDI'23)"`` (each paper's
            ``figures.py`` says which; no list of papers here).
        data_is_upstream: The figure draws a published file as it is, so its data CSV
            would be a copy of upstream data, which mltraces never redistributes: none is
            written (the table answers ``mltraces sql`` instead).
    """

    name: str
    source: str
    title: str
    tables: tuple[str, ...]
    data: Callable[..., Any]
    plot: Callable[[pd.DataFrame], Any]
    any_of: tuple[str, ...] = ()
    figure: str = ""
    paper: str = ""
    data_is_upstream: bool = False

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every table the figure may read."""
        return (*self.tables, *self.any_of)

    @property
    def paper_figure(self) -> bool:
        """Whether this reproduces a numbered figure of the paper (``figure="Fig. ..."``)."""
        return self.figure.startswith("Fig.")

    @property
    def reproduces(self) -> str:
        """``"Zeus (NSDI'23) Fig. 1"``, ``"<paper>: <figure>"`` or ``"our own analysis"``."""
        paper = self.paper or self.source
        if self.paper_figure:
            return f"{paper} {self.figure}"
        return f"{paper}: {self.figure}" if self.figure else "our own analysis"


def figure_sources() -> list[str]:
    """Sources some paper draws figures of, by name (from the paper cards, nothing imported)."""
    return sorted({source for paper in _papers() for source in paper.sources})


def _papers() -> list[Any]:
    """The cards of the papers that have a ``figures.py``."""
    papers = importlib.import_module("mltraces.papers")  # found by name: no layer above
    return [paper for paper in papers.all_papers().values()
            if (paper.folder / "figures.py").is_file()]


@cache
def _registry() -> dict[str, FigureSpec]:
    found: dict[str, FigureSpec] = {}
    for paper in _papers():
        module = importlib.import_module(f"mltraces.papers.{paper.name}.figures")
        for spec in module.FIGURES:
            if spec.name in found:
                raise ValueError(f"figure {spec.name!r} is registered twice")
            found[spec.name] = spec
    return found


def registry(sources: Iterable[str] | str | None = None) -> dict[str, FigureSpec]:
    """Every figure by name, optionally only those of some sources (``"zeus"``, ...)."""
    every = _registry()
    if sources is None:
        return dict(every)
    wanted = [sources] if isinstance(sources, str) else list(sources)
    known = figure_sources()
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise KeyError(f"unknown figure source {unknown[0]!r}; choose from {', '.join(known)}")
    return {name: spec for name, spec in every.items() if spec.source in wanted}


def tables_for(sources: Iterable[str] | str | None = None) -> list[str]:
    """Every table the figures of ``sources`` may read: what to pass to ``connect()``.

    >>> tables_for("itp")
    ['itp.elasticflow_jobs', 'itp.jobs', 'itp.testbed_jobs']
    """
    return sorted({t for spec in registry(sources).values() for t in spec.inputs})


def get(name: str) -> FigureSpec:
    """The figure called ``name``; the error lists close names."""
    every = _registry()
    try:
        return every[name]
    except KeyError:
        close = [n for n in every if name in n or n in name][:5] or list(every)[:5]
        raise KeyError(f"unknown figure {name!r}; did you mean: {', '.join(close)}") from None
