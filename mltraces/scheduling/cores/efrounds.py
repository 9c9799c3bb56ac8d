"""The compiled round loop of the ElasticFlow replay (the planner is :mod:`.efcore`).

Why compiled. Once the planner was machine code, the interpreted rounds
around it (moving each job's end event three times a round, laying jobs on
nodes, building arrays for the planner) were a third of a replay. Like the
planner, this file is Cython's pure Python mode (see :mod:`.native`).

Two rounds share the event list, placement and record below, and a replay's
state (:class:`Replay`): ElasticFlow's (:class:`Admit`) and the artifact's
``ef``, ElasticFlow without admission control (:class:`NoAdmit`, described in
:mod:`.efnoadmit`), whose job lists follow the artifact's ``running``/``pending``
order and whose jobs are laid on fresh nodes every round, in start order. Each
takes the jobs (:class:`Jobs`), the cluster (:class:`Cluster`), the model tables
(:class:`.efcore.Tables`) and the record to fill (:class:`Record`).

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

Layout. Events (:class:`Events`): negated times ``et[:ne]`` sorted ascending
(so the first event is the last entry, and the list changes near its end,
where shifting is cheap: early in a large trace thousands of arrivals lie
ahead), with ids ``eid``; an event's arriving and ending jobs are linked
lists of pool nodes (:class:`Nodes`: ``nj`` job, ``nn`` next) from
``sh``/``st`` and ``dh``/``dt``. Node groups (:class:`Placement`): ids with
first node, node count, capacity, used GPUs, filing size and jobs. Job lists
(runnable, pending) are arrays whose lengths sit in ``S``, with the other
scalars that helpers change. Workspaces grow before a round could outgrow
them (bounds are not checked).
"""

from __future__ import annotations

import math

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces import cyshim as cython

if cython.compiled:
    from cython.cimports.libc.math import ceil, trunc
    from cython.cimports.libc.string import memmove
    from cython.cimports.mltraces.scheduling.cores import efcore, mergesort
else:
    from math import ceil, trunc

    from mltraces.scheduling.cores import efcore, mergesort

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)
u8 = cython.typedef(cython.uchar)  # numpy's bool arrays

INF = cython.declare(f64, math.inf)
NAN = cython.declare(f64, math.nan)
PENDING = cython.declare(i64, 1)
RUNNING = cython.declare(i64, 2)
DONE = cython.declare(i64, 3)
DECLINED = cython.declare(i64, 4)
# slots of S: live events, free event ids, free list nodes, running jobs, runnable jobs,
# pending jobs, GPU-series points, GPUs held in total, logged rounds
NE = cython.declare(i64, 0)
EFREE = cython.declare(i64, 1)
NFREE = cython.declare(i64, 2)
NRUN = cython.declare(i64, 3)
NRUNNABLE = cython.declare(i64, 4)
NPEND = cython.declare(i64, 5)
NMARK = cython.declare(i64, 6)
HELD = cython.declare(i64, 7)
NROUND = cython.declare(i64, 8)
#: placement size classes, the reference's, largest first
SIZES_DESC = cython.declare(i64[:], np.array([256, 128, 88, 72, 64, 56, 48, 40, 32, 24, 16, 12,
                                              8, 4, 2, 1], np.int64))


@cython.cclass
class Events:
    """The event list (see the module docstring)."""

    et: f64[:]
    eid: i64[:]
    sh: i64[:]
    st: i64[:]
    dh: i64[:]
    dt: i64[:]
    efree: i64[:]

    def __init__(self, et, eid, sh, st, dh, dt, efree) -> None:
        self.et, self.eid, self.sh, self.st, self.dh, self.dt = et, eid, sh, st, dh, dt
        self.efree = efree


@cython.cclass
class Nodes:
    """The pool of list nodes: job ``nj``, next ``nn``, and the free ones ``nfree``."""

    nj: i64[:]
    nn: i64[:]
    nfree: i64[:]

    def __init__(self, nj, nn, nfree) -> None:
        self.nj, self.nn, self.nfree = nj, nn, nfree


@cython.cclass
class Record:
    """What the :class:`.results.Recorder` keeps per job: ``start``, ``finish``,
    ``gpu_seconds``, ``met``, ``admitted``, the GPUs ``held`` ``since`` when, and the
    planned end the artifact's job log records (``logged_end``). The caller gives the
    arrays it reads afterwards (``start`` … ``logged_end``); the others are made here."""

    start: f64[:]
    finish: f64[:]
    gpu_seconds: f64[:]
    met: u8[:]
    admitted: u8[:]
    held: i64[:]
    since: f64[:]
    logged_end: f64[:]

    def __init__(self, start, finish, gpu_seconds, met, admitted, logged_end) -> None:
        self.start, self.finish, self.gpu_seconds = start, finish, gpu_seconds
        self.met, self.admitted, self.logged_end = met, admitted, logged_end
        self.held, self.since = np.zeros(start.shape[0], np.int64), np.zeros(start.shape[0])


@cython.cclass
class Marks:
    """The allocated-GPU series: ``times`` and ``allocated`` (``S[NMARK]`` points), and
    the arrays that own them (returned at the end)."""

    times: f64[:]
    allocated: i64[:]
    times_owner: object
    allocated_owner: object

    def __init__(self, times, allocated) -> None:
        self.times_owner, self.allocated_owner = times, allocated
        self.times, self.allocated = times, allocated


@cython.cclass
class Rounds:
    """The round log: ``log[0, k]`` the time of round ``k``, ``log[1, k]`` the speedups of
    the jobs holding GPUs after it summed (``S[NROUND]`` rounds), and the array that owns
    it (returned at the end)."""

    log: f64[:, :]
    owner: object

    def __init__(self, log) -> None:
        self.owner = log
        self.log = log


@cython.cclass
class Placement:
    """The node groups of a round's placement: per size class a row of group ids
    (``files``, ``nfiles`` long), per group its first node (in switch-major order), node
    count, capacity, used GPUs, filing size, jobs (``gjobs``, ``gnj`` long), nodes
    (``gnl``) and jobs not yet released (``gheld``), and each job's group. The free
    nodes outlive a round: once one group has been released they queue by their number
    within their switch (``fq``, ``fqn`` long per number), see :func:`free_node`.

    Made for ``pool`` nodes and ``jobs`` jobs, up to ``group_jobs`` jobs and
    ``group_nodes`` nodes a group, and ``queues`` queues of free nodes (the nodes per
    switch) ``queue_length`` long."""

    files: i64[:, :]
    nfiles: i64[:]
    gfirst: i64[:]
    gnodes: i64[:]
    gcap: i64[:]
    gused: i64[:]
    gsize: i64[:]
    gjobs: i64[:, :]
    gnj: i64[:]
    group_of: i64[:]
    gnl: i64[:, :]
    gheld: i64[:]
    fq: i64[:, :]
    fqn: i64[:]

    def __init__(self, pool, jobs, group_jobs, group_nodes, queues, queue_length) -> None:
        self.files, self.nfiles = np.empty((257, pool), np.int64), np.zeros(257, np.int64)
        self.gfirst, self.gnodes, self.gcap, self.gused, self.gsize = (
            np.zeros(pool, np.int64) for _ in range(5))
        self.gjobs, self.gnj = np.empty((pool, group_jobs), np.int64), np.zeros(pool, np.int64)
        self.group_of = np.full(jobs, -1, np.int64)
        self.gnl, self.gheld = np.empty((pool, group_nodes), np.int64), np.zeros(pool, np.int64)
        self.fq = np.empty((queues, queue_length), np.int64)
        self.fqn = np.zeros(queues, np.int64)


