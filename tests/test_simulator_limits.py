"""Sizes from arguments and values the models cannot use (issue 24, "The simulators").

An argument may not ask for more than a limit (each refusal is one line that
names the limit and the variable that raises it), and every value a schema
accepts is one the simulators handle or refuse by name. The CLI runs in a
child process with a time and memory cap, as the unbounded versions of these
runs took gigabytes and minutes.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from capped_child import cli, python_json
from test_scheduling import itp, mixed_trace, profiles
from test_simulate import power_frame, train_frame

from mltraces.scheduling import ClusterSpec, Profiles, SchedulingError, schedule
from mltraces.simulation import SimulationError, TraceSet, simulate

ZEUS = ("raw.githubusercontent.com/ml-energy/zeus/75a8b9398034eb9baf74ca0a830c2c31bcce52cd/"
        "examples/research_reproducibility/zeus_nsdi23/trace")


def one_error_line(done) -> str:
    """The child's refusal: exit status 1 or 2, one ``error:`` line, no traceback."""
    assert done.returncode in (1, 2), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, done.stderr
    return errors[0]


# -- sizes from arguments -------------------------------------------------------------------
@pytest.mark.parametrize(("cluster", "policy"), [
    ("n50000000g8", "elasticflow"), ("n50000000g8", "gandiva"), ("n100000000g8", "elasticflow"),
    ("n" + "9" * 20 + "g8", "gandiva"),
])
def test_an_absurd_cluster_is_refused_before_any_work(cluster: str, policy: str) -> None:
    """n50000000g8 took ElasticFlow to 9.6 GB in 60 s and Gandiva to 2.5 GB; n100000000g8
    and a 20-digit node count gave MemoryError, numba and ValueError tracebacks."""
    done = cli("schedule", "--trace", "itp/cluster10", "--cluster", cluster, "--policy", policy,
               seconds=60, memory_mb=3072)
    line = one_error_line(done)
    assert f"cluster {cluster} has" in line and "at most 1,048,576" in line
    assert "MLTRACES_MAX_GPUS" in line


def test_the_gpu_limit_can_be_raised_and_is_checked_everywhere(monkeypatch) -> None:
    with pytest.raises(SchedulingError, match="at most 1,048,576"):
        ClusterSpec(nodes_per_switch=200_000, gpus_per_node=8)
    monkeypatch.setenv("MLTRACES_MAX_GPUS", "2000000")
    assert ClusterSpec(nodes_per_switch=200_000, gpus_per_node=8).gpus == 1_600_000


_BIG_CLUSTER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    from test_scheduling import mixed_trace, profiles
    from mltraces.scheduling import schedule, SchedulingError
    out = {{}}
    for policy in ("elasticflow", "tiresias", "fifo"):
        try:
            out[policy] = int(schedule(mixed_trace(20), "n131072g8", profiles(), policy)
                              .summary["finished"][0])
        except SchedulingError as error:
            out[policy] = str(error)
    print(json.dumps(out))
