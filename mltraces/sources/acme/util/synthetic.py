"""Synthetic AcmeTrace utilization files (HF ``Qinghao/AcmeTrace``) in the upstream formats.

The real files (~80 GB of wide CSV) are not available to tests, so tests and the
benchmark build look-alikes here, beside the code that reads them:

- DCGM metrics (``data/utilization/{seren,kalos}/<METRIC>.csv``): wide, a ``Time``
  column then one column per GPU named ``<ip>-<gpu index>``, 15 s sampling, mostly
  empty cells; values as pandas writes floats (``37.0``).
- Prometheus node metrics (``NODE_*.csv``): the same wide layout with one column
  per node IP (``10.140.1.10``), as the upstream README shows.
- IPMI power (``data/utilization/ipmi/*.csv``): long, ``Time,node,CPU_Power,...``.
- Large metrics split into ``<METRIC>-2023-MM.csv`` files whose edges overlap.

``Time`` is written as the authors' notebook leaves it: the instant rendered in
Asia/Shanghai, ``2023-07-01 08:00:00+08:00``. The loopback stand-in for the Hub
that serves them lives with the tests (``tests/synthetic_util.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

SHANGHAI = timezone(timedelta(hours=8))
JULY_1 = int(datetime(2023, 7, 1, tzinfo=timezone.utc).timestamp())
IPMI_COLUMNS = (
    "CPU_Power",
    "Memory_Power",
    *(f"PSU{i}_PIN" for i in range(1, 7)),
    "PSU_IN_SUM",
    "Sys_Total_Power",
)


# --------------------------------------------------------------------------- wide files


def node_ips(n_nodes: int, first: int = 0) -> list[str]:
    """Node addresses shaped like Acme's (``10.140.<a>.<b>``)."""
    return [f"10.140.{(first + i) // 250}.{(first + i) % 250 + 1}" for i in range(n_nodes)]


def gpu_columns(n_nodes: int, gpus_per_node: int = 8) -> list[str]:
    """DCGM column names: ``<ip>-<gpu index>`` for every GPU of every node."""
    return [f"{ip}-{g}" for ip in node_ips(n_nodes) for g in range(gpus_per_node)]


def time_text(epoch: int, style: str = "offset") -> str:
    """``Time`` as the published CSVs carry it (Asia/Shanghai, with offset).

    ``naive`` drops the offset (Shanghai wall time); ``epoch`` gives Unix seconds,
    as the exporters wrote before the authors' processing.
    """
    if style == "epoch":
        return str(epoch)
    text = datetime.fromtimestamp(epoch, SHANGHAI).isoformat(sep=" ")
    return text[:19] if style == "naive" else text


@dataclass
class WideTable:
    """The truth behind one wide CSV: times (epoch s), column names, values (NaN = empty)."""

    epochs: np.ndarray
    columns: list[str]
    values: np.ndarray

    def cells(self) -> set[tuple[int, str, float]]:
        """Every non-empty cell as (epoch, column, value)."""
        rows, cols = np.nonzero(~np.isnan(self.values))
        return {
            (int(self.epochs[r]), self.columns[c], float(self.values[r, c]))
            for r, c in zip(rows, cols, strict=True)
        }

    def rows(self, start: int, stop: int) -> WideTable:
        """A slice of rows (to build overlapping split files)."""
        return WideTable(self.epochs[start:stop], self.columns, self.values[start:stop])


def wide_table(
    rng: np.random.Generator,
    columns: list[str],
    n_rows: int,
    *,
    start: int = JULY_1,
    step: int = 15,
    empty: float = 0.7,
    integer: bool = True,
) -> WideTable:
    """Random values in 0..100 with about ``empty`` of the cells empty."""
    epochs = start + step * np.arange(n_rows, dtype=np.int64)
    if integer:
        values = rng.integers(0, 101, size=(n_rows, len(columns))).astype(np.float64)
    else:
        values = np.round(rng.uniform(0, 100, size=(n_rows, len(columns))), 3)
    values[rng.random(values.shape) < empty] = np.nan
    return WideTable(epochs, list(columns), values)


def _cell(value: float) -> str:
    return "" if np.isnan(value) else repr(float(value))


