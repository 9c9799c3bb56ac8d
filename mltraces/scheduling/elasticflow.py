"""ElasticFlow: admission control on deadlines plus elastic scaling by marginal return.

Each job is planned in deadline order on the timeline of future free GPUs,
*backwards from its deadline*: it gets the smallest GPU count that, running
on whatever that count leaves free in each period before the deadline,
finishes its iterations in time; periods before that point run at the
previous count. A job that cannot make its deadline runs at its cap after the
deadline. Arrivals (merged per slot) are admitted only if every plan —
the runnable jobs' and theirs — meets its deadline; otherwise all of that
event's arrivals are declined. GPUs left free now are then handed out one
scaling step at a time: jobs holding none first, then the job whose next step
adds the most GPU-time per GPU. Every running job pays the restart overhead
each round (less when its GPU set is cached, see :mod:`.placement`).

Mirrors the artifact's ``--schedule=ef-accessctrl`` round by round: its
deadline test (the plan's unaligned end), its slot-aligned planned ends, its
event handling, and where jobs land on nodes (for the overhead).

Speed. The artifact prices every runnable job with a full re-plan after every
single scaling step, so a round costs (steps × jobs) plans; that, not Python,
is why it is slow. ``repricing="all"`` (the default) keeps that rule exactly,
reusing only prices a step provably leaves unchanged. ``repricing="chosen"``
is a faster approximation for large traces: after a step only the job that
grew is re-priced and the others keep their last price, and when the spare
GPUs cover every job's top level each job is scaled straight there. On the
traces the artifact could run here (cluster10, the 195-job testbed trace,
Philly; mostly idle clusters) it reproduces the artifact's per-job outcomes
exactly; on congested synthetic traces (40 jobs on 16 GPUs) its ratio was off by up to 0.125.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from mltraces.scheduling.base import Setup
from mltraces.scheduling.events import EventQueue
from mltraces.scheduling.placement import NodeSets
from mltraces.scheduling.profiles import elasticflow_cap
from mltraces.scheduling.results import Recorder
from mltraces.scheduling.timeline import align, compact, set_step, step_index, value_at

INF = math.inf
PENDING, RUNNING, DONE, DECLINED = 1, 2, 3, 4


@dataclass(frozen=True)
class ScalingModel:
    """A job's static numbers: speeds, scaling levels up to its cap, and a fit table."""

    speed: dict[int, float]
    levels: tuple[int, ...]
    cap: int
    fit: tuple[int, ...]  # fit[x]: the largest level <= x GPUs (0: none)

    @property
    def top(self) -> int:
        """The highest scaling level."""
        return self.levels[-1]

    def next_level(self, gpus: int) -> int:
        """The next scaling step above ``gpus`` (``gpus`` itself at the top)."""
        for n in self.levels:
            if n > gpus:
                return n
        return gpus


@dataclass
class Plan:
    """A job's plan: the new cluster timeline, its allocation steps and ends."""

    times: list[float]
    free: list[int]
    alloc: list[tuple[float, int]]
    end: float  # slot-aligned: when its GPUs come back
    real_end: float  # when its last iteration finishes


def _fit_table(levels: tuple[int, ...], total: int) -> tuple[int, ...]:
    table, best, k = [], 0, 0
    for x in range(total + 1):
        while k < len(levels) and levels[k] <= x:
            best = levels[k]
            k += 1
        table.append(best)
    return tuple(table)


def scaling_models(setup: Setup) -> list[ScalingModel]:
    total, tables, models = setup.gpus, {}, []
    for job in setup.jobs:
        curve = setup.curve(job)
        cap = elasticflow_cap(job.model, job.batch_size)
        levels = curve.levels(cap) or curve.allowed[:1]
        if levels not in tables:
            tables[levels] = _fit_table(levels, total)
        models.append(ScalingModel(dict(curve.speed), levels, cap, tables[levels]))
    return models


