"""Convert one verified utilization CSV to long-form Parquet, once, in bounded memory.

Wide files (DCGM ``<ip>-<gpu>`` columns, Prometheus ``<ip>`` columns) are cut
into chunks of whole lines (:mod:`.chunks`) that worker threads parse and
unpivot at once, one chunk per core: pyarrow's CSV reader types every column up
front (``Time`` as text, converted by DuckDB; the rest ``float64``; nothing is
sniffed), and numpy finds the non-empty cells of all columns at once from the
Arrow validity bitmaps and turns them into ``(time, node, gpu, value)`` rows,
node names dictionary-encoded. The caller's thread writes the chunks in file
order, one Parquet file per UTC month (:mod:`.pipeline`). Memory is bounded by
the chunk size and the number of chunks in flight, whatever the file size.

Measured on the 2,304-column benchmark file (``benchmarks/bench_acme_util.py``),
per 100 MB of CSV: DuckDB's reader with its export to Arrow took ~4 CPU-seconds,
pyarrow's reader ~2.5; DuckDB's own ``UNPIVOT`` took ~5 just to count the long
rows (it materialises a column-name string per long row).

IPMI files are already long; DuckDB reads them with explicit types and writes
them with ``COPY ... PARTITION_BY (month)``.

Rules (documented in the schemas):

- ``Time`` may be ``2023-07-01 08:00:00+08:00`` (as published), ISO without an
  offset (read as Asia/Shanghai, UTC+8 without daylight saving), or Unix
  seconds (the exporters' raw form). Everything is stored as a UTC instant.
- Empty cells are dropped. Rows repeating a ``Time`` already seen in the file
  are dropped (the first one wins), as the authors' notebook does with
  ``drop_duplicates(subset=["Time"])``.
- Column names that do not parse, duplicate names or a first column other than
  ``Time`` are errors that name the column: nothing is guessed.
"""

from __future__ import annotations

import csv
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mltraces.errors import SchemaError
from mltraces.logs import get_logger
from mltraces.schema import sql_path
from mltraces.sources.acme.hub import HubFile
from mltraces.sources.acme.util import arrow, layout
from mltraces.sources.acme.util.chunks import (
    Chunk,
    ChunkParser,
    chunks,
    duckdb_error,
    is_duckdb_error,
    read_csv_sql,
)
from mltraces.sources.acme.util.chunks import sql_text as _sql_text
from mltraces.sources.acme.util.pipeline import Pipeline

log = get_logger(__name__)

SHANGHAI_OFFSET_US = 8 * 3600 * 1_000_000
IPMI_COLUMNS = {  # upstream name → stored name
    "CPU_Power": "cpu_power",
    "Memory_Power": "memory_power",
    **{f"PSU{i}_PIN": f"psu{i}_pin" for i in range(1, 7)},
    "PSU_IN_SUM": "psu_in_sum",
    "Sys_Total_Power": "sys_total_power",
}
_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}(:?\d{2})?)$")
_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
_EPOCH = re.compile(r"^\d{9,11}(\.\d+)?$")
_GPU_COLUMN = re.compile(r"^(?P<node>.+)-(?P<gpu>\d{1,3})$")
_NODE_COLUMN = re.compile(r"^(?P<node>[^-]+)(?:-(?P<device>.+))?$")

__all__ = ["Settings", "convert", "convert_into", "converted_meta"]


@dataclass(frozen=True)
class Settings:
    """Resource limits of a conversion (the defaults fit a 2-core, 4 GB machine).

    ``memory_limit`` caps DuckDB (it spills to ``<cache>/acme-util/tmp``);
    ``threads`` is the number of chunks converted at once (default: one per core);
    ``chunk_bytes`` is the CSV text per chunk (its wide table takes ~8 bytes per
    cell, ~4x the text for these files, and its long rows about as much again);
    ``queue_depth`` is how many more chunks may wait for the writer.
    """

    memory_limit: str = "1GB"
    threads: int | None = None
    chunk_bytes: int = 4 << 20
    compression: str = "zstd"
    queue_depth: int = 2


# --------------------------------------------------------------------------- header


def read_header(path: Path) -> list[str]:
    """Column names of a CSV (the first line), BOM and quotes removed."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        line = handle.readline()
    if not line.strip():
        raise SchemaError(f"{path.name}: the file is empty (no header line)")
    return [name.strip() for name in next(csv.reader([line]))]


def _first_value(path: Path) -> str:
    """The first data row's first cell (to tell the Time format), or '' for no rows."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        handle.readline()
        line = handle.readline(1 << 16)
    return line.split(",", 1)[0].strip().strip('"') if line else ""


