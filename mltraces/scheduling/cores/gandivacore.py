"""The compiled round loop of the Gandiva replay (see :mod:`.gandiva` for the policy).

Why compiled. On the large ITP clusters almost every round re-deals a size's
jobs over its node sets (it changes the sets in 99 % of rounds on cluster05),
so no round can be skipped, and a round is a few dozen list operations per
node set: about 12 µs interpreted, a fraction of that as machine code. The
source is Cython's pure Python mode (see :mod:`.native`): compiled when
mltraces is installed, the same file runs as Python otherwise.

Layout. Node sets are ids from a pool (one per node at most: a set holds at
least one node). Size class ``k`` (an index into the set sizes) lists its sets
in the reference's order in ``order[k, :nsets[k]]``; a set has a ``load`` (the
reference's count of jobs it took since it was last emptied or re-dealt) and
its jobs as a doubly linked list through ``nxt``/``prv`` (a job sits in one set
at a time) with ``head``, ``tail`` and ``count``. Scalars that helpers change
live in ``state`` (free nodes, nodes held for sets that were never built).
Which nodes a set holds never matters, only how many. The arrays the steps of
a round share travel in small classes that compiled code reads in place: the
node sets (:class:`Sets`, with their job lists :class:`Links`), what the replay
reads of the jobs (:class:`Jobs`), their progress (:class:`Progress`), who runs
(:class:`Roster`) and a round's scratch (:class:`Scratch`).

Events are the arrivals only, grouped by time as ``(etime, eptr, ejobs)``
(jobs in index order within a time): the queue is the groups from ``first``
on, and its head is groups ``first … head_end - 1`` merged into one event at
``head_time`` (what the reference's slot merging does).

Every arithmetic step is the one the earlier interpreted replay took, in the
same order, so per-job times and GPU-seconds are bit-identical to it (and, on
every trace the artifact runs here, to the artifact's).
"""

from __future__ import annotations

import math

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

if cython.compiled:
    from cython.cimports.libc.math import ceil, floor
else:
    from math import ceil, floor

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)
u8 = cython.typedef(cython.uchar)  # numpy's bool arrays

INF = cython.declare(f64, math.inf)

# slots of ``state``: free nodes, nodes held for sets never built, unused set ids, running
# jobs, jobs placed after waiting
FREE = cython.declare(i64, 0)
PHANTOM = cython.declare(i64, 1)
SPARE = cython.declare(i64, 2)
RUNNING = cython.declare(i64, 3)
WAITED = cython.declare(i64, 4)
#: build the empty sets a rebalance opens instead of only holding their nodes (the tests
#: switch this on, in plain Python, to check that the shortcut changes nothing)
BUILD_EMPTY_SETS = False


@cython.cclass
class Links:
    """The node sets' loads and job lists: ``load``, ``head``, ``tail``, ``count`` per set,
    ``nxt``/``prv`` per job."""

    load: i64[:]
    head: i64[:]
    tail: i64[:]
    count: i64[:]
    nxt: i64[:]
    prv: i64[:]

    def __init__(self, load, head, tail, count, nxt, prv) -> None:
        self.load, self.head, self.tail, self.count = load, head, tail, count
        self.nxt, self.prv = nxt, prv


@cython.cclass
class Progress:
    """Per job: seconds executed, overhead still to pay, duration, finish, GPU-seconds."""

    executed: f64[:]
    overhead: f64[:]
    duration: f64[:]
    finish: f64[:]
    gpu_seconds: f64[:]

    def __init__(self, executed, overhead, duration, finish, gpu_seconds) -> None:
        self.executed, self.overhead, self.duration = executed, overhead, duration
        self.finish, self.gpu_seconds = finish, gpu_seconds


@cython.cclass
class Roster:
    """Per job: running; the jobs placed after waiting and each one's place in that list."""

    running: u8[:]
    waited: i64[:]
    waited_at: i64[:]

    def __init__(self, running, waited, waited_at) -> None:
        self.running, self.waited, self.waited_at = running, waited, waited_at


