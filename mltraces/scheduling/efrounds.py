"""The compiled round loop of the ElasticFlow replay (the planner is :mod:`.efcore`).

Why compiled. Once the planner was machine code, the interpreted rounds
around it (moving each job's end event three times a round, laying jobs on
nodes, building arrays for the planner) were a third of a replay.

What it mirrors, step by step, so per-job outcomes are bit-identical:

* The event list of :mod:`.events` (:class:`.events.EventQueue`): events
  keyed by time with the jobs arriving and ending then; ``merge_slot`` folds
  every event within a slot into one, and a job's end may then sit in two
  events, as in the reference.
* Where jobs sit on nodes, for the one thing placement changes in
  simulation, the restart overhead: a job whose exact GPU set (first global
  rank, count) was used since the last periodic restart restarts from a
  cached communicator and pays only the base overhead. Each round, jobs are
  laid out largest first the artifact's "elastic" way: nodes are grouped,
  each group filed under the largest size class that divides its free GPUs;
  a job goes to a group of its size, else fills a group of a larger size,
  else opens a group on the lowest-numbered free nodes.
* The :class:`.results.Recorder`'s bookkeeping and the policy's round.

Layout. Events: negated times ``et[:ne]`` sorted ascending (so the first
event is the last entry, and the list changes near its end, where shifting
is cheap: early in a large trace thousands of arrivals lie ahead), with ids
``eid``; an event's
arriving and ending jobs are linked lists of pool nodes (``nj`` job, ``nn``
next) from ``sh``/``st`` and ``dh``/``dt``. Node groups: ids with first
node, node count, capacity, used GPUs, filing size and jobs. Job lists
(runnable, pending) are arrays whose lengths sit in ``S``, with the other
scalars that helpers change. Workspaces grow before a round could outgrow
them (numba does not check bounds).
"""

from __future__ import annotations

import math

import numpy as np

from mltraces.scheduling import efcore
from mltraces.scheduling.jit import borrowed, in_cache, keep_alive, njit

INF = math.inf
PENDING, RUNNING, DONE, DECLINED = 1, 2, 3, 4
# slots of S: live events, free event ids, free list nodes, running jobs, runnable jobs,
# pending jobs, GPU-series points, GPUs held in total, logged rounds
NE, EFREE, NFREE, NRUN, NRUNNABLE, NPEND, NMARK, HELD, NROUND = 0, 1, 2, 3, 4, 5, 6, 7, 8
#: placement size classes, the reference's, largest first
SIZES_DESC = np.array([256, 128, 88, 72, 64, 56, 48, 40, 32, 24, 16, 12, 8, 4, 2, 1], np.int64)


# -- the event list ------------------------------------------------------------------------
@njit(cache=True, inline="always")
def find_event(et, ne, time):
    """Position of the event at ``time``, or -1 (``et`` holds negated times, see above)."""
    k = efcore.bisect_left(et, ne, -time)
    if k < ne and et[k] == -time:
        return k
    return -1


@njit(cache=True, inline="always")
def first_time(ev, S):
    """The time of the first event (the last entry: times are stored negated)."""
    return -ev[0][S[NE] - 1]


@njit(cache=True)
def event_at(time, ev, S):
    """The id of the event at ``time``, created empty if there is none."""
    et, eid, sh, st, dh, dt, efree = ev[0], ev[1], ev[2], ev[3], ev[4], ev[5], ev[6]
    ne = S[NE]
    k = efcore.bisect_left(et, ne, -time)
    if k < ne and et[k] == -time:
        return eid[k]
    for i in range(ne, k, -1):
        et[i] = et[i - 1]
        eid[i] = eid[i - 1]
    S[EFREE] -= 1
    e = efree[S[EFREE]]
    sh[e] = -1
    st[e] = -1
    dh[e] = -1
    dt[e] = -1
    et[k] = -time
    eid[k] = e
    S[NE] = ne + 1
    return e


