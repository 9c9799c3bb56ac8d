"""Export a request trace of ``mltraces.requests`` in a serving tool's format.

``export_requests("mooncake/conversation", "mooncake", "conv.jsonl")`` reads the trace
through its source's request mapping (:func:`mltraces.requestmap.table_select_sql`),
keeps the requests of a window, places them on the format's clock and writes them with
the job exporter's machinery (:mod:`mltraces.interop.exporting`): the output and its
``<file>.provenance.json`` checked before any work (a file, not one the trace is read
from), both written whole or neither, the rows streamed in batches (DuckDB formats each
line, :mod:`.request_formats`), so memory is a batch's.

Time options (:class:`Timing`): ``start_s``/``end_s`` keep the requests arriving in
``[start_s, end_s)`` on the trace's ``arrival_s`` scale; ``speed`` divides every time by a
factor (2 replays twice as fast); ``rate`` instead picks the factor that makes the mean
arrival rate of the written requests ``rate`` per second ((n - 1) / (last - first)
arrival). Requests are written in the trace's order, which is its arrival order for
every trace mltraces maps (a trace whose order is not is written sorted by arrival, ties
by request id). Requests without what the format needs (token counts; prefix blocks for
``mooncake``) are left out and counted in the provenance.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.errors import MltracesError
from mltraces.interop.request_formats import Clock, RequestFormat, get_request_format

if TYPE_CHECKING:
    import duckdb

    from mltraces.outputs import Output
    from mltraces.requestmap import RequestTable

__all__ = ["MAX_SPEED", "RequestExport", "Timing", "export_requests", "request_entry"]

#: the largest time factor accepted (either way): beyond it times lose their digits
MAX_SPEED = 1e6
#: requests per batch handed from DuckDB to the file
BATCH_ROWS = 100_000


@dataclass(frozen=True)
class Timing:
    """Which requests and on what clock: a window of ``arrival_s`` and a speed or a rate."""

    speed: float | None = None
    start_s: float | None = None
    end_s: float | None = None
    rate: float | None = None

    def checked(self) -> Timing:
        """The same, every value finite and sensible (one line naming the bad option)."""
        for name, value in (("speed", self.speed), ("rate", self.rate)):
            if value is not None and not (_finite(value) and value > 0):
                raise MltracesError(f"--{name} must be a finite number above 0, got {value!r}")
        if self.speed is not None and not 1 / MAX_SPEED <= self.speed <= MAX_SPEED:
            raise MltracesError(f"--speed must be between 1e-6 and 1e6, got {self.speed!r}")
        if self.speed is not None and self.rate is not None:
            raise MltracesError("--speed and --rate both set the time factor: give one")
        for name, value in (("start", self.start_s), ("end", self.end_s)):
            if value is not None and not _finite(value):
                raise MltracesError(f"--{name} must be a finite number of seconds, got "
                                    f"{value!r}")
        if self.start_s is not None and self.end_s is not None and self.end_s <= self.start_s:
            raise MltracesError(f"the window [{self.start_s}, {self.end_s}) is empty: --end "
                                "must be after --start")
        return self


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and \
        math.isfinite(value)


@dataclass(frozen=True)
class RequestExport:
    """What an export wrote: the file, its provenance record, how many requests."""

    path: Path
    provenance: dict[str, Any]

    @property
    def written(self) -> int:
        return int(self.provenance["rows"]["written"])


def request_entry(trace: str) -> RequestTable:
    """The mapped request table behind ``trace``; the error lists the request traces."""
    from mltraces.names import canonical
    from mltraces.requestmap import request_tables

    name = canonical(trace)
    for entry in request_tables().values():
        if entry.trace == name:
            return entry
    known = ", ".join(sorted(e.trace for e in request_tables().values()))
    raise MltracesError(f"unknown request trace {trace!r}; request traces: {known}")


def _selected(entry: RequestTable, timing: Timing) -> str:
    """The trace's requests in the window (common columns), in the trace's order."""
    from mltraces.requestmap import table_select_sql

    where = ["arrival_s IS NOT NULL"]
    if timing.start_s is not None:
        where.append(f"arrival_s >= {float(timing.start_s)!r}")
    if timing.end_s is not None:
        where.append(f"arrival_s < {float(timing.end_s)!r}")
    return (f"SELECT request_id, arrival_s, input_tokens, output_tokens, prefix_blocks "
            f"FROM ({table_select_sql(entry)}) WHERE {' AND '.join(where)}")


@dataclass(frozen=True)
class _Counts:
    """One pass over the window: what is there, and what the format can write."""

    read: int
    writable: int
    first: float | None
    last: float | None
    dropped: dict[str, int]


def _counts(con: duckdb.DuckDBPyConnection, selected: str, fmt: RequestFormat) -> _Counts:
    needs = " AND ".join(f"{c} IS NOT NULL" for c in fmt.needs) or "true"
    missing = {c: f"no {c.replace('_', ' ')}" for c in fmt.needs}
    filters = ", ".join(f"count(*) FILTER (WHERE {c} IS NULL)" for c in missing) or "0"
    row = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {needs}), min(arrival_s) FILTER "
        f"(WHERE {needs}), max(arrival_s) FILTER (WHERE {needs}), {filters} "
        f"FROM ({selected})").fetchall()[0]
    read, writable, first, last, *gone = row
    dropped = {why: int(n) for why, n in zip(missing.values(), gone, strict=False) if n}
    return _Counts(int(read), int(writable), first, last, dropped)


def _clock(fmt: RequestFormat, counts: _Counts, timing: Timing) -> tuple[Clock, dict]:
    """The format's clock (origin, speed) and its record for the provenance."""
    assert counts.first is not None and counts.last is not None
    if fmt.origin == "first":
        origin, said = counts.first, "the first request written"
    elif timing.start_s is not None:
        origin, said = float(timing.start_s), "the window's start"
    else:
        origin, said = min(0.0, counts.first), "the trace's second 0"
    speed = timing.speed or 1.0
    record: dict[str, Any] = {"origin_s": origin, "origin": said, "speed": speed}
    if timing.rate is not None:
        span = counts.last - counts.first
        if counts.writable < 2 or span <= 0:
            raise MltracesError("cannot rescale the rate: the requests written all arrive at "
                                "one instant (give --speed instead)")
        observed = (counts.writable - 1) / span
        speed = timing.rate / observed
        if not 1 / MAX_SPEED <= speed <= MAX_SPEED:
            raise MltracesError(f"--rate {timing.rate} is {speed:.3g} times the trace's "
                                f"{observed:.4g} requests/s: outside 1e-6 … 1e6")
        record.update(speed=speed, rate={"asked": timing.rate, "trace": observed,
                                         "definition": "(n - 1) / (last - first arrival)"})
    return Clock(origin, speed), record