@cython.cclass
class Scratch:
    """A round's scratch: which sets emptied (per position), which jobs ended."""

    emptied: u8[:]
    ended: i64[:]

    def __init__(self, emptied, ended) -> None:
        self.emptied, self.ended = emptied, ended


@cython.cclass
class Sets:
    """The node sets of a replay: the size classes (``sizes``, nodes a set spans ``span``,
    jobs a set runs at once ``capacity``), the GPUs per node and in the cluster; per class
    its sets in the reference's order (``order[k, :nsets[k]]``) and the jobs seated in
    them (``seated``); the counters (``state``), the unused set ids (``spare``), a buffer
    of jobs (``buf``) and the sets' loads and job lists (:class:`Links`). Made for
    ``nodes`` nodes and ``jobs`` jobs, the sets all unused."""

    sizes: i64[:]
    span: i64[:]
    capacity: i64[:]
    per_node: i64
    gpus: i64
    order: i64[:, :]
    nsets: i64[:]
    seated: i64[:]
    state: i64[:]
    spare: i64[:]
    buf: i64[:]
    links: Links

    def __init__(self, sizes, span, capacity, nodes, per_node, gpus, jobs) -> None:
        pool = max(nodes, 1)
        self.sizes, self.span, self.capacity = sizes, span, capacity
        self.per_node, self.gpus = per_node, gpus
        self.order = np.empty((sizes.shape[0], pool), np.int64)
        self.nsets = np.zeros(sizes.shape[0], np.int64)
        self.seated = np.zeros(sizes.shape[0], np.int64)
        state = np.zeros(5, np.int64)
        state[FREE] = nodes
        state[SPARE] = pool
        self.state = state
        self.spare = np.arange(pool - 1, -1, -1).astype(np.int64)
        self.buf = np.empty(jobs, np.int64)
        self.links = Links(np.zeros(pool, np.int64), np.full(pool, -1, np.int64),
                           np.full(pool, -1, np.int64), np.zeros(pool, np.int64),
                           np.full(jobs, -1, np.int64), np.full(jobs, -1, np.int64))


@cython.cclass
class Jobs:
    """The jobs of a replay: each one's size class (``kind``, -1: none), run time, overhead
    on a plain and on a restart round, and ``weight`` (summed over the jobs in their turn
    each round); the arrivals grouped by time (``etime``, jobs ``ejobs[eptr[i]:eptr[i+1]]``
    in index order)."""

    kind: i64[:]
    duration: f64[:]
    plain_cost: f64[:]
    restart_cost: f64[:]
    weight: f64[:]
    etime: f64[:]
    eptr: i64[:]
    ejobs: i64[:]

    def __init__(self, kind, duration, plain_cost, restart_cost, weight, etime, eptr,
                 ejobs) -> None:
        self.kind, self.duration, self.weight = kind, duration, weight
        self.plain_cost, self.restart_cost = plain_cost, restart_cost
        self.etime, self.eptr, self.ejobs = etime, eptr, ejobs


# -- a node set's job list -----------------------------------------------------------------
@cython.ccall
@cython.inline
def push(s: i64, j: i64, head: i64[:], tail: i64[:], count: i64[:], nxt: i64[:],
         prv: i64[:]) -> cython.void:
    """Append job ``j`` to set ``s``."""
    last = tail[s]
    prv[j] = last
    nxt[j] = -1
    if last < 0:
        head[s] = j
    else:
        nxt[last] = j
    tail[s] = j
    count[s] += 1


@cython.cfunc
@cython.inline
def unlink(s: i64, j: i64, head: i64[:], tail: i64[:], count: i64[:], nxt: i64[:],
           prv: i64[:]) -> cython.void:
    """Take job ``j`` out of set ``s``, keeping the others' order."""
    before: i64 = prv[j]
    after: i64 = nxt[j]
    if before < 0:
        head[s] = after
    else:
        nxt[before] = after
    if after < 0:
        tail[s] = before
    else:
        prv[after] = before
    count[s] -= 1


