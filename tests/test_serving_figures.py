"""The LLM-serving papers' figure data agrees with the files read independently.

Real files (Azure 2023, Mooncake, ServeGen) come from the loopback mirror; BurstGPT_1 and
Mooncake's tool & agent trace are synthetic files in their exact formats
(:mod:`serving_fixtures`). The independent side reads the same files with pandas or
:mod:`json` and plain Python.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from serving_fixtures import serving_con, serving_files  # noqa: F401

from mltraces import figures
from mltraces.papers import published
from mltraces.papers.mooncake_fast25 import figures as mooncake
from mltraces.papers.splitwise_isca24 import figures as splitwise
from mltraces.registry import get_source

MOONCAKE = ("raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28"
            "/FAST25-release/traces")
AZURE = ("raw.githubusercontent.com/Azure/AzurePublicDataset/"
         "b469a113cedca53ddc3bdea71a143dc4b7d8700c/data")

pytestmark = pytest.mark.upstream


@pytest.fixture
def con(serving_con):  # noqa: F811 (the session's catalog of the serving traces)
    return serving_con


@pytest.fixture
def synthetic(serving_files):  # noqa: F811 (the synthetic files it holds)
    return serving_files


def _mooncake(upstream_dir: Path, name: str) -> list[dict]:
    path = upstream_dir / MOONCAKE / f"{name}_trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _never_evicting(rows: list[dict]) -> float:
    """Reused prefix tokens over input tokens with a cache that keeps every block: a
    request reuses its leading blocks that an earlier request (or itself) brought."""
    seen: set[int] = set()
    reused = total = 0
    for row in rows:
        k = 0
        for block in row["hash_ids"]:
            if block not in seen:
                break
            k += 1
        seen.update(row["hash_ids"])
        reused += min(k * 512, row["input_length"])
        total += row["input_length"]
    return reused / total


def test_mooncake_table2_is_the_trace_and_the_cache_never_evicting(con, upstream_dir
                                                                   ) -> None:
    data = figures.frame("mooncake_table2", con)
    for name in ("conversation", "synthetic"):
        rows = _mooncake(upstream_dir, name)
        ours = data[(data.workload == name) & (data.who == "ours")].iloc[0]
        assert int(ours.requests) == len(rows)
        assert ours.avg_input == pytest.approx(np.mean([r["input_length"] for r in rows]))
        assert ours.avg_output == pytest.approx(np.mean([r["output_length"] for r in rows]))
        assert ours.cache_ratio == pytest.approx(_never_evicting(rows), abs=1e-12)
        paper = data[(data.workload == name) & (data.who == "paper")].iloc[0]
        table2 = published("mooncake_fast25")["table2"]["workloads"][name]
        assert (int(paper.requests), paper.avg_input, paper.cache_ratio) == (
            table2["requests"], table2["avg_input_tokens"], table2["cache_ratio"])
        # the release reproduces the paper's table exactly, but for the cache ratio
        assert (int(ours.requests), round(ours.avg_input), round(ours.avg_output)) == (
            table2["requests"], table2["avg_input_tokens"], table2["avg_output_tokens"])


def _dict_lru(rows: list[dict], capacity: int) -> int:
    from collections import OrderedDict

    cache: OrderedDict[int, None] = OrderedDict()
    reused = 0
    for row in rows:
        leading, k = True, 0
        for block in row["hash_ids"]:
            if block in cache:
                cache.move_to_end(block)
                k += leading
            else:
                leading = False
                if len(cache) >= capacity:
                    cache.popitem(last=False)
                cache[block] = None
        reused += min(k * 512, row["input_length"])
    return reused


def test_mooncake_fig9_lru_is_a_dictionary_lru_of_the_file(con, upstream_dir) -> None:
    data = figures.frame("mooncake_fig9", con)
    rows = _mooncake(upstream_dir, "conversation")
    total = sum(r["input_length"] for r in rows)
    lru = data[(data.workload == "conversation") & (data.policy == "lru")]
    for tokens in (16 * 512, mooncake.LOCAL_CACHE_TOKENS // 512 * 512, (1 << 17) * 512):
        hit = lru[lru.capacity_tokens == tokens]["hit"].iloc[0]
        assert hit == pytest.approx(_dict_lru(rows, tokens // 512) / total, abs=1e-12)
    for (_, policy), curve in data.groupby(["workload", "policy"]):  # rises to the maximum
        assert (np.diff(curve.sort_values("capacity_tokens")["hit"]) >= -1e-12).all() or \
            policy in ("fifo", "lfu")  # Belady's anomaly is allowed where it can happen
        assert curve["hit"].max() <= curve["max_hit"].iloc[0] + 1e-12
    # Belady reuses at least the tokens LRU reuses, request by request (the engine's bound)
    belady = data[data.policy == "belady"].set_index(["workload", "capacity_tokens"])["hit"]
    lru_all = data[data.policy == "lru"].set_index(["workload", "capacity_tokens"])["hit"]
    assert (lru_all <= belady + 1e-12).all()
    assert figures.get("mooncake_fig9").reproduces == "Mooncake (FAST'25) Fig. 9"


def test_splitwise_medians_are_pandas_medians_and_quoted_ones_are_marked(con,
                                                                         upstream_dir) -> None:
    data = figures.frame("splitwise_tokens", con)
    for trace, file in (("azure_llm/code_2023", "code"), ("azure_llm/conv_2023", "conv")):
        raw = pd.read_csv(upstream_dir / AZURE / f"AzureLLMInferenceTrace_{file}.csv")
        for measure, column in (("input_tokens", "ContextTokens"),
                                ("output_tokens", "GeneratedTokens")):
            part = data[(data.trace == trace) & (data.measure == measure)]
            assert part[part.kind == "median"]["x"].iloc[0] == raw[column].median()
            curve = part[part.kind == "cdf"]
            assert curve["cdf"].iloc[-1] == pytest.approx(1.0)
            assert curve["x"].max() == raw[column].max()
    quoted = splitwise.quoted_medians()
    assert quoted["status"] == "unconfirmed"
    code = data[(data.trace == "azure_llm/code_2023") & (data.kind == "quoted")]
    assert sorted(code["x"]) == sorted(float(v) for v in quoted["coding"].values())
    text = splitwise.medians_report(con)
    assert "Coding: ours 1,469 / 13; quoted 1,500 / 13" in text and "unconfirmed" in text
    assert figures.get("splitwise_tokens").reproduces == "our own analysis"


def test_splitwise_rate_counts_every_request_once(con, upstream_dir) -> None:
    data = figures.frame("splitwise_rate", con)
    assert data.groupby("trace")["requests"].sum().to_dict() == {
        "azure_llm/code_2023": 8819, "azure_llm/conv_2023": 19366}
    minutes = data[data.trace == "azure_llm/code_2023"]["minute"]
    assert (np.diff(minutes) == 60).all()  # idle minutes are rows of 0


def test_burstgpt_daily_boxes_are_pandas_quantiles_over_zero_filled_days(
        con, synthetic) -> None:
    raw = pd.read_csv(synthetic["burstgpt.lfs_1"])
    data = figures.frame("burstgpt_daily", con)
    days = np.floor(raw["Timestamp"] / 86400).astype(int)
    hours = (np.floor(raw["Timestamp"] / 3600).astype(int)) % 24
    span = range(days.min(), days.max() + 1)
    for model, kind, hour in (("ChatGPT", "Conversation log", 14), ("GPT-4", "API log", 3)):
        mine = (raw["Model"] == model) & (raw["Log Type"] == kind) & (hours == hour)
        counts = days[mine].value_counts().reindex(span, fill_value=0)
        row = data[(data.model == model) & (data.kind == kind) & (data.hour == hour)].iloc[0]
        for q, column in ((0.05, "q05"), (0.5, "q50"), (0.95, "q95")):
            assert row[column] == pytest.approx(np.quantile(counts, q))
        assert row.days == len(span)
    assert data["requests"].iloc[0] == len(raw)
    assert data["readme_thousands"].iloc[0] == 1429.7


def test_burstgpt_tokens_are_pandas_statistics_of_conversation_requests(con,
                                                                        synthetic) -> None:
    raw = pd.read_csv(synthetic["burstgpt.lfs_1"])
    data = figures.frame("burstgpt_tokens", con)
    kept = raw[(raw["Log Type"] == "Conversation log") & (raw["Response tokens"] > 0)
               & (raw["Request tokens"] < 2048)]
    kept = kept.assign(bin=kept["Request tokens"] // 16 * 16)
    expected = kept.groupby(["Model", "bin"])["Response tokens"].agg(["median", "mean", "size"])
    ours = data.set_index(["model", "request"])
    assert len(ours) == len(expected)
    for key, row in expected.iterrows():
        assert ours.loc[key, "median"] == row["median"]
        assert ours.loc[key, "mean"] == pytest.approx(row["mean"])
        assert ours.loc[key, "requests"] == row["size"]


def test_servegen_shares_and_windows_add_up(con) -> None:
    data = figures.frame("servegen_client_rates", con)
    for service, table in (("DeepSeek-R1", "servegen.deepseek_r1_windows"),
                           ("Qwen-VL image", "servegen.mm_image_windows")):
        windows = con.sql(f"SELECT client, window_start, rate FROM {table}").df()
        ranked = data[(data.service == service) & (data.part == "rank")]
        assert ranked["share"].sum() == pytest.approx(1.0)
        assert len(ranked) == windows["client"].nunique()
        means = windows.groupby("client")["rate"].mean().sort_values(ascending=False)
        assert ranked.sort_values("client")["rate"].tolist() == pytest.approx(means.tolist())
        split = data[(data.service == service) & (data.part == "window")]
        per_window = split.groupby("window_start")["rate"].sum()
        assert per_window.tolist() == pytest.approx(
            windows.groupby("window_start")["rate"].sum().tolist())


def test_the_papers_numbers_left_the_source_cards() -> None:
    assert get_source("mooncake").published == {} and get_source("burstgpt").published == {}
    assert published("burstgpt_kdd25")["readme"]["lines_thousands"]["BurstGPT_1"] == 1429.7
    assert published("mooncake_fast25")["table2"]["workloads"]["toolagent"]["requests"] == 23608


def test_each_figure_says_what_it_reproduces() -> None:
    said = {name: figures.get(name).reproduces for name in figures.registry(
        ["azure_llm", "mooncake", "burstgpt", "servegen"])}
    assert said == {
        "splitwise_tokens": "our own analysis", "splitwise_rate": "our own analysis",
        "mooncake_table2": "Mooncake (FAST'25): Table 2",
        "mooncake_fig9": "Mooncake (FAST'25) Fig. 9",
        "burstgpt_daily": "BurstGPT (KDD'25): README Figure 2 (daily periodicity), redrawn",
        "burstgpt_tokens": "BurstGPT (KDD'25): README Figure 4 (request and response "
                           "tokens), redrawn",
        "servegen_client_rates": "our own analysis"}
