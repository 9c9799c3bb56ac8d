"""The prefix-cache replay against a brute-force reference, compiled against interpreted,
LRU's one pass against its direct replay, Belady's bounds, bad input, and the Mooncake
conversation trace."""

from __future__ import annotations

import doctest
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefixcache_reference import random_trace, route, simulate

import mltraces.prefixcache
from mltraces.prefixcache import (
    COLUMNS,
    POLICIES,
    Plan,
    RequestBlocks,
    native,
    replay,
    replay_trace,
)
from mltraces.prefixcache.engine import part_counts
from mltraces.prefixcache.routing import Part

SEEDS = range(60)
MOONCAKE = ("raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28"
            "/FAST25-release/traces/conversation_trace.jsonl")


def capacities_for(trace: list[list[int]]) -> list[int]:
    """0, 1, 2, less than the longest request, the distinct blocks, and more."""
    distinct = len({b for request in trace for b in request})
    longest = max((len(request) for request in trace), default=0)
    return sorted({0, 1, 2, max(longest - 1, 0), distinct, distinct + 7})


def expected(trace, tokens, block_size, capacity, policy, instances=1, routing="round-robin",
             depth=2) -> list[tuple[int, ...]]:
    """Per instance: (requests, blocks, block hits, prefix-hit blocks, reused, input)."""
    chosen = route(trace, instances, routing, depth)
    rows = []
    for k in range(instances):
        mine = [i for i in range(len(trace)) if chosen[i] == k]
        requests = [trace[i] for i in mine]
        mine_tokens = [tokens[i] for i in mine]
        counts = simulate(requests, mine_tokens, block_size, capacity, policy)
        rows.append((len(mine), sum(map(len, requests)), *counts, sum(mine_tokens)))
    return rows


def observed(stats) -> tuple[int, ...]:
    return (stats.requests, stats.blocks, stats.block_hits, stats.prefix_hit_blocks,
            stats.reused_tokens, stats.input_tokens)


@pytest.fixture(params=["compiled", "interpreted"])
def core(request, monkeypatch):
    """Each test once with the core this install runs and once with its Python source."""
    if request.param == "interpreted":
        monkeypatch.setattr(native, "core", native.source)
    return request.param


# -- the reference ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_every_policy_and_capacity_matches_the_reference(seed: int, core: str) -> None:
    trace, tokens, block_size = random_trace(seed)
    caps = capacities_for(trace)
    result = replay_trace(RequestBlocks.from_lists(trace, tokens, block_size),
                          Plan.checked(caps, "all"))
    for policy in POLICIES:
        for cap in caps:
            want = expected(trace, tokens, block_size, cap, policy)[0]
            assert observed(result.get(policy, cap)) == want, (policy, cap)


@pytest.mark.parametrize("routing", ["round-robin", "affinity"])
@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_instances_match_the_reference(seed: int, routing: str, core: str) -> None:
    trace, tokens, block_size = random_trace(seed, requests=50)
    instances = 1 + seed % 4
    depth = 1 + seed % 3
    caps = capacities_for(trace)
    result = replay_trace(RequestBlocks.from_lists(trace, tokens, block_size),
                          Plan.checked(caps, "all", instances=instances, routing=routing,
                                       affinity_blocks=depth))
    for policy in POLICIES:
        for cap in caps:
            want = expected(trace, tokens, block_size, cap, policy, instances, routing, depth)
            got = [observed(result.get(policy, cap, k)) for k in range(instances)]
            assert got == want, (policy, cap)
            total = tuple(sum(column) for column in zip(*want, strict=True))
            assert observed(result.get(policy, cap)) == total


def test_affinity_keeps_requests_with_one_first_blocks_together() -> None:
    trace = [[5, 6, 1], [5, 6, 2], [9, 6], [5, 6], [9, 6, 3], [5, 7]]
    tokens = [3 * 16, 3 * 16, 32, 32, 48, 32]
    blocks = RequestBlocks.from_lists(trace, tokens, 16)
    from mltraces.prefixcache.routing import assign

    chosen = assign(blocks, 7, "affinity", 2)
    assert chosen[0] == chosen[1] == chosen[3]
    assert chosen[2] == chosen[4]
    assert list(chosen) == route(trace, 7, "affinity", 2)
    assert list(assign(blocks, 3, "round-robin")) == [0, 1, 2, 0, 1, 2]


# -- one pass, bounds, compiled and interpreted ----------------------------------------------
def _part(trace, tokens) -> Part:
    blocks = RequestBlocks.from_lists(trace, tokens, 1)
    return Part(blocks.blocks, blocks.offsets, blocks.input_tokens, blocks.distinct)


