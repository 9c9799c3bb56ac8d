"""``mltraces.requests`` reads materialised parts as ``mltraces.jobs`` does (:mod:`.unions`):
the same rows as its mappings give, in order; a changed input rebuilds only its own part.

Azure's 2024 weeks are synthetic here (their files are absent), written in the upstream
format; Azure's 2023 coding hour is the real file, whose clock declares no origin, so its
part is built with the first arrival found once (the view's SQL scans for it).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import duckdb
import pytest
from catalog_fixtures import rows, scalar

from mltraces import registry, requestmap
from mltraces.catalog import connect, store
from mltraces.schema import get_schema
from mltraces.sources.azure_llm import synthetic

CODE_2024, CONV_2024, CODE_2023 = ("azure_llm.code_2024", "azure_llm.conv_2024",
                                   "azure_llm.code_2023")
pytestmark = pytest.mark.filterwarnings("ignore::mltraces.errors.PartialViewWarning")


def _upstream_copy(upstream: Path, table: str) -> Path:
    [file_id] = get_schema(table).file_ids
    url = urlparse(registry.get_file(file_id).url)
    return upstream / url.netloc / url.path.lstrip("/")


@pytest.fixture
def azure_files(tmp_path: Path, upstream_dir: Path) -> dict[str, Path]:
    return {CODE_2024: synthetic.write_code_week(tmp_path / "code.csv", 400, seed=1),
            CONV_2024: synthetic.write_conv_week(tmp_path / "conv.csv", 300, seed=2),
            CODE_2023: _upstream_copy(upstream_dir, CODE_2023)}


def _connect(local: dict[str, Path]) -> duckdb.DuckDBPyConnection:
    return connect(["mltraces.requests", *local], local=local)


def _parts() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in store.tables_dir().glob("mltraces.requests@*.parquet"):
        found.setdefault(path.name.split("@")[1].split("-")[0], []).append(path)
    return {member: sorted(paths) for member, paths in found.items()}


def _mapped(tables: list[str]) -> str:
    """The view as it was before parts: each table read through its mapping, per query."""
    entries = sorted((requestmap.request_table(t) for t in tables), key=lambda e: e.trace)
    return " UNION ALL ".join(f"({requestmap.table_select_sql(e)})" for e in entries)


def test_the_requests_view_reads_parts_with_the_rows_the_mapping_gives(azure_files) -> None:
    con = _connect(azure_files)
    try:
        sql = scalar(con, "SELECT sql FROM duckdb_views() WHERE schema_name = 'mltraces' "
                          "AND view_name = 'requests'")
        for table in azure_files:
            assert f"mltraces.requests@{table}-local-" in sql
        assert set(_parts()) == set(azure_files)
        # row for row, in the same order: instants, seconds from the scanned origin, NULLs
        assert rows(con, "FROM mltraces.requests") == rows(con, _mapped(list(azure_files)))
        first = scalar(con, "SELECT min(arrival_s) FROM mltraces.requests_of("
                            "'azure_llm/code_2023')")
        assert first == 0.0
    finally:
        con.close()


def test_a_changed_request_file_rebuilds_only_its_own_part(azure_files, tmp_path) -> None:
    _connect(azure_files).close()
    first = _parts()
    other = synthetic.write_conv_week(tmp_path / "conv_2.csv", 250, seed=7)
    con = _connect({**azure_files, CONV_2024: other})
    try:
        now = _parts()
        assert now[CODE_2024] == first[CODE_2024] and now[CODE_2023] == first[CODE_2023]
        assert len(now[CONV_2024]) == 2 and first[CONV_2024][0] in now[CONV_2024]
        assert scalar(con, "SELECT count(*) FROM mltraces.requests_of('azure_llm/conv_2024')"
                      ) == 250
        assert rows(con, "FROM mltraces.requests") == rows(con, _mapped(list(azure_files)))
    finally:
        con.close()


def test_traces_never_fetched_take_no_place_among_the_builds(azure_files, monkeypatch) -> None:
    """The view names every mapped table: those never downloaded only say so, at once,
    instead of each waiting for a build worker (a warm connect meets one per such trace)."""
    from mltraces.catalog import connection

    pooled: list[str] = []
    real = connection._input_bytes
    monkeypatch.setattr(connection, "_input_bytes",
                        lambda setup: pooled.append(setup.schema.name) or real(setup))
    con = _connect(azure_files)
    try:
        assert sorted(pooled) == sorted(azure_files)  # the three given, none of the others
        status = dict(rows(con, "SELECT table_name, reason FROM mltraces.status"))
        assert "not fetched" in status["mooncake.conversation"]
    finally:
        con.close()


def test_a_file_pinned_without_its_size_is_ordered_by_its_size_in_the_cache(
        isolated_cache: Path) -> None:
    """Helios's zip is pinned by its git blob only: without its size in the cache, its
    build would be the last of the first build to start, and the longest tail."""
    from mltraces.catalog import connection
    from mltraces.download.paths import local_path

    setup = connection._Setup(get_schema("helios.jobs"), None, False)
    zipped = registry.get_file("helios/data.zip")
    assert zipped.size is None and connection._input_bytes(setup) == 0
    path = local_path(zipped)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\0" * 12_345)
    assert connection._input_bytes(setup) == 12_345
