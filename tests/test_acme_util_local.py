"""AcmeTrace utilization from files a user already downloaded (``--local``).

Inputs are synthetic files in the Hub's formats (:mod:`synthetic_util`), laid
out as a git/huggingface_hub copy of the repository, a flat folder or single
files; the served rows are compared with the truth behind them cell by cell.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pytest
import synthetic_util as su

from mltraces.catalog import connect
from mltraces.cli import main
from mltraces.errors import MltracesError, SchemaError
from mltraces.sources.acme import hub as hub_module
from mltraces.sources.acme.util import layout
from mltraces.sources.acme.util import local as local_module

U = "data/utilization"
VIEWS = ("acme.gpu_metrics", "acme.node_metrics", "acme.ipmi_power")


# --------------------------------------------------------------------------- synthetic copies


class Truth:
    """Small synthetic files in the upstream formats, keyed by their Hub path."""

    def __init__(self, seed: int = 3) -> None:
        rng = np.random.default_rng(seed)
        self.gpu_util = su.wide_table(rng, su.gpu_columns(3), 40, start=su.JULY_1 - 20 * 15)
        self.gpu_temp = su.wide_table(rng, su.gpu_columns(2), 20)
        self.cpu = su.wide_table(rng, su.node_ips(4), 30, integer=False, empty=0.3)
        self.ipmi = su.ipmi_table(rng, 3, 10, no_memory=1)
        self.files = {
            f"{U}/seren/GPU_UTIL.csv": su.wide_csv_bytes(self.gpu_util),
            f"{U}/kalos/GPU_TEMP.csv": su.wide_csv_bytes(self.gpu_temp, "epoch"),
            f"{U}/seren/NODE_CPU_UTILIZATION.csv": su.wide_csv_bytes(self.cpu),
            f"{U}/ipmi/GPU_AB_Power.csv": su.ipmi_csv_bytes(self.ipmi),
        }

    def write_repo(self, root: Path) -> Path:
        """A clone of the dataset repository (git-lfs, or a mirror's copy)."""
        for path, data in self.files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        return root

    def write_hf_cache(self, root: Path, revision: str = su.COMMIT) -> Path:
        """A huggingface_hub cache folder: snapshot files are relative links into blobs/."""
        folder = root / "datasets--Qinghao--AcmeTrace"
        (folder / "blobs").mkdir(parents=True)
        for path, data in self.files.items():
            blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
            blob.write_bytes(data)
            link = folder / "snapshots" / revision / path
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
        return folder


@pytest.fixture(scope="module")
def truth() -> Truth:
    return Truth()


def open_local(local: dict[str, Path], strict: bool = True) -> duckdb.DuckDBPyConnection:
    return connect(tables=list(local), local=local, strict=strict)


def gpu_cells(con, cluster: str, metric: str) -> set:
    rows = con.execute(
        "SELECT epoch_us(time) // 1000000, node || '-' || gpu, value FROM acme.gpu_metrics "
        "WHERE cluster = ? AND metric = ?", [cluster, metric]).fetchall()
    assert len(rows) == len(set(rows)), "no cell is served twice"
    return set(rows)


def node_cells(con, cluster: str, metric: str) -> Counter:
    rows = con.execute(
        "SELECT epoch_us(time) // 1000000, node, value FROM acme.node_metrics "
        "WHERE cluster = ? AND metric = ?", [cluster, metric]).fetchall()
    return Counter(rows)


def status(con, table: str) -> tuple:
    return con.execute(
        'SELECT state, origin, reason FROM mltraces.status WHERE table_name = ?', [table]
    ).fetchone()


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The CSVs converted from here on, one entry per conversion."""
    seen: list[Path] = []
    real = local_module.convert_into

    def counting(area, key, file, csv_path, *args, **kwargs):
        seen.append(csv_path)
        return real(area, key, file, csv_path, *args, **kwargs)

    monkeypatch.setattr(local_module, "convert_into", counting)
    return seen


# --------------------------------------------------------------------------- layouts


def test_a_dataset_folder_serves_the_three_views(truth: Truth, tmp_path: Path) -> None:
    repo = truth.write_repo(tmp_path / "AcmeTrace")
    con = open_local(dict.fromkeys(VIEWS, repo))
    assert gpu_cells(con, "seren", "GPU_UTIL") == truth.gpu_util.cells()
    assert gpu_cells(con, "kalos", "GPU_TEMP") == truth.gpu_temp.cells()  # Unix seconds
    assert set(node_cells(con, "seren", "NODE_CPU_UTILIZATION")) == truth.cpu.cells()
    rows = con.execute("SELECT count(*), count(memory_power), min(server_group) "
                   "FROM acme.ipmi_power").fetchone()
    assert rows == (3 * 10, 2 * 10, "GPU_AB")
    for table in VIEWS:
        state, origin, reason = status(con, table)
        assert (state, origin.split(" (")[0]) == ("unverified", f"local: {repo}")
        assert "no cached Hub file list" in reason


def test_one_csv_a_cluster_folder_and_a_flat_folder(truth: Truth, tmp_path: Path) -> None:
    repo = truth.write_repo(tmp_path / "repo")
    flat = tmp_path / "downloads"
    flat.mkdir()
    (flat / "kalos_GPU_UTIL.csv").write_bytes(truth.files[f"{U}/seren/GPU_UTIL.csv"])
    (flat / "notes.csv").write_text("not,a,metric\n")  # ignored: not a utilization name
    for given, cluster in [(repo / U / "seren" / "GPU_UTIL.csv", "seren"),
                           (repo / U / "seren", "seren"), (flat, "kalos")]:
        con = open_local({"acme.gpu_metrics": given})
        assert con.execute("SELECT DISTINCT cluster, metric FROM acme.gpu_metrics").fetchall() == [
            (cluster, "GPU_UTIL")]
        assert gpu_cells(con, cluster, "GPU_UTIL") == truth.gpu_util.cells()


def test_a_huggingface_hub_cache_folder_is_read_through_its_links(
    truth: Truth, tmp_path: Path
) -> None:
    cache = truth.write_hf_cache(tmp_path / "hf")
    snapshot = cache / "snapshots" / su.COMMIT
    for given in (cache, snapshot):
        con = open_local({"acme.gpu_metrics": given, "acme.ipmi_power": given})
        assert gpu_cells(con, "seren", "GPU_UTIL") == truth.gpu_util.cells()
        assert con.execute("SELECT count(*) FROM acme.ipmi_power").fetchone() == (30,)
    (cache / "snapshots" / "feedface").mkdir()  # a second revision: which one is meant?
    with pytest.raises(SchemaError, match=r"2 snapshots .*give one of them"):
        open_local({"acme.gpu_metrics": cache})


def test_mltraces_local_and_the_cli_take_a_folder(truth, tmp_path, monkeypatch, capsys) -> None:
    repo = truth.write_repo(tmp_path / "a,b [copy]")  # a comma and brackets: taken literally
    monkeypatch.setenv("MLTRACES_LOCAL", f"acme.node_metrics={repo}")
    con = connect(tables=["acme.node_metrics"], strict=True)
    assert set(node_cells(con, "seren", "NODE_CPU_UTILIZATION")) == truth.cpu.cells()
    monkeypatch.delenv("MLTRACES_LOCAL")
    query = "SELECT count(DISTINCT node) AS n FROM acme.gpu_metrics WHERE cluster = 'kalos'"
    assert main(["sql", "--local", f"acme.gpu_metrics={repo}", "--format", "csv", query]) == 0
    assert capsys.readouterr().out.split() == ["n", "2"]


# --------------------------------------------------------------------------- convert once


def test_a_second_connect_reuses_the_conversion(truth, tmp_path, conversions) -> None:
    repo = truth.write_repo(tmp_path / "repo")
    open_local({"acme.gpu_metrics": repo})
    assert sorted(p.name for p in conversions) == ["GPU_TEMP.csv", "GPU_UTIL.csv"]
    dataset = next((layout.root() / "local" / "parquet").iterdir())
    before = {p: p.stat().st_mtime_ns for p in dataset.rglob("*.parquet")}
    con = open_local({"acme.gpu_metrics": repo})
    assert len(conversions) == 2, "nothing converted again"
    assert {p: p.stat().st_mtime_ns for p in dataset.rglob("*.parquet")} == before
    assert gpu_cells(con, "seren", "GPU_UTIL") == truth.gpu_util.cells()


def test_a_changed_file_is_converted_again(truth, tmp_path, conversions) -> None:
    repo = truth.write_repo(tmp_path / "repo")
    open_local({"acme.gpu_metrics": repo})
    newer = su.wide_table(np.random.default_rng(99), su.gpu_columns(1), 5)
    csv = repo / U / "seren" / "GPU_UTIL.csv"
    csv.write_bytes(su.wide_csv_bytes(newer))
    con = open_local({"acme.gpu_metrics": repo})
    assert [p.name for p in conversions[2:]] == ["GPU_UTIL.csv"], "only the changed file"
    assert gpu_cells(con, "seren", "GPU_UTIL") == newer.cells()
    # same size, new mtime: converted again too (its contents cannot be assumed the same)
    os.utime(csv, ns=(csv.stat().st_atime_ns, csv.stat().st_mtime_ns + 10**9))
    open_local({"acme.gpu_metrics": repo})
    assert [p.name for p in conversions[3:]] == ["GPU_UTIL.csv"]
    converted = list((layout.root() / "local" / "converted").iterdir())
    assert len(converted) == 2, "earlier versions' conversions are removed"


def test_derived_data_never_outlives_its_input(truth, tmp_path) -> None:
    repo = truth.write_repo(tmp_path / "repo")
    con = open_local({"acme.gpu_metrics": repo})
    assert con.execute("SELECT count(DISTINCT metric) FROM acme.gpu_metrics").fetchone() == (2,)
    (repo / U / "kalos" / "GPU_TEMP.csv").unlink()
    con = open_local({"acme.gpu_metrics": repo})
    assert con.execute("SELECT DISTINCT metric FROM acme.gpu_metrics").fetchall() == [("GPU_UTIL",)]
    (repo / U / "seren" / "GPU_UTIL.csv").unlink()
    with pytest.raises(SchemaError, match=r"holds no CSV for acme.gpu_metrics"):
        open_local({"acme.gpu_metrics": repo})
    con = open_local({"acme.gpu_metrics": repo}, strict=False)
    assert status(con, "acme.gpu_metrics")[0] == "unavailable"
    with pytest.raises(duckdb.Error, match="holds no CSV"):
        con.execute("SELECT count(*) FROM acme.gpu_metrics").fetchall()


def test_the_cache_of_a_deleted_copy_is_removed(truth, tmp_path) -> None:
    kept, dropped = truth.write_repo(tmp_path / "kept"), truth.write_repo(tmp_path / "dropped")
    open_local({"acme.gpu_metrics": kept})
    open_local({"acme.gpu_metrics": dropped})
    local = layout.root() / "local"
    assert len(list((local / "parquet").iterdir())) == 2
    assert len(list((local / "converted").iterdir())) == 4  # per file: copies are not shared
    for path in sorted(dropped.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    dropped.rmdir()
    open_local({"acme.gpu_metrics": kept})
    assert [p.name.split("-")[0] for p in (local / "parquet").iterdir()] == ["kept"]
    assert len(list((local / "converted").iterdir())) == 2


def test_a_file_changing_while_converted_is_not_kept(truth, tmp_path, monkeypatch) -> None:
    repo = truth.write_repo(tmp_path / "repo")
    csv = repo / U / "seren" / "GPU_UTIL.csv"
    real = local_module.convert_into

    def rewriting(area, key, file, csv_path, *args, **kwargs):
        done = real(area, key, file, csv_path, *args, **kwargs)
        csv_path.write_bytes(csv_path.read_bytes() + csv_path.read_bytes().splitlines()[-1])
        return done

    monkeypatch.setattr(local_module, "convert_into", rewriting)
    with pytest.raises(MltracesError, match=r"GPU_UTIL.csv changed while it was being converted"):
        open_local({"acme.gpu_metrics": csv})
    assert not any((layout.root() / "local" / "converted").iterdir())


# --------------------------------------------------------------------------- verification


def cache_hub_listing(files: dict[str, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """List the repository once from a fake Hub, then take the Hub away."""
    fake = su.FakeHub(files=dict(files))
    for started in su.running(fake):
        monkeypatch.setenv("MLTRACES_MIRROR", started.url)
        hub_module.manifest()
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")  # verifying must not need the network


def test_files_matching_a_cached_listing_are_verified(truth, tmp_path, monkeypatch) -> None:
    cache_hub_listing(truth.files, monkeypatch)
    con = open_local(dict.fromkeys(VIEWS, truth.write_hf_cache(tmp_path / "hf")))
    for table in VIEWS:
        state, origin, reason = status(con, table)
        assert state == "ready" and reason is None
        assert f"verified against Qinghao/AcmeTrace@{su.COMMIT[:12]}" in origin


def test_a_file_differing_from_the_listing_is_unverified(truth, tmp_path, monkeypatch,
                                                         caplog) -> None:
    cache_hub_listing(truth.files, monkeypatch)
    repo = truth.write_repo(tmp_path / "repo")
    csv = repo / U / "seren" / "GPU_UTIL.csv"
    data = bytearray(csv.read_bytes())
    digit = max(data.rfind(str(d).encode()) for d in range(10))
    data[digit] = ord("0") + (data[digit] - ord("0") + 1) % 10  # same size, one value changed
    csv.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        con = open_local({"acme.gpu_metrics": repo, "acme.ipmi_power": repo})
    state, _, reason = status(con, "acme.gpu_metrics")
    assert state == "unverified"
    assert "1 of 2 verified" in reason and f"{csv} (sha256 " in reason
    assert f"is not the Hub's {U}/seren/GPU_UTIL.csv" in caplog.text
    assert status(con, "acme.ipmi_power")[0] == "ready"


def test_tables_answers_at_once_and_info_counts_the_local_rows(truth, tmp_path, monkeypatch,
                                                              capsys, conversions) -> None:
    cache_hub_listing(truth.files, monkeypatch)
    repo = truth.write_repo(tmp_path / "repo")
    args = ["--local", f"acme.gpu_metrics={repo}", "--local", f"acme.ipmi_power={tmp_path}"]
    assert main(["tables", "acme", *args]) == 0
    out = capsys.readouterr().out
    assert f"status: unverified, local: {repo} (2 file(s)): " in out
    assert "2 listed but not hashed yet" in out
    assert f"status: unavailable, local: {tmp_path}: {tmp_path} holds no CSV" in out
    assert conversions == [], "tables converts nothing"
    assert not (layout.root() / "local" / "hashes").exists(), "and hashes nothing"
    assert main(["info", "acme.gpu_metrics", *args[:2]]) == 0  # converts, hashes: verified
    rows = len(truth.gpu_util.cells()) + len(truth.gpu_temp.cells())
    assert f"Status: {rows:,} rows (local: {repo} (2023-06 to 2023-07; 2 file(s) verified" in (
        " ".join(capsys.readouterr().out.split()))
    assert main(["tables", "acme", *args[:2]]) == 0  # the hashes are known now
    assert f"status: ready, local: {repo} (2 file(s) verified" in capsys.readouterr().out


# --------------------------------------------------------------------------- hostile input


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p): None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


def test_odd_paths_stay_literal_and_everything_written_stays_in_the_cache(
    truth, tmp_path, isolated_cache
) -> None:
    odd = tmp_path / "in" / "we ird [1] *?, 'q\" ü"
    (odd / "seren").mkdir(parents=True)
    (odd / "seren" / "GPU_UTIL.csv").write_bytes(truth.files[f"{U}/seren/GPU_UTIL.csv"])
    (odd / "ipmi").mkdir()
    (odd / "ipmi" / "GPU_AB_Power.csv").write_bytes(truth.files[f"{U}/ipmi/GPU_AB_Power.csv"])
    # decoys the brackets and wildcards would match if the path were used as a pattern
    for decoy in ("we ird 1 x, 'q\" ü", "we ird 1 xy, 'q\" ü"):
        (tmp_path / "in" / decoy / "seren").mkdir(parents=True)
        (tmp_path / "in" / decoy / "seren" / "GPU_UTIL.csv").write_bytes(
            truth.files[f"{U}/kalos/GPU_TEMP.csv"])
        (tmp_path / "in" / decoy / "ipmi").mkdir()
        (tmp_path / "in" / decoy / "ipmi" / "GPU_AB_Power.csv").write_bytes(
            truth.files[f"{U}/ipmi/GPU_AB_Power.csv"])
    given = odd / "seren" / ".." / ".." / odd.name / "seren" / "GPU_UTIL.csv"
    before = _tree(tmp_path)
    con = open_local({"acme.gpu_metrics": given, "acme.ipmi_power": odd})
    assert gpu_cells(con, "seren", "GPU_UTIL") == truth.gpu_util.cells()
    assert con.execute("SELECT count(*) FROM acme.ipmi_power").fetchall() == [(30,)]
    assert _tree(tmp_path) == before, "the user's folder is left as it was"
    cache = isolated_cache.resolve()
    for path in cache.rglob("*"):
        assert path.resolve().is_relative_to(cache), path
        assert ".." not in path.relative_to(cache).parts


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("Time,10.140.0.1-0\n2023-07-01 08:00:00+08:00,1\n2023-07-01 08:00:15+08:00,abc\n",
         r"Line: 3: Could not convert string \"abc\" to 'DOUBLE' in column 2"),
        ("Time,10.140.0.1-0,gpu-x\n2023-07-01 08:00:00+08:00,1,2\n", r"'gpu-x'"),
        ("Time,10.140.0.1-0\nyesterday,1\n", r"Time value 'yesterday' is in no known format"),
    ],
)
def test_a_bad_csv_names_the_file_and_the_cell(tmp_path, body: str, error: str) -> None:
    csv = tmp_path / "seren" / "GPU_UTIL.csv"
    csv.parent.mkdir()
    csv.write_text(body)
    with pytest.raises(SchemaError, match=rf"^{csv}: .*{error}.*expected the Hub's wide layout"):
        open_local({"acme.gpu_metrics": tmp_path})
    assert not (layout.root() / "local" / "converted").exists() or not any(
        (layout.root() / "local" / "converted").iterdir()), "nothing half-converted is kept"


@pytest.mark.parametrize(
    ("name", "table", "error"),
    [
        ("downloads/GPU_UTIL.csv", "gpu_metrics",
         r"cannot tell its cluster.*folder named seren, kalos or ipmi.*seren_GPU_UTIL.csv"),
        ("seren/gpu util (1).csv", "gpu_metrics", r"not a utilization file name.*<METRIC>.csv"),
        ("seren/NODE_CPU_UTILIZATION.csv", "gpu_metrics",
         r"feeds acme.node_metrics, not acme.gpu_metrics.*--local acme.node_metrics="),
        ("kalos/seren_GPU_UTIL.csv", "gpu_metrics", r"folder says kalos but its name says seren"),
        ("seren/GPU_UTIL.csv", "ipmi_power", r"feeds acme.gpu_metrics"),
    ],
)
def test_a_name_that_maps_nowhere_says_how_to_name_it(tmp_path, name, table, error) -> None:
    csv = tmp_path / name
    csv.parent.mkdir()
    csv.write_text("Time,10.140.0.1-0\n2023-07-01 08:00:00+08:00,1\n")
    with pytest.raises(SchemaError, match=error):
        open_local({f"acme.{table}": csv})


def test_a_folder_without_files_for_the_view_lists_what_it_found(tmp_path) -> None:
    (tmp_path / "seren").mkdir()
    (tmp_path / "seren" / "NODE_CPU_UTILIZATION.csv").write_text("Time,10.140.0.1\n")
    with pytest.raises(SchemaError, match=r"holds no CSV for acme.gpu_metrics: expected DCGM.*"
                       r"found NODE_CPU_UTILIZATION.csv \(feeds acme.node_metrics\)"):
        open_local({"acme.gpu_metrics": tmp_path})


def test_git_lfs_pointer_files_are_refused_with_the_command(tmp_path) -> None:
    csv = tmp_path / U / "seren" / "GPU_UTIL.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 12\n")
    with pytest.raises(SchemaError, match=rf"pointer file.*git lfs pull --include \"{U}/seren"):
        open_local({"acme.gpu_metrics": tmp_path})


def test_a_verified_file_edited_in_place_is_no_longer_verified(truth, tmp_path,
                                                              monkeypatch) -> None:
    """Size and mtime restored after the edit: the hash stamp must not vouch for it (issue 24)."""
    cache_hub_listing(truth.files, monkeypatch)
    repo = truth.write_repo(tmp_path / "repo")
    con = open_local({"acme.gpu_metrics": repo})
    assert status(con, "acme.gpu_metrics")[0] == "ready"
    csv = repo / U / "seren" / "GPU_UTIL.csv"
    before = csv.stat()
    data = bytearray(csv.read_bytes())
    digit = max(data.rfind(str(d).encode()) for d in range(10))
    data[digit] = ord("0") + (data[digit] - ord("0") + 1) % 10
    with csv.open("r+b") as handle:  # same inode, same size
        handle.write(bytes(data))
    os.utime(csv, ns=(before.st_atime_ns, before.st_mtime_ns))
    con = open_local({"acme.gpu_metrics": repo})
    state, _, reason = status(con, "acme.gpu_metrics")
    assert state == "unverified" and f"{csv} (sha256 " in reason