@pytest.mark.parametrize("seed", SEEDS)
def test_lru_in_one_pass_equals_lru_replayed_per_capacity(seed: int, core: str) -> None:
    trace, tokens, block_size = random_trace(seed, requests=80)
    part = _part(trace, tokens)
    caps = np.arange(0, part.distinct + 3, dtype=np.int64)
    one = part_counts(part, "lru", caps, block_size, one_pass=True)
    direct = part_counts(part, "lru", caps, block_size, one_pass=False)
    np.testing.assert_array_equal(one, direct)


def _hits(module, policy: str, part: Part, cap: int) -> np.ndarray:
    hit = np.zeros(len(part.blocks), dtype=np.uint8)
    if policy == "belady":
        nexts = np.zeros(len(part.blocks), dtype=np.int64)
        module.next_uses(part.blocks, part.distinct, nexts)
        module.belady(part.blocks, part.distinct, cap, nexts, hit)
    else:
        getattr(module, policy)(part.blocks, part.distinct, cap, hit)
    return hit


@pytest.mark.parametrize("seed", SEEDS)
def test_belady_bounds_every_policy(seed: int) -> None:
    """Belady's block hits bound every policy's block hits and prefix-hit blocks; every
    access LRU hits, Belady hits (so its prefix hits are at least LRU's)."""
    trace, tokens, block_size = random_trace(seed, requests=80)
    part = _part(trace, tokens)
    caps = np.arange(0, part.distinct + 2, dtype=np.int64)
    counts = {policy: part_counts(part, policy, caps, block_size) for policy in POLICIES}
    for policy in POLICIES:
        assert (counts["belady"][:, 0] >= counts[policy][:, 0]).all(), policy
        assert (counts["belady"][:, 0] >= counts[policy][:, 1]).all(), policy
        assert (counts[policy][:, 0] >= counts[policy][:, 1]).all(), policy
    assert (counts["belady"][:, 1:] >= counts["lru"][:, 1:]).all()
    for cap in caps.tolist():
        lru = _hits(native.core(), "lru", part, cap)
        assert (_hits(native.core(), "belady", part, cap) >= lru).all()


@pytest.mark.parametrize(("policy", "capacity", "trace"), [
    ("lfu", 2, [[1, 3], [1, 2, 3], [1]]),
    ("fifo", 3, [[1, 3, 2], [0, 3, 1], [2]]),
])
def test_belady_is_no_optimum_of_prefix_hits(policy: str, capacity: int, trace) -> None:
    """The documented counterexamples: as many block hits as Belady, more prefix hits."""
    tokens = [len(request) for request in trace]
    result = replay_trace(RequestBlocks.from_lists(trace, tokens, 1),
                          Plan.checked([capacity], [policy, "belady"]))
    other, belady = result.get(policy, capacity), result.get("belady", capacity)
    assert other.block_hits == belady.block_hits == 2
    assert other.prefix_hit_blocks == belady.prefix_hit_blocks + 1


def test_compiled_and_interpreted_cores_agree_access_by_access() -> None:
    rng = np.random.default_rng(7)
    blocks = rng.zipf(1.3, size=6000) % 900
    part = _part([blocks.tolist()], [len(blocks)])
    compiled, source = native.core(), native.source()
    for policy in POLICIES:
        for cap in (0, 1, 7, 64, 300, 2000):
            np.testing.assert_array_equal(_hits(compiled, policy, part, cap),
                                          _hits(source, policy, part, cap), err_msg=policy)
    for module in (compiled, source):
        distances = np.zeros(len(part.blocks), dtype=np.int64)
        module.stack_distances(part.blocks, part.distinct, distances)
        if module is compiled:
            first = distances
    np.testing.assert_array_equal(first, distances)


def _first_appearance(ids: np.ndarray) -> list[int]:
    numbers: dict[int, int] = {}
    return [numbers.setdefault(int(value), len(numbers)) for value in ids]


