"""Chronus's lease plans (:mod:`~.policies.leases`) and its replay, on cases worked out
by hand or checked against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from mltraces.scheduling import Chronus, SchedulingError, get_policy, schedule
from mltraces.scheduling.policies.leases import (
    Demand,
    Flat,
    Spans,
    columns,
    pack,
    pack_each,
    solve,
    solve_flat,
    solve_spans,
)


def itp(rows: list[tuple]) -> pd.DataFrame:
    """ITP-format jobs from (job_id, submit, duration, deadline, num_gpu) tuples."""
    return pd.DataFrame([{"job_id": name, "submission_time": submit, "num_iteration": duration,
                          "model_name": "m", "deadline": deadline, "batch_size": 64,
                          "num_gpu": gpus, "duration": duration}
                         for name, submit, duration, deadline, gpus in rows])


def by_id(result) -> pd.DataFrame:
    return result.jobs.set_index("job_id")


# -- the lease programs ---------------------------------------------------------------------
def test_pack_takes_the_latest_terms_widest_and_tightest_first() -> None:
    demands = [Demand(1, 2, 4), Demand(2, 1, 3), Demand(1, 2, 3)]
    fits, room, plan = pack(demands, [3, 3], 3)
    assert fits
    # the 2-GPU job first (term 2), then the 1-GPU job with slack 1 (terms 2, 1), then the
    # other: term 3, not 2 (full), then 1
    assert [p.tolist() for p in plan] == [[1, 3], [2], [1, 2]]
    assert room.tolist() == [3, 1, 0, 2]  # terms 0, 1 from the profile, 2, 3 from the cluster
    assert not pack([Demand(2, 2, 2), Demand(2, 1, 2)], [], 3)[0]
    # the fallback keeps going past a job that does not fit
    assert pack_each([Demand(2, 2, 2), Demand(2, 1, 2), Demand(1, 1, 1)], [], 3)[0] is False
    assert [p.tolist() for p in pack_each([Demand(2, 2, 2), Demand(1, 2, 2)], [], 3)[1]] == \
        [[0, 1], [0, 1]]


def _best_first_term(demands: list[Demand], room: list[int], objective: str) -> int | None:
    """Brute force: the optimal GPUs in term 0 over every feasible plan (None: infeasible)."""
    choices = [list(itertools.combinations(range(d.horizon), d.need)) for d in demands]
    best = None
    for plan in itertools.product(*choices):
        used = [0] * len(room)
        for d, terms in zip(demands, plan, strict=True):
            for t in terms:
                used[t] += d.width
        if any(u > r for u, r in zip(used, room, strict=True)):
            continue
        first = used[0]
        if best is None or (first < best if objective == "minimize" else first > best):
            best = first
    return best


def _check_plan(demands: list[Demand], room: list[int], plan) -> int:
    used = [0] * len(room)
    for d, terms in zip(demands, plan, strict=True):
        assert len(set(terms.tolist())) == d.need and all(0 <= t < d.horizon for t in terms)
        for t in terms:
            used[t] += d.width
    assert all(u <= r for u, r in zip(used, room, strict=True))
    return used[0]


@pytest.mark.parametrize("objective", ["minimize", "maximize"])
def test_solve_finds_the_optimum_brute_force_finds(objective: str) -> None:
    rng = np.random.default_rng(3)
    for _ in range(60):
        size = int(rng.choice([2, 4, 8]))
        demands = [Demand(int(rng.choice([1, 2, 4])), 0, int(rng.integers(1, 5)))
                   for _ in range(int(rng.integers(1, 5)))]
        demands = [Demand(min(d.width, size), int(rng.integers(1, d.horizon + 1)), d.horizon)
                   for d in demands]
        profile = [int(rng.integers(size // 2, size + 1)) for _ in range(int(rng.integers(0, 3)))]
        room = list(profile) + [size] * (max(d.horizon for d in demands) - len(profile))
        room = room[: max(d.horizon for d in demands)]
        best = _best_first_term(demands, room, objective)
        for shortcut in (True, False):
            plan = solve(demands, profile, size, objective, shortcut=shortcut)
            if best is None:
                assert plan is None
            else:
                assert _check_plan(demands, room, plan) == best, (demands, profile, shortcut)


def test_solve_asks_highs_when_no_packing_proves_the_optimum() -> None:
    """Three 1-GPU jobs need both terms of a 4-GPU cluster and a 2-GPU job one: no packing
    can keep term 0 to the forced 3 GPUs, and the program shows none exists at all."""
    demands = [Demand(1, 2, 2)] * 3 + [Demand(2, 1, 2)]
    assert solve(demands, [], 4, "minimize") is None
    plan = solve([Demand(1, 2, 2), Demand(1, 2, 2), Demand(2, 1, 2), Demand(2, 1, 2)], [], 4,
                 "minimize")
    assert sorted(len(t) for t in plan) == [1, 1, 2, 2]
    assert _check_plan([Demand(1, 2, 2), Demand(1, 2, 2), Demand(2, 1, 2), Demand(2, 1, 2)],
                       [4, 4], plan) == 4


@pytest.mark.parametrize("objective", ["minimize", "maximize"])
@pytest.mark.parametrize("layout", ["latest", "earliest"])
def test_plans_written_as_spans_hold_the_flat_plans_terms(objective: str, layout: str) -> None:
    """The spans packing splits runs of terms as jobs take them: the same plan, job by job,
    as the term-by-term one (or None with it), over long horizons and uneven profiles."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        size = int(rng.integers(1, 9))
        demands = [Demand(int(rng.integers(1, size + 1)), int(rng.integers(0, 9)),
                          int(rng.integers(0, 40))) for _ in range(int(rng.integers(0, 9)))]
        profile = rng.integers(-1, size + 1, int(rng.integers(0, 6))).astype(np.int64)
        width, need, horizon = columns(demands)
        flat = solve_flat(width, need, horizon, profile, size, objective, layout=layout)
        spans = solve_spans(width, need, horizon, profile, size, objective, layout=layout)
        if flat is None:
            assert spans is None
        else:
            assert [r.tolist() for r in spans.rows()] == [r.tolist() for r in flat.rows()]


