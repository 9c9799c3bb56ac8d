"""mltraces.simulation on the real Zeus traces (skipped when ../shared/upstream is absent)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mltraces.simulation import RunModel, TraceSet, simulate

ZEUS_TRACE = (
    "raw.githubusercontent.com/ml-energy/zeus/75a8b9398034eb9baf74ca0a830c2c31bcce52cd"
    "/examples/research_reproducibility/zeus_nsdi23/trace"
)

pytestmark = pytest.mark.upstream


@pytest.fixture(scope="module")
def trace_dir(upstream_dir: Path) -> Path:
    """The Zeus trace folder in ../shared/upstream (skips, or fails in CI, when absent)."""
    return upstream_dir / ZEUS_TRACE


@pytest.fixture(scope="module")
def traces(trace_dir: Path) -> TraceSet:
    return TraceSet.from_csv_dir(trace_dir)


def test_librispeech_on_v100_against_the_raw_rows(traces: TraceSet, trace_dir: Path) -> None:
    trace = traces.job("v100", "librispeech")
    assert trace.default_batch_size == 192  # b0 = 256, capped at the largest v100 size
    assert trace.batch_sizes == (2, 4, 8, 12, 16, 24, 32, 48, 56, 64, 72, 96, 128, 156, 192)
    assert trace.power_limits == (100, 125, 150, 175, 200, 225, 250)
    assert trace.default_recurrences == 2 * 15 * 7
    assert trace.max_power == 250

    power = pd.read_csv(trace_dir / "summary_power_v100.csv")
    train = pd.read_csv(trace_dir / "summary_train.csv")
    for size, epochs in [(192, [10, 9, 9, 10, 10]), (32, [7, 7, 7, 7, 7])]:
        rows = train.query(f"dataset == 'librispeech' and batch_size == {size}")
        rows = rows[rows["target_metric"] == 40.0]
        assert (
            trace.run_epochs[trace.index(size)].tolist() == epochs == rows["target_epoch"].tolist()
        )

    # Batch size 32 reaches the target in 7 epochs in every repetition.
    row = power.query("dataset == 'librispeech' and batch_size == 32 and power_limit == 175")
    (seconds,), (watts,) = row["time_per_epoch"], row["average_power"]
    i, j = trace.index(32), trace.power_limits.index(175)
    assert (trace.epoch_time[i, j], trace.epoch_power[i, j]) == (seconds, watts)
    run = RunModel(trace, eta=0.5).run(32, 175, np.random.default_rng(0), np.inf, False)
    assert run.reached
    assert run.time == 7 * seconds
    assert run.energy == 7 * seconds * watts
    assert run.cost == 0.5 * run.energy + 0.5 * 250 * run.time


def test_matches_the_zeus_artifact_run_for_run(traces: TraceSet) -> None:
    # Totals of zeus==0.16.0's zeus._legacy.simulate on the same inputs (v100, librispeech,
    # b0 192, seed 1, eta 0.5, beta 2, 210 recurrences); benchmarks/bench_simulate.py
    # compares every cell and seed.
    history = simulate(traces, "v100", "librispeech", "zeus", 1).history
    assert len(history) == 211
    assert history["energy_j"].sum() == pytest.approx(1276354187.14576, rel=1e-12)
    assert history["time_s"].sum() == pytest.approx(9887724.025714256, rel=1e-12)
    first = history.head(13)
    # pruning round 1 from b0 = 192 downwards; 8 is early-stopped and the recurrence retried
    assert first["batch_size"].tolist() == [192, 156, 128, 96, 72, 64, 56, 48, 32, 24, 16, 12, 8]
    assert first["reached"].tolist() == [True] * 12 + [False]


def test_every_cell_and_policy_runs(traces: TraceSet) -> None:
    summary = simulate(traces, "all", "all", "all", 1).summary
    assert len(summary) == 4 * 6 * 6
    expected = [
        traces.job(g, w).default_recurrences for g, w in summary[["gpu", "workload"]].values
    ]
    assert summary["recurrences"].tolist() == expected
    assert (summary.loc[summary["policy"] == "oracle", "regret"] == 0).all()
    mean = summary.groupby("policy")["cost_vs_default"].mean()
    # the paper's ordering of cumulative cost: Oracle < Zeus < Grid Search < Default
    assert mean["oracle"] < mean["zeus"] < mean["grid"] < mean["default"] == 1


def test_catalog_gives_the_same_runs(traces: TraceSet, dir_mirror: Path) -> None:
    import mltraces
    from mltraces.workloads.recurring import load_traces

    con = mltraces.connect(tables=["zeus.train", "zeus.power"])
    from_catalog = simulate(load_traces(con), "all", "all", "zeus", 1).history
    from_csv = simulate(traces, "all", "all", "zeus", 1).history
    pd.testing.assert_frame_equal(from_catalog, from_csv)


def test_cli_alibaba_replay_on_real_traces(dir_mirror: Path, tmp_path: Path, capsys) -> None:
    from mltraces.cli import main

    # zeus.alibaba_groups is not in ../shared/upstream: a synthetic table in its format,
    # two groups per workload whose jobs overlap
    rows = [
        (f"{dataset}-{g}", start, start + 900.0, dataset, 0.5 + g)
        for dataset in ("cifar100", "squad", "librispeech", "movielens-1m")
        for g in range(2)
        for start in np.arange(0.0, 6000.0, 600.0)
    ]
    groups = pd.DataFrame(
        rows, columns=["group", "start_time", "end_time", "dataset", "runtime_ratio"]
    )
    path = tmp_path / "alibaba_groups.csv.xz"
    groups.to_csv(path, index=False)
    argv = ["simulate", "--alibaba", "--gpu", "v100", "--local", f"zeus.alibaba_groups={path}",
            "--policy", "zeus,default", "--processes", "2", "--format", "csv"]  # fmt: skip
    assert main(argv) == 0
    history = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(history["group"]) == set(groups["group"])
    assert (history.groupby(["policy", "group"])["reached"].sum() == 10).all()