@pytest.mark.parametrize("kind", ["compact", "sparse", "strided"])
def test_dense_ids_number_ids_in_order_of_first_appearance(kind: str) -> None:
    """Both the hash table (grown past its first 1,024 slots) and the table indexed by id,
    compiled and interpreted, number ids as a dictionary does."""
    from mltraces.prefixcache.trace import dense_ids

    rng = np.random.default_rng(3)
    ids = {"compact": rng.integers(-50, 5000, size=8000),
           "sparse": rng.integers(-(2**63), 2**63 - 1, size=3000)[rng.integers(0, 3000, 8000)],
           "strided": rng.integers(0, 4000, size=8000) << 32}[kind].astype(np.int64)
    want = _first_appearance(ids)
    for module in (native.core(), native.source()):
        codes = np.empty(len(ids), dtype=np.int64)
        assert module.factorize(ids, codes) == max(want) + 1
        assert codes.tolist() == want
        if kind == "compact":
            codes[:] = -1
            module.factorize_range(ids, int(ids.min()), int(ids.max()), codes)
            assert codes.tolist() == want
    codes, distinct = dense_ids(ids)
    assert (codes.tolist(), distinct) == (want, max(want) + 1)
    huge = np.array([2**64 - 1, 5, 2**63, 2**64 - 1, 5], dtype=np.uint64)
    assert dense_ids(huge)[0].tolist() == [0, 1, 2, 0, 1]


def _compiler() -> str | None:
    import shlex
    import sysconfig

    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(command)[0])


def test_the_core_runs_compiled_where_a_compiler_built_it() -> None:
    if _compiler() is None and not os.environ.get("MLTRACES_REQUIRE_COMPILED"):
        pytest.skip("no C compiler: the core runs as plain Python here")
    state = native.build()
    assert state.compiled, state.reason
    assert not native.core().__file__.endswith(".py")
    assert native.notice() is None


_WITHOUT_CYTHON = """
import sys, json
sys.modules["cython"] = None  # as if Cython were not installed: the stand-in decorators
from mltraces.prefixcache import native, replay
assert not native.build().compiled and native.core().__file__.endswith(".py")
assert "plain Python" in native.notice()
result = replay({blocks}, {offsets}, {tokens}, 16, [0, 2, 5, 40], "all", instances=2,
                routing="affinity")
print(json.dumps([list(stats.__dict__.values()) for stats in result.per_instance]))
"""


def test_the_core_runs_as_python_without_cython_with_the_same_counts() -> None:
    trace, tokens, _ = random_trace(3, requests=60)
    blocks = RequestBlocks.from_lists(trace, tokens, 16)
    args = {"blocks": blocks.ids.tolist(), "offsets": blocks.offsets.tolist(), "tokens": tokens}
    script = _WITHOUT_CYTHON.format(**args)
    env = {**os.environ, "MLTRACES_INTERPRETED": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, check=True, timeout=300)
    result = replay(args["blocks"], args["offsets"], tokens, 16, [0, 2, 5, 40], "all",
                    instances=2, routing="affinity")
    assert json.loads(done.stdout) == [list(stats.__dict__.values())
                                       for stats in result.per_instance]


# -- the result ------------------------------------------------------------------------------
def test_the_tidy_frame_and_the_typed_result_say_the_same() -> None:
    trace, tokens, block_size = random_trace(11)
    result = replay_trace(RequestBlocks.from_lists(trace, tokens, block_size),
                          Plan.checked([8, 3, 3, 0], "belady,lru", instances=3))
    frame = result.frame(per_instance=True)
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == 2 * 3 * (1 + 3)
    assert frame["instance"].isna().sum() == 6
    totals = result.frame()
    assert list(zip(totals.policy, totals.capacity, strict=True)) == [
        ("belady", 0), ("belady", 3), ("belady", 8), ("lru", 0), ("lru", 3), ("lru", 8)]
    for row, stats in zip(totals.itertuples(), result.totals, strict=True):
        assert row.block_hits == stats.block_hits
        assert row.token_hit_ratio == pytest.approx(stats.reused_tokens / stats.input_tokens)
    sums = frame.dropna(subset=["instance"]).groupby(["policy", "capacity"], sort=False).sum(
        numeric_only=True)
    for stats in result.totals:
        assert sums.loc[(stats.policy, stats.capacity), "reused_tokens"] == stats.reused_tokens
    empty = replay([], [0], [], 16, [4], "lru").get("lru", 4)
    assert (empty.blocks, math.isnan(empty.block_hit_ratio)) == (0, True)


def test_the_package_example_runs() -> None:
    failures, tried = doctest.testmod(mltraces.prefixcache)
    assert tried > 0 and failures == 0


