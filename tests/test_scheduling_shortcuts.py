"""The replays' shortcuts against the plain steps they stand for, on random inputs.

Each shortcut (a scan before a rebuild, a bisection instead of a re-sort, a
lookup table instead of a walk) must give exactly what the plain version
gives, or per-job outcomes would drift from the artifact's.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mltraces.scheduling.cores import gandivacore
from mltraces.scheduling.policies.edf import _job_model
from mltraces.scheduling.profiles import Curve, plain_cap
from mltraces.scheduling.timeline import compact, compact_range


def _compact_timeline(rng: random.Random) -> tuple[list[float], list[int]]:
    """A random timeline with no two equal neighbours."""
    times, free = [0.0], [rng.randint(0, 8)]
    for _ in range(rng.randint(0, 8)):
        times.append(times[-1] + rng.choice((30.0, 60.0, 90.0)))
        free.append(rng.choice([v for v in range(9) if v != free[-1]]))
    return times, free


@pytest.mark.parametrize("seed", range(300))
def test_compact_range_equals_compacting_everything(seed: int) -> None:
    rng = random.Random(seed)
    times, free = _compact_timeline(rng)
    lo = rng.randint(0, len(times) - 1)
    hi = rng.randint(lo, len(times) + 1)
    for k in range(lo, min(hi, len(times))):  # only steps lo … hi - 1 change
        free[k] = rng.randint(0, 8)
    expected = compact(times, free)
    compact_range(times, free, lo, hi)
    assert (times, free) == (list(expected[0]), list(expected[1]))


def _node_sets(rng: random.Random) -> tuple[np.ndarray, ...]:
    """Random node sets (ids in a random order, random loads and jobs) as the compiled core
    keeps them: order row, loads, and per-set linked job lists."""
    n = rng.randint(1, 7)
    row = np.array(rng.sample(range(n), n), np.int64)
    load = np.array([rng.randint(0, 5) for _ in range(n)], np.int64)
    jobs = 40
    head, tail = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    count = np.zeros(n, np.int64)
    nxt, prv = np.full(jobs, -1, np.int64), np.full(jobs, -1, np.int64)
    for j in range(20, 20 + rng.randint(0, 10)):  # jobs already seated
        gandivacore.push(rng.randrange(n), j, head, tail, count, nxt, prv)
    return row, load, head, tail, count, nxt, prv


def _listed(sets: tuple[np.ndarray, ...]) -> list[tuple[int, int, list[int]]]:
    row, load, head, _, count, nxt, _ = sets
    out = []
    for s in row:
        jobs, j = [], head[s]
        while j >= 0:
            jobs.append(int(j))
            j = nxt[j]
        assert len(jobs) == count[s]
        out.append((int(s), int(load[s]), jobs))
    return out


@pytest.mark.parametrize("seed", range(200))
def test_dealing_jobs_equals_joining_them_one_by_one(seed: int) -> None:
    """A deal bisects where the reference re-sorts the sets after every job it places."""
    rng = random.Random(seed)
    sets = _node_sets(rng)
    twin = tuple(a.copy() for a in sets)
    jobs = np.arange(rng.randint(0, 12), dtype=np.int64)
    row, load, head, tail, count, nxt, prv = sets
    gandivacore.deal(row, len(row), jobs, len(jobs), load, head, tail, count, nxt, prv)
    row, load, head, tail, count, nxt, prv = twin
    for j in jobs:  # join the first set, then a full stable sort by load
        first = row[0]
        load[first] += 1
        gandivacore.push(first, j, head, tail, count, nxt, prv)
        row[:] = sorted(row, key=lambda s: load[s])
    assert _listed(sets) == _listed(twin)


def test_the_level_table_gives_the_largest_level_that_fits() -> None:
    speed = {1: 1.0, 2: 1.9, 8: 7.0, 16: 12.0, 32: 20.0}
    curve = Curve("m", 32, (1, 2, 4, 8, 16, 32, 64), speed)
    model = _job_model(curve, plain_cap, gpus=24)
    assert model.cap == 16 and model.levels == (1, 2, 8, 16)
    for free in range(model.cap):
        walked = max((n for n in model.levels if n <= free), default=0)
        assert model.fit[free] == walked
    assert [model.rates[n] for n in model.levels] == [speed[n] for n in model.levels]
