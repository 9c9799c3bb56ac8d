"""The documentation site, drawn from what the package already knows.

The guides are written by hand in the clone's ``docs/`` folder; every fact that lives
in a source folder, a paper folder, a docstring, the CLI parser or a data file is
rendered from there when the site is built, never copied into Markdown:

- a page per trace (:mod:`.traces`) from each source folder (shipped or a user's:
  adding a folder adds its page), and the common views from ``schemas/mltraces/``;
- a page per paper (:mod:`.papers`) from each paper folder, with the main job's
  images and data (``figures/``);
- the CLI reference from :func:`mltraces.cli.build_parser`, the API reference from
  the docstrings (mkdocstrings), the settings from :data:`mltraces.config.SETTINGS`
  (:mod:`.reference`), the architecture from :mod:`mltraces.layers`;
- the measured timings and test counts from ``benchmarks/results.json`` (:mod:`.measured`).

A hand-written page asks for generated text with a marker line,
``<!-- mltraces: NAME -->`` (:data:`PLACEHOLDERS`). ``mkdocs build`` in the clone runs
:mod:`.hooks`, which adds the generated pages; ``mltraces docs -o DIR`` and
``python -m mltraces.docs`` run that build (``pip install -e ".[docs]"``). Building
downloads nothing: the example queries run on what the cache holds.

>>> sorted(PLACEHOLDERS)[:2]
['benchmarks', 'papers']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.docs.site import CLONE, SITE_URL

if TYPE_CHECKING:
    import duckdb

__all__ = ["CLONE", "PLACEHOLDERS", "SITE_URL", "build", "expand_nav", "fill", "generated_pages"]

MARKER = re.compile(r"^<!-- mltraces: ([a-z-]+) -->$", re.M)


def _traces() -> str:
    from mltraces.docs.traces import trace_table

    return trace_table("traces/")


def _papers() -> str:
    from mltraces.docs.papers import papers_index

    return papers_index("papers/").split("\n", 2)[2]  # the table without its page heading


def _settings() -> str:
    from mltraces.docs.reference import settings_table

    return settings_table()


def _benchmarks() -> str:
    from mltraces.docs.measured import benchmarks_table

    return benchmarks_table()


def _tests() -> str:
    from mltraces.docs.measured import tests_text

    return tests_text()


def _statuses() -> str:
    from mltraces.docs import markdown as md
    from mltraces.papers import FIGURE_STATUSES

    return md.table(["status", "meaning"], FIGURE_STATUSES.items())


def _quickstart() -> str:
    """The README's three commands (its first bash block), so they are written once."""
    text = (CLONE / "README.md").read_text(encoding="utf-8")
    start = text.index("```bash\npython3 -m venv")
    return text[start:text.index("```\n", start + 8) + 4]


#: generated text a hand-written page may ask for with ``<!-- mltraces: NAME -->``
PLACEHOLDERS: dict[str, Callable[[], str]] = {
    "traces": _traces, "papers": _papers, "settings": _settings, "benchmarks": _benchmarks,
    "tests": _tests, "figure-statuses": _statuses, "quickstart": _quickstart,
}


def fill(page: str, where: str = "a page") -> str:
    """``page`` with every marker replaced by its generated text; an unknown one is an error."""
    def replace(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in PLACEHOLDERS:
            raise KeyError(f"{where}: unknown marker <!-- mltraces: {name} -->; known: "
                           f"{', '.join(sorted(PLACEHOLDERS))}")
        return PLACEHOLDERS[name]().rstrip("\n")

    return MARKER.sub(replace, page)


def generated_pages(con: duckdb.DuckDBPyConnection | None,
                    figures_folder: Path | None) -> dict[str, str]:
    """Every generated page by its path in the site: traces, papers, references."""
    from mltraces.docs import papers, reference, traces
    from mltraces.papers import all_papers
    from mltraces.registry import all_sources

    sources = all_sources()
    pages = {"traces/index.md": traces_index(), "traces/views.md": traces.views_page(),
             "papers/index.md": papers.papers_index(), "reference/cli.md": reference.cli_page()}
    pages.update({f"traces/{name}.md": traces.trace_page(source, con)
                  for name, source in sources.items()})
    pages.update({f"papers/{name}.md": papers.paper_page(name, figures_folder)
                  for name in all_papers()})
    pages.update(reference.api_pages())
    return pages


def traces_index() -> str:
    """The list of traces, and every job trace's "what it can answer" row in one matrix."""
    from mltraces.docs import traces
    from mltraces.registry import all_sources

    entries = [e for s in all_sources().values() for e in traces.job_entries(s)]
    return ("# Traces\n\nEvery source mltraces knows, shipped or your own (a folder in "
            "`MLTRACES_SOURCES`): click one for its tables, columns, files, anomalies and "
            "citation.\n\n" + traces.trace_table("") + "\n## What each job trace can answer\n\n"
            + traces.answer_matrix(entries))


def nav_children(target: str) -> list[Any] | None:
    """The generated pages a nav entry pointing at ``target`` expands into (None: none)."""
    from mltraces.docs.reference import API_PACKAGES
    from mltraces.papers import all_papers
    from mltraces.registry import all_sources

    if target == "traces/index.md":
        return [target, {"The common views": "traces/views.md"},
                *({name: f"traces/{name}.md"} for name in all_sources())]
    if target == "papers/index.md":
        return [target, *({f"{p.title.split(':')[0]} ({p.venue})": f"papers/{name}.md"}
                          for name, p in all_papers().items())]
    if target == "reference/api/mltraces.md":
        return [target, *({p: f"reference/api/{p}.md"} for p in API_PACKAGES)]
    return None


def expand_nav(nav: list[Any]) -> list[Any]:
    """mkdocs.yml's nav with each generated section filled in (:func:`nav_children`)."""
    out: list[Any] = []
    for item in nav:
        if isinstance(item, dict):
            (title, value), = item.items()
            if isinstance(value, list):
                out.append({title: expand_nav(value)})
                continue
            children = nav_children(value) if isinstance(value, str) else None
            out.append({title: children} if children else item)
        else:
            out.append(item)
    return out


def build(output: Path, config: Path | None = None) -> Path:
    """Build the site into ``output`` with ``mkdocs build --strict``; the folder is returned."""
    import os
    import subprocess
    import sys

    from mltraces.errors import MltracesError

    config = config or CLONE / "mkdocs.yml"
    if not config.is_file():
        raise MltracesError(f"no {config}: the site is built from a clone of mltraces (its "
                            "mkdocs.yml and docs/), not from an installed wheel")
    try:
        import material  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError as error:
        raise MltracesError(f"building the site needs {error.name}: pip install -e \".[docs]\" "
                            "in the clone") from None
    output = Path(output).resolve()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(output)], env=env, cwd=config.parent,
                          capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise MltracesError("mkdocs build --strict failed:\n" + "\n".join(lines[-20:]))
    return output
