"""Every source whose files are absent here, fetched from a loopback mirror of synthetic files
in the exact upstream formats: verified, converted, validated, counted per table and cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic_sources import served, written_ids

from mltraces import registry
from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.download import fetch, verify_cached
from mltraces.schema import all_schemas, get_schema

#: sources with a synthetic module that says what its writers produce (expected())
SYNTHETIC = sorted(name for name in registry.all_sources()
                   if hasattr(registry.source_module(name, "synthetic"), "expected"))


def test_the_sources_absent_here_say_what_their_writers_produce() -> None:
    assert {"alibaba_pai", "helios", "philly"} <= set(SYNTHETIC)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_a_synthetic_source_fetches_verifies_validates_and_joins_the_jobs_view(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = registry.source_module(name, "synthetic")
    tables, clusters = module.expected(400, seed=3)
    own = sorted(t for t, s in all_schemas().items() if s.schema_name == name)
    with served(tmp_path / "mirror", [name], monkeypatch, rows=400, seed=3, expected=tables):
        files = registry.get_source(name).files
        paths = fetch(name)
        assert set(paths) == {f.id for f in files}
        assert {r.status for r in verify_cached(files)} == {"ok"}
        assert set(written_ids(name)) == {f.id for f in files if f.id in paths}
        report = validate(own)
        assert not failed(report), report[report.failing_rows != 0].to_string()
        assert set(report.table) == set(own)
        con = connect(tables=[*own, "mltraces.jobs"], strict=True)
    counted = {t: scalar(con, f"SELECT count(*) FROM {get_schema(t).qualified}") for t in tables}
    assert counted == tables
    per_cluster = rows(con, "SELECT cluster, count(*) FROM mltraces.jobs WHERE "
                       f"starts_with(trace, '{name}/') GROUP BY 1")
    assert dict(per_cluster) == clusters
