"""mltraces.requests: every mapped request table in one schema, its mappings, its rules.

The real request traces here (Azure 2023, Mooncake conversation and synthetic, GenTD26,
ServeGen's DeepSeek-R1 and Qwen-VL clients) are fetched from a loopback mirror of
../shared/upstream, verified, validated and counted in the view; the counts are the
sources' own expected rows (REQUESTS.md's observed counts).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, real_catalog, rows, scalar  # noqa: F401
from upstream_files import manifest_rows

from mltraces import registry
from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.download import fetch, verify_cached
from mltraces.errors import RegistryError
from mltraces.requestmap import (
    REQUESTS_TABLE,
    check_binds,
    load_mapping,
    request_tables,
    rule_names,
)
from mltraces.schema import get_schema

REQUEST_SOURCES = ("azure_llm", "mooncake", "burstgpt", "qwen_bailian", "alibaba_genai")
QUERY = ("SELECT trace, count(*), median(input_tokens), median(output_tokens) "
         "FROM mltraces.requests GROUP BY 1 ORDER BY 1")


def _real_request_tables(upstream: Path) -> list[str]:
    """Mapped request tables whose every file has a real copy in ``upstream``."""
    here = {row["url"] for row in manifest_rows(upstream)}
    return sorted(t for t in request_tables()
                  if all(registry.get_file(f).url in here for f in get_schema(t).file_ids))


# --------------------------------------------------------------------------- the mappings


def test_every_request_source_maps_its_tables_and_every_mapping_binds() -> None:
    mapped = request_tables()
    assert {t.source for t in mapped.values()} == set(REQUEST_SOURCES)
    for entry in mapped.values():
        check_binds(entry)
        assert entry.trace.startswith(entry.source + "/")
        assert get_schema(entry.table).schema_name == entry.source
    assert "arrival_within_window" in rule_names()
    assert "prefix_blocks_match_input" in rule_names()


def test_a_malformed_mapping_is_refused_naming_each_problem(tmp_path: Path) -> None:
    folder = tmp_path / "mooncake"
    folder.mkdir()
    raw = json.loads((registry.SOURCES_DIR / "mooncake" / "requests.json").read_text())
    entry = raw["tables"][0]
    cases = [
        ({**entry, "columns": {**entry["columns"], "tokens": "x"}}, "unknown columns"),
        ({**entry, "columns": {"arrival": "timestamp"}}, "lack"),
        ({**entry, "block_size": None}, "prefix_blocks and block_size come together"),
        ({**entry, "window": {"start_s": 5, "end_s": 1}}, "end_s must be after start_s"),
        ({**entry, "time": {"kind": "shifted", "origin": "2024-01-01 00:00:00+00:00"}},
         "shifted clock"),
        ({**entry, "warnings": {"no_such_rule": "why"}}, "name no common rule"),
        ({**entry, "trace": "other/conversation"}, "trace must be 'mooncake/NAME'"),
    ]
    for broken, problem in cases:
        (folder / "requests.json").write_text(json.dumps({"tables": [broken]}))
        with pytest.raises(RegistryError, match=problem):
            load_mapping(folder)


def test_a_mapping_that_reads_no_such_column_does_not_bind() -> None:
    entry = request_tables()["mooncake.conversation"]
    broken = entry.__class__(**{**entry.__dict__, "columns": {**entry.columns,
                                                              "input_tokens": "input_len"}})
    with pytest.raises(RegistryError, match="does not bind"):
        check_binds(broken)
    clock = entry.__class__(**{**entry.__dict__, "kind": "clock"})
    with pytest.raises(RegistryError, match="not a time"):
        check_binds(clock)


# --------------------------------------------------------------------------- real files


@pytest.fixture(scope="module")
def real_requests(real_catalog, upstream_server: str, upstream_dir: Path):  # noqa: F811
    """The real request tables and the view, over the session's catalog of the real files
    (its cache: nothing is fetched or converted again)."""
    tables = _real_request_tables(upstream_dir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(real_catalog.cache))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        patch.setenv("MLTRACES_SOURCES", "")
        with pytest.warns(Warning, match="mltraces.requests is partial"):
            con = connect(tables=[*tables, REQUESTS_TABLE], strict=True)
        yield con, tables, real_catalog.cache
    con.close()


def test_the_real_request_traces_here_are_the_ones_requests_md_lists(upstream_dir) -> None:
    assert _real_request_tables(upstream_dir) == [
        "alibaba_genai.lora_requests", "azure_llm.code_2023", "azure_llm.conv_2023",
        "mooncake.conversation", "mooncake.synthetic"]


def test_every_real_request_trace_is_in_the_view_with_its_published_count(real_requests
                                                                          ) -> None:
    con, tables, _ = real_requests
    counted = dict(rows(con, "SELECT trace, count(*) FROM mltraces.requests GROUP BY 1"))
    expected = {request_tables()[t].trace: registry.get_source(t.split(".")[0])
                .expected_rows[t] for t in tables}
    assert counted == expected
    assert counted == {"alibaba_genai/lora_requests": 26_823, "azure_llm/code_2023": 8_819,
                       "azure_llm/conv_2023": 19_366, "mooncake/conversation": 12_031,
                       "mooncake/synthetic": 3_993}


def test_the_view_holds_what_the_cards_say(real_requests) -> None:
    con, _, _ = real_requests
    # Azure 2023: observed medians (REQUESTS.md), instants read as UTC, seconds from the first
    medians = rows(con, "SELECT trace, median(input_tokens), median(output_tokens) FROM "
                   "mltraces.requests WHERE starts_with(trace, 'azure_llm') GROUP BY 1 ORDER BY 1")
    assert medians == [("azure_llm/code_2023", 1469.0, 13.0), ("azure_llm/conv_2023", 1020.0,
                                                                   129.0)]
    first = rows(con, "SELECT CAST(min(arrival_time) AS VARCHAR), min(arrival_s) FROM "
                 "mltraces.requests WHERE trace = 'azure_llm/code_2023'")
    assert first == [("2023-11-16 18:17:03.97996+00", 0.0)]
    # Mooncake: ms -> s from the trace's start, no instant, one id per 512-token block
    assert rows(con, "SELECT max(arrival_s), count(arrival_time), min(block_size), "
                "max(block_size), bool_and(len(prefix_blocks) = ceil(input_tokens / 512)) "
                "FROM mltraces.requests WHERE trace = 'mooncake/conversation'") == [
        (3536.999, 0, 512, 512, True)]
    averages = rows(con, "SELECT round(avg(input_tokens)), round(avg(output_tokens)) FROM "
                    "mltraces.requests WHERE trace = 'mooncake/conversation'")
    assert averages == [(12035.0, 343.0)]  # the README's averages
    # GenTD26: a shifted clock gives seconds but no instants; FAILED is failed
    assert rows(con, "SELECT count(arrival_time), min(arrival_s), count(input_tokens), "
                "sum(failed::INT), count(failed), count(latency_s) FROM mltraces.requests "
                "WHERE trace = 'alibaba_genai/lora_requests'") == [(0, 0.0, 0, 398, 26_790,
                                                                     26_823)]


def test_the_real_request_tables_fetch_verify_and_validate(real_requests) -> None:
    _, tables, cache = real_requests
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(cache))
        files = [registry.get_file(f) for t in tables for f in get_schema(t).file_ids]
        assert {r.status for r in verify_cached(files)} == {"ok"}
        report = validate(tables)
    assert not failed(report), report[report.failing_rows != 0].to_string()
    request_rules = report[report.rule.str.startswith("requests: ")]
    assert set(request_rules.table) == set(tables)
    assert (request_rules.checked_rows > 0).all()


def test_the_sql_command_answers_for_every_fetched_trace(real_requests, capsys) -> None:
    from mltraces.cli import main

    _, tables, cache = real_requests
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(cache))
        patch.setenv("MLTRACES_OFFLINE", "1")
        assert main(["sql", QUERY, "--format", "csv"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[0] == ("trace,count_star(),median(input_tokens),median(output_tokens)")
    answered = {line.split(",")[0] for line in lines[1:]}
    assert answered == {request_tables()[t].trace for t in tables}
    assert "azure_llm/code_2023,8819,1469.0,13.0" in lines
    # the traces not fetched are named, with the command that fetches them
    assert "mltraces.requests lacks" in captured.err and "mltraces fetch" in captured.err


def test_a_query_naming_a_missing_trace_is_refused_with_the_fetch_command(real_requests,
                                                                          capsys) -> None:
    from mltraces.cli import main

    con, _, cache = real_requests
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(cache))
        patch.setenv("MLTRACES_OFFLINE", "1")
        code = main(["sql", "SELECT count(*) FROM mltraces.requests WHERE trace = "
                     "'burstgpt/lfs_1'"])
    assert code == 1
    err = capsys.readouterr().err
    assert "burstgpt/lfs_1" in err and "mltraces fetch burstgpt" in err
    assert len(err.strip().splitlines()) == 1
    status = dict(rows(con, "SELECT table_name, state FROM mltraces.status"))
    assert status[REQUESTS_TABLE] == "partial"
    reason = scalar(con, "SELECT reason FROM mltraces.status WHERE table_name = "
                    "'mltraces.requests'")
    assert "qwen_bailian/coder" in reason and "mltraces fetch" in reason
    with pytest.raises(Exception, match="mltraces fetch qwen_bailian"):
        rows(con, "FROM mltraces.requests_of('qwen_bailian/coder')")
    with pytest.raises(Exception, match="no trace or source nope"):
        rows(con, "FROM mltraces.requests_of('nope')")
    assert scalar(con, "SELECT count(*) FROM mltraces.requests_of('mooncake/conversation')"
                  ) == 12_031
    with pytest.raises(Exception, match="mooncake/arxiv, mooncake/toolagent not fetched"):
        rows(con, "FROM mltraces.requests_of('mooncake')")  # a source lacking two traces


def test_the_view_validated_whole_checks_each_trace_window(real_requests) -> None:
    _, _, cache = real_requests
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(cache))
        report = validate([REQUESTS_TABLE])
    window = report[report.rule == "check arrival_within_window"]
    assert len(window) == 1 and int(window.failing_rows.iloc[0]) == 0


def test_an_arrival_outside_its_trace_window_is_named(tmp_path: Path, upstream_dir: Path
                                                      ) -> None:
    """Mooncake's conversation trace covers one hour: a request at 3,700 s breaks it."""
    source = next(upstream_dir.rglob("conversation_trace.jsonl"))
    lines = source.read_text().splitlines()
    late = json.loads(lines[5])
    late["timestamp"] = 3_700_000
    lines[5] = json.dumps(late)
    local = tmp_path / "conversation_trace.jsonl"
    local.write_text("\n".join(lines) + "\n")
    report = validate(["mooncake.conversation"], local={"mooncake.conversation": local})
    rule = report[report.rule == "requests: check arrival_within_window"]
    assert int(rule.failing_rows.iloc[0]) == 1
    assert rule.examples.iloc[0][0].startswith("conversation_trace.jsonl line 6:")
    assert failed(report)


