"""The trace generator: the artifact's jobs number for number, seeded deadlines, bad settings.

The expected hashes were computed by running the artifact's own
``trace_generator/generate_trace.py`` (gudiandian/ElasticFlow@b3f5ea4c, Python
3.11) on this machine with the A100 profiles and the options named beside
each, and hashing its output CSV; for the traces with deadline draws, its
unseeded module-level ``random`` was seeded from outside first
(``random.seed(K); runpy.run_path("generate_trace.py")``), which our
``deadline_seed=K`` must then reproduce. ``benchmarks/bench_generated.py``
re-runs that comparison.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mltraces.papers.elasticflow_asplos23.generator import (
    CSV_COLUMNS,
    JOB_TABLE,
    TraceSpec,
    generate_trace,
    gpu_count,
)
from mltraces.scheduling import Profiles, as_jobs, load_profiles, schedule
from mltraces.scheduling.errors import SchedulingError

THROUGHPUTS = (
    "raw.githubusercontent.com/gudiandian/ElasticFlow/b3f5ea4c9fa92107b0e0e2ba7c06900f4a0ec03a"
    "/ElasticFlow/scheduler/throughputs_A100"
)
#: sha256 of the artifact's output CSV for these settings (see the module docstring)
ARTIFACT_CSV_SHA256 = {
    # run_fig10.sh: --num_jobs=100 --lam=1500 --min_ddl=1.5 --seed=1 (fully deterministic)
    TraceSpec(100, 1500, seed=1, min_ddl=1.5):
        "0d9011c099fdd2977a88cb9d100d4259d6e2e4bd35ea38de7dab3c94acf1a5c5",
    # run_fig9.sh's --num_jobs=1000 --lam=1500, module random seeded 7
    TraceSpec(1000, 1500, deadline_seed=7):
        "d61d5f7e223bbfef18d96d9f043683931ec72b87c07ff5e4970957cfcc8bbc77",
    # run_fig11.sh's --num_jobs=200 --lam=900 --best_effort_percentage=0.3, seeded 11
    TraceSpec(200, 900, best_effort=0.3, deadline_seed=11):
        "5c7955fcccb89c188c694d7478b165be3ceddc935ca0cb4b5bc97811adf7bf3b",
}


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode()


@pytest.fixture(scope="module")
def a100(upstream_dir: Path) -> Profiles:
    return load_profiles(upstream_dir / THROUGHPUTS)


@pytest.mark.parametrize("spec", list(ARTIFACT_CSV_SHA256), ids=lambda s: s.label)
def test_the_artifact_generator_output_byte_for_byte(a100, spec) -> None:
    trace = generate_trace(a100, spec)
    assert hashlib.sha256(csv_bytes(trace)).hexdigest() == ARTIFACT_CSV_SHA256[spec]


def test_the_fig10_trace_starts_as_the_artifact_logs_it(a100) -> None:
    trace = generate_trace(a100, num_jobs=100, lam=1500, min_ddl=1.5, seed=1)
    # rows 0 and 3 of the artifact's output (and its shipped Fig. 10 job logs)
    assert trace.iloc[0].tolist() == [0, 0, 7246, "resnet50", 5896, 256, 1, 3930, 0]
    assert trace.iloc[3].tolist() == [3, 9203, 17316, "deepspeech2", 25437, 64, 1, 10823, 0]
    assert list(trace.columns) == list(CSV_COLUMNS)


def synthetic_profiles() -> Profiles:
    """Every model of the generator's table, a made-up speed on 1-16 GPUs."""
    rows = [(model, batch, g, 10.0 * g ** 0.8 / batch)
            for model, batch in JOB_TABLE for g in (1, 2, 4, 8, 16)]
    return Profiles.from_frame(pd.DataFrame(rows, columns=["model", "batch_size", "gpus",
                                                           "iterations_per_s"]))


def test_a_seed_gives_one_trace_and_the_deadline_seed_moves_only_deadlines() -> None:
    profiles = synthetic_profiles()
    first = generate_trace(profiles, num_jobs=300, lam=600, seed=4, best_effort=0.5)
    assert first.equals(generate_trace(profiles, num_jobs=300, lam=600, seed=4, best_effort=0.5))
    other = generate_trace(profiles, num_jobs=300, lam=600, seed=4, best_effort=0.5,
                           deadline_seed=99)
    jobs = [c for c in CSV_COLUMNS if c not in ("ddl", "best_effort")]
    assert first[jobs].equals(other[jobs])
    assert not first["ddl"].equals(other["ddl"])
    assert not first["best_effort"].equals(other["best_effort"])
    assert not first[jobs].equals(generate_trace(profiles, num_jobs=300, lam=600, seed=5)[jobs])