@njit(cache=True, inline="always")
def drop_event(k, ev, S):
    """Delete the event at position ``k`` (its lists must be empty or already taken)."""
    et, eid, efree = ev[0], ev[1], ev[6]
    ne = S[NE]
    efree[S[EFREE]] = eid[k]
    S[EFREE] += 1
    for i in range(k, ne - 1):
        et[i] = et[i + 1]
        eid[i] = eid[i + 1]
    S[NE] = ne - 1


@njit(cache=True)
def add_end(job, time, ev, nodes, S):
    """Job ``job`` ends at ``time`` (once per event)."""
    dh, dt = ev[4], ev[5]
    nj, nn, nfree = nodes
    e = event_at(time, ev, S)
    x = dh[e]
    while x >= 0:
        if nj[x] == job:
            return
        x = nn[x]
    S[NFREE] -= 1
    x = nfree[S[NFREE]]
    nj[x] = job
    nn[x] = -1
    if dt[e] < 0:
        dh[e] = x
    else:
        nn[dt[e]] = x
    dt[e] = x


@njit(cache=True)
def move_end(job, old, new, ev, nodes, S):
    """Re-plan a job's end; an event left without jobs at ``old`` disappears."""
    if old == new:
        return
    et, sh, dh, dt = ev[0], ev[2], ev[4], ev[5]
    nj, nn, nfree = nodes
    k = find_event(et, S[NE], old)
    if k >= 0:
        e = ev[1][k]
        prev = -1
        x = dh[e]
        while x >= 0:
            if nj[x] == job:
                after = nn[x]
                if prev < 0:
                    dh[e] = after
                else:
                    nn[prev] = after
                if dt[e] == x:
                    dt[e] = prev
                nfree[S[NFREE]] = x
                S[NFREE] += 1
                break
            prev = x
            x = nn[x]
        if sh[e] < 0 and dh[e] < 0:
            drop_event(k, ev, S)
    add_end(job, new, ev, nodes, S)


@njit(cache=True)
def take_event(k, ev, nodes, S, starts, ends):
    """Remove the event at position ``k``; its jobs go to ``starts``/``ends``. Returns counts."""
    sh, dh = ev[2], ev[4]
    nj, nn, nfree = nodes
    e = ev[1][k]
    ns = 0
    x = sh[e]
    while x >= 0:
        starts[ns] = nj[x]
        ns += 1
        nfree[S[NFREE]] = x
        S[NFREE] += 1
        x = nn[x]
    nd = 0
    x = dh[e]
    while x >= 0:
        if nd == ends.shape[0]:
            raise RuntimeError("an event ends more jobs than its buffer holds")
        ends[nd] = nj[x]
        nd += 1
        nfree[S[NFREE]] = x
        S[NFREE] += 1
        x = nn[x]
    drop_event(k, ev, S)
    return ns, nd


@njit(cache=True)
def merge_slot(now, slot, ev, nodes, S):
    """Fold every event due within ``slot`` of ``now`` into one at ``now + slot``.

    A lone remaining event is left where it is.
    """
    et, eid, sh, st, dh, dt, efree = ev[0], ev[1], ev[2], ev[3], ev[4], ev[5], ev[6]
    nn = nodes[1]
    if S[NE] < 2 or first_time(ev, S) - now > slot:
        return
    first = eid[S[NE] - 1]
    while S[NE] > 1 and -et[S[NE] - 2] - now <= slot:
        later = eid[S[NE] - 2]
        if sh[later] >= 0:
            if st[first] < 0:
                sh[first] = sh[later]
            else:
                nn[st[first]] = sh[later]
            st[first] = st[later]
        if dh[later] >= 0:
            if dt[first] < 0:
                dh[first] = dh[later]
            else:
                nn[dt[first]] = dh[later]
            dt[first] = dt[later]
        efree[S[EFREE]] = later
        S[EFREE] += 1
        et[S[NE] - 2] = et[S[NE] - 1]
        eid[S[NE] - 2] = first
        S[NE] -= 1
    et[S[NE] - 1] = -(now + slot)