@cython.cfunc
@cython.inline
def take_jobs(s: i64, head: i64[:], tail: i64[:], count: i64[:], nxt: i64[:], out: i64[:],
              m: i64) -> i64:
    """Append set ``s``'s jobs in order to ``out[m:]`` and empty the set; the new ``m``."""
    j: i64 = head[s]
    while j >= 0:
        out[m] = j
        m += 1
        j = nxt[j]
    head[s] = -1
    tail[s] = -1
    count[s] = 0
    return m


# -- the ordered sets of one size ----------------------------------------------------------
@cython.cfunc
@cython.inline
def sort_by_load(row: i64[:], n: i64, load: i64[:]) -> cython.void:
    """Stable sort of set ids ``row[:n]`` by load (the reference re-sorts after each join)."""
    i: i64
    k: i64
    s: i64
    key: i64
    for i in range(1, n):
        s = row[i]
        key = load[s]
        k = i
        while k > 0 and load[row[k - 1]] > key:
            row[k] = row[k - 1]
            k -= 1
        row[k] = s


@cython.cfunc
@cython.inline
def first_to_last(row: i64[:], n: i64) -> i64:
    """Move the first set to the end (the reference's ``pop(0)`` then ``append``)."""
    first: i64 = row[0]
    i: i64
    for i in range(n - 1):
        row[i] = row[i + 1]
    row[n - 1] = first
    return first


@cython.ccall
def deal(row: i64[:], n: i64, jobs: i64[:], m: i64, load: i64[:], head: i64[:], tail: i64[:],
         count: i64[:], nxt: i64[:], prv: i64[:]) -> cython.void:
    """Each of ``jobs[:m]`` joins the least-loaded set, the sets re-sorted after each.

    After the first job's full stable sort only the first set moves: to just
    before the first later set whose load is at least its own (a bisection).
    """
    i: i64
    t: i64
    best: i64
    key: i64
    lo: i64
    hi: i64
    mid: i64
    if m == 0:
        return
    s: i64 = row[0]
    load[s] += 1
    push(s, jobs[0], head, tail, count, nxt, prv)
    sort_by_load(row, n, load)
    for i in range(1, m):
        best = row[0]
        load[best] += 1
        push(best, jobs[i], head, tail, count, nxt, prv)
        key = load[best]
        lo, hi = 1, n
        while lo < hi:
            mid = (lo + hi) // 2
            if load[row[mid]] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo > 1:
            for t in range(lo - 1):
                row[t] = row[t + 1]
            row[lo - 1] = best


@cython.cfunc
@cython.inline
def new_set(sets: Sets) -> i64:
    """A fresh, empty set id."""
    links: Links = sets.links
    sets.state[SPARE] -= 1
    s: i64 = sets.spare[sets.state[SPARE]]
    links.load[s] = 0
    links.head[s] = -1
    links.tail[s] = -1
    links.count[s] = 0
    return s


# -- rebalancing ---------------------------------------------------------------------------
@cython.cfunc
@cython.inline
def gap_of(k: i64, total: i64, sets: Sets) -> i64:
    """GPUs size ``k`` wants minus the GPUs its sets span, towards its demand share."""
    wanted: i64 = sets.seated[k] * sets.sizes[k]
    target: i64 = int(floor(wanted / total * sets.gpus))  # noqa: RUF046 (a C double in C)
    if wanted < target:
        target = wanted
    return target - sets.nsets[k] * sets.span[k] * sets.per_node


@cython.cfunc
@cython.inline
def demand(sets: Sets) -> i64:
    """GPUs asked by the jobs seated in node sets (sizes that have sets)."""
    total: i64 = 0
    k: i64
    for k in range(sets.sizes.shape[0]):
        if sets.nsets[k]:
            total += sets.seated[k] * sets.sizes[k]
    return total


