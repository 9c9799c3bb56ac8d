"""Convert one verified utilization CSV to long-form Parquet, once, in bounded memory.

Wide files (DCGM ``<ip>-<gpu>`` columns, Prometheus ``<ip>`` columns) are read
by DuckDB's parallel CSV reader with every column typed up front (``Time`` as
text, the rest ``DOUBLE``; nothing is sniffed) and streamed out as Arrow record
batches of a few thousand rows. Each batch is unpivoted with numpy: the
non-empty cells of all columns are found at once from the Arrow validity
bitmaps and turned into ``(time, node, gpu, value)`` rows, node names
dictionary-encoded. Reading, unpivoting and writing (one Parquet file per
UTC month) run as a three-stage pipeline on separate threads. Memory is bounded
by the batch size, the queue depth and DuckDB's ``memory_limit``, whatever the
file size.

DuckDB's own ``UNPIVOT`` + ``COPY`` does the same in one statement but measured
about half as fast here (~23 against ~45 MB/s of CSV on 2 cores): it
materialises a column-name string per long row.

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
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mltraces.datasets.acme.hub import HubFile
from mltraces.datasets.acme.util import layout
from mltraces.datasets.acme.util.pipeline import Pipeline
from mltraces.errors import SchemaError

log = logging.getLogger(__name__)

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

__all__ = ["Settings", "convert", "converted_meta"]


@dataclass(frozen=True)
class Settings:
    """Resource limits of a conversion (the defaults fit a 2-core, 4 GB machine).

    ``memory_limit`` caps DuckDB (it spills to ``<cache>/acme-util/tmp``);
    ``batch_rows`` bounds the rows unpivoted at once (~8 bytes x columns each).
    """

    memory_limit: str = "1GB"
    threads: int | None = None
    batch_rows: int = 2048
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


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def duckdb_connection(settings: Settings):  # -> duckdb.DuckDBPyConnection
    """A private DuckDB connection with bounded memory and a spill folder."""
    import duckdb

    spill = layout.root() / "tmp" / "duckdb"
    spill.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    threads = settings.threads or os.cpu_count() or 1
    con.execute(f"SET memory_limit = {_sql_text(settings.memory_limit)}")
    con.execute(f"SET threads = {int(threads)}")
    con.execute(f"SET temp_directory = {_sql_text(str(spill))}")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con


def _read_csv_sql(path: Path, types: list[str]) -> str:
    """``read_csv`` with every column typed explicitly (columns c0, c1, ...)."""
    spec = ", ".join(f"'c{i}': '{t}'" for i, t in enumerate(types))
    return (
        f"read_csv({_sql_text(str(path))}, header = false, skip = 1, auto_detect = false, "
        f"delim = ',', quote = '\"', escape = '\"', columns = {{{spec}}})"
    )


def _duckdb_error(error: Exception, where: str) -> SchemaError:
    text = str(error).split("\n", 1)[0]
    return SchemaError(f"{where}: DuckDB could not read the file as typed: {text}")


# --------------------------------------------------------------------------- unpivot


class Unpivot:
    """Turns record batches of a wide file into long Arrow tables, one per month.

    Keeps the set of times seen so far so a repeated ``Time`` row is dropped.
    """

    def __init__(self, columns: ColumnMap, kind: str) -> None:
        import pyarrow as pa

        self.columns = columns
        self.kind = kind
        self.nodes = pa.array(columns.nodes, type=pa.string())
        self.devices = pa.array(columns.devices, type=pa.string())
        self.seen: set[int] = set()
        self.times: list[np.ndarray] = []
        self.duplicates = 0
        self.wide_rows = 0

    def schema(self):  # -> pyarrow.Schema
        import pyarrow as pa

        fields = [
            pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("node", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        ]
        if self.kind == "gpu":
            fields.append(pa.field("gpu", pa.int64(), nullable=False))
        else:
            fields.append(pa.field("device", pa.dictionary(pa.int32(), pa.string())))
        fields.append(pa.field("value", pa.float64(), nullable=False))
        return pa.schema(fields)

    def _first_seen(self, times: np.ndarray) -> np.ndarray:
        seen = self.seen
        keep = np.fromiter(
            (t not in seen and not seen.add(t) for t in times.tolist()),
            dtype=bool,
            count=len(times),
        )
        self.duplicates += int(len(keep) - keep.sum())
        return keep

    def __call__(self, batch) -> list[tuple[str, object]]:
        """One record batch (time in µs, then the value columns) → [(month, table)]."""
        import pyarrow as pa

        if batch.column(0).null_count:
            raise SchemaError("a row has an empty Time")
        # a copy: a zero-copy view would keep the whole batch (every column) alive
        times = batch.column(0).to_numpy().copy()
        keep = self._first_seen(times)
        if not keep.all():
            batch, times = batch.filter(pa.array(keep)), times[keep]
        self.wide_rows += len(times)
        self.times.append(times)
        if batch.num_rows == 0 or batch.num_columns == 1:
            return []
        return self._long(batch, times)

    def _long(self, batch, times: np.ndarray) -> list[tuple[str, object]]:
        import pyarrow as pa
        import pyarrow.compute as pc

        n_rows = batch.num_rows
        flat = pa.concat_arrays(batch.columns[1:])
        if flat.null_count == len(flat):
            return []
        if flat.null_count:
            present = np.flatnonzero(flat.is_valid().to_numpy(zero_copy_only=False))
            values = pc.drop_null(flat)
        else:
            present, values = np.arange(len(flat)), flat
        col = present // n_rows
        row = present - col * n_rows
        arrays = {
            "time": pa.array(times[row], type=pa.timestamp("us", tz="UTC")),
            "node": pa.DictionaryArray.from_arrays(self.columns.node_codes[col], self.nodes),
        }
        if self.kind == "gpu":
            arrays["gpu"] = pa.array(self.columns.gpus[col])
        else:
            codes = self.columns.device_codes[col]
            mask = codes < 0
            arrays["device"] = pa.DictionaryArray.from_arrays(
                pa.array(codes, mask=mask if mask.any() else None), self.devices
            )
        arrays["value"] = values
        table = pa.table(arrays, schema=self.schema())
        return _split_by_month(table, month_of(times), row)

    def all_times(self) -> np.ndarray:
        return np.sort(np.concatenate(self.times)) if self.times else np.array([], np.int64)


def month_of(times_us: np.ndarray) -> np.ndarray:
    """UTC month (``datetime64[M]``) of each µs timestamp."""
    return times_us.astype("datetime64[us]").astype("datetime64[M]")


def _split_by_month(table, months: np.ndarray, row: np.ndarray) -> list[tuple[str, object]]:
    """Split long rows by the month of their wide row (usually one month per batch)."""
    first, last = months.min(), months.max()
    if first == last:
        return [(str(first), table)]
    import pyarrow as pa

    of_row = months[row]
    return [(str(m), table.filter(pa.array(of_row == m))) for m in np.unique(months)]


# --------------------------------------------------------------------------- wide files


class _MonthWriters:
    """One Parquet writer per month, opened on first use, with per-month statistics."""

    def __init__(self, folder: Path, schema, compression: str) -> None:
        self.folder, self.schema, self.compression = folder, schema, compression
        self.writers: dict[str, object] = {}
        self.stats: dict[str, dict] = {}

    def write(self, month: str, table) -> None:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        if month not in self.writers:
            self.writers[month] = pq.ParquetWriter(
                self.folder / f"month={month}.parquet",
                self.schema,
                compression=self.compression,
                store_schema=False,  # plain strings for readers, not Arrow dictionaries
            )
            self.stats[month] = {"rows": 0, "min_us": None, "max_us": None}
        self.writers[month].write_table(table)
        bounds = pc.min_max(table.column("time"))
        low, high = (bounds[k].cast("int64").as_py() for k in ("min", "max"))
        stat = self.stats[month]
        stat["rows"] += table.num_rows
        stat["min_us"] = low if stat["min_us"] is None else min(stat["min_us"], low)
        stat["max_us"] = high if stat["max_us"] is None else max(stat["max_us"], high)

    def close(self) -> dict[str, dict]:
        for writer in self.writers.values():
            writer.close()
        return {m: {**s, "files": [f"month={m}.parquet"]} for m, s in sorted(self.stats.items())}


def _batches(path: Path, names: list[str], fmt: str, settings: Settings) -> Iterator[object]:
    """Record batches of (time µs, value columns...) straight from DuckDB's CSV reader."""
    con = duckdb_connection(settings)
    try:
        source = _read_csv_sql(path, ["VARCHAR"] + ["DOUBLE"] * (len(names) - 1))
        query = f"SELECT epoch_us({time_sql('c0', fmt)}) AS t, * EXCLUDE (c0) FROM {source}"
        reader = con.sql(query).to_arrow_reader(settings.batch_rows)
        while True:
            try:
                yield reader.read_next_batch()
            except StopIteration:
                return
    finally:
        con.close()