def test_spans_of_a_flat_plan_merge_consecutive_terms() -> None:
    flat = Flat.of([np.array([0, 1, 2, 5, 7, 8]), np.array([], np.int64), np.array([3])])
    spans = Spans.of(flat)
    assert spans.spans.tolist() == [0, 3, 5, 6, 7, 9, 3, 4]
    assert spans.count.tolist() == [3, 0, 1]
    assert [r.tolist() for r in spans.rows()] == [[0, 1, 2, 5, 7, 8], [], [3]]


def test_solve_refuses_an_unknown_objective() -> None:
    with pytest.raises(ValueError, match="objective"):
        solve([Demand(1, 1, 1)], [], 1, "random")


# -- the replay ---------------------------------------------------------------------------------
def test_one_job_runs_from_the_first_lease_and_gains_the_wait_as_run_time() -> None:
    """1,000 s on 1 GPU, deadline 3,000 s, 60 s steps. Estimate int(1000 x (1 + 0.5/240) x
    1.1) = 1102 s: 5 leases before the last whole lease by the deadline (12 - 1 = 11), so it
    is accepted with the deadline 2,880 s. Arrivals are taken after the lease at t=0: it
    starts at the lease of t=240. Its clock was last read at t=0, so at t=480 it has run
    480 s (the artifact credits the wait); it ends at 960 + (1000 - 960) + 0.5 s restart."""
    out = by_id(schedule(itp([("a", 0, 1000, 3000, 1)]), "n1g8", None, "chronus"))
    assert out.loc["a", "start_time"] == 240
    assert out.loc["a", "finish_time"] == 1000.5
    assert out.loc["a", "deadline_met"]


def test_a_job_that_cannot_be_guaranteed_runs_on_spare_gpus() -> None:
    """Job b cannot get 4 leases of 8 GPUs beside job a's plan before its deadline, so it is
    declined and runs on what a leaves free; a keeps its guarantee."""
    trace = itp([("a", 0, 2000, 2000 * 3, 8), ("b", 0, 700, 1500, 8), ("c", 0, 400, 20_000, 4)])
    out = by_id(schedule(trace, "n2g8", None, "chronus"))
    assert out.loc["a", "deadline_met"]
    assert out["finish_time"].notna().all()
    assert out.loc["b", "start_time"] < out.loc["a", "finish_time"]  # spare GPUs, not a lease


def test_chronus_is_a_registered_policy_with_checked_options() -> None:
    assert isinstance(get_policy("chronus"), Chronus)
    assert get_policy("time-aware-with-lease").name == "chronus"
    with pytest.raises(SchedulingError, match="plans must be one of"):
        Chronus(plans="gurobi")
    with pytest.raises(SchedulingError, match="divide its 240 s lease"):
        schedule(itp([("a", 0, 100, 1000, 1)]), "n1g8", None, Chronus(check=70))


