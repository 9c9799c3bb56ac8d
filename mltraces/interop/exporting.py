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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from mltraces.errors import MltracesError, OutputError
from mltraces.interop import annotate
from mltraces.interop.formats import Format, get_format
from mltraces.interop.jobs import TraceJobs, pins_of, read_trace, resolve_trace
from mltraces.interop.recipes import apply, get_recipe

if TYPE_CHECKING:
    import duckdb

    from mltraces.outputs import Output

__all__ = ["SIDECAR", "ExportResult", "export", "provenance_path"]

SIDECAR = ".provenance.json"
#: second 0 of a trace without a clock, when a format needs one (Philly's job log)
DEFAULT_ORIGIN = "2000-01-01 00:00:00+00:00"
THROUGHPUT_TABLE = "elasticflow.throughputs"
#: the largest throughputs file read (Gavel's simulation_throughputs.json is 1.2 MB)
MAX_PROFILE_BYTES = 64 << 20


@dataclass
class ExportResult:
    """What an export wrote."""

    path: Path
    provenance: dict[str, Any]
    jobs: pd.DataFrame = field(repr=False)

    @property
    def written(self) -> int:
        return int(self.provenance["rows"]["written"])


def provenance_path(path: str | Path) -> Path:
    """Where the provenance record of an exported file is written."""
    return Path(f"{path}{SIDECAR}")


def _outputs(path: str | Path) -> tuple[Output, Output]:
    from mltraces.outputs import prepare

    out = prepare(path)
    if out.stream:
        raise OutputError(f"cannot write {path}: an export's provenance goes beside it "
                          f"({provenance_path(path).name}), which a pipe or device cannot have; "
                          "write to a file")
    return out, prepare(provenance_path(path))


def _drop(jobs: pd.DataFrame, keep: pd.Series, dropped: dict[str, int], reason: str
          ) -> pd.DataFrame:
    gone = int((~keep.fillna(False).astype(bool)).sum())
    if gone:
        dropped[reason] = dropped.get(reason, 0) + gone
    return jobs[keep.fillna(False).astype(bool)]


def _origin(traced: TraceJobs, origin: str | None) -> pd.Timestamp | None:
    """The instant of second 0: asked for, else the trace's own (None: no clock, none asked)."""
    if origin is not None:
        moment = pd.Timestamp(origin)
        return moment if moment.tzinfo else moment.tz_localize("UTC")
    frame = traced.frame
    known = frame[frame["submit_time"].notna()]
    if not len(known):
        return None
    first = known.iloc[0]
    return pd.Timestamp(first["submit_time"]) - pd.Timedelta(seconds=float(first["submit_s"]))


def job_frame(traced: TraceJobs, frame: pd.DataFrame, fmt: Format, *, origin: str | None = None,
              zone: str | None = None) -> tuple[pd.DataFrame, dict[str, int], dict[str, Any]]:
    """The writer's columns (:data:`~mltraces.interop.formats.base.JOB_COLUMNS`) from the
    common ones; jobs the format cannot hold are dropped and counted."""
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
    time: dict[str, Any] = {"kind": traced.entry.kind,
                            "seconds": "whole seconds from the trace's origin"}
    if fractional:
        time["fractional_gpus"] = f"{fractional} jobs asked for a fraction of a GPU: rounded up"
    if "clock" in fmt.needs:
        out, clock = _clock_times(traced, jobs, out, origin, zone)
        time.update(clock)
    return out, dropped, time


