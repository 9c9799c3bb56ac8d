"""Unit tests of mltraces.simulation on a tiny synthetic trace checked by hand.

The synthetic trace reuses the identity of the ``squad`` workload
(bert_base_uncased, adamw, target 84.0, at most 6 epochs, b0 = 32) so that
everything keyed by workload name, such as the Alibaba replay, works on it.
Costs use η = 0.5 and MaxPower = 200 W unless a test says otherwise.
"""

from __future__ import annotations

import argparse
import json
import math

import duckdb
import numpy as np
import pandas as pd
import pytest

from mltraces.commands import simulate as cli
from mltraces.simulation import (
    POLICIES,
    GaussianThompson,
    JITPowerLimitOptimizer,
    JobContext,
    MaxPowerLimit,
    Policy,
    PruningExplorer,
    RunModel,
    SimulationError,
    TraceSet,
    ZeusBatchSizeOptimizer,
    replay_alibaba,
    simulate,
    simulate_job,
)
from mltraces.simulation.engine import epoch_cap
from mltraces.workloads.recurring import load_traces

NAN = math.nan
GPU = "toy"
#: batch size -> {power limit: (seconds per epoch, average watts)}
POWER = {
    8: {100: (40, 90), 150: (32, 120), 200: (30, 150)},
    16: {100: (24, 95), 150: (18, 130), 200: (16, 170)},
    32: {100: (20, 100), 150: (11, 140), 200: (10, 200)},
    64: {100: (12, 100), 150: (8, 150), 200: (7, 200)},
}
#: batch size -> epoch at which each repetition reaches the target (NaN: never)
EPOCHS = {8: [NAN, NAN], 16: [6], 32: [4], 64: [3]}
TRAIN_COLUMNS = [
    "dataset", "network", "batch_size", "optimizer", "learning_rate", "run",
    "target_metric", "target_epoch",
]  # fmt: skip


def train_frame(epochs: dict[int, list[float]] = EPOCHS) -> pd.DataFrame:
    rows = [
        ("squad", "bert_base_uncased", b, "adamw", 1e-5, run, 84.0, target)
        for b, targets in epochs.items()
        for run, target in enumerate(targets, 1)
    ]
    rows.append(("squad", "bert_base_uncased", 32, "adamw", 1e-5, 1, 80.0, 1.0))  # other target
    return pd.DataFrame(rows, columns=TRAIN_COLUMNS)


def power_frame() -> pd.DataFrame:
    rows = [
        ("squad", "bert_base_uncased", b, "adamw", p, t, w)
        for b, cells in POWER.items()
        for p, (t, w) in cells.items()
    ]
    columns = [*TRAIN_COLUMNS[:4], "power_limit", "time_per_epoch", "average_power"]
    return pd.DataFrame(rows, columns=columns)


def toy_traces(epochs: dict[int, list[float]] = EPOCHS) -> TraceSet:
    return TraceSet.from_frames(train_frame(epochs), power_frame(), gpu=GPU)


@pytest.fixture
def model() -> RunModel:
    return RunModel(toy_traces().job(GPU, "squad"), eta=0.5)


