"""Hostile request traces: each is one line naming the file and what is wrong, in bounded
memory, and leaves nothing half-written (no converted table, no partial Parquet)."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from catalog_fixtures import loopback_only, rows  # noqa: F401

from mltraces.catalog import connect, materialize
from mltraces.catalog.validation import failed, validate
from mltraces.errors import MltracesError
from mltraces.sources.servegen import generator, tables


def _tables_folder(cache: Path) -> list[Path]:
    """Every converted or half-converted file in the cache's tables folder."""
    folder = cache / "tables"
    return sorted(p for p in folder.rglob("*") if p.is_file() and ".lock" not in p.name
                  and p.parent.name not in (".readers", ".warm")) if folder.exists() else []


def _refused(table: str, local: Path, match: str, cache: Path) -> str:
    """Building ``table`` from ``local`` fails in one line matching ``match``; nothing kept."""
    with pytest.raises(MltracesError, match=match) as info:
        materialize(table, local)
    message = str(info.value)
    assert "\n" not in message, message
    assert _tables_folder(cache) == []
    return message


def _mooncake_line(**item: object) -> str:
    base = {"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [0, 1]}
    return json.dumps({**base, **item})


# --------------------------------------------------------------------------- ServeGen


def test_a_100_mb_dataset_json_of_nested_literals_is_refused_unread(
        tmp_path: Path, isolated_cache: Path) -> None:
    folder = tmp_path / "mm"
    folder.mkdir()
    for n in range(35):  # the table reads every client's file; one of them is the bomb
        (folder / f"chunk-{n}-dataset.json").write_text('{"0": {"output_tokens": "{1: 1.0}"}}')
    bomb = folder / "chunk-7-dataset.json"
    with bomb.open("w") as handle:
        handle.write('{"0": {"output_tokens": "')
        chunk = "{1: " * 262_144
        for _ in range(100):  # 100 MB of a nested Python literal inside the string
            handle.write(chunk)
        handle.write('"}}')
    assert bomb.stat().st_size > 100_000_000
    tracemalloc.start()
    started = time.perf_counter()
    message = _refused("servegen.mm_image_lengths", folder, "more than any ServeGen",
                       isolated_cache)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "chunk-7-dataset.json" in message and "refusing it unread" in message
    assert peak < 20_000_000 and time.perf_counter() - started < 20


def test_nesting_and_code_in_a_dataset_are_refused_before_and_without_evaluation(
        tmp_path: Path) -> None:
    names = frozenset({"input_tokens", "output_tokens"})
    deep = tmp_path / "deep.json"
    deep.write_bytes(b'{"0": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}")
    with pytest.raises(tables.TableError, match="nested more than 2 levels"):
        tables.read_dataset(deep, "deep.json", names)
    for text, problem in [
        ("{1: {2: 0.5}}", "not a flat table"),
        ("__import__('os').system('echo pwned')", "not a flat table"),
        ("{45: 0.5, 46: nan}", "not a flat table"),
        ("{45: 0.5, -46: 0.5}", "not a flat table"),
        ("{45: 1.5}", "probability above 1"),
        ("{45: 1e400}", "probability above 1 or not finite"),
        ("(45, 0.5)", "not a flat table"),
    ]:
        path = tmp_path / "one.json"
        path.write_text(json.dumps({"21600": {"input_tokens": text}}))
        with pytest.raises(tables.TableError, match=problem) as info:
            tables.read_dataset(path, "chunk-3-dataset.json", names)
        assert "chunk-3-dataset.json, window 21600, table input_tokens" in str(info.value)
    path.write_text(json.dumps({"0": {"tokens_of_doom": "{}"}}))
    with pytest.raises(tables.TableError, match="unknown table 'tokens_of_doom'"):
        tables.read_dataset(path, "x.json", names)


def test_the_generator_counts_requests_before_drawing_and_names_a_bad_window() -> None:
    windows = generator.Windows(np.array([0.0, 600.0]), np.array([1e9, 0.5]),
                                ["Gamma", "Weibull"], np.array([1.0, 1.0]),
                                np.array([1.0, 1.0]))
    sizes = {(0, "input_tokens"): (np.array([5.0]), np.array([1.0])),
             (0, "output_tokens"): (np.array([7.0]), np.array([1.0]))}
    assert generator._planned([windows], (0, 86_400)) == 600_000_000_300
    rng = np.random.default_rng(0)
    bad = windows._replace(rate=np.array([0.5, 0.5]), distribution=["Pareto", "Gamma"])
    with pytest.raises(generator.GenerationError, match="'Pareto'"):
        generator.sample(bad, sizes, rng)
    nan = windows._replace(rate=np.array([0.5, 0.5]), shape=np.array([np.nan, 1.0]))
    with pytest.raises(generator.GenerationError, match="positive parameters"):
        generator.sample(nan, sizes, rng)


# --------------------------------------------------------------------------- JSON lines


def test_a_mooncake_line_of_10_million_hash_ids_is_refused_after_a_bounded_read(
        tmp_path: Path, isolated_cache: Path) -> None:
    trace = tmp_path / "conversation_trace.jsonl"
    with trace.open("w") as handle:
        handle.write(_mooncake_line() + "\n")
        handle.write('{"timestamp": 5, "input_length": 6955, "output_length": 52, "hash_ids": [')
        block = ", ".join(["1234567"] * 100_000)
        for index in range(100):  # 10 M ids, ~90 MB
            handle.write(("" if index == 0 else ", ") + block)
        handle.write("]}\n")
        handle.write(_mooncake_line(timestamp=9) + "\n")
    tracemalloc.start()
    message = _refused("mooncake.conversation", trace, "justify", isolated_cache)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "conversation_trace.jsonl line 2" in message
    assert "input_length 6,955" in message and "512-token blocks" in message
    assert peak < 30_000_000


def test_more_ids_than_the_counts_justify_on_a_short_line_are_refused(
        tmp_path: Path, isolated_cache: Path) -> None:
    trace = tmp_path / "conversation_trace.jsonl"
    trace.write_text(_mooncake_line() + "\n" + _mooncake_line(hash_ids=list(range(40))) + "\n")
    message = _refused("mooncake.conversation", trace, "40 block ids where its token counts "
                       "justify at most 4", isolated_cache)
    assert "line 2" in message


@pytest.mark.parametrize(("text", "problem"), [
    ('{"timestamp": 0, "input_length": NaN, "output_length": 5, "hash_ids": []}',
     "NaN is not a number JSON allows"),
    ('{"timestamp": 0, "input_length": Infinity, "output_length": 5, "hash_ids": []}',
     "Infinity is not a number JSON allows"),
    ('{"timestamp": 0, "input_length": -1024, "output_length": 5, "hash_ids": []}',
     r"-1024 is not a token count \(>= 0\)"),
    ('{"timestamp": 0, "input_length": 1024.5, "output_length": 5, "hash_ids": [0, 1]}',
     "1024.5 is not a whole number"),
    ('{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [0, -1]}',
     "not a list of block ids"),
    ('{"timestamp": 0, "input_length": 1024, "hash_ids": [0, 1]}',
     "'output_length' is missing"),
    ('[1, 2, 3]', "not a JSON object"),
])
def test_negative_nan_and_malformed_token_counts_in_json_lines_are_refused(
        tmp_path: Path, isolated_cache: Path, text: str, problem: str) -> None:
    trace = tmp_path / "conversation_trace.jsonl"
    trace.write_text(_mooncake_line() + "\n" + text + "\n")
    message = _refused("mooncake.conversation", trace, problem, isolated_cache)
    assert "conversation_trace.jsonl line 2" in message


def test_a_qwen_line_with_a_nan_count_is_refused(tmp_path: Path, isolated_cache: Path) -> None:
    trace = tmp_path / "qwen_coder_blksz_16.jsonl"
    trace.write_text('{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 3,'
                     ' "output_length": NaN, "type": "text", "turn": 1, "hash_ids": [0]}\n')
    _refused("qwen_bailian.coder", trace, r"line 1: not valid JSON \(NaN is not a number",
             isolated_cache)


# --------------------------------------------------------------------------- CSV traces


AZURE_2023 = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def test_negative_token_counts_in_a_csv_trace_are_named_by_validate(tmp_path: Path) -> None:
    trace = tmp_path / "AzureLLMInferenceTrace_code.csv"
    trace.write_text(AZURE_2023 + "2023-11-16 18:17:03.9799600,4808,10\n"
                     "2023-11-16 18:17:04.0319600,-3180,8\n")
    report = validate(["azure_llm.code_2023"], local={"azure_llm.code_2023": trace})
    assert failed(report)
    rule = report[report.rule == "requests: input_tokens: minimum 0"]
    assert int(rule.failing_rows.iloc[0]) == 1
    assert rule.examples.iloc[0][0].startswith("AzureLLMInferenceTrace_code.csv line 3:")


def test_a_nan_token_count_in_a_csv_trace_is_refused_naming_its_line(
        tmp_path: Path, isolated_cache: Path) -> None:
    trace = tmp_path / "AzureLLMInferenceTrace_conv.csv"
    trace.write_text(AZURE_2023 + "2023-11-16 18:15:46.6805900,374,44\n"
                     "2023-11-16 18:15:50.9951690,NaN,109\n")
    message = _refused("azure_llm.conv_2023", trace, "line 3, column ContextTokens",
                       isolated_cache)
    assert '"NaN" is not a whole number' in message


@pytest.mark.parametrize("zoned", ["2023-11-16 18:17:04.0319600+08:00", "2023-11-16 18:17+08",
                                   "2023-11-16 18:17:04Z", "2023-11-16 18:17:04 UTC",
                                   "2023-11-16 18:17:04+0800", "2023-11-16 18:17:04 CST"])
def test_a_naive_clock_column_with_a_zone_in_it_is_refused(tmp_path: Path,
                                                           isolated_cache: Path, zoned) -> None:
    """Azure 2023 writes no zone: a row that says +08:00 would silently lose it (the plain
    19-character form skips the zone's regex: these are not of it)."""
    trace = tmp_path / "AzureLLMInferenceTrace_code.csv"
    trace.write_text(AZURE_2023 + "2023-11-16 18:17:03,4808,10\n"
                     f"{zoned},3180,8\n"
                     "2023-11-16 18:17:05.0319600,3180,8\n")
    message = _refused("azure_llm.code_2023", trace, "line 3, column TIMESTAMP", isolated_cache)
    assert "carries a UTC offset or zone" in message


def test_a_zoned_clock_column_with_a_naive_time_in_it_is_refused(tmp_path: Path,
                                                                 isolated_cache: Path) -> None:
    trace = tmp_path / "AzureLLMInferenceTrace_code_1week.csv"
    trace.write_text(AZURE_2023 + "2024-05-10 00:00:00.009930+00:00,2162,5\n"
                     "2024-05-10 00:00:00.017335,2399,6\n"
                     "2024-05-10 00:00:01+00:00,76,15\n")
    message = _refused("azure_llm.code_2024", trace, "line 3, column TIMESTAMP", isolated_cache)
    assert "not a time with a UTC offset" in message


def test_mixed_offsets_of_a_zoned_column_are_instants(tmp_path: Path) -> None:
    """Times that all carry an offset are unambiguous instants, whatever the offsets."""
    trace = tmp_path / "AzureLLMInferenceTrace_code_1week.csv"
    trace.write_text(AZURE_2023 + "2024-05-10 00:00:00+00:00,2162,5\n"
                     "2024-05-10 08:00:01+08:00,2399,6\n")
    con = connect(["azure_llm.code_2024"], local={"azure_llm.code_2024": trace}, strict=True)
    assert rows(con, "SELECT epoch(TIMESTAMP) FROM azure_llm.code_2024") == [
        (1715299200.0,), (1715299201.0,)]


def test_a_gzip_trace_that_decompresses_past_the_limit_is_refused(
        tmp_path: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "AzureLMMInferenceTrace_multimodal.csv.gz"
    with gzip.open(trace, "wt") as handle:
        handle.write("TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n")
        handle.write("2024-10-15T12:00:00.269Z,0,770,491\n" * 200_000)
    monkeypatch.setenv("MLTRACES_MAX_UNPACKED", "1M")
    message = _refused("azure_llm.multimodal_2025", trace, "decompresses to more than",
                       isolated_cache)
    assert "MLTRACES_MAX_UNPACKED" in message and "gzip" in message