def _write_lines(con: duckdb.DuckDBPyConnection, query: str, fmt: RequestFormat, path: Path
                 ) -> int:
    """Stream the lines of ``query`` (columns ``line``, ``arrival_s``) into ``path``; the
    requests it wrote. Raises :class:`_NotInOrder` when arrivals go backwards."""
    written, last = 0, -math.inf
    with path.open("w", encoding="utf-8", newline="") as handle:
        if fmt.header:
            handle.write(fmt.header + "\n")
        for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
            if not batch.num_rows:
                continue
            arrival = batch.column(1).to_numpy(zero_copy_only=False)  # no nulls: selected
            if arrival[0] < last or (len(arrival) > 1 and (arrival[1:] < arrival[:-1]).any()):
                raise _NotInOrder
            last = float(arrival[-1])
            lines = batch.column(0).to_pylist()
            if fmt.numbered:
                lines = [f"{written + k},{text}" for k, text in enumerate(lines)]
            handle.write("\n".join(lines) + "\n")
            written += len(lines)
    return written


class _NotInOrder(Exception):
    """The trace's order is not its arrival order: write it sorted instead."""


def export_requests(trace: str, to: str, output: str | Path, timing: Timing | None = None, *,
                    local: dict | None = None, con: duckdb.DuckDBPyConnection | None = None,
                    quiet: bool = True) -> RequestExport:
    """Write ``trace``'s requests in format ``to`` to ``output`` (see the module docstring)."""
    fmt = get_request_format(to)
    timing = (timing or Timing()).checked()
    entry = request_entry(trace)
    if "prefix_blocks" in fmt.needs and "prefix_blocks" not in entry.columns:
        from mltraces.workloads.requests import block_traces

        raise MltracesError(f"the {fmt.name} format needs prefix blocks (hash_ids), which "
                            f"{entry.trace} does not give; traces with them: "
                            f"{', '.join(block_traces())}")
    out, side = _checked_outputs(output, entry, local)
    own = con is None
    con = con or _connect(entry, local)
    try:
        record = _export(con, entry, fmt, timing, (out, side))
    finally:
        if own:
            con.close()
    out.done(quiet)
    return RequestExport(Path(out.given), record)


