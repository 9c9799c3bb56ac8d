"""A page per trace, drawn from its source folder: card, schemas, mappings, an example.

Everything on a trace page is read from what the source folder already holds, so a
new folder (shipped, or a user's under ``MLTRACES_SOURCES``) gets its page with no
edit anywhere else:

- ``source.json``: what it is, licence, pins, files with size and hash, anomalies,
  expected rows (:mod:`mltraces.registry`);
- ``citation.bib``: the citation;
- its schemas (``schemas/<name>/*.json``): every table with every column's type, unit,
  description and constraints, its derived columns, checks and notes;
- every mapping file of the folder (``jobs.json``, ``requests.json`` or any other
  ``<view>.json`` holding ``{"tables": [...]}``): how each table maps onto
  ``mltraces.<view>``, rendered from the JSON itself, so a new kind of mapping needs no
  code here;
- the job mappings also give the matrix of what each trace can answer (:data:`QUESTIONS`);
- an example query, run on the catalog when the site is built (from the cache only:
  building the site downloads nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mltraces.docs import markdown as md

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import JobTable
    from mltraces.registry import Source
    from mltraces.schema import TableSchema

#: files of a source folder that are not mappings
NOT_MAPPINGS = frozenset({"source.json"})


@dataclass(frozen=True)
class Question:
    """One column of the "what it can answer" matrix: asked of a job trace's mapping."""

    name: str
    answers: Callable[[JobTable], str | None]  # why yes, or None for no
    missing: Callable[[JobTable], str]  # why not


def _queueing(entry: JobTable) -> str | None:
    return "queue_s = start − submit" if "start" in entry.columns else None


def _deadlines(entry: JobTable) -> str | None:
    if "deadline" not in entry.columns:
        return None
    return "deadline_s, drawn by the authors (synthetic)" if entry.synthetic else "deadline_s"


def _clock(entry: JobTable) -> str | None:
    if entry.kind == "clock":
        return f"instants ({entry.zone})" if entry.zone else "instants with offsets"
    if entry.kind == "unix":
        return "Unix seconds"
    return f"seconds from {entry.origin}" if entry.origin else None


def _gpu_type(entry: JobTable) -> str | None:
    return "gpu_type" if "gpu_type" in entry.columns else None


def _utilization(entry: JobTable) -> str | None:
    return ", ".join(entry.utilization) or None


#: what a reader asks of a job trace, and where the answer comes from in its mapping
QUESTIONS = (
    Question("queueing", _queueing,
             lambda e: "no start times: queue_s is NULL" + (
                 " (a run time only)" if "duration" in e.columns else "")),
    Question("deadlines", _deadlines, lambda e: "none published: deadline_s is NULL"),
    Question("a real clock", _clock,
             lambda e: "seconds from the trace's own start: the `*_time` columns are NULL"),
    Question("GPU type", _gpu_type, lambda e: "not recorded: gpu_type is NULL"),
    Question("utilization", _utilization, lambda e: "no utilization table"),
)


def answer_matrix(entries: list[JobTable]) -> str:
    """The matrix: one row per job trace, one column per :data:`QUESTIONS` entry."""
    rows = []
    for entry in entries:
        cells = []
        for question in QUESTIONS:
            why = question.answers(entry)
            cells.append(f"✓ {why}" if why else f"✗ {question.missing(entry)}")
        trace = md.inline(entry.trace) + (f" (copy of {md.inline(entry.copy_of)})"
                                          if entry.copy_of else "")
        rows.append([trace, *cells])
    return md.table(["trace", *(q.name for q in QUESTIONS)], rows)


# --------------------------------------------------------------------------- facts


def source_tables(source: Source) -> list[TableSchema]:
    """The source's tables, by name."""
    from mltraces.schema import all_schemas

    return [s for name, s in sorted(all_schemas().items()) if s.schema_name == source.name]


def job_entries(source: Source) -> list[JobTable]:
    """The source's mapped job tables, in its ``jobs.json`` order."""
    from mltraces.jobmap import job_tables

    return [t for t in job_tables().values() if t.source == source.name]


def mapping_files(source: Source) -> dict[str, dict[str, Any]]:
    """Every mapping file of the folder by view (``jobs`` -> its JSON): ``<view>.json``
    holding ``{"tables": [...]}``."""
    found: dict[str, dict[str, Any]] = {}
    folder = source.folder
    for path in sorted(folder.glob("*.json")) if folder else ():
        if path.name in NOT_MAPPINGS:
            continue
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # the loader that reads the file reports it
        if isinstance(raw, dict) and isinstance(raw.get("tables"), list):
            found[path.stem] = raw
    return found


def papers_of(source: Source) -> list[Any]:
    """The papers whose card draws on this source or cites it."""
    from mltraces.papers import all_papers

    return [p for p in all_papers().values() if source.name in p.sources or p.cites == source.name]


