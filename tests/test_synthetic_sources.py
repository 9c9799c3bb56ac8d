"""Every source with a generator in its folder, fetched from a loopback mirror of synthetic
files in the exact upstream formats: verified, converted, validated, counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic_sources import generators, served, synthetic_source

from mltraces.catalog import connect
from mltraces.download import fetch, verify_cached
from mltraces.schema import all_schemas, get_schema
from mltraces.validation import failed, validate

GENERATED = sorted(generators())


def test_sources_with_absent_files_have_generators() -> None:
    assert {"alibaba-pai", "helios", "philly"} <= set(GENERATED)


@pytest.mark.parametrize("name", GENERATED)
def test_a_synthetic_source_fetches_verifies_and_validates(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, written = synthetic_source(name, tmp_path / "mirror", jobs=400, seed=3)
    tables = sorted(t for t, s in all_schemas().items() if s.schema_name == name)
    with served(tmp_path / "mirror", {name: source}, monkeypatch):
        paths = fetch(name)
        assert set(paths) == {f.id for f in source.files}
        assert {r.status for r in verify_cached(source.files)} == {"ok"}
        report = validate(tables)
        assert not failed(report), report[report.failing_rows != 0].to_string()
        assert set(report.table) == set(tables)
        con = connect(tables=[*tables, "mltraces.jobs"], strict=True)
        counted = {t: scalar(con, f"SELECT count(*) FROM {get_schema(t).qualified}")
                   for t in written.rows}
        assert counted == written.rows
        per_cluster = rows(con, "SELECT cluster, count(*) FROM mltraces.jobs WHERE "
                           f"starts_with(trace, '{name}/') GROUP BY 1")
        assert dict(per_cluster) == written.jobs