def test_the_distributions_are_the_artifacts() -> None:
    trace = generate_trace(synthetic_profiles(), num_jobs=20_000, lam=1500, seed=3,
                           best_effort=0.3)
    shares = trace["num_gpu"].value_counts(normalize=True)
    for gpus, share in {1: 0.83, 2: 0.03, 4: 0.03, 8: 0.10, 16: 0.01}.items():
        assert abs(shares[gpus] - share) < 0.01, gpus
    minutes = trace["duration"] / 60
    assert minutes.between(10, 10 ** 4).all()
    assert abs((minutes >= 10 ** 2.5).mean() - 0.2) < 0.01  # the long tail is 20 % of jobs
    gaps = np.diff(trace["submit_time"])
    assert abs(gaps.mean() - 1500) < 40  # exponential gaps of mean lam (truncated to s)
    factor = (trace["ddl"] - trace["submit_time"]) / trace["duration"]
    assert factor.between(0.49, 1.51).all() and abs(factor.mean() - 1.0) < 0.01
    assert abs(trace["best_effort"].mean() - 0.3) < 0.01
    assert trace["model_name"].nunique() == 6


def test_equal_deadline_bounds_fix_every_deadline() -> None:
    trace = generate_trace(synthetic_profiles(), num_jobs=500, lam=100, min_ddl=1.5)
    slack = trace["ddl"] - trace["submit_time"]
    # arrival + int(1.5 × duration), truncated once more when written as an integer
    assert ((slack - 1.5 * trace["duration"]).between(-1, 2.5)).all()


def test_gpu_shares_at_their_bounds_and_the_cap() -> None:
    assert [gpu_count(r, 16) for r in (0.0, 0.8299, 0.83, 0.86, 0.8601, 0.89, 0.99, 0.995)] \
        == [1, 1, 2, 2, 4, 4, 8, 16]
    assert gpu_count(0.999, 8) == 8


def test_a_generated_trace_replays_with_its_best_effort_jobs() -> None:
    profiles = synthetic_profiles()
    trace = generate_trace(profiles, num_jobs=40, lam=900, best_effort=0.5, seed=2)
    jobs = as_jobs(trace)
    assert jobs.frame["best_effort"].sum() == trace["best_effort"].sum() > 0
    result = schedule(trace, "n2g8", profiles, "edf", slot=240)
    table = result.jobs
    assert table.loc[table["best_effort"], "deadline"].isna().all()
    timed = table[~table["best_effort"]]
    summary = result.summary.iloc[0]
    assert summary["best_effort"] == len(table) - len(timed)
    assert summary["ddl_satis_ratio"] == timed["deadline_met"].mean()


def test_settings_parse_and_name_the_trace() -> None:
    spec = TraceSpec.parse("num_jobs=100, lam=1500, min_ddl=1.5, seed=1")
    assert spec == TraceSpec(100, 1500.0, seed=1, min_ddl=1.5)
    assert spec.label == "generated(num_jobs=100,lam=1500,seed=1,min_ddl=1.5)"
    assert TraceSpec.parse("num_jobs=5,best-effort=0.2").best_effort == 0.2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lam=1500", "num_jobs is required"),
        ("num_jobs=10,lamda=3", "'lamda=3' is not KEY=VALUE"),
        ("num_jobs=ten", "num_jobs='ten' is not an integer"),
        ("num_jobs=0", "num_jobs=0"),
        ("num_jobs=5,min_ddl=2,max_ddl=1", "0 <= min_ddl <= max_ddl"),
        ("num_jobs=5,best_effort=1.5", "best_effort=1.5"),
        ("num_jobs=5,lam=-1", "lam=-1.0"),
    ],
)
def test_bad_settings_are_named(text, message) -> None:
    with pytest.raises(SchedulingError, match=message):
        TraceSpec.parse(text)


def test_a_profile_without_the_drawn_gpu_count_is_named() -> None:
    rows = [(model, batch, 1, 1.0) for model, batch in JOB_TABLE]
    profiles = Profiles.from_frame(pd.DataFrame(rows, columns=["model", "batch_size", "gpus",
                                                               "iterations_per_s"]))
    with pytest.raises(SchedulingError, match="has no positive value for"):
        generate_trace(profiles, num_jobs=200, seed=0)


def test_a_best_effort_column_must_hold_flags() -> None:
    trace = generate_trace(synthetic_profiles(), num_jobs=3)
    trace.loc[1, "best_effort"] = 2
    with pytest.raises(SchedulingError, match="best_effort must be 0 or 1; row 1 has 2"):
        as_jobs(trace)