class Scripted:
    """A batch size optimizer that plays a fixed list and records what it observes."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = list(sizes)
        self.seen: list[tuple[int, float, bool]] = []

    def predict(self) -> int:
        return self.sizes.pop(0) if len(self.sizes) > 1 else self.sizes[0]

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        self.seen.append((batch_size, cost, reached))


def scripted_policy(sizes: list[int], box: list) -> Policy:
    """A policy at 200 W whose optimizer is kept in ``box`` for inspection."""

    def make(context: JobContext) -> Scripted:
        box.append(Scripted(sizes))
        return box[-1]

    return Policy("scripted", make, MaxPowerLimit)


# --------------------------------------------------------------------------- trace model


def test_trace_model_layout(model: RunModel) -> None:
    trace = model.trace
    assert trace.batch_sizes == (8, 16, 32, 64)
    assert trace.power_limits == (100, 150, 200)
    assert trace.max_power == 200
    assert trace.default_batch_size == 32
    assert trace.default_recurrences == 2 * 4 * 3
    assert trace.epoch_time[2].tolist() == [20, 11, 10]
    assert trace.epoch_energy[2].tolist() == [2000, 1540, 2000]
    assert [r.tolist() for r in trace.run_epochs[1:]] == [[6], [4], [3]]  # target 80.0 ignored


def test_b0_is_capped_at_the_largest_batch_size_of_the_gpu() -> None:
    power = power_frame()
    traces = TraceSet.from_frames(train_frame(), power[power["batch_size"] <= 16], gpu=GPU)
    assert traces.job(GPU, "squad").default_batch_size == 16


def test_run_numbers_by_hand(model: RunModel) -> None:
    run = model.run(32, 200, np.random.default_rng(0), math.inf, profiling=False)
    # 4 epochs x 10 s at 200 W; cost 0.5 x 8000 J + 0.5 x 200 W x 40 s
    assert run == (40, 8000, 8000, True)


def test_profiling_epoch_is_the_mean_over_power_limits(model: RunModel) -> None:
    run = model.run(32, 150, np.random.default_rng(0), math.inf, profiling=True)
    assert run.time == pytest.approx((20 + 11 + 10) / 3 + 3 * 11)
    assert run.energy == pytest.approx((2000 + 1540 + 2000) / 3 + 3 * 1540)


def test_unknown_cells_and_names_are_explained(model: RunModel) -> None:
    with pytest.raises(SimulationError, match="no power trace for batch size 32 at 175 W"):
        model.cell(32, 175)
    with pytest.raises(SimulationError, match="unknown workload 'mnist'"):
        toy_traces().job(GPU, "mnist")
    with pytest.raises(SimulationError, match="no power trace for GPU 'h100'"):
        toy_traces().job("h100", "squad")


def test_expected_cost_and_oracle_choice(model: RunModel) -> None:
    costs = model.trace.expected_cost(0.5)
    assert np.isinf(costs[0]).all()  # batch size 8 never reaches the target
    # batch size 64 at 200 W: 3 epochs x (0.5*1400 + 0.5*200*7) = 4200
    assert costs[3, 2] == 4200
    assert POLICIES["oracle"].build(JobContext(model.trace, 0.5, 2.0, 1))[0].predict() == 64


# --------------------------------------------------------------------------- JIT power limits


def test_jit_keeps_the_cheapest_limit_per_batch_size(model: RunModel) -> None:
    plo = JITPowerLimitOptimizer()
    assert plo.predict(32) is None
    model.profile(plo, 32)
    # epoch costs (0.5 W + 0.5*200) x s: 100 W 3000, 150 W 1870, 200 W 2000
    assert plo.predict(32) == 150
    for eta, best in [(1.0, 150), (0.0, 200)]:  # energy only: 1540 J is least; time only
        plo = JITPowerLimitOptimizer()
        RunModel(model.trace, eta).profile(plo, 32)
        assert plo.predict(32) == best


def test_jit_ties_go_to_the_higher_limit() -> None:
    plo = JITPowerLimitOptimizer()
    for limit in (200, 150, 100):  # profiled from high to low
        plo.observe(8, limit, 5.0)
    assert plo.predict(8) == 200


# --------------------------------------------------------------------------- early stopping


def test_epoch_cap_arithmetic() -> None:
    assert epoch_cap(math.inf, 123.0, 6) == 6
    assert epoch_cap(16000, 2960, 6) == 5  # floor(5.4)
    assert epoch_cap(16000, 1400, 6) == 6  # floor(11.4), capped
    assert epoch_cap(2400, 5250, 6) == 0


def test_early_stopping_in_the_loop(model: RunModel) -> None:
    box: list[Scripted] = []
    runs = simulate_job(
        model, scripted_policy([32, 16, 8, 64], box), seed=1, beta=2.0, recurrences=2
    ).to_array()
    # recurrence 1: b0 reaches in 4 epochs at cost 8000, so the threshold becomes 16000.
    # recurrence 2: 16 stops after floor(16000/2960) = 5 of its 6 epochs; 8 after
    # floor(16000/5250) = 3 (it never reaches); 64 reaches in 3 epochs.
    assert runs["batch_size"].tolist() == [32, 16, 8, 64]
    assert runs["attempt"].tolist() == [1, 1, 2, 3]
    assert runs["reached"].tolist() == [True, False, False, True]
    assert runs["time_s"].tolist() == [40, 5 * 16, 3 * 30, 3 * 7]
    assert runs["energy_j"].tolist() == [8000, 5 * 16 * 170, 3 * 30 * 150, 3 * 7 * 200]
    assert runs["cost"].tolist() == [8000, 14800, 15750, 4200]
    assert [seen[1] for seen in box[0].seen] == runs["cost"].tolist()


def test_an_attempt_that_cannot_run_one_epoch_is_penalised_and_retried(model: RunModel) -> None:
    box: list[Scripted] = []
    runs = simulate_job(
        model, scripted_policy([32, 8, 64], box), seed=1, beta=0.6, recurrences=2
    ).to_array()
    # threshold 0.6 x 8000 = 4800 < one epoch of batch size 8 (5250): not a run;
    # 64 fits floor(4800 / 1400) = 3 epochs, just enough
    assert runs["batch_size"].tolist() == [32, 64]
    assert runs["attempt"].tolist() == [1, 2]
    assert box[0].seen[1] == (8, 100 * 4800, False)


def test_first_recurrence_must_reach_the_target(model: RunModel) -> None:
    with pytest.raises(SimulationError, match="first run"):
        simulate_job(model, scripted_policy([8], []), seed=1, beta=2.0, recurrences=1)


def test_a_recurrence_gives_up_after_twenty_attempts(model: RunModel) -> None:
    with pytest.raises(SimulationError, match="20 attempts"):
        simulate_job(model, scripted_policy([32, 8], []), seed=1, beta=2.0, recurrences=2)


# --------------------------------------------------------------------------- Zeus optimizer


def drive(explorer: PruningExplorer, outcomes: dict[int, tuple[float, bool]]) -> list[int]:
    """Explore until pruning ends; return the order in which sizes were tried."""
    tried = []
    while explorer.current is not None:
        size = explorer.current
        tried.append(size)
        explorer.report(size, *outcomes[size])
    return tried


def test_pruning_order() -> None:
    outcomes = {
        8: (9.0, False), 16: (5.0, True), 32: (10.0, True), 64: (7.0, True),
        128: (8.0, True), 256: (20.0, False), 512: (1.0, True),
    }  # fmt: skip
    explorer = PruningExplorer([8, 16, 32, 64, 128, 256, 512], default=32)
    tried = drive(explorer, outcomes)
    # round 1 from b0 = 32: down 32, 16, 8 (fails), up 64, 128, 256 (fails; 512 never tried)
    # round 2 from the cheapest success, 16, over {16, 32, 64, 128}: down 16, up 32, 64, 128
    assert tried == [32, 16, 8, 64, 128, 256, 16, 32, 64, 128]
    assert explorer.survivors == [16, 32, 64, 128]


def test_pruning_ignores_results_for_other_batch_sizes() -> None:
    explorer = PruningExplorer([16, 32, 64], default=32)
    explorer.report(64, 1.0, True)  # a concurrent run, not the one being explored
    assert explorer.current == 32


def test_thompson_sampling_posterior() -> None:
    bandit = GaussianThompson([16, 32], np.random.default_rng(0))
    for arm, reward in [(16, -10.0), (16, -12.0), (32, -5.0), (32, -5.0)]:
        bandit.observe(arm, reward)
    # 16: mean -11, variance 1, posterior sd sqrt(1/2); 32 has no variance: a point mass
    assert bandit.mean == [-11.0, -5.0]
    assert bandit.sd == [math.sqrt(1.0 / 2), 0.0]
    assert {bandit.predict() for _ in range(50)} == {32}


def test_thompson_sampling_explores_arms_with_too_few_rewards() -> None:
    bandit = GaussianThompson([16, 32], np.random.default_rng(0))
    for arm, reward in [(16, -1.0), (16, -1.0), (32, -100.0)]:
        bandit.observe(arm, reward)
    assert bandit.predict() == 32


def test_zeus_optimizer_moves_from_pruning_to_the_bandit(model: RunModel) -> None:
    bso = ZeusBatchSizeOptimizer(JobContext(model.trace, 0.5, 2.0, seed=3))
    costs = {8: (1e9, False), 16: (9.0, True), 32: (8.0, True), 64: (4.0, True)}
    while bso.explorer.current is not None:
        size = bso.predict()
        bso.observe(size, *costs[size])
    assert bso.rewards[64] == [-4.0, -4.0]
    assert bso.predict() == 64  # 64 has the best rewards, and no variance
    assert bso.bandit.arms == [16, 32, 64]


def test_grid_search_tries_every_cell_once_then_keeps_the_best(model: RunModel) -> None:
    runs = simulate(toy_traces(), GPU, "squad", "grid", 1, recurrences=14).history
    cells = list(zip(runs["batch_size"], runs["power_limit"], strict=True))
    # b0 first, then the other sizes ascending; limits from the highest down
    expected = [(b, p) for b in (32, 8, 16, 64) for p in (200, 150, 100)]
    assert cells[:12] == expected
    # 8 never reaches the target and 16 is early-stopped (threshold 2 x 7480, the cost of
    # 32 x 150 W): recurrence 4 takes seven attempts, the last one 64 x 200 W
    assert runs["recurrence"].tolist()[:11] == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 5]
    assert runs["reached"].tolist()[3:10] == [False] * 6 + [True]
    # the cheapest success costs 4200 at 64 x 200 W (3 x (0.5 x 1400 J + 0.5 x 200 W x 7 s))
    # and at 64 x 150 W (3 x (0.5 x 1200 J + 0.5 x 200 W x 8 s)): the first found is kept
    assert cells[12:] == [(64, 200)] * (len(cells) - 12)


def test_baselines_use_the_knobs_they_promise() -> None:
    result = simulate(toy_traces(), GPU, "squad", "default,pl-only,bs-only,oracle", 1)
    chosen = result.history.groupby("policy")[["batch_size", "power_limit"]]
    assert chosen.agg(set).to_dict("index") == {
        "default": {"batch_size": {32}, "power_limit": {200}},
        "pl-only": {"batch_size": {32}, "power_limit": {150}},  # JIT's choice for 32
        # pruning from 32: 16 is early-stopped (5 of its 6 epochs fit), so 8 is never tried
        "bs-only": {"batch_size": {16, 32, 64}, "power_limit": {200}},
        "oracle": {"batch_size": {64}, "power_limit": {200}},  # tied with 150 W: the higher
    }


# --------------------------------------------------------------------------- sweeps


def test_simulate_is_deterministic_per_seed() -> None:
    traces = toy_traces({8: [NAN, 5], 16: [3, 6, 4], 32: [4, 5, 3], 64: [2, 3, NAN]})
    one = simulate(traces, GPU, "squad", "all", [1, 2])
    two = simulate(traces, GPU, "squad", "all", [1, 2])
    pd.testing.assert_frame_equal(one.history, two.history)
    zeus = one.history[one.history["policy"] == "zeus"]
    by_seed = [s[["batch_size", "cost"]].to_numpy() for _, s in zeus.groupby("seed")]
    assert not np.array_equal(*by_seed)


def test_history_and_summary_shape() -> None:
    result = simulate(toy_traces(), GPU, "squad", "zeus,default,oracle", range(1, 4))
    history, summary = result.history, result.summary
    assert list(history.columns) == [
        "gpu", "workload", "eta", "beta", "policy", "seed", "recurrence", "attempt",
        "batch_size", "power_limit", "time_s", "energy_j", "cost", "reached",
    ]  # fmt: skip
    assert len(summary) == 9
    assert set(history.groupby(["policy", "seed"])["recurrence"].max()) == {24}
    default = summary[summary["policy"] == "default"]
    oracle = summary[summary["policy"] == "oracle"]
    assert (default["energy_vs_default"] == 1).all()
    assert (oracle["regret"] == 0).all()
    # Default runs b0 = 32 at 200 W: 4 epochs, 8000 J and 40 s every time.
    assert default["energy_j"].tolist() == [24 * 8000] * 3
    # Oracle runs 64 at 200 W: 3 epochs, 4200 J, cost 4200.
    assert oracle["cost"].tolist() == [24 * 4200] * 3
    zeus = summary[summary["policy"] == "zeus"]
    assert (zeus["cost_vs_default"] < 1).all() and (zeus["regret"] > 0).all()
    cumulative = result.cumulative()
    last = cumulative[cumulative["recurrence"] == 24]
    assert np.allclose(last["cum_cost"], summary["cost"])


def test_references_run_when_the_summary_needs_them() -> None:
    result = simulate(toy_traces(), GPU, "squad", "zeus", 1)
    assert set(result.history["policy"]) == {"zeus"}
    assert {"energy_vs_default", "regret"} <= set(result.summary.columns)
    assert set(result.references["policy"]) == {"default", "oracle"}
    assert "regret" in result.cumulative().columns


def test_sweeps_over_eta_and_beta() -> None:
    result = simulate(toy_traces(), GPU, "squad", "zeus", 1, eta=[0.0, 1.0], beta=[1.5, math.inf])
    assert len(result.summary) == 4
    assert sorted(set(result.summary["eta"])) == [0.0, 1.0]


def test_bad_knobs_are_rejected() -> None:
    with pytest.raises(SimulationError, match="eta must lie"):
        simulate(toy_traces(), GPU, "squad", "zeus", 1, eta=1.5)
    with pytest.raises(SimulationError, match="unknown policy 'best'"):
        simulate(toy_traces(), GPU, "squad", "best", 1)
    for bad in (0, -3):  # 0 once meant the default count, -3 an empty history
        with pytest.raises(SimulationError, match=f"recurrences must be at least 1, got {bad}"):
            simulate(toy_traces(), GPU, "squad", "zeus", 1, recurrences=bad)


class LargestAfterFirst:
    """A user policy: b0 first, then always the largest batch size."""

    def __init__(self, context: JobContext) -> None:
        self.sizes = context.batch_sizes
        self.first = context.default_batch_size
        self.costs: list[float] = []

    def predict(self) -> int:
        return self.sizes[-1] if self.costs else self.first

    def observe(self, batch_size: int, cost: float, reached: bool) -> None:
        self.costs.append(cost)


def test_a_custom_policy_plugs_in() -> None:
    mine = Policy("largest", LargestAfterFirst, JITPowerLimitOptimizer)
    result = simulate(toy_traces(), GPU, "squad", [mine, "default"], 1, recurrences=5)
    runs = result.history[result.history["policy"] == "largest"]
    assert runs["batch_size"].tolist() == [32, 64, 64, 64, 64]
    # JIT: 64's epoch costs are 1700 (100 W), 1400 (150 W), 1400 (200 W): the tie goes to 200 W
    assert runs["power_limit"].tolist() == [150, 200, 200, 200, 200]
    assert result.summary.set_index("policy").loc["largest", "energy_vs_default"] < 1


def test_public_function_survives_importing_the_package() -> None:
    import mltraces
    import mltraces.simulation  # a submodule must not shadow mltraces.simulate

    result = mltraces.simulate(toy_traces(), GPU, "squad", "default", 1, recurrences=2)
    assert len(result.history) == 2


# --------------------------------------------------------------------------- Alibaba replay


def groups_frame() -> pd.DataFrame:
    rows = [
        # group a: job 2 starts while job 1 runs; job 3 starts after both finished
        ("a", 0.0, 100.0, "squad", 1.0),
        ("a", 50.0, 150.0, "squad", 2.0),
        ("a", 200.0, 300.0, "squad", 0.5),
        # group b, listed out of order: jobs overlap in a chain
        ("b", 30.0, 90.0, "squad", 1.0),
        ("b", 0.0, 60.0, "squad", 1.0),
        ("b", 80.0, 100.0, "squad", 1.5),
    ]
    return pd.DataFrame(
        rows, columns=["group", "start_time", "end_time", "dataset", "runtime_ratio"]
    )


def test_alibaba_overlaps_retries_and_scaling() -> None:
    box: list[Scripted] = []
    groups = groups_frame()
    history, summary = replay_alibaba(
        toy_traces(), groups[groups["group"] == "a"], GPU, scripted_policy([32, 8, 64], box),
        processes=1,
    )  # fmt: skip
    # Job 1 asks the optimizer (32); job 2 overlaps it, so it takes the best known size,
    # b0 = 32, without asking; job 3 asks (8, which fails at 300 and is retried at once for
    # the same 100 s with the next prediction, 64).
    assert history["batch_size"].tolist() == [32, 32, 8, 64]
    assert history["attempt"].tolist() == [1, 1, 1, 2]
    assert history["start_time"].tolist() == [0, 50, 200, 300]
    assert history["end_time"].tolist() == [100, 150, 300, 400]
    assert history["reached"].tolist() == [True, True, False, True]
    # energy and time scale with the runtime ratio: 8000 J / 40 s per b0 run
    assert history["energy_j"].tolist()[:2] == [8000, 16000]
    assert history["time_s"].tolist()[:2] == [40, 80]
    assert [size for size, _, _ in box[0].seen] == [32, 32, 8, 64]
    assert summary["runs"].tolist() == [4]


def test_alibaba_observes_in_end_time_order() -> None:
    box: list[Scripted] = []
    groups = groups_frame()
    history, _ = replay_alibaba(
        toy_traces(), groups[groups["group"] == "b"], GPU, scripted_policy([32, 64], box),
        processes=1,
    )  # fmt: skip
    assert history["start_time"].tolist() == [0, 30, 80]
    assert history["end_time"].tolist() == [60, 90, 100]
    assert history["job"].tolist() == [1, 2, 3]


def test_alibaba_is_deterministic_and_parallel() -> None:
    traces = toy_traces({8: [NAN, 5], 16: [3, 6, 4], 32: [4, 5, 3], 64: [2, 3, NAN]})
    many = pd.concat(
        [groups_frame().assign(group=lambda f, k=k: f["group"] + str(k)) for k in range(6)]
    )
    inline, _ = replay_alibaba(traces, many, GPU, "zeus,default", processes=1)
    parallel, summary = replay_alibaba(traces, many, GPU, "zeus,default", processes=2)
    pd.testing.assert_frame_equal(inline, parallel)
    assert set(summary["policy"]) == {"zeus", "default"}
    assert summary.set_index("policy").loc["default", "energy_vs_default"] == 1


def test_alibaba_replays_gpu_and_workload_lists_and_checks_its_knobs() -> None:
    power = power_frame()
    traces = TraceSet(train_frame(), pd.concat([power.assign(gpu="v100"), power.assign(gpu="a40")]))
    history, summary = replay_alibaba(traces, groups_frame(), "all", "default", processes=1)
    assert set(history["gpu"]) == set(summary["gpu"]) == {"v100", "a40"}
    one, _ = replay_alibaba(traces, groups_frame(), "a40", "default", workloads="squad")
    pd.testing.assert_frame_equal(one, history[history["gpu"] == "a40"].reset_index(drop=True))
    for bad, match in (
        ({"workloads": "mnist"}, "unknown workload 'mnist'"),
        ({"eta": 3.0}, "eta must lie in"),
        ({"beta": 0.0}, "beta must be positive"),
        ({"processes": 0}, "processes must be at least 1, got 0"),
    ):
        with pytest.raises(SimulationError, match=match):
            replay_alibaba(traces, groups_frame(), "v100", "default", **bad)


# --------------------------------------------------------------------------- CLI


def catalog(groups: pd.DataFrame | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA zeus")
    con.register("train_frame", train_frame())
    con.register("power_frame", power_frame().assign(gpu=GPU))
    con.execute("CREATE VIEW zeus.train AS SELECT * FROM train_frame")
    con.execute("CREATE VIEW zeus.power AS SELECT * FROM power_frame")
    if groups is not None:
        con.register("groups_frame", groups)
        con.execute("CREATE VIEW zeus.alibaba_groups AS SELECT * FROM groups_frame")
    return con


def run_cli(monkeypatch: pytest.MonkeyPatch, argv: list[str], con: duckdb.DuckDBPyConnection):
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    monkeypatch.setattr(cli, "open_catalog", lambda args, tables=None, **options: con)
    return cli.run(parser.parse_args(argv))


def test_load_traces_from_the_catalog() -> None:
    trace = load_traces(catalog()).job(GPU, "squad")
    assert trace.batch_sizes == (8, 16, 32, 64)
    assert trace.run_epochs[2].tolist() == [4]


def test_cli_history_as_csv(monkeypatch, capsys) -> None:
    argv = ["--gpu", GPU, "--workload", "squad", "--policy", "zeus,default", "--seeds", "1-2",
            "--recurrences", "3", "--format", "csv"]  # fmt: skip
    assert run_cli(monkeypatch, argv, catalog()) == 0
    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert len(out) >= 12 and set(out["seed"]) == {1, 2}
    assert list(out.columns[:2]) == ["gpu", "workload"]


def test_cli_summary_as_json_to_a_file(monkeypatch, tmp_path) -> None:
    target = tmp_path / "summary.json"
    argv = ["--gpu", GPU, "--workload", "squad", "--summary", "--format", "json", "-o", str(target)]
    assert run_cli(monkeypatch, argv, catalog()) == 0
    rows = json.loads(target.read_text())
    assert rows[0]["policy"] == "zeus" and "regret" in rows[0]


def test_cli_alibaba(monkeypatch, capsys) -> None:
    argv = ["--alibaba", "--gpu", GPU, "--processes", "1", "--summary"]
    assert run_cli(monkeypatch, argv, catalog(groups_frame())) == 0
    assert "squad" in capsys.readouterr().out


def test_cli_alibaba_refuses_options_it_would_ignore(monkeypatch) -> None:
    for extra in (["--seeds", "1-3"], ["--recurrences", "5"]):
        with pytest.raises(SimulationError, match="drop --seeds and --recurrences"):
            run_cli(monkeypatch, ["--alibaba", *extra], catalog(groups_frame()))
    with pytest.raises(SimulationError, match="--processes applies to --alibaba only"):
        run_cli(monkeypatch, ["--processes", "2"], catalog())


def test_cli_seed_ranges() -> None:
    assert cli.parse_seeds("1-3,7") == [1, 2, 3, 7]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_seeds("one")


def test_cli_table_is_a_readable_summary_by_default(monkeypatch, capsys) -> None:
    argv = ["--gpu", GPU, "--workload", "squad", "--policy", "zeus,default", "--seeds", "1-2"]
    assert run_cli(monkeypatch, argv, catalog()) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "eta = 0.5, beta = 2"
    assert lines[1].split() == ["gpu", "workload", "policy", "seed", "recurrences", "ETA", "MJ",
                                "TTA", "h", "ETA/default", "TTA/default", "regret", "MJ"]
    rows = [line.split() for line in lines[2:-1]]
    assert [(r[2], r[3]) for r in rows] == [("zeus", "1"), ("zeus", "2"),
                                             ("default", "1"), ("default", "2")]
    assert all(r[7] == "1" for r in rows if r[2] == "default")  # ETA/default of Default
    assert max(len(line) for line in lines[:-1]) <= 100


def test_cli_history_flag_prints_every_run_as_a_table(monkeypatch, capsys) -> None:
    argv = ["--gpu", GPU, "--workload", "squad", "--recurrences", "3", "--history"]
    assert run_cli(monkeypatch, argv, catalog()) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["gpu", "workload", "eta"]
    assert len(lines) - 1 >= 3 and all(line.split()[4] == "zeus" for line in lines[1:])


def test_cli_summary_and_history_exclude_each_other(capsys) -> None:
    parser = argparse.ArgumentParser()
    cli.configure(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--summary", "--history"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_cli_alibaba_history_as_json(monkeypatch, capsys) -> None:
    argv = ["--alibaba", "--gpu", GPU, "--processes", "1", "--format", "json"]
    assert run_cli(monkeypatch, argv, catalog(groups_frame())) == 0
    rows = json.loads(capsys.readouterr().out)  # numpy scalars would not serialise
    assert len(rows) >= 4 and {"start_time", "energy_j", "reached"} <= set(rows[0])
    assert isinstance(rows[0]["reached"], bool)
