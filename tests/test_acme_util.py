"""AcmeTrace utilization: selective fetch, resume, verification, conversion, views, CDFs.

Everything runs against :class:`synthetic_util.FakeHub` on 127.0.0.1 serving
files in the upstream formats; the truth behind each file is kept in memory and
the converted long data is compared with it cell by cell.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
import synthetic_util as su

from mltraces import download as fetch_module
from mltraces.cli import main
from mltraces.errors import FetchError, SchemaError, VerificationError
from mltraces.sources.acme.util import assemble, cdf, convert, fetching, layout, views
from mltraces.sources.acme.util.fetching import fetch_util

ROOT = Path(__file__).resolve().parents[1]
U = "data/utilization"
DAY = 86400
STEP = 3 * 3600  # split-file fixtures span three months with few rows


# --------------------------------------------------------------------------- synthetic data


def _with_duplicate_row(table: su.WideTable, row: int, rng: np.random.Generator) -> bytes:
    """The CSV of ``table`` plus a second row with ``row``'s Time (other values) after it."""
    lines = su.wide_csv_bytes(table).decode().splitlines()
    again = su.wide_table(rng, table.columns, 1, start=int(table.epochs[row]))
    extra = su.wide_csv_bytes(again).decode().splitlines()[1]
    lines.insert(row + 3, extra)
    return ("\n".join(lines) + "\n").encode()


def _split(table: su.WideTable) -> dict[str, su.WideTable]:
    """Monthly slices whose edges overlap by two rows, as split uploads do."""
    months = np.array(table.epochs, dtype="datetime64[s]").astype("datetime64[M]")
    parts = {}
    for month in np.unique(months):
        rows = np.flatnonzero(months == month)
        parts[str(month)] = table.rows(max(rows[0] - 2, 0), rows[-1] + 3)
    return parts


class Data:
    """The truth behind every synthetic file the fake Hub publishes."""

    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        self.files: dict[str, bytes] = {}
        # Seren GPU_UTIL: 320 GPU columns across the June/July boundary, 15 s, one repeated Time
        self.gpu_util = su.wide_table(rng, su.gpu_columns(40), 600, start=su.JULY_1 - 200 * 15)
        self.files[f"{U}/seren/GPU_UTIL.csv"] = _with_duplicate_row(self.gpu_util, 10, rng)
        # Kalos SM_ACTIVE: June 20 to August 9, split monthly with overlapping edges
        start = su.JULY_1 - 11 * DAY
        self.sm_active = su.wide_table(
            rng, su.gpu_columns(30), 400, start=start, step=STEP, integer=False
        )
        self.sm_parts = _split(self.sm_active)
        for month, part in self.sm_parts.items():
            self.files[f"{U}/kalos/SM_ACTIVE-{month}.csv"] = su.wide_csv_bytes(part)
        # Prometheus node metrics: one column per node IP; IB columns carry the NIC
        self.cpu = su.wide_table(rng, su.node_ips(30), 300, integer=False, empty=0.3)
        self.files[f"{U}/seren/NODE_CPU_UTILIZATION.csv"] = su.wide_csv_bytes(self.cpu)
        ib_columns = [f"{ip}-mlx5_0" for ip in su.node_ips(10)]
        self.ib = su.wide_table(rng, ib_columns, 100, integer=False, empty=0.5)
        self.files[f"{U}/seren/NODE_IB_SEND.csv"] = su.wide_csv_bytes(self.ib)
        # Other time formats of the same instants
        self.temp = su.wide_table(rng, su.gpu_columns(4), 50)
        self.files[f"{U}/kalos/GPU_TEMP.csv"] = su.wide_csv_bytes(self.temp, "epoch")
        self.files[f"{U}/seren/GPU_TEMP.csv"] = su.wide_csv_bytes(self.temp, "naive")
        # IPMI: long rows; the first two nodes are type-B servers without Memory_Power
        self.ipmi = su.ipmi_table(rng, 6, 50, no_memory=2)
        self.files[f"{U}/ipmi/GPU_AB_Power.csv"] = su.ipmi_csv_bytes(self.ipmi)


@pytest.fixture(scope="module")
def data() -> Data:
    return Data()


@pytest.fixture
def hub(data: Data, monkeypatch: pytest.MonkeyPatch) -> Iterator[su.FakeHub]:
    """The fake Hub as MLTRACES_MIRROR; retries do not wait."""
    monkeypatch.setattr(fetch_module, "RETRY_WAIT_S", 0.0)
    fake = su.FakeHub(files=dict(data.files))
    for started in su.running(fake):
        monkeypatch.setenv("MLTRACES_MIRROR", started.url)
        yield started


def connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    views.attach_views(con)
    return con


def long_cells(con, table: str, cluster: str, metric: str, label: str) -> Counter:
    """(epoch s, wide column name, value) of every long row, counted."""
    rows = con.execute(
        f"SELECT epoch_us(time) // 1000000 AS t, {label} AS col, value FROM acme.{table} "
        "WHERE cluster = ? AND metric = ?",
        [cluster, metric],
    ).fetchall()
    return Counter(rows)


def gpu_cells(con, cluster: str, metric: str) -> Counter:
    return long_cells(con, "gpu_metrics", cluster, metric, "node || '-' || gpu")


def downloads(hub: su.FakeHub) -> list[str]:
    return [p.split("/resolve/")[1].split("/", 1)[1] for p, _ in hub.requests if "/resolve/" in p]


# --------------------------------------------------------------------------- selection & fetch


def test_selective_fetch_takes_only_the_chosen_files(hub: su.FakeHub) -> None:
    done = fetch_util("kalos", "SM_ACTIVE", since="2023-07-01", until="2023-07-31")
    assert [f.path for f in done.files] == [f"{U}/kalos/SM_ACTIVE-2023-07.csv"]
    assert downloads(hub) == [f"{U}/kalos/SM_ACTIVE-2023-07.csv"]
    assert hub.count("/tree/") == 1 and hub.count("/revision/") == 1


@pytest.mark.parametrize(
    ("since", "until", "months"),
    [
        ("2023-07-15", None, ["2023-07", "2023-08"]),
        (None, "2023-06-30", ["2023-06"]),
        ("2023-07", "2023-07", ["2023-07"]),
        ("2023-06-30", "2023-07-01", ["2023-06", "2023-07"]),
        (None, None, ["2023-06", "2023-07", "2023-08"]),
    ],
)
def test_since_until_pick_split_files(hub: su.FakeHub, since, until, months) -> None:
    from mltraces.sources.acme.hub import manifest

    chosen = fetching.select(manifest(), "kalos", ["sm_active"], since, until)
    assert [f.period for f in chosen] == months


def test_a_metric_published_whole_is_taken_whole(hub: su.FakeHub) -> None:
    from mltraces.sources.acme.hub import manifest

    chosen = fetching.select(manifest(), "seren", "GPU_UTIL", "2023-08-01", "2023-08-02")
    assert [f.name for f in chosen] == ["GPU_UTIL.csv"]


def test_unknown_names_list_the_known_ones(hub: su.FakeHub) -> None:
    with pytest.raises(KeyError, match=r"unknown metric GPU_UTILS.*known: GPU_AB_Power, GPU_TEMP"):
        fetch_util("seren", "GPU_UTILS")
    with pytest.raises(KeyError, match=r"unknown cluster helios.*known: ipmi, kalos, seren"):
        fetch_util("helios")
    assert downloads(hub) == []


