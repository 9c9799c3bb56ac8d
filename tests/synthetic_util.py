"""Synthetic AcmeTrace utilization files in the upstream formats, and a fake Hub.

The real files (~80 GB on the HuggingFace dataset ``Qinghao/AcmeTrace``) are not
available here, so tests and the benchmark build look-alikes:

- DCGM metrics (``data/utilization/{seren,kalos}/<METRIC>.csv``): wide, a ``Time``
  column then one column per GPU named ``<ip>-<gpu index>``, 15 s sampling, mostly
  empty cells; values as pandas writes floats (``37.0``).
- Prometheus node metrics (``NODE_*.csv``): the same wide layout with one column
  per node IP (``10.140.1.10``), as the upstream README shows.
- IPMI power (``data/utilization/ipmi/*.csv``): long, ``Time,node,CPU_Power,...``.
- Large metrics split into ``<METRIC>-2023-MM.csv`` files whose edges overlap.

``Time`` is written as the authors' notebook leaves it: the instant rendered in
Asia/Shanghai, ``2023-07-01 08:00:00+08:00``.

:class:`FakeHub` serves such files on 127.0.0.1 the way the Hub does: the
revision API, the recursive tree API (paginated with a ``Link`` header), and
``resolve`` URLs that redirect to a content-addressed URL with Range support. It
records every request and can drop a connection mid-file once.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import numpy as np

REPO = "Qinghao/AcmeTrace"
HOST = "huggingface.co"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
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


# --------------------------------------------------------------------------- fake Hub


@dataclass
class FakeHub:
    """A loopback stand-in for the HuggingFace Hub endpoints mltraces uses.

    ``files`` maps repo paths (``data/utilization/seren/GPU_UTIL.csv``) to bytes.
    Use it as ``MLTRACES_MIRROR=<hub.url>``: requests arrive as
    ``/huggingface.co/<path>``.
    """

    files: dict[str, bytes] = field(default_factory=dict)
    commit: str = COMMIT
    page_size: int = 1000
    drop_after: dict[str, int] = field(default_factory=dict)  # path → bytes, dropped once
    corrupt: set[str] = field(default_factory=set)  # paths served with one byte changed
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    url: str = ""
    _server: http.server.ThreadingHTTPServer | None = None

    # -- content

    def add(self, path: str, data: bytes) -> None:
        """Publish ``data`` at ``path`` in the repository."""
        self.files[path] = data

    def entry(self, path: str) -> dict:
        """The tree API entry of one file (LFS, as every utilization CSV is)."""
        data = self.files[path]
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        sha = hashlib.sha256(data).hexdigest()
        return {
            "type": "file",
            "oid": blob,
            "size": len(data),
            "lfs": {"oid": sha, "size": len(data), "pointerSize": 134},
            "path": path,
        }

    def tree(self, folder: str) -> list[dict]:
        """Directories then files under ``folder``, as the recursive tree API lists them."""
        paths = sorted(p for p in self.files if p.startswith(folder.rstrip("/") + "/"))
        dirs = sorted({p.rsplit("/", 1)[0] for p in paths} - {folder})
        dir_entries = [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in dirs]
        return dir_entries + [self.entry(p) for p in paths]

    def count(self, fragment: str) -> int:
        """How many requests asked for a path containing ``fragment``."""
        return sum(fragment in path for path, _ in self.requests)

    # -- server

    def start(self) -> str:
        """Serve on 127.0.0.1 (ephemeral port); returns the base URL."""
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict, bytes | str]:
        """Route one GET: (status, headers, body); a str body is a file path to serve."""
        prefix = f"/{HOST}/api/datasets/{REPO}/"
        resolve = f"/{HOST}/datasets/{REPO}/resolve/"
        if path.startswith(prefix + "revision/"):
            info = {"id": REPO, "sha": self.commit, "private": False}
            return 200, {"Content-Type": "application/json"}, json.dumps(info).encode()
        if path.startswith(prefix + "tree/"):
            revision, _, folder = path.removeprefix(prefix + "tree/").partition("/")
            if revision not in {"main", self.commit}:
                return 404, {}, b'{"error": "Invalid rev id"}'
            entries = self.tree(folder)
            start = int(query.get("cursor", ["0"])[0])
            page = entries[start : start + self.page_size]
            headers = {"Content-Type": "application/json"}
            if start + self.page_size < len(entries):
                api_path = path.removeprefix(f"/{HOST}")
                nxt = f"https://{HOST}{api_path}?recursive=true&cursor={start + self.page_size}"
                headers["Link"] = f'<{nxt}>; rel="next"'
            return 200, headers, json.dumps(page).encode()
        if path.startswith(resolve):
            revision, _, repo_path = path.removeprefix(resolve).partition("/")
            if revision != self.commit or repo_path not in self.files:
                return 404, {}, b"Entry not found"
            sha = hashlib.sha256(self.files[repo_path]).hexdigest()
            return 302, {"Location": f"/cdn/{sha}?path={repo_path}"}, b""
        if path.startswith("/cdn/"):
            return 200, {}, query["path"][0]
        return 404, {}, b"not found"

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                hub.requests.append((self.path, self.headers.get("Range")))
                parts = urlsplit(self.path)
                status, headers, body = hub._answer(parts.path, parse_qs(parts.query))
                if isinstance(body, str):
                    self._send_file(body)
                    return
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _send_file(self, repo_path: str) -> None:
                data = hub.files[repo_path]
                if repo_path in hub.corrupt:
                    data = data[:-2] + bytes([data[-2] ^ 1]) + data[-1:]
                start = 0
                range_header = self.headers.get("Range")
                if range_header:
                    start = int(range_header.removeprefix("bytes=").split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.end_headers()
                        return
                self.send_response(206 if range_header else 200)
                self.send_header("Content-Length", str(len(data) - start))
                if range_header:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                payload = data[start:]
                limit = hub.drop_after.pop(repo_path, None)
                if limit is not None:
                    self.wfile.write(payload[:limit])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        return Handler


def running(hub: FakeHub) -> Iterator[FakeHub]:
    """Start ``hub``, yield it, stop it (for fixtures)."""
    hub.start()
    try:
        yield hub
    finally:
        hub.stop()
