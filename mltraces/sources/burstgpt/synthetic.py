"""Synthetic BurstGPT traces in the upstream formats (:mod:`mltraces.synthetic`).

No BurstGPT file is available where the tests run (Git LFS objects, a repository file
and release assets). These write look-alikes of each:

- the six-column files (LFS, and the repository's ``data/BurstGPT_1.csv``):
  ``Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type``;
- the v1.2 release files: ``Timestamp,Session ID,Elapsed time,Model,Request tokens,
  Response tokens,Total tokens,Log Type``, a UUID session for conversation-log rows and
  an empty one for API rows, the full response time in whole seconds.

Timestamps are whole seconds written as floats (``19440110.0``) from 00:00 of the first
day, in order, with a daily rhythm on the UTC+8 clock; the third period starts where
the published one does (day 225). ChatGPT and GPT-4 requests, about 2 % failed
(``Response tokens`` 0) except in the ``without_fails`` files. Deterministic for a
given ``rows`` and ``seed``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROWS = 600
DAY = 86_400
OLD = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"
NEW = ("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,"
       "Log Type")
#: the first day of each period, in days from the trace's first day (part 3: 19,440,110 s)
FIRST_DAY = {"1": 0, "2": 61, "3": 225}


def _arrivals(rng: np.random.Generator, n: int, first_day: int) -> np.ndarray:
    """Whole seconds over two months, busier in the UTC+8 day than at night."""
    days = rng.integers(first_day, first_day + 60, n)
    hours = rng.choice(24, n, p=_daily())
    return np.sort(days * DAY + hours * 3_600 + rng.integers(0, 3_600, n))


def _daily() -> np.ndarray:
    weight = 1.0 + np.sin((np.arange(24) - 9) / 24 * 2 * np.pi).clip(0)
    return weight / weight.sum()


def _rows(n: int, seed: int, part: str, *, fails: bool) -> list[dict]:
    rng = np.random.default_rng(seed)
    arrivals = _arrivals(rng, n, FIRST_DAY[part])
    api = rng.random(n) < 0.6
    rows = []
    for index, second in enumerate(arrivals):
        request = int(max(1, rng.lognormal(6.0, 1.1)))
        response = 0 if fails and rng.random() < 0.02 else int(max(1, rng.lognormal(5.2, 0.9)))
        session = "" if api[index] else str(uuid.UUID(int=int(rng.integers(0, 2**62)) * 7919))
        rows.append({"t": f"{float(second):.1f}", "model": "GPT-4" if rng.random() < 0.15
                     else "ChatGPT", "request": request, "response": response,
                     "log": "API log" if api[index] else "Conversation log", "session": session,
                     "elapsed": int(rng.integers(1, 60)) if response else int(rng.integers(0, 5))})
    return rows


def _write(path: Path, rows: list[dict], *, new: bool) -> Path:
    lines = [NEW if new else OLD]
    for r in rows:
        tokens = f"{r['request']},{r['response']},{r['request'] + r['response']}"
        middle = f"{r['session']},{r['elapsed']}," if new else ""
        lines.append(f"{r['t']},{middle}{r['model']},{tokens},{r['log']}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _writer(part: str, *, fails: bool, new: bool) -> Callable[..., Path]:
    def write(path: Path, rows: int | None = None, seed: int = 0) -> Path:
        return _write(path, _rows(rows or ROWS, seed, part, fails=fails), new=new)

    write.__doc__ = (f"BurstGPT{'' if fails else '_without_fails'}_{part}.csv, "
                     f"{'v1.2 (8 columns)' if new else 'six columns'}.")
    return write


WRITERS = {
    "burstgpt/data/BurstGPT_1.csv": _writer("1", fails=True, new=False),
    "burstgpt/lfs/BurstGPT_1.csv": _writer("1", fails=True, new=False),
    "burstgpt/lfs/BurstGPT_2.csv": _writer("2", fails=True, new=False),
    "burstgpt/lfs/BurstGPT_without_fails_1.csv": _writer("1", fails=False, new=False),
    "burstgpt/lfs/BurstGPT_without_fails_2.csv": _writer("2", fails=False, new=False),
    **{f"burstgpt/v1.2/BurstGPT_{p}.csv": _writer(p, fails=True, new=True) for p in "123"},
    **{f"burstgpt/v1.2/BurstGPT_without_fails_{p}.csv": _writer(p, fails=False, new=True)
       for p in "123"},
}


def expected_tables(rows: int | None = None) -> dict[str, int]:
    """Rows of each table built from the synthetic files written with ``rows``."""
    names = ["repo_1", "lfs_1", "lfs_2", "lfs_without_fails_1", "lfs_without_fails_2",
             *(f"release_{p}" for p in "123"), *(f"release_without_fails_{p}" for p in "123")]
    return {f"burstgpt.{name}": rows or ROWS for name in names}