def test_a_block_count_that_does_not_match_the_input_is_named(tmp_path: Path,
                                                              upstream_dir: Path) -> None:
    source = next(upstream_dir.rglob("synthetic_trace.jsonl"))
    lines = source.read_text().splitlines()
    short = json.loads(lines[9])
    short["hash_ids"] = short["hash_ids"][:-1]
    lines[9] = json.dumps(short)
    local = tmp_path / "synthetic_trace.jsonl"
    local.write_text("\n".join(lines) + "\n")
    report = validate(["mooncake.synthetic"], local={"mooncake.synthetic": local})
    rule = report[report.rule == "requests: check prefix_blocks_match_input"]
    assert int(rule.failing_rows.iloc[0]) == 1
    assert "synthetic_trace.jsonl line 10" in rule.examples.iloc[0][0]


def test_a_copied_request_source_joins_the_view_from_its_folder_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, upstream_dir: Path) -> None:
    """A user's request trace is a folder with a requests.json (no Python)."""
    folder = tmp_path / "sources" / "mytrace"
    (folder / "schemas").mkdir(parents=True)
    shutil.copy(next(upstream_dir.rglob("AzureLLMInferenceTrace_code.csv")),
                folder / "trace.csv")
    (folder / "citation.bib").write_text("@misc{mine, title={Mine}, year={2024}}")
    (folder / "source.json").write_text(json.dumps({
        "name": "mytrace", "title": "mine", "description": "", "homepage": "", "license": "MIT",
        "files": [{"path": "trace.csv"}]}))
    schema = json.loads((Path(get_schema("azure_llm.code_2023").path)).read_text())
    schema["name"] = "mytrace.requests"
    schema["mltraces"]["sources"] = [{"file": "mytrace/trace.csv"}]
    (folder / "schemas" / "requests.json").write_text(json.dumps(schema))
    mapping = json.loads((registry.SOURCES_DIR / "azure_llm" / "requests.json").read_text())
    entry = {**mapping["tables"][0], "table": "mytrace.requests", "trace": "mytrace/requests"}
    (folder / "requests.json").write_text(json.dumps({"tables": [entry]}))
    monkeypatch.setenv("MLTRACES_SOURCES", str(folder.parent))
    _clear_caches()
    try:
        with pytest.warns(Warning, match="partial"):
            con = connect(tables=["mytrace.requests", REQUESTS_TABLE])
        assert scalar(con, "SELECT count(*) FROM mltraces.requests_of('mytrace')") == 8_819
    finally:
        monkeypatch.setenv("MLTRACES_SOURCES", "")
        _clear_caches()