@cython.cclass
class Buffers:
    """Per-job scratch a round reuses: the jobs in deadline order (``order``, and the
    merge sort's ``spare``), their sort keys, and the runnable jobs' values gathered in
    order for the planner (``e_*`` for :func:`.efcore.estimate`, ``g_*`` and ``index``
    for :func:`.efcore.scale_up`)."""

    order: i64[:]
    spare: i64[:]
    keys: f64[:]
    index: i64[:]
    e_left: f64[:]
    e_deadline: f64[:]
    e_model: i64[:]
    g_gpus: i64[:]
    g_left: f64[:]
    g_deadline: f64[:]
    g_model: i64[:]
    g_end: f64[:]

    def __init__(self, jobs) -> None:
        n = max(int(jobs), 1)
        self.order, self.spare, self.index = (np.empty(n, np.int64) for _ in range(3))
        self.e_model, self.g_gpus, self.g_model = (np.empty(n, np.int64) for _ in range(3))
        self.keys, self.e_left, self.e_deadline = np.empty(n), np.empty(n), np.empty(n)
        self.g_left, self.g_deadline, self.g_end = np.empty(n), np.empty(n), np.empty(n)


@cython.cclass
class Cluster:
    """The cluster and the rules of its rounds: its GPUs (``total``), ``nodes``, GPUs per
    node, nodes per switch, the ``slot`` (s), the period of the periodic restart in rounds
    (``restart_every``; 0: none) and a (re)start's overhead by GPU count: plain, at a
    periodic restart, from a cached communicator (``cost_*``)."""

    total: i64
    nodes: i64
    per_node: i64
    per_switch: i64
    slot: f64
    restart_every: i64
    cost_plain: f64[:]
    cost_restart: f64[:]
    cost_cached: f64[:]

    def __init__(self, total, nodes, per_node, per_switch, slot, restart_every, cost_plain,
                 cost_restart, cost_cached) -> None:
        self.total, self.nodes, self.per_node, self.per_switch = total, nodes, per_node, per_switch
        self.slot, self.restart_every = slot, restart_every
        self.cost_plain, self.cost_restart, self.cost_cached = cost_plain, cost_restart, cost_cached


@cython.cclass
class Jobs:
    """The jobs: their arrivals grouped by time (``etimes``, jobs
    ``ejobs[eptr[i]:eptr[i+1]]`` in index order) and each one's iterations (``left``),
    ``deadline``, row of the model tables (``model``) and whether it is best-effort (it
    waits when its arrival is declined; ElasticFlow's round only)."""

    etimes: f64[:]
    eptr: i64[:]
    ejobs: i64[:]
    left: f64[:]
    deadline: f64[:]
    model: i64[:]
    best_effort: u8[:]

    def __init__(self, etimes, eptr, ejobs, left, deadline, model, best_effort) -> None:
        self.etimes, self.eptr, self.ejobs = etimes, eptr, ejobs
        self.left, self.deadline, self.model = left, deadline, model
        self.best_effort = best_effort


# -- the event list ------------------------------------------------------------------------
@cython.cfunc
@cython.inline
def find_event(et: f64[:], ne: i64, time: f64) -> i64:
    """Position of the event at ``time``, or -1 (``et`` holds negated times, see above)."""
    k: i64 = efcore.bisect_left(efcore.fptr(et), ne, -time)
    if k < ne and et[k] == -time:
        return k
    return -1


@cython.cfunc
@cython.inline
def shift(ev: Events, src: i64, dst: i64, count: i64) -> cython.void:
    """Move ``count`` events (time and id) from position ``src`` to ``dst``, overlapping or
    not: one ``memmove`` each compiled (the event arrays are contiguous: made here), which
    a busy list needs (an event list of ``ef`` shifts on most of its many end moves)."""
    if count <= 0:
        return
    if cython.compiled:
        memmove(cython.address(ev.et[dst]), cython.address(ev.et[src]),
                count * cython.sizeof(f64))
        memmove(cython.address(ev.eid[dst]), cython.address(ev.eid[src]),
                count * cython.sizeof(i64))
    else:
        ev.et[dst : dst + count] = np.array(ev.et[src : src + count])
        ev.eid[dst : dst + count] = np.array(ev.eid[src : src + count])


@cython.cfunc
@cython.inline
def first_time(ev: Events, S: i64[:]) -> f64:
    """The time of the first event (the last entry: times are stored negated)."""
    return -ev.et[S[NE] - 1]


@cython.cfunc
def event_at(time: f64, ev: Events, S: i64[:]) -> i64:
    """The id of the event at ``time``, created empty if there is none."""
    ne: i64 = S[NE]
    k: i64 = efcore.bisect_left(efcore.fptr(ev.et), ne, -time)
    if k < ne and ev.et[k] == -time:
        return ev.eid[k]
    shift(ev, k, k + 1, ne - k)
    S[EFREE] -= 1
    e: i64 = ev.efree[S[EFREE]]
    ev.sh[e] = -1
    ev.st[e] = -1
    ev.dh[e] = -1
    ev.dt[e] = -1
    ev.et[k] = -time
    ev.eid[k] = e
    S[NE] = ne + 1
    return e


@cython.cfunc
@cython.inline
def drop_event(k: i64, ev: Events, S: i64[:]) -> cython.void:
    """Delete the event at position ``k`` (its lists must be empty or already taken)."""
    ne: i64 = S[NE]
    ev.efree[S[EFREE]] = ev.eid[k]
    S[EFREE] += 1
    shift(ev, k + 1, k, ne - 1 - k)
    S[NE] = ne - 1


@cython.cfunc
def add_end(job: i64, time: f64, ev: Events, nodes: Nodes, S: i64[:]) -> cython.void:
    """Job ``job`` ends at ``time`` (once per event). The arrays are read in place (a
    local typed memoryview costs two atomic reference counts, and this runs per end move)."""
    e: i64 = event_at(time, ev, S)
    x: i64 = ev.dh[e]
    while x >= 0:
        if nodes.nj[x] == job:
            return
        x = nodes.nn[x]
    S[NFREE] -= 1
    x = nodes.nfree[S[NFREE]]
    nodes.nj[x] = job
    nodes.nn[x] = -1
    if ev.dt[e] < 0:
        ev.dh[e] = x
    else:
        nodes.nn[ev.dt[e]] = x
    ev.dt[e] = x


@cython.cfunc
def move_end(job: i64, old: f64, new: f64, ev: Events, nodes: Nodes, S: i64[:]) -> cython.void:
    """Re-plan a job's end; an event left without jobs at ``old`` disappears."""
    if old == new:
        return
    e: i64
    prev: i64
    x: i64
    after: i64
    k: i64 = find_event(ev.et, S[NE], old)
    if k >= 0:
        e = ev.eid[k]
        prev = -1
        x = ev.dh[e]
        while x >= 0:
            if nodes.nj[x] == job:
                after = nodes.nn[x]
                if prev < 0:
                    ev.dh[e] = after
                else:
                    nodes.nn[prev] = after
                if ev.dt[e] == x:
                    ev.dt[e] = prev
                nodes.nfree[S[NFREE]] = x
                S[NFREE] += 1
                break
            prev = x
            x = nodes.nn[x]
        if ev.sh[e] < 0 and ev.dh[e] < 0:
            drop_event(k, ev, S)
    add_end(job, new, ev, nodes, S)


@cython.cfunc
def take_event(k: i64, ev: Events, nodes: Nodes, S: i64[:], starts: i64[:],
               ends: i64[:]) -> tuple[i64, i64]:
    """Remove the event at position ``k``; its jobs go to ``starts``/``ends``. Returns counts."""
    nj: i64[:] = nodes.nj
    nn: i64[:] = nodes.nn
    nfree: i64[:] = nodes.nfree
    e: i64 = ev.eid[k]
    ns: i64 = 0
    x: i64 = ev.sh[e]
    while x >= 0:
        starts[ns] = nj[x]
        ns += 1
        nfree[S[NFREE]] = x
        S[NFREE] += 1
        x = nn[x]
    nd: i64 = 0
    x = ev.dh[e]
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