def busy_trace(seed: int = 5, jobs: int = 40) -> pd.DataFrame:
    """Jobs of 1-8 GPUs arriving faster than two 8-GPU nodes run them, some turned down."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(jobs):
        duration = int(rng.integers(300, 6000))
        submit = int(k * rng.integers(60, 600))
        rows.append((f"j{k}", submit, duration, submit + int(duration * rng.uniform(0.8, 3)),
                     int(rng.choice([1, 2, 4, 8]))))
    return itp(rows)


def test_plans_and_ties_give_valid_replays_of_a_busy_trace() -> None:
    trace = busy_trace()
    ratios = {}
    for policy in (Chronus(), Chronus(plans="highs"), Chronus(ties=1), Chronus(plans="packing")):
        try:
            result = schedule(trace, "n2g8", None, policy)
        except SchedulingError as error:  # the packing alone may stop, as the artifact does
            assert policy.plans == "packing" and "artifact stops here" in str(error)
            continue
        out = result.jobs
        assert out["finish_time"].notna().all() and (out["finish_time"] >= out["start_time"]).all()
        series = result.utilisation
        assert series["allocated_gpus"].between(0, 16).all()
        ratios[(policy.plans, policy.ties)] = result.summary["ddl_satis_ratio"].iloc[0]
    assert all(0 < r <= 1 for r in ratios.values()) and len(ratios) >= 3


def test_jobs_wider_than_the_cluster_are_turned_away() -> None:
    out = by_id(schedule(itp([("huge", 0, 100, 1000, 16), ("ok", 0, 100, 1000, 1)]), "n1g8",
                         None, "chronus"))
    assert not out.loc["huge", "admitted"] and math.isnan(out.loc["huge", "finish_time"])
    assert out.loc["ok", "deadline_met"]


def test_the_packing_order_is_the_artifacts_sort() -> None:
    """The compiled merge sort orders jobs as Python's stable sort on the artifact's keys."""
    from mltraces.scheduling.cores import leasecore

    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 33, 100):
        width, need, horizon = (rng.integers(0, 4, n).astype(np.int64) for _ in range(3))
        out = np.zeros(n, np.int64)
        leasecore.order(width, need, horizon, leasecore.KEYS["packing"], out)
        expected = sorted(range(n), key=lambda k: (-width[k], horizon[k] - need[k], -horizon[k]))
        assert out.tolist() == expected
        leasecore.order(width, need, horizon, leasecore.KEYS["slack"], out)
        assert out.tolist() == sorted(range(n), key=lambda k: horizon[k] - need[k])


_INTERPRETED_CHRONUS = """
import sys
sys.path.insert(0, {tests!r})
from test_chronus import busy_trace
from mltraces.scheduling import Chronus, schedule
from mltraces.scheduling.cores import leasecore
assert leasecore.__file__.endswith(".py"), leasecore.__file__  # the packing runs as Python
for name, policy in {policies!r}.items():
    schedule(busy_trace(), "n2g8", None, eval(policy)).jobs.to_csv({out!r} + name + ".csv",
                                                                   index=False)
"""


def test_compiled_chronus_equals_the_interpreted_one(tmp_path) -> None:
    """Chronus's packing loops give the same jobs compiled and as plain Python (both
    objectives and both layouts of its certified plans occur on this trace)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from mltraces.scheduling.cores import leasecore, native

    if not native.build().compiled:
        pytest.skip(f"the cores run as plain Python here: {native.build().reason}")
    assert not leasecore.__file__.endswith(".py"), leasecore.__file__
    policies = {"latest": "Chronus()", "earliest": "Chronus(layout='earliest')",
                "ties": "Chronus(ties=2)"}
    script = _INTERPRETED_CHRONUS.format(tests=str(Path(__file__).parent), policies=policies,
                                         out=f"{tmp_path}/")
    env = {**os.environ, "MLTRACES_INTERPRETED": "1"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=600)
    for name, policy in policies.items():
        compiled = schedule(busy_trace(), "n2g8", None, eval(policy)).jobs
        interpreted = pd.read_csv(tmp_path / f"{name}.csv", dtype={"job_id": str})
        pd.testing.assert_frame_equal(
            compiled.astype(interpreted.dtypes.to_dict(), errors="ignore"), interpreted,
            check_dtype=False)