class Planner:
    """Backward-from-deadline planning on a free-GPU timeline (one cluster, one slot).

    ``times``/``free`` below are the timeline a plan starts from (never
    modified); ``nt``/``nf`` the copy the plan edits and returns.
    """

    def __init__(self, total: int, slot: float) -> None:
        self.total = total
        self.slot = slot

    def plan(
        self,
        times: list[float],
        free: list[int],
        start: float,
        left: float,
        deadline: float,
        job: ScalingModel,
        assign: int = 0,
    ) -> Plan:
        """Plan a job from ``start`` on the timeline.

        With ``assign`` the job first holds that many GPUs until the
        timeline's next step (how a scale-up is priced), then is planned as usual.
        """
        slot = self.slot
        nt, nf = times[:], free[:]
        aligned = align(start, deadline, slot)
        carried = None  # the pre-job value the reference restores after a plan's end
        if aligned >= start and step_index(nt, aligned) < 0:
            carried = nf[bisect.bisect_left(nt, aligned) - 1]
            set_step(nt, nf, aligned, carried)
        alloc = {start: 0}
        event = start
        if assign:
            speed = job.speed[assign]
            nxt = bisect.bisect_right(times, start)
            future = times[nxt] if nxt < len(times) else aligned
            alloc[start] = assign
            real_end = math.ceil(start + left / speed)
            end = align(start, real_end, slot)
            i0 = step_index(nt, start)
            if future >= end and deadline >= real_end:
                back = None
                for u in times:
                    if u >= end:
                        break
                    if u >= start:
                        k = step_index(nt, u)
                        back = nf[k]
                        nf[k] -= assign
                if start != end:
                    nf[i0] = free[0] - assign
                if step_index(times, end) < 0:
                    set_step(nt, nf, end, back)
                return _done(nt, nf, alloc, end, real_end)
            left -= ((deadline if future == aligned else future) - start) * speed
            nf[i0] -= assign
            event = future
            alloc[event] = 0
        return self._plan_from(
            times, free, nt, nf, start, event, left, deadline, aligned, alloc, carried, job, assign
        )

    def _plan_from(
        self,
        times,
        free,
        nt,
        nf,
        start,
        event,
        left,
        deadline,
        aligned,
        alloc,
        carried,
        job: ScalingModel,
        assign: int,
    ) -> Plan:
        speed, fit, cap, slot, total = job.speed, job.fit, job.cap, self.slot, self.total
        lo = bisect.bisect_left(nt, event)
        hi = bisect.bisect_left(nt, aligned)
        for t in nt[:hi]:
            alloc.setdefault(t, 0)
        # 1. the smallest count that, counted back from the deadline, is enough
        last_q = 0
        for q in job.levels:
            if q > total:
                break
            until, gathered = aligned, 0.0
            for k in range(hi - 1, lo - 1, -1):
                p = nt[k]
                got = q if nf[k] >= q else min(q, fit[nf[k]])
                if not got:
                    until = p
                    continue
                gathered += ((deadline if until == aligned else until) - p) * speed[got]
                if gathered >= left:
                    return self._forward(
                        times,
                        free,
                        nt,
                        nf,
                        start,
                        event,
                        left,
                        deadline,
                        aligned,
                        alloc,
                        job,
                        q,
                        last_q,
                        p,
                    )
                until = p
            last_q = q
        # 2. not enough before the deadline: the top count on what is free until then
        last_t = last_k = last_a = None
        for k in range(lo, len(nt)):
            t = nt[k]
            if t > aligned:
                break
            if last_t is not None:
                alloc[last_t] = last_a
                nf[last_k] -= last_a
                if last_a:
                    left -= ((deadline if t == aligned else t) - last_t) * speed[last_a]
            last_t, last_k, last_a = t, k, min(last_q, fit[nf[k]])
        # 3. after the deadline: whatever fits, up to the cap, until done
        last_t = max(aligned, event)
        lk = step_index(nt, last_t)
        for k in range(bisect.bisect_right(nt, aligned), len(nt)):
            t = nt[k]
            q = min(fit[nf[lk]], cap)
            if not q:
                alloc[last_t] = 0
                last_t, lk = t, k
                continue
            alloc[last_t] = q
            gained = (t - last_t) * speed[q]
            if gained >= left:
                real_end = math.ceil(last_t + left / speed[q])
                end = align(start, real_end, slot)
                for u, f in zip(times, free, strict=True):
                    if u >= end:
                        break
                    if u >= aligned:
                        carried = f
                if last_t != end:
                    nf[lk] = carried - q
                if step_index(times, end) < 0:
                    set_step(nt, nf, end, carried)
                return _done(nt, nf, alloc, end, real_end)
            left -= gained
            for u in times:
                if u >= last_t:
                    break
                carried = nf[step_index(nt, u)]
            nf[lk] -= q
            last_t, lk = t, k
        # 4. beyond the timeline: the cap (or the count being priced) on an empty cluster
        q = assign or max((n for n in job.levels if n <= min(total, cap)), default=job.levels[0])
        alloc[last_t] = q
        real_end = math.ceil(last_t + left / speed[q])
        end = align(start, real_end, slot)
        nf[lk] = total - q
        set_step(nt, nf, end, total)
        return _done(nt, nf, alloc, end, real_end)

    def _forward(
        self,
        times,
        free,
        nt,
        nf,
        start,
        event,
        left,
        deadline,
        aligned,
        alloc,
        job: ScalingModel,
        q: int,
        prev_q: int,
        point: float,
    ) -> Plan:
        """Allocate from ``event``: ``prev_q`` before ``point``, ``q`` from it, until done."""
        speed, fit, slot = job.speed, job.fit, self.slot
        end = real_end = None
        last_t = last_k = last_a = None
        for k in range(bisect.bisect_left(nt, event), len(nt)):
            t = nt[k]
            if t > aligned:
                break
            if last_t is not None:
                alloc[last_t] = last_a
                nf[last_k] -= last_a
                if last_a:
                    gained = ((deadline if t == aligned else t) - last_t) * speed[last_a]
                    if last_t < point or gained < left:
                        left -= gained
                    else:
                        real_left = math.ceil(left / speed[last_a])
                        end = last_t + align(0, real_left, slot)
                        real_end = last_t + real_left
                        break
            last_t, last_k = t, k
            last_a = min(q if t >= point else prev_q, fit[nf[k]])
        if end is None:
            alloc[last_t] = last_a
            nf[last_k] -= last_a
            real_left = math.ceil(left / speed[last_a])
            end = last_t + align(0, real_left, slot)
            real_end = last_t + real_left
        back = self.total
        for u, f in zip(times, free, strict=True):
            if u >= end:
                break
            if u >= event:
                back = f
        if step_index(times, end) < 0:
            set_step(nt, nf, end, back)
        return _done(nt, nf, alloc, end, real_end)


