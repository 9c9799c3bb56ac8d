"""Tiresias (2D-LAS): preemptive multi-level queues on attained GPU-time, rigid GPU counts.

Jobs run on the GPU count they asked for and their work is the trace's
duration in seconds (so duration-only traces work too). A job starts in queue
0 and is demoted once its executed seconds × GPUs pass 3,250 and then 7,200
GPU-seconds; queues are served in order, first-fit in FIFO order within a
queue (a job that does not fit is skipped, not waited for), and running jobs
that no longer fit are preempted. (Re)starting costs the restart overhead.

Scheduling points are arrivals (merged into slots), the earliest planned end
(at least a slot away) and the earliest queue demotion. Mirrors the
artifact's ``--schedule=dlas-gpu``, including how it estimates the next
demotion: (threshold − executed seconds) / GPUs.

Why the loop is built the way it is. The reference visits every running job
at every event (crediting time, testing demotion, planning ends) and walks
every queued job at every first fit. A million-job trace on thousands of GPUs
has up to one event per slot and thousands of jobs running and waiting, so
that costs events × jobs. Here an event costs what changes at it:

* executed seconds are kept relative to running clocks — one for all running
  jobs (the whole seconds every check credits) and one per GPU count (what a
  periodic restart costs, the same for every job of that size) — so crediting
  the running jobs is two additions, and a job's own number changes only when
  it starts, stops or is charged its start-up overhead;
* the next end and the next demotion are the tops of heaps (one per GPU count,
  and per queue and GPU count), in which a job's order cannot change while it
  runs;
* a queue is its running jobs in order (an insertion-ordered dict), then its
  waiting jobs, one deque per GPU count with keys for their place in the
  queue: first fit takes the running jobs as a block when they fit, walks back
  from the end only over the ones that no longer do, and finds each next
  waiting job that fits among the deques' heads.

Every number is computed with the reference's own arithmetic (Python ints for
executed seconds, the same float expressions for ends and demotions), so each
job's times are those of the event-by-event loop; a test replays random traces
through both.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from itertools import chain

import numpy as np

from mltraces.scheduling.base import Setup
from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.events import arrival_groups
from mltraces.scheduling.results import Recorder

PENDING, RUNNING = 1, 2
#: above this many stale entries per valid one a heap is rebuilt
_STALE = 4


@dataclass(frozen=True)
class Tiresias:
    """Discretised 2D-LAS with GPU-time thresholds (the artifact's ``dlas-gpu``)."""

    thresholds: tuple[float, ...] = (3250, 7200)
    name: str = "tiresias"

    def simulate(self, setup: Setup) -> Recorder:
        return _TiresiasRun(setup, self.thresholds).run()


class _Queue:
    """One priority queue in the reference's order: running jobs, then waiting ones,
    then the jobs that joined it at this event (arrivals, demotions).

    ``running`` keeps insertion order. A waiting job sits in the deque of its
    GPU count under a key that orders the whole queue: preempted jobs go in
    front (keys below ``low``), jobs left waiting at the back (from ``high``).
    """

    __slots__ = ("held", "high", "joined", "low", "running", "waiting")

    def __init__(self) -> None:
        self.running: dict[int, None] = {}
        self.held = 0  # GPUs of the running jobs
        self.waiting: dict[int, deque[tuple[int, int]]] = {}
        self.low = 0
        self.high = 0
        self.joined: list[int] = []

    def wait_last(self, j: int, size: int) -> None:
        line = self.waiting.get(size)
        if line is None:
            line = self.waiting[size] = deque()
        line.append((self.high, j))
        self.high += 1

    def wait_first(self, jobs: list[int], gpus: list[int]) -> None:
        """``jobs`` (in queue order) go before every waiting job."""
        for j in reversed(jobs):
            self.low -= 1
            size = gpus[j]
            line = self.waiting.get(size)
            if line is None:
                line = self.waiting[size] = deque()
            line.appendleft((self.low, j))

    def next_fitting(self, free: int) -> int:
        """The GPU count of the first waiting job that fits in ``free`` GPUs (0: none)."""
        best, first = 0, 0
        for size, line in self.waiting.items():
            if size <= free and (not best or line[0][0] < first):
                best, first = size, line[0][0]
        return best

    def pop_waiting(self, size: int) -> int:
        line = self.waiting[size]
        j = line.popleft()[1]
        if not line:
            del self.waiting[size]
        return j

    def waiting_in_order(self) -> list[int]:
        return [j for _, j in sorted(chain.from_iterable(self.waiting.values()))]


class _TiresiasRun:
    """The event loop (see the module docstring for how its state is kept)."""

    def __init__(self, setup: Setup, thresholds: tuple[float, ...]) -> None:
        jobs = setup.jobs
        self.setup = setup
        self.rec = setup.recorder()
        n = len(jobs)
        self.cluster_gpus = total = setup.gpus
        self.gpus: list[int] = jobs.num_gpu.tolist()
        admitted = jobs.num_gpu <= total  # a larger job could never run; the reference stalls
        for j in np.flatnonzero(~admitted).tolist():
            self.rec.reject(j)
        _check_durations(jobs, admitted)
        self.duration: list[float] = jobs.duration.tolist()
        whole = np.floor(np.where(admitted, jobs.duration, 0.0))
        self.whole = whole.astype(np.int64).tolist()  # exact heap keys: whole + fraction
        self.fraction = (np.where(admitted, jobs.duration, 0.0) - whole).tolist()
        self.sizes = sizes = sorted({self.gpus[j] for j in np.flatnonzero(admitted).tolist()})
        size_class = {size: c for c, size in enumerate(sizes)}
        self.cls = [size_class.get(g, -1) for g in self.gpus]
        cost = setup.overhead.cost
        self.start_cost = [cost(g, total, restart=False) for g in sizes]
        self.restart_cost = [cost(g, total, restart=True) for g in sizes]
        # a class's restart charge is done per class when int(e + x) == e + int(x) is certain
        self.exact_classes = float(np.max(whole, initial=0.0)) < 2.0**31
        self.limits = thresholds
        self.last_queue = len(thresholds)
        self.need = [[_least_demoting(limit, g) for g in sizes] for limit in thresholds]
        self.restart_every = setup.overhead.period(setup.slot)

        self.status = [0] * n
        self.queue = [0] * n
        # executed seconds; for a running job less the running clocks (clock + class_clock)
        self.seconds: list[int] = [0] * n
        self.clock = 0
        self.class_clock = [0] * len(sizes)
        self.overhead = [0.0] * n
        self.rank: list[tuple[int, int]] = [(0, 0)] * n  # the reference's runnable order
        self.end_version = [0] * n
        self.demote_version = [0] * n
        self.members: list[dict[int, None]] = [{} for _ in sizes]  # running jobs per class
        self.ends: list[list[tuple[int, float, int, int]]] = [[] for _ in sizes]
        self.demotions = [[[] for _ in sizes] for _ in range(self.last_queue)]
        self.queues = [_Queue() for _ in range(self.last_queue + 1)]
        # jobs started since the last check: charged their overhead there, and only then
        # entered in the heaps (next_end and pop_ending look at them one by one)
        self.fresh: list[int] = []
        self.charge_all = False  # a periodic restart: every running job pays its overhead
        self.demand = 0  # GPUs the runnable jobs ask for
        self.runnable = 0
        self.admitted = 0
        self.rounds = 0
        self.restart = False
        self.last_now = 0.0
        self.end_at: tuple[float, bool, float] = (0.0, False, math.inf)

        # arrivals: groups of jobs by submission time; the head may be several merged
        self.gtime, self.gptr, self.gjobs = arrival_groups(
            jobs.submit_time, np.flatnonzero(admitted)
        )
        self.gtime = self.gtime.tolist()
        self.gptr = self.gptr.tolist()
        self.gjobs = self.gjobs.tolist()
        self.n_groups = len(self.gtime)
        self.first, self.head_end = 0, 1
        self.head_time = self.gtime[0] if self.n_groups else math.inf

    # -- the loop ----------------------------------------------------------------------
    def run(self) -> Recorder:
        slot, inf = self.setup.slot, math.inf
        end_time = jump = inf
        while self.first < self.n_groups or self.runnable:
            arrivals = self.first < self.n_groups
            if not arrivals and end_time == inf:
                break  # the reference stops here too: nothing left can start
            start_time = self.head_time if arrivals else inf
            now = start_time if start_time < end_time else end_time
            ends, starts = end_time <= start_time, start_time <= end_time
            if now > jump:
                now, ends, starts = jump, False, False
            if ends:
                self.finish(self.pop_ending(), now)
            if starts:
                self.admit(self.pop_arrivals())
            self.account(now)
            self.schedule(now)
            self.rec.round(now)
            end_time, demotion = self.next_end(now, slot)
            soon = now + slot
            jump = demotion if demotion > soon else soon
            if self.first < self.n_groups:
                self.merge_slot(now, slot)
        return self.rec

    # -- arrivals: the reference's event list, as a pointer into the groups -------------
    def pop_arrivals(self) -> list[int]:
        jobs = self.gjobs[self.gptr[self.first]:self.gptr[self.head_end]]
        self.first = self.head_end
        self.head_end = self.first + 1
        if self.first < self.n_groups:
            self.head_time = self.gtime[self.first]
        return jobs

    def merge_slot(self, now: float, slot: float) -> None:
        """Fold every arrival due within a slot of ``now`` into one at ``now + slot``
        (a lone remaining one stays where it is)."""
        if self.n_groups - self.head_end + 1 < 2 or self.head_time - now > slot:
            return
        gtime, end, n = self.gtime, self.head_end, self.n_groups
        while end < n and gtime[end] - now <= slot:
            end += 1
        self.head_end = end
        self.head_time = now + slot

    # -- jobs coming and going ---------------------------------------------------------
    def admit(self, starts: list[int]) -> None:
        gpus, status, queue, rank = self.gpus, self.status, self.queue, self.rank
        joined = self.queues[0].joined
        for j in starts:
            self.demand += gpus[j]
            status[j] = PENDING
            queue[j] = 0
            joined.append(j)
            self.admitted += 1
            rank[j] = (-gpus[j], self.admitted)
        self.runnable += len(starts)

    def finish(self, ends: list[tuple[int, int]], now: float) -> None:
        gpus, queues, queue, rec = self.gpus, self.queues, self.queue, self.rec
        for j, at in ends:
            rec.finished(j, at, now)
            held = queues[queue[j]]
            del held.running[j]
            held.held -= gpus[j]
            self.demand -= gpus[j]
            self.runnable -= 1
            self.stop(j, 0)

    def start(self, j: int, now: float, restart: bool) -> None:
        c = self.cls[j]
        self.status[j] = RUNNING
        self.overhead[j] = (self.restart_cost if restart else self.start_cost)[c]
        self.fresh.append(j)
        self.end_version[j] += 1  # entries of an earlier run are stale from now on
        self.demote_version[j] += 1
        self.seconds[j] -= self.clock + self.class_clock[c]
        self.members[c][j] = None
        self.rec.set_gpus(j, now, self.gpus[j])

    def stop(self, j: int, status: int) -> None:
        c = self.cls[j]
        self.status[j] = status
        self.seconds[j] += self.clock + self.class_clock[c]
        del self.members[c][j]

    def preempt(self, j: int, now: float) -> None:
        self.stop(j, PENDING)
        self.rec.set_gpus(j, now, 0)

    def track(self, j: int) -> None:
        """(Re)enter running job ``j`` in the end heap and, below the last queue, the
        demotion heap (after it started or its executed seconds changed)."""
        c, s = self.cls[j], self.seconds[j]
        self.end_version[j] += 1
        heap = self.ends[c]
        heapq.heappush(heap, (self.whole[j] - s, self.fraction[j], self.end_version[j], j))
        if len(heap) > _STALE * len(self.members[c]) + 64:
            self.ends[c] = self._valid(heap, self.end_version, 2)
        q = self.queue[j]
        if q < self.last_queue:
            self._track_demotion(j, q, c, s)

    def _track_demotion(self, j: int, q: int, c: int, s: int) -> None:
        self.demote_version[j] += 1
        heap = self.demotions[q][c]
        heapq.heappush(heap, (-s, self.demote_version[j], j))
        if len(heap) > _STALE * len(self.members[c]) + 64:
            self.demotions[q][c] = self._valid(heap, self.demote_version, 1)

    def _valid(self, heap: list, version: list[int], at: int) -> list:
        status = self.status
        kept = [e for e in heap if status[e[-1]] == RUNNING and e[at] == version[e[-1]]]
        heapq.heapify(kept)
        return kept

    def _top(self, heap: list, version: list[int], at: int) -> int:
        """The job at the top of ``heap`` after dropping stale entries (-1: empty)."""
        status = self.status
        while heap:
            entry = heap[0]
            j = entry[-1]
            if status[j] == RUNNING and entry[at] == version[j]:
                return j
            heapq.heappop(heap)
        return -1

    # -- crediting and demotion --------------------------------------------------------
    def account(self, now: float) -> None:
        """Credit running jobs with the seconds since the last check; demote."""
        elapsed = int(now - self.last_now)
        self.last_now = now
        whole = elapsed if elapsed > 0 else 0
        before = self.clock
        self.clock = before + whole
        status = self.status
        if self.charge_all:
            self.charge_restart(elapsed, whole, before)
            for j in self.fresh:
                if status[j] == RUNNING:
                    self.track(j)
        else:
            seconds, overhead, cls, class_clock = self.seconds, self.overhead, self.cls, \
                self.class_clock
            for j in self.fresh:
                if status[j] == RUNNING:  # (a job priced at its start may have ended since)
                    offset = class_clock[cls[j]]
                    gained = elapsed - overhead[j]
                    if gained < 0:
                        gained = 0
                    # whole seconds on whole seconds, as the reference
                    seconds[j] = int(seconds[j] + before + offset + gained) - self.clock - offset
                    self.track(j)
        self.fresh = []
        self.charge_all = False
        self.demote()

    def charge_restart(self, elapsed: int, whole: int, before: int) -> None:
        """After a periodic restart every running job lost its restart overhead, which
        depends only on its GPU count: one class clock moves for all of them."""
        for c, members in enumerate(self.members):
            if not members:
                continue
            gained = elapsed - self.restart_cost[c]
            if gained < 0:
                gained = 0
            step = int(gained)
            if self.exact_classes and (gained == step or gained - step < 1 - 2.0**-18):
                self.class_clock[c] += step - whole
                continue
            offset = self.class_clock[c]  # the exact rule, job by job
            for j in list(members):
                self.seconds[j] = (int(self.seconds[j] + before + offset + gained)
                                   - self.clock - offset)
                self.track(j)

    def demote(self) -> None:
        """Move every running job whose GPU-time passed its queue's limit one queue down,
        in the reference's order (GPUs descending, then arrival)."""
        moved = []
        version = self.demote_version
        for q in range(self.last_queue):
            need = self.need[q]
            for c, heap in enumerate(self.demotions[q]):
                if not heap:
                    continue
                least = need[c] - self.clock - self.class_clock[c]
                while heap:
                    j = self._top(heap, version, 1)
                    if j < 0 or -heap[0][0] < least:
                        break
                    heapq.heappop(heap)
                    moved.append(j)
        if not moved:
            return
        moved.sort(key=self.rank.__getitem__)
        queues, queue, gpus = self.queues, self.queue, self.gpus
        for j in moved:
            q = queue[j]
            del queues[q].running[j]
            queues[q].held -= gpus[j]
            queue[j] = q + 1
            queues[q + 1].joined.append(j)
            if q + 1 < self.last_queue:
                self._track_demotion(j, q + 1, self.cls[j], self.seconds[j])

    # -- scheduling --------------------------------------------------------------------
    def schedule(self, now: float) -> None:
        """Serve the queues in order, first fit; preempt running jobs that no longer fit.

        When the runnable jobs' GPUs add up to no more than the cluster, all of
        them fit whatever the order: the waiting ones just start.
        """
        every = self.restart_every
        restart = every > 0 and self.rounds > 0 and self.rounds % every == 0
        self.rounds += 1
        if self.demand > self.cluster_gpus:
            self.first_fit(now, restart)
        else:
            self.start_waiting(now, restart)
        self.restart = restart

    def start_waiting(self, now: float, restart: bool) -> None:
        status = self.status
        for queue in self.queues:
            for j in chain(queue.waiting_in_order() if queue.waiting else (), queue.joined):
                if status[j] == PENDING:
                    self.start(j, now, restart)
                queue.running[j] = None
                queue.held += self.gpus[j]
            queue.waiting.clear()
            queue.joined = []

    def first_fit(self, now: float, restart: bool) -> None:
        free = self.cluster_gpus
        for queue in self.queues:
            preempted: list[int] = []
            if queue.held > free:
                free = self.squeeze(queue, free, now, preempted)
            else:
                free -= queue.held
            if queue.waiting and free > 0:
                free = self.take_waiting(queue, free, now, restart)
            if queue.joined:
                free = self.take_joined(queue, free, now, restart)
            if preempted:
                queue.wait_first(preempted, self.gpus)

    def squeeze(self, queue: _Queue, free: int, now: float, preempted: list[int]) -> int:
        """The running jobs of ``queue`` in order, ``free`` GPUs left: keep those that
        fit, preempt the rest (into ``preempted``); the GPUs left after them.

        Only the jobs from the first that does not fit on are visited (walking
        back from the end): the ones before it all fit.
        """
        gpus = self.gpus
        rest, tail = queue.held, []
        for j in reversed(queue.running):
            if rest <= free:
                break
            tail.append(j)
            rest -= gpus[j]
        left = free - rest
        for j in reversed(tail):
            if gpus[j] <= left:
                left -= gpus[j]
            else:
                preempted.append(j)
        for j in preempted:
            del queue.running[j]
            queue.held -= gpus[j]
            self.preempt(j, now)
        return left

    def take_waiting(self, queue: _Queue, free: int, now: float, restart: bool) -> int:
        """Start the waiting jobs that fit, in queue order; the GPUs left."""
        while free > 0:
            size = queue.next_fitting(free)
            if not size:
                break
            j = queue.pop_waiting(size)
            self.start(j, now, restart)
            queue.running[j] = None
            queue.held += size
            free -= size
        return free

    def take_joined(self, queue: _Queue, free: int, now: float, restart: bool) -> int:
        """The jobs that joined at this event, in order: run those that fit, queue the rest."""
        gpus, status = self.gpus, self.status
        for j in queue.joined:
            need = gpus[j]
            if free >= need:
                if status[j] == PENDING:
                    self.start(j, now, restart)
                queue.running[j] = None
                queue.held += need
                free -= need
            else:
                if status[j] == RUNNING:
                    self.preempt(j, now)
                queue.wait_last(j, need)
        queue.joined = []
        return free

    # -- what comes next ---------------------------------------------------------------
    def end_of(self, j: int, now: float, restart: bool) -> int:
        """Job ``j``'s planned end as the reference computes it at ``now``."""
        c = self.cls[j]
        remaining = self.duration[j] - (self.seconds[j] + self.clock + self.class_clock[c])
        if restart:
            remaining += self.restart_cost[c]
        return int(now + remaining)

    def next_end(self, now: float, slot: float) -> tuple[float, float]:
        """The earliest planned end (at least a slot away), and when the next running
        job is due for demotion (the reference's estimate)."""
        soon, restart = now + slot, self.restart
        first = math.inf
        tops = [self._top(heap, self.end_version, 2) for heap in self.ends]
        for j in chain(tops, self.fresh):
            if j >= 0:
                at = self.end_of(j, now, restart)
                when = soon if soon > at else at
                if when < first:
                    first = when
        self.end_at = (now, restart, first)
        demotion = math.inf
        for q in range(self.last_queue):
            for heap in self.demotions[q]:
                j = self._top(heap, self.demote_version, 1)
                if j >= 0:
                    demotion = min(demotion, self.demotion_due(j, q, now))
        for j in self.fresh:
            q = self.queue[j]
            if q < self.last_queue:
                demotion = min(demotion, self.demotion_due(j, q, now))
        if restart:
            self.charge_all = True  # every running job pays the restart overhead
        return first, demotion

    def demotion_due(self, j: int, q: int, now: float) -> int:
        """When running job ``j`` in queue ``q`` is due for demotion (the reference's
        estimate: the GPU-seconds left to the limit over its GPUs)."""
        executed = self.seconds[j] + self.clock + self.class_clock[self.cls[j]]
        return int(math.ceil((self.limits[q] - executed) / self.gpus[j]) + now)

    def pop_ending(self) -> list[tuple[int, int]]:
        """The jobs planned to end at the earliest end, with their ends (the state is
        the one :meth:`next_end` saw: nothing changes between two events)."""
        now, restart, first = self.end_at
        soon = now + self.setup.slot
        out, kept = [], []
        for j in self.fresh:
            at = self.end_of(j, now, restart)
            if (soon if soon > at else at) > first:
                kept.append(j)
            else:
                out.append((j, at))
        self.fresh = kept
        for heap in self.ends:
            while True:
                j = self._top(heap, self.end_version, 2)
                if j < 0:
                    break
                at = self.end_of(j, now, restart)
                if (soon if soon > at else at) > first:
                    break
                heapq.heappop(heap)
                out.append((j, at))
        return out


def _least_demoting(limit: float, gpus: int) -> int:
    """The fewest executed seconds ``x`` with ``x * gpus >= limit`` (exact integer test)."""
    x = max(math.ceil(limit / gpus), 0)
    while x * gpus < limit:
        x += 1
    while x > 0 and (x - 1) * gpus >= limit:
        x -= 1
    return x


def _check_durations(jobs, admitted: np.ndarray) -> None:
    """Tiresias's work is the trace's run time: a job without a finite one would never end."""
    bad = np.flatnonzero(admitted & ~np.isfinite(jobs.duration))
    if len(bad):
        named = ", ".join(f"{jobs.job_id[j]!r} ({jobs.duration[j]})" for j in bad[:3])
        raise SchedulingError(
            f"tiresias needs every job's duration in seconds; {len(bad)} job(s) have none "
            f"or an infinite one: {named}{', ...' if len(bad) > 3 else ''}"
        )
