"""ElasticFlow Figs. 9-11 as data: setups from the source card, cases, measures, Fig. 10 plot."""

from __future__ import annotations

import numpy as np
import pytest
from test_generator import synthetic_profiles

from mltraces.papers.elasticflow_asplos23 import genfigs
from mltraces.scheduling import ClusterSpec, sweep


def test_setups_are_the_papers() -> None:
    assert genfigs.setup("fig9")["clusters"] == ["n8g8", "n16g8", "n32g8"]
    assert genfigs.trace_spec("fig10").label == \
        "generated(num_jobs=100,lam=1500,seed=1,min_ddl=1.5)"
    assert genfigs.setup("fig11")["best_effort"] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert genfigs.setup("fig11")["ratios"]["elasticflow"][0] == 0.74
    # every policy of Fig. 11 is replayed, Chronus too (registered); Pollux would not be
    assert genfigs.replayed(genfigs.setup("fig11")["policies"]) == [
        "edf", "gandiva", "tiresias", "themis", "chronus", "elasticflow"]
    assert genfigs.replayed(["chronus", "pollux"]) == ["chronus"]


def test_efficiency_steps_draw_what_the_artifacts_script_draws() -> None:
    times = [0, 240, 1800, 2000, 4300, 7000]
    values = [0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    hours, drawn = genfigs.efficiency_steps(times, values)
    # kept: 1800 (the first at least 2,400 s after -610), 4300, 7000; steps; the last
    # point's value replaced by the final drop to 0
    assert hours == pytest.approx([0, (2500 - 1e-6) / 3600, 2500 / 3600, (5200 - 1e-6) / 3600,
                                   5200 / 3600])
    assert drawn == [0.3, 0.3, 0.1, 0.1, 0.0]
    assert genfigs.efficiency_steps([0, 100], [0.1, 0.2]) == ([], [])
    # Chronus's resource log: rounds of efficiency 0 are passed over, not kept
    assert genfigs.efficiency_steps([1800, 4300], [0.0, 0.2], skip_zero=True) == ([0.0], [0.0])


def test_fig11_measures_best_effort_jct_against_gandiva() -> None:
    profiles = synthetic_profiles()
    cases = genfigs.fig11_cases(profiles, ClusterSpec.from_name("n2g8"), seeds=(3,),
                                shares=(0.5,))
    table = genfigs.fig11_table(sweep(cases, "gandiva,tiresias", max_workers=1))
    assert set(table["share"]) == {0.5} and set(table["seed"]) == {3}
    row = table.set_index("policy")
    assert row.loc["gandiva", "jct_improvement"] == 1.0
    assert row.loc["tiresias", "jct_improvement"] == pytest.approx(
        row.loc["gandiva", "best_effort_jct"] / row.loc["tiresias", "best_effort_jct"])
    jobs = sweep(cases, "tiresias", max_workers=1).jobs
    best = jobs[jobs["best_effort"]]
    assert best["logged_jct"].notna().all()
    assert row.loc["tiresias", "best_effort_jct"] == best["logged_jct"].astype(int).mean()
    assert row.loc["tiresias", "ratio"] == jobs.loc[~jobs["best_effort"], "deadline_met"].mean()


def test_fig9_cases_share_one_trace_per_seed() -> None:
    clusters = {n: ClusterSpec.from_name(n) for n in genfigs.setup("fig9")["clusters"]}
    cases = genfigs.fig9_cases(synthetic_profiles(), clusters, seeds=(1, 2))
    assert [(c.trace, c.cluster.name) for c in cases] == [
        ("seed=1", "n8g8"), ("seed=1", "n16g8"), ("seed=1", "n32g8"),
        ("seed=2", "n8g8"), ("seed=2", "n16g8"), ("seed=2", "n32g8")]
    assert cases[0].jobs.frame.equals(cases[2].jobs.frame)
    assert not cases[0].jobs.frame["deadline"].equals(cases[3].jobs.frame["deadline"])
    assert {c.slot for c in cases} == {240}


def test_chronus_holds_best_effort_jobs_to_their_listed_deadline_and_logs_every_step() -> None:
    """The artifact's converter writes every job with its trace deadline, best-effort ones
    too, so its Chronus plans them as deadline jobs; the ratio still counts only the jobs
    with a deadline, and the round log has every 240-s step from 0 (the resource log)."""
    profiles = synthetic_profiles()
    [case] = genfigs.fig11_cases(profiles, ClusterSpec.from_name("n8g8"), seeds=(3,),
                                 shares=(0.5,))
    jobs = case.jobs.records()
    best = [j for j in jobs if j.best_effort]
    assert best and all(j.deadline > 1e18 and j.listed_deadline < 1e9 for j in best)
    [outcome] = sweep([case], "chronus", max_workers=1).outcomes
    frame = outcome.job_frame()
    assert frame["finish_time"].notna().all()
    with_deadline = frame[~frame["best_effort"]]
    assert outcome.ratio == with_deadline["deadline_met"].mean()
    rounds = outcome.rounds
    assert rounds[0] == 0 and (np.diff(rounds) == 240).all()
    assert rounds[-1] - 240 < frame["finish_time"].max() <= rounds[-1]  # the last job's step
