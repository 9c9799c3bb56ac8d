"""The papers' figures, redrawn from the catalog: data in SQL, then a plot.

Every figure is a :class:`FigureSpec`: a *data* function that takes a catalog
connection and returns a DuckDB relation (computed next to the tables, cached
beside their Parquet files by :mod:`mltraces.figures.store`, and testable
without drawing; call ``.df()``, ``.arrow()`` or ``.pl()`` on it for a frame)
and a *plot* function that turns that data, as a pandas frame, into a
:class:`matplotlib.figure.Figure` in one consistent paper-size style. A spec
says which paper figure it reproduces (``figure="Fig. 1"``), or that it is our
own analysis (``figure=""``). The registry is plain data: each paper folder's
``figures.py`` (``mltraces/papers/<paper>/figures.py``) ends with a
``FIGURES`` tuple, found by scanning and read when first asked for.

>>> import mltraces
>>> from mltraces import figures
>>> con = mltraces.connect("zeus")                                  # doctest: +SKIP
>>> figures.data("zeus_fig1", con).df().head()                      # doctest: +SKIP
>>> fig = figures.draw("zeus_fig1", con)                            # doctest: +SKIP
>>> figures.render_all(con, ["zeus"], "figures/")                   # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.figures.specs import (  # the registry, re-exported
    FigureSpec,
    figure_sources,
    get,
    registry,
    tables_for,
)
from mltraces.logs import get_logger
from mltraces.workers import Deferred

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

    from mltraces.workers import Ahead

log = get_logger(__name__)

#: Where notebooks write figures when set (unset: they only display them).
OUTPUT_ENV = "MLTRACES_FIGURES_DIR"


@dataclass(frozen=True)
class Rendered:
    """What :func:`render_all` did with one figure: its files, or why it was skipped.

    ``written`` is false when the folder already held these very bytes (left alone);
    ``data`` is the figure's data as CSV beside it (ours next to the published values
    where the figure shows them), ``data_written`` whether this run wrote it.
    """

    name: str
    paths: tuple[Path, ...] = ()
    skipped: str | None = None
    written: bool = True
    data: Path | None = None
    data_written: bool = False


def data(name: str, con: duckdb.DuckDBPyConnection, **kwargs: Any) -> Any:
    """The data behind figure ``name``: a DuckDB relation (``.df()`` for pandas)."""
    return get(name).data(con, **kwargs)


def as_frame(value: Any) -> pd.DataFrame:
    """A pandas frame from a figure's data (a DuckDB relation, or already a frame)."""
    import duckdb

    return value.df() if isinstance(value, duckdb.DuckDBPyRelation) else value


def frame(name: str, con: duckdb.DuckDBPyConnection, **kwargs: Any) -> pd.DataFrame:
    """Figure ``name``'s data as the pandas frame its plot function takes."""
    return as_frame(data(name, con, **kwargs))


