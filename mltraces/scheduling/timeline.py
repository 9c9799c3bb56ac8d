"""Future free GPUs as a step function, the planning surface of EDF and ElasticFlow.

A timeline is two parallel lists: ascending times and the number of GPUs free
from that time until the next one. Planners copy it, subtract a job's
allocation over periods, add the time the job hands its GPUs back, and
:func:`compact` drops steps that do not change the value.
"""

from __future__ import annotations

import bisect


def align(origin: float, time: float, slot: float) -> float:
    """The first slot boundary (origin + k·slot) at or after ``time``."""
    steps, rest = divmod(time - origin, slot)
    if rest > 0:
        steps += 1
    return origin + steps * slot


def compact(times: list[float], free: list[int]) -> tuple[list[float], list[int]]:
    """Drop every step whose value equals the step before it."""
    out_t: list[float] = []
    out_f: list[int] = []
    last = -1
    for t, f in zip(times, free, strict=True):
        if f != last:
            out_t.append(t)
            out_f.append(f)
            last = f
    return out_t, out_f


def compact_range(times: list[float], free: list[int], lo: int, hi: int) -> None:
    """:func:`compact` in place when only steps ``lo`` … ``hi - 1`` changed.

    Steps outside that range were compact, so only those steps and the first
    one after them can repeat their predecessor. Planners call this once per
    job and it rarely finds a repeat, so the common case is a scan that builds
    nothing.
    """
    if lo < 1:
        lo = 1
    size = len(times)
    if hi > size:
        hi = size
    if lo > hi:
        return
    last = free[lo - 1]
    for k in range(lo, hi + 1 if hi < size else hi):
        f = free[k]
        if f == last:
            break
        last = f
    else:
        return
    last = free[lo - 1]
    keep_t, keep_f = [], []
    for k in range(lo, hi):
        f = free[k]
        if f != last:
            keep_t.append(times[k])
            keep_f.append(f)
            last = f
    if hi < size and free[hi] == last:
        hi += 1
    times[lo:hi] = keep_t
    free[lo:hi] = keep_f


def set_step(times: list[float], free: list[int], time: float, value: int) -> int:
    """Set the value from ``time`` on (insert a step, or overwrite the one there); its index."""
    i = bisect.bisect_left(times, time)
    if i < len(times) and times[i] == time:
        free[i] = value
    else:
        times.insert(i, time)
        free.insert(i, value)
    return i


def value_at(times: list[float], free: list[int], time: float, default: int) -> int:
    """Free GPUs at ``time`` (``default`` before the first step)."""
    i = bisect.bisect_right(times, time)
    return free[i - 1] if i else default


def step_index(times: list[float], time: float) -> int:
    """Index of the step starting exactly at ``time``, or -1."""
    i = bisect.bisect_left(times, time)
    return i if i < len(times) and times[i] == time else -1
