"""The cores' one stable sort (``cores/mergesort.py``) and the orders the cores sort by."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mltraces.scheduling.cores import chronuscore, leasecore, mergesort

KEYS = (math.nan, 0.0, -0.0, 1.0, 2.0, -3.5, math.inf, -math.inf)


def shuffled_keys(rng: random.Random, n: int) -> np.ndarray:
    """Keys with many ties, NaNs, signed zeros and infinities."""
    return np.array([rng.choice(KEYS) if rng.random() < 0.6 else rng.random() for _ in range(n)])


def sorted_by(key: np.ndarray, items: np.ndarray) -> np.ndarray:
    """``items`` sorted by ``key`` as numpy's stable sort does (NaN last)."""
    return items[np.argsort(key[items], kind="stable")]


@pytest.mark.parametrize("seed", range(4))
def test_sort_by_key_is_numpys_stable_sort(seed: int) -> None:
    rng = random.Random(seed)
    for n in [*range(0, 18), 31, 32, 33, 64, 100, 257]:
        key = shuffled_keys(rng, n)
        for arrangement in ("shuffled", "sorted", "reversed"):
            items = np.arange(n, dtype=np.int64)
            rng.shuffle(items)
            if arrangement != "shuffled":  # runs already in order take the copying shortcut
                items = sorted_by(key, items)
                items = items[::-1].copy() if arrangement == "reversed" else items
            expected = sorted_by(key, items)
            spare = np.full(n, -7, np.int64)
            mergesort.sort(items, n, spare, mergesort.ByKey(key))
            assert items.tolist() == expected.tolist(), (n, arrangement)


def test_sort_leaves_the_items_past_n_alone() -> None:
    items = np.array([3, 1, 2, 0, 9, 8], np.int64)
    mergesort.sort(items, 4, np.empty(6, np.int64), mergesort.ByKey(np.arange(10.0)))
    assert items.tolist() == [0, 1, 2, 3, 9, 8]


def test_lease_packing_orders_are_pythons_sorted() -> None:
    """Widest first, least slack, latest horizon (``packing``); least slack (``slack``)."""
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 7, 40):
        width, need = rng.integers(1, 4, n), rng.integers(0, 4, n)
        horizon = need + rng.integers(0, 4, n)
        out = np.empty(n, np.int64)
        leasecore.order(width, need, horizon, leasecore.KEYS["packing"], out)
        assert out.tolist() == sorted(range(n), key=lambda k: (-width[k], horizon[k] - need[k],
                                                                -horizon[k]))
        leasecore.order(width, need, horizon, leasecore.KEYS["slack"], out)
        assert out.tolist() == sorted(range(n), key=lambda k: horizon[k] - need[k])


@pytest.mark.parametrize("spare", [False, True])
def test_chronus_queue_is_pythons_stable_sort_in_reverse(spare: bool) -> None:
    rng = random.Random(3)
    for n in (0, 1, 2, 5, 60, 61):
        jobs = []
        for index in range(n):
            job = chronuscore.Job(index, 1, 1, rng.randrange(4), 100.0, 500, 300, 2, 1.0)
            job.priority = rng.choice((-1, 0, 1))
            job.urgency = float(rng.randrange(-2, 2))
            job.overdue = rng.random() < 0.3
            jobs.append(job)
        if spare:
            def key(job):
                return (job.overdue, job.priority, job.urgency, job.seniority)
        else:
            def key(job):
                return (job.priority, job.urgency, job.submit)
        expected = sorted(jobs, key=key, reverse=True)
        assert [job.index for job in chronuscore.queue(jobs, spare)] == [
            job.index for job in expected]
        again = chronuscore.queue(chronuscore.queue(jobs, spare), spare)  # sorted already
        assert [job.index for job in again] == [job.index for job in expected]


_INTERPRETED = """
import numpy as np
from mltraces.scheduling.cores import mergesort
assert mergesort.__file__.endswith(".py"), mergesort.__file__
key = np.array([float(text) for text in {key!r}])
items = np.array({items!r}, np.int64)
mergesort.sort(items, len(items), np.empty(len(items), np.int64), mergesort.ByKey(key))
print(items.tolist())
"""


def test_the_sort_gives_the_same_order_compiled_and_as_python() -> None:
    rng = random.Random(11)
    key = shuffled_keys(rng, 70)
    items = np.arange(70, dtype=np.int64)
    rng.shuffle(items)
    script = _INTERPRETED.format(key=[str(k) for k in key.tolist()], items=items.tolist())
    env = {**os.environ, "MLTRACES_INTERPRETED": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, check=True, timeout=300, cwd=Path(__file__).parent)
    mergesort.sort(items, 70, np.empty(70, np.int64), mergesort.ByKey(key))
    assert done.stdout.strip() == str(items.tolist())