@njit(cache=True)
def grown_events(ev, S, need):
    """The event arrays with room for ``need`` more events (ids keep their meaning)."""
    cap = ev[0].shape[0]
    size = 2 * cap + need
    et, eid, efree = np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64)
    sh, st = np.empty(size, np.int64), np.empty(size, np.int64)
    dh, dt = np.empty(size, np.int64), np.empty(size, np.int64)
    for i in range(cap):
        et[i] = ev[0][i]
        eid[i] = ev[1][i]
        sh[i] = ev[2][i]
        st[i] = ev[3][i]
        dh[i] = ev[4][i]
        dt[i] = ev[5][i]
    free = S[EFREE]
    for i in range(free):
        efree[i] = ev[6][i]
    for i in range(size - cap):
        efree[free + i] = cap + i
    S[EFREE] = free + size - cap
    return et, eid, sh, st, dh, dt, efree


@njit(cache=True)
def grown_nodes(nodes, S, need):
    """The list-node pool with room for ``need`` more nodes."""
    cap = nodes[0].shape[0]
    size = 2 * cap + need
    out = (np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64))
    out[0][:cap] = nodes[0]
    out[1][:cap] = nodes[1]
    free = S[NFREE]
    out[2][:free] = nodes[2][:free]
    for i in range(size - cap):
        out[2][free + i] = cap + i
    S[NFREE] = free + size - cap
    return out


# -- the recorder --------------------------------------------------------------------------
@njit(cache=True)
def set_gpus(j, now, g, rec, marks, S):
    """The job holds ``g`` GPUs from ``now`` on (what :meth:`Recorder.set_gpus` does)."""
    start, gpu_seconds, held, since = rec[0], rec[2], rec[5], rec[6]
    times, allocated = marks
    old = held[j]
    if g == old:
        return
    if old:
        gpu_seconds[j] += old * (now - since[j])
    elif g and start[j] != start[j]:
        start[j] = now
    held[j] = g
    since[j] = now
    S[HELD] += g - old
    m = S[NMARK]
    if m and times[m - 1] == now:
        allocated[m - 1] = S[HELD]
    else:
        times[m] = now
        allocated[m] = S[HELD]
        S[NMARK] = m + 1


# -- job lists -----------------------------------------------------------------------------
@njit(cache=True, inline="always")
def remove_from(a, S, slot, j):
    """Delete the first ``j`` from ``a[:S[slot]]``, keeping the order."""
    n = S[slot]
    for i in range(n):
        if a[i] == j:
            for k in range(i, n - 1):
                a[k] = a[k + 1]
            S[slot] = n - 1
            return
    raise ValueError("list.remove(x): x not in list")


@njit(cache=True)
def by_deadline(jobs, n, deadline):
    """``jobs[:n]`` stably sorted by deadline (what ``sorted(key=deadline)`` gives)."""
    head = jobs[:n]
    return head[np.argsort(deadline[head], kind="mergesort")]


# -- placement -----------------------------------------------------------------------------
@njit(cache=True, inline="always")
def filing(free):
    """The size class a group with ``free`` free GPUs is filed under (0: full)."""
    for size in SIZES_DESC:
        if size <= free and free % size == 0:
            return size
    return 0


@njit(cache=True)
def sort_by_used(row, n, used):
    """Stable sort of group ids ``row[:n]`` by used GPUs."""
    for i in range(1, n):
        g = row[i]
        key = used[g]
        k = i - 1
        while k >= 0 and used[row[k]] > key:
            row[k + 1] = row[k]
            k -= 1
        row[k + 1] = g