def test_arrow_list_columns_give_the_same_trace() -> None:
    import pyarrow as pa

    trace, tokens, block_size = random_trace(5)
    column = pa.array(trace, type=pa.list_(pa.int64()))
    chunked = pa.chunked_array([column.slice(0, 7), column.slice(7)])
    plain = RequestBlocks.from_lists(trace, tokens, block_size)
    for given in (column, chunked, pa.array(trace, type=pa.large_list(pa.int64()))):
        built = RequestBlocks.from_arrow(given, tokens, block_size)
        np.testing.assert_array_equal(built.blocks, plain.blocks)
        np.testing.assert_array_equal(built.offsets, plain.offsets)
    sliced = RequestBlocks.from_arrow(column.slice(9, 20), pa.array(tokens[9:29]), block_size)
    np.testing.assert_array_equal(sliced.ids, plain.ids[plain.offsets[9]:plain.offsets[29]])
    np.testing.assert_array_equal(sliced.input_tokens, tokens[9:29])
    small = [[1, 2], [], [200, 1, -3]]
    for kind in (pa.int16(), pa.int32(), pa.uint8()):
        rows = [[b % 256 for b in row] for row in small] if kind == pa.uint8() else small
        narrow = RequestBlocks.from_arrow(pa.array(rows, type=pa.list_(kind)), [32, 0, 48], 16)
        np.testing.assert_array_equal(narrow.blocks, [0, 1, 2, 0, 3])
        np.testing.assert_array_equal(narrow.offsets, [0, 2, 2, 5])


# -- bad input -------------------------------------------------------------------------------
GOOD = {"blocks": [1, 2, 3, 1], "offsets": [0, 3, 4], "input_tokens": [40, 10],
        "block_size": 16, "capacities": [2]}
