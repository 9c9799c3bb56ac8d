"""The compiled round loop of the Gandiva replay (see :mod:`.gandiva` for the policy).

Why compiled. On the large ITP clusters almost every round re-deals a size's
jobs over its node sets (it changes the sets in 99 % of rounds on cluster05),
so no round can be skipped, and a round is a few dozen list operations per
node set: about 12 µs interpreted, a fraction of that as machine code.

Layout. Node sets are ids from a pool (one per node at most: a set holds at
least one node). Size class ``k`` (an index into the set sizes) lists its sets
in the reference's order in ``order[k, :nsets[k]]``; a set has a ``load`` (the
reference's count of jobs it took since it was last emptied or re-dealt) and
its jobs as a doubly linked list through ``nxt``/``prv`` (a job sits in one set
at a time) with ``head``, ``tail`` and ``count``. Scalars that helpers change
live in ``state`` (free nodes, nodes held for sets that were never built).
Which nodes a set holds never matters, only how many.

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

from mltraces.scheduling.jit import in_cache, njit

# slots of ``state``: free nodes, nodes held for sets never built, unused set ids, running
# jobs, jobs placed after waiting
FREE, PHANTOM, SPARE, RUNNING, WAITED = 0, 1, 2, 3, 4
#: build the empty sets a rebalance opens instead of only holding their nodes (the tests
#: switch this on, in plain Python, to check that the shortcut changes nothing)
BUILD_EMPTY_SETS = False


# -- a node set's job list -----------------------------------------------------------------
@njit(cache=True, inline="always")
def push(s, j, head, tail, count, nxt, prv):
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


@njit(cache=True, inline="always")
def unlink(s, j, head, tail, count, nxt, prv):
    """Take job ``j`` out of set ``s``, keeping the others' order."""
    before, after = prv[j], nxt[j]
    if before < 0:
        head[s] = after
    else:
        nxt[before] = after
    if after < 0:
        tail[s] = before
    else:
        prv[after] = before
    count[s] -= 1


@njit(cache=True, inline="always")
def take_jobs(s, head, tail, count, nxt, out, m):
    """Append set ``s``'s jobs in order to ``out[m:]`` and empty the set; the new ``m``."""
    j = head[s]
    while j >= 0:
        out[m] = j
        m += 1
        j = nxt[j]
    head[s] = -1
    tail[s] = -1
    count[s] = 0
    return m


# -- the ordered sets of one size ----------------------------------------------------------
@njit(cache=True, inline="always")
def sort_by_load(row, n, load):
    """Stable sort of set ids ``row[:n]`` by load (the reference re-sorts after each join)."""
    for i in range(1, n):
        s = row[i]
        key = load[s]
        k = i
        while k > 0 and load[row[k - 1]] > key:
            row[k] = row[k - 1]
            k -= 1
        row[k] = s


@njit(cache=True, inline="always")
def first_to_last(row, n):
    """Move the first set to the end (the reference's ``pop(0)`` then ``append``)."""
    first = row[0]
    for i in range(n - 1):
        row[i] = row[i + 1]
    row[n - 1] = first
    return first


@njit(cache=True)
def deal(row, n, jobs, m, load, head, tail, count, nxt, prv):
    """Each of ``jobs[:m]`` joins the least-loaded set, the sets re-sorted after each.

    After the first job's full stable sort only the first set moves: to just
    before the first later set whose load is at least its own (a bisection).
    """
    if m == 0:
        return
    s = row[0]
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


@njit(cache=True, inline="always")
def new_set(k, spare, state, load, head, tail, count):
    """A fresh, empty set id for size class ``k``."""
    state[SPARE] -= 1
    s = spare[state[SPARE]]
    load[s] = 0
    head[s] = -1
    tail[s] = -1
    count[s] = 0
    return s


# -- rebalancing ---------------------------------------------------------------------------
@njit(cache=True, inline="always")
def gap_of(k, total, sizes, seated, nsets, span, per_node, gpus):
    """GPUs size ``k`` wants minus the GPUs its sets span, towards its demand share."""
    wanted = seated[k] * sizes[k]
    target = math.floor(wanted / total * gpus)
    if wanted < target:
        target = wanted
    return target - nsets[k] * span[k] * per_node


@njit(cache=True, inline="always")
def demand(sizes, seated, nsets):
    """GPUs asked by the jobs seated in node sets (sizes that have sets)."""
    total = 0
    for k in range(len(sizes)):
        if nsets[k]:
            total += seated[k] * sizes[k]
    return total