def test_a_dropped_connection_resumes_with_a_range_request(hub: su.FakeHub, data: Data) -> None:
    path = f"{U}/seren/GPU_UTIL.csv"
    size = len(data.files[path])
    assert size > 400_000
    hub.drop_after[path] = 300_000
    fetch_util("seren", "GPU_UTIL")
    ranges = [r for p, r in hub.requests if p.startswith("/cdn/")]
    assert ranges[0] is None and len(ranges) == 2
    resumed_at = int(ranges[1].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= 300_000, "the second request resumes, it does not restart"
    assert sum(gpu_cells(connection(), "seren", "GPU_UTIL").values()) == len(data.gpu_util.cells())


def test_verify_rehashes_downloaded_util_files(hub: su.FakeHub, capsys) -> None:
    done = fetch_util("kalos", "SM_ACTIVE", since="2023-07", until="2023-07", convert_files=False)
    (path,) = done.csv.values()
    assert main(["verify", "acme-util"]) == 0
    assert f"ok       acme-util/{U}/kalos/SM_ACTIVE-2023-07.csv" in capsys.readouterr().out
    path.write_bytes(path.read_bytes()[:-2] + b"9\n")  # same size, other bytes
    assert main(["verify"]) == 1  # the default covers acme-util too
    assert "1 corrupt (deleted)" in capsys.readouterr().out and not path.exists()


def test_a_file_failing_verification_leaves_nothing_behind(hub: su.FakeHub, isolated_cache) -> None:
    hub.corrupt.add(f"{U}/seren/NODE_CPU_UTILIZATION.csv")
    with pytest.raises(VerificationError, match=r"sha256 mismatch.*deleted"):
        fetch_util("seren", "NODE_CPU_UTILIZATION")
    left = [p for p in isolated_cache.rglob("*") if p.is_file() and p.suffix != ".lock"]
    assert all("/hub/" in str(p) for p in left), f"only the manifest stays: {left}"
    assert not (isolated_cache / "acme-util" / "converted").exists()
    assert views.months(views.VIEWS[1]) == []


def test_large_downloads_are_announced(hub, monkeypatch, caplog) -> None:
    monkeypatch.setattr(fetch_module, "LARGE_DOWNLOAD_BYTES", 1000)
    with caplog.at_level("WARNING", logger="mltraces"):
        fetch_util("kalos", "SM_ACTIVE", since="2023-08-01", convert_files=False)
    assert re.search(r"about to download \d+\.\d GB in 1 file", caplog.text)


def test_a_disk_too_small_is_refused_before_downloading(hub, monkeypatch) -> None:
    monkeypatch.setattr(fetching, "_free_bytes", lambda path: 1000)
    with pytest.raises(FetchError, match=r"need .* GB.*--delete-csv.*MLTRACES_CACHE"):
        fetch_util("seren", "GPU_UTIL")
    assert downloads(hub) == []


def test_converted_files_are_not_downloaded_again(hub: su.FakeHub, data: Data) -> None:
    first = fetch_util("seren", "NODE_CPU_UTILIZATION", keep_csv=False)
    assert first.csv == {} and len(first.converted) == 1
    csv = fetch_module.local_path(first.files[0].remote(su.COMMIT))
    assert not csv.exists() and not csv.with_name(csv.name + fetch_module.STAMP_SUFFIX).exists()
    again = fetch_util("seren", "NODE_CPU_UTILIZATION")
    assert downloads(hub) == [f"{U}/seren/NODE_CPU_UTILIZATION.csv"]
    assert again.converted == first.converted


def test_an_identical_file_of_another_revision_is_reused(hub: su.FakeHub, monkeypatch) -> None:
    fetch_util("seren", "GPU_TEMP", convert_files=False)
    hub.commit = "e" * 40
    monkeypatch.setenv("MLTRACES_HF_REVISION", hub.commit)
    fetch_util("seren", "GPU_TEMP", convert_files=False)
    assert len(downloads(hub)) == 1, "linked and re-hashed, not downloaded"


# --------------------------------------------------------------------------- conversion


def test_every_non_empty_cell_appears_exactly_once(hub: su.FakeHub, data: Data) -> None:
    fetch_util("seren", "GPU_UTIL")
    found = gpu_cells(connection(), "seren", "GPU_UTIL")
    assert set(found.values()) == {1}
    assert set(found) == data.gpu_util.cells(), "the first of two rows with one Time wins"
    meta = json.loads(next((layout.root() / "converted").glob("*/meta.json")).read_text())
    assert meta["duplicate_rows"] == 1 and meta["columns"] == 320
    assert meta["wide_rows"] == 600 and meta["time_format"] == "offset"


def test_split_files_merge_without_duplicates(hub: su.FakeHub, data: Data) -> None:
    fetch_util("kalos", "SM_ACTIVE")
    con = connection()
    found = gpu_cells(con, "kalos", "SM_ACTIVE")
    assert set(found.values()) == {1}
    assert set(found) == data.sm_active.cells()
    overlapping = sum(len(p.cells()) for p in data.sm_parts.values()) - len(found)
    assert overlapping > 0, "the fixture's split files do overlap"
    parts = sorted(p.name for p in layout.dataset_root().rglob("*.parquet"))
    assert sum("dedup" in p for p in parts) == 2  # only the two boundary months are rewritten


def test_fetching_more_months_keeps_the_data_exact(hub: su.FakeHub, data: Data) -> None:
    fetch_util("kalos", "SM_ACTIVE", since="2023-07-01", until="2023-07-31")
    july = data.sm_parts["2023-07"].cells()
    assert set(gpu_cells(connection(), "kalos", "SM_ACTIVE")) == july
    fetch_util("kalos", "SM_ACTIVE", until="2023-06-30")
    found = gpu_cells(connection(), "kalos", "SM_ACTIVE")
    assert set(found.values()) == {1}
    assert set(found) == july | data.sm_parts["2023-06"].cells()


def test_assembling_again_changes_nothing(hub: su.FakeHub) -> None:
    done = fetch_util("kalos", "SM_ACTIVE")
    before = {p: p.stat().st_ino for p in layout.dataset_root().rglob("*.parquet")}
    assemble.assemble(done.manifest)
    after = {p: p.stat().st_ino for p in layout.dataset_root().rglob("*.parquet")}
    assert before == after


def test_node_metrics_keep_node_and_device(hub: su.FakeHub, data: Data) -> None:
    fetch_util("seren", "NODE_CPU_UTILIZATION,NODE_IB_SEND")
    con = connection()
    cpu = long_cells(con, "node_metrics", "seren", "NODE_CPU_UTILIZATION", "node")
    assert set(cpu.values()) == {1} and set(cpu) == data.cpu.cells()
    label = "node || coalesce('-' || device, '')"
    ib = long_cells(con, "node_metrics", "seren", "NODE_IB_SEND", label)
    assert set(ib) == data.ib.cells()
    devices = con.sql("SELECT DISTINCT device FROM acme.node_metrics ORDER BY 1").fetchall()
    assert devices == [("mlx5_0",), (None,)]


def test_time_formats_give_the_same_instants(hub: su.FakeHub, data: Data) -> None:
    fetch_util(["kalos", "seren"], "GPU_TEMP")
    con = connection()
    assert set(gpu_cells(con, "kalos", "GPU_TEMP")) == data.temp.cells()  # Unix seconds
    assert set(gpu_cells(con, "seren", "GPU_TEMP")) == data.temp.cells()  # naive Shanghai


def test_ipmi_keeps_its_long_layout_with_types(hub: su.FakeHub, data: Data) -> None:
    fetch_util("ipmi")
    con = connection()
    describe = "SELECT column_name, column_type FROM (DESCRIBE acme.ipmi_power)"
    types = dict(con.sql(describe).fetchall())
    assert types["time"] == "TIMESTAMP WITH TIME ZONE" and types["sys_total_power"] == "DOUBLE"
    rows = con.sql(
        "SELECT epoch_us(time) // 1000000, node, cpu_power, memory_power, sys_total_power "
        "FROM acme.ipmi_power WHERE cluster = 'seren' AND server_group = 'GPU_AB'"
    ).fetchall()
    expected = [
        (int(t), n, v[0], None if np.isnan(v[1]) else v[1], v[-1])
        for t, n, v in zip(data.ipmi.epochs, data.ipmi.nodes, data.ipmi.values, strict=True)
    ]
    assert sorted(rows) == sorted(expected)
    assert sum(r[3] is None for r in rows) == 2 * 50


def test_a_malformed_file_is_refused_and_leaves_nothing(hub: su.FakeHub) -> None:
    bad = b"Time,10.140.0.1-0,gpu-x\n2023-07-01 08:00:00+08:00,1,2\n"
    hub.files[f"{U}/kalos/GPU_UTIL.csv"] = bad
    with pytest.raises(SchemaError, match=r"not '<ip>-<gpu index>'.*'gpu-x'"):
        fetch_util("kalos", "GPU_UTIL")
    assert not (layout.root() / "converted").exists() or not any(
        (layout.root() / "converted").iterdir()
    )
    assert not layout.dataset_root().exists()


def test_a_bad_cell_names_the_file(tmp_path: Path) -> None:
    csv = tmp_path / "GPU_UTIL.csv"
    csv.write_text("Time,10.140.0.1-0\n2023-07-01 08:00:00+08:00,abc\n")
    with pytest.raises(SchemaError, match=r"GPU_UTIL\.csv: DuckDB could not read"):
        convert.convert_wide(csv, tmp_path, "gpu", convert.Settings())


# --------------------------------------------------------------------------- parallel conversion

SMALL_CHUNKS = 6000  # bytes: the fixture below is cut into ~40 chunks


@pytest.fixture(scope="module")
def repeats_csv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, su.WideTable]:
    """~240 kB across the June/July boundary; Times repeated in the same and later chunks."""
    rng = np.random.default_rng(11)
    table = su.wide_table(rng, su.gpu_columns(12), 400, start=su.JULY_1 - 150 * 15, integer=False)
    repeats = {3: 2, 4: 4, 150: 149, 160: 5, 399: 0, 250: 250}  # after row → repeat row's Time
    csv = tmp_path_factory.mktemp("repeats") / "GPU_UTIL.csv"
    csv.write_bytes(su.wide_csv_with_repeats(table, repeats, rng))
    return csv, table