def _clear_caches() -> None:
    """The scanned registry, schemas, mappings and readers are cached per process."""
    from mltraces import schema, synthetic
    from mltraces.catalog import readers

    for cached in (registry._scanned, registry._loaded, schema.schema_files, schema._loaded,
                   request_tables, synthetic.writers, readers.source_readers):
        cached.cache_clear()


def test_every_requests_column_is_documented_with_a_unit_where_it_has_one() -> None:
    schema = get_schema(REQUESTS_TABLE)
    assert [f.name for f in schema.fields] == [
        "trace", "request_id", "session_id", "turn", "arrival_s", "arrival_time",
        "input_tokens", "output_tokens", "model", "kind", "image_count", "prefix_blocks",
        "block_size", "latency_s", "failed"]
    assert schema.field("prefix_blocks").duckdb_type == "BIGINT[]"
    for name in ("arrival_s", "input_tokens", "output_tokens", "block_size", "latency_s"):
        assert schema.field(name).unit
    assert all(re.search(r"\w", f.description) for f in schema.fields)


def test_fetching_a_source_fetches_its_request_files(http_mirror: str) -> None:
    paths = fetch("mooncake/conversation_trace.jsonl", "mooncake/README.md")
    assert set(paths) == {"mooncake/conversation_trace.jsonl", "mooncake/README.md"}


def test_a_list_field_names_its_item_type() -> None:
    from mltraces.errors import SchemaError
    from mltraces.schema import parse_schema

    def schema(**field: object) -> object:
        return parse_schema({"name": "x.y", "fields": [{"name": "ids", "description": "d",
                                                         **field}],
                             "mltraces": {"reader": "csv", "sources": [{"file": "x/y.csv"}]}})

    assert schema(type="list", itemType="integer").field("ids").duckdb_type == "BIGINT[]"
    assert schema(type="list", itemType="string").field("ids").duckdb_type == "VARCHAR[]"
    for wrong in ({"type": "list"}, {"type": "list", "itemType": "object"},
                  {"type": "integer", "itemType": "integer"}):
        with pytest.raises(SchemaError, match="itemType"):
            schema(**wrong)