@cython.cfunc
def merge_slot(now: f64, slot: f64, ev: Events, nodes: Nodes, S: i64[:]) -> cython.void:
    """Fold every event due within ``slot`` of ``now`` into one at ``now + slot``.

    A lone remaining event is left where it is.
    """
    et: f64[:] = ev.et
    eid: i64[:] = ev.eid
    sh: i64[:] = ev.sh
    st: i64[:] = ev.st
    dh: i64[:] = ev.dh
    dt: i64[:] = ev.dt
    nn: i64[:] = nodes.nn
    later: i64
    if S[NE] < 2 or first_time(ev, S) - now > slot:
        return
    first: i64 = eid[S[NE] - 1]
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
        ev.efree[S[EFREE]] = later
        S[EFREE] += 1
        et[S[NE] - 2] = et[S[NE] - 1]
        eid[S[NE] - 2] = first
        S[NE] -= 1
    et[S[NE] - 1] = -(now + slot)


@cython.cfunc
def grown_events(ev: Events, S: i64[:], need: i64) -> Events:
    """The event arrays with room for ``need`` more events (ids keep their meaning)."""
    i: i64
    cap: i64 = ev.et.shape[0]
    size: i64 = 2 * cap + need
    out = Events(np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64),
                 np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64),
                 np.empty(size, np.int64))  # fmt: skip
    for i in range(cap):
        out.et[i] = ev.et[i]
        out.eid[i] = ev.eid[i]
        out.sh[i] = ev.sh[i]
        out.st[i] = ev.st[i]
        out.dh[i] = ev.dh[i]
        out.dt[i] = ev.dt[i]
    free: i64 = S[EFREE]
    for i in range(free):
        out.efree[i] = ev.efree[i]
    for i in range(size - cap):
        out.efree[free + i] = cap + i
    S[EFREE] = free + size - cap
    return out


@cython.cfunc
def grown_nodes(nodes: Nodes, S: i64[:], need: i64) -> Nodes:
    """The list-node pool with room for ``need`` more nodes."""
    i: i64
    cap: i64 = nodes.nj.shape[0]
    size: i64 = 2 * cap + need
    out = Nodes(np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64))
    out.nj[:cap] = nodes.nj
    out.nn[:cap] = nodes.nn
    free: i64 = S[NFREE]
    out.nfree[:free] = nodes.nfree[:free]
    for i in range(size - cap):
        out.nfree[free + i] = cap + i
    S[NFREE] = free + size - cap
    return out


# -- the recorder --------------------------------------------------------------------------
@cython.cfunc
def set_gpus(j: i64, now: f64, g: i64, rec: Record, marks: Marks, S: i64[:]) -> cython.void:
    """The job holds ``g`` GPUs from ``now`` on (what :meth:`Recorder.set_gpus` does)."""
    start: f64[:] = rec.start
    held: i64[:] = rec.held
    since: f64[:] = rec.since
    times: f64[:] = marks.times
    allocated: i64[:] = marks.allocated
    old: i64 = held[j]
    if g == old:
        return
    if old:
        rec.gpu_seconds[j] += old * (now - since[j])
    elif g and start[j] != start[j]:
        start[j] = now
    held[j] = g
    since[j] = now
    S[HELD] += g - old
    m: i64 = S[NMARK]
    if m and times[m - 1] == now:
        allocated[m - 1] = S[HELD]
    else:
        times[m] = now
        allocated[m] = S[HELD]
        S[NMARK] = m + 1


# -- job lists -----------------------------------------------------------------------------
@cython.cfunc
@cython.inline
def remove_from(a: i64[:], S: i64[:], slot: i64, j: i64) -> cython.void:
    """Delete the first ``j`` from ``a[:S[slot]]``, keeping the order."""
    i: i64
    k: i64
    n: i64 = S[slot]
    for i in range(n):
        if a[i] == j:
            for k in range(i, n - 1):
                a[k] = a[k + 1]
            S[slot] = n - 1
            return
    raise ValueError("list.remove(x): x not in list")


# -- placement -----------------------------------------------------------------------------
# slots of PS: the next free node while none was released yet, groups made this round,
# nodes, whether released nodes queue by number (fq), free nodes, nodes per switch
NEXT_NODE = cython.declare(i64, 0)
GROUPS = cython.declare(i64, 1)
NODES = cython.declare(i64, 2)
QUEUED = cython.declare(i64, 3)
FREE_NODES = cython.declare(i64, 4)
PER_SWITCH = cython.declare(i64, 5)


@cython.cfunc
@cython.inline
def queue_node(x: i64, pl: Placement, PS: i64[:]) -> cython.void:
    """Node ``x`` (switch-major number) joins the free nodes, after those with its number."""
    k: i64 = x % PS[PER_SWITCH]
    pl.fq[k, pl.fqn[k]] = x
    pl.fqn[k] += 1


@cython.cfunc
def free_node(pl: Placement, PS: i64[:]) -> i64:
    """Take the first free node, in the reference's order of its free-node list.

    That list starts switch by switch; the first time a group's nodes come back it is
    sorted stably by each node's number *within its switch*, and so after every return.
    Nodes are then taken by that number, and of nodes with the same number (one per
    switch) the one longest free first. On one switch this is the node order itself.
    """
    k: i64
    i: i64
    x: i64
    PS[FREE_NODES] -= 1
    if not PS[QUEUED]:
        x = PS[NEXT_NODE]
        PS[NEXT_NODE] += 1
        return x
    for k in range(PS[PER_SWITCH]):
        if pl.fqn[k]:
            x = pl.fq[k, 0]
            for i in range(pl.fqn[k] - 1):
                pl.fq[k, i] = pl.fq[k, i + 1]
            pl.fqn[k] -= 1
            return x
    raise RuntimeError("no free node left")


@cython.cfunc
def release_job(job: i64, pl: Placement, PS: i64[:]) -> cython.void:
    """Take ``job`` off its group; the group's last job gives its nodes back, in order.

    The reference releases ending jobs first, then every runnable job in deadline
    order before it re-plans, so the nodes return in that order (see :func:`free_node`).
    """
    x: i64
    i: i64
    g: i64 = pl.group_of[job]
    if g < 0:
        return
    pl.group_of[job] = -1
    pl.gheld[g] -= 1
    if pl.gheld[g]:
        return
    if not PS[QUEUED]:  # the first return sorts the list: the untouched nodes queue first
        for x in range(PS[NEXT_NODE], PS[NODES]):
            queue_node(x, pl, PS)
        PS[QUEUED] = 1
    for i in range(pl.gnodes[g]):
        queue_node(pl.gnl[g, i], pl, PS)
    PS[FREE_NODES] += pl.gnodes[g]


@cython.cfunc
@cython.inline
def filing(free: i64) -> i64:
    """The size class a group with ``free`` free GPUs is filed under (0: full)."""
    k: i64
    size: i64
    for k in range(SIZES_DESC.shape[0]):
        size = SIZES_DESC[k]
        if size <= free and free % size == 0:
            return size
    return 0


@cython.cfunc
def sort_by_used(row: i64[:], n: i64, used: i64[:]) -> cython.void:
    """Stable sort of group ids ``row[:n]`` by used GPUs."""
    i: i64
    k: i64
    g: i64
    key: i64
    for i in range(1, n):
        g = row[i]
        key = used[g]
        k = i - 1
        while k >= 0 and used[row[k]] > key:
            row[k + 1] = row[k]
            k -= 1
        row[k + 1] = g


