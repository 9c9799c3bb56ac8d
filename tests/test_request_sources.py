"""The request-trace files absent here, served from a loopback mirror of synthetic files in
their exact upstream formats: fetched, verified, converted, validated and counted in
mltraces.requests (each source's synthetic.py says what its writers produce)."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, rows, scalar  # noqa: F401
from synthetic_sources import served

from mltraces import registry
from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.download import fetch, verify_cached
from mltraces.errors import PartialViewWarning
from mltraces.requestmap import REQUESTS_TABLE, request_tables
from mltraces.schema import get_schema

#: request sources whose synthetic module says what its writers produce
SYNTHETIC = sorted(name for name in registry.all_sources()
                   if hasattr(registry.source_module(name, "synthetic"), "expected_tables"))
ROWS = 120


def test_every_request_source_with_files_absent_here_writes_them() -> None:
    assert SYNTHETIC == ["azure_llm", "burstgpt", "mooncake", "qwen_bailian", "servegen"]


def _cases() -> list:
    """One case per source; ServeGen's 628 language files: its smallest model in the default
    run, every model among the slow tests."""
    cases = []
    for name in SYNTHETIC:
        tables = registry.source_module(name, "synthetic").expected_tables(ROWS)
        if name == "servegen":
            small = {t: n for t, n in tables.items() if "m_small" in t}
            cases.append(pytest.param(name, small, id="servegen-m_small"))
            cases.append(pytest.param(name, tables, id="servegen", marks=pytest.mark.slow))
        else:
            cases.append(pytest.param(name, tables, id=name))
    return cases


@pytest.mark.parametrize(("name", "tables"), _cases())
def test_a_synthetic_request_source_fetches_verifies_validates_and_joins_the_view(
        name: str, tables: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = sorted({f for t in tables for f in get_schema(t).file_ids})
    mapped = {t: e.trace for t, e in request_tables().items() if t in tables}
    with serving(tmp_path / "mirror", ids, monkeypatch, expected=tables):
        paths = fetch(*ids, progress=False)
        assert set(paths) == set(ids)
        files = [registry.get_file(i) for i in ids]
        assert {r.status for r in verify_cached(files)} == {"ok"}
        report = validate(sorted(tables))
        assert not failed(report), report[report.failing_rows != 0].to_string()
        assert set(report.table) == set(tables)
        named = [*tables, *([REQUESTS_TABLE] if mapped else [])]
        with warnings.catch_warnings():  # the view lacks the traces of the real files
            warnings.simplefilter("ignore", PartialViewWarning)
            con = connect(tables=named, strict=True)
    counted = {t: scalar(con, f"SELECT count(*) FROM {get_schema(t).qualified}") for t in tables}
    assert counted == tables
    if not mapped:
        return
    in_view = dict(rows(con, "SELECT trace, count(*) FROM mltraces.requests GROUP BY 1"))
    assert in_view == {mapped[t]: n for t, n in tables.items() if t in mapped}
    answered = rows(con, "SELECT trace, count(*), median(input_tokens), "
                    "median(output_tokens) FROM mltraces.requests GROUP BY 1")
    assert {r[0] for r in answered} == set(mapped.values())


@contextmanager
def serving(root: Path, ids: list[str], monkeypatch: pytest.MonkeyPatch, *,
            expected: dict[str, int]) -> Iterator[None]:
    """Serve synthetic copies of ``ids`` over loopback, the registry re-pinned to them and
    the tables' expected rows the synthetic ones."""
    from conftest import serve_directory

    from mltraces import synthetic

    sources = synthetic.synthetic_mirror(root, ids, seed=5, rows=ROWS)
    for name in {t.split(".")[0] for t in expected}:
        kept = {t: n for t, n in sources[name].expected_rows.items() if t not in expected}
        mine = {t: n for t, n in expected.items() if t.startswith(name + ".")}
        sources[name] = dataclasses.replace(sources[name], expected_rows={**kept, **mine})
    url, server = serve_directory(root)
    monkeypatch.setenv("MLTRACES_MIRROR", url)
    registry.set_override(sources)
    try:
        yield
    finally:
        registry.set_override(None)
        server.shutdown()
        server.server_close()


def test_the_synthetic_burstgpt_clock_and_failures_map_as_the_card_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = {"burstgpt.release_1": ROWS, "burstgpt.lfs_without_fails_1": ROWS}
    with served(tmp_path / "mirror", ["burstgpt"], monkeypatch, rows=ROWS, seed=2,
                expected=tables):
        con = connect(tables=[*tables, REQUESTS_TABLE])
    release = rows(con, "SELECT count(arrival_time), count(session_id) > 0, "
                   "count(latency_s), bool_or(failed), min(arrival_s) >= 0 FROM "
                   "mltraces.requests WHERE trace = 'burstgpt/release_1'")
    assert release == [(0, True, ROWS, True, True)]
    sessions = rows(con, "SELECT DISTINCT kind FROM mltraces.requests WHERE trace = "
                    "'burstgpt/release_1' AND session_id IS NOT NULL")
    assert sessions == [("Conversation log",)]  # API requests have no session
    assert scalar(con, "SELECT bool_or(failed) FROM mltraces.requests WHERE trace = "
                  "'burstgpt/lfs_without_fails_1'") is False