def convert_wide(path: Path, folder: Path, kind: str, settings: Settings) -> dict:
    """Unpivot one wide CSV into ``folder``; returns the metadata to record."""
    names = read_header(path)
    _check_names(names, path.name)
    parse = gpu_columns if kind == "gpu" else node_columns
    columns = parse(names[1:], path.name)
    fmt = time_format(_first_value(path))
    unpivot = Unpivot(columns, kind)
    writers = _MonthWriters(folder, unpivot.schema(), settings.compression)
    batches = _batches(path, names, fmt, settings) if fmt else iter(())
    try:
        with Pipeline(batches, unpivot, settings.queue_depth) as pipeline:
            for item in pipeline:
                for month, table in item:
                    writers.write(month, table)
    except Exception as error:
        if isinstance(error, SchemaError):
            raise SchemaError(f"{path.name}: {error}") from error
        if type(error).__module__.startswith(("duckdb", "_duckdb")):
            raise _duckdb_error(error, path.name) from error
        raise
    finally:
        months = writers.close()
    times = unpivot.all_times()
    _write_times(folder / "times.parquet", times)
    return {
        "time_min_us": int(times[0]) if len(times) else None,
        "time_max_us": int(times[-1]) if len(times) else None,
        "time_format": fmt,
        "columns": len(names) - 1,
        "nodes": len(columns.nodes),
        "wide_rows": unpivot.wide_rows,
        "duplicate_rows": unpivot.duplicates,
        "months": months,
    }


