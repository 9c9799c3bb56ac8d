"""Remembered warm builds: served only while everything they were derived from is unchanged."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from fakes import synthetic_file

from mltraces.catalog import build, connect, materialize, warm
from mltraces.schema import get_schema

TABLE = "zeus.power"


@pytest.fixture
def remembered(dir_mirror: Path) -> dict:
    """``zeus.power`` built and connected once: its warm record, as saved."""
    connect(tables=[TABLE]).close()
    return json.loads(warm.warm_path(TABLE).read_text())


def _no_full_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail("the full build path ran")

    monkeypatch.setattr(build, "materialize", refuse)


def test_a_warm_connect_recalls_what_materialize_decides(remembered, monkeypatch) -> None:
    schema = get_schema(TABLE)
    assert warm.recall(schema) == materialize(schema)
    _no_full_path(monkeypatch)
    con = connect(tables=[TABLE])
    assert con.execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (1_609,)
    assert con.execute("SELECT state FROM mltraces.status").fetchall() == [("ready",)]


def _cache_files(remembered: dict, cache: Path) -> list[str]:
    return [path for path, _ in remembered["files"] if Path(path).is_relative_to(cache)]


def test_every_cache_file_it_came_from_is_listed(remembered, isolated_cache) -> None:
    names = [Path(p).name for p in _cache_files(remembered, isolated_cache)]
    assert sum(n.endswith(".parquet") for n in names) == 1
    assert sum(n.endswith(".parquet.json") for n in names) == 1
    assert sum(n.endswith(".csv") for n in names) == 4
    assert sum(n.endswith(".csv.verified.json") for n in names) == 4
    listed = [Path(p).name for p, _ in remembered["files"]]
    assert listed.count("source.json") >= 4 and listed.count("citation.bib") >= 4


def test_any_changed_cache_file_is_not_trusted(remembered, isolated_cache) -> None:
    schema = get_schema(TABLE)
    for path in _cache_files(remembered, isolated_cache):
        os.utime(path)  # same bytes, new times: written again, as far as anyone can tell
        assert warm.recall(schema) is None, path
        connect(tables=[TABLE]).close()  # the full path checks everything and remembers again
        assert warm.recall(schema) == materialize(schema), path


def test_a_replaced_input_is_rebuilt_not_recalled(remembered, isolated_cache) -> None:
    schema = get_schema(TABLE)
    [csv] = [p for p in _cache_files(remembered, isolated_cache) if p.endswith("_v100.csv")]
    copy = Path(csv + ".copy")
    shutil.copy2(csv, copy)
    os.replace(copy, csv)  # another inode, the same size and mtime
    assert warm.recall(schema) is None
    con = connect(tables=[TABLE])
    assert con.execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (1_609,)


def test_a_removed_parquet_is_not_recalled(remembered) -> None:
    schema = get_schema(TABLE)
    Path(remembered["built"]["parquet"]).unlink()
    assert warm.recall(schema) is None
    assert connect(tables=[TABLE]).execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (1_609,)


def test_another_schema_or_code_is_not_recalled(remembered, monkeypatch, tmp_path) -> None:
    schema = get_schema(TABLE)
    assert warm.recall(dataclasses.replace(schema, digest="0" * 64)) is None
    package = tmp_path / "package"
    (package / "catalog").mkdir(parents=True)
    module = package / "catalog" / "build.py"
    module.write_text("CONVERTER_VERSION = 2\n")
    monkeypatch.setattr(warm, "_PACKAGE", package)
    before = warm.code_version("zeus")
    module.write_text("CONVERTER_VERSION = 3\n")
    assert warm.code_version("zeus") != before
    assert warm.recall(schema) is None  # the record was made by other code


def test_a_download_folder_swapped_for_a_link_is_not_recalled(remembered, isolated_cache,
                                                             tmp_path) -> None:
    [csv] = [p for p in _cache_files(remembered, isolated_cache) if p.endswith("_v100.csv")]
    folder = Path(csv).parent
    moved = tmp_path / "elsewhere"
    shutil.move(folder, moved)  # the files keep their inodes and times
    folder.symlink_to(moved, target_is_directory=True)
    assert warm.recall(get_schema(TABLE)) is None


def test_nothing_is_recalled_or_remembered_under_a_registry_override(remembered,
                                                                     demo_registry) -> None:
    schema = get_schema(TABLE)
    built = materialize(schema)
    demo_registry.add(synthetic_file("demo.csv", b"a\n1\n"))
    assert warm.recall(schema) is None
    warm.warm_path(TABLE).unlink()
    warm.remember(built)
    assert not warm.warm_path(TABLE).exists()


def test_local_tables_are_not_remembered(dir_mirror, upstream_dir, isolated_cache) -> None:
    connect(tables=["zeus.train"],
            local={"zeus.train": next(upstream_dir.rglob("summary_train.csv"))}).close()
    assert not warm.warm_path("zeus.train").exists()


def test_a_record_pointing_outside_the_cache_is_not_served(remembered, tmp_path) -> None:
    """A consistent record (identities updated) naming a Parquet file elsewhere: refused."""
    outside = tmp_path / "elsewhere.parquet"
    shutil.copy2(remembered["built"]["parquet"], outside)
    record = json.loads(json.dumps(remembered))
    record["built"]["parquet"] = str(outside)
    record["files"].append([str(outside), warm._identity(str(outside))])
    warm.warm_path(TABLE).write_text(json.dumps(record))
    assert warm.recall(get_schema(TABLE)) is None
    con = connect(tables=[TABLE])  # the full path decides, and the table is the cache's own
    [(path,)] = con.execute(
        "SELECT DISTINCT filename FROM read_parquet("
        f"'{warm.recall(get_schema(TABLE)).parquet}', filename = true)"
    ).fetchall()
    assert Path(path).resolve().is_relative_to(Path(warm.warm_path(TABLE)).parents[1].resolve())