def time_format(sample: str) -> str:
    """``offset``, ``naive`` (Asia/Shanghai wall time) or ``epoch``; '' for no data."""
    if not sample:
        return ""
    for name, pattern in (("offset", _OFFSET), ("naive", _NAIVE), ("epoch", _EPOCH)):
        if pattern.match(sample):
            return name
    raise SchemaError(
        f"Time value {sample!r} is in no known format: expected '2023-07-01 08:00:00+08:00', "
        "'2023-07-01 08:00:00' (Asia/Shanghai) or Unix seconds"
    )


def time_sql(column: str, fmt: str) -> str:
    """SQL turning the text column into a TIMESTAMPTZ (session time zone UTC)."""
    if fmt == "naive":
        return f"CAST(CAST({column} AS TIMESTAMP) - INTERVAL 8 HOUR AS TIMESTAMPTZ)"
    if fmt == "epoch":
        return f"to_timestamp(CAST({column} AS DOUBLE))"
    return f"CAST({column} AS TIMESTAMPTZ)"


# --------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class ColumnMap:
    """What each wide column is: a node (dictionary code) and a GPU index or device."""

    nodes: list[str]
    node_codes: np.ndarray  # int32, one per column
    gpus: np.ndarray | None = None  # int64 per column (DCGM)
    devices: list[str] = field(default_factory=list)
    device_codes: np.ndarray | None = None  # int32 per column, -1 = none (Prometheus)


def _codes(labels: list[str]) -> tuple[list[str], np.ndarray]:
    uniques = sorted(set(labels))
    index = {label: i for i, label in enumerate(uniques)}
    return uniques, np.array([index[label] for label in labels], dtype=np.int32)


def _check_names(names: list[str], where: str) -> None:
    if not names or names[0] != "Time":
        found = names[0] if names else "nothing"
        raise SchemaError(f"{where}: the first column must be 'Time', found {found!r}")
    seen: set[str] = set()
    duplicates = [n for n in names if n in seen or seen.add(n)]
    if duplicates:
        raise SchemaError(f"{where}: duplicate column names {duplicates[:5]}")


def gpu_columns(names: list[str], where: str = "file") -> ColumnMap:
    """Parse DCGM column names ``<ip>-<gpu index>``."""
    matches = [_GPU_COLUMN.match(n) for n in names]
    bad = [n for n, m in zip(names, matches, strict=True) if m is None]
    if bad:
        raise SchemaError(
            f"{where}: {len(bad)} column(s) are not '<ip>-<gpu index>' "
            f"(DCGM layout), e.g. {bad[:5]}"
        )
    nodes, codes = _codes([m["node"] for m in matches])
    gpus = np.array([int(m["gpu"]) for m in matches], dtype=np.int64)
    return ColumnMap(nodes, codes, gpus=gpus)


def node_columns(names: list[str], where: str = "file") -> ColumnMap:
    """Parse Prometheus node-metric column names: ``<ip>`` or ``<ip>-<device>``."""
    matches = [_NODE_COLUMN.match(n) for n in names]
    bad = [n for n, m in zip(names, matches, strict=True) if m is None]
    if bad:
        raise SchemaError(f"{where}: column(s) {bad[:5]} are not '<ip>' or '<ip>-<device>'")
    nodes, codes = _codes([m["node"] for m in matches])
    labels = [m["device"] or "" for m in matches]
    devices, device_codes = _codes([d for d in labels if d] or [""])
    index = {d: i for i, d in enumerate(devices)}
    device_codes = np.array([index[d] if d else -1 for d in labels], dtype=np.int32)
    return ColumnMap(nodes, codes, devices=devices, device_codes=device_codes)


# --------------------------------------------------------------------------- DuckDB


def duckdb_connection(settings: Settings):  # -> duckdb.DuckDBPyConnection
    """A private DuckDB connection with bounded memory and a spill folder."""
    import duckdb

    spill = layout.spill_dir()
    con = duckdb.connect()
    threads = settings.threads or os.cpu_count() or 1
    con.execute(f"SET memory_limit = {_sql_text(settings.memory_limit)}")
    con.execute(f"SET threads = {int(threads)}")
    con.execute(f"SET temp_directory = {_sql_text(str(spill))}")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con