def wide_csv_bytes(table: WideTable, time_style: str = "offset") -> bytes:
    """The CSV text pandas' ``to_csv`` writes for such a frame (NaN → empty)."""
    lines = [",".join(["Time", *table.columns])]
    for epoch, row in zip(table.epochs, table.values, strict=True):
        lines.append(",".join([time_text(int(epoch), time_style), *(_cell(v) for v in row)]))
    return ("\n".join(lines) + "\n").encode()


def wide_csv_with_repeats(
    table: WideTable, repeats: dict[int, int], rng: np.random.Generator
) -> bytes:
    """The CSV of ``table`` with extra rows that repeat an earlier row's Time.

    ``repeats`` maps a row ``at`` to a row ``of`` (``of <= at``): after row ``at``
    comes a row with row ``of``'s Time and other values, which a conversion must
    drop (the first row of a Time wins), so ``table.cells()`` stays the truth.
    """
    lines = wide_csv_bytes(table).decode().splitlines()
    for at in sorted(repeats, reverse=True):
        again = wide_table(rng, table.columns, 1, start=int(table.epochs[repeats[at]]))
        lines.insert(at + 2, wide_csv_bytes(again).decode().splitlines()[1])
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- IPMI


@dataclass
class IpmiTable:
    """The truth behind one IPMI CSV: one row per (time, node)."""

    epochs: np.ndarray
    nodes: list[str]
    values: np.ndarray  # rows × IPMI_COLUMNS, NaN = empty


def ipmi_table(
    rng: np.random.Generator, n_nodes: int, n_times: int, *, step: int = 60, no_memory: int = 0
) -> IpmiTable:
    """Power readings; the first ``no_memory`` nodes lack Memory_Power (type B servers)."""
    ips = node_ips(n_nodes, first=500)
    epochs = np.repeat(JULY_1 + step * np.arange(n_times, dtype=np.int64), n_nodes)
    nodes = ips * n_times
    n = len(nodes)
    psus = np.round(rng.uniform(150, 700, size=(n, 6)), 0)
    total = psus.sum(axis=1)
    values = np.column_stack(
        [
            np.round(rng.uniform(100, 400, n), 0),  # CPU_Power
            np.round(rng.uniform(20, 80, n), 0),  # Memory_Power
            psus,
            total,  # PSU_IN_SUM
            np.round(total * 0.93, 0),  # Sys_Total_Power: after conversion losses
        ]
    )
    missing = np.array([ips.index(n) < no_memory for n in nodes])
    values[missing, 1] = np.nan
    return IpmiTable(epochs, nodes, values)


def ipmi_csv_bytes(table: IpmiTable) -> bytes:
    """``Time,node,CPU_Power,...`` with integer watts, as the upstream files."""
    lines = [",".join(["Time", "node", *IPMI_COLUMNS])]
    for epoch, node, row in zip(table.epochs, table.nodes, table.values, strict=True):
        cells = ["" if np.isnan(v) else str(int(v)) for v in row]
        lines.append(",".join([time_text(int(epoch)), node, *cells]))
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- big files


def write_big_wide_csv(
    path: Path,
    *,
    target_bytes: int,
    n_columns: int = 2304,
    empty: float = 0.7,
    seed: int = 0,
    distinct_rows: int = 256,
) -> int:
    """Write a Kalos-sized wide CSV fast; returns the number of data rows.

    Rows are drawn from ``distinct_rows`` random row bodies (GPU_UTIL-like
    integers written as ``37.0``, ``empty`` of them blank) behind fresh 15 s
    timestamps, so generating gigabytes is I/O bound while the parser sees the
    same mix of cells as in a random file.
    """
    rng = np.random.default_rng(seed)
    columns = gpu_columns(n_columns // 8)
    vocabulary = np.array([""] + [f"{v}.0" for v in range(101)], dtype=object)
    bodies = []
    for _ in range(distinct_rows):
        picks = rng.integers(1, 102, size=len(columns))
        picks[rng.random(len(columns)) < empty] = 0
        bodies.append(("," + ",".join(vocabulary[picks]) + "\n").encode())
    rows = 0
    with path.open("wb", buffering=1 << 22) as out:
        written = out.write((",".join(["Time", *columns]) + "\n").encode())
        choice = rng.integers(0, distinct_rows, size=1 << 16)
        while written < target_bytes:
            stamp = time_text(JULY_1 + 15 * rows).encode()
            written += out.write(stamp + bodies[choice[rows % len(choice)]])
            rows += 1
    return rows
