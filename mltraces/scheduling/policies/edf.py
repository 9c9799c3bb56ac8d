"""EDF: earliest deadline first, elastic GPU counts, no admission control.

At every event (merged arrivals, planned ends) all runnable jobs are planned
again in deadline order on the timeline of future free GPUs: a job takes its
cap if that many GPUs are free, else the largest profiled count that is. A job
ends at its planned end (the ceiling of its last plan, or earlier when it
turns out ahead of plan at an event) and meets its deadline when that end is
no later than the deadline. Mirrors the artifact's ``--schedule=edf``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.profiles import Curve, plain_cap
from mltraces.scheduling.results import Recorder
from mltraces.scheduling.timeline import compact_range, set_step

INF = math.inf


@dataclass(frozen=True)
class JobModel:
    """A job's static numbers as the elastic planners use them.

    ``fit[a]`` is the largest level that fits in ``a`` free GPUs (0 if none), for
    ``a`` below the cap, and ``rates[n]`` the speed on ``n`` GPUs for every level
    ``n`` (0 elsewhere): lookups instead of a walk over the levels and a dict
    per period.
    """

    speed: dict[int, float]
    levels: tuple[int, ...]
    cap: int
    fit: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()


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
    levels = curve.scaling_levels(cap)
    cap = max(levels)
    fit = [0] * cap
    for n in levels:
        fit[n:] = [n] * (cap - n)
    rates = [0.0] * (cap + 1)
    for n in levels:
        rates[n] = curve.speed[n]
    return JobModel(dict(curve.speed), levels, cap, tuple(fit), tuple(rates))


def _hand_back(
    times: list[float], free: list[int], first: int, i: int, time: float, value: int
) -> None:
    """A job planned on periods ``first`` … ``i`` ends inside period ``i``: from the slot
    boundary ``time`` after its end, the period has ``value`` (its pre-job) GPUs again.

    As in the reference, a boundary that falls on the next step overwrites it.
    Then merges equal neighbours; only the changed periods can have any, and
    when period 0 alone changed, only the step after the new one can.
    """
    if times[i] < time < times[i + 1]:
        times.insert(i + 1, time)
        free.insert(i + 1, value)
        if not i and (len(times) < 3 or free[2] != value):
            return
    elif times[i] < time == times[i + 1]:
        free[i + 1] = value
    else:  # an end before now (work overdone): wherever it falls
        set_step(times, free, time, value)
    compact_range(times, free, first, i + 2)


def _run_to_end(
    times: list[float], free: list[int], first: int, last: int, time: float, held: int, total: int
) -> None:
    """A job still running after the last step holds it at ``held`` free GPUs until the
    slot boundary ``time`` after its end, then all ``total`` GPUs are free.

    Then merges equal neighbours; with a one-step timeline there are none
    (``held`` < ``total``).
    """
    free[last] = held
    if time > times[last]:
        times.append(time)
        free.append(total)
        if not last:
            return
    else:
        set_step(times, free, time, total)
    compact_range(times, free, first if first >= 0 else last, len(times))


class EDF:
    """Earliest deadline first with elastic scaling (the artifact's ``edf``)."""

    name = "edf"

    def simulate(self, setup: Setup) -> Recorder:
        return _EdfRun(setup).run()


class _EdfRun:
    """The event loop. Only jobs that were planned at this event or the last one are
    touched: the rest (waiting, no GPUs, end placeholder) would not change.

    ``runnable`` is kept in deadline order (arrivals inserted after equal
    deadlines), which is the order the reference's stable sort gives each event.
    """

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.total, self.slot = setup.gpus, setup.slot
        self.jobs = setup.jobs
        self.models = job_models(setup, plain_cap)
        self.params = [(m.rates, m.fit, m.cap) for m in self.models]  # as the planner reads them
        self.rec = setup.recorder()
        n = len(self.jobs)
        self.deadline = [j.deadline for j in self.jobs]
        self.left = [float(j.iterations) for j in self.jobs]
        self.gpus = [0] * n
        self.rate = [0.0] * n  # iterations per second on the GPUs held
        self.end = [0] * n
        self.running = [False] * n
        self.done = [False] * n
        self.runnable: list[int] = []
        self.planned: list[int] = []  # jobs given a real plan at the last event
        self.events = EventQueue()
        for job in self.jobs:
            self.events.add_start(job.index, job.submit_time)

    def run(self) -> Recorder:
        events, slot = self.events, self.slot
        now, step = events.first_time(), 0
        while events:
            self.progress(now, step)
            event = events.first()
            if event.ends:
                self.finish(event.ends, now)
            if event.starts:
                self.admit(event.starts)
            self.apply(self.plan(now), now)
            self.rec.round(now)
            events.pop_first()
            if not events:
                break
            events.merge_slot(now, slot)
            nxt = events.first_time()
            step, now = nxt - now, nxt
        return self.rec

    def finish(self, ends: list[int], now: float) -> None:
        running, runnable = self.running, self.runnable
        for j in ends:
            if running[j]:
                runnable.remove(j)
                running[j] = False
                self.done[j] = True
                self.gpus[j] = 0
                self.rate[j] = 0.0
                self.rec.finished(j, self.end[j], now)

    def admit(self, starts: list[int]) -> None:
        runnable, deadline = self.runnable, self.deadline
        for j in starts:
            bisect.insort_right(runnable, j, key=deadline.__getitem__)

    def progress(self, now: float, step: float) -> None:
        """Advance running jobs by ``step`` seconds; a job ahead of its plan ends now."""
        rate_of, end, left = self.rate, self.end, self.left
        for j in self.planned:
            rate = rate_of[j]
            if not rate:
                continue
            planned_end = end[j]
            if planned_end > now:
                done = step * rate
                if left[j] <= done:
                    finish = now - step + math.ceil(left[j] / rate)
                    done = (planned_end - now + step) * rate
                    self.events.move_end(j, planned_end, now)
                    end[j] = finish
            else:  # only the seconds up to its planned end count
                done = (step - (now - planned_end)) * rate
            left[j] -= done

    def plan(self, now: float) -> list[tuple[int, int, float]]:
        """Plan the runnable jobs in deadline order on a fresh timeline of free GPUs.

        Each job walks the timeline's periods taking its cap when free, else the
        largest level that fits, until its work is done; its GPUs come back at
        the slot boundary after its end (:func:`align`). The loop is written out
        in one piece, the commonest timeline edits included: it runs for every
        planned job at every event.

        Returns (job, GPUs now, planned end) of the jobs whose plan changed; the
        planned jobs become ``self.planned``. Once no GPU is free now, every later
        job gets none now, and its planned end cannot come before the next event
        (the GPUs it waits for come back at the slot boundary after some running
        job's end, which is an event itself), so it would be re-planned before
        that end mattered: such jobs are not planned (their end is a +inf
        placeholder). This changes no outcome and keeps congested clusters
        (thousands of waiting jobs) fast.
        """
        total, slot, left, params = self.total, self.slot, self.left, self.params
        gpus_of, end_of, runnable = self.gpus, self.end, self.runnable
        times, free = [now], [total]
        changed = []
        planned = len(runnable)
        for k, j in enumerate(runnable):
            if not free[0]:
                planned = k
                break
            speed, fit, cap = params[j]
            work = left[j]
            now_gpus = first = -1
            last = len(times) - 1
            for i in range(last):
                avail = free[i]
                gpus = cap if avail >= cap else fit[avail] if avail > 0 else 0
                if now_gpus < 0:
                    now_gpus = gpus
                if not gpus:
                    continue
                rate = speed[gpus]
                begin, until = times[i], times[i + 1]
                end = math.ceil(begin + work / rate)
                free[i] = avail - gpus
                if first < 0:
                    first = i
                if until >= end:
                    if end == until:
                        compact_range(times, free, first, i + 2)
                        break
                    steps, rest = divmod(end - times[0], slot)
                    back = times[0] + (steps + 1 if rest > 0 else steps) * slot
                    if not i and begin < back < until and free[1] != avail:
                        # the common case of _hand_back, where nothing can merge
                        times.insert(1, back)
                        free.insert(1, avail)
                    else:
                        _hand_back(times, free, first, i, back, avail)
                    break
                work -= (until - begin) * rate
            else:
                end = math.ceil(times[last] + work / speed[cap])
                steps, rest = divmod(end - times[0], slot)
                back = times[0] + (steps + 1 if rest > 0 else steps) * slot
                if not last and back > times[0]:
                    # the common case of _run_to_end, where nothing can merge
                    free[0] = total - cap
                    times.append(back)
                    free.append(total)
                else:
                    _run_to_end(times, free, first, last, back, total - cap, total)
                if now_gpus < 0:
                    now_gpus = cap
            if now_gpus != gpus_of[j] or end != end_of[j]:
                changed.append((j, now_gpus, end))
        planned_now = runnable[:planned]
        if self.planned:
            self.unplan(set(planned_now), now)
        self.planned = planned_now
        return changed

    def unplan(self, kept: set[int], now: float) -> None:
        """Jobs planned last time but not at this event lose their GPUs (end: +inf)."""
        done = self.done
        for j in self.planned:
            if j not in kept and not done[j]:
                self._set(j, 0, INF, now)

    def apply(self, changed: list[tuple[int, int, float]], now: float) -> None:
        for j, gpus, end in changed:
            self._set(j, gpus, end, now)

    def _set(self, j: int, gpus: int, end: float, now: float) -> None:
        old_end, self.end[j] = self.end[j], end
        self.gpus[j] = gpus
        self.rate[j] = self.models[j].rates[gpus]
        if self.running[j]:
            self.events.move_end(j, old_end, end)
        elif gpus:
            self.running[j] = True
            self.events.add_end(j, end)
        self.rec.set_gpus(j, now, gpus)