@njit(cache=True)
def rebalance(sizes, seated, nsets, order, span, per_node, gpus, state, spare, buf,
              load, head, tail, count, nxt, prv):
    """Grow or shrink each size's node sets towards its share of the GPU demand."""
    total = demand(sizes, seated, nsets)
    for k in range(len(sizes)):
        if nsets[k] == 0 or seated[k] == 0:
            continue
        gap = gap_of(k, total, sizes, seated, nsets, span, per_node, gpus)
        size = sizes[k]
        row = order[k]
        if gap > 0:
            count_new = -(-gap // size)  # ceil(gap / size)
            opened = min(count_new, state[FREE] // span[k])
            state[FREE] -= opened * span[k]
            # the reference re-deals unless the last set it tried to open was a
            # single-node one (its loop counter is reused by an inner loop)
            redeal = opened < count_new or span[k] > 1
            if not redeal and not BUILD_EMPTY_SETS:
                # the sets opened then get no jobs and the round's execute drops them
                # again: instead of building them, only their nodes are held till then
                state[PHANTOM] += opened
                continue
            for _ in range(opened):
                row[nsets[k]] = new_set(k, spare, state, load, head, tail, count)
                nsets[k] += 1
            if not redeal:
                continue
            m = 0
            for pos in range(nsets[k]):
                s = row[pos]
                if count[s]:
                    m = take_jobs(s, head, tail, count, nxt, buf, m)
                    load[s] = 0
            deal(row, nsets[k], buf, m, load, head, tail, count, nxt, prv)
        elif gap < 0 and nsets[k] > 1:  # a size keeps its last set
            drop = min(-(gap // size), nsets[k] - 1)  # ceil(-gap / size)
            m = 0
            for pos in range(drop):
                s = row[pos]
                m = take_jobs(s, head, tail, count, nxt, buf, m)
                state[FREE] += span[k]
                spare[state[SPARE]] = s
                state[SPARE] += 1
            for pos in range(drop, nsets[k]):
                row[pos - drop] = row[pos]
            nsets[k] -= drop
            deal(row, nsets[k], buf, m, load, head, tail, count, nxt, prv)


# -- placing a job -------------------------------------------------------------------------
@njit(cache=True)
def seat(j, k, order, nsets, span, capacity, state, spare, load, head, tail, count, nxt, prv):
    """Put job ``j`` in a set of its size class ``k``; False when it has to wait."""
    row = order[k]
    n = nsets[k]
    if n:
        best = first_to_last(row, n)
        if load[best] + 1 < capacity[k]:
            load[best] += 1
            push(best, j, head, tail, count, nxt, prv)
            sort_by_load(row, n, load)
            return True
    if span[k] <= state[FREE]:
        state[FREE] -= span[k]
        s = new_set(k, spare, state, load, head, tail, count)
        row[n] = s
        nsets[k] = n + 1
        load[s] += 1
        push(s, j, head, tail, count, nxt, prv)
        sort_by_load(row, n + 1, load)
        return True
    if n:  # over capacity: time-slice in the least-loaded set
        crowded = first_to_last(row, n)
        load[crowded] += 1
        push(crowded, j, head, tail, count, nxt, prv)
        sort_by_load(row, n, load)
        return True
    return False


# -- a round -------------------------------------------------------------------------------
@njit(cache=True)
def execute(now, step, lost_of, clear_overhead, sizes, order, nsets, span, capacity, seated,
            state, spare, links, progress, roster, scratch):
    """Credit the jobs that ran in the last ``step`` s; end the finished ones; drop empty sets.

    A job in its set's turn loses ``lost_of[j]`` seconds of the step (its
    overhead); ``clear_overhead`` zeroes its own overhead afterwards. On
    rounds at a multiple of 60 s a set's turn goes to the back of its queue.
    Returns ``(released, busy)``: whether nodes came free, and the GPUs in use.
    """
    _, head, tail, count, nxt, prv = links
    executed, overhead, duration, finish, gpu_seconds = progress
    running, waited, waited_at = roster
    emptied, ended = scratch
    rotate = int(now % 60) == 0
    released = state[PHANTOM] > 0
    state[FREE] += state[PHANTOM]
    state[PHANTOM] = 0
    busy = 0
    for k in range(len(sizes)):
        n = nsets[k]
        if n == 0:
            continue
        held = sizes[k] * step
        row = order[k]
        any_emptied = False
        for pos in range(n):
            s = row[pos]
            jobs_in = count[s]
            slots = min(capacity[k], jobs_in)
            n_ended = 0
            j = head[s]
            last = -1
            for _ in range(slots):
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
            busy += sizes[k] * slots
            if rotate and jobs_in > slots:  # the turn goes to the back of the queue
                old_head, old_tail = head[s], tail[s]
                head[s] = j
                prv[j] = -1
                nxt[old_tail] = old_head
                prv[old_head] = old_tail
                tail[s] = last
                nxt[last] = -1
            seated[k] -= n_ended
            for e in range(n_ended):
                j = ended[e]
                running[j] = False
                state[RUNNING] -= 1
                at = waited_at[j]
                if at >= 0:  # swap-remove from the waited list
                    state[WAITED] -= 1
                    moved = waited[state[WAITED]]
                    waited[at] = moved
                    waited_at[moved] = at
                    waited_at[j] = -1
                unlink(s, j, head, tail, count, nxt, prv)
            emptied[pos] = count[s] == 0
            if emptied[pos]:  # also a set that got no job back from a re-deal
                state[FREE] += span[k]
                any_emptied = True
        if any_emptied:
            kept = 0
            for pos in range(n):
                s = row[pos]
                if emptied[pos]:
                    spare[state[SPARE]] = s
                    state[SPARE] += 1
                else:
                    row[kept] = s
                    kept += 1
            nsets[k] = kept
            released = True
    return released, busy


@njit(cache=True)
def start_job(j, now, kind, order, nsets, span, capacity, seated, state, spare, links,
              running, start):
    """Seat job ``j`` and mark it running (its first start is recorded); False if it waits."""
    load, head, tail, count, nxt, prv = links
    k = kind[j]
    if not seat(j, k, order, nsets, span, capacity, state, spare, load, head, tail, count,
                nxt, prv):
        return False
    seated[k] += 1
    running[j] = True
    state[RUNNING] += 1
    if start[j] != start[j]:
        start[j] = now
    return True


@njit(cache=True)
def credit_quiet_rounds(gained, sizes, order, nsets, capacity, head, count, nxt, executed,
                        gpu_seconds):
    """Credit ``gained`` seconds to every job in its set's turn (see :func:`quiet_rounds`)."""
    for k in range(len(sizes)):
        for pos in range(nsets[k]):
            s = order[k, pos]
            j = head[s]
            for _ in range(min(count[s], capacity[k])):
                executed[j] += gained
                gpu_seconds[j] += sizes[k] * gained
                j = nxt[j]


@njit(cache=True)
def in_turn_weight(weight, sizes, order, nsets, capacity, head, count, nxt):
    """Σ ``weight`` over the jobs in their set's turn (the artifact's jobs with a node set)."""
    total = 0.0
    for k in range(len(sizes)):
        for pos in range(nsets[k]):
            s = order[k, pos]
            j = head[s]
            for _ in range(min(count[s], capacity[k])):
                total += weight[j]
                j = nxt[j]
    return total


@njit(cache=True)
def log_round(t, value, rounds, n):
    """Append (``t``, ``value``) to the round log ``rounds``; returns it (grown if full)."""
    if n == rounds.shape[1]:
        grown = np.empty((2, 2 * n + 64))
        grown[:, :n] = rounds
        rounds = grown
    rounds[0, n] = t
    rounds[1, n] = value
    return rounds


# -- the run -------------------------------------------------------------------------------
@njit(cache=True)
def replay(kind, sizes, span, capacity, duration, plain_cost, restart_cost,
           etime, eptr, ejobs, nodes, per_node, gpus, slot, restart_every,
           start, finish, gpu_seconds, weight):
    """Replay the rounds; fill ``start``, ``finish``, ``gpu_seconds``; return the GPU steps.

    ``kind[j]`` is job ``j``'s size class (jobs without one are not in the
    events). Returns ``(times, allocated, n, rounds, m)``: the allocated-GPU
    step series is the first ``n`` entries; ``rounds[:, :m]`` logs each
    round's time and the ``weight`` of the jobs in their turn after it (the
    artifact's cluster efficiency when ``weight`` is each job's speedup).
    """
    n_jobs = len(kind)
    n_sizes = len(sizes)
    n_groups = len(etime)
    executed = np.zeros(n_jobs)
    overhead = np.zeros(n_jobs)
    progress = (executed, overhead, duration, finish, gpu_seconds)
    pool = max(nodes, 1)
    load = np.zeros(pool, np.int64)
    head = np.full(pool, -1, np.int64)
    tail = np.full(pool, -1, np.int64)
    count = np.zeros(pool, np.int64)
    nxt = np.full(n_jobs, -1, np.int64)
    prv = np.full(n_jobs, -1, np.int64)
    links = (load, head, tail, count, nxt, prv)
    running = np.zeros(n_jobs, np.bool_)
    waited = np.empty(n_jobs, np.int64)  # placed after waiting: overhead cleared per round
    waited_at = np.full(n_jobs, -1, np.int64)
    roster = (running, waited, waited_at)
    pending = np.empty(n_jobs, np.int64)
    n_pending = 0
    buf = np.empty(n_jobs, np.int64)
    scratch = (np.empty(pool, np.bool_), np.empty(n_jobs, np.int64))
    spare = np.arange(pool - 1, -1, -1).astype(np.int64)
    order = np.empty((n_sizes, pool), np.int64)
    nsets = np.zeros(n_sizes, np.int64)
    seated = np.zeros(n_sizes, np.int64)
    state = np.zeros(5, np.int64)
    state[FREE] = nodes
    state[SPARE] = pool
    mark_time = np.empty(1024)
    mark_gpus = np.empty(1024, np.int64)
    n_marks = 0
    rounds_log = np.empty((2, 1024))
    n_rounds = 0
    last_weight = 0.0
    if n_groups == 0:
        return mark_time, mark_gpus, 0, rounds_log, 0

    first, head_end, head_time = 0, 1, etime[0]
    now, step = etime[0], 0.0
    mode = 0  # whose overhead a job loses: 0 its own, 1 a plain round's, 2 a restart's
    rounds = 0
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
            quiet = quiet_rounds(now, step, sizes, seated, nsets, order, span, capacity,
                                 per_node, gpus, head, count, nxt, overhead, duration, executed)
            if quiet:
                credit_quiet_rounds(quiet * step, sizes, order, nsets, capacity, head, count,
                                    nxt, executed, gpu_seconds)
                for q in range(quiet):  # each logs what the last round left in turn
                    rounds_log = log_round(now + q * step, last_weight, rounds_log, n_rounds)
                    n_rounds += 1
                now += quiet * step
        rebalance(sizes, seated, nsets, order, span, per_node, gpus, state, spare, buf,
                  load, head, tail, count, nxt, prv)
        lost_of = overhead if mode == 0 else (restart_cost if mode == 2 else plain_cost)
        released, busy = execute(now, step, lost_of, mode == 0, sizes, order, nsets, span,
                                 capacity, seated, state, spare, links, progress, roster,
                                 scratch)
        if step:
            t = now - step
            if n_marks and mark_time[n_marks - 1] == t:
                mark_gpus[n_marks - 1] = busy
            elif n_marks == 0 or mark_gpus[n_marks - 1] != busy:
                if n_marks == len(mark_time):
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
                if not start_job(j, now, kind, order, nsets, span, capacity, seated, state,
                                 spare, links, running, start):
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
                elif start_job(j, now, kind, order, nsets, span, capacity, seated, state,
                               spare, links, running, start):
                    waited[state[WAITED]] = j
                    waited_at[j] = state[WAITED]
                    state[WAITED] += 1
                    skip_next = True
                    continue
                pending[kept] = j
                kept += 1
            n_pending = kept
        last_weight = in_turn_weight(weight, sizes, order, nsets, capacity, head, count, nxt)
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
    return mark_time, mark_gpus, n_marks, rounds_log, n_rounds


@njit(cache=True)
def quiet_rounds(now, step, sizes, seated, nsets, order, span, capacity, per_node, gpus,
                 head, count, nxt, overhead, duration, executed):
    """How many coming rounds change nothing but progress (called once arrivals are over).

    Nonzero when no node set would be resized or re-dealt, no time slice
    rotates, and the running jobs paid their overhead: then the same jobs gain
    ``step`` seconds a round until the first of them completes.
    """
    total = demand(sizes, seated, nsets)
    for k in range(len(sizes)):
        if nsets[k] == 0 or seated[k] == 0:
            continue
        gap = gap_of(k, total, sizes, seated, nsets, span, per_node, gpus)
        if gap > 0 or (gap < 0 and nsets[k] > 1):
            return 0
    rotate = int(now % 60) == 0
    rounds = math.inf
    for k in range(len(sizes)):
        for pos in range(nsets[k]):
            s = order[k, pos]
            slots = min(count[s], capacity[k])
            if rotate and count[s] > slots:
                return 0
            j = head[s]
            for _ in range(slots):
                if overhead[j]:
                    return 0
                need = np.ceil((duration[j] - executed[j]) / step)
                if need < rounds:
                    rounds = need
                j = nxt[j]
    if rounds == math.inf:
        return 0
    return max(int(rounds) - 1, 0)


def compiled() -> bool:
    """Whether numba's cache already holds the round loop (else the next replay compiles
    it first, a few seconds once per installation)."""
    return in_cache(replay)