""")


def test_a_replay_whose_tables_grow_with_the_cluster_is_bounded(monkeypatch) -> None:
    """On a million GPUs ElasticFlow's GPUs x GPUs table would need 8 TiB: refused before
    anything is allocated (the child has 3 GB of address space; the compiled rounds are not
    even loaded); the replays whose memory follows the jobs, or the nodes (Gandiva, 131,072
    of them), run."""
    tests = str(Path(__file__).parent)
    out = python_json(_BIG_CLUSTER.format(tests=tests), seconds=120, memory_mb=3072)
    assert "elasticflow on n131072g8 (1,048,576 GPUs) with 20 jobs needs about" in out[
        "elasticflow"] and "MLTRACES_MAX_REPLAY_MEMORY" in out["elasticflow"]
    assert out["tiresias"] == out["fifo"] == 20
    assert schedule(mixed_trace(20), "n131072g8", profiles(), "gandiva").summary[
        "finished"][0] == 20
    monkeypatch.setenv("MLTRACES_MAX_REPLAY_MEMORY", "1K")
    with pytest.raises(SchedulingError, match=r"gandiva on n16g8 .* 2.8 KiB .* limit is 1.0 KiB"):
        schedule(mixed_trace(5), "n16g8", profiles(), "gandiva")


def test_a_billion_seeds_are_refused_while_parsing() -> None:
    """``--seeds 1-1000000000`` built the whole list while parsing: 14 GB in 30 s."""
    done = cli("simulate", "--seeds", "1-1000000000", seconds=60, memory_mb=3072)
    line = one_error_line(done)
    assert "asks for 1,000,000,000 seeds; the limit is 100,000" in line
    assert "MLTRACES_MAX_SEEDS" in line


_SEEDS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {tests!r})
    from test_simulate import power_frame, train_frame
    from mltraces.simulation import SimulationError, TraceSet, simulate
    traces = TraceSet.from_frames(train_frame(), power_frame(), gpu="toy")
    out = []
    for seeds in (range(1, 10**9), iter(range(10**9))):
        try:
            simulate(traces, "toy", "squad", "zeus", seeds)
        except SimulationError as error:
            out.append(str(error))
    print(json.dumps(out))
""")


def test_the_python_api_counts_seeds_before_building_them(monkeypatch) -> None:
    tests = str(Path(__file__).parent)
    sized, endless = python_json(_SEEDS.format(tests=tests), seconds=60, memory_mb=3072)
    assert sized.startswith("999,999,999 seeds asked for; the limit is 100,000")
    assert endless.startswith("more than 100,000 seeds asked for")
    monkeypatch.setenv("MLTRACES_MAX_SEEDS", "3")
    traces = TraceSet.from_frames(train_frame(), power_frame(), gpu="toy")
    assert len(simulate(traces, "toy", "squad", "zeus", range(3)).summary) == 3


# -- values the simulators could not use ----------------------------------------------------
@pytest.mark.parametrize(("column", "value"), [
    ("time_per_epoch", 0.0), ("time_per_epoch", -3.0), ("time_per_epoch", math.nan),
    ("average_power", 0.0), ("average_power", math.inf),
])
def test_a_power_row_the_cost_model_cannot_use_is_named(column: str, value: float) -> None:
    power = power_frame()
    power[column] = power[column].astype(float)
    power.loc[5, column] = value
    with pytest.raises(SimulationError, match=rf"power trace: {column} must be a positive "
                       r"number of .*the first \(gpu toy, dataset squad, .*power_limit 200\)"):
        TraceSet.from_frames(train_frame(), power, gpu="toy")


@pytest.mark.parametrize("value", [0.0, -1.0, 0.5])
def test_a_target_epoch_below_one_is_named(value: float) -> None:
    train = train_frame()
    train.loc[3, "target_epoch"] = value
    with pytest.raises(SimulationError, match=r"train trace: target_epoch must be at least 1"):
        TraceSet.from_frames(train, power_frame(), gpu="toy")


@pytest.fixture
def zeus_folder(upstream_dir: Path, tmp_path: Path) -> Path:
    """The four upstream power files, one epoch of v100 librispeech made to take 0 s."""
    for path in (upstream_dir / ZEUS).glob("summary_power_*.csv"):
        lines = path.read_text().splitlines()
        if path.name == "summary_power_v100.csv":
            k = next(i for i, line in enumerate(lines) if line.startswith("librispeech"))
            cells = lines[k].split(",")
            cells[5] = "0"
            lines[k] = ",".join(cells)
        (tmp_path / path.name).write_text("\n".join(lines) + "\n")
    return tmp_path


