"""Replays of the artifact's generated traces (ElasticFlow Figs. 9-11) against its own runs.

Reads the A100 profiles from ../shared/upstream (skips without it, fails with
MLTRACES_REQUIRE_UPSTREAM set). The expected values come from the artifact's
scheduler (gudiandian/ElasticFlow@b3f5ea4c, ``scheduler.py --simulation=True
--gpu_type=A100 --scheduling_slot=240``) run on this machine on the same
generated trace; ``benchmarks/bench_generated.py`` re-measures them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mltraces.scheduling import Profiles, load_profiles, schedule
from mltraces.scheduling.generator import generate_trace

THROUGHPUTS = (
    "raw.githubusercontent.com/gudiandian/ElasticFlow/b3f5ea4c9fa92107b0e0e2ba7c06900f4a0ec03a"
    "/ElasticFlow/scheduler/throughputs_A100"
)


@pytest.fixture(scope="module")
def a100(upstream_dir: Path) -> Profiles:
    return load_profiles(upstream_dir / THROUGHPUTS)


@pytest.fixture(scope="module")
def fig10_trace(a100):
    """run_fig10.sh's trace: --num_jobs=100 --lam=1500 --min_ddl=1.5 --seed=1."""
    return generate_trace(a100, num_jobs=100, lam=1500, min_ddl=1.5, seed=1)


def test_tiresias_restarts_every_slot_rounds(a100, fig10_trace) -> None:
    """At 240 s slots the artifact's periodic restart comes every 240th round, not 60th:
    restarting every 60th round moves these jobs' ends by 31 s."""
    result = schedule(fig10_trace, "n16g8", a100, "tiresias", slot=240)
    ends = result.jobs.set_index("job_id")["finish_time"]
    assert ends[["89", "90", "91"]].tolist() == [165184, 165600, 195922]
    assert result.outcomes[0].ratio == 1.0