# --------------------------------------------------------------------------- unpivot


@dataclass(frozen=True)
class LongChunk:
    """One chunk of a wide file, unpivoted: what the writer needs, in file order."""

    index: int
    end: int  # byte offset in the file after the chunk (for progress)
    times: np.ndarray  # µs of the rows kept (a Time repeated within the chunk is dropped)
    repeats: int  # rows dropped for that
    months: list[tuple[str, object]]  # (month, long pyarrow.Table)


def first_occurrences(times: np.ndarray) -> np.ndarray:
    """Mask keeping the first row of each distinct time (the authors' drop_duplicates)."""
    keep = np.zeros(len(times), dtype=bool)
    keep[np.unique(times, return_index=True)[1]] = True
    return keep


def valid_positions(flat) -> np.ndarray:
    """Positions of the non-null cells of a pyarrow array, from its validity bitmap."""
    if flat.null_count == 0:
        return np.arange(len(flat))
    bitmap = np.frombuffer(flat.buffers()[0], dtype=np.uint8)
    bits = np.unpackbits(bitmap, count=flat.offset + len(flat), bitorder="little")
    return np.flatnonzero(bits[flat.offset :])


class Unpivot:
    """Turns one chunk of a wide file into long Arrow tables, one per month.

    Thread-safe and free of state between chunks, so chunks can be unpivoted on
    several threads at once; dropping a ``Time`` that an *earlier chunk* had is
    left to the (ordered) writer.
    """

    def __init__(self, columns: ColumnMap, kind: str, parse: ChunkParser, fmt: str, con) -> None:
        self.columns, self.kind, self.parse, self.fmt, self.con = columns, kind, parse, fmt, con
        self.nodes = arrow.strings(columns.nodes)
        self.devices = arrow.strings(columns.devices)
        self.schema = self._schema()

    def _schema(self):  # -> pyarrow.Schema
        import pyarrow as pa

        fields = [
            pa.field("time", pa.timestamp(*arrow.TIMESTAMP_US), nullable=False),
            pa.field("node", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        ]
        if self.kind == "gpu":
            fields.append(pa.field("gpu", pa.int64(), nullable=False))
        else:
            fields.append(pa.field("device", pa.dictionary(pa.int32(), pa.string())))
        fields.append(pa.field("value", pa.float64(), nullable=False))
        return pa.schema(fields)

    def __call__(self, chunk: Chunk) -> LongChunk:
        wide = self.parse(chunk)
        try:
            times = self.epoch_us(wide.column(0))
        except Exception as error:
            if is_duckdb_error(error):
                raise duckdb_error(error, self.parse.path.name, chunk) from error
            if isinstance(error, SchemaError):
                lines = f"lines {chunk.first_line}-{chunk.last_line}"
                raise SchemaError(f"{self.parse.path.name}: {error} ({lines})") from error
            raise
        keep = first_occurrences(times)
        if not keep.all():
            wide, times = wide.filter(arrow.mask(keep)), times[keep]
        months = self._long(wide, times) if len(times) and wide.num_columns > 1 else []
        return LongChunk(chunk.index, chunk.end, times, int(len(keep) - len(times)), months)

    def epoch_us(self, text) -> np.ndarray:
        """The ``Time`` texts of a chunk as µs since the epoch, by DuckDB's rules."""
        import pyarrow as pa

        if text.null_count:
            raise SchemaError("a row has an empty Time")
        cursor = self.con.cursor()  # one per thread: a connection runs one query at a time
        try:
            texts = cursor.from_arrow(pa.table({"c0": text}))
            result = texts.select(f"epoch_us({time_sql('c0', self.fmt)})").to_arrow_table()
        finally:
            cursor.close()
        return arrow.int64s(result.column(0))

    def _long(self, wide, times: np.ndarray) -> list[tuple[str, object]]:
        """Column-major long rows of the non-empty cells (one pass over the validity bits)."""
        import pyarrow as pa

        values = _value_arrays(wide)
        flat = pa.concat_arrays(values)
        if flat.null_count == len(flat):
            return []
        n_rows = len(times)
        counts = n_rows - np.fromiter((a.null_count for a in values), np.int64, len(values))
        present = valid_positions(flat)
        row = present - np.repeat(np.arange(len(values), dtype=np.int64) * n_rows, counts)
        arrays = {
            "time": arrow.timestamps(times[row]),
            "node": pa.DictionaryArray.from_arrays(
                arrow.array(np.repeat(self.columns.node_codes, counts)), self.nodes
            ),
        }
        if self.kind == "gpu":
            arrays["gpu"] = arrow.array(np.repeat(self.columns.gpus, counts))
        else:
            codes = np.repeat(self.columns.device_codes, counts)
            valid = codes >= 0
            arrays["device"] = pa.DictionaryArray.from_arrays(
                arrow.array(codes, valid=None if valid.all() else valid), self.devices
            )
        cells = np.frombuffer(flat.buffers()[1], np.float64, len(flat), flat.offset * 8)
        arrays["value"] = arrow.array(cells.take(present))  # a gather: faster than drop_null
        table = pa.table(arrays, schema=self.schema)
        return _split_by_month(table, month_of(times), row)


def _value_arrays(wide) -> list:
    """The value columns of a parsed chunk as arrays (``batch.columns`` is the cheap way)."""
    batches = wide.drop_columns(["c0"]).to_batches()
    if len(batches) != 1:
        batches = wide.drop_columns(["c0"]).combine_chunks().to_batches()
    return batches[0].columns


def month_of(times_us: np.ndarray) -> np.ndarray:
    """UTC month (``datetime64[M]``) of each µs timestamp."""
    return times_us.astype("datetime64[us]").astype("datetime64[M]")


def _split_by_month(table, months: np.ndarray, row: np.ndarray) -> list[tuple[str, object]]:
    """Split long rows by the month of their wide row (usually one month per chunk)."""
    first, last = months.min(), months.max()
    if first == last:
        return [(str(first), table)]
    of_row = months[row]
    return [(str(m), table.filter(arrow.mask(of_row == m))) for m in np.unique(months)]


# --------------------------------------------------------------------------- wide files


class _MonthWriters:
    """One Parquet writer per month, opened on first use, with per-month statistics."""

    def __init__(self, folder: Path, schema, compression: str) -> None:
        self.folder, self.schema, self.compression = folder, schema, compression
        # min/max of every column but the node: a chunk holds every node, so node
        # bounds would never skip a row group, and they cost a quarter of the writing
        self.statistics = [name for name in schema.names if name != "node"]
        self.writers: dict[str, object] = {}
        self.stats: dict[str, dict] = {}

    def write(self, month: str, table) -> None:
        import pyarrow.parquet as pq

        if month not in self.writers:
            self.writers[month] = pq.ParquetWriter(
                self.folder / f"month={month}.parquet",
                self.schema,
                compression=self.compression,
                store_schema=False,  # plain strings for readers, not Arrow dictionaries
                write_statistics=self.statistics,
            )
            self.stats[month] = {"rows": 0, "min_us": None, "max_us": None}
        self.writers[month].write_table(table)
        times = arrow.int64s(table.column("time"))
        low, high = int(times.min()), int(times.max())
        stat = self.stats[month]
        stat["rows"] += table.num_rows
        stat["min_us"] = low if stat["min_us"] is None else min(stat["min_us"], low)
        stat["max_us"] = high if stat["max_us"] is None else max(stat["max_us"], high)

    def close(self) -> dict[str, dict]:
        for writer in self.writers.values():
            writer.close()
        return {m: {**s, "files": [f"month={m}.parquet"]} for m, s in sorted(self.stats.items())}


class SeenTimes:
    """The times of the chunks written so far, to drop rows repeating one (the first wins).

    Chunks are kept as sorted arrays with their bounds: a chunk is compared only
    with the earlier chunks its time range overlaps (none, in a time-ordered file).
    """

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.lows: list[int] = []
        self.highs: list[int] = []

    def add(self, times: np.ndarray) -> np.ndarray:
        """Mask of ``times`` already seen; the others are remembered."""
        repeated = np.zeros(len(times), dtype=bool)
        if not len(times):
            return repeated
        low, high = times.min(), times.max()
        near = np.flatnonzero((np.array(self.lows) <= high) & (np.array(self.highs) >= low))
        if len(near):
            repeated = np.isin(times, np.concatenate([self.parts[i] for i in near]))
        new = np.sort(times[~repeated])
        if len(new):
            self.parts.append(new)
            self.lows.append(int(new[0]))
            self.highs.append(int(new[-1]))
        return repeated

    def all(self) -> np.ndarray:
        """Every distinct time, sorted."""
        return np.sort(np.concatenate(self.parts)) if self.parts else np.array([], np.int64)


class _WideSink:
    """Writes unpivoted chunks in file order, dropping rows whose Time an earlier chunk had."""

    def __init__(self, writers: _MonthWriters) -> None:
        self.writers = writers
        self.seen = SeenTimes()
        self.wide_rows = 0
        self.duplicates = 0

    def write(self, part: LongChunk) -> None:
        import pyarrow.compute as pc

        repeated = self.seen.add(part.times)
        self.wide_rows += len(part.times) - int(repeated.sum())
        self.duplicates += part.repeats + int(repeated.sum())
        drop = arrow.timestamps(part.times[repeated])
        for month, table in part.months:
            if len(drop):
                table = table.filter(pc.invert(pc.is_in(table.column("time"), value_set=drop)))
            if table.num_rows:
                self.writers.write(month, table)


class _NoProgress:
    """Stands in for a hidden bar (tqdm would still start its monitor thread)."""

    n = 0
    disable = True

    def update(self, step: int) -> None:
        self.n += step

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _progress_bar(path: Path):  # -> tqdm.tqdm | _NoProgress
    """A byte progress bar on stderr, on a TTY (or when asked), once it has run 2 s."""
    from mltraces.download import _show_progress

    if not _show_progress(None):
        return _NoProgress()
    from tqdm.auto import tqdm

    size = path.stat().st_size
    return tqdm(total=size, unit="B", unit_scale=True, desc=path.name, delay=2, leave=False)


def convert_wide(path: Path, folder: Path, kind: str, settings: Settings) -> dict:
    """Unpivot one wide CSV into ``folder``; returns the metadata to record."""
    names = read_header(path)
    _check_names(names, path.name)
    parse = gpu_columns if kind == "gpu" else node_columns
    columns = parse(names[1:], path.name)
    fmt = time_format(_first_value(path))
    con = duckdb_connection(settings)
    unpivot = Unpivot(columns, kind, ChunkParser(path, len(names), folder, con), fmt, con)
    sink = _WideSink(_MonthWriters(folder, unpivot.schema, settings.compression))
    source = chunks(path, settings.chunk_bytes) if fmt else iter(())
    workers = settings.threads or os.cpu_count() or 1
    try:
        with (
            _progress_bar(path) as bar,
            Pipeline(source, unpivot, settings.queue_depth, workers) as pipeline,
        ):
            for part in pipeline:
                sink.write(part)
                bar.update(part.end - bar.n)
    except Exception as error:
        if isinstance(error, SchemaError) and not str(error).startswith(path.name):
            raise SchemaError(f"{path.name}: {error}") from error
        if is_duckdb_error(error):
            raise duckdb_error(error, path.name) from error
        raise
    finally:
        months = sink.writers.close()
        con.close()
    times = sink.seen.all()
    _write_times(folder / "times.parquet", times)
    return {
        "time_min_us": int(times[0]) if len(times) else None,
        "time_max_us": int(times[-1]) if len(times) else None,
        "time_format": fmt,
        "columns": len(names) - 1,
        "nodes": len(columns.nodes),
        "wide_rows": sink.wide_rows,
        "duplicate_rows": sink.duplicates,
        "months": months,
    }


def _write_times(path: Path, times_us: np.ndarray) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"time": arrow.timestamps(times_us)})
    pq.write_table(table, path, compression="zstd", store_schema=False)