def draw(
    name: str,
    con: duckdb.DuckDBPyConnection,
    output_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Any:
    """Compute and draw figure ``name``; also write PNG + PDF when ``output_dir`` is given.

    Figures drawn from tables that were not verified against the upstream
    hashes (local files given with ``--local`` / ``MLTRACES_LOCAL``) carry a
    footnote saying so, so a figure from a synthetic or edited file cannot pass
    for the real one.
    """
    from mltraces.figures import render, style

    spec = get(name)
    unverified = unverified_inputs(con, spec.inputs)
    figure = render.plot(name, frame(name, con, **kwargs), unverified)
    if output_dir is not None:
        style.save(figure, Path(output_dir) / spec.name, tight=bool(unverified))
    return figure


def show(
    name: str,
    con: duckdb.DuckDBPyConnection,
    output_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Any:
    """:func:`draw` for notebooks: when inputs are missing, print what to fetch and return None.

    A notebook then runs top to bottom on a machine that has only some of the
    traces, and each skipped figure says how to get it.
    """
    spec = get(name)
    missing = missing_inputs(con, spec)
    if missing:
        print(f"{name} skipped: {skip_reason(spec, missing)}")
        return None
    return draw(name, con, output_dir, **kwargs)


def skip_reason(
    spec: FigureSpec, missing: dict[str, str], local: Iterable[str] = ()
) -> str:
    """``needs acme.seren_jobs or acme.kalos_jobs: run `mltraces fetch ...` ...``.

    Tables in ``local`` were given as local files: the reason then says that
    file could not be used, instead of suggesting ``--local``.
    """
    given = [t for t in missing if t in set(local)]
    if given:
        return "; ".join(f"the local file for {t} could not be used: {missing[t]}" for t in given)
    required = [t for t in spec.tables if t in missing]
    either = " or ".join(t for t in spec.any_of if t in missing)
    needed = ", ".join([*required, *([either] if either else [])])
    return f"needs {needed}: {fetch_hint(missing)}"


def missing_inputs(
    con: duckdb.DuckDBPyConnection, spec: FigureSpec, known: dict[str, str | None] | None = None
) -> dict[str, str]:
    """Tables of ``spec`` that cannot be read, with the reason; empty when it can be drawn.

    ``known`` caches :func:`table_problem` results across figures.
    """
    known = {} if known is None else known
    for table in spec.inputs:
        if table not in known:
            known[table] = table_problem(con, table)
    missing = {t: p for t in spec.tables if (p := known[t])}
    optional = {t: p for t in spec.any_of if (p := known[t])}
    if spec.any_of and len(optional) == len(spec.any_of):
        missing.update(optional)
    return missing


_problems: weakref.WeakKeyDictionary[Any, dict[str, str | None]] = weakref.WeakKeyDictionary()


def table_problem(con: duckdb.DuckDBPyConnection, table: str) -> str | None:
    """Why ``table`` cannot be read on ``con`` (None when it can).

    A catalog connection says so in its ``mltraces.status`` table (state and
    reason, with the command that fixes it). A table missing from it (not set
    up on this connection, or a connection built by hand) is probed with a query.
    The answer is remembered per connection (a catalog connection's views do
    not change), so data functions can check cheaply every time they run.
    """
    import duckdb

    from mltraces.catalog import read_status

    known = _problems.setdefault(con, {})
    if table in known:
        return known[table]
    status = (read_status(con) or {}).get(table)
    if status is not None:
        known[table] = None if status.usable else (status.reason or status.state)
        return known[table]
    try:
        con.sql(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
        known[table] = None
    except duckdb.Error as error:
        known[table] = str(error).split("\n")[0]
    return known[table]


def available(con: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> list[str]:
    """The subset of ``tables`` that can be read on ``con``, in order."""
    return [t for t in tables if table_problem(con, t) is None]


def unverified_inputs(con: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> list[str]:
    """Tables among ``tables`` built from unverified local files (``mltraces.status``)."""
    from mltraces.catalog import read_status

    status = read_status(con) or {}
    return [t for t in tables if t in status and status[t].state == "unverified"]


def fetch_hint(tables: Iterable[str]) -> str:
    """What to run to make ``tables`` available: fetch their files, or point at local copies."""
    from mltraces.schema import get_schema

    file_ids: list[str] = []
    for table in tables:
        try:
            file_ids.extend(get_schema(table).file_ids)
        except KeyError:
            continue
    fetch = f"mltraces fetch {' '.join(dict.fromkeys(file_ids))}" if file_ids else "mltraces fetch"
    first = next(iter(tables), "TABLE")
    return f"run `{fetch}`, or use local copies with --local {first}=PATH"


def render_all(
    con: duckdb.DuckDBPyConnection,
    sources: Iterable[str] | str | None = None,
    output_dir: str | os.PathLike[str] = "figures",
    names: Iterable[str] | None = None,
    *,
    processes: int | None = None,
    local: Iterable[str] = (),
    progress: bool | None = None,
    redraw: bool = False,
    style: str = "default",
) -> list[Rendered]:
    """Draw every figure of ``sources`` (default: all) into ``output_dir`` as PNG and PDF.

    ``style="paper"`` draws them without the titles that say where each comes
    from, at column or page width, as PDF and SVG (:data:`.style.STYLES`).

    A figure whose tables are unavailable is skipped with a message that says
    which files to fetch (or which ``local`` file failed); the others are still
    drawn. Data is computed here, in figure order (with several processes in two
    passes: the first submits every figure's scheduler replays to one shared pool,
    the second computes the data of the figures that replay; see
    :mod:`mltraces.workers`); a figure that ``output_dir`` already holds, as
    its ``renders.json`` records (the same render key, the same bytes), is left
    as it is; one whose data and drawing code are unchanged since it was last
    rendered is copied from the render cache (:mod:`.render`); the others are
    plotted and saved in
    ``processes`` worker processes (default: one per core; 1 draws in this
    process). ``progress`` shows a bar (default: when stderr is a terminal and
    the run lasts over 2 s). ``redraw`` draws every figure even when the output
    folder or the render cache holds it. Results come back in figure order.
    """
    from mltraces.figures import render
    from mltraces.figures import style as styles

    styles.check_style(style)
    specs = registry(sources) if names is None else {n: get(n) for n in names}
    count = render.workers(processes) if len(specs) > 1 else 1
    results: dict[str, Rendered] = {}
    known: dict[str, str | None] = {}
    bar = _progress(len(specs), progress)
    executor = render.pool(count) if count > 1 else None
    pending: dict[str, tuple[str, Any]] = {}
    data_files: dict[str, tuple[Path, bool]] = {}
    record = render.read_record(output_dir)  # what the output folder holds already

    def done(name: str, key: str, paths: Sequence[Path], fresh: bool) -> None:
        render.note_render(record, name, key, list(paths), style)
        results[name] = _kept(name, key, paths, style) if fresh else _written(name, paths)
        bar.update()

    def draw_or_reuse(spec: FigureSpec, table: pd.DataFrame) -> None:
        if not spec.data_is_upstream:
            data_files[spec.name] = write_data(spec.name, table, output_dir)
        task = (spec.name, table, unverified_inputs(con, spec.inputs), str(output_dir), style)
        key = render.render_key(*task[:3], style)
        current = None if redraw else render.up_to_date(spec.name, key, output_dir, record,
                                                           style)
        if current is not None:  # the folder holds this very render: nothing to write
            log.info("%s is up to date", ", ".join(map(str, current)))
            results[spec.name] = Rendered(spec.name, paths=tuple(current), written=False)
            bar.update()
            return
        reused = None if redraw else render.reuse(spec.name, key, str(output_dir), style)
        if reused is not None:  # same data, same code: the same bytes as last time
            done(spec.name, key, reused, fresh=False)
        elif executor is None:
            done(spec.name, key, render.render(*task), fresh=True)
        else:
            pending[spec.name] = (key, executor.submit(render.render, *task))

    try:
        with _work_ahead(count > 1) as session:
            later = []
            for spec in specs.values():
                missing = missing_inputs(con, spec, known)
                if missing:
                    results[spec.name] = Rendered(spec.name,
                                                  skipped=skip_reason(spec, missing, local))
                    log.info("skipped %s: %s", spec.name, results[spec.name].skipped)
                    bar.update()
                    continue
                try:
                    table = frame(spec.name, con)
                except Deferred:  # its replays are under way: its data comes in the 2nd pass
                    later.append(spec)
                    continue
                draw_or_reuse(spec, table)
            if session is not None:
                session.collecting = False
            for spec in later:
                draw_or_reuse(spec, frame(spec.name, con))
        for name, (key, future) in pending.items():
            done(name, key, future.result(), fresh=True)
        render.write_record(output_dir, record)
    finally:
        bar.close()
        if executor is not None:
            executor.shutdown()
    return [replace(results[name], data=data_files[name][0], data_written=data_files[name][1])
            if name in data_files else results[name] for name in specs]


def write_data(name: str, table: pd.DataFrame, output_dir: str | os.PathLike[str]
               ) -> tuple[Path, bool]:
    """The figure's data as ``<name>.csv`` beside its images; (path, whether it was written).

    The data is what the plot draws, so ours sits next to the published values wherever
    the figure shows them. The text is stable (same data, same bytes): a file that already
    holds it is left alone, and a changed one is replaced whole.
    """
    from mltraces.outputs import replace_file

    path = Path(output_dir) / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = table.to_csv(index=False, lineterminator="\n")
    try:
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
            return path, False
    except OSError:
        pass
    with replace_file(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path, True


@contextmanager
def _work_ahead(pooled: bool) -> Iterator[Ahead | None]:
    """One pool for every figure's replays when drawing with several processes (see
    :mod:`mltraces.workers`): a figure's replays no longer wait for the previous
    figure's last ones. It has a worker per core, as each figure's own pool had
    (``processes`` counts the rendering ones). Nothing when drawing in this process."""
    if not pooled:
        yield None
        return
    from mltraces.figures import render
    from mltraces.workers import ahead

    with ahead(render.workers()) as session:
        yield session


def _kept(name: str, key: str, paths: Sequence[Path], style: str = "default") -> Rendered:
    """A fresh render, also stored in the render cache under its key."""
    from mltraces.figures import render

    render.keep(name, key, list(paths), style)
    return _written(name, paths)


def _written(name: str, paths: Sequence[Path]) -> Rendered:
    log.info("wrote %s", ", ".join(map(str, paths)))
    return Rendered(name, paths=tuple(paths))


def _progress(total: int, show: bool | None) -> Any:
    """A tqdm bar on stderr that appears after 2 s on a terminal (or as ``show`` says)."""
    from tqdm import tqdm

    disable = not sys.stderr.isatty() if show is None else not show
    return tqdm(total=total, desc="figures", unit="fig", delay=2.0, disable=disable,
                file=sys.stderr, leave=False)


def output_dir_from_env() -> Path | None:
    """``MLTRACES_FIGURES_DIR`` as a path, or None (notebooks then only display figures)."""
    from mltraces.config import figures_dir

    return figures_dir()


__all__ = [
    "OUTPUT_ENV",
    "FigureSpec",
    "Rendered",
    "as_frame",
    "available",
    "data",
    "draw",
    "fetch_hint",
    "figure_sources",
    "frame",
    "get",
    "missing_inputs",
    "output_dir_from_env",
    "registry",
    "render_all",
    "show",
    "skip_reason",
    "table_problem",
    "tables_for",
]
