"""`mltraces cache`: a request trace's prefix blocks, read from the catalog, replayed.

The Mooncake conversation trace comes from a loopback mirror of ../shared/upstream; the
independent side of each check reads the same file with :mod:`json` and hands the lists
to the engine (or to a plain dictionary LRU), so the catalog path (mapping, Arrow,
arrival order) is what is tested. Traces absent here (Qwen/Bailian's 16-token blocks)
are synthetic files in their exact format, given with ``--local``.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import OrderedDict
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only  # noqa: F401

from mltraces.cli import main
from mltraces.prefixcache import Plan, RequestBlocks, replay_trace

MOONCAKE = ("raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28"
            "/FAST25-release/traces/conversation_trace.jsonl")
CAPACITIES = [1000, 4000, 16000, 64000]


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module: the trace is fetched and converted once."""
    return tmp_path_factory.mktemp("cache-cli")


@pytest.fixture
def mirrored(http_mirror: str, warm_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MLTRACES_CACHE", str(warm_cache))
    return warm_cache


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _json_lines(path: Path) -> tuple[list[list[int]], list[int], list[int]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return ([r["hash_ids"] for r in rows], [r["input_length"] for r in rows],
            [r["timestamp"] for r in rows])


def _dict_lru(blocks: list[list[int]], tokens: list[int], size: int, capacity: int) -> list[int]:
    cache: OrderedDict[int, None] = OrderedDict()
    hits = prefix = reused = 0
    for ids, request_tokens in zip(blocks, tokens, strict=True):
        leading, k = True, 0
        for block in ids:
            if block in cache:
                cache.move_to_end(block)
                hits, k = hits + 1, k + leading
            else:
                leading = False
                if len(cache) >= capacity:
                    cache.popitem(last=False)
                cache[block] = None
        prefix += k
        reused += min(k * size, request_tokens)
    return [hits, prefix, reused]


@pytest.mark.upstream
def test_the_command_replays_the_catalog_trace_as_the_engine_replays_the_file(
        mirrored: Path, upstream_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--trace", "mooncake/conversation", "--capacity",
                        ",".join(map(str, CAPACITIES)), "--format", "csv")
    assert code == 0
    rows = _csv(out)
    blocks, tokens, _ = _json_lines(upstream_dir / MOONCAKE)
    expected = replay_trace(RequestBlocks.from_lists(blocks, tokens, 512),
                            Plan.checked(CAPACITIES, "all"))
    assert len(rows) == 4 * len(CAPACITIES)
    for row in rows:
        stats = expected.get(row["policy"], int(row["capacity"]))
        assert [int(row[c]) for c in ("requests", "blocks", "block_hits", "prefix_hit_blocks",
                                      "reused_tokens", "input_tokens")] == [
            stats.requests, stats.blocks, stats.block_hits, stats.prefix_hit_blocks,
            stats.reused_tokens, stats.input_tokens]
        assert int(row["capacity_tokens"]) == int(row["capacity"]) * 512
        if row["policy"] == "lru":  # and LRU as a plain dictionary has it
            assert [int(row["block_hits"]), int(row["prefix_hit_blocks"]),
                    int(row["reused_tokens"])] == _dict_lru(blocks, tokens, 512,
                                                            int(row["capacity"]))


@pytest.mark.upstream
def test_capacities_in_tokens_are_whole_blocks_and_json_says_what_was_replayed(
        mirrored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "cache.json"
    code, out, _ = _run(capsys, "--trace", "mooncake/conversation", "--capacity-tokens",
                        "3M,1024", "--capacity", "2k", "--policy", "lru,belady",
                        "--instances", "3", "--routing", "affinity", "--per-instance",
                        "--format", "json", "-o", str(target))
    assert code == 0 and out == ""
    report = json.loads(target.read_text())
    assert report["block_size"] == 512 and report["requests"] == 12_031
    assert report["instances"] == 3 and report["routing"] == "affinity"
    totals = [r for r in report["rows"] if r["instance"] is None]
    assert sorted({r["capacity"] for r in totals}) == [2, 2000, 3_000_000 // 512]
    assert {r["policy"] for r in totals} == {"lru", "belady"}
    per = [r for r in report["rows"] if r["instance"] is not None]
    assert len(per) == 3 * len(totals)
    for total in totals:  # the instances add up to the total
        mine = [r for r in per if (r["policy"], r["capacity"]) ==
                (total["policy"], total["capacity"])]
        assert sum(r["block_hits"] for r in mine) == total["block_hits"]
        assert sum(r["requests"] for r in mine) == 12_031


@pytest.mark.upstream
def test_the_table_names_the_trace_and_its_blocks(mirrored: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--trace", "mooncake/conversation", "--capacity", "8000",
                        "--policy", "fifo")
    assert code == 0
    head, columns, row = out.splitlines()[:3]
    assert head.startswith("mooncake/conversation: 12,031 requests, 288,500 blocks of 512 "
                           "tokens (182,790 distinct), 1 instance")
    assert columns.split()[:3] == ["policy", "blocks", "tokens"]
    assert row.split()[:3] == ["fifo", "8000", "4096000"]


def _qwen_file(folder: Path, shuffle: bool) -> tuple[Path, list[dict]]:
    """A trace in Qwen/Bailian's format (16-token blocks), its lines shuffled or in order."""
    from mltraces import synthetic

    path = synthetic.write_tables(folder, ["qwen_bailian.coder"], seed=3, rows=400)[
        "qwen_bailian.coder"]
    lines = path.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    if shuffle:
        random.Random(1).shuffle(lines)
        path.write_text("\n".join(lines) + "\n")
    return path, rows


def test_a_trace_out_of_arrival_order_is_replayed_in_arrival_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The catalog keeps a file's order; the replay puts requests by arrival (ties in the
    file's order), as the engine needs them."""
    path, rows = _qwen_file(tmp_path, shuffle=True)
    code, out, err = _run(capsys, "--trace", "qwen_bailian/coder", "--capacity", "50,400",
                          "--format", "csv", "--local", f"qwen_bailian.coder={path}")
    assert code == 0, err
    ordered = sorted(rows, key=lambda r: r["timestamp"])  # stable: ties keep the file's order
    assert len({r["timestamp"] for r in rows}) == len(rows)  # no ties to tell apart here
    expected = replay_trace(RequestBlocks.from_lists([r["hash_ids"] for r in ordered],
                                                     [r["input_length"] for r in ordered], 16),
                            Plan.checked([50, 400], "all"))
    for row in _csv(out):
        stats = expected.get(row["policy"], int(row["capacity"]))
        assert int(row["reused_tokens"]) == stats.reused_tokens
        assert int(row["block_hits"]) == stats.block_hits
        assert int(row["capacity_tokens"]) == int(row["capacity"]) * 16


def test_traces_with_prefix_blocks_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--list-traces")
    assert code == 0
    assert "mooncake/conversation" in out.split() and "qwen_bailian/coder" in out.split()
    assert "azure_llm/code_2023" not in out.split()


@pytest.mark.parametrize(("argv", "message"), [
    (["--trace", "azure_llm/code_2023", "--capacity", "10"],
     "gives no prefix blocks, so no prefix cache can be replayed on it; traces with prefix "
     "blocks: mooncake/arxiv"),
    (["--trace", "nope/nothing", "--capacity", "10"], "unknown request trace 'nope/nothing'"),
    (["--trace", "mooncake/conversation"], "needs --capacity BLOCKS or --capacity-tokens"),
    (["--capacity", "10"], "needs --trace SOURCE/NAME"),
    (["--trace", "mooncake/conversation", "--capacity", "10,12x"],
     "--capacity: '12x' is not a whole number"),
    (["--trace", "mooncake/conversation", "--capacity", "-5"], "--capacity: '-5' is not"),
    (["--trace", "mooncake/conversation", "--capacity", "1.5"], "'1.5' is not a whole number"),
    (["--trace", "mooncake/conversation", "--capacity", "99999999999G"], "at most 2**62"),
    (["--trace", "mooncake/conversation", "--capacity-tokens", "nan"],
     "--capacity-tokens: 'nan' is not"),
    (["--trace", "mooncake/conversation", "--capacity", "10", "--policy", "lru,mru"],
     "unknown policy 'mru'"),
    (["--trace", "mooncake/conversation", "--capacity", "10", "--instances", "0"],
     "instances: expected a positive integer, got 0"),
    (["--trace", "mooncake/conversation", "--capacity", "10", "--affinity-blocks", "-1"],
     "affinity_blocks: expected a positive integer"),
    (["--trace", "mooncake/conversation", "--capacity", ",".join(["1"] * 2000)],
     "more than 1024"),
])
def test_bad_arguments_are_one_line_before_any_work(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
        isolated_cache: Path) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not (isolated_cache / "files").exists()  # nothing was fetched


def test_an_output_that_cannot_be_written_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], isolated_cache: Path) -> None:
    code, _, err = _run(capsys, "--trace", "mooncake/conversation", "--capacity", "10",
                        "-o", str(tmp_path))
    assert code == 1 and "it is a folder" in err
    assert not (isolated_cache / "files").exists()


def test_a_file_line_without_blocks_is_named_by_the_reader(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _qwen_file(tmp_path, shuffle=False)
    lines = path.read_text().splitlines()
    broken = json.loads(lines[7])
    broken["hash_ids"] = None
    lines[7] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    code, _, err = _run(capsys, "--trace", "qwen_bailian/coder", "--capacity", "10",
                        "--local", f"qwen_bailian.coder={path}")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "line 8, column hash_ids" in err, err


def _qwen_like(rows: list[tuple]) -> object:
    """A connection whose qwen_bailian.coder is ``rows`` (the columns its mapping reads)."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE SCHEMA qwen_bailian")
    con.execute("CREATE TABLE qwen_bailian.coder (chat_id BIGINT, root_chat_id BIGINT, "
                "turn BIGINT, timestamp DOUBLE, input_length BIGINT, output_length BIGINT, "
                "type VARCHAR, hash_ids BIGINT[])")
    con.executemany("INSERT INTO qwen_bailian.coder VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return con


def test_read_blocks_sorts_by_arrival_keeping_ties_in_table_order() -> None:
    from mltraces.workloads.requests import read_blocks

    con = _qwen_like([(1, 1, 1, 2.0, 48, 1, "text", [7, 8, 9]),
                      (2, 2, 1, 1.0, 16, 1, "text", [5]),
                      (3, 3, 1, 1.0, 32, 1, "text", [5, 6])])
    read = read_blocks(con, "qwen_bailian/coder")
    assert read.sorted_by_arrival and read.block_size == 16
    assert read.blocks.ids.tolist() == [5, 5, 6, 7, 8, 9]
    assert read.blocks.offsets.tolist() == [0, 1, 3, 6]
    assert read.blocks.input_tokens.tolist() == [16, 32, 48]


@pytest.mark.parametrize(("column", "what"), [(7, "no prefix blocks"), (4, "no input tokens")])
def test_read_blocks_names_a_request_without_blocks_or_tokens(column: int, what: str) -> None:
    from mltraces.errors import MltracesError
    from mltraces.workloads.requests import read_blocks

    broken = [2, 2, 1, 1.0, 16, 1, "text", [5]]
    broken[column] = None
    con = _qwen_like([(1, 1, 1, 0.5, 16, 1, "text", [4]), tuple(broken)])
    with pytest.raises(MltracesError, match=f"qwen_bailian/coder: request 2 has {what}"):
        read_blocks(con, "qwen_bailian/coder")