# --------------------------------------------------------------------------- IPMI


def convert_ipmi(path: Path, folder: Path, settings: Settings) -> dict:
    """Type an IPMI long CSV and split it by month with ``COPY ... PARTITION_BY``."""
    names = read_header(path)
    if names[:2] != ["Time", "node"]:
        raise SchemaError(f"{path.name}: IPMI files start with 'Time,node', found {names[:2]}")
    unknown = [n for n in names[2:] if n not in IPMI_COLUMNS]
    if unknown:
        raise SchemaError(
            f"{path.name}: unknown IPMI column(s) {unknown}; known: {', '.join(IPMI_COLUMNS)}"
        )
    fmt = time_format(_first_value(path)) or "offset"
    present = {name: f"c{i}" for i, name in enumerate(names)}
    values = [
        f"{present[up]} AS {stored}" if up in present else f"CAST(NULL AS DOUBLE) AS {stored}"
        for up, stored in IPMI_COLUMNS.items()
    ]
    source = read_csv_sql(path, ["VARCHAR", "VARCHAR"] + ["DOUBLE"] * (len(names) - 2))
    query = f"SELECT {time_sql('c0', fmt)} AS time, c1 AS node, {', '.join(values)} FROM {source}"
    out = folder / "parts"
    con = duckdb_connection(settings)
    try:
        con.execute(
            f"COPY (SELECT *, strftime(time, '%Y-%m') AS month FROM ({query})) "
            f"TO {_sql_text(str(out))} (FORMAT parquet, PARTITION_BY (month), "
            f"COMPRESSION {settings.compression})"
        )
        months = _ipmi_months(con, out, folder)
    except Exception as error:
        if is_duckdb_error(error):
            raise duckdb_error(error, path.name) from error
        raise
    finally:
        con.close()
    return {"time_format": fmt, "columns": len(names), "months": months}