def _write_times(path: Path, times_us: np.ndarray) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"time": pa.array(times_us, type=pa.timestamp("us", tz="UTC"))})
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
    source = _read_csv_sql(path, ["VARCHAR", "VARCHAR"] + ["DOUBLE"] * (len(names) - 2))
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
        if type(error).__module__.startswith(("duckdb", "_duckdb")):
            raise _duckdb_error(error, path.name) from error
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
        listing = ", ".join(_sql_text(str(folder / f)) for f in files)
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
    except (OSError, ValueError):
        return None


def convert(file: HubFile, csv_path: Path, settings: Settings | None = None) -> Path:
    """Convert a verified file once (keyed by its sha256); returns the converted folder.

    The work happens in a temporary folder that is renamed into place when
    complete, under a lock, so a crash or a concurrent run never leaves a
    half-converted folder behind.
    """
    settings = settings or Settings()
    if file.table is None or not file.sha256:
        raise ValueError(f"{file.path} is not a utilization CSV with an LFS sha256")
    target = layout.converted_dir(file.sha256)
    with layout.lock(f"convert-{file.sha256[:16]}"):
        if (target / "meta.json").is_file():
            return target
        started = time.perf_counter()
        with layout.work_dir(f"convert-{file.sha256[:12]}") as work:
            if file.table == "ipmi_power":
                facts = convert_ipmi(csv_path, work, settings)
            else:
                kind = "gpu" if file.table == "gpu_metrics" else "node"
                facts = convert_wide(csv_path, work, kind, settings)
            meta = {
                "format": layout.FORMAT_VERSION,
                "sha256": file.sha256,
                "path": file.path,
                "table": file.table,
                "group": file.group,
                "metric": file.metric,
                "period": file.period,
                "bytes": csv_path.stat().st_size,
                "rows": sum(m["rows"] for m in facts["months"].values()),
                "seconds": round(time.perf_counter() - started, 3),
                **facts,
            }
            (work / "meta.json").write_text(json.dumps(meta, indent=1))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(work, target)
    log.info("converted %s: %s long rows in %.1f s", file.path, meta["rows"], meta["seconds"])
    return target