def _clock_times(traced: TraceJobs, jobs: pd.DataFrame, out: pd.DataFrame, origin: str | None,
                 zone: str | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Wall-clock times in ``zone``: the trace's instants, or its seconds from an origin."""
    zone = zone or traced.zone or "UTC"
    start = _origin(traced, origin)
    record: dict[str, Any] = {"zone": zone}
    if start is None:
        start = pd.Timestamp(DEFAULT_ORIGIN)
        record["origin_note"] = ("the trace has no clock: times are its seconds from "
                                 f"{DEFAULT_ORIGIN} (--origin sets another)")
    record["origin"] = start.isoformat()
    if "start" not in traced.entry.columns:  # a run time without start and end (ITP, Pollux)
        ran = jobs["run_s"].notna()
        jobs = jobs.assign(start_s=jobs["submit_s"].where(ran),
                           end_s=(jobs["submit_s"] + jobs["run_s"]).where(ran))
        record["attempts_note"] = ("the trace publishes a run time but no start: each job's "
                                   "attempt starts at its submission and runs that long")
    for key in ("submit", "start", "end"):
        instants = jobs[f"{key}_time"]
        from_seconds = start + pd.to_timedelta(jobs[f"{key}_s"].round(), unit="s")
        chosen = instants if origin is None and instants.notna().any() else from_seconds
        chosen = pd.to_datetime(chosen, utc=True).dt.tz_convert(zone).dt.tz_localize(None)
        out[f"{key}_time"] = chosen.dt.round("s")
    return out, record


def _usable_own(fmt: Format, jobs: pd.DataFrame, profiles: Any) -> bool:
    """True when every job's own model (and work) is one this format's simulator knows."""
    if not len(jobs) or jobs["model"].isna().any():
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
        except (OSError, ValueError) as error:
            raise MltracesError(f"cannot read the Gavel throughputs {path}: {error}") from None
        return annotate.gavel_profiles(raw)
    return None


def annotate_jobs(fmt: Format, jobs: pd.DataFrame, profiles: Any, seed: int
                  ) -> annotate.Annotated:
    """What the format needs and the jobs lack, drawn as its artifact draws it."""
    if "annotation" not in fmt.needs:
        return annotate.Annotated(jobs)
    if _usable_own(fmt, jobs, profiles):
        own = jobs.assign(deadline=annotate.whole_seconds(jobs["deadline_s"].fillna(0)))
        return annotate.Annotated(own, {}, ["the trace's own model, batch size, iterations and "
                                            "deadline, as published (nothing drawn)"])
    if fmt.name == "elasticflow":
        return annotate.elasticflow(jobs, profiles, seed)
    if fmt.name == "tiresias":
        return annotate.tiresias(jobs, seed)
    if fmt.name == "pollux":
        return annotate.pollux(jobs, seed)
    return annotate.gavel(jobs, profiles, seed)


def connect_for(trace: str, fmt: Format, local: dict | None = None) -> duckdb.DuckDBPyConnection:
    """A catalog connection holding the trace's tables (fetched when missing) and what its
    annotation reads."""
    from mltraces.catalog import connect
    from mltraces.interop.jobs import tables_for

    tables = tables_for(trace) + ([THROUGHPUT_TABLE] if fmt.name == "elasticflow" else [])
    return connect(tables=tables, local=local or {}, strict=True)


def export(trace: str, to: str, output: str | Path, *, recipe: str | None = None,
           seed: int = 0, origin: str | None = None, zone: str | None = None,
           gavel_throughputs: str | Path | None = None, local: dict | None = None,
           con: duckdb.DuckDBPyConnection | None = None, quiet: bool = True) -> ExportResult:
    """Write the jobs of ``trace`` in format ``to`` to ``output`` (see the module docstring).

    ``recipe`` names a published filter (:mod:`mltraces.interop.recipes`); ``seed``
    seeds the annotation; ``origin`` (an instant) and ``zone`` (IANA) place a trace
    without a clock on one for the Philly job log; ``gavel_throughputs`` is Gavel's
    ``simulation_throughputs.json`` (the gavel format needs it).
    """
    fmt = get_format(to)
    chosen = get_recipe(recipe) if recipe else None
    resolve_trace(trace)  # an unknown trace fails before anything is written or fetched
    profiles = _gavel_profiles(fmt, gavel_throughputs)
    out, side = _outputs(output)
    own = con is None
    con = con or connect_for(trace, fmt, local)
    try:
        traced = read_trace(con, trace)
        if fmt.name == "elasticflow":
            profiles = _elasticflow_profiles(con)
    finally:
        if own:
            con.close()
    frame, report = (apply(chosen, traced.frame) if chosen else (traced.frame, None))
    jobs, dropped, time = job_frame(traced, frame, fmt, origin=origin, zone=zone)
    annotated = annotate_jobs(fmt, jobs, profiles, seed)
    for reason, count in annotated.dropped.items():
        dropped[reason] = dropped.get(reason, 0) + count
    if annotated.frame.empty:
        raise MltracesError(f"no job of {trace} is left to write in the {fmt.name} format "
                            f"(read {len(traced.frame)}, dropped: {dropped or 'none'}"
                            + (f", the recipe kept {len(frame)}" if chosen else "") + ")")
    options = {"trace": trace}
    written: list[Any] = []
    record = _provenance(traced, fmt, out.given, chosen, report, annotated, seed, time,
                         {"read": len(traced.frame), "after_recipe": len(frame),
                          "dropped": dropped, "written": len(annotated.frame)})

    def fill_both(main: Path) -> None:
        def fill_side(sidecar: Path) -> None:
            written.append(fmt.write(annotated.frame, main, options))
            record["notes"] = written[0].notes
            sidecar.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        side.write_with(fill_side)

    out.write_with(fill_both)
    out.done(quiet)
    return ExportResult(Path(out.given), record, annotated.frame)


def _provenance(traced: TraceJobs, fmt: Format, path: Path, recipe: Any, report: Any,
                annotated: annotate.Annotated, seed: int, time: dict, rows: dict) -> dict:
    from mltraces import __version__

    return {
        "file": Path(path).name,
        "format": {"name": fmt.name, "simulator": fmt.simulator, "parser": fmt.parser,
                   "fields": fmt.summary, "why_a_sidecar": fmt.provenance_note},
        "trace": traced.trace, "table": traced.table, "slice": traced.where,
        **pins_of(traced.entry),
        "time": time,
        "recipe": None if recipe is None else {
            "name": recipe.name, "title": recipe.title, "artifact": recipe.artifact,
            "rules": report},
        "annotation": {"seed": seed, "rules": annotated.rules},
        "rows": rows,
        "mltraces": __version__,
    }