def test_a_zero_second_epoch_fails_validate_and_simulate_names_it(
    zeus_folder: Path, upstream_dir: Path, isolated_cache: Path
) -> None:
    """It passed ``validate``, then ``simulate`` died with ZeroDivisionError."""
    env = {"MLTRACES_MIRROR": str(upstream_dir), "MLTRACES_CACHE": str(isolated_cache)}
    local = f"zeus.power={zeus_folder}"
    checked = cli("validate", "zeus.power", "--local", local, seconds=120, env=env)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "check positive_epoch: 1 failing rows" in checked.stdout
    assert "time_per_epoch=0.0" in checked.stdout
    done = cli("simulate", "--gpu", "v100", "--workload", "librispeech", "--local", local,
               seconds=120, env=env)
    line = one_error_line(done)
    assert "zeus.power: time_per_epoch must be a positive number of seconds" in line
    assert "dataset librispeech, network deepspeech2, batch_size 12" in line


def test_a_profile_without_any_usable_speed_is_named_by_every_policy() -> None:
    """0 is a valid throughput (the artifact's resnet50_cifar10 has nine): a profile that is
    0 everywhere made EDF and ElasticFlow fail with max() and KeyError tracebacks."""
    zero = Profiles.from_frame(pd.DataFrame(
        [("m", 64, n, 0.0) for n in (1, 2, 4, 8)],
        columns=["model", "batch_size", "gpus", "iterations_per_s"]))
    jobs = itp([("a", 0, 100, 1000, 1), ("b", 5, 800, 1000, 8)])
    for policy in ("edf", "elasticflow"):
        with pytest.raises(SchedulingError, match="'m' at batch size 64 has no usable speed"):
            schedule(jobs, "n1g8", zero, policy)
    for policy in ("fifo", "sjf"):
        with pytest.raises(SchedulingError, match=f"job 'a' asks for 1 GPU.*{policy} runs a job"):
            schedule(jobs, "n1g8", zero, policy)
    assert schedule(jobs, "n1g8", zero, "themis").summary["admitted"][0] == 0  # declined


def test_a_rigid_job_without_a_speed_at_its_gpu_count_is_named() -> None:
    """FIFO and SJF used to give it the GPUs forever, then say 0 jobs were left waiting."""
    jobs = itp([("a", 0, 100, 1000, 1), ("c", 5, 400, 1000, 4)])
    with pytest.raises(SchedulingError, match=r"job 'c' asks for 4 GPU.*runs on \[1, 2, 8\]"):
        schedule(jobs, "n1g8", profiles({1: 1.0, 2: 2.0, 4: 0.0, 8: 8.0}), "fifo")


@pytest.mark.parametrize(("column", "value", "message"), [
    ("duration", -5.0, "negative or infinite duration"),
    ("duration", math.inf, "negative or infinite duration"),
    ("num_iteration", -1.0, "negative or infinite iterations"),
    ("submission_time", math.inf, "lack a finite submission time"),
])
def test_job_values_no_replay_can_use_are_named(column: str, value: float, message: str) -> None:
    jobs = itp([("a", 0, 100, 1000, 1), ("b", 5, 800, 1000, 8)])
    jobs[column] = jobs[column].astype(float)
    jobs.loc[1, column] = value
    with pytest.raises(SchedulingError, match=message):
        schedule(jobs, "n1g8", profiles(), "fifo")


def test_deadlines_before_submission_and_zero_work_replay_under_every_policy() -> None:
    """Values the schemas accept and the replays handle: a deadline before submission (not
    met, never a crash) and a zero-second job."""
    jobs = itp([("late", 100, 100, 50, 1), ("a", 5, 800, 1000, 8), ("b", 7, 100, 900, 1)])
    jobs.loc[2, "duration"] = 0
    result = schedule(jobs, "n1g8", profiles(),
                      "edf,gandiva,tiresias,themis,elasticflow,fifo,sjf")
    late = result.jobs.query("job_id == 'late'")
    assert not late["deadline_met"].any()
    assert np.isfinite(result.jobs.query("job_id == 'b'")["finish_time"]).all()