def _done(nt: list[float], nf: list[int], alloc: dict, end: float, real_end: float) -> Plan:
    nt, nf = compact(nt, nf)
    steps, last = [], -1
    for t in sorted(alloc):
        g = alloc[t]
        if g != last:
            steps.append((t, g))
            last = g
    return Plan(nt, nf, steps, end, real_end)


def gpu_time(steps: list[tuple[float, int]], end: float) -> float:
    """GPU-seconds of an allocation step list held until ``end``."""
    total = 0.0
    for (t, g), (t2, _) in itertools.pairwise(steps):
        total += g * (t2 - t)
    if steps:
        t, g = steps[-1]
        total += g * (end - t)
    return total


@dataclass(frozen=True)
class ElasticFlow:
    """Deadline-aware admission control and elastic scaling (the artifact's ``ef-accessctrl``).

    Attributes:
        repricing: ``"all"`` re-prices every job after each scaling step, as the
            artifact does (exact, slow on large clusters); ``"chosen"`` is the
            faster approximation described in the module docstring.
    """

    repricing: str = "all"
    name: str = "elasticflow"

    def __post_init__(self) -> None:
        if self.repricing not in ("all", "chosen"):
            raise ValueError(f"repricing must be 'all' or 'chosen', got {self.repricing!r}")

    def simulate(self, setup: Setup) -> Recorder:
        return _ElasticFlowRun(setup, self.repricing == "all").run()