def _ipmi_months(con, parts: Path, folder: Path) -> dict[str, dict]:
    """Move ``parts/month=M/*.parquet`` to ``month=M-<i>.parquet`` and describe them."""
    months: dict[str, dict] = {}
    for month_dir in sorted(parts.glob("month=*")):
        month = month_dir.name.removeprefix("month=")
        files = []
        for i, part in enumerate(sorted(month_dir.glob("*.parquet"))):
            target = folder / f"month={month}-{i}.parquet"
            os.replace(part, target)
            files.append(target.name)
        listing = ", ".join(sql_path(folder / f) for f in files)
        rows, low, high = con.execute(
            f"SELECT count(*), min(epoch_us(time)), max(epoch_us(time)) "
            f"FROM read_parquet([{listing}])"
        ).fetchone()
        months[month] = {"rows": rows, "min_us": low, "max_us": high, "files": files}
    return months


# --------------------------------------------------------------------------- entry point


def converted_meta(file: HubFile) -> dict | None:
    """The recorded metadata of ``file``'s conversion, or None when not converted."""
    if not file.sha256:
        return None
    try:
        return json.loads((layout.converted_dir(file.sha256) / "meta.json").read_text())
    except (OSError, ValueError, RecursionError):
        return None


def convert(file: HubFile, csv_path: Path, settings: Settings | None = None) -> Path:
    """Convert a verified file once (keyed by its sha256); returns the converted folder.

    The work happens in a temporary folder that is renamed into place when
    complete, under a lock, so a crash or a concurrent run never leaves a
    half-converted folder behind.
    """
    if file.table is None or not file.sha256:
        raise ValueError(f"{file.path} is not a utilization CSV with an LFS sha256")
    return convert_into(layout.upstream(), file.sha256, file, csv_path, settings)


