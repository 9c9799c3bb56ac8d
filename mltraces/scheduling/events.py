"""The event list of the slot-based replays: arrivals and planned job ends, keyed by time.

One event per distinct time holds the jobs arriving then and the jobs planned
to end then. Scheduling happens in slots: :meth:`EventQueue.merge_slot`
gathers every event due within one slot of *now* into a single event at
now + slot, which is how the reference handles arrivals up to a slot late.
EDF uses :class:`EventQueue`; Tiresias and the compiled rounds of Gandiva and
ElasticFlow keep the same list as arrays, from :func:`arrival_groups` (a list
that deletes near its front costs a million-job trace a memmove per event).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Event:
    """Jobs arriving and jobs ending at one time."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)

    def empty(self) -> bool:
        return not self.starts and not self.ends


class EventQueue:
    """Events sorted by time; at most one event per time."""

    __slots__ = ("_events", "_times")

    def __init__(self) -> None:
        self._times: list[float] = []
        self._events: dict[float, Event] = {}

    def __len__(self) -> int:
        return len(self._times)

    def __bool__(self) -> bool:
        return bool(self._times)

    def first_time(self) -> float:
        return self._times[0]

    def first(self) -> Event:
        return self._events[self._times[0]]

    def at(self, time: float) -> Event | None:
        return self._events.get(time)

    def _get_or_add(self, time: float) -> Event:
        event = self._events.get(time)
        if event is None:
            event = self._events[time] = Event()
            bisect.insort(self._times, time)
        return event

    def add_start(self, job: int, time: float) -> None:
        self._get_or_add(time).starts.append(job)

    def add_end(self, job: int, time: float) -> None:
        event = self._get_or_add(time)
        if job not in event.ends:
            event.ends.append(job)

    def add_empty(self, time: float) -> None:
        """A wake-up with no jobs (ElasticFlow's planned re-scaling points)."""
        self._get_or_add(time)

    def move_end(self, job: int, old: float, new: float) -> None:
        """Re-plan a job's end; an event left without jobs at ``old`` disappears."""
        if old == new:
            return
        event = self._events.get(old)
        if event is not None:
            if job in event.ends:
                event.ends.remove(job)
            if event.empty():
                self.remove(old)
        self.add_end(job, new)

    def remove(self, time: float) -> Event:
        event = self._events.pop(time)
        del self._times[bisect.bisect_left(self._times, time)]
        return event

    def pop_first(self) -> tuple[float, Event]:
        time = self._times.pop(0)
        return time, self._events.pop(time)

    def _retime_first(self, time: float) -> None:
        old = self._times[0]
        if old != time:
            self._events[time] = self._events.pop(old)
            self._times[0] = time

    def merge_slot(self, now: float, slot: float) -> None:
        """Fold every event due within ``slot`` of ``now`` into one event at ``now + slot``.

        As in the reference, a lone remaining event is left where it is.
        """
        times = self._times
        if len(times) < 2 or times[0] - now > slot:
            return
        first = self._events[times[0]]
        while len(times) > 1 and times[1] - now <= slot:
            later = self._events.pop(times[1])
            del times[1]
            first.starts.extend(later.starts)
            first.ends.extend(later.ends)
        self._retime_first(now + slot)


def arrival_groups(submit: np.ndarray, jobs: np.ndarray) -> tuple[np.ndarray, ...]:
    """``jobs`` (indices) grouped by their ``submit`` time, for the compiled round loops.

    Returns ``(times, offsets, order)``: distinct times ascending, and the jobs
    arriving at ``times[i]`` as ``order[offsets[i]:offsets[i + 1]]`` in index
    order, the order :meth:`EventQueue.add_start` would list them.
    """
    jobs = np.asarray(jobs, np.int64)
    submit = np.asarray(submit, float)[jobs]
    order = np.argsort(submit, kind="stable")
    jobs, times = jobs[order], submit[order]
    if not len(times):
        return times, np.zeros(1, np.int64), jobs
    new = np.flatnonzero(np.diff(times)) + 1
    offsets = np.concatenate(([0], new, [len(times)])).astype(np.int64)
    return times[offsets[:-1]], offsets, jobs