def _checked_outputs(output: str | Path, entry: RequestTable, local: dict | None
                     ) -> tuple[Output, Output]:
    from mltraces.interop.exporting import checked_outputs, table_inputs

    return checked_outputs(output, table_inputs([entry.table], local))


def _connect(entry: RequestTable, local: dict | None) -> duckdb.DuckDBPyConnection:
    from mltraces.catalog import connect

    return connect(tables=[entry.table], local=local or {}, strict=True)


def _export(con: duckdb.DuckDBPyConnection, entry: RequestTable, fmt: RequestFormat,
            timing: Timing, outputs: tuple[Output, Output]) -> dict[str, Any]:
    """Count, place on the clock, stream the lines, then the provenance; both or neither."""
    selected = _selected(entry, timing)
    counts = _counts(con, selected, fmt)
    window = f"[{timing.start_s if timing.start_s is not None else '-inf'}, " \
             f"{timing.end_s if timing.end_s is not None else 'inf'}) s"
    if not counts.read:
        raise MltracesError(f"no request of {entry.trace} arrives in the window {window}")
    if not counts.writable:
        raise MltracesError(f"no request of {entry.trace} in the window {window} has what the "
                            f"{fmt.name} format needs ({', '.join(fmt.needs)}): "
                            f"{counts.dropped}")
    clock, time_record = _clock(fmt, counts, timing)
    needs = " AND ".join(f"{c} IS NOT NULL" for c in fmt.needs) or "true"
    base = f"SELECT {fmt.line_sql(clock)} AS line, arrival_s FROM ({selected}) WHERE {needs}"
    out, side = outputs
    record: dict[str, Any] = {}

    def fill(main: Path) -> None:
        def fill_side(sidecar: Path) -> None:
            try:
                written, ordered = _write_lines(con, base, fmt, main), False
            except _NotInOrder:
                # ties by the line itself: the same requests always give the same file
                written = _write_lines(con, f"{base} ORDER BY arrival_s, line", fmt, main)
                ordered = True
            record.update(_provenance(entry, fmt, Path(out.given), counts, written,
                                      {**time_record, "window": window,
                                       "sorted_by_arrival": ordered}))
            sidecar.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        side.write_with(fill_side)

    out.write_with(fill)
    return record


def _provenance(entry: RequestTable, fmt: RequestFormat, path: Path, counts: _Counts,
                written: int, time_record: dict[str, Any]) -> dict[str, Any]:
    from mltraces import __version__
    from mltraces.interop.jobs import pins_of
    from mltraces.interop.request_formats import SIDECAR_NOTE

    notes = []
    if "prefix_blocks" in fmt.needs:
        notes.append(f"hash_ids are the trace's prefix block ids, {entry.block_size} tokens "
                     "each: tell the reader that block size")
    return {
        "file": path.name,
        "format": {"name": fmt.name, "tool": fmt.tool, "parser": fmt.parser,
                   "fields": fmt.summary, "why_a_sidecar": SIDECAR_NOTE},
        "trace": entry.trace, "table": entry.table, **pins_of(entry),
        "block_size": entry.block_size,
        "time": {"arrival": "seconds of mltraces.requests' arrival_s", **time_record},
        "rows": {"read": counts.read, "dropped": counts.dropped, "written": written},
        "mltraces": __version__,
        "notes": notes,
    }