def rows_text(source: Source, tables: list[TableSchema]) -> str:
    """How big it is as published: jobs of its original job traces (copies of another
    trace left out), else rows of its tables; ``unpublished`` when the source gives none."""
    entries = job_entries(source)
    jobs = [e.table for e in entries if e.copy_of is None]
    if entries and not jobs:  # every job table is another trace's jobs again
        counts = [source.expected_rows[e.table] for e in entries if e.table in
                  source.expected_rows]
        copies = ", ".join(dict.fromkeys(str(e.copy_of) for e in entries))
        return f"{sum(counts):,} jobs of {copies}" if counts else f"jobs of {copies}"
    if jobs:
        counts = [source.expected_rows[t] for t in jobs if t in source.expected_rows]
        return f"{sum(counts):,} jobs" if counts else "unpublished"
    counts = [source.expected_rows[t.name] for t in tables if t.name in source.expected_rows]
    return f"{sum(counts):,} rows" if counts else "unpublished"


def _pins(source: Source) -> str:
    return "; ".join(f"{host}: {md.inline(where)}" for host, where in source.pins.items()) or (
        "local files" if source.files and all(f.local for f in source.files) else "—")


def _where(source: Source) -> str:
    from mltraces.registry import SOURCES_DIR

    folder = source.folder
    if folder is None:
        return "—"
    try:
        return md.inline(f"mltraces/sources/{folder.relative_to(SOURCES_DIR).as_posix()}/")
    except ValueError:
        return f"your own source folder ({md.inline(folder.name + '/')})"


# --------------------------------------------------------------------------- sections


def _card(source: Source, page_dir: str) -> str:
    papers = ", ".join(f"[{p.title} ({p.venue})]({page_dir}papers/{p.name}.md)"
                       for p in papers_of(source)) or "—"
    licence = source.license + (f" — {source.license_note}" if source.license_note else "")
    rows = [["name", f"{md.inline(source.name)} (its tables' SQL schema: "
                     f"{md.inline(source.name + '.TABLE')})"],
            ["homepage", f"<{source.homepage}>" if "://" in source.homepage else source.homepage],
            ["licence", licence], ["pinned at", _pins(source)], ["papers", papers],
            ["folder", _where(source)],
            ["get it", f"{md.inline('mltraces fetch ' + source.name)}, then "
                       f"{md.inline('mltraces info ' + source.name)}"]]
    return md.table(["", ""], rows)


def _files(source: Source) -> str:
    rows = []
    for f in source.files:
        if f.local:
            where, pinned = md.inline(str(f.path.name)), "local path"
        else:
            where = f"[{md.inline(f.filename)}]({f.url})"
            pinned = f.hash_kind + (" + git blob" if f.sha256 and f.git_blob else "")
        members = f" ({len(f.members)} members)" if f.members else ""
        rows.append([md.inline(f.id), where, md.size(f.size),
                     pinned if f.pinned else "unpinned (served as unverified)",
                     f.description + members])
    return md.table(["id", "file", "size", "verified by", "what it holds"], rows)


def column_rows(schema: TableSchema) -> list[list[str]]:
    """Every column of a table: name, DuckDB type, unit, description, constraints."""
    from mltraces.schema import constraint_text

    rows = [[md.inline(f.name), f.duckdb_type, f.unit or "", f.description,
             md.inline(text) if (text := constraint_text(f.constraints, enum_width=None))
             else ""] for f in schema.fields]
    rows += [[md.inline(d.name), f"{d.duckdb_type} (derived)", d.unit or "", d.description,
              f"= {md.inline(d.sql)}"] for d in schema.derived]
    return rows


def table_section(schema: TableSchema, rows: str) -> str:
    """One table: what it is, where it comes from, every column, checks and notes."""
    parts = [f"### {md.inline(schema.name)}: {schema.title}\n", schema.description + "\n",
             md.table(["", ""], [
                 ["rows", rows], ["from", ", ".join(md.inline(f) for f in schema.file_ids)
                                  or "other tables of the catalog"],
                 ["primary key", ", ".join(schema.primary_key) or "—"],
                 ["schema file", md.inline(f"schemas/{schema.schema_name}/"
                                           f"{schema.table_name}.json")],
                 ["describe", md.inline(f"mltraces info {schema.name}")]]),
             md.table(["column", "type", "unit", "description", "constraints"],
                      column_rows(schema))]
    if schema.checks:
        parts += ["Checks (`mltraces validate`):\n",
                  md.bullets(f"{md.inline(c.name)} [{c.severity}]: {c.description} "
                             f"({md.inline(c.sql)})" for c in schema.checks)]
    if schema.notes:
        parts += ["Notes:\n", md.bullets(schema.notes)]
    return "\n".join(parts)


def mapping_section(view: str, raw: dict[str, Any]) -> str:
    """How a mapping file's tables map onto ``mltraces.<view>``, from its JSON alone."""
    parts = []
    for entry in raw["tables"]:
        if not isinstance(entry, dict):
            continue
        head = md.inline(str(entry.get("table", "?")))
        if entry.get("trace"):
            head += f" → trace {md.inline(str(entry['trace']))}"
        parts.append(f"#### {head}\n")
        if entry.get("description"):
            parts.append(f"{entry['description']}\n")
        columns = entry.get("columns")
        scalars = [[md.inline(k), md.value_text(v)] for k, v in entry.items()
                   if k not in {"table", "trace", "description", "columns"}]
        if scalars:
            parts.append(md.table(["key", "value"], scalars))
        if isinstance(columns, dict):
            parts.append(md.table([f"`mltraces.{view}` column", "from (SQL over the table)"],
                                  [[md.inline(k), md.inline(str(v))] for k, v in
                                   columns.items()]))
    intro = (f"The folder's {md.inline(view + '.json')} maps these tables onto "
             f"{md.inline('mltraces.' + view)} (one schema for every source: see "
             f"[the common views](views.md)).\n")
    return intro + "\n" + "\n".join(parts)


