"""The compiled per-job loops of a Chronus replay's 240-s steps (see :mod:`.chronus`).

Why compiled. Every 240 s a Chronus replay credits, releases and re-plans every
running job, ranks every waiting one and restarts all those put on spare GPUs
(the artifact releases them at each lease and starts them again): on ITP's
busiest clusters a few hundred jobs in each of ~20,000 steps, a few dozen
attribute reads and writes each. As Python objects that was most of a replay.
Here a job is a C struct (:class:`Job`, its fields readable and writable from
Python as before) and those loops run in C: crediting and releasing, the
planned jobs' columns and room, moving plans one lease on (a plan is kept as runs
of leases, :class:`.leases.Spans`: the cost is per run, not per lease), ranking
and sorting the queue, handing out spare GPUs, (re)starts. The lease programs and the
packing (:mod:`.leases`, :mod:`.leasecore`), arrivals and the recording of
outcomes (:class:`.results.Recorder`, called from here) stay where they were.

The source is Cython's pure Python mode (see :mod:`.native`): compiled when
mltraces is installed, the same file runs as Python otherwise. Each expression
keeps the operands and order of the Python it replaced (an int meeting a float
is widened to a double, exactly, as Python does), so both give the same numbers.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

if cython.compiled:
    from cython.cimports.libc.math import ceil
    from cython.cimports.mltraces.scheduling.cores import mergesort
else:
    from math import ceil

    from mltraces.scheduling.cores import mergesort

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)

#: the lease term (s); per (re)start, seconds times 1 + log2 n (as :mod:`.chronus`)
LEASE = cython.declare(i64, 240)
RESTART = cython.declare(f64, 0.5)
#: queue priorities (as :mod:`.chronus`'s LATE, ACCEPTED, DECLINED)
LATE = cython.declare(i64, -1)
ACCEPTED = cython.declare(i64, 0)
DECLINED = cython.declare(i64, 1)


@cython.cclass
class Job:
    """One job's state in the replay (the artifact's per-job fields, by what they mean)."""

    index = cython.declare(i64, visibility="public")
    gpus = cython.declare(i64, visibility="public")
    width = cython.declare(i64, visibility="public")  # the GPU count it is planned with
    submit = cython.declare(i64, visibility="public")
    seniority = cython.declare(i64, visibility="public")  # the earlier submitted, the larger
    duration = cython.declare(f64, visibility="public")
    listed = cython.declare(i64, visibility="public")  # its deadline, s after submission
    deadline = cython.declare(i64, visibility="public")  # the same, possibly lease-aligned
    estimate = cython.declare(i64, visibility="public")
    leases = cython.declare(i64, visibility="public")
    restart_cost = cython.declare(f64, visibility="public")  # RESTART s times this a start
    progress = cython.declare(f64, visibility="public")
    executed = cython.declare(i64, visibility="public")
    last_check = cython.declare(i64, visibility="public")
    restarts = cython.declare(i64, visibility="public")
    penalty = cython.declare(f64, visibility="public")  # restarts x 0.5 s x (1 + log2 n)
    due = cython.declare(i64, visibility="public")  # while it runs: the step it ends at
    seen = cython.declare(i64, visibility="public")  # the last 240-s step it held GPUs before
    priority = cython.declare(i64, visibility="public")
    urgency = cython.declare(f64, visibility="public")
    on_lease = cython.declare(cython.bint, visibility="public")
    overdue = cython.declare(cython.bint, visibility="public")
    running = cython.declare(cython.bint, visibility="public")
    done = cython.declare(cython.bint, visibility="public")
    planned = cython.declare(cython.bint, visibility="public")  # takes part in lease programs
    end = cython.declare(f64, visibility="public")
    # the coming leases it runs in (see plan): spans (lo, hi) of terms, pairs span_at to
    # span_end of the array spans (None: no plan), less offset (the leases passed since)
    spans = cython.declare(object, visibility="public")
    span_at = cython.declare(i64, visibility="public")
    span_end = cython.declare(i64, visibility="public")
    offset = cython.declare(i64, visibility="public")

    def __init__(self, index: i64, gpus: i64, width: i64, submit: i64, duration: f64,
                 relative: i64, estimate: i64, leases: i64, restart_cost: f64) -> None:
        self.index, self.gpus, self.width = index, gpus, width
        self.submit, self.duration = submit, duration
        self.seniority = -submit
        self.listed = self.deadline = relative
        self.estimate, self.leases, self.restart_cost = estimate, leases, restart_cost
        self.progress = 0.0
        self.executed = 0
        self.last_check = submit
        self.restarts = 0
        self.penalty = 0.0
        self.due = 0
        self.seen = -1
        self.priority = ACCEPTED
        self.urgency = 0.0
        self.on_lease = self.overdue = self.running = self.done = False
        self.end = float("nan")
        self.planned = True
        self.spans = None
        self.span_at = self.span_end = self.offset = 0

    @cython.ccall
    def horizon(self, lease_index: i64) -> i64:
        """Whole leases from lease ``lease_index`` to the last one ending by its deadline."""
        return (self.listed + self.submit) // LEASE - lease_index

    @property
    def plan(self) -> object:
        """The coming leases it runs in (0: the next), as int64 terms; None without a plan."""
        if self.spans is None:
            return None
        pairs = self.spans[2 * self.span_at: 2 * self.span_end]
        return np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi
                               in zip(pairs[::2].tolist(), pairs[1::2].tolist(), strict=True)]
                              + [np.zeros(0, np.int64)]) - self.offset

    @cython.ccall
    def finish(self) -> f64:
        """End it where its run time reaches its duration plus restart overhead; the end.

        Its run time is credited to the end (whole seconds, as the artifact); its clock
        (``last_check``) is left, as nothing reads it once it is done."""
        end: f64 = self.last_check + self.duration - self.progress + self.penalty
        delta: i64 = int(end - self.last_check)
        self.executed = self.executed + delta
        self.progress += delta
        self.done, self.running, self.end = True, False, end
        return end


# -- a 240-s step ----------------------------------------------------------------------------
@cython.ccall
def release(running: list, now: i64, step: i64, pending: list, before: list,
            rec: object) -> i64:
    """The lease ends: each running job that ends now ends (recorded in ``rec``); every
    other is credited its run time (marked past its estimate if it is), released to
    ``pending`` and ``before`` (``seen`` = ``step``), its planned leases cut to what its
    estimate still needs. The GPUs all of them held."""
    job: Job
    released: i64 = 0
    delta: i64
    left: i64
    end: f64
    for job in running:
        if job.due <= now:  # int(now - last_check) + progress >= duration + penalty
            end = job.finish()
            released += job.gpus
            rec.finished(job.index, end, now)
            continue
        delta = now - job.last_check
        if delta + job.executed >= job.estimate:
            job.priority, job.spans, job.overdue, job.planned = DECLINED, None, True, False
        job.executed = job.executed + delta
        job.progress += delta
        job.last_check = now
        job.running = job.on_lease = False
        job.seen = step
        released += job.gpus
        if job.priority == ACCEPTED:
            left = int(ceil((job.estimate - job.progress) / LEASE))  # noqa: RUF046 (a C double in C)
            if left < job.leases:
                if job.spans is not None:  # planned leases dropped from the front
                    _drop(job, job.spans, job.leases - left)
                job.leases = left
        pending.append(job)
        before.append(job)
    return released


@cython.ccall
def planned(jobs: list) -> list:
    """The accepted jobs that take part in lease programs and still need leases."""
    job: Job
    out: list = []
    for job in jobs:
        if job.priority == ACCEPTED and job.planned and job.leases > 0:
            out.append(job)
    return out


@cython.ccall
def columns(jobs: list, index: i64, spare: i64) -> tuple:
    """The jobs' demands from lease ``index`` as int64 arrays (width, need, horizon), with
    ``spare`` more entries (0) at the end."""
    return _columns(jobs, index, spare)[:3]


@cython.ccall
def lease_columns(jobs: list, index: i64) -> tuple:
    """:func:`columns` of the planned jobs, and the first of them whose leases no longer
    fit before its horizon (-1: none; the artifact's assertion)."""
    return _columns(jobs, index, 0)


@cython.cfunc
def _columns(jobs: list, index: i64, spare: i64) -> tuple:
    """:func:`lease_columns` with ``spare`` more entries (0) at the end."""
    n: i64 = len(jobs)
    short: i64 = -1
    width_array = np.zeros(n + spare, np.int64)
    need_array = np.zeros(n + spare, np.int64)
    horizon_array = np.zeros(n + spare, np.int64)
    width: i64[:] = width_array
    need: i64[:] = need_array
    horizon: i64[:] = horizon_array
    k: i64
    job: Job
    for k in range(n):
        job = jobs[k]
        width[k] = job.width
        need[k] = job.leases
        horizon[k] = (job.listed + job.submit) // LEASE - index
        if short < 0 and job.spans is not None and horizon[k] < need[k]:
            short = k
    return width_array, need_array, horizon_array, short


# -- plans ---------------------------------------------------------------------------------------
@cython.cfunc
def _drop(job: Job, spans: i64[:], terms: i64) -> cython.void:
    """Drop the first ``terms`` leases of the job's plan (all of them, if it has fewer)."""
    while terms > 0 and job.span_at < job.span_end:
        if spans[2 * job.span_at + 1] - spans[2 * job.span_at] <= terms:
            terms -= spans[2 * job.span_at + 1] - spans[2 * job.span_at]
            job.span_at += 1
        else:
            spans[2 * job.span_at] += terms
            terms = 0


@cython.cfunc
def _advance(job: Job, spans: i64[:]) -> cython.bint:
    """Move the job's plan one lease later: the coming lease dropped if the plan runs in
    it, every other one a lease closer. Whether it ran in it."""
    runs: cython.bint = (job.span_at < job.span_end
                         and spans[2 * job.span_at] - job.offset == 0)
    if runs:
        _drop(job, spans, 1)
    job.offset += 1
    return runs


@cython.ccall
def install(jobs: list, spans: object, at: i64[:], count: i64[:]) -> cython.void:
    """Job ``k``'s plan becomes the spans ``at[k]`` to ``at[k] + count[k]`` of ``spans``
    (its terms from 0, the coming lease)."""
    job: Job
    k: i64
    for k in range(len(jobs)):
        job = jobs[k]
        job.spans, job.span_at, job.span_end, job.offset = spans, at[k], at[k] + count[k], 0


@cython.ccall
def take_next_lease(jobs: list, spans: object, at: i64[:], count: i64[:]) -> list:
    """The plans become the jobs' (as :func:`install`); the jobs whose plan runs in the
    coming lease, and every plan moved one lease later (as :meth:`.leases.Flat.advance`)."""
    chosen: list = []
    view: i64[:] = spans
    job: Job
    install(jobs, spans, at, count)
    for job in jobs:
        if _advance(job, view):
            chosen.append(job)
    return chosen


@cython.ccall
def advance(job: Job) -> cython.bint:
    """:func:`_advance` for one job with a plan (the fallback's path)."""
    return _advance(job, job.spans)


@cython.ccall
def declined(pending: list, running: list) -> i64:
    """How many of the jobs were turned down."""
    job: Job
    count: i64 = 0
    for job in pending:
        count += job.priority == DECLINED
    for job in running:
        count += job.priority == DECLINED
    return count


@cython.ccall
def rank(pending: list, now: i64) -> cython.void:
    """Read each waiting job's clock now, mark the late, and set its urgency (the spare
    GPUs' order: least remaining GPU-time first for the turned-down, least slack for others)."""
    job: Job
    for job in pending:
        job.last_check = now
        if (job.submit + job.deadline < now + job.duration - job.progress
                and job.priority != LATE):
            job.priority = LATE
        if job.priority == DECLINED:
            job.urgency = -(job.estimate - job.progress) * job.gpus
        else:
            job.urgency = -(job.submit + job.deadline - now - job.estimate
                            + job.progress) * job.gpus


#: the room :func:`queue` sorts in (a queue is sorted every 240-s step, ~20,000 times a
#: replay, one at a time)
QUEUED = mergesort.Positions()


@cython.final
@cython.cclass
class Queue(mergesort.Ranking):
    """The waiting jobs (``jobs``, by position) in the queue's order, the larger key first:
    (priority, urgency, submission: the latest first), or with ``spare`` the spare GPUs'
    (past the estimate first, then priority, urgency, seniority: the earliest submitted
    first), compared field by field as Python compares the tuples (no urgency is NaN)."""

    jobs: list
    spare: cython.bint

    @cython.wraparound(False)  # no index is negative
    @cython.cfunc
    @cython.exceptval(check=False)
    def before(self, i: i64, k: i64) -> cython.bint:
        a: Job = self.jobs[i]
        b: Job = self.jobs[k]
        if self.spare and a.overdue != b.overdue:
            return a.overdue > b.overdue
        if a.priority != b.priority:
            return a.priority > b.priority
        if a.urgency != b.urgency:
            return a.urgency > b.urgency
        if self.spare:
            return a.seniority > b.seniority
        return a.submit > b.submit


@cython.ccall
def queue(pending: list, spare: cython.bint) -> list:
    """The waiting jobs in the queue's order (``spare``: the spare GPUs', see
    :class:`Queue`), as Python's stable ``sort(key=..., reverse=True)`` leaves them:
    equal keys keep their order."""
    n: i64 = len(pending)
    k: i64
    ranking: Queue = Queue.__new__(Queue)
    ranking.jobs, ranking.spare = pending, spare
    ranked: i64[:] = mergesort.positions(QUEUED, n, ranking)
    out: list = []
    for k in range(n):
        out.append(pending[ranked[k]])
    return out


@cython.ccall
def planned_room(jobs: list, index: i64, size: i64) -> tuple:
    """The accepted jobs that still need leases and have no plan, and the GPUs the planned
    ones leave per lease from lease ``index`` (as long as the latest horizon among them;
    a plan's term ``t < 0`` counts at ``t + longest``, as numpy indexes)."""
    taking: list = planned(jobs)
    job: Job
    longest: i64 = 0
    k: i64
    for k in range(len(taking)):  # the latest horizon (0 for none)
        job = taking[k]
        if k == 0 or (job.listed + job.submit) // LEASE - index > longest:
            longest = (job.listed + job.submit) // LEASE - index
    change: i64[:] = np.zeros(longest + 1, np.int64)  # GPUs taken from each lease on
    profile_array = np.empty(longest, np.int64)
    profile: i64[:] = profile_array
    spans: i64[:]
    unplanned: list = []
    lo: i64
    hi: i64
    taken: i64 = 0
    for job in taking:
        if job.spans is None:
            unplanned.append(job)
            continue
        spans = job.spans
        for k in range(job.span_at, job.span_end):
            lo = spans[2 * k] - job.offset
            hi = spans[2 * k + 1] - job.offset
            if lo >= hi:
                continue
            if lo < -longest or hi > longest:
                raise IndexError(f"lease {lo if lo < -longest else max(lo, longest)} is "
                                 f"outside the {longest} planned")
            if lo < 0:  # counted from the end
                change[lo + longest] += job.gpus
                change[min(hi, 0) + longest] -= job.gpus
            if hi > 0:
                change[max(lo, 0)] += job.gpus
                change[hi] -= job.gpus
    for k in range(longest):
        taken += change[k]
        profile[k] = size - taken
    return unplanned, profile_array


@cython.ccall
def pick(pending: list, free: i64) -> list:
    """The jobs without a guarantee that get spare GPUs, in queue order, while they fit."""
    job: Job
    chosen: list = []
    for job in pending:
        if job.priority != ACCEPTED and job.gpus <= free:
            free -= job.gpus
            chosen.append(job)
    return chosen


@cython.ccall
def start(chosen: list, running: list) -> i64:
    """Move the chosen jobs to ``running``, in order; the GPUs they take."""
    job: Job
    taken: i64 = 0
    for job in chosen:
        job.running = True
        taken += job.gpus
        running.append(job)
    return taken


@cython.ccall
def waiting(pending: list) -> list:
    """The jobs that are not running, in order."""
    job: Job
    out: list = []
    for job in pending:
        if not job.running:
            out.append(job)
    return out


@cython.ccall
def first_due(running: list, now: i64) -> i64:
    """The earliest step at which a running job ends (``now`` when none runs)."""
    job: Job
    first: i64 = now
    seen: cython.bint = False
    for job in running:
        if not seen or job.due < first:
            first, seen = job.due, True
    return first


# -- (re)starts ---------------------------------------------------------------------------------
@cython.cfunc
def restart(job: Job, check: i64) -> cython.void:
    """A (re)start: its overhead grows; the step its run time first reaches duration +
    penalty (crediting time moves ``last_check`` and ``progress`` together, so this stays
    put while it runs). Its clock stays where it was read (see :mod:`.chronus`)."""
    job.restarts += 1
    job.penalty = job.restarts * RESTART * job.restart_cost
    left: f64 = job.duration - job.progress + job.penalty
    whole: i64 = int(ceil(left))  # noqa: RUF046 (a C double in C)
    job.due = -(-(job.last_check + whole) // check) * check


@cython.ccall
def start_leased(chosen: list, now: i64, check: i64, step: i64, rec: object) -> cython.void:
    """The jobs a plan runs in the coming lease take it: those that did not hold GPUs at
    this step's start (re)start now; the others keep running."""
    job: Job
    for job in chosen:
        job.on_lease = True
        job.leases -= 1
        if job.seen != step:
            restart(job, check)
            rec.set_gpus(job.index, now, job.gpus)


@cython.ccall
def start_spare(chosen: list, now: i64, check: i64, step: i64, rec: object) -> cython.void:
    """The jobs put on spare GPUs (re)start, those released at this step's lease too (as in
    the artifact), though these kept their GPUs throughout.

    Only the first of those is recorded as kept (``rec.hold``: the series' point at
    ``now``); the others' GPU-seconds are credited at their next change instead. Times
    are whole seconds, so crediting ``[a, now)`` and ``[now, b)`` or ``[a, b)`` at once
    adds the same whole numbers: the same sums, and millions fewer calls."""
    job: Job
    held: cython.bint = False
    set_gpus = rec.set_gpus
    for job in chosen:
        restart(job, check)
        if job.seen != step:
            set_gpus(job.index, now, job.gpus)
        elif not held:
            rec.hold(job.index, now)
            held = True


@cython.ccall
def give_back(before: list, now: i64, rec: object) -> cython.void:
    """Record the releases of the jobs of ``before`` that do not run now."""
    job: Job
    set_gpus = rec.set_gpus
    for job in before:
        if not job.running:
            set_gpus(job.index, now, 0)


# -- a step's rounds in one call (a few calls fewer per 240-s step, ~20,000 steps a cluster) --
@cython.ccall
def finish_all(finished: list, now: i64, rec: object) -> i64:
    """End the jobs (:meth:`Job.finish`), recording each; the GPUs they held."""
    job: Job
    freed: i64 = 0
    end: f64
    for job in finished:
        end = job.finish()
        freed += job.gpus
        rec.finished(job.index, end, now)
    return freed


@cython.ccall
def take_leases(chosen: list, pending: list, running: list, now: i64, check: i64, step: i64,
                rec: object) -> tuple:
    """The jobs a plan runs in the coming lease take it (:func:`start`, then
    :func:`start_leased`): the jobs still waiting, the GPUs taken, and how many jobs are
    turned down then (:func:`declined`)."""
    taken: i64 = 0
    if chosen:
        taken = start(chosen, running)
        pending = waiting(pending)
    start_leased(chosen, now, check, step, rec)
    return pending, taken, declined(pending, running)


@cython.ccall
def spare_round(pending: list, running: list, free: i64, now: i64, check: i64, step: i64,
                before: list, rec: object) -> tuple:
    """The waiting jobs ranked and queued; those without a guarantee that fit in the
    ``free`` GPUs (re)started (:func:`pick`, :func:`start_spare`); the releases of
    ``before`` recorded (:func:`give_back`). The jobs still waiting, in queue order, and
    the GPUs taken."""
    chosen: list
    taken: i64 = 0
    rank(pending, now)
    # the queue's order, then (stably) the spare GPUs': jobs tied on the latter are tied
    # on the former too, so sorting by the latter alone leaves the same order
    pending = queue(pending, free > 0)
    if free > 0:
        chosen = pick(pending, free)
        if chosen:
            taken = start(chosen, running)
            pending = waiting(pending)
        start_spare(chosen, now, check, step, rec)
    give_back(before, now, rec)
    return pending, taken
