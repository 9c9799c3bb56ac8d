"""The replays that scale to a million jobs give what the event-by-event loops give, job by job.

Tiresias's incremental loop is checked against the loop it replaced
(``reference_tiresias``, which matches the artifact wherever the artifact runs
here), and the FIFO/SJF queue replay against the shared engine running the
same policies' ``allocate``, on random traces built to be hard: congestion,
bursts, odd GPU counts, fractional times, frequent restarts, more queues.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from reference_tiresias import ReferenceTiresias
from synthetic import helios_gpu_jobs
from test_scheduling import mixed_trace, profiles

from mltraces.scheduling import (
    FIFO,
    SJF,
    Case,
    ClusterSpec,
    Overhead,
    Tiresias,
    as_jobs,
    run_case,
)
from mltraces.scheduling.engine import _Engine


def hard_trace(n: int, seed: int, *, fractional: bool = False) -> pd.DataFrame:
    """Normalised duration-only jobs: bursts, a heavy tail, odd and too-large GPU counts."""
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1, 1, 1, 2, 3, 4, 5, 8, 12, 16, 40, 100], size=n)
    duration = np.maximum(1, rng.lognormal(np.log(400), 1.8, size=n))
    submit = np.sort(np.repeat(rng.uniform(0, n * 40, size=n // 4 + 1), 4)[:n])
    if not fractional:
        duration, submit = np.round(duration), np.round(submit)
    return pd.DataFrame({
        "job_id": [f"j{k}" for k in range(n)], "submit_time": submit, "model": "",
        "batch_size": 0, "num_gpu": gpus, "iterations": np.nan, "duration": duration,
        "deadline": submit + duration * rng.uniform(1, 6, size=n),
    })


def same_replay(case: Case, ours, reference) -> None:
    a, b = run_case(case, reference), run_case(case, ours)
    pd.testing.assert_frame_equal(b.job_frame(), a.job_frame(), check_exact=True)
    pd.testing.assert_frame_equal(b.utilisation_frame(), a.utilisation_frame(), check_exact=True)


SETUPS = [
    pytest.param(dict(), id="artifact-overheads"),
    pytest.param(dict(overhead=Overhead(restart_every=3)), id="restart-every-3-rounds"),
    pytest.param(dict(overhead=Overhead.none()), id="no-overhead"),
    pytest.param(dict(slot=7.5), id="slot-7.5"),
]


@pytest.mark.parametrize("options", SETUPS)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("fractional", [False, True])
def test_tiresias_incremental_loop_matches_the_event_by_event_one(
    options: dict, seed: int, fractional: bool
) -> None:
    case = Case.build("t", hard_trace(1500, seed, fractional=fractional), "n6g8", **options)
    same_replay(case, Tiresias(), ReferenceTiresias())


@pytest.mark.parametrize("thresholds", [(100, 500, 2000), (3250.5,), (7.0, 30.0, 3250, 7200)])
def test_tiresias_with_other_queues_matches_the_event_by_event_one(thresholds) -> None:
    case = Case.build("t", hard_trace(1200, 3), "n4g8", overhead=Overhead(restart_every=5))
    same_replay(case, Tiresias(thresholds), ReferenceTiresias(thresholds))


def test_tiresias_on_helios_shaped_jobs_matches_the_event_by_event_one() -> None:
    case = Case.build("h", helios_gpu_jobs(4000, 5, cluster_gpus=256), "n32g8")
    same_replay(case, Tiresias(), ReferenceTiresias())


def test_tiresias_on_iteration_traces_matches_the_event_by_event_one() -> None:
    case = Case.build("m", mixed_trace(300, 11), "n2g8", profiles())
    same_replay(case, Tiresias(), ReferenceTiresias())


class _OnTheEngine:
    """The shipped policy run by the shared engine (its ``allocate`` at every event)."""

    def __init__(self, policy) -> None:
        self.policy, self.name = policy, policy.name

    def simulate(self, setup):
        return _Engine(setup, self.policy).run()


@pytest.mark.parametrize("policy", [FIFO(), SJF()], ids=["fifo", "sjf"])
@pytest.mark.parametrize("trace", ["duration", pytest.param("fractional", marks=pytest.mark.slow),
                                   pytest.param("iterations", marks=pytest.mark.slow)])
def test_the_queue_replay_matches_the_engine(policy, trace: str) -> None:
    if trace == "iterations":
        # uneven speeds, and a GPU count without a profile (speed 0: it holds its GPUs)
        case = Case.build("m", mixed_trace(200, 4), "n2g8", profiles({1: 1.0, 2: 1.7, 4: 3.1}))
        jobs = case.jobs.frame
        case = Case.build("m", jobs[jobs["num_gpu"] < 8], "n2g8",
                          profiles({1: 1.0, 2: 1.7, 4: 3.1}))
    else:
        case = Case.build("t", hard_trace(2000, 9, fractional=trace == "fractional"), "n6g8")
    same_replay(case, policy, _OnTheEngine(policy))


def test_a_subclass_that_reorders_runs_on_the_engine() -> None:
    class LongestFirst(SJF):
        name = "ljf"

        def order(self, view):
            return sorted(view.waiting(), key=view.seconds_left, reverse=True)

    case = Case.build("t", hard_trace(300, 4), "n2g8")
    ours = run_case(case, LongestFirst()).job_frame().set_index("job_id")
    sjf = run_case(case, SJF()).job_frame().set_index("job_id")
    assert not ours["start_time"].equals(sjf["start_time"])


def test_a_job_table_of_many_rows_is_built_without_per_row_python() -> None:
    """The replays read columns: a Jobs table builds no Job objects unless one is asked for."""
    jobs = as_jobs(helios_gpu_jobs(20_000, 2))
    replay = jobs.replay_jobs()
    assert replay._records is None and jobs.replay_jobs() is replay
    assert not replay.submit_time.flags.writeable  # shared by every replay of the table
    result = run_case(Case("h", jobs, ClusterSpec(16)), "fifo")
    assert replay._records is None and len(result.job_frame()) == 20_000
    assert replay[3].job_id == jobs.frame["job_id"].iloc[3]  # objects on demand