class _ElasticFlowRun:
    def __init__(self, setup: Setup, reprice_all: bool = True) -> None:
        self.setup = setup
        self.reprice_all = reprice_all
        self.jobs = setup.jobs
        self.total = setup.gpus
        self.models = scaling_models(setup)
        self.planner = Planner(self.total, setup.slot)
        self.rec = Recorder(self.jobs)
        n = len(self.jobs)
        self.deadline = [j.deadline for j in self.jobs]
        self.left = [float(j.iterations) for j in self.jobs]
        self.status = [0] * n
        self.gpus = [0] * n
        self.alloc: list[list[tuple[float, int]]] = [[] for _ in range(n)]
        self.end = [0] * n
        self.real_end = [0] * n
        self.done_at = [math.nan] * n
        self.overhead = [0.0] * n
        self.cached = [False] * n
        self.placed = [False] * n
        self.next_level = [0] * n
        self.marginal = [0.0] * n
        self.offer: list[Plan | None] = [None] * n
        self.runnable: list[int] = []
        self.pending: list[int] = []
        self.running = 0
        self.times: list[float] = []
        self.free: list[int] = []
        self.cache: set[tuple[int, int]] = set()
        self.rounds = 0
        self.events = EventQueue()
        for job in self.jobs:
            self.events.add_start(job.index, job.submit_time)

    # -- the round loop ---------------------------------------------------------------
    def run(self) -> Recorder:
        events, slot = self.events, self.setup.slot
        now, step = events.first_time(), 0
        while events or self.pending or self.running:
            self.progress(now, step)
            event = events.at(now)
            if event is not None:
                events.remove(now)
                if not self.pending and not self.running and event.empty():
                    if not events:
                        break
                    now, step = events.first_time(), 0
                    continue
                self.handle(event, now)
            self.start_pending(now)
            self.scale_up(now)
            first_change = min(
                (t for j in self.runnable for t, _ in self.alloc[j] if t > now), default=INF
            )
            self.runnable.sort(key=self.gpus.__getitem__, reverse=True)
            self.place(now)
            if first_change < INF and (not events or first_change < events.first_time()):
                events.add_empty(first_change)
            if not events:
                break
            self.charge_overhead()
            events.merge_slot(now, slot)
            nxt = events.first_time()
            step, now = nxt - now, nxt
        return self.rec

    def progress(self, now: float, step: float) -> None:
        """Advance running jobs by ``step`` seconds; a job ahead of plan ends at this event."""
        for j in self.runnable:
            gpus = self.gpus[j]
            if not gpus:
                continue
            run = step - (now - self.real_end[j] if now > self.real_end[j] else 0)
            lost = self.overhead[j]
            run = 0 if run < lost else run - lost
            rate = self.models[j].speed[gpus]
            done = run * rate
            if self.left[j] <= done and self.end[j] > now:
                finish = now - step + math.ceil(self.left[j] / rate)
                done = (self.end[j] - now + step) * rate
                self.events.move_end(j, self.end[j], now)
                self.end[j] = finish
                self.done_at[j] = finish
            self.left[j] -= done
            self.overhead[j] = 0

    def handle(self, event, now: float) -> None:
        """End jobs, admit or decline arrivals, and re-plan every runnable job."""
        for j in event.ends:
            if self.placed[j]:
                self.finish(j, now)
        for j in self.runnable:
            self.placed[j] = False
        old_end = {j: self.end[j] for j in self.runnable}
        deadline = self.deadline.__getitem__
        if event.starts:
            order = sorted(self.runnable + event.starts, key=deadline)
            ok, plans, timeline = self.estimate(order, now, stop_on_miss=True)
            if ok:
                for j in event.starts:
                    old_end[j] = 0
                    self.status[j] = PENDING
                    self.pending.append(j)
                    self.runnable.append(j)
            else:
                for j in event.starts:
                    self.status[j] = DECLINED
                    self.rec.reject(j)
                # without the arrivals, the plans before the first of them are the same
                arriving = set(event.starts)
                kept = []
                for j in order:
                    if j in arriving or j not in plans:
                        break
                    kept.append(j)
                _, plans, timeline = self.estimate(
                    sorted(self.runnable, key=deadline), now, reuse=kept, plans=plans
                )
        else:
            _, plans, timeline = self.estimate(sorted(self.runnable, key=deadline), now)
        self.runnable.sort(key=self.deadline.__getitem__)
        self.times, self.free = timeline
        for j in self.runnable:
            plan = plans[j]
            self.alloc[j] = plan.alloc
            self.gpus[j] = plan.alloc[0][1]
            self.events.move_end(j, old_end[j], plan.end)
            self.end[j] = plan.end
            self.real_end[j] = plan.real_end

    def estimate(
        self,
        order: list[int],
        now: float,
        *,
        stop_on_miss: bool = False,
        reuse: list[int] = (),
        plans: dict | None = None,
    ):
        """Plan ``order`` (deadline order) on an empty timeline; do all meet their deadlines?

        ``stop_on_miss`` stops at the first miss (the answer is known then; the
        artifact plans the rest but discards them). ``reuse`` names a prefix of
        ``order`` already planned, in ``plans``, on the same empty timeline.
        """
        times, free = [now], [self.total]
        done = {j: plans[j] for j in reuse} if reuse else {}
        if reuse:
            times, free = done[reuse[-1]].times, done[reuse[-1]].free
        ok = True
        plan_one, left, deadline, models = self.planner.plan, self.left, self.deadline, self.models
        for j in order[len(done) :]:
            plan = plan_one(times, free, now, left[j], deadline[j], models[j])
            times, free = plan.times, plan.free
            done[j] = plan
            if plan.real_end > deadline[j]:
                ok = False
                if stop_on_miss:
                    break
        return ok, done, (times, free)

    def finish(self, j: int, now: float) -> None:
        self.runnable.remove(j)
        self.running -= 1
        self.status[j] = DONE
        finish = self.done_at[j] if self.done_at[j] == self.done_at[j] else self.real_end[j]
        self.rec.finished(j, finish, now, met=self.real_end[j] <= self.deadline[j])

    def start(self, j: int, now: float) -> None:
        self.pending.remove(j)
        self.status[j] = RUNNING
        self.running += 1
        self.rec.started(j, now)

    def start_pending(self, now: float) -> None:
        for j in [j for j in self.pending if self.gpus[j] > 0]:
            self.start(j, now)
            self.events.add_end(j, self.end[j])

    # -- handing out free GPUs --------------------------------------------------------
    def scale_up(self, now: float) -> None:
        """Give free GPUs one scaling step at a time to the job with the best offer.

        As in the reference, every job is priced again after each step; a price
        whose inputs the step provably left unchanged is reused (see :meth:`keep`).
        """
        runnable, gpus, models = self.runnable, self.gpus, self.models
        for j in runnable:
            self.next_level[j] = models[j].next_level(gpus[j])
        spare = self.total - sum(gpus[j] for j in runnable)
        if spare == 0:
            return
        if not self.reprice_all and spare >= sum(models[j].top - gpus[j] for j in runnable):
            self.fill_up(now)
            return
        self.reusable: dict[int, list] = {}
        for j in runnable:
            self.price(j, spare, now)
        runnable.sort(key=self.marginal.__getitem__, reverse=True)
        grew = True
        while spare > 0 and grew:
            grew = False
            for j in runnable:
                step = self.next_level[j] - gpus[j]
                if step > spare or step == 0:
                    continue
                plan = self.offer[j]
                if plan is None:  # priced without a plan (idle job) or on an older timeline
                    plan, _, _ = self.make_offer(j, now)
                before = self.times, self.free
                self.times, self.free = plan.times, plan.free
                self.alloc[j] = plan.alloc
                gpus[j] = self.next_level[j]
                old_end, self.end[j], self.real_end[j] = self.end[j], plan.end, plan.real_end
                if self.status[j] == PENDING:
                    self.start(j, now)
                self.events.move_end(j, old_end, plan.end)
                spare -= step
                grew = True
                self.next_level[j] = models[j].next_level(gpus[j])
                self.reusable.pop(j, None)
                self.keep(*before, now)
                chosen = j
                break
            if not self.reprice_all and grew:
                for j in runnable:
                    self.offer[j] = None  # every other offer's timeline is stale now
                if self.next_level[chosen] > gpus[chosen]:
                    self.price(chosen, spare, now)  # on the current timeline
                runnable.sort(key=self.marginal.__getitem__, reverse=True)
                continue
            for j in runnable:
                if self.next_level[j] > gpus[j]:
                    if j in self.reusable and self.next_level[j] - gpus[j] <= spare:
                        continue
                    self.price(j, spare, now)
            runnable.sort(key=self.marginal.__getitem__, reverse=True)

    def fill_up(self, now: float) -> None:
        """Enough spare GPUs for every job's top level: scale each there in one step.

        Idle jobs first (as the artifact's +inf price puts them), then by deadline;
        each is planned once at its top level on the timeline as it stands. The
        artifact reaches the same counts one level at a time in price order, so
        only the planned ends of this round can differ.
        """
        runnable, gpus, models = self.runnable, self.gpus, self.models
        order = [j for j in runnable if not gpus[j]] + [j for j in runnable if gpus[j]]
        for j in order:
            top = models[j].top
            if top <= gpus[j]:
                continue
            self.next_level[j] = top
            plan, _, _ = self.make_offer(j, now)
            self.times, self.free = plan.times, plan.free
            self.alloc[j] = plan.alloc
            gpus[j] = top
            old_end, self.end[j], self.real_end[j] = self.end[j], plan.end, plan.real_end
            if self.status[j] == PENDING:
                self.start(j, now)
            self.events.move_end(j, old_end, plan.end)
        runnable.sort(key=lambda j: -INF if gpus[j] == 0 else 0)

    def make_offer(self, j: int, now: float) -> tuple[Plan, list[float], list[int]]:
        """Plan ``j`` one scaling step up on the timeline with its own GPUs handed back."""
        times, free = self.released(j)
        plan = self.planner.plan(
            times, free, now, self.left[j], self.deadline[j], self.models[j],
            assign=self.next_level[j],
        )  # fmt: skip
        self.offer[j] = plan
        return plan, times, free

    def released(self, j: int) -> tuple[list[float], list[int]]:
        """The cluster timeline plus job ``j``'s own allocation until its planned end."""
        steps, end, total = self.alloc[j], self.end[j], self.total
        keys = sorted({*self.times, *(t for t, _ in steps), end})
        times, free = self.times, self.free
        out_t: list[float] = []
        out_f: list[int] = []
        i = a = 0
        n, m = len(times), len(steps)
        base, held, last = total, 0, -1
        for k in keys:
            while i < n and times[i] <= k:
                base = free[i]
                i += 1
            while a < m and steps[a][0] <= k:
                held = steps[a][1]
                a += 1
            value = base + held if k < end else base
            if value != last:
                out_t.append(k)
                out_f.append(value)
                last = value
        return out_t, out_f

    def price(self, j: int, spare: int, now: float) -> None:
        """The GPU-time per added GPU of scaling ``j`` one step now (+inf for idle jobs)."""
        level, gpus = self.next_level[j], self.gpus[j]
        self.reusable.pop(j, None)
        self.offer[j] = None
        if level - gpus > spare or level == gpus:
            self.marginal[j] = -INF
            return
        if gpus == 0:
            self.marginal[j] = INF  # idle jobs come first; plan them only when chosen
            return
        plan, times, free = self.make_offer(j, now)
        self.marginal[j] = (
            gpu_time(plan.alloc, plan.end) - gpu_time(self.alloc[j], self.end[j])
        ) / (level - gpus)
        # the price reads the timeline only from its first step after now, up to the
        # first step at or after its deadline slot and its end (if the deadline slot
        # comes earlier, it reads more): note that window and the jump at its start
        aligned = align(now, self.deadline[j], self.setup.slot)
        if len(times) > 1 and aligned >= times[1]:
            k = bisect.bisect_left(times, max(aligned, plan.end))
            horizon = times[k] if k < len(times) else INF
            self.reusable[j] = [times[1], horizon, free[1] - free[0]]

    def keep(self, old_t: list[float], old_f: list[int], now: float) -> None:
        """Drop the reusable prices that the timeline change old → current can affect.

        A job's price reads the timeline (with its own GPUs handed back) on a
        window from its first step after now, ``f``, to a horizon ``h``. It is
        unchanged if the change is a constant before ``f``, nothing on [f, h], and
        ``f`` is still a step.
        """
        if not self.reusable:
            return
        new_t, new_f, total = self.times, self.free, self.total
        keys = sorted(set(old_t) | set(new_t))
        delta = [value_at(new_t, new_f, k, total) - value_at(old_t, old_f, k, total) for k in keys]
        first = delta[0]
        change = next((keys[i] for i in range(1, len(keys)) if delta[i] != first), INF)
        next_change = [INF] * len(keys)  # next key after i where the change is nonzero
        upcoming = INF
        for i in range(len(keys) - 1, -1, -1):
            next_change[i] = upcoming
            if delta[i]:
                upcoming = keys[i]
        for j, (step, horizon, jump) in list(self.reusable.items()):
            i = bisect.bisect_right(keys, step) - 1
            if change >= step and not delta[i] and next_change[i] > horizon and jump != first:
                self.reusable[j][2] = jump - first
                self.offer[j] = None  # its plan's timeline is stale; re-plan if chosen
            else:
                del self.reusable[j]

    # -- placement and overhead -------------------------------------------------------
    def place(self, now: float) -> None:
        """Lay jobs on nodes (largest first) and note whose GPU set is cached."""
        nodes = NodeSets(self.setup.cluster.nodes, self.setup.cluster.gpus_per_node)
        placed = []
        for j in self.runnable:
            g = self.gpus[j]
            self.rec.set_gpus(j, now, g)
            if g:
                if not nodes.place(j, g):
                    raise RuntimeError(f"no room for job {j} on {g} GPUs")  # as the reference
                placed.append(j)
                self.placed[j] = True
        for j in placed:
            key = (nodes.first_rank(j, self.gpus), self.gpus[j])
            self.cached[j] = key in self.cache
            self.cache.add(key)

    def charge_overhead(self) -> None:
        """Price this round's restarts and push planned ends back by them."""
        overhead, total = self.setup.overhead, self.total
        restart = overhead.is_restart(self.rounds)
        self.rounds += 1
        if restart:
            self.cache.clear()
        for j in self.runnable:
            g = self.gpus[j]
            if g:
                cost = overhead.cost(g, total, restart=restart, cached=self.cached[j])
                self.overhead[j] = cost
                self.events.move_end(j, self.end[j], self.end[j] + cost)
                self.end[j] += cost
