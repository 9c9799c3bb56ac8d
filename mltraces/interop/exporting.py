"""Export: any job trace, filtered by a named recipe, in another simulator's input format.

``export("itp/raw/cluster10", "elasticflow", "c10.csv", recipe="elasticflow-itp")``
reads the trace through its jobs mapping, keeps what the recipe keeps, drops what
the format cannot hold (CPU jobs, jobs with no run time where the format needs
one), annotates what the format needs and the trace lacks (seeded, see
:mod:`mltraces.interop.annotate`; a trace's own annotations are kept when the
format can use them), writes the file and, beside it, ``<file>.provenance.json``:
the source and its pins, the slice, the recipe rule by rule, the annotation and
its seed, and every dropped job counted by reason. None of the five parsers
tolerates a comment line (each format module says why), so the record is a
sidecar. Both files are checked before any work and written whole: the file and
its record appear together or not at all.

The trace streams through in batches of ``batch_rows`` jobs (DuckDB's
``to_arrow_reader``), so an export's memory is a batch's, not the trace's:
a recipe rule that needs a fact of every job (the first submission) takes one
pass over the trace first; a trace whose own annotations may serve takes one
pass to check them; a format written in submission order spools the annotated
jobs to a Parquet file beside the output and reads them back sorted by DuckDB,
which spills to disk beyond :data:`SORT_MEMORY`. The bytes written do not depend
on the batch size (the annotation's draws are per job, the recipe's limits count
across batches).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mltraces.errors import MltracesError, OutputError
from mltraces.interop import annotate
from mltraces.interop.filters import Recipe, RecipeRun
from mltraces.interop.formats import Format, get_format
from mltraces.interop.jobs import TraceStream, open_trace, pins_of, resolve_trace
from mltraces.interop.recipes import get_recipe

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import JobTable
    from mltraces.outputs import Output

__all__ = ["BATCH_ROWS", "SIDECAR", "ExportResult", "export", "provenance_path"]

SIDECAR = ".provenance.json"
#: second 0 of a trace without a clock, when a format needs one (Philly's job log)
DEFAULT_ORIGIN = "2000-01-01 00:00:00+00:00"
THROUGHPUT_TABLE = "elasticflow.throughputs"
#: the largest throughputs file read (Gavel's simulation_throughputs.json is 1.2 MB)
MAX_PROFILE_BYTES = 64 << 20
#: jobs per batch read from DuckDB and handed to the writer
BATCH_ROWS = 100_000
#: DuckDB's memory for sorting the spooled jobs of a format written in submission order
SORT_MEMORY = "256MB"
#: the columns spooled for sorting (what the sorted formats' writers read), and their types
_SPOOLED = {"job_id": "string", "submit": "int64", "duration": "int64", "gpus": "int64",
            "model": "string", "batch_size": "int64", "iterations": "int64"}


@dataclass
class ExportResult:
    """What an export wrote (``jobs``: the written jobs in the trace's order, when kept)."""

    path: Path
    provenance: dict[str, Any]
    jobs: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def written(self) -> int:
        return int(self.provenance["rows"]["written"])


def provenance_path(path: str | Path) -> Path:
    """Where the provenance record of an exported file is written."""
    return Path(f"{path}{SIDECAR}")


def _outputs(path: str | Path, inputs: list[Path]) -> tuple[Output, Output]:
    """The file and its provenance record, both checked before any work: a file in a
    folder (not a pipe, a device or a descriptor such as ``/dev/stdout``, which has no
    folder to hold the record), and none of the files the trace is read from."""
    from mltraces.outputs import prepare

    out = prepare(path)
    if out.stream or _no_folder_of_files(Path(path)):
        raise OutputError(f"cannot write {path}: an export's provenance goes beside it "
                          f"({provenance_path(path).name}), which a pipe, a device or a "
                          "descriptor cannot have; write to a file")
    side = prepare(provenance_path(path))
    for written in (out.final, side.final):
        clash = next((i for i in inputs if _same_or_inside(written, i)), None)
        if clash is not None:
            raise OutputError(f"cannot write {written}: the trace is read from "
                              f"{clash}{' (a folder holding it)' if clash.is_dir() else ''}, "
                              "which the export would overwrite; write elsewhere")
    return out, side


def checked_outputs(path: str | Path, inputs: list[Path]) -> tuple[Output, Output]:
    """The checks of every export (:func:`_outputs`), for the request exporter too."""
    return _outputs(path, inputs)


def _no_folder_of_files(path: Path) -> bool:
    """True for a path under ``/dev`` or ``/proc`` (``/dev/stdout``, ``/proc/self/fd/1``):
    even when it ends at a regular file, the record cannot go beside it there."""
    places = (os.path.realpath(path.parent), os.path.realpath(path))
    return any(p in ("/dev", "/proc") or p.startswith(("/dev/", "/proc/")) for p in places)


def _same_or_inside(path: Path, source: Path) -> bool:
    """True when writing ``path`` would replace ``source`` or a file of the folder ``source``."""
    real, origin = os.path.realpath(path), os.path.realpath(source)
    if real == origin or (os.path.isdir(origin) and real.startswith(origin.rstrip("/") + "/")):
        return True
    try:
        return os.path.samefile(path, source)  # a hard link
    except OSError:
        return False


def trace_inputs(trace: str, local: dict | None = None) -> list[Path]:
    """The files (or folders) the trace's tables are read from here: given local copies, a
    user source's own files, downloaded files in the cache."""
    entry, _ = resolve_trace(trace)
    return table_inputs(entry.tables, local)


def table_inputs(tables: Iterable[str], local: dict | None = None) -> list[Path]:
    """The files (or folders) ``tables`` are read from here (see :func:`trace_inputs`)."""
    from mltraces.catalog.selection import resolve_local
    from mltraces.download import cached_path
    from mltraces.registry import get_file
    from mltraces.schema import get_schema

    overrides = resolve_local(local)
    found: list[Path] = []
    for table in tables:
        if table in overrides:
            found.append(Path(overrides[table]))
            continue
        for file_id in get_schema(table).file_ids:
            path = cached_path(get_file(file_id))
            if path is not None:
                found.append(path)
    return found


def _drop(jobs: pd.DataFrame, keep: pd.Series, dropped: dict[str, int], reason: str
          ) -> pd.DataFrame:
    gone = int((~keep.fillna(False).astype(bool)).sum())
    if gone:
        dropped[reason] = dropped.get(reason, 0) + gone
    return jobs[keep.fillna(False).astype(bool)]


@dataclass(frozen=True)
class Clock:
    """How a format with wall-clock times writes them: in ``zone``, from the trace's own
    instants, or from its seconds after ``start`` (``given``: an origin was asked for)."""

    zone: str
    start: pd.Timestamp
    given: bool
    record: dict[str, Any]


def clock_for(entry: JobTable, trace_origin: pd.Timestamp | None, origin: str | None,
              zone: str | None) -> Clock:
    """The clock of an export: the instant of second 0 asked for, else the trace's own, else
    :data:`DEFAULT_ORIGIN`."""
    zone = zone or entry.zone or "UTC"
    record: dict[str, Any] = {"zone": zone}
    if origin is not None:
        start = pd.Timestamp(origin)
        start = start if start.tzinfo else start.tz_localize("UTC")
    elif trace_origin is not None:
        start = trace_origin
    else:
        start = pd.Timestamp(DEFAULT_ORIGIN)
        record["origin_note"] = ("the trace has no clock: times are its seconds from "
                                 f"{DEFAULT_ORIGIN} (--origin sets another)")
    record["origin"] = start.isoformat()
    if "start" not in entry.columns:  # a run time without start and end (ITP, Pollux)
        record["attempts_note"] = ("the trace publishes a run time but no start: each job's "
                                   "attempt starts at its submission and runs that long")
    return Clock(zone, start, origin is not None, record)


def job_frame(entry: JobTable, frame: pd.DataFrame, fmt: Format, clock: Clock | None = None
              ) -> tuple[pd.DataFrame, dict[str, int], int]:
    """The writer's columns (:data:`~mltraces.interop.formats.base.JOB_COLUMNS`) from the
    common ones; jobs the format cannot hold are dropped and counted; and how many jobs
    asked for a fraction of a GPU (rounded up)."""
    dropped: dict[str, int] = {}
    jobs = frame
    if "gpus" in fmt.needs:  # a GPU workload: every job needs GPUs (a job log keeps all)
        jobs = _drop(frame, frame["num_gpu"] > 0, dropped, "no GPU (a CPU job, or unknown)")
    fractional = int((jobs["num_gpu"] != np.floor(jobs["num_gpu"])).sum())
    if "duration" in fmt.needs:
        jobs = _drop(jobs, jobs["run_s"] >= 0, dropped,
                     "no run time (never ran, or still running)")
        jobs = _drop(jobs, jobs["submit_s"].round() >= 0, dropped,
                     "submitted before second 0 (the format reads digits only)")
    out = pd.DataFrame({
        "job_id": jobs["job_id"].astype(str),
        "submit": annotate.whole_seconds(jobs["submit_s"]),
        "duration": annotate.whole_seconds(jobs["run_s"].fillna(0)),
        "gpus": np.ceil(jobs["num_gpu"].fillna(0)).astype("int64"),
        "state": jobs["state"], "user": jobs["user"], "vc": jobs["vc"],
        "num_nodes": jobs["num_nodes"]}, index=jobs.index)
    for column in ("model", "batch_size", "iterations", "deadline_s"):
        out[column] = jobs[column]
    if "clock" in fmt.needs:
        out = _clock_times(entry, jobs, out, clock or clock_for(entry, None, None, None))
    return out, dropped, fractional


def _clock_times(entry: JobTable, jobs: pd.DataFrame, out: pd.DataFrame, clock: Clock
                 ) -> pd.DataFrame:
    """Wall-clock times in the clock's zone: the trace's instants, or its seconds from the
    clock's start (every time when an origin was asked for)."""
    if "start" not in entry.columns:  # each attempt starts at its submission
        ran = jobs["run_s"].notna()
        jobs = jobs.assign(start_s=jobs["submit_s"].where(ran),
                           end_s=(jobs["submit_s"] + jobs["run_s"]).where(ran))
    for key in ("submit", "start", "end"):
        instants = pd.to_datetime(jobs[f"{key}_time"], utc=True)
        from_seconds = clock.start + pd.to_timedelta(jobs[f"{key}_s"].round(), unit="s")
        chosen = from_seconds if clock.given else instants.where(instants.notna(), from_seconds)
        chosen = pd.to_datetime(chosen, utc=True).dt.tz_convert(clock.zone).dt.tz_localize(None)
        out[f"{key}_time"] = chosen.dt.round("s")
    return out


def _usable_own(fmt: Format, jobs: pd.DataFrame, profiles: Any) -> bool:
    """True when every job's own model (and work) is one this format's simulator knows."""
    if jobs["model"].isna().any():
        return False
    if fmt.name == "elasticflow":
        known = set(zip(profiles["model"], profiles["batch_size"], profiles["num_gpus"],
                        strict=True)) if profiles is not None else set()
        return bool(jobs[["iterations", "deadline_s", "batch_size"]].notna().all().all()) and all(
            (m, int(b), int(g)) in known for m, b, g in
            jobs[["model", "batch_size", "gpus"]].itertuples(index=False))
    if fmt.name == "tiresias":
        return bool(jobs["model"].isin(annotate.TIRESIAS_MODELS).all()
                    and jobs["iterations"].notna().all())
    if fmt.name == "pollux":
        return bool(jobs["model"].isin(list(annotate.POLLUX_BATCH_SIZES)).all()
                    and jobs["batch_size"].notna().all())
    if fmt.name == "gavel":
        return bool(jobs["iterations"].notna().all()) and all(
            (m, int(g)) in profiles for m, g in jobs[["model", "gpus"]].itertuples(index=False))
    return False


def _elasticflow_profiles(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute(f"SELECT model, batch_size, num_gpus, iterations_per_second FROM "
                       f"{THROUGHPUT_TABLE} WHERE gpu_type = ?",
                       [annotate.ELASTICFLOW_GPU_TYPE]).df()


def _gavel_profiles(fmt: Format, gavel_throughputs: Any) -> Any:
    """Gavel's measured throughputs (read before any work: a missing file is one line)."""
    if fmt.name == "gavel":
        if gavel_throughputs is None:
            raise MltracesError(
                "the gavel format turns run times into steps with Gavel's measured "
                "throughputs: give its scheduler/simulation_throughputs.json with "
                "--gavel-throughputs PATH (gavel_throughputs=)")
        path = Path(gavel_throughputs)
        if not path.is_file() or path.stat().st_size > MAX_PROFILE_BYTES:
            raise MltracesError(f"cannot read the Gavel throughputs {path}: not a file of at "
                                f"most {MAX_PROFILE_BYTES >> 20} MiB (Gavel's is 1.2 MB)")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as error:
            raise MltracesError(f"cannot read the Gavel throughputs {path}: {error}") from None
        return annotate.gavel_profiles(raw)
    return None


OWN_RULE = "the trace's own model, batch size, iterations and deadline, as published " \
           "(nothing drawn)"


def annotate_jobs(fmt: Format, jobs: pd.DataFrame, profiles: Any, seed: int, *,
                  own: bool = False, first: int = 0) -> annotate.Annotated:
    """What the format needs and the jobs lack, drawn as its artifact draws it (``first``:
    the position of the first job in the export, which its draws depend on); ``own``: the
    jobs' own annotations serve."""
    if "annotation" not in fmt.needs:
        return annotate.Annotated(jobs)
    if own:
        mine = jobs.assign(deadline=annotate.whole_seconds(jobs["deadline_s"].fillna(0)))
        return annotate.Annotated(mine, {}, [OWN_RULE])
    if fmt.name == "elasticflow":
        return annotate.elasticflow(jobs, profiles, seed, first)
    if fmt.name == "tiresias":
        return annotate.tiresias(jobs, seed, first)
    if fmt.name == "pollux":
        return annotate.pollux(jobs, seed, first)
    return annotate.gavel(jobs, profiles, seed, first)


def connect_for(trace: str, fmt: Format, local: dict | None = None,
                recipe: Recipe | None = None) -> duckdb.DuckDBPyConnection:
    """A catalog connection holding the trace's tables (fetched when missing), what its
    annotation reads and what its recipe reads."""
    from mltraces.catalog import connect
    from mltraces.interop.jobs import tables_for

    entry, _ = resolve_trace(trace)
    tables = tables_for(trace) + ([THROUGHPUT_TABLE] if fmt.name == "elasticflow" else [])
    tables += [t for t in (recipe.tables(entry.source) if recipe else ()) if t not in tables]
    return connect(tables=tables, local=local or {}, strict=True)


@dataclass
class _Tally:
    """What an export counted while the jobs streamed through."""

    after_recipe: int = 0
    written: int = 0
    fractional: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)
    kept: list[pd.DataFrame] | None = None

    def drop(self, dropped: dict[str, int]) -> None:
        for reason, count in dropped.items():
            self.dropped[reason] = self.dropped.get(reason, 0) + count


@dataclass
class _Plan:
    """One export's reading: the trace, its recipe run, the format and what it reads."""

    con: duckdb.DuckDBPyConnection
    source: TraceStream
    run: RecipeRun | None
    fmt: Format
    clock: Clock | None
    profiles: Any
    seed: int
    rows: int

    def kept_jobs(self, run: RecipeRun | None
                  ) -> Iterator[tuple[pd.DataFrame, dict[str, int], int, int]]:
        """Per batch: the recipe's jobs in the writer's columns, those the format dropped, how
        many asked for a fraction of a GPU, and how many the recipe kept."""
        for batch in self.source.batches(self.con, self.rows):
            kept = run.keep(batch) if run else batch
            jobs, dropped, fractional = job_frame(self.source.entry, kept, self.fmt, self.clock)
            yield jobs, dropped, fractional, len(kept)

    def own_annotations(self) -> bool:
        """Whether every job's own annotation serves the format (a pass, when it may)."""
        if "annotation" not in self.fmt.needs or "model" not in self.source.recorded:
            return False
        run = self.run.restarted() if self.run else None
        seen = 0
        for jobs, _, _, _ in self.kept_jobs(run):
            if len(jobs) and not _usable_own(self.fmt, jobs, self.profiles):
                return False
            seen += len(jobs)
        return seen > 0

    def annotated(self, tally: _Tally, own: bool) -> Iterator[pd.DataFrame]:
        """The annotated jobs, batch by batch, in the trace's order (counted in ``tally``)."""
        position = 0
        for jobs, dropped, fractional, kept in self.kept_jobs(self.run):
            tally.after_recipe += kept
            tally.fractional += fractional
            tally.drop(dropped)
            if not len(jobs):
                continue
            done = annotate_jobs(self.fmt, jobs, self.profiles, self.seed, own=own,
                                 first=position)
            position += len(jobs)
            tally.drop(done.dropped)
            tally.rules = tally.rules or done.rules
            tally.written += len(done.frame)
            if tally.kept is not None:
                tally.kept.append(done.frame)
            if len(done.frame):
                yield done.frame


def _spool_table(frame: pd.DataFrame, first: int) -> Any:
    """One batch of the columns a sorted writer reads, typed, with its position (``seq``)."""
    import pyarrow as pa

    arrays = {}
    for column, kind in _SPOOLED.items():
        values = frame[column] if column in frame else pd.Series([None] * len(frame))
        if kind == "string":
            arrays[column] = pa.array(values.astype(object).where(values.notna(), None),
                                      type=pa.string())
        else:
            arrays[column] = pa.array(pd.to_numeric(values).astype("Float64").astype("Int64"),
                                      type=pa.int64())
    arrays["seq"] = pa.array(np.arange(first, first + len(frame), dtype=np.int64))
    return pa.table(arrays)


@contextlib.contextmanager
def _sorted(batches: Iterable[pd.DataFrame], folder: Path, fmt: Format, rows: int
            ) -> Iterator[tuple[Iterator[pd.DataFrame], dict[str, Any]]]:
    """The jobs by submission (stable), spooled to Parquet in ``folder`` and sorted by DuckDB
    within :data:`SORT_MEMORY`; and the format's facts of them."""
    import duckdb
    import pyarrow.parquet as pq

    from mltraces.schema import sql_literal, sql_path

    with tempfile.TemporaryDirectory(prefix=".mltraces-export-", dir=folder) as work:
        spool = Path(work) / "jobs.parquet"
        writer, seen = None, 0
        try:
            for batch in batches:
                table = _spool_table(batch, seen)
                writer = writer or pq.ParquetWriter(spool, table.schema)
                writer.write_table(table)
                seen += len(batch)
        finally:
            if writer is not None:
                writer.close()
        con = duckdb.connect()
        try:
            con.execute(f"SET memory_limit = {sql_literal(SORT_MEMORY)}")
            con.execute(f"SET temp_directory = {sql_literal(work)}")
            con.execute("SET preserve_insertion_order = false")
            relation = f"read_parquet({sql_path(spool)})" if seen else \
                "(SELECT NULL AS job_id, 0 AS submit, 0 AS seq WHERE false)"
            facts = fmt.facts(con, relation) if fmt.facts and seen else {}
            reader = con.sql(f"SELECT * FROM {relation} ORDER BY submit, seq"
                             ).to_arrow_reader(rows)
            yield (b.to_pandas() for b in reader if b.num_rows), facts
        finally:
            con.close()


@dataclass(frozen=True)
class ExportOptions:
    """How an export is made, beside what and where: the choices of ``mltraces export``.

    ``recipe`` names a published filter (:mod:`mltraces.interop.recipes`); ``seed``
    seeds the annotation; ``origin`` (an instant) and ``zone`` (IANA) place a trace
    without a clock on one for the Philly job log; ``gavel_throughputs`` is Gavel's
    ``simulation_throughputs.json`` (the gavel format needs it). ``batch_rows`` jobs are
    read at a time; ``keep_jobs`` also returns the written jobs (a frame of the whole
    export: for tests and small traces).
    """

    recipe: str | None = None
    seed: int = 0
    origin: str | None = None
    zone: str | None = None
    gavel_throughputs: str | Path | None = None
    batch_rows: int = BATCH_ROWS
    keep_jobs: bool = False


def export(trace: str, to: str, output: str | Path, options: ExportOptions | None = None, *,
           local: dict | None = None, con: duckdb.DuckDBPyConnection | None = None,
           quiet: bool = True, **changes: Any) -> ExportResult:
    """Write the jobs of ``trace`` in format ``to`` to ``output`` (see the module docstring).

    ``options`` (:class:`ExportOptions`), or any of its fields as keywords
    (``recipe="..."``, ``seed=3``), say how; ``local`` overrides tables with a user's
    files, ``con`` is an open catalog to read from.
    """
    unknown = sorted(set(changes) - set(ExportOptions.__dataclass_fields__))
    if unknown:
        raise TypeError(f"export() got unknown options {unknown}; ExportOptions has "
                        f"{sorted(ExportOptions.__dataclass_fields__)}")
    chosen_options = replace(options or ExportOptions(), **changes)
    return _export(trace, to, output, chosen_options, (local, con, quiet))


def _export(trace: str, to: str, output: str | Path, options: ExportOptions,
            reading: tuple[dict | None, duckdb.DuckDBPyConnection | None, bool]
            ) -> ExportResult:
    """:func:`export` with its options gathered: (local, con, quiet) in ``reading``."""
    local, con, quiet = reading
    recipe, seed, origin, zone = options.recipe, options.seed, options.origin, options.zone
    gavel_throughputs, batch_rows, keep_jobs = (options.gavel_throughputs, options.batch_rows,
                                                options.keep_jobs)
    fmt = get_format(to)
    chosen = get_recipe(recipe) if recipe else None
    if batch_rows < 1:
        raise MltracesError(f"batch_rows must be at least 1 (got {batch_rows})")
    if seed < 0:
        raise MltracesError(f"--seed must be >= 0 (got {seed})")
    resolve_trace(trace)  # an unknown trace fails before anything is written or fetched
    profiles = _gavel_profiles(fmt, gavel_throughputs)
    out, side = _outputs(output, trace_inputs(trace, local))
    own = con is None
    con = con or connect_for(trace, fmt, local, chosen)
    try:
        source = open_trace(con, trace)
        if fmt.name == "elasticflow":
            profiles = _elasticflow_profiles(con)
        run = None
        if chosen:
            run = RecipeRun(chosen, set(source.recorded), chosen.context(con, source.entry))
            while run.pending is not None:
                run.gather(source.batches(con, batch_rows))
        clock = (clock_for(source.entry, source.origin, origin, zone) if "clock" in fmt.needs
                 else None)
        plan = _Plan(con, source, run, fmt, clock, profiles, seed, batch_rows)
        own_annotations = plan.own_annotations()
        tally = _Tally(kept=[] if keep_jobs else None)
        record = _write(plan, tally, own_annotations, out, side, trace)
    finally:
        if own:
            con.close()
    out.done(quiet)
    kept = pd.concat(tally.kept, ignore_index=True) if tally.kept else None
    return ExportResult(Path(out.given), record, kept)


def _write(plan: _Plan, tally: _Tally, own: bool, out: Output, side: Output, trace: str
           ) -> dict[str, Any]:
    """Stream the jobs into the file, then its provenance beside it; both whole or neither."""
    fmt = plan.fmt
    options: dict[str, Any] = {"trace": trace}
    record: dict[str, Any] = {}

    def fill_both(main: Path) -> None:
        def fill_side(sidecar: Path) -> None:
            jobs = plan.annotated(tally, own)
            if fmt.by_submission:
                with _sorted(jobs, main.parent, fmt, plan.rows) as (ordered, facts):
                    written = fmt.write(ordered, main, {**options, **facts})
            else:
                written = fmt.write(jobs, main, options)
            if not tally.written:
                raise _nothing_left(plan, tally)
            record.update(_provenance(plan, out.given, tally, written.notes))
            sidecar.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        side.write_with(fill_side)

    out.write_with(fill_both)
    return record


def _nothing_left(plan: _Plan, tally: _Tally) -> MltracesError:
    recipe = plan.run.recipe if plan.run else None
    return MltracesError(
        f"no job of {plan.source.trace} is left to write in the {plan.fmt.name} format "
        f"(read {plan.source.rows}, dropped: {tally.dropped or 'none'}"
        + (f", the recipe kept {tally.after_recipe}" if recipe else "") + ")")


def _provenance(plan: _Plan, path: Path, tally: _Tally, notes: list[str]) -> dict:
    from mltraces import __version__

    source, fmt, run = plan.source, plan.fmt, plan.run
    time: dict[str, Any] = {"kind": source.entry.kind,
                            "seconds": "whole seconds from the trace's origin"}
    if tally.fractional:
        time["fractional_gpus"] = (f"{tally.fractional} jobs asked for a fraction of a GPU: "
                                   "rounded up")
    if plan.clock is not None:
        time.update(plan.clock.record)
    recipe = None
    if run is not None:
        recipe = {"name": run.recipe.name, "title": run.recipe.title,
                  "artifact": run.recipe.artifact, "rules": run.report(),
                  **(run.described() or {})}
    return {
        "file": Path(path).name,
        "format": {"name": fmt.name, "simulator": fmt.simulator, "parser": fmt.parser,
                   "fields": fmt.summary, "why_a_sidecar": fmt.provenance_note},
        "trace": source.trace, "table": source.table, "slice": source.where,
        **pins_of(source.entry),
        "time": time,
        "recipe": recipe,
        "annotation": {"seed": plan.seed, "rules": tally.rules},
        "rows": {"read": source.rows, "after_recipe": tally.after_recipe,
                 "dropped": tally.dropped, "written": tally.written},
        "mltraces": __version__,
        "notes": notes,
    }