@njit(cache=True)
def place_job(job, gpus, pl, per_node, PS):
    """Lay ``job`` on ``gpus`` GPUs (the rules in the module docstring); False if no room.

    ``pl`` holds the groups: per size class a row of group ids (``files``),
    and per group its first node, node count, capacity, used GPUs, filing
    size and jobs. ``PS`` = (free nodes from, groups made, nodes).
    """
    files, nfiles, gfirst, gnodes, gcap, gused, gsize, gjobs, gnj, group_of = pl
    if gpus < 1 or gpus > SIZES_DESC[0] or filing(gpus) != gpus:
        raise KeyError("a GPU count outside the placement's size classes")
    home = gpus
    # the first group filed under its own size, then under each larger size, largest first
    for k in range(-1, len(SIZES_DESC)):
        size = home if k < 0 else SIZES_DESC[k]
        if k >= 0 and size <= gpus:
            break
        if nfiles[size]:
            g = files[size, 0]  # taken off the front of its file ...
            for i in range(nfiles[size] - 1):
                files[size, i] = files[size, i + 1]
            nfiles[size] -= 1
            if gused[g] + gpus <= gcap[g]:
                add_to_group(g, job, gpus, home, pl, per_node)
                return True
            files[size, nfiles[size]] = g  # ... and put back at its end when too full
            nfiles[size] += 1
    span = -(-gpus // per_node)
    if span > PS[2] - PS[0]:
        return False
    g = PS[1]
    PS[1] += 1
    gfirst[g] = PS[0]
    gnodes[g] = span
    PS[0] += span
    gcap[g] = span * per_node
    gsize[g] = gpus
    gused[g] = gpus
    gjobs[g, 0] = job
    gnj[g] = 1
    group_of[job] = g
    size = filing(gcap[g] - gpus)
    target = size if size else home
    files[target, nfiles[target]] = g
    nfiles[target] += 1
    sort_by_used(files[target], nfiles[target], gused)
    if size:
        sort_by_used(files[home], nfiles[home], gused)
    return True


@njit(cache=True)
def add_to_group(g, job, gpus, home, pl, per_node):
    """Add ``job`` to group ``g`` and file the group again under its free GPUs' size class."""
    files, nfiles, _, gnodes, _, gused, gsize, gjobs, gnj, group_of = pl
    gused[g] += gpus
    gjobs[g, gnj[g]] = job
    gnj[g] += 1
    group_of[job] = g
    size = filing(gnodes[g] * per_node - gused[g])
    if size:
        gsize[g] = size
        files[size, nfiles[size]] = g
        nfiles[size] += 1
        sort_by_used(files[home], nfiles[home], gused)
        sort_by_used(files[size], nfiles[size], gused)
    else:
        files[home, nfiles[home]] = g
        nfiles[home] += 1
        sort_by_used(files[home], nfiles[home], gused)


@njit(cache=True)
def first_rank(job, pl, per_node, gpus_of):
    """The job's first global GPU rank: its group's first node, after the jobs before it."""
    gfirst, gjobs, gnj, group_of = pl[2], pl[7], pl[8], pl[9]
    g = group_of[job]
    rank = gfirst[g] * per_node
    for i in range(gnj[g]):
        other = gjobs[g, i]
        if other == job:
            return rank
        rank += gpus_of[other]
    raise KeyError("job not in its group")


# -- the steps of a round ------------------------------------------------------------------
@njit(cache=True)
def progress(now, step, runnable, gpus, end, real_end, done_at, overhead, left, model, speed2,
             ev, nodes, S):
    """Advance running jobs by ``step`` seconds; a job ahead of its plan ends at this event."""
    for i in range(S[NRUNNABLE]):
        j = runnable[i]
        g = gpus[j]
        if not g:
            continue
        run = step - (now - real_end[j] if now > real_end[j] else 0.0)
        lost = overhead[j]
        run = 0.0 if run < lost else run - lost
        sp = efcore.rate(speed2, model[j], g)
        done = run * sp
        if left[j] <= done and end[j] > now:
            fin = now - step + math.ceil(left[j] / sp)
            done = (end[j] - now + step) * sp
            move_end(j, end[j], now, ev, nodes, S)
            end[j] = fin
            done_at[j] = fin
        left[j] -= done
        overhead[j] = 0.0


@njit(cache=True)
def start_planned(now, pending, status, gpus, end, start, ev, nodes, S):
    """Start the pending jobs that the round's plans gave GPUs; their ends become events."""
    i = 0
    while i < S[NPEND]:
        j = pending[i]
        if gpus[j] > 0:
            remove_from(pending, S, NPEND, j)
            status[j] = RUNNING
            S[NRUN] += 1
            if start[j] != start[j]:
                start[j] = now
            add_end(j, end[j], ev, nodes, S)
        else:
            i += 1


@njit(cache=True)
def place(now, runnable, gpus, placed, cached, seen, generation, pl, PS, nodes_total,
          per_node, scratch, rec, marks, S):
    """Record the round's allocations and lay the jobs on nodes, largest first.

    A job's GPU set (first rank, count) is cached if ``seen`` stamped it with
    this ``generation`` (the periodic restart starts a new one).
    """
    head = runnable[: S[NRUNNABLE]]
    wide = -gpus[head].astype(np.float64)  # the float sort the deadlines compile anyway
    runnable[: S[NRUNNABLE]] = head[np.argsort(wide, kind="mergesort")]  # stable, as Python's
    pl[1][:] = 0  # no groups yet: placement starts afresh every round
    PS[0] = 0
    PS[1] = 0
    PS[2] = nodes_total
    m = 0
    for i in range(S[NRUNNABLE]):
        j = runnable[i]
        g = gpus[j]
        set_gpus(j, now, g, rec, marks, S)
        if g:
            if not place_job(j, g, pl, per_node, PS):
                raise RuntimeError("no room for a job on its GPUs")
            scratch[m] = j
            m += 1
            placed[j] = True
    for i in range(m):
        j = scratch[i]
        r = first_rank(j, pl, per_node, gpus)
        cached[j] = seen[r, gpus[j]] == generation
        seen[r, gpus[j]] = generation


@njit(cache=True)
def charge_overhead(restart, runnable, gpus, cached, overhead, end, cost_plain, cost_restart,
                    cost_cached, ev, nodes, S):
    """Price this round's (re)starts and push the planned ends back by them."""
    for i in range(S[NRUNNABLE]):
        j = runnable[i]
        g = gpus[j]
        if g:
            if cached[j]:
                cost = cost_cached[g]
            elif restart:
                cost = cost_restart[g]
            else:
                cost = cost_plain[g]
            overhead[j] = cost
            move_end(j, end[j], end[j] + cost, ev, nodes, S)
            end[j] += cost


@njit(cache=True)
def log_efficiency(now, runnable, gpus, model, speed2, rounds, S):
    """Log the round: ``now`` and Σ speedup (throughput on its GPUs ÷ on one) of the jobs
    holding GPUs, the artifact's cluster efficiency before ÷ GPUs. Returns the log,
    grown when full; its length is ``S[NROUND]``."""
    total = 0.0
    for i in range(S[NRUNNABLE]):
        j = runnable[i]
        if gpus[j]:
            total += efcore.rate(speed2, model[j], gpus[j]) / efcore.rate(speed2, model[j], 1)
    n = S[NROUND]
    if n == rounds.shape[1]:
        grown = np.empty((2, 2 * n + 64))
        grown[:, :n] = rounds
        rounds = grown
    rounds[0, n] = now
    rounds[1, n] = total
    S[NROUND] = n + 1
    return rounds


# -- the run -------------------------------------------------------------------------------
@njit(cache=True)
def replay(now, etimes, eptr, ejobs, left, deadline, model, total, slot, reprice_all,
           nodes_total, per_node, cost_plain, cost_restart, cost_cached, restart_every,
           speed2, levels2, nlev, fit2, fitrow, cap2, admitted, start, finish, met,
           gpu_seconds, best_effort, logged_end):
    """Replay ElasticFlow's rounds; fill the per-job outcome arrays; return the GPU series.

    Arrivals come grouped by time (``etimes``, jobs ``ejobs[eptr[i]:eptr[i+1]]``
    in index order); a declined event's ``best_effort`` arrivals wait instead.
    ``logged_end`` gets each finished job's planned end (slot-aligned, with the
    overheads since), the end the artifact's job log records.
    Returns ``(times, allocated, n, rounds, m)``: the first ``n`` points of the
    GPU series, and ``rounds[:, :m]``, each round's time and the speedups
    summed by :func:`log_efficiency`.
    """
    # Everything below works on borrowed views (see :func:`.jit.borrowed`): the
    # arguments live until we return, and what we allocate is owned by the
    # ``*_owned`` tuples, which reach keep_alive at the end.
    etimes, eptr, ejobs, deadline, model = borrowed((etimes, eptr, ejobs, deadline, model))
    speed2, levels2, nlev, fit2, fitrow, cap2 = borrowed((speed2, levels2, nlev, fit2, fitrow,
                                                          cap2))  # fmt: skip
    admitted, start, finish, met, gpu_seconds = borrowed((admitted, start, finish, met,
                                                          gpu_seconds))  # fmt: skip
    best_effort, logged_end = borrowed((best_effort, logged_end))
    n = left.shape[0]
    jobs_owned = (left.copy(), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n),
                  np.zeros(n), np.full(n, np.nan), np.zeros(n), np.zeros(n, np.bool_),
                  np.zeros(n, np.bool_), np.empty(n, np.int64), np.empty(n, np.int64),
                  np.empty(n, np.int64), np.empty(n + 16, np.int64), np.zeros(n),
                  np.zeros(9, np.int64))  # fmt: skip
    (left, status, gpus, end, real_end, done_at, overhead, cached, placed, runnable, pending,
     starts, ends, old_end, S) = borrowed(jobs_owned)  # fmt: skip
    # events
    cap_e = len(etimes) + 64
    ev_owned = (np.empty(cap_e), np.empty(cap_e, np.int64), np.empty(cap_e, np.int64),
                np.empty(cap_e, np.int64), np.empty(cap_e, np.int64), np.empty(cap_e, np.int64),
                np.arange(cap_e - 1, -1, -1).astype(np.int64))  # fmt: skip
    ev = borrowed(ev_owned)
    S[EFREE] = cap_e
    cap_n = n + 64
    nodes_owned = (np.empty(cap_n, np.int64), np.empty(cap_n, np.int64),
                   np.arange(cap_n - 1, -1, -1).astype(np.int64))  # fmt: skip
    nodes = borrowed(nodes_owned)
    S[NFREE] = cap_n
    nj, nn, nfree = nodes
    for i in range(len(etimes) - 1, -1, -1):  # latest first: each goes to the end
        e = event_at(etimes[i], ev, S)
        for k in range(eptr[i], eptr[i + 1]):
            S[NFREE] -= 1
            x = nfree[S[NFREE]]
            nj[x] = ejobs[k]
            nn[x] = -1
            if ev[3][e] < 0:
                ev[2][e] = x
            else:
                nn[ev[3][e]] = x
            ev[3][e] = x
    # the recorder
    held_owned = (np.zeros(n, np.int64), np.zeros(n))
    held, since = borrowed(held_owned)
    rec = (start, finish, gpu_seconds, met, admitted, held, since, logged_end)
    marks_owned = (np.empty(1024), np.empty(1024, np.int64))
    marks = borrowed(marks_owned)
    rounds_log = np.empty((2, 1024))
    # placement (rebuilt every round) and the cached GPU sets
    pool = max(nodes_total, 1)
    pl_owned = (np.empty((257, pool), np.int64), np.zeros(257, np.int64),
                np.zeros(pool, np.int64), np.zeros(pool, np.int64), np.zeros(pool, np.int64),
                np.zeros(pool, np.int64), np.zeros(pool, np.int64), np.empty((pool, n), np.int64),
                np.zeros(pool, np.int64), np.full(n, -1, np.int64))  # fmt: skip
    pl = borrowed(pl_owned)
    # placement's counters, and the cache's stamps (== generation: (rank, gpus) seen)
    seen_owned = (np.zeros(3, np.int64), np.zeros((total, total + 1), np.int64))
    PS, seen = borrowed(seen_owned)
    generation = np.int64(1)  # not a literal: place would compile twice
    planned = efcore.estimate(now, total, slot, left[:0], deadline[:0], model[:0], n < 0,
                              speed2, levels2, nlev, fit2, fitrow, cap2)  # typed, unused
    rounds = 0
    step = 0.0
    if S[NE] == 0:
        return marks_owned[0], marks_owned[1], 0, rounds_log, 0
    now = first_time(ev, S)
    while S[NE] or S[NPEND] or S[NRUN]:
        # a round adds at most 5n + 1 events and list nodes: up to n end moves in each of
        # progress, handle (arrivals included), scale-up and overhead, n starts, a wake-up
        need = 5 * n + 8
        if S[EFREE] < need:
            ev_owned = grown_events(ev, S, need)
            ev = borrowed(ev_owned)
        if S[NFREE] < need:
            nodes_owned = grown_nodes(nodes, S, need)
            nodes = borrowed(nodes_owned)
        if S[NMARK] + 3 * n + 8 > marks[0].shape[0]:
            size = 2 * marks[0].shape[0] + 3 * n + 8
            grown = (np.empty(size), np.empty(size, np.int64))
            grown[0][: S[NMARK]] = marks[0][: S[NMARK]]
            grown[1][: S[NMARK]] = marks[1][: S[NMARK]]
            marks_owned = grown
            marks = borrowed(marks_owned)
        progress(now, step, runnable, gpus, end, real_end, done_at, overhead, left, model,
                 speed2, ev, nodes, S)
        k = find_event(ev[0], S[NE], now)
        if k >= 0:
            ns, nd = take_event(k, ev, nodes, S, starts, ends)
            if not S[NPEND] and not S[NRUN] and ns == 0 and nd == 0:
                if S[NE] == 0:
                    break
                now = first_time(ev, S)
                step = 0.0
                continue
            planned = handle(now, ns, nd, starts, ends, runnable, pending, status, placed,
                             gpus, end, real_end, done_at, old_end, left, deadline, model,
                             total, slot, speed2, levels2, nlev, fit2, fitrow, cap2, ev,
                             nodes, S, rec, marks, best_effort)
        start_planned(now, pending, status, gpus, end, start, ev, nodes, S)
        first_change = scale_up(now, total, slot, reprice_all, planned, runnable, pending,
                                status, gpus, end, real_end, left, deadline, model, speed2,
                                levels2, nlev, fit2, fitrow, cap2, ev, nodes, S, start)
        place(now, runnable, gpus, placed, cached, seen, generation, pl, PS, nodes_total,
              per_node, starts, rec, marks, S)
        rounds_log = log_efficiency(now, runnable, gpus, model, speed2, rounds_log, S)
        if first_change < INF and (S[NE] == 0 or first_change < first_time(ev, S)):
            event_at(first_change, ev, S)
        if S[NE] == 0:
            break
        # charge this round's restarts and push planned ends back by them
        restart = restart_every > 0 and rounds > 0 and rounds % restart_every == 0
        rounds += 1
        if restart:
            generation += 1
        charge_overhead(restart, runnable, gpus, cached, overhead, end, cost_plain,
                        cost_restart, cost_cached, ev, nodes, S)
        merge_slot(now, slot, ev, nodes, S)
        nxt = first_time(ev, S)
        step = nxt - now
        now = nxt
    count = S[NMARK]
    logged = S[NROUND]
    keep_alive((jobs_owned, ev_owned, nodes_owned, held_owned, pl_owned, seen_owned))
    return marks_owned[0], marks_owned[1], count, rounds_log, logged