def convert_to(csv: Path, folder: Path, **settings) -> tuple[dict, dict[str, bytes]]:
    """convert_wide into ``folder``; (its metadata, the bytes of each file written)."""
    folder.mkdir()
    meta = convert.convert_wide(csv, folder, "gpu", convert.Settings(**settings))
    return meta, {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def sorted_rows(folder: Path):  # -> pyarrow.Table
    import pyarrow.parquet as pq

    table = pq.read_table(sorted(folder.glob("month=*.parquet")))
    return table.sort_by([("time", "ascending"), ("node", "ascending"), ("gpu", "ascending")])


def test_parallel_conversion_writes_the_same_bytes_as_one_thread(repeats_csv, tmp_path) -> None:
    csv, _ = repeats_csv
    one, one_files = convert_to(csv, tmp_path / "one", threads=1, chunk_bytes=SMALL_CHUNKS)
    four, four_files = convert_to(csv, tmp_path / "four", threads=4, chunk_bytes=SMALL_CHUNKS)
    assert one == four
    assert one_files == four_files, "results are written in file order, whatever the threads"
    assert list(one["months"]) == ["2023-06", "2023-07"]
    assert one["wide_rows"] == 400 and one["duplicate_rows"] == 6


def test_chunking_changes_no_row(repeats_csv, tmp_path) -> None:
    csv, table = repeats_csv
    whole, _ = convert_to(csv, tmp_path / "whole", threads=1, chunk_bytes=1 << 30)
    cut, _ = convert_to(csv, tmp_path / "cut", threads=2, chunk_bytes=SMALL_CHUNKS)
    assert whole == cut
    rows = sorted_rows(tmp_path / "cut")
    assert rows.equals(sorted_rows(tmp_path / "whole"))
    times = rows.column("time").cast("int64").to_pylist()
    nodes, gpus, values = (rows.column(c).to_pylist() for c in ("node", "gpu", "value"))
    found = {
        (t // 10**6, f"{n}-{g}", v) for t, n, g, v in zip(times, nodes, gpus, values, strict=True)
    }
    assert found == {(t, c, v) for t, c, v in table.cells()}, "first row of a Time wins"


def test_pyarrow_parses_cells_as_duckdb_does(tmp_path, monkeypatch) -> None:
    from mltraces.sources.acme.util.chunks import ChunkParser

    spellings = [
        "1e-3",
        "-0.0",
        "0.1234567890123456789",
        "  7",
        '"4"',
        "1E5",
        "+3.5",
        ".5",
        "5.",
        "1e400",
        "4.9406564584124654e-324",
        "0001.5",
        "\t5",
        "",
        '""',
    ]
    columns = su.gpu_columns(2)
    lines = [",".join(["Time", *columns])]
    for i in range(len(spellings)):
        cells = [spellings[(i + k) % len(spellings)] for k in range(len(columns))]
        lines.append(",".join([su.time_text(su.JULY_1 + 15 * i), *cells]))
    csv = tmp_path / "GPU_UTIL.csv"
    csv.write_text("\n".join(lines) + "\n")
    with_duckdb = ChunkParser.with_duckdb
    monkeypatch.setattr(ChunkParser, "with_duckdb", None)  # pyarrow must read every chunk
    fast, _ = convert_to(csv, tmp_path / "pyarrow", chunk_bytes=200)
    monkeypatch.setattr(ChunkParser, "__call__", with_duckdb)
    slow, _ = convert_to(csv, tmp_path / "duckdb", chunk_bytes=200)
    assert fast == slow
    assert sorted_rows(tmp_path / "pyarrow").equals(sorted_rows(tmp_path / "duckdb"))
    empty = sum(cell in ("", '""') for cell in spellings)
    assert sum(m["rows"] for m in fast["months"].values()) == (len(spellings) - empty) * 16


def test_duckdb_reads_what_pyarrow_refuses(tmp_path) -> None:
    csv = tmp_path / "GPU_UTIL.csv"
    csv.write_text("Time,10.140.0.1-0\n2023-07-01 08:00:00+08:00,1_000.5\n")
    meta = convert.convert_wide(csv, tmp_path, "gpu", convert.Settings())
    assert meta["months"]["2023-07"]["rows"] == 1
    assert sorted_rows(tmp_path).column("value").to_pylist() == [1000.5]


def test_a_bad_cell_names_the_file_and_its_lines(tmp_path) -> None:
    rows = [f"{su.time_text(su.JULY_1 + 15 * i)},{i}" for i in range(300)]
    rows[200] = rows[200].replace(",200", ",abc")
    csv = tmp_path / "GPU_UTIL.csv"
    csv.write_text("\n".join(["Time,10.140.0.1-0", *rows]) + "\n")
    with pytest.raises(SchemaError, match=r"GPU_UTIL\.csv: DuckDB .* \(lines (\d+)-(\d+)\)") as e:
        convert.convert_wide(csv, tmp_path, "gpu", convert.Settings(chunk_bytes=1000))
    low, high = map(int, re.search(r"lines (\d+)-(\d+)", str(e.value)).groups())
    assert low <= 202 <= high  # line 1 is the header
    assert "Line: 202" in str(e.value), "DuckDB's line number is the file's, not the chunk's"


@pytest.mark.parametrize(
    ("time", "error"), [("2023-13-45 99:00:00+08:00", "DuckDB could not read"), ("", "empty Time")]
)
def test_a_bad_time_names_the_file_and_its_lines(tmp_path, time: str, error: str) -> None:
    rows = [f"{su.time_text(su.JULY_1 + 15 * i)},{i}" for i in range(300)]
    rows[250] = f"{time},250"
    csv = tmp_path / "GPU_UTIL.csv"
    csv.write_text("\n".join(["Time,10.140.0.1-0", *rows]) + "\n")
    with pytest.raises(SchemaError, match=rf"GPU_UTIL\.csv: .*{error}.*lines (\d+)-(\d+)") as e:
        convert.convert_wide(csv, tmp_path, "gpu", convert.Settings(chunk_bytes=1000))
    low, high = map(int, re.search(r"lines (\d+)-(\d+)", str(e.value)).groups())
    assert low <= 252 <= high


def test_a_failing_worker_leaves_nothing_half_written(repeats_csv, monkeypatch) -> None:
    import threading

    from mltraces.sources.acme.hub import HubFile

    csv, _ = repeats_csv
    real = convert.Unpivot.__call__

    def failing(self, chunk):
        if chunk.index == 7:
            raise MemoryError("worker died")
        return real(self, chunk)

    monkeypatch.setattr(convert.Unpivot, "__call__", failing)
    file = HubFile(f"{U}/kalos/GPU_UTIL.csv", csv.stat().st_size, "ab" * 32, None)
    settings = convert.Settings(threads=2, chunk_bytes=SMALL_CHUNKS)
    with pytest.raises(MemoryError, match="worker died"):
        convert.convert(file, csv, settings)
    assert not layout.converted_dir(file.sha256).exists()
    assert not list((layout.root() / "tmp").glob("convert-*")), "the work folder is gone"
    assert not [t for t in threading.enumerate() if t.name.startswith("pipeline-")]
    monkeypatch.setattr(convert.Unpivot, "__call__", real)
    assert (convert.convert(file, csv, settings) / "meta.json").is_file(), "a retry works"


def test_conversion_reports_progress_in_bytes(repeats_csv, tmp_path, monkeypatch) -> None:
    csv, _ = repeats_csv
    seen = []

    class Bar:
        n = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def update(self, step):
            self.n += step
            seen.append(self.n)

    monkeypatch.setattr(convert, "_progress_bar", lambda path: Bar())
    convert.convert_wide(csv, tmp_path, "gpu", convert.Settings(chunk_bytes=SMALL_CHUNKS))
    assert len(seen) > 10 and seen == sorted(seen) and seen[-1] == csv.stat().st_size


def test_progress_bar_only_on_a_terminal_or_when_asked(tmp_path) -> None:
    from mltraces.download import set_progress

    csv = tmp_path / "x.csv"
    csv.write_text("Time\n")
    with convert._progress_bar(csv) as bar:
        assert bar.disable, "stderr is not a terminal under pytest"
    set_progress(True)
    try:
        with convert._progress_bar(csv) as bar:
            assert not bar.disable and bar.total == csv.stat().st_size
    finally:
        set_progress(None)


def test_replace_dir_swaps_whole_folders(tmp_path: Path, isolated_cache) -> None:
    final, new = tmp_path / "month=2023-07", tmp_path / "new"
    final.mkdir()
    (final / "old.parquet").write_text("old")
    new.mkdir()
    (new / "new.parquet").write_text("new")
    layout.replace_dir(new, final)
    assert [p.name for p in final.iterdir()] == ["new.parquet"] and not new.exists()


# --------------------------------------------------------------------------- views & pruning


def files_read(con: duckdb.DuckDBPyConnection, query: str) -> int:
    """Parquet files DuckDB opened to answer ``query`` (from EXPLAIN ANALYZE)."""
    plan = con.execute("EXPLAIN ANALYZE " + query).fetchall()[0][1]
    return sum(int(n) for n in re.findall(r"Total Files Read: (\d+)", plan))


def test_filters_on_cluster_metric_and_time_prune_partitions(hub: su.FakeHub) -> None:
    fetch_util(["kalos", "seren"], "SM_ACTIVE,GPU_UTIL,GPU_TEMP")
    con = connection()
    total = len(list((layout.dataset_root() / "gpu_metrics").rglob("*.parquet")))
    assert total >= 8
    count = "SELECT count(*) FROM acme.gpu_metrics"
    assert files_read(con, count) == total
    sm = len(list((layout.dataset_root() / "gpu_metrics").rglob("metric=SM_ACTIVE/*/*.parquet")))
    assert files_read(con, f"{count} WHERE metric = 'SM_ACTIVE'") == sm
    kalos = len(list((layout.dataset_root() / "gpu_metrics").glob("cluster=kalos/*/*/*.parquet")))
    assert files_read(con, f"{count} WHERE cluster = 'kalos'") == kalos
    august = len(list((layout.dataset_root() / "gpu_metrics").rglob("month=2023-08/*.parquet")))
    assert 0 < august < total / 3, "only SM_ACTIVE has August data"
    assert files_read(con, f"{count} WHERE time >= '2023-08-01' AND time < '2023-09-01'") == august
    july = len(list((layout.dataset_root() / "gpu_metrics").rglob("month=2023-07/*.parquet")))
    assert files_read(con, f"{count} WHERE time BETWEEN '2023-07-02' AND '2023-07-03'") == july
    both = f"{count} WHERE metric = 'SM_ACTIVE' AND time >= '2023-06-25' AND time < '2023-06-26'"
    assert files_read(con, both) == 1
    assert con.execute(both).fetchone()[0] > 0


def test_views_exist_and_are_empty_before_any_fetch() -> None:
    con = connection()
    for table in layout.TABLES:
        assert con.execute(f"SELECT count(*) FROM acme.{table}").fetchone() == (0,)


@pytest.mark.parametrize("table", layout.TABLES)
def test_views_match_their_schema_files(table: str) -> None:
    schema = json.loads((ROOT / "schemas" / "acme" / f"{table}.json").read_text())
    con = connection()
    described = con.sql(f"SELECT column_name, column_type FROM (DESCRIBE acme.{table})").fetchall()
    duck = {
        "string": "VARCHAR",
        "integer": "BIGINT",
        "number": "DOUBLE",
        "datetime": "TIMESTAMP WITH TIME ZONE",
    }
    assert described == [(f["name"], duck[f["type"]]) for f in schema["fields"]]
    assert all(f["description"] for f in schema["fields"])
    assert set(schema["primaryKey"]) <= {f["name"] for f in schema["fields"]}


def test_hourly_mean_per_node_is_one_query(hub: su.FakeHub, data: Data) -> None:
    fetch_util("seren", "GPU_UTIL")
    got = (
        connection()
        .sql(
            "SELECT node, date_trunc('hour', time) AS hour, avg(value) AS mean "
            "FROM acme.gpu_metrics WHERE cluster = 'seren' AND metric = 'GPU_UTIL' "
            "AND time >= '2023-07-01' AND time < '2023-08-01' GROUP BY ALL ORDER BY ALL"
        )
        .fetchnumpy()
    )
    t = data.gpu_util
    first_hour = (t.epochs >= su.JULY_1) & (t.epochs < su.JULY_1 + 3600)
    node0 = [i for i, c in enumerate(t.columns) if c.startswith("10.140.0.1-")]
    expected = np.nanmean(t.values[np.ix_(first_hour, node0)])
    assert got["node"][0] == "10.140.0.1"
    assert got["mean"][0] == pytest.approx(expected)


def test_floor_time_equals_date_trunc_in_utc(hub: su.FakeHub) -> None:
    fetch_util("seren", "GPU_UTIL")
    con = connection()
    differ = con.execute(
        "SELECT count(*) FROM acme.gpu_metrics WHERE acme.floor_time(time, 3600) "
        "<> date_trunc('hour', time) OR acme.floor_time(time, 86400) <> date_trunc('day', time)"
    ).fetchone()[0]
    assert differ == 0


def test_converted_tables_pass_their_schema_checks(hub: su.FakeHub) -> None:
    from mltraces.catalog.validation import failed, validate

    fetch_util()
    report = validate([f"acme.{t}" for t in layout.TABLES])
    assert not failed(report)
    findings = report[report.failing_rows.fillna(0) > 0]
    assert findings.empty, findings[["table", "rule", "examples"]].to_string()
    checked = report.groupby("table").checked_rows.max()
    assert (checked > 0).all() and len(checked) == 3


# --------------------------------------------------------------------------- pipeline


def test_pipeline_hands_worker_errors_to_the_caller() -> None:
    from mltraces.sources.acme.util.pipeline import Pipeline

    def source():
        yield from range(3)
        raise SchemaError("bad row")

    with pytest.raises(SchemaError, match="bad row"), Pipeline(source(), lambda x: x) as items:
        assert list(items) == [0, 1, 2]
    with pytest.raises(ZeroDivisionError), Pipeline(iter([1, 0]), lambda x: 1 / x) as items:
        list(items)


def test_pipeline_stops_and_closes_its_source_when_left_early() -> None:
    from mltraces.sources.acme.util.pipeline import Pipeline

    closed = []

    def source():
        try:
            yield from range(10_000)
        finally:
            closed.append(True)

    with Pipeline(source(), lambda x: x, depth=1) as items:
        for item in items:
            if item == 3:
                break
    assert closed == [True]
    assert not any(t.is_alive() for t in items.threads)


def test_pipeline_workers_keep_the_source_order() -> None:
    import random
    import time

    from mltraces.sources.acme.util.pipeline import Pipeline

    def slow_square(x: int) -> int:
        time.sleep(random.random() / 200)
        return x * x

    with Pipeline(iter(range(200)), slow_square, depth=3, workers=4) as items:
        assert list(items) == [x * x for x in range(200)]


def test_pipeline_bounds_the_items_in_flight() -> None:
    import threading

    from mltraces.sources.acme.util.pipeline import Pipeline

    taken, lock, peak = [0], threading.Lock(), [0]

    def source():
        for i in range(100):
            with lock:
                taken[0] += 1
            yield i

    def count_out(x: int) -> int:
        return x

    with Pipeline(source(), count_out, depth=2, workers=3) as items:
        for done, _ in enumerate(items, 1):
            with lock:
                peak[0] = max(peak[0], taken[0] - done)
    assert peak[0] <= 3 + 2


def test_pipeline_raises_a_worker_error_in_order() -> None:
    from mltraces.sources.acme.util.pipeline import Pipeline

    got = []
    with (
        pytest.raises(ZeroDivisionError),
        Pipeline(iter([1, 2, 0, 4]), lambda x: 1 / x, workers=3) as items,
    ):
        for item in items:
            got.append(item)
    assert got == [1.0, 0.5], "items before the failing one are handed over first"


# --------------------------------------------------------------------------- CDF


def test_cdf_matches_an_independent_numpy_computation(hub: su.FakeHub, data: Data) -> None:
    fetch_util("kalos", "SM_ACTIVE")
    x, y = cdf.util_cdf_from_long(connection(), "kalos", "SM_ACTIVE")
    values = data.sm_active.values[~np.isnan(data.sm_active.values)]
    expected = np.quantile(values, np.linspace(0, 1, 1000))
    assert x.dtype == np.float64 and x.shape == (1000,) and y.shape == (1000,)
    np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y, np.linspace(0, 100, 1000))


def test_cdf_time_window_and_scale(hub: su.FakeHub, data: Data) -> None:
    fetch_util("seren", "GPU_UTIL")
    con = connection()
    x, _ = cdf.util_cdf_from_long(con, "seren", "GPU_UTIL", since="2023-07-01", scale=0.5)
    t = data.gpu_util
    values = t.values[t.epochs >= su.JULY_1]
    expected = np.quantile(values[~np.isnan(values)], np.linspace(0, 1, 1000)) * 0.5
    np.testing.assert_allclose(x, expected, rtol=1e-12)
    with pytest.raises(ValueError, match=r"mltraces fetch acme-util --cluster seren"):
        cdf.util_cdf_from_long(con, "seren", "GPU_UTIL", since="2024-01-01")


@pytest.mark.parametrize("seed", range(5))
def test_quantiles_from_counts_equal_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sample = np.round(rng.gamma(2.0, 10.0, size=rng.integers(1, 5000)), 1)
    values, counts = np.unique(sample, return_counts=True)
    p = np.linspace(0, 1, 1000)
    got = cdf.quantiles_from_counts(values, counts, p)
    np.testing.assert_allclose(got, np.quantile(sample, p), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- CLI


def test_cli_fetch_acme_util(hub: su.FakeHub, capsys) -> None:
    argv = [
        "fetch",
        "acme-util",
        "--cluster",
        "kalos",
        "--metric",
        "SM_ACTIVE",
        "--since",
        "2023-07-01",
        "--until",
        "2023-07-31",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "[1/1] data/utilization/kalos/SM_ACTIVE-2023-07.csv" in captured.err
    assert f"MLTRACES_HF_REVISION={su.COMMIT}" in captured.out
    assert f"Parquet dataset: {layout.dataset_root()}" in captured.out
    assert main(["list", "acme-util"]) == 0
    assert "cached+converted" in capsys.readouterr().out


def test_cli_util_options_need_acme_util(capsys) -> None:
    assert main(["fetch", "itp", "--cluster", "seren"]) == 1
    assert "--cluster only apply to `mltraces fetch acme-util`" in capsys.readouterr().err