@cython.ccall
def rebalance(sets: Sets) -> cython.void:
    """Grow or shrink each size's node sets towards its share of the GPU demand.

    Most rounds change nothing: the sets are read in place here (a local typed
    memoryview costs two atomic reference counts), and only a size that changes
    takes them as locals (:func:`open_sets`, :func:`close_sets`).
    """
    k: i64
    gap: i64
    total: i64 = demand(sets)
    for k in range(sets.sizes.shape[0]):
        if sets.nsets[k] == 0 or sets.seated[k] == 0:
            continue
        gap = gap_of(k, total, sets)
        if gap > 0:
            open_sets(sets, k, gap)
        elif gap < 0 and sets.nsets[k] > 1:  # a size keeps its last set
            close_sets(sets, k, gap)


@cython.cfunc
def open_sets(sets: Sets, k: i64, gap: i64) -> cython.void:
    """Open sets for size ``k`` towards ``gap`` more GPUs, as the free nodes allow, and
    re-deal the size's jobs over all its sets."""
    links: Links = sets.links
    state: i64[:] = sets.state
    nsets: i64[:] = sets.nsets
    row: i64[:] = sets.order[k]
    span: i64 = sets.span[k]
    pos: i64
    s: i64
    count_new: i64 = -(-gap // sets.sizes[k])  # ceil(gap / size)
    opened: i64 = min(count_new, state[FREE] // span)
    state[FREE] -= opened * span
    # the reference re-deals unless the last set it tried to open was a
    # single-node one (its loop counter is reused by an inner loop)
    redeal: cython.bint = opened < count_new or span > 1
    if not redeal and not BUILD_EMPTY_SETS:
        # the sets opened then get no jobs and the round's execute drops them
        # again: instead of building them, only their nodes are held till then
        state[PHANTOM] += opened
        return
    for _ in range(opened):
        row[nsets[k]] = new_set(sets)
        nsets[k] += 1
    if not redeal:
        return
    m: i64 = 0
    for pos in range(nsets[k]):
        s = row[pos]
        if links.count[s]:
            m = take_jobs(s, links.head, links.tail, links.count, links.nxt, sets.buf, m)
            links.load[s] = 0
    deal(row, nsets[k], sets.buf, m, links.load, links.head, links.tail, links.count,
         links.nxt, links.prv)


@cython.cfunc
def close_sets(sets: Sets, k: i64, gap: i64) -> cython.void:
    """Close size ``k``'s first sets, ``-gap`` GPUs' worth (all but one at most), and
    re-deal their jobs over the sets left."""
    links: Links = sets.links
    state: i64[:] = sets.state
    nsets: i64[:] = sets.nsets
    row: i64[:] = sets.order[k]
    pos: i64
    s: i64
    drop: i64 = min(-(gap // sets.sizes[k]), nsets[k] - 1)  # ceil(-gap / size)
    m: i64 = 0
    for pos in range(drop):
        s = row[pos]
        m = take_jobs(s, links.head, links.tail, links.count, links.nxt, sets.buf, m)
        state[FREE] += sets.span[k]
        sets.spare[state[SPARE]] = s
        state[SPARE] += 1
    for pos in range(drop, nsets[k]):
        row[pos - drop] = row[pos]
    nsets[k] -= drop
    deal(row, nsets[k], sets.buf, m, links.load, links.head, links.tail, links.count,
         links.nxt, links.prv)


# -- placing a job -------------------------------------------------------------------------
@cython.ccall
def seat(j: i64, k: i64, sets: Sets) -> cython.bint:
    """Put job ``j`` in a set of its size class ``k``; False when it has to wait."""
    best: i64
    s: i64
    crowded: i64
    links: Links = sets.links
    row: i64[:] = sets.order[k]
    n: i64 = sets.nsets[k]
    if n:
        best = first_to_last(row, n)
        if links.load[best] + 1 < sets.capacity[k]:
            links.load[best] += 1
            push(best, j, links.head, links.tail, links.count, links.nxt, links.prv)
            sort_by_load(row, n, links.load)
            return True
    if sets.span[k] <= sets.state[FREE]:
        sets.state[FREE] -= sets.span[k]
        s = new_set(sets)
        row[n] = s
        sets.nsets[k] = n + 1
        links.load[s] += 1
        push(s, j, links.head, links.tail, links.count, links.nxt, links.prv)
        sort_by_load(row, n + 1, links.load)
        return True
    if n:  # over capacity: time-slice in the least-loaded set
        crowded = first_to_last(row, n)
        links.load[crowded] += 1
        push(crowded, j, links.head, links.tail, links.count, links.nxt, links.prv)
        sort_by_load(row, n, links.load)
        return True
    return False


# -- a round -------------------------------------------------------------------------------
@cython.cfunc
def execute(now: f64, step: f64, lost_of: f64[:], clear_overhead: cython.bint, sets: Sets,
            progress: Progress, roster: Roster, scratch: Scratch) -> tuple[cython.bint, i64]:
    """Credit the jobs that ran in the last ``step`` s; end the finished ones; drop empty sets.

    A job in its set's turn loses ``lost_of[j]`` seconds of the step (its
    overhead); ``clear_overhead`` zeroes its own overhead afterwards. On
    rounds at a multiple of 60 s a set's turn goes to the back of its queue.
    Returns ``(released, busy)``: whether nodes came free, and the GPUs in use. The
    sets' arrays are read in place (a local typed memoryview costs two atomic reference
    counts; this runs every round).
    """
    links: Links = sets.links
    head: i64[:] = links.head
    tail: i64[:] = links.tail
    count: i64[:] = links.count
    nxt: i64[:] = links.nxt
    prv: i64[:] = links.prv
    executed: f64[:] = progress.executed
    overhead: f64[:] = progress.overhead
    duration: f64[:] = progress.duration
    finish: f64[:] = progress.finish
    gpu_seconds: f64[:] = progress.gpu_seconds
    running: u8[:] = roster.running
    waited: i64[:] = roster.waited
    waited_at: i64[:] = roster.waited_at
    emptied: u8[:] = scratch.emptied
    ended: i64[:] = scratch.ended
    _i: i64
    k: i64
    n: i64
    pos: i64
    s: i64
    jobs_in: i64
    slots: i64
    n_ended: i64
    j: i64
    last: i64
    e: i64
    at: i64
    moved: i64
    kept: i64
    old_head: i64
    old_tail: i64
    held: f64
    lost: f64
    any_emptied: cython.bint
    row: i64[:]
    rotate: cython.bint = int(now % 60) == 0
    released: cython.bint = sets.state[PHANTOM] > 0
    sets.state[FREE] += sets.state[PHANTOM]
    sets.state[PHANTOM] = 0
    busy: i64 = 0
    for k in range(sets.sizes.shape[0]):
        n = sets.nsets[k]
        if n == 0:
            continue
        held = sets.sizes[k] * step
        row = sets.order[k]
        any_emptied = False
        for pos in range(n):
            s = row[pos]
            jobs_in = count[s]
            slots = min(sets.capacity[k], jobs_in)
            n_ended = 0
            j = head[s]
            last = -1
            for _i in range(slots):
                lost = lost_of[j]
                if step > lost:
                    executed[j] += step - lost
                gpu_seconds[j] += held
                if executed[j] >= duration[j]:
                    ended[n_ended] = j
                    n_ended += 1
                    finish[j] = now - (executed[j] - duration[j])
                if clear_overhead:
                    overhead[j] = 0.0
                last = j
                j = nxt[j]
            busy += sets.sizes[k] * slots
            if rotate and jobs_in > slots:  # the turn goes to the back of the queue
                old_head, old_tail = head[s], tail[s]
                head[s] = j
                prv[j] = -1
                nxt[old_tail] = old_head
                prv[old_head] = old_tail
                tail[s] = last
                nxt[last] = -1
            sets.seated[k] -= n_ended
            for e in range(n_ended):
                j = ended[e]
                running[j] = False
                sets.state[RUNNING] -= 1
                at = waited_at[j]
                if at >= 0:  # swap-remove from the waited list
                    sets.state[WAITED] -= 1
                    moved = waited[sets.state[WAITED]]
                    waited[at] = moved
                    waited_at[moved] = at
                    waited_at[j] = -1
                unlink(s, j, head, tail, count, nxt, prv)
            emptied[pos] = count[s] == 0
            if emptied[pos]:  # also a set that got no job back from a re-deal
                sets.state[FREE] += sets.span[k]
                any_emptied = True
        if any_emptied:
            kept = 0
            for pos in range(n):
                s = row[pos]
                if emptied[pos]:
                    sets.spare[sets.state[SPARE]] = s
                    sets.state[SPARE] += 1
                else:
                    row[kept] = s
                    kept += 1
            sets.nsets[k] = kept
            released = True
    return released, busy


@cython.cfunc
def start_job(j: i64, now: f64, kind: i64[:], sets: Sets, running: u8[:],
              start: f64[:]) -> cython.bint:
    """Seat job ``j`` and mark it running (its first start is recorded); False if it waits."""
    k: i64 = kind[j]
    if not seat(j, k, sets):
        return False
    sets.seated[k] += 1
    running[j] = True
    sets.state[RUNNING] += 1
    if start[j] != start[j]:
        start[j] = now
    return True


@cython.cfunc
def credit_quiet_rounds(gained: f64, sets: Sets, progress: Progress) -> cython.void:
    """Credit ``gained`` seconds to every job in its set's turn (see :func:`quiet_rounds`)."""
    links: Links = sets.links
    k: i64
    pos: i64
    s: i64
    j: i64
    _i: i64
    for k in range(sets.sizes.shape[0]):
        for pos in range(sets.nsets[k]):
            s = sets.order[k, pos]
            j = links.head[s]
            for _i in range(min(links.count[s], sets.capacity[k])):
                progress.executed[j] += gained
                progress.gpu_seconds[j] += sets.sizes[k] * gained
                j = links.nxt[j]


@cython.cfunc
def in_turn_weight(weight: f64[:], sets: Sets) -> f64:
    """Σ ``weight`` over the jobs in their set's turn (the artifact's jobs with a node set).
    The arrays are read in place (a local typed memoryview costs two atomic reference
    counts; this runs every round)."""
    links: Links = sets.links
    k: i64
    pos: i64
    s: i64
    j: i64
    _i: i64
    total: f64 = 0.0
    for k in range(sets.sizes.shape[0]):
        for pos in range(sets.nsets[k]):
            s = sets.order[k, pos]
            j = links.head[s]
            for _i in range(min(links.count[s], sets.capacity[k])):
                total += weight[j]
                j = links.nxt[j]
    return total


@cython.cfunc
def log_round(t: f64, value: f64, rounds: f64[:, :], n: i64) -> f64[:, :]:
    """Append (``t``, ``value``) to the round log ``rounds`` as entry ``n``; returns it, a
    larger one when it was full (amortised: it doubles)."""
    if n == rounds.shape[1]:
        grown = np.empty((2, 2 * n + 64))
        grown[:, :n] = np.asarray(rounds)[:, :n]
        rounds = grown
    rounds[0, n] = t
    rounds[1, n] = value
    return rounds


# -- the run -------------------------------------------------------------------------------
def replay(sets: Sets, jobs: Jobs, slot: f64, restart_every: i64, start: f64[:],
           finish: f64[:], gpu_seconds: f64[:]):
    """Replay the rounds; fill ``start``, ``finish``, ``gpu_seconds``; return the GPU steps.

    ``sets`` are unused (as made), ``jobs`` hold what the rounds read of the jobs
    (jobs without a size class are not in the events). Returns ``(times,
    allocated, n, rounds, m)``: the allocated-GPU step series is the first ``n``
    entries; ``rounds[:, :m]`` logs each round's time and the ``weight`` of the
    jobs in their turn after it (the artifact's cluster efficiency when
    ``weight`` is each job's speedup).
    """
    kind: i64[:] = jobs.kind
    plain_cost: f64[:] = jobs.plain_cost
    restart_cost: f64[:] = jobs.restart_cost
    etime: f64[:] = jobs.etime
    eptr: i64[:] = jobs.eptr
    ejobs: i64[:] = jobs.ejobs
    n_jobs: i64 = kind.shape[0]
    n_groups: i64 = etime.shape[0]
    executed: f64[:] = np.zeros(n_jobs)
    overhead: f64[:] = np.zeros(n_jobs)
    progress = Progress(executed, overhead, jobs.duration, finish, gpu_seconds)
    pool: i64 = sets.links.load.shape[0]
    running: u8[:] = np.zeros(n_jobs, np.bool_)
    waited: i64[:] = np.empty(n_jobs, np.int64)  # placed after waiting: overhead cleared
    waited_at: i64[:] = np.full(n_jobs, -1, np.int64)
    roster = Roster(running, waited, waited_at)
    pending: i64[:] = np.empty(n_jobs, np.int64)
    n_pending: i64 = 0
    scratch = Scratch(np.empty(pool, np.bool_), np.empty(n_jobs, np.int64))
    state: i64[:] = sets.state
    mark_time: f64[:] = np.empty(1024)
    mark_gpus: i64[:] = np.empty(1024, np.int64)
    n_marks: i64 = 0
    rounds_log: f64[:, :] = np.empty((2, 1024))
    n_rounds: i64 = 0
    last_weight: f64 = 0.0
    if n_groups == 0:
        return np.asarray(mark_time), np.asarray(mark_gpus), 0, np.asarray(rounds_log), 0

    i: i64
    j: i64
    kept: i64
    quiet: i64
    q: i64
    released: cython.bint
    busy: i64
    restart: cython.bint
    skip_next: cython.bint
    has_event: cython.bint
    n_events: i64
    t: f64
    cost: f64[:]
    lost_of: f64[:]
    first: i64 = 0
    head_end: i64 = 1
    head_time: f64 = etime[0]
    now: f64 = etime[0]
    step: f64 = 0.0
    mode: i64 = 0  # whose overhead a job loses: 0 its own, 1 a plain round's, 2 a restart's
    rounds: i64 = 0
    while first < n_groups or n_pending or state[RUNNING]:
        has_event = first < n_groups and head_time == now
        n_events = n_groups - head_end + 1 if first < n_groups else 0
        if mode and n_events <= (1 if has_event else 0):
            cost = restart_cost if mode == 2 else plain_cost
            for j in range(n_jobs):  # settle: write out what the last round priced
                if running[j]:
                    overhead[j] = cost[j]
            mode = 0
        if first >= n_groups and step:
            quiet = quiet_rounds(now, step, sets, progress)
            if quiet:
                credit_quiet_rounds(quiet * step, sets, progress)
                for q in range(quiet):  # each logs what the last round left in turn
                    rounds_log = log_round(now + q * step, last_weight, rounds_log, n_rounds)
                    n_rounds += 1
                now += quiet * step
        rebalance(sets)
        lost_of = overhead if mode == 0 else (restart_cost if mode == 2 else plain_cost)
        released, busy = execute(now, step, lost_of, mode == 0, sets, progress, roster, scratch)
        if step:
            t = now - step
            if n_marks and mark_time[n_marks - 1] == t:
                mark_gpus[n_marks - 1] = busy
            elif n_marks == 0 or mark_gpus[n_marks - 1] != busy:
                if n_marks == mark_time.shape[0]:
                    mark_time = np.concatenate((mark_time, np.empty(n_marks)))
                    mark_gpus = np.concatenate((mark_gpus, np.empty(n_marks, np.int64)))
                mark_time[n_marks] = t
                mark_gpus[n_marks] = busy
                n_marks += 1
        if mode == 0:
            for i in range(state[WAITED]):  # the reference clears these jobs' overhead
                overhead[waited[i]] = 0.0

        if has_event:
            for i in range(eptr[first], eptr[head_end]):
                j = ejobs[i]
                if not start_job(j, now, kind, sets, running, start):
                    pending[n_pending] = j
                    n_pending += 1
            first = head_end
            if first < n_groups:
                head_time = etime[first]
                head_end = first + 1
        if released:  # retry the waiting in order, skipping the one after each start
            kept = 0
            skip_next = False
            for i in range(n_pending):
                j = pending[i]
                if skip_next:
                    skip_next = False
                elif start_job(j, now, kind, sets, running, start):
                    waited[state[WAITED]] = j
                    waited_at[j] = state[WAITED]
                    state[WAITED] += 1
                    skip_next = True
                    continue
                pending[kept] = j
                kept += 1
            n_pending = kept
        last_weight = in_turn_weight(jobs.weight, sets)
        rounds_log = log_round(now, last_weight, rounds_log, n_rounds)
        n_rounds += 1

        if first >= n_groups:
            if n_pending and not state[RUNNING] and not released:
                raise RuntimeError("jobs wait with nothing running and no arrival left")
            step = slot
            now = now + slot
            continue
        restart = restart_every > 0 and rounds > 0 and rounds % restart_every == 0
        rounds += 1
        mode = 2 if restart else 1
        # merge every event due within a slot into one at now + slot (a lone one stays)
        if n_groups - head_end + 1 >= 2 and not head_time - now > slot:
            while head_end < n_groups and etime[head_end] - now <= slot:
                head_end += 1
            head_time = now + slot
        step = head_time - now
        now = head_time
    return (np.asarray(mark_time), np.asarray(mark_gpus), n_marks, np.asarray(rounds_log),
            n_rounds)


@cython.cfunc
def quiet_rounds(now: f64, step: f64, sets: Sets, progress: Progress) -> i64:
    """How many coming rounds change nothing but progress (called once arrivals are over).

    Nonzero when no node set would be resized or re-dealt, no time slice
    rotates, and the running jobs paid their overhead: then the same jobs gain
    ``step`` seconds a round until the first of them completes. The arrays are read in
    place (a local typed memoryview costs two atomic reference counts).
    """
    links: Links = sets.links
    k: i64
    pos: i64
    s: i64
    j: i64
    gap: i64
    slots: i64
    _i: i64
    need: f64
    total: i64 = demand(sets)
    for k in range(sets.sizes.shape[0]):
        if sets.nsets[k] == 0 or sets.seated[k] == 0:
            continue
        gap = gap_of(k, total, sets)
        if gap > 0 or (gap < 0 and sets.nsets[k] > 1):
            return 0
    rotate: cython.bint = int(now % 60) == 0
    rounds: f64 = INF
    for k in range(sets.sizes.shape[0]):
        for pos in range(sets.nsets[k]):
            s = sets.order[k, pos]
            slots = min(links.count[s], sets.capacity[k])
            if rotate and links.count[s] > slots:
                return 0
            j = links.head[s]
            for _i in range(slots):
                if progress.overhead[j]:
                    return 0
                need = ceil((progress.duration[j] - progress.executed[j]) / step)
                if need < rounds:
                    rounds = need
                j = links.nxt[j]
    if rounds == INF:
        return 0
    return max(int(rounds) - 1, 0)