BAD = [
    ({"capacities": [4, -1]}, r"capacities\[1\]: -1 blocks is outside"),
    ({"capacities": []}, "capacities: no capacity"),
    ({"capacities": "10"}, "capacities: expected block counts"),
    ({"capacities": [2.5]}, r"capacities\[0\]: expected a number of blocks"),
    ({"capacities": [True]}, r"capacities\[0\]: expected a number of blocks"),
    ({"capacities": list(range(2000))}, "capacities: 2000 values"),
    ({"offsets": [0, 3]}, r"offsets: 2 entries for 2 requests \(expected"),
    ({"offsets": [1, 3, 4]}, r"offsets: offsets\[0\] is 1"),
    ({"offsets": [0, 3, 5]}, r"offsets: offsets\[2\] is 5 but blocks has 4 ids"),
    ({"offsets": [0, 5, 4]}, r"offsets: request 1 ends before it starts \(offsets\[1\] = 5 "
                             r"> offsets\[2\] = 4\)"),
    ({"offsets": [0.0, 3.0, 4.0]}, "offsets: expected integers"),
    ({"input_tokens": [40, float("nan")]}, r"input_tokens: request 1 is NaN \(nan\)"),
    ({"input_tokens": [-1, 10]}, r"input_tokens: request 0 is negative \(-1\)"),
    ({"input_tokens": [40.0, -3.0]}, "input_tokens: request 1 is negative"),
    ({"input_tokens": [float("inf"), 1]}, "input_tokens: request 0 is infinite"),
    ({"input_tokens": [40.5, 1]}, "input_tokens: request 0 is not a whole number"),
    ({"input_tokens": ["a", "b"]}, "input_tokens: expected numbers"),
    ({"input_tokens": [2**62, 2**62]}, "input_tokens: the total is 2\\*\\*62"),
    ({"blocks": [1.0, 2.0, 3.0, 1.0]}, "blocks: expected integers, got float64"),
    ({"blocks": [[1, 2], [3, 1]]}, "blocks: expected a 1-D array"),
    ({"block_size": 0}, "block_size: expected a positive integer, got 0"),
    ({"block_size": 16.0}, "block_size: expected a positive integer, got 16.0"),
    ({"block_size": 2**40}, "block_size: 1099511627776 tokens per block is more than"),
    ({"policies": "lru,mru"}, "policies: unknown policy 'mru'"),
    ({"policies": ""}, "policies: unknown policy ''"),
    ({"policies": 3}, "policies: expected names"),
    ({"instances": 0}, "instances: expected a positive integer, got 0"),
    ({"instances": 300_000}, "instances: 300000 instances × 4 policies × 1 capacities"),
    ({"routing": "random"}, "routing: expected one of round-robin, affinity, got 'random'"),
    ({"routing": "affinity", "affinity_blocks": 0}, "affinity_blocks: expected a positive"),
    ({"max_request_blocks": 2}, "blocks: request 0 has 3 blocks, more than "
                                "max_request_blocks = 2"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_input_is_one_line_naming_the_argument(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        replay(**{**GOOD, **change})
    assert "\n" not in str(error.value)


def test_a_request_of_ten_million_blocks_is_refused_before_any_work() -> None:
    blocks = np.arange(10_000_001, dtype=np.int64)
    with pytest.raises(ValueError, match="request 0 has 10000001 blocks, more than "
                                         "max_request_blocks = 1048576"):
        replay(blocks, [0, len(blocks)], [len(blocks) * 16], 16, [1])


def test_lists_of_other_than_integers_are_refused() -> None:
    with pytest.raises(ValueError, match="blocks: expected integers, got float64"):
        RequestBlocks.from_lists([[1, 2.5]], [32], 16)
    with pytest.raises(ValueError, match="blocks: expected integers, got object"):
        RequestBlocks.from_lists([[1, 2**70]], [32], 16)


def test_null_arrow_lists_and_ids_are_refused() -> None:
    import pyarrow as pa

    with pytest.raises(ValueError, match=r"blocks: request 1 has no block list \(null\)"):
        RequestBlocks.from_arrow(pa.array([[1], None, [2]]), [1, 1, 1], 16)
    with pytest.raises(ValueError, match="blocks: request 2 has a null block id"):
        RequestBlocks.from_arrow(pa.array([[1], [], [2, None]]).slice(0), [16, 0, 20], 16)
    with pytest.raises(ValueError, match="blocks: request 0 has a null block id"):
        RequestBlocks.from_arrow(pa.array([[1], [], [2, None]]).slice(2), [20], 16)
    with pytest.raises(ValueError, match="input_tokens: request 1 is null"):
        RequestBlocks.from_arrow(pa.array([[1], [2]]), pa.array([16, None]), 16)
    with pytest.raises(ValueError, match="input_tokens: expected numbers, got string"):
        RequestBlocks.from_arrow(pa.array([[1], [2]]), pa.array(["a", "b"]), 16)
    with pytest.raises(ValueError, match="blocks: expected integer block ids, got double"):
        RequestBlocks.from_arrow(pa.array([[1.5], [2.0]]), [16, 16], 16)
    with pytest.raises(ValueError, match="blocks: expected an Arrow list column, got int64"):
        RequestBlocks.from_arrow(pa.array([1, 2]), [1, 1], 16)


# -- the Mooncake conversation trace ---------------------------------------------------------
#: our own replay of the file (not published numbers): (block hits, prefix-hit blocks,
#: reused tokens) per policy at 4,000 and 32,000 blocks; 288,500 blocks, 144,793,823 tokens
MOONCAKE_COUNTS = {
    ("lru", 4000): (24747, 24747, 12661792), ("lru", 32000): (95779, 95779, 49015462),
    ("lfu", 4000): (24688, 24688, 12635430), ("lfu", 32000): (82038, 82038, 41985551),
    ("fifo", 4000): (23957, 23836, 12196345), ("fifo", 32000): (88598, 86379, 44204638),
    ("belady", 4000): (92988, 92988, 47587839), ("belady", 32000): (105710, 105710, 54098411),
}


@pytest.mark.upstream
def test_the_mooncake_conversation_trace(upstream_dir: Path) -> None:
    path = upstream_dir / MOONCAKE
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 12_031  # the README's count
    for i, row in enumerate(rows):
        assert len(row["hash_ids"]) == math.ceil(row["input_length"] / 512), i
    import pyarrow.json as pj

    table = pj.read_json(path)
    trace = RequestBlocks.from_arrow(table["hash_ids"], table["input_length"].to_numpy(), 512)
    same = RequestBlocks.from_lists([row["hash_ids"] for row in rows],
                                    [row["input_length"] for row in rows], 512)
    np.testing.assert_array_equal(trace.blocks, same.blocks)
    result = replay_trace(trace, Plan.checked([4000, 32000], "all"))
    got = {(s.policy, s.capacity): (s.block_hits, s.prefix_hit_blocks, s.reused_tokens)
           for s in result.totals}
    assert got == MOONCAKE_COUNTS
    assert {(s.blocks, s.input_tokens) for s in result.totals} == {(288_500, 144_793_823)}
    spread = replay_trace(trace, Plan.checked([4000], "lru,belady", instances=4,
                                              routing="affinity"))
    lru, belady = spread.get("lru", 4000), spread.get("belady", 4000)
    assert belady.block_hits >= lru.block_hits and belady.prefix_hit_blocks >= lru.prefix_hit_blocks
    assert sum(spread.get("lru", 4000, k).requests for k in range(4)) == 12_031
    frame = spread.frame(per_instance=True)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 2 * 5