@cython.cfunc
def place_job(job: i64, gpus: i64, pl: Placement, per_node: i64, PS: i64[:]) -> cython.bint:
    """Lay ``job`` on ``gpus`` GPUs (the rules in the module docstring); False if no room.

    ``pl`` holds the groups (:class:`Placement`), ``PS`` the counters (``GROUPS``,
    ``FREE_NODES``, ...). A new group takes its nodes with :func:`free_node`.
    """
    files: i64[:, :] = pl.files
    nfiles: i64[:] = pl.nfiles
    gused: i64[:] = pl.gused
    gcap: i64[:] = pl.gcap
    i: i64
    k: i64
    g: i64
    size: i64
    x: i64
    if gpus < 1 or gpus > SIZES_DESC[0] or filing(gpus) != gpus:
        raise KeyError("a GPU count outside the placement's size classes")
    home: i64 = gpus
    # the first group filed under its own size, then under each larger size, largest first
    for k in range(-1, SIZES_DESC.shape[0]):
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
    span: i64 = -(-gpus // per_node)
    if span > PS[FREE_NODES]:
        return False
    g = PS[GROUPS]
    PS[GROUPS] += 1
    first: i64 = PS[NODES]
    for i in range(span):
        x = free_node(pl, PS)
        pl.gnl[g, i] = x
        if x < first:
            first = x
    pl.gfirst[g] = first  # the reference counts ranks from the group's first node
    pl.gnodes[g] = span
    gcap[g] = span * per_node
    pl.gsize[g] = gpus
    gused[g] = gpus
    pl.gjobs[g, 0] = job
    pl.gnj[g] = 1
    pl.gheld[g] = 1
    pl.group_of[job] = g
    size = filing(gcap[g] - gpus)
    target: i64 = size if size else home
    files[target, nfiles[target]] = g
    nfiles[target] += 1
    sort_by_used(files[target], nfiles[target], gused)
    if size:
        sort_by_used(files[home], nfiles[home], gused)
    return True


@cython.cfunc
def add_to_group(g: i64, job: i64, gpus: i64, home: i64, pl: Placement,
                 per_node: i64) -> cython.void:
    """Add ``job`` to group ``g`` and file the group again under its free GPUs' size class."""
    files: i64[:, :] = pl.files
    nfiles: i64[:] = pl.nfiles
    gused: i64[:] = pl.gused
    gused[g] += gpus
    pl.gjobs[g, pl.gnj[g]] = job
    pl.gnj[g] += 1
    pl.gheld[g] += 1
    pl.group_of[job] = g
    size: i64 = filing(pl.gnodes[g] * per_node - gused[g])
    if size:
        pl.gsize[g] = size
        files[size, nfiles[size]] = g
        nfiles[size] += 1
        sort_by_used(files[home], nfiles[home], gused)
        sort_by_used(files[size], nfiles[size], gused)
    else:
        files[home, nfiles[home]] = g
        nfiles[home] += 1
        sort_by_used(files[home], nfiles[home], gused)


@cython.cfunc
def first_rank(job: i64, pl: Placement, per_node: i64, gpus_of: i64[:]) -> i64:
    """The job's first global GPU rank: its group's first node, after the jobs before it."""
    i: i64
    other: i64
    g: i64 = pl.group_of[job]
    rank: i64 = pl.gfirst[g] * per_node
    for i in range(pl.gnj[g]):
        other = pl.gjobs[g, i]
        if other == job:
            return rank
        rank += gpus_of[other]
    raise KeyError("job not in its group")


# -- helpers of the rounds -------------------------------------------------------------------
@cython.cfunc
def discard(a: i64[:], S: i64[:], slot: i64, j: i64) -> cython.void:
    """Delete the first ``j`` from ``a[:S[slot]]`` if it is there (``if j in a: a.remove(j)``)."""
    i: i64
    for i in range(S[slot]):
        if a[i] == j:
            remove_from(a, S, slot, j)
            return


@cython.cfunc
@cython.exceptval(check=False)
def list_length(x: i64, nodes: Nodes) -> i64:
    """How many jobs the linked list from node ``x`` holds."""
    count: i64 = 0
    while x >= 0:
        count += 1
        x = nodes.nn[x]
    return count


@cython.cfunc
def copy_list(x: i64, nodes: Nodes, out: i64[:]) -> cython.void:
    """The jobs of the linked list from node ``x``, in order, into ``out`` (room enough)."""
    i: i64 = 0
    while x >= 0:
        out[i] = nodes.nj[x]
        i += 1
        x = nodes.nn[x]


@cython.cfunc
def free_list(x: i64, nodes: Nodes, S: i64[:]) -> cython.void:
    """Give the nodes of the linked list from node ``x`` back to the pool."""
    while x >= 0:
        nodes.nfree[S[NFREE]] = x
        S[NFREE] += 1
        x = nodes.nn[x]


@cython.cfunc
@cython.exceptval(check=False)
def speedup(tables: efcore.Tables, m: i64, g: i64) -> f64:
    """Throughput of model row ``m`` on ``g`` GPUs ÷ on one (NaN where either is missing),
    as :meth:`.base.Setup.speedups` divides it."""
    if g >= tables.speed2.shape[1] or tables.speed2.shape[1] < 2:
        return NAN
    return tables.speed2[m, g] / tables.speed2[m, 1]


# -- a replay's state, and what both rounds do with it -----------------------------------------
@cython.cclass
class Replay:
    """What both rounds keep of a replay: the cluster and the jobs (copied from
    :class:`Cluster` and :class:`Jobs`, the model ``tables``), each job's state (GPUs,
    planned end and unaligned end, overhead to pay, whether its GPU set is cached, status,
    sort key), the job lists (``pending``, ``runnable``; lengths in ``S``) and buffers of
    jobs (``scratch``, ``starts``, ``ends``), the cached GPU sets (``seen``, stamped with
    ``generation``), rounds so far, the event list, the placement and its counters
    (``PS``), the record, the GPU series and round log, the planner and its buffers.
    :class:`Admit` and :class:`NoAdmit` add their own and run the rounds."""

    total: i64
    slot: f64
    per_node: i64
    restart_every: i64
    left: f64[:]
    deadline: f64[:]
    model: i64[:]
    tables: efcore.Tables
    cost_plain: f64[:]
    cost_restart: f64[:]
    cost_cached: f64[:]
    gpus: i64[:]
    end: f64[:]
    real_end: f64[:]
    overhead: f64[:]
    cached: u8[:]
    status: i64[:]
    keys: f64[:]
    pending: i64[:]
    runnable: i64[:]
    scratch: i64[:]
    starts: i64[:]
    ends: i64[:]
    seen: i64[:, :]
    generation: i64
    rounds: i64
    S: i64[:]
    PS: i64[:]
    ev: Events
    nodes: Nodes
    pl: Placement
    rec: Record
    marks: Marks
    log: Rounds
    planner: efcore.Planner
    buf: Buffers

    def __init__(self, jobs: Jobs, cluster: Cluster, tables: efcore.Tables, rec: Record) -> None:
        n = jobs.left.shape[0]
        self.total, self.slot, self.per_node = cluster.total, cluster.slot, cluster.per_node
        self.restart_every = cluster.restart_every
        self.left, self.deadline, self.model = jobs.left, jobs.deadline, jobs.model
        self.tables = tables
        self.cost_plain, self.cost_restart = cluster.cost_plain, cluster.cost_restart
        self.cost_cached = cluster.cost_cached
        self.gpus, self.status = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.end, self.real_end, self.overhead = np.zeros(n), np.zeros(n), np.zeros(n)
        self.cached = np.zeros(n, np.bool_)
        self.keys = np.zeros(n)
        self.pending, self.runnable, self.scratch, self.starts = (
            np.empty(max(n, 1), np.int64) for _ in range(4))
        self.ends = np.empty(n + 16, np.int64)
        self.generation, self.rounds = 1, 0
        self.S = np.zeros(9, np.int64)
        self.ev, self.nodes = arrivals(jobs.etimes, jobs.eptr, jobs.ejobs, n, self.S)
        self.PS = np.zeros(6, np.int64)
        self.PS[NODES] = cluster.nodes
        self.rec = rec
        self.marks = Marks(np.empty(1024), np.empty(1024, np.int64))
        self.log = Rounds(np.empty((2, 1024)))
        self.planner = efcore.Planner(n, tables, self.total, self.slot)
        self.buf = Buffers(n)

    def results(self) -> tuple:
        """``(times, allocated, rounds)``: the GPU series and the round log (time, Σ speedup)."""
        n: i64 = self.S[NMARK]
        return (np.asarray(self.marks.times_owner)[:n], np.asarray(self.marks.allocated_owner)[:n],
                np.asarray(self.log.owner)[:, : self.S[NROUND]])

    @cython.cfunc
    def grow(self, need: i64) -> cython.void:
        """Room for a round: ``need`` events and list nodes, 3n points of the GPU series."""
        S: i64[:] = self.S
        n: i64 = self.left.shape[0]
        size: i64
        if S[EFREE] < need:
            self.ev = grown_events(self.ev, S, need)
        if S[NFREE] < need:
            self.nodes = grown_nodes(self.nodes, S, need)
        if S[NMARK] + 3 * n + 8 > self.marks.times.shape[0]:
            size = 2 * self.marks.times.shape[0] + 3 * n + 8
            grown = Marks(np.empty(size), np.empty(size, np.int64))
            grown.times[: S[NMARK]] = self.marks.times[: S[NMARK]]
            grown.allocated[: S[NMARK]] = self.marks.allocated[: S[NMARK]]
            self.marks = grown

    @cython.cfunc
    def by_deadline(self, jobs: i64[:], n: i64) -> cython.void:
        """``buf.order[:n]``: ``jobs[:n]`` stably sorted by deadline (``sorted(key=deadline)``)."""
        i: i64
        buf: Buffers = self.buf
        for i in range(n):
            buf.order[i] = jobs[i]
        mergesort.sort(buf.order, n, buf.spare, mergesort.by_key(self.deadline))

    @cython.cfunc
    @cython.exceptval(-1)
    def estimate_in_order(self, now: f64, m: i64, stop_on_miss: cython.bint) -> i64:
        """:func:`.efcore.estimate` of the jobs ``buf.order[:m]``, in that order."""
        i: i64
        j: i64
        buf: Buffers = self.buf
        for i in range(m):
            j = buf.order[i]
            buf.e_left[i] = self.left[j]
            buf.e_deadline[i] = self.deadline[j]
            buf.e_model[i] = self.model[j]
        return efcore.estimate(now, buf.e_left[:m], buf.e_deadline[:m], buf.e_model[:m],
                               stop_on_miss, self.planner)

    @cython.cfunc
    def hand_out(self, now: f64, reprice_all: cython.bint) -> f64:
        """:func:`.efcore.scale_up` of the runnable jobs, in their order (``buf.index``), on
        the plans the last estimate left; the first planned change after now."""
        p: i64
        j: i64
        m: i64 = self.S[NRUNNABLE]
        buf: Buffers = self.buf
        for p in range(m):
            j = self.runnable[p]
            buf.index[p] = j
            buf.g_gpus[p] = self.gpus[j]
            buf.g_left[p] = self.left[j]
            buf.g_deadline[p] = self.deadline[j]
            buf.g_model[p] = self.model[j]
            buf.g_end[p] = self.end[j]
        return efcore.scale_up(now, reprice_all, buf.g_gpus[:m], buf.g_left[:m],
                               buf.g_deadline[:m], buf.g_model[:m], buf.g_end[:m],
                               self.planner)

    @cython.cfunc
    def log_round(self, now: f64, value: f64) -> cython.void:
        """Append round (``now``, ``value``) to the log (amortised: it doubles when full)."""
        n: i64 = self.S[NROUND]
        if n == self.log.log.shape[1]:
            grown = np.empty((2, 2 * n + 64))
            grown[:, :n] = self.log.owner[:, :n]
            self.log = Rounds(grown)
        self.log.log[0, n] = now
        self.log.log[1, n] = value
        self.S[NROUND] = n + 1


# -- ElasticFlow's round (the artifact's ``ef-accessctrl``) ------------------------------------
@cython.cclass
class Admit(Replay):
    """One replay of ElasticFlow's rounds: admission control, planning, scale-up. Besides
    the :class:`Replay`, per job: when it finished ahead of its plan (``done_at``),
    whether it was laid on nodes last round (``placed``), its end before this round's
    plans (``old_end``), whether it is best-effort (waits when its arrival is declined);
    and whether every job is re-priced after each scaling step (``reprice_all``)."""

    done_at: f64[:]
    placed: u8[:]
    old_end: f64[:]
    best_effort: u8[:]
    reprice_all: cython.bint

    def __init__(self, jobs: Jobs, cluster: Cluster, tables: efcore.Tables, rec: Record,
                 reprice_all: cython.bint) -> None:
        Replay.__init__(self, jobs, cluster, tables, rec)
        n = jobs.left.shape[0]
        self.left = np.array(jobs.left, np.float64)  # its own: iterations are done here
        self.best_effort, self.reprice_all = jobs.best_effort, reprice_all
        self.done_at = np.full(n, np.nan)
        self.placed = np.zeros(n, np.bool_)
        self.old_end = np.zeros(n)
        # placement (rebuilt every round) and the cached GPU sets: (rank, gpus) seen
        pool = max(cluster.nodes, 1)
        self.pl = Placement(pool, n, n, pool, cluster.per_switch,
                            -(-pool // cluster.per_switch))
        self.PS[FREE_NODES] = cluster.nodes
        self.PS[PER_SWITCH] = cluster.per_switch
        self.seen = np.zeros((self.total, self.total + 1), np.int64)

    def run(self) -> None:
        """Replay every round, filling the record (see :meth:`Replay.results` for the rest)."""
        S: i64[:] = self.S
        k: i64
        ns: i64
        nd: i64
        first_change: f64
        nxt: f64
        restart: cython.bint
        n: i64 = self.left.shape[0]
        efcore.estimate(0.0, self.left[:0], self.deadline[:0], self.model[:0], False,
                        self.planner)
        step: f64 = 0.0
        if S[NE] == 0:
            return
        now: f64 = first_time(self.ev, S)
        while S[NE] or S[NPEND] or S[NRUN]:
            # a round adds at most 5n + 1 events and list nodes: up to n end moves in each
            # of progress, handle (arrivals included), scale-up and overhead, n starts, a
            # wake-up
            self.grow(5 * n + 8)
            self.progress(now, step)
            k = find_event(self.ev.et, S[NE], now)
            if k >= 0:
                ns, nd = take_event(k, self.ev, self.nodes, S, self.starts, self.ends)
                if not S[NPEND] and not S[NRUN] and ns == 0 and nd == 0:
                    if S[NE] == 0:
                        break
                    now = first_time(self.ev, S)
                    step = 0.0
                    continue
                self.handle(now, ns, nd)
            self.start_planned(now)
            first_change = self.scale_up(now)
            self.place(now)
            self.log_efficiency(now)
            if first_change < INF and (S[NE] == 0 or first_change < first_time(self.ev, S)):
                event_at(first_change, self.ev, S)
            if S[NE] == 0:
                break
            # charge this round's restarts and push planned ends back by them
            restart = (self.restart_every > 0 and self.rounds > 0
                       and self.rounds % self.restart_every == 0)
            self.rounds += 1
            if restart:
                self.generation += 1
            self.charge_overhead(restart)
            merge_slot(now, self.slot, self.ev, self.nodes, S)
            nxt = first_time(self.ev, S)
            step = nxt - now
            now = nxt

    @cython.cfunc
    def progress(self, now: f64, step: f64) -> cython.void:
        """Advance running jobs by ``step`` seconds; a job ahead of its plan ends at this event."""
        i: i64
        j: i64
        g: i64
        run: f64
        lost: f64
        sp: f64
        done: f64
        fin: f64
        end: f64[:] = self.end
        real_end: f64[:] = self.real_end
        left: f64[:] = self.left
        overhead: f64[:] = self.overhead
        for i in range(self.S[NRUNNABLE]):
            j = self.runnable[i]
            g = self.gpus[j]
            if not g:
                continue
            run = step - (now - real_end[j] if now > real_end[j] else 0.0)
            lost = overhead[j]
            run = 0.0 if run < lost else run - lost
            sp = efcore.rate(self.tables, self.model[j], g)
            done = run * sp
            if left[j] <= done and end[j] > now:
                fin = now - step + ceil(left[j] / sp)
                done = (end[j] - now + step) * sp
                move_end(j, end[j], now, self.ev, self.nodes, self.S)
                end[j] = fin
                self.done_at[j] = fin
            left[j] -= done
            overhead[j] = 0.0

    @cython.cfunc
    def handle(self, now: f64, ns: i64, nd: i64) -> cython.void:
        """End the ``nd`` jobs of ``ends``, admit or decline the ``ns`` arrivals of
        ``starts`` (best-effort ones wait when their event is declined), and re-plan every
        runnable job (the plans are left in the planner). Ending jobs leave their node
        groups first, then the runnable jobs in deadline order, as the reference releases
        them (see :func:`free_node`)."""
        i: i64
        j: i64
        p: i64
        r: i64
        e: f64
        fin: f64
        ok: i64
        S: i64[:] = self.S
        rec: Record = self.rec
        planner: efcore.Planner = self.planner
        runnable: i64[:] = self.runnable
        starts: i64[:] = self.starts
        end: f64[:] = self.end
        real_end: f64[:] = self.real_end
        old_end: f64[:] = self.old_end
        for i in range(nd):
            j = self.ends[i]
            if self.placed[j]:
                release_job(j, self.pl, self.PS)
                remove_from(runnable, S, NRUNNABLE, j)
                S[NRUN] -= 1
                self.status[j] = DONE
                fin = self.done_at[j] if self.done_at[j] == self.done_at[j] else real_end[j]
                set_gpus(j, now, 0, rec, self.marks, S)
                rec.finish[j] = fin
                rec.logged_end[j] = end[j]
                rec.met[j] = real_end[j] <= self.deadline[j]
        for i in range(S[NRUNNABLE]):
            self.placed[runnable[i]] = False
            old_end[runnable[i]] = end[runnable[i]]
        if ns:
            r = S[NRUNNABLE]
            for i in range(ns):
                runnable[r + i] = starts[i]  # for the sort only: not runnable until admitted
            self.by_deadline(runnable, r + ns)
            self.release_in_order(r + ns)
            ok = self.estimate_in_order(now, r + ns, True)
            if ok:
                for i in range(ns):
                    self.enqueue(starts[i])
            else:  # every arrival is declined, but best-effort ones wait (no deadline)
                for i in range(ns):
                    j = starts[i]
                    if self.best_effort[j]:
                        self.enqueue(j)
                    else:
                        self.status[j] = DECLINED
                        rec.admitted[j] = False
                self.by_deadline(runnable, S[NRUNNABLE])
                self.estimate_in_order(now, S[NRUNNABLE], False)
        else:
            self.by_deadline(runnable, S[NRUNNABLE])
            self.release_in_order(S[NRUNNABLE])
            self.estimate_in_order(now, S[NRUNNABLE], False)
        for i in range(S[NRUNNABLE]):  # the runnable jobs just planned, in deadline order
            runnable[i] = self.buf.order[i]
        for p in range(S[NRUNNABLE]):
            j = runnable[p]
            self.gpus[j] = planner.ag_all[planner.ptr[p]]
            e = planner.end[p]
            move_end(j, old_end[j], e, self.ev, self.nodes, S)
            end[j] = e
            real_end[j] = planner.real_end[p]

    @cython.cfunc
    def release_in_order(self, m: i64) -> cython.void:
        """Release the jobs ``buf.order[:m]`` from their groups, in that (deadline) order."""
        i: i64
        for i in range(m):
            release_job(self.buf.order[i], self.pl, self.PS)

    @cython.cfunc
    def enqueue(self, j: i64) -> cython.void:
        """An admitted arrival waits, runnable, for the plans to give it GPUs."""
        S: i64[:] = self.S
        self.old_end[j] = 0.0
        self.status[j] = PENDING
        self.pending[S[NPEND]] = j
        S[NPEND] += 1
        self.runnable[S[NRUNNABLE]] = j
        S[NRUNNABLE] += 1

    @cython.cfunc
    def start_planned(self, now: f64) -> cython.void:
        """Start the pending jobs that the round's plans gave GPUs; their ends become events."""
        j: i64
        i: i64 = 0
        S: i64[:] = self.S
        start: f64[:] = self.rec.start
        while i < S[NPEND]:
            j = self.pending[i]
            if self.gpus[j] > 0:
                remove_from(self.pending, S, NPEND, j)
                self.status[j] = RUNNING
                S[NRUN] += 1
                if start[j] != start[j]:
                    start[j] = now
                add_end(j, self.end[j], self.ev, self.nodes, S)
            else:
                i += 1

    @cython.cfunc
    def scale_up(self, now: f64) -> f64:
        """Hand out the free GPUs (:meth:`Replay.hand_out`); the first planned change after
        now."""
        p: i64
        j: i64
        e: f64
        S: i64[:] = self.S
        m: i64 = S[NRUNNABLE]
        planner: efcore.Planner = self.planner
        index: i64[:] = self.buf.index
        start: f64[:] = self.rec.start
        end: f64[:] = self.end
        first_change: f64 = self.hand_out(now, self.reprice_all)
        for p in range(m):
            j = index[p]
            self.gpus[j] = planner.gpus[p]
            if planner.started[p] and self.status[j] == PENDING:
                remove_from(self.pending, S, NPEND, j)
                self.status[j] = RUNNING
                S[NRUN] += 1
                if start[j] != start[j]:
                    start[j] = now
            e = planner.up_end[p]
            if e != end[j]:
                move_end(j, end[j], e, self.ev, self.nodes, S)
                end[j] = e
            self.real_end[j] = planner.up_real[p]
        for p in range(m):
            self.runnable[p] = index[planner.order[p]]
        return first_change

    @cython.cfunc
    def place(self, now: f64) -> cython.void:
        """Record the round's allocations and lay the jobs on nodes, largest first.

        A job's GPU set (first rank, count) is cached if ``seen`` stamped it with
        this ``generation`` (the periodic restart starts a new one).
        """
        i: i64
        j: i64
        g: i64
        r: i64
        S: i64[:] = self.S
        PS: i64[:] = self.PS
        pl: Placement = self.pl
        runnable: i64[:] = self.runnable
        gpus: i64[:] = self.gpus
        keys: f64[:] = self.keys
        held: i64[:] = self.scratch
        n: i64 = S[NRUNNABLE]
        for i in range(n):  # handle() released them all before it planned: none is left
            release_job(runnable[i], pl, PS)
        for i in range(n):  # largest first, stably, as Python's sort by -gpus
            keys[runnable[i]] = -float(gpus[runnable[i]])
        mergesort.sort(runnable, n, self.buf.spare, mergesort.by_key(keys))
        pl.nfiles[:] = 0  # no groups yet: the groups are made afresh every round
        PS[GROUPS] = 0
        m: i64 = 0
        for i in range(n):
            j = runnable[i]
            g = gpus[j]
            set_gpus(j, now, g, self.rec, self.marks, S)
            if g:
                if not place_job(j, g, pl, self.per_node, PS):
                    raise RuntimeError("no room for a job on its GPUs")
                held[m] = j
                m += 1
                self.placed[j] = True
        for i in range(m):
            j = held[i]
            r = first_rank(j, pl, self.per_node, gpus)
            self.cached[j] = self.seen[r, gpus[j]] == self.generation
            self.seen[r, gpus[j]] = self.generation

    @cython.cfunc
    def log_efficiency(self, now: f64) -> cython.void:
        """Log the round: ``now`` and Σ speedup (throughput on its GPUs ÷ on one) of the jobs
        holding GPUs, the artifact's cluster efficiency before ÷ GPUs."""
        i: i64
        j: i64
        total: f64 = 0.0
        for i in range(self.S[NRUNNABLE]):
            j = self.runnable[i]
            if self.gpus[j]:
                total += (efcore.rate(self.tables, self.model[j], self.gpus[j])
                          / efcore.rate(self.tables, self.model[j], 1))
        self.log_round(now, total)

    @cython.cfunc
    def charge_overhead(self, restart: cython.bint) -> cython.void:
        """Price this round's (re)starts and push the planned ends back by them."""
        i: i64
        j: i64
        g: i64
        cost: f64
        end: f64[:] = self.end
        for i in range(self.S[NRUNNABLE]):
            j = self.runnable[i]
            g = self.gpus[j]
            if g:
                if self.cached[j]:
                    cost = self.cost_cached[g]
                elif restart:
                    cost = self.cost_restart[g]
                else:
                    cost = self.cost_plain[g]
                self.overhead[j] = cost
                move_end(j, end[j], end[j] + cost, self.ev, self.nodes, self.S)
                end[j] += cost


# -- the round without admission control (the artifact's ``ef``, see :mod:`.efnoadmit`) ----
@cython.cclass
class NoAdmit(Replay):
    """One replay of the artifact's ``ef`` round: besides the :class:`Replay`, the running
    jobs (``running``, like ``pending`` in insertion order; ``runnable`` as the last
    scale-up left it), each job's place among the runnable ones when planned
    (``position``) and its next planned change of GPUs (``change``), and each size class's
    index (``size_class``). The placement is made fresh every round. Each method is one
    step of the round, as :mod:`.efnoadmit` describes it."""

    running: i64[:]
    position: i64[:]
    change: f64[:]
    size_class: i64[:]

    def __init__(self, jobs: Jobs, cluster: Cluster, tables: efcore.Tables,
                 rec: Record) -> None:
        Replay.__init__(self, jobs, cluster, tables, rec)
        n = jobs.left.shape[0]
        per_node = cluster.per_node
        self.position = np.zeros(n, np.int64)
        self.change = np.full(n, math.inf)
        self.running = np.empty(max(n, 1), np.int64)
        # a GPU set is (first rank, size class): place_job accepts only the classes
        self.seen = np.zeros((max(cluster.nodes * per_node, 1), SIZES_DESC.shape[0]), np.int64)
        self.size_class = np.full(SIZES_DESC[0] + 1, -1, np.int64)
        for k in range(SIZES_DESC.shape[0]):
            self.size_class[SIZES_DESC[k]] = k
        pool = max(cluster.nodes, 1)
        # a group spans the nodes of its first job (at most the largest size class) and
        # holds at most a job per GPU of them
        span = min(pool, -(-SIZES_DESC[0] // per_node))
        self.pl = Placement(pool, n, max(min(n, span * per_node), 1), span, 1, pool)
        self.PS[PER_SWITCH] = 1

    def run(self) -> i64:
        """Replay every round; -1, or the job that found no room on the nodes (the
        artifact asserts there), the replay stopped."""
        S: i64[:] = self.S
        k: i64
        ns: i64
        nd: i64
        failed: i64
        nxt: f64
        n: i64 = self.left.shape[0]
        if S[NE] == 0:
            return -1
        now: f64 = first_time(self.ev, S)
        step: f64 = 0.0
        while S[NE]:
            # room for up to 7n + GPUs events and list nodes: n end moves each in progress,
            # planning and overheads, n starts, 2n wake-ups, a step per GPU or job in the
            # scale-up
            self.grow(7 * n + self.total + 16)
            self.progress(now, step)
            k = find_event(self.ev.et, S[NE], now)
            if k < 0:
                break  # nothing due now: only waiting jobs without a wake-up (the artifact fails)
            ns, nd = self.peek(k)
            self.finish(nd, now)
            self.arrive(ns)
            self.plan(now)
            k = find_event(self.ev.et, S[NE], now)
            if k >= 0:  # the plans may have moved ends to now: they go with the event
                self.drop(k)
            self.start_planned(now)
            self.scale_up(now)
            self.wake_running()
            failed = self.place(now)
            if failed >= 0:
                return failed
            if S[NE] == 0:
                break
            self.charge_overhead()
            merge_slot(now, self.slot, self.ev, self.nodes, S)
            nxt = first_time(self.ev, S)
            step = float(trunc(nxt - now)) + 0.0  # whole seconds, as the artifact's int()
            now = nxt
        return -1

    def gpus_of(self, job: i64) -> i64:
        """The GPUs ``job`` holds now (for the message when it found no room)."""
        return self.gpus[job]

    @cython.cfunc
    def progress(self, now: f64, step: f64) -> cython.void:
        """Advance every job holding GPUs by ``step`` seconds (up to its unaligned end if
        that came first) less its overhead; a job ahead of its plan ends at this event."""
        i: i64
        j: i64
        g: i64
        until: f64
        run: f64
        sp: f64
        done: f64
        fin: f64
        end: f64[:] = self.end
        left: f64[:] = self.left
        overhead: f64[:] = self.overhead
        for i in range(self.S[NRUNNABLE]):
            j = self.runnable[i]
            g = self.gpus[j]
            if not g:
                continue
            until = self.real_end[j]
            run = step - (now - until) if now > until else step
            run = 0.0 if run < overhead[j] else run - overhead[j]
            sp = efcore.rate(self.tables, self.model[j], g)
            done = run * sp
            if left[j] <= done and end[j] > now:
                fin = now - step + ceil(left[j] / sp)
                done = (end[j] - now + step) * sp
                move_end(j, end[j], now, self.ev, self.nodes, self.S)
                end[j] = fin
            left[j] -= done
            overhead[j] = 0.0

    @cython.cfunc
    def peek(self, k: i64) -> tuple[i64, i64]:
        """The jobs arriving and ending in the event at position ``k`` (into ``starts`` and
        ``ends``), the event left in place. Returns their counts."""
        e: i64 = self.ev.eid[k]
        ns: i64 = list_length(self.ev.sh[e], self.nodes)
        nd: i64 = list_length(self.ev.dh[e], self.nodes)
        if nd > self.ends.shape[0]:  # merged events can list a job twice
            self.ends = np.empty(2 * nd, np.int64)
        copy_list(self.ev.sh[e], self.nodes, self.starts)
        copy_list(self.ev.dh[e], self.nodes, self.ends)
        return ns, nd

    @cython.cfunc
    def drop(self, k: i64) -> cython.void:
        """Delete the event at position ``k`` and its lists."""
        e: i64 = self.ev.eid[k]
        free_list(self.ev.sh[e], self.nodes, self.S)
        free_list(self.ev.dh[e], self.nodes, self.S)
        drop_event(k, self.ev, self.S)

    @cython.cfunc
    def finish(self, nd: i64, now: f64) -> cython.void:
        """Every job ending now ends at its planned end; on time if that meets its deadline."""
        i: i64
        j: i64
        S: i64[:] = self.S
        for i in range(nd):
            j = self.ends[i]
            discard(self.running, S, NRUN, j)
            discard(self.runnable, S, NRUNNABLE, j)
            discard(self.pending, S, NPEND, j)
            self.status[j] = DONE
            self.gpus[j] = 0
            set_gpus(j, now, 0, self.rec, self.marks, S)
            self.rec.finish[j] = self.end[j]
            self.rec.met[j] = self.end[j] <= self.deadline[j]

    @cython.cfunc
    def arrive(self, ns: i64) -> cython.void:
        """The arrivals wait, runnable (every arrival is accepted)."""
        i: i64
        j: i64
        S: i64[:] = self.S
        for i in range(ns):
            j = self.starts[i]
            self.status[j] = PENDING
            self.pending[S[NPEND]] = j
            S[NPEND] += 1
            self.runnable[S[NRUNNABLE]] = j
            S[NRUNNABLE] += 1

    @cython.cfunc
    def plan(self, now: f64) -> cython.void:
        """Plan every runnable job in deadline order; the plans' GPUs now and ends apply."""
        p: i64
        j: i64
        m: i64 = self.S[NRUNNABLE]
        buf: Buffers = self.buf
        planner: efcore.Planner = self.planner
        self.by_deadline(self.runnable, m)
        for p in range(m):
            self.runnable[p] = buf.order[p]
            self.position[buf.order[p]] = p
        self.estimate_in_order(now, m, False)
        for p in range(m):
            j = self.runnable[p]
            self.gpus[j] = planner.ag_all[planner.ptr[p]]
            move_end(j, self.end[j], planner.end[p], self.ev, self.nodes, self.S)
            self.end[j] = planner.end[p]
            self.real_end[j] = planner.real_end[p]

    @cython.cfunc
    def start(self, j: i64, now: f64) -> cython.void:
        """A waiting job starts (the artifact's ``remove_from_pending``)."""
        S: i64[:] = self.S
        remove_from(self.pending, S, NPEND, j)
        self.running[S[NRUN]] = j
        S[NRUN] += 1
        self.status[j] = RUNNING
        if self.rec.start[j] != self.rec.start[j]:
            self.rec.start[j] = now

    @cython.cfunc
    def start_planned(self, now: f64) -> cython.void:
        """Waiting jobs with GPUs now start; those planned to start later wake a round then."""
        i: i64
        j: i64
        p: i64
        x: i64
        first: f64
        count: i64 = 0
        planner: efcore.Planner = self.planner
        for i in range(self.S[NPEND]):
            j = self.pending[i]
            p = self.position[j]
            first = NAN
            for x in range(planner.ptr[p], planner.ptr[p + 1]):
                if planner.ag_all[x] > 0:
                    first = planner.at_all[x]
                    break
            if first == first and first > now:
                event_at(first, self.ev, self.S)
            elif self.gpus[j] > 0:
                self.scratch[count] = j
                count += 1
        for i in range(count):
            j = self.scratch[i]
            self.start(j, now)
            add_end(j, self.end[j], self.ev, self.nodes, self.S)

    @cython.cfunc
    def scale_up(self, now: f64) -> cython.void:
        """Hand out the free GPUs (:meth:`Replay.hand_out`), moving a job's end at each of
        its steps (a wake-up a step passes can vanish); note each job's next planned change."""
        p: i64
        s: i64
        j: i64
        m: i64 = self.S[NRUNNABLE]
        planner: efcore.Planner = self.planner
        index: i64[:] = self.buf.index
        self.hand_out(now, True)
        for s in range(planner.nsteps):
            j = index[planner.step_job[s]]
            move_end(j, self.end[j], planner.step_end[s], self.ev, self.nodes, self.S)
            self.end[j] = planner.step_end[s]
        for p in range(m):
            j = index[p]
            self.gpus[j] = planner.gpus[p]
            if planner.started[p] and self.status[j] != RUNNING:
                self.start(j, now)
            self.real_end[j] = planner.up_real[p]
            self.change[j] = planner.next_change[p]
        for p in range(m):
            self.runnable[p] = index[planner.order[p]]

    @cython.cfunc
    def wake_running(self) -> cython.void:
        """Every running job wakes a round at its next planned change of GPUs."""
        i: i64
        j: i64
        for i in range(self.S[NRUN]):
            j = self.running[i]
            if self.change[j] < INF:
                event_at(self.change[j], self.ev, self.S)

    @cython.cfunc
    def place(self, now: f64) -> i64:
        """Lay the running jobs holding GPUs on fresh nodes in start order, those of a node
        or more first, smaller ones by size; note which GPU sets are cached; record the
        allocations and log the round. Returns -1, or the job that found no room."""
        i: i64
        j: i64
        g: i64
        r: i64
        count: i64 = 0
        S: i64[:] = self.S
        PS: i64[:] = self.PS
        held: i64[:] = self.scratch
        for i in range(S[NRUN]):
            j = self.running[i]
            g = self.gpus[j]
            if g > 0:
                held[count] = j
                count += 1
                self.keys[j] = -INF if g >= self.per_node else -float(g)
        mergesort.sort(held, count, self.buf.spare, mergesort.by_key(self.keys))
        self.pl.nfiles[:] = 0
        PS[GROUPS] = 0
        PS[NEXT_NODE] = 0
        PS[QUEUED] = 0
        PS[FREE_NODES] = PS[NODES]
        for i in range(count):
            j = held[i]
            if not place_job(j, self.gpus[j], self.pl, self.per_node, PS):
                return j
        for i in range(count):
            j = held[i]
            r = first_rank(j, self.pl, self.per_node, self.gpus)
            g = self.size_class[self.gpus[j]]  # its size class (see __init__)
            self.cached[j] = self.seen[r, g] == self.generation
            self.seen[r, g] = self.generation
        for i in range(S[NRUNNABLE]):
            j = self.runnable[i]
            set_gpus(j, now, self.gpus[j] if self.status[j] == RUNNING else 0, self.rec,
                     self.marks, S)
        self.log_speedups(now)
        return -1

    @cython.cfunc
    def log_speedups(self, now: f64) -> cython.void:
        """Log the round: ``now`` and Σ speedup of the jobs holding GPUs, in job order
        (what :meth:`.results.Recorder.round` sums before it divides by the GPUs)."""
        j: i64
        held: i64[:] = self.rec.held
        total: f64 = 0.0
        for j in range(held.shape[0]):
            if held[j]:
                total += speedup(self.tables, self.model[j], held[j])
        self.log_round(now, total)

    @cython.cfunc
    def charge_overhead(self) -> cython.void:
        """This round's (re)start overhead for every running job with GPUs; their planned
        ends move back by it. A periodic restart forgets the cached GPU sets first."""
        i: i64
        j: i64
        g: i64
        old: f64
        every: i64 = self.restart_every
        restart: cython.bint = every > 0 and self.rounds > 0 and self.rounds % every == 0
        self.rounds += 1
        if restart:
            self.generation += 1
        for i in range(self.S[NRUN]):
            j = self.running[i]
            g = self.gpus[j]
            if g > 0:
                if self.cached[j]:
                    self.overhead[j] = self.cost_cached[g]
                elif restart:
                    self.overhead[j] = self.cost_restart[g]
                else:
                    self.overhead[j] = self.cost_plain[g]
                old = self.end[j]
                self.end[j] = old + self.overhead[j]
                move_end(j, old, self.end[j], self.ev, self.nodes, self.S)
            else:
                self.overhead[j] = 0.0


def arrivals(etimes: f64[:], eptr: i64[:], ejobs: i64[:], n: i64, S: i64[:]) -> tuple:
    """The event list and list-node pool holding the arrivals (``etimes``, jobs
    ``ejobs[eptr[i]:eptr[i+1]]``) with room for ``n`` jobs' ends."""
    i: i64
    k: i64
    e: i64
    x: i64
    cap_e: i64 = etimes.shape[0] + 64
    ev = Events(np.empty(cap_e), np.empty(cap_e, np.int64), np.empty(cap_e, np.int64),
                np.empty(cap_e, np.int64), np.empty(cap_e, np.int64), np.empty(cap_e, np.int64),
                np.arange(cap_e - 1, -1, -1).astype(np.int64))  # fmt: skip
    S[EFREE] = cap_e
    cap_n: i64 = n + 64
    nodes = Nodes(np.empty(cap_n, np.int64), np.empty(cap_n, np.int64),
                  np.arange(cap_n - 1, -1, -1).astype(np.int64))  # fmt: skip
    S[NFREE] = cap_n
    for i in range(etimes.shape[0] - 1, -1, -1):  # latest first: each goes to the end
        e = event_at(etimes[i], ev, S)
        for k in range(eptr[i], eptr[i + 1]):
            S[NFREE] -= 1
            x = nodes.nfree[S[NFREE]]
            nodes.nj[x] = ejobs[k]
            nodes.nn[x] = -1
            if ev.st[e] < 0:
                ev.sh[e] = x
            else:
                nodes.nn[ev.st[e]] = x
            ev.st[e] = x
    return ev, nodes