def _facts(file: HubFile, csv_path: Path, work: Path, settings: Settings) -> dict:
    """Convert by the file's table: IPMI is long already, the rest wide."""
    if file.table == "ipmi_power":
        return convert_ipmi(csv_path, work, settings)
    kind = "gpu" if file.table == "gpu_metrics" else "node"
    return convert_wide(csv_path, work, kind, settings)


def convert_into(
    area: layout.Area,
    key: str,
    file: HubFile,
    csv_path: Path,
    settings: Settings | None = None,
    extra: dict | None = None,
) -> Path:
    """Convert ``csv_path`` (standing for ``file``) once into ``area`` under ``key``.

    ``key`` names the conversion (the sha256 for verified downloads, the file's
    identity for local copies); ``extra`` is recorded in ``meta.json``. The lock
    is per key, not per area: local areas share their conversions.
    """
    settings = settings or Settings()
    if file.table is None:
        raise ValueError(f"{file.path} is not a utilization CSV")
    target = area.converted_dir(key)
    with layout.lock(f"convert-{key[:24]}"):
        if (target / "meta.json").is_file():
            return target
        layout.clean_leftovers()  # a killed run's partial Parquet does not outlive it
        started = time.perf_counter()
        with layout.work_dir(f"convert-{key[:12]}") as work:
            facts = _facts(file, csv_path, work, settings)
            meta = {
                "format": layout.FORMAT_VERSION,
                "key": key,
                "sha256": file.sha256,
                "path": file.path,
                "table": file.table,
                "group": file.group,
                "metric": file.metric,
                "period": file.period,
                "bytes": csv_path.stat().st_size,
                "rows": sum(m["rows"] for m in facts["months"].values()),
                "seconds": round(time.perf_counter() - started, 3),
                **(extra or {}),
                **facts,
            }
            (work / "meta.json").write_text(json.dumps(meta, indent=1))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(work, target)
    log.info("converted %s: %s long rows in %.1f s", csv_path, meta["rows"], meta["seconds"])
    return target
