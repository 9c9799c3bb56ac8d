"""EDF: earliest deadline first, elastic GPU counts, no admission control.

At every event (merged arrivals, planned ends) all runnable jobs are planned
again in deadline order on the timeline of future free GPUs: a job takes its
cap if that many GPUs are free, else the largest profiled count that is. A job
ends at its planned end (the ceiling of its last plan, or earlier when it
turns out ahead of plan at an event) and meets its deadline when that end is
no later than the deadline. Mirrors the artifact's ``--schedule=edf``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.profiles import Curve, plain_cap
from mltraces.scheduling.results import Recorder
from mltraces.scheduling.timeline import align, compact_range, set_step

INF = math.inf


@dataclass(frozen=True)
class JobModel:
    """A job's static numbers as the elastic planners use them.

    ``fit[a]`` is the largest level that fits in ``a`` free GPUs (0 if none), for
    ``a`` below the cap: a lookup instead of a walk over the levels per period.
    """

    speed: dict[int, float]
    levels: tuple[int, ...]
    cap: int
    fit: tuple[int, ...] = ()


def job_models(setup: Setup, cap_of: Callable[[Curve], int]) -> list[JobModel]:
    """Speed table, scaling levels and cap per job (``cap_of(curve)`` picks the cap).

    Jobs sharing a (model, batch size) share one model: traces have thousands of
    jobs but a few dozen curves.
    """
    models: list[JobModel] = []
    shared: dict[tuple[str, int], JobModel] = {}
    for job in setup.jobs:
        key = (job.model, job.batch_size)
        model = shared.get(key)
        if model is None:
            model = shared[key] = _job_model(setup.curve(job), cap_of, setup.gpus)
        models.append(model)
    return models


def _job_model(curve: Curve, cap_of: Callable[[Curve], int], gpus: int) -> JobModel:
    cap = min(cap_of(curve), gpus)
    levels = curve.levels(cap) or curve.allowed[:1]
    cap = max(levels)
    fit = [0] * cap
    for n in levels:
        fit[n:] = [n] * (cap - n)
    return JobModel(dict(curve.speed), levels, cap, tuple(fit))


def plan_edf(
    times: list[float],
    free: list[int],
    left: float,
    model: JobModel,
    total: int,
    slot: float,
) -> tuple[int, int]:
    """Plan one job on the timeline from ``times[0]`` (now), updating it in place.

    Returns the GPUs the job gets now and its planned end. Walks the timeline's
    periods taking the cap when free, else the largest level that fits; the
    GPUs come back at the slot boundary after the end.
    """
    speed, fit, cap = model.speed, model.fit, model.cap
    now_gpus = -1
    last = len(times) - 1
    first = -1
    for i in range(last):
        avail = free[i]
        gpus = cap if avail >= cap else fit[avail] if avail > 0 else 0
        if now_gpus < 0:
            now_gpus = gpus
        if not gpus:
            continue
        rate = speed[gpus]
        begin, until = times[i], times[i + 1]
        end = math.ceil(begin + left / rate)
        free[i] = avail - gpus
        if first < 0:
            first = i
        if until >= end:
            if end != until:
                # the reference writes the pre-job value at the slot boundary,
                # overwriting a step that may already be there
                _hand_back(times, free, i, align(times[0], end, slot), avail)
            compact_range(times, free, first, i + 2)
            return now_gpus, end
        left -= (until - begin) * rate
    end = math.ceil(times[last] + left / speed[cap])
    free[last] = total - cap
    set_step(times, free, align(times[0], end, slot), total)
    compact_range(times, free, first if first >= 0 else last, len(times))
    return (cap if now_gpus < 0 else now_gpus), end


def _hand_back(times: list[float], free: list[int], i: int, time: float, value: int) -> None:
    """:func:`set_step` for a time inside period ``i`` (or at its end), without the search."""
    if times[i] < time <= times[i + 1]:
        if time == times[i + 1]:
            free[i + 1] = value
        else:
            times.insert(i + 1, time)
            free.insert(i + 1, value)
    else:  # an end before now (work overdone): wherever it falls
        set_step(times, free, time, value)


class EDF:
    """Earliest deadline first with elastic scaling (the artifact's ``edf``)."""

    name = "edf"

    def simulate(self, setup: Setup) -> Recorder:
        return _EdfRun(setup).run()


class _EdfRun:
    """The event loop. Only jobs that were planned at this event or the last one are
    touched: the rest (waiting, no GPUs, end placeholder) would not change."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.jobs = setup.jobs
        self.models = job_models(setup, plain_cap)
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.deadline = [j.deadline for j in self.jobs]
        self.left = [float(j.iterations) for j in self.jobs]
        self.gpus = [0] * n
        self.end = [0] * n
        self.running = [False] * n
        self.done = [False] * n
        self.runnable: list[int] = []
        self.planned: list[int] = []  # jobs given a real plan at the last event
        self.events = EventQueue()
        for job in self.jobs:
            self.events.add_start(job.index, job.submit_time)

    def run(self) -> Recorder:
        events, slot = self.events, self.setup.slot
        deadline = self.deadline.__getitem__
        now, step = events.first_time(), 0
        while events:
            self.progress(now, step)
            event_time, event = events.first_time(), events.first()
            for j in event.ends:
                if self.running[j]:
                    self.runnable.remove(j)
                    self.running[j] = False
                    self.done[j] = True
                    self.gpus[j] = 0
                    self.rec.finished(j, self.end[j], event_time)
            if event.starts:
                order = sorted(self.runnable + event.starts, key=deadline)
                self.runnable.extend(event.starts)
            else:
                self.runnable.sort(key=deadline)
                order = self.runnable
            self.apply(self.plan(order, event_time), event_time)
            events.pop_first()
            if not events:
                break
            events.merge_slot(now, slot)
            nxt = events.first_time()
            step, now = nxt - now, nxt
        return self.rec

    def progress(self, now: float, step: float) -> None:
        """Advance running jobs by ``step`` seconds; a job ahead of its plan ends now."""
        gpus_of, end, left = self.gpus, self.end, self.left
        for j in self.planned:
            gpus = gpus_of[j]
            if not gpus:
                continue
            run = step - (now - end[j] if now > end[j] else 0)
            rate = self.models[j].speed[gpus]
            done = run * rate
            if left[j] <= done and end[j] > now:
                finish = now - step + math.ceil(left[j] / rate)
                done = (end[j] - now + step) * rate
                self.events.move_end(j, end[j], now)
                end[j] = finish
            left[j] -= done

    def plan(self, order: list[int], now: float) -> dict[int, tuple[int, float]]:
        """Plan ``order`` (deadline order) on a fresh timeline; (GPUs now, planned end).

        Once no GPU is free now, every later job gets none now, and its planned end
        cannot come before the next event (the GPUs it waits for come back at the
        slot boundary after some running job's end, which is an event itself), so
        it would be re-planned before that end mattered: such jobs are not planned
        (their end is a +inf placeholder). This changes no outcome and keeps
        congested clusters (thousands of waiting jobs) fast.
        """
        total, slot, left, models = self.setup.gpus, self.setup.slot, self.left, self.models
        times, free = [now], [total]
        plans = {}
        for j in order:
            if not free[0]:
                break
            plans[j] = plan_edf(times, free, left[j], models[j], total, slot)
        return plans

    def apply(self, plans: dict[int, tuple[int, float]], now: float) -> None:
        for j in self.planned:
            if j not in plans and not self.done[j]:
                self._set(j, 0, INF, now)
        for j, (gpus, end) in plans.items():
            self._set(j, gpus, end, now)
        self.planned = list(plans)

    def _set(self, j: int, gpus: int, end: float, now: float) -> None:
        old_end, self.end[j] = self.end[j], end
        self.gpus[j] = gpus
        if self.running[j]:
            self.events.move_end(j, old_end, end)
        elif gpus:
            self.running[j] = True
            self.events.add_end(j, end)
        self.rec.set_gpus(j, now, gpus)
