"""A page per paper, drawn from its folder: card, every figure with its status, the
published numbers beside ours and the call that draws it.

Read from ``mltraces/papers/<paper>/``: ``paper.json`` (the card), ``status.json`` (every
figure and table of the paper with its status: :data:`mltraces.papers.FIGURE_STATUSES`),
``published.json`` (its numbers) and ``figures.py`` (our figures that draw it). The
images are the main job's output (``figures/<name>.png``), with each figure's data as
CSV beside it (``figures/<name>.csv``) when the folder holds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mltraces.docs import markdown as md


def _spec_call(name: str) -> str:
    """How to draw one figure and get its numbers, on the command line and in Python."""
    from mltraces.figures import get

    spec = get(name)
    needs = ", ".join(md.inline(t) for t in spec.tables)
    if spec.any_of:
        needs += (", " if needs else "") + "one of " + " / ".join(md.inline(t) for t in
                                                                   spec.any_of)
    data = f"{spec.data.__module__}.{spec.data.__qualname__}"
    return (f"Draw it: {md.inline(f'mltraces figures --only {name}')} · in Python: "
            f"{md.inline(f'mltraces.figures.draw({name!r}, con)')}, its numbers "
            f"{md.inline(f'mltraces.figures.data({name!r}, con).df()')} "
            f"({md.inline(data)}) · needs {needs or 'nothing'}\n")


def _figure(name: str, folder: Path | None) -> str:
    """One figure of ours: its image and data when drawn, else why not, and its call."""
    from mltraces.figures import get

    spec = get(name)
    parts = [f"**{md.inline(name)}**: {spec.title}\n"]
    image = folder / f"{name}.png" if folder else None
    if image is not None and image.is_file():
        parts.append(f"![{name}](../figures/{name}.png)\n")
        if (folder / f"{name}.csv").is_file():
            parts.append(f"Its data, ours beside the published values where the paper prints "
                         f"them: [{name}.csv](../figures/{name}.csv)\n")
    else:
        parts.append("*Not drawn in this repository's `figures/`: its inputs are not "
                     "obtainable here (see the status above).*\n")
    parts.append(_spec_call(name))
    return "\n".join(parts)


def _published(numbers: dict[str, Any]) -> str:
    """A published block (``published.json`` entry) as its note and a table of values."""
    note = numbers.get("note", "")
    rows = [[md.inline(key), md.value_text(value)]
            for key, value in md.flatten({k: v for k, v in numbers.items() if k != "note"})]
    return ('??? note "Published numbers"\n\n' + "".join(
        f"    {line}\n" if line else "\n" for line in
        (f"{note}\n\n" + md.table(["key", "published"], rows)).splitlines()))


def status_counts(paper: str) -> dict[str, int]:
    """How many of the paper's figures have each status."""
    from mltraces.papers import figure_statuses

    counts: dict[str, int] = {}
    for entry in figure_statuses(paper):
        counts[entry.status] = counts.get(entry.status, 0) + 1
    return counts


def paper_page(name: str, figures_folder: Path | None) -> str:
    """The page of paper ``name`` (``papers/<name>.md``)."""
    from mltraces.figures import registry
    from mltraces.papers import FIGURE_STATUSES, figure_statuses, get_paper, published
    from mltraces.registry import all_sources

    paper = get_paper(name)
    known = all_sources()
    sources = ", ".join(f"[{s}](../traces/{s}.md)" if s in known else md.inline(s)
                        for s in paper.sources)
    card = [["venue", paper.venue], ["link", f"<{paper.url}>" if paper.url else "—"],
            ["data", sources], ["cite", f"{md.inline(f'mltraces info {paper.cites}')} prints "
                                        "the BibTeX"],
            ["notebook", md.inline(f"notebooks/{paper.notebook}") if paper.notebook else "—"],
            ["folder", md.inline(f"mltraces/papers/{name}/")]]
    parts = [f"# {paper.title} ({paper.venue})\n", (paper.summary or "") + "\n",
             md.table(["", ""], card), "## Figures\n",
             md.table(["status", "figures", "meaning"],
                      [[s, n, FIGURE_STATUSES[s]] for s, n in status_counts(name).items()])]
    numbers = published(name) if (paper.folder / "published.json").is_file() else {}
    drawn: set[str] = set()
    for entry in figure_statuses(name):
        parts.append(f"### {entry.figure}\n")
        parts.append(f"**Status: {entry.status}.** {entry.note}\n")
        for figure in entry.drawn_by:
            drawn.add(figure)
            parts.append(_figure(figure, figures_folder))
        if entry.published and entry.published in numbers:
            parts.append(_published(numbers[entry.published]))
    mine = [n for n, spec in registry().items() if spec.paper and n not in drawn
            and spec.data.__module__.startswith(f"mltraces.papers.{name}.")]
    if mine:
        parts.append("### Figures without a recorded status\n")
        parts += [_figure(figure, figures_folder) for figure in mine]
    return "\n".join(parts)


def papers_index(base: str = "") -> str:
    """The table of papers, each with its figures by status (links relative to ``base``)."""
    from mltraces.papers import all_papers

    rows = []
    for name, paper in all_papers().items():
        counts = ", ".join(f"{n} {s}" for s, n in status_counts(name).items())
        rows.append([f"[{paper.title}]({base}{name}.md)", paper.venue, counts or "—"])
    return ("# Papers\n\nEach paper's figures, redrawn from the public data where it allows, "
            "with the published numbers beside ours and the status of every figure.\n\n"
            + md.table(["paper", "venue", "figures"], rows))