@njit(cache=True, inline="always")
def enqueue(j, old_end, status, pending, runnable, S):
    """An admitted arrival waits, runnable, for the plans to give it GPUs."""
    old_end[j] = 0.0
    status[j] = PENDING
    pending[S[NPEND]] = j
    S[NPEND] += 1
    runnable[S[NRUNNABLE]] = j
    S[NRUNNABLE] += 1


@njit(cache=True)
def handle(now, ns, nd, starts, ends, runnable, pending, status, placed, gpus, end, real_end,
           done_at, old_end, left, deadline, model, total, slot, speed2, levels2, nlev, fit2,
           fitrow, cap2, ev, nodes, S, rec, marks, best_effort):
    """End jobs, admit or decline arrivals, and re-plan every runnable job."""
    finish, met, admitted = rec[1], rec[3], rec[4]
    for i in range(nd):
        j = ends[i]
        if placed[j]:
            remove_from(runnable, S, NRUNNABLE, j)
            S[NRUN] -= 1
            status[j] = DONE
            fin = done_at[j] if done_at[j] == done_at[j] else real_end[j]
            set_gpus(j, now, np.int64(0), rec, marks, S)  # a literal 0 would compile it twice
            finish[j] = fin
            rec[7][j] = end[j]
            met[j] = real_end[j] <= deadline[j]
    for i in range(S[NRUNNABLE]):
        placed[runnable[i]] = False
        old_end[runnable[i]] = end[runnable[i]]
    if ns:
        both = np.empty(S[NRUNNABLE] + ns, np.int64)
        both[: S[NRUNNABLE]] = runnable[: S[NRUNNABLE]]
        both[S[NRUNNABLE]:] = starts[:ns]
        order = by_deadline(both, len(both), deadline)
        admitting = ns > 0  # not a literal True: that would compile the planner twice
        planned = efcore.estimate(now, total, slot, left[order], deadline[order], model[order],
                                  admitting, speed2, levels2, nlev, fit2, fitrow, cap2)
        if planned[0]:
            for i in range(ns):
                enqueue(starts[i], old_end, status, pending, runnable, S)
        else:  # every arrival is declined, but best-effort ones wait (they have no deadline)
            for i in range(ns):
                j = starts[i]
                if best_effort[j]:
                    enqueue(j, old_end, status, pending, runnable, S)
                else:
                    status[j] = DECLINED
                    admitted[j] = False
            order = by_deadline(runnable, S[NRUNNABLE], deadline)
            planned = efcore.estimate(now, total, slot, left[order], deadline[order],
                                      model[order], not admitting, speed2, levels2, nlev, fit2,
                                      fitrow, cap2)
    else:
        order = by_deadline(runnable, S[NRUNNABLE], deadline)
        planned = efcore.estimate(now, total, slot, left[order], deadline[order], model[order],
                                  ns > 0, speed2, levels2, nlev, fit2, fitrow, cap2)
    runnable[: S[NRUNNABLE]] = order  # the runnable jobs just planned, in deadline order
    ptr, ag, new_ends, real_ends = planned[2], planned[4], planned[5], planned[6]
    for p in range(S[NRUNNABLE]):
        j = runnable[p]
        gpus[j] = ag[ptr[p]]
        e = new_ends[p]
        move_end(j, old_end[j], e, ev, nodes, S)
        end[j] = e
        real_end[j] = real_ends[p]
    return planned