# --------------------------------------------------------------------------- example


def example_query(source: Source, tables: list[TableSchema]) -> str | None:
    """A small query that shows the trace: its jobs per trace, else a table's first rows."""
    entries = job_entries(source)
    if entries:
        return (f"SELECT trace, count(*) AS jobs, round(sum(gpu_time_s) / 3600) AS gpu_hours,\n"
                f"       median(queue_s) AS median_queue_s\n"
                f"FROM mltraces.jobs_of('{source.name}') GROUP BY trace ORDER BY trace")
    if not tables:
        return None
    counted = [t for t in tables if t.name in source.expected_rows] or tables
    first = counted[0]
    shown = ", ".join(f.name for f in first.fields[:6])
    return f"SELECT {shown}\nFROM {first.name} LIMIT 3"


def run_example(con: duckdb.DuckDBPyConnection | None, query: str) -> str:
    """The query's result as a table, or why it was not computed when the site was built."""
    if con is None:
        return "*Not computed: the site was built without a catalog.*\n"
    try:
        relation = con.sql(query)
        names = relation.columns
        rows = relation.limit(20).fetchall()
    except Exception as error:
        reason = str(error).splitlines()[0]
        return (f"*Not computed when this site was built: {reason}* Fetch the source "
                f"(`mltraces fetch`) or give local files (`--local`), then build again.\n")
    return md.table(names, ([_number(v) for v in row] for row in rows))


def _number(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:,.1f}" if value != int(value) else f"{int(value):,}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return "NULL" if value is None else value


# --------------------------------------------------------------------------- the page


def trace_page(source: Source, con: duckdb.DuckDBPyConnection | None) -> str:
    """The whole page of one source (``traces/<name>.md``)."""
    tables = source_tables(source)
    entries = job_entries(source)
    parts = [f"# {source.title}\n", source.description + "\n", _card(source, "../")]
    if entries:
        parts += ["## What it can answer\n",
                  "Each job trace of the source, asked what a scheduling or characterisation "
                  "study needs; a ✗ comes back as NULL in `mltraces.jobs`, never as an error.\n",
                  answer_matrix(entries)]
    query = example_query(source, tables)
    if query:
        parts += ["## Example\n", md.code(f'mltraces sql "{query}"', "bash"),
                  run_example(con, query)]
    parts += ["## Tables\n"]
    parts += [table_section(t, f"{source.expected_rows[t.name]:,} (as published)"
                            if t.name in source.expected_rows else "unpublished")
              for t in tables]
    for view, raw in mapping_files(source).items():
        parts += [f"## How it maps onto `mltraces.{view}`\n", mapping_section(view, raw)]
    parts += ["## Files\n", _files(source), "## Known anomalies\n", md.bullets(source.anomalies),
              "## Citation\n", "Please cite it when you use the data.\n",
              md.code(source.citation, "bibtex")]
    return "\n".join(parts)


def views_page() -> str:
    """The common views (``mltraces.jobs``, and any other ``mltraces.*`` schema)."""
    from mltraces.schema import all_schemas

    parts = ["# The common views\n",
             "Every source maps its tables onto these views in its own folder (a mapping "
             "file per view), so one query reads every trace in the same columns and units.\n"]
    for _name, schema in sorted(all_schemas().items()):
        if schema.schema_name == "mltraces":
            parts.append(table_section(schema, "the mapped tables' rows"))
    return "\n".join(parts)


def cited_paper(source: Source) -> str:
    """The title and year of the entry in ``citation.bib`` (braces dropped)."""
    import re

    def field(name: str) -> str:
        found = re.search(rf"\b{name}\s*=\s*", source.citation)
        if found is None:
            return ""
        text, depth, out = source.citation[found.end():], 0, []
        for char in text:
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 0 and char in ",\n":
                break
            else:
                out.append(char)
        return " ".join("".join(out).strip('" ').split())

    title, year = field("title"), field("year")
    return f"{title} ({year})" if title and year else title or source.title


def trace_rows(base: str) -> Iterator[list[str]]:
    """One row per source: name (linked to its page), the paper it comes with, rows, licence."""
    from mltraces.registry import all_sources

    suffix = "/" if "://" in base else ".md"
    for source in all_sources().values():
        yield [f"[{source.name}]({base}{source.name}{suffix})", cited_paper(source),
               rows_text(source, source_tables(source)), source.license]


def trace_table(base: str) -> str:
    """The table of traces (README and the site's home), each linked to its page."""
    return md.table(["trace", "paper", "rows", "licence"], trace_rows(base))