@njit(cache=True)
def scale_up(now, total, slot, reprice_all, planned, runnable, pending, status, gpus, end,
             real_end, left, deadline, model, speed2, levels2, nlev, fit2, fitrow, cap2, ev,
             nodes, S, start):
    """Hand out the free GPUs (:func:`.efcore.scale_up`); the first planned change after now."""
    m = S[NRUNNABLE]
    index = runnable[:m].copy()
    ptr, at, ag, real_ends, times, free = (planned[2], planned[3], planned[4], planned[6],
                                           planned[7], planned[8])  # fmt: skip
    order, new_gpus, new_end, new_real, started, first_change, _ = efcore.scale_up(
        now, total, slot, reprice_all, times, free, gpus[index], left[index], deadline[index],
        model[index], end[index], real_ends, ptr, at, ag, speed2, levels2, nlev, fit2, fitrow,
        cap2,
    )
    for p in range(m):
        j = index[p]
        gpus[j] = new_gpus[p]
        if started[p] and status[j] == PENDING:
            remove_from(pending, S, NPEND, j)
            status[j] = RUNNING
            S[NRUN] += 1
            if start[j] != start[j]:
                start[j] = now
        e = new_end[p]
        if e != end[j]:
            move_end(j, end[j], e, ev, nodes, S)
            end[j] = e
        real_end[j] = new_real[p]
    for p in range(m):
        runnable[p] = index[order[p]]
    return first_change


def compiled() -> bool:
    """Whether numba's cache already holds the round loop."""
    return in_cache(replay)
