"""The compiled core of the ElasticFlow replay: planning on a free-GPU timeline and scale-up.

Why compiled. The artifact prices every runnable job with a full re-plan after
every single scaling step, and the exact replay must do the same: on
cluster10 that is ~9,000 steps and ~50,000 plans, each a few dozen
interpreted loop iterations. No reordering of that work removes it (a price
depends on where the other jobs' plans put their steps, which every step
moves), so the loops run as machine code: this file is Cython's pure Python
mode, compiled when mltraces is installed (see :mod:`.native`); where it
could not be, the same functions run as plain Python, with the same results,
only slower.

What it costs in machine code. A plan is a few hundred nanoseconds of
arithmetic; what used to dominate was bookkeeping around it: fresh arrays
per plan, lists of arrays, reference counts. So a round's plans write into
one workspace of 2-D rows (see :class:`Space`), the small helpers are C
functions the compiler inlines, and the arrays that travel together are
attributes of small classes (:class:`Tables`, :class:`Current`,
:class:`Offers`, :class:`Prices`, :class:`Work`, :class:`Merged`) that
compiled code reads in place. :mod:`.efrounds` calls :func:`bisect_left`,
:func:`rate`, :func:`estimate` and :func:`scale_up` as C functions: their
signatures are also declared in ``efcore.pxd``, which must change with them.

Conventions. A timeline is ``(times, free, n)``: the first ``n`` entries of a
float64 and an int64 array (arrays may be longer). An allocation is
``(at, ag, na)`` the same way: the job holds ``ag[k]`` GPUs from ``at[k]``.
A job's scaling model is row ``m`` of the model tables: ``speed[m, g]``
(iterations per second on ``g`` GPUs, NaN when ``g`` is not allowed),
``levels[m, :nlev[m]]`` (its scaling steps up to its cap), ``cap[m]`` and
``fit[fitrow[m], x]`` (the largest level that fits in ``x`` free GPUs).

Every arithmetic step is the one the pure-Python planner did, in the same
order, on IEEE doubles, so times and iteration counts are bit-identical.
Where that planner relied on Python semantics that arrays do not have (a
negative index wrapping, a missing key raising), the helpers below do the
same explicitly.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import cython
except ImportError:  # installed without its compiled extensions: run as Python
    from mltraces.scheduling import cyshim as cython

if cython.compiled:
    from cython.cimports.libc.math import ceil, floor, fmod, isnan
else:
    from math import ceil, floor, fmod, isnan

i64 = cython.typedef(cython.longlong)
f64 = cython.typedef(cython.double)
u8 = cython.typedef(cython.uchar)  # numpy's bool arrays

INF = cython.declare(f64, math.inf)
NAN = cython.declare(f64, math.nan)
NONE = cython.declare(i64, -(2**62))  # an unset GPU count (the reference's undefined variable)


# -- small helpers -------------------------------------------------------------------------
@cython.cfunc
@cython.inline
def align(origin: f64, time: f64, slot: f64) -> f64:
    """The first slot boundary ``origin + k·slot`` at or after ``time`` (Python's divmod)."""
    x: f64 = time - origin
    mod: f64 = fmod(x, slot)
    div: f64 = (x - mod) / slot
    if mod != 0.0 and (slot < 0) != (mod < 0):
        mod += slot
        div -= 1.0
    steps: f64 = 0.0
    if div != 0.0:
        steps = floor(div)
        if div - steps > 0.5:
            steps += 1.0
    if mod > 0:
        steps += 1.0
    return origin + steps * slot


@cython.cfunc
@cython.inline
def bisect_left(a: f64[:], n: i64, x: f64) -> i64:
    lo: i64 = 0
    hi: i64 = n
    mid: i64
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.cfunc
@cython.inline
def bisect_right(a: f64[:], n: i64, x: f64) -> i64:
    lo: i64 = 0
    hi: i64 = n
    mid: i64
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@cython.cfunc
@cython.inline
def step_index(a: f64[:], n: i64, x: f64) -> i64:
    """Index of the step starting exactly at ``x``, or -1."""
    i: i64 = bisect_left(a, n, x)
    if i < n and a[i] == x:
        return i
    return -1


@cython.cfunc
@cython.inline
def wrap(i: i64, n: i64) -> i64:
    """A Python list index: -1 is the last element."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("timeline index out of range")
    return i


@cython.cfunc
@cython.inline
def set_step(times: f64[:], free: i64[:], n: i64, time: f64, value: i64) -> i64:
    """Set the value from ``time`` on (insert a step or overwrite one); the new length.

    The arrays must have room for one more entry.
    """
    if value == NONE:
        raise TypeError("a timeline step without a value (the reference's unset variable)")
    k: i64
    i: i64 = bisect_left(times, n, time)
    if i < n and times[i] == time:
        free[i] = value
        return n
    for k in range(n, i, -1):
        times[k] = times[k - 1]
        free[k] = free[k - 1]
    times[i] = time
    free[i] = value
    return n + 1


@cython.cfunc
@cython.inline
def fit_of(fit2: i64[:, :], row: i64, x: i64) -> i64:
    """``fit2[row, x]`` with Python's indexing (negative wraps, too large raises)."""
    if x == NONE:
        raise TypeError("free GPUs unset")
    n: i64 = fit2.shape[1]
    if x < 0:
        x += n
    if x < 0 or x >= n:
        raise IndexError("more free GPUs than the cluster has")
    return fit2[row, x]


@cython.cfunc
@cython.inline
def rate(speed2: f64[:, :], m: i64, g: i64) -> f64:
    """Iterations per second of model row ``m`` on ``g`` GPUs; a count the profile lacks raises."""
    if g < 0 or g >= speed2.shape[1] or isnan(speed2[m, g]):
        raise KeyError("no throughput for this GPU count")
    return speed2[m, g]


@cython.cfunc
@cython.inline
def gpu_time(at: f64[:], ag: i64[:], na: i64, end: f64) -> f64:
    """GPU-seconds of an allocation held until ``end``."""
    total: f64 = 0.0
    k: i64
    for k in range(na - 1):
        total += ag[k] * (at[k + 1] - at[k])
    if na:
        total += ag[na - 1] * (end - at[na - 1])
    return total


@cython.cfunc
@cython.inline
def value_at(times: f64[:], free: i64[:], n: i64, time: f64, default: i64) -> i64:
    """Free GPUs at ``time`` (``default`` before the first step)."""
    i: i64 = bisect_right(times, n, time)
    return free[i - 1] if i else default


@cython.cfunc
@cython.inline
def hold(aval: i64[:], aset: u8[:], nf: i64[:], k: i64, gpus: i64) -> cython.void:
    """The plan holds ``gpus`` in the timeline's step ``k``: record it, take them off free."""
    aval[k] = gpus
    aset[k] = True
    nf[k] -= gpus


# -- one plan --------------------------------------------------------------------------------
# A plan writes into buffers its caller owns (a workspace reused for every plan of
# a round): ``nt``/``nf``/``aval``/``aset`` need room for n + 2 entries, ``at``/``ag``
# for n + 3, where n is the length of the timeline planned on.
@cython.cfunc
@cython.inline
def finish_plan(nt: f64[:], nf: i64[:], nn: i64, aval: i64[:], aset: u8[:], xt: f64, xv: i64,
                end_step: f64, end_value: i64, at: f64[:], ag: i64[:]) -> tuple[i64, i64]:
    """Collect the allocation steps (sorted, repeats dropped) and add the end step.

    ``xt``/``xv`` is an allocation step at a time that is not on the timeline
    (NaN: none); only a start that the timeline lost has one (the released
    timeline of a job holding more GPUs than were free, which the reference
    would have refused by an assertion). Writes the allocation to ``at``/``ag``
    and returns ``(n, na)``: the timeline's new length (not yet compacted, see
    :func:`compact`) and the allocation's.
    """
    na: i64 = 0
    last: i64 = -1
    k: i64
    pending: cython.bint = xt == xt
    for k in range(nn + 1):
        if pending and (k == nn or xt < nt[k]):
            pending = False
            if xv != last:
                at[na] = xt
                ag[na] = xv
                na += 1
                last = xv
        if k < nn and aset[k] and aval[k] != last:
            at[na] = nt[k]
            ag[na] = aval[k]
            na += 1
            last = aval[k]
    if end_step == end_step:  # not NaN: insert the end step
        nn = set_step(nt, nf, nn, end_step, end_value)
    return nn, na


@cython.cfunc
def compact(nt: f64[:], nf: i64[:], nn: i64, ct: f64[:], cf: i64[:]) -> i64:
    """Copy the timeline into ``ct``/``cf`` without repeated values; the new length.

    Kept apart from :func:`finish_plan` because most plans are only priced:
    their timeline is compacted only for the one a step chooses. ``ct`` may be
    ``nt`` (in place).
    """
    m: i64 = 0
    prev: i64 = -1
    k: i64
    for k in range(nn):
        if nf[k] != prev:
            ct[m] = nt[k]
            cf[m] = nf[k]
            m += 1
            prev = nf[k]
    return m


@cython.cfunc
def plan(times: f64[:], free: i64[:], n: i64, start: f64, left: f64, deadline: f64, m: i64,
         speed2: f64[:, :], levels2: i64[:, :], nlev: i64[:], fit2: i64[:, :], fitrow: i64[:],
         cap2: i64[:], total: i64, slot: f64, assign: i64, nt: f64[:], nf: i64[:],
         aval: i64[:], aset: u8[:], at: f64[:], ag: i64[:]) -> tuple[i64, i64, f64, f64]:
    """Plan a job from ``start`` backwards from its deadline on the timeline.

    With ``assign`` the job first holds that many GPUs until the timeline's
    next step (how a scale-up is priced), then is planned as usual. Writes the
    timeline with the plan to ``nt``/``nf`` and the allocation to ``at``/``ag``;
    returns ``(n, na, end, real_end)``.
    """
    fr: i64 = fitrow[m]
    cap: i64 = cap2[m]
    nl: i64 = nlev[m]
    k: i64
    i: i64
    u: i64
    q: i64
    g: i64
    p: f64
    t: f64
    got: i64
    until: f64
    gathered: f64
    gained: f64
    sp: f64
    nxt: i64
    future: f64
    real_end: f64
    end: f64
    back: i64
    na: i64
    ie: i64
    lo: i64
    hi: i64
    last_q: i64
    last_t: f64
    last_k: i64
    last_a: i64
    lk: i64
    nt[:n] = times[:n]
    nf[:n] = free[:n]
    nn: i64 = n
    for k in range(n + 2):
        aval[k] = 0
        aset[k] = False
    aligned: f64 = align(start, deadline, slot)
    carried: i64 = NONE  # the pre-job value the reference restores after a plan's end
    if aligned >= start and step_index(nt, nn, aligned) < 0:
        carried = nf[wrap(bisect_left(nt, nn, aligned) - 1, nn)]
        nn = set_step(nt, nf, nn, aligned, carried)
    i_start: i64 = step_index(nt, nn, start)
    xt: f64 = NAN  # the start's allocation when the timeline lacks the start
    xv: i64 = 0
    if i_start < 0:
        xt = start
    else:
        aset[i_start] = True
    event: f64 = start
    if assign:
        sp = rate(speed2, m, assign)
        nxt = bisect_right(times, n, start)
        future = times[nxt] if nxt < n else aligned
        if i_start < 0:
            xv = assign
        else:
            aval[i_start] = assign
        real_end = float(ceil(start + left / sp))
        end = align(start, real_end, slot)
        if future >= end and deadline >= real_end:
            back = NONE
            for u in range(n):
                if times[u] >= end:
                    break
                if times[u] >= start:
                    k = step_index(nt, nn, times[u])
                    back = nf[wrap(k, nn)]
                    nf[wrap(k, nn)] -= assign
            if start != end:
                nf[wrap(i_start, nn)] = free[0] - assign
            if step_index(times, n, end) < 0:
                if back == NONE:
                    raise TypeError("a timeline step without a value")
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, back, at, ag)
            else:
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, NAN, 0, at, ag)
            return nn, na, end, real_end
        left -= ((deadline if future == aligned else future) - start) * sp
        nf[wrap(i_start, nn)] -= assign
        event = future
        ie = step_index(nt, nn, event)
        if ie < 0:
            raise ValueError("a plan's first period must end on a step of the timeline")
        aval[ie] = 0
        aset[ie] = True
    lo = bisect_left(nt, nn, event)
    hi = bisect_left(nt, nn, aligned)
    for k in range(hi):
        aset[k] = True  # setdefault(t, 0): aval is 0 where unset
    # 1. the smallest count that, counted back from the deadline, is enough
    last_q = 0
    for i in range(nl):
        q = levels2[m, i]
        if q > total:
            break
        until = aligned
        gathered = 0.0
        for k in range(hi - 1, lo - 1, -1):
            p = nt[k]
            got = q if nf[k] >= q else min(q, fit_of(fit2, fr, nf[k]))
            if not got:
                until = p
                continue
            gathered += ((deadline if until == aligned else until) - p) * rate(speed2, m, got)
            if gathered >= left:
                return forward(times, free, n, nt, nf, nn, aval, aset, xt, xv, start, event,
                               left, deadline, aligned, speed2, m, fit2, fr, q, last_q, p,
                               total, slot, at, ag)
            until = p
        last_q = q
    # 2. not enough before the deadline: the top count on what is free until then
    last_t = NAN
    last_k = -1
    last_a = 0
    for k in range(lo, nn):
        t = nt[k]
        if t > aligned:
            break
        if last_k >= 0:
            hold(aval, aset, nf, last_k, last_a)
            if last_a:
                left -= ((deadline if t == aligned else t) - last_t) * rate(speed2, m, last_a)
        last_t, last_k, last_a = t, k, min(last_q, fit_of(fit2, fr, nf[k]))
    # 3. after the deadline: whatever fits, up to the cap, until done
    last_t = max(aligned, event)
    lk = step_index(nt, nn, last_t)
    for k in range(bisect_right(nt, nn, aligned), nn):
        t = nt[k]
        q = min(fit_of(fit2, fr, nf[wrap(lk, nn)]), cap)
        if not q:
            aval[wrap(lk, nn)] = 0
            aset[wrap(lk, nn)] = True
            last_t, lk = t, k
            continue
        aval[wrap(lk, nn)] = q
        aset[wrap(lk, nn)] = True
        gained = (t - last_t) * rate(speed2, m, q)
        if gained >= left:
            real_end = float(ceil(last_t + left / rate(speed2, m, q)))
            end = align(start, real_end, slot)
            for u in range(n):
                if times[u] >= end:
                    break
                if times[u] >= aligned:
                    carried = free[u]
            if last_t != end:
                if carried == NONE:
                    raise TypeError("free GPUs unset")
                nf[wrap(lk, nn)] = carried - q
            if step_index(times, n, end) < 0:
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, carried, at, ag)
            else:
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, NAN, 0, at, ag)
            return nn, na, end, real_end
        left -= gained
        for u in range(n):
            if times[u] >= last_t:
                break
            carried = nf[wrap(step_index(nt, nn, times[u]), nn)]
        nf[wrap(lk, nn)] -= q
        last_t, lk = t, k
    # 4. beyond the timeline: the cap (or the count being priced) on an empty cluster
    q = assign
    if not q:
        q = -1
        for i in range(nl):
            g = levels2[m, i]
            if g <= min(total, cap) and g > q:
                q = g
        if q < 0:
            q = levels2[m, 0]
    aval[wrap(lk, nn)] = q
    aset[wrap(lk, nn)] = True
    real_end = float(ceil(last_t + left / rate(speed2, m, q)))
    end = align(start, real_end, slot)
    nf[wrap(lk, nn)] = total - q
    nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, total, at, ag)
    return nn, na, end, real_end


@cython.cfunc
@cython.inline
def forward(times: f64[:], free: i64[:], n: i64, nt: f64[:], nf: i64[:], nn: i64, aval: i64[:],
            aset: u8[:], xt: f64, xv: i64, start: f64, event: f64, left: f64, deadline: f64,
            aligned: f64, speed2: f64[:, :], m: i64, fit2: i64[:, :], fr: i64, q: i64,
            prev_q: i64, point: f64, total: i64, slot: f64, at: f64[:],
            ag: i64[:]) -> tuple[i64, i64, f64, f64]:
    """Allocate from ``event``: ``prev_q`` before ``point``, ``q`` from it, until done."""
    k: i64
    u: i64
    t: f64
    sp: f64
    gained: f64
    real_left: f64
    na: i64
    end: f64 = NAN
    real_end: f64 = NAN
    last_t: f64 = NAN
    last_k: i64 = -1
    last_a: i64 = 0
    for k in range(bisect_left(nt, nn, event), nn):
        t = nt[k]
        if t > aligned:
            break
        if last_k >= 0:
            hold(aval, aset, nf, last_k, last_a)
            if last_a:
                sp = rate(speed2, m, last_a)
                gained = ((deadline if t == aligned else t) - last_t) * sp
                if last_t < point or gained < left:
                    left -= gained
                else:
                    real_left = float(ceil(left / sp))
                    end = last_t + align(0.0, real_left, slot)
                    real_end = last_t + real_left
                    break
        last_t, last_k = t, k
        last_a = min(q if t >= point else prev_q, fit_of(fit2, fr, nf[k]))
    if end != end:
        if last_k < 0:
            raise TypeError("nothing to allocate before the deadline")
        hold(aval, aset, nf, last_k, last_a)
        real_left = float(ceil(left / rate(speed2, m, last_a)))
        end = last_t + align(0.0, real_left, slot)
        real_end = last_t + real_left
    back: i64 = total
    for u in range(n):
        if times[u] >= end:
            break
        if times[u] >= event:
            back = free[u]
    if step_index(times, n, end) < 0:
        nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, back, at, ag)
    else:
        nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, NAN, 0, at, ag)
    return nn, na, end, real_end


# -- a round: plan every job, then hand out the free GPUs ----------------------------------
@cython.cfunc
@cython.inline
def next_level_of(levels2: i64[:, :], m: i64, nl: i64, gpus: i64) -> i64:
    """The next scaling step of model row ``m`` above ``gpus`` (``gpus`` itself at the top)."""
    i: i64
    g: i64
    for i in range(nl):
        g = levels2[m, i]
        if g > gpus:
            return g
    return gpus


@cython.cfunc
@cython.inline
def released(times: f64[:], free: i64[:], n: i64, at: f64[:], ag: i64[:], na: i64, end: f64,
             total: i64, out_t: f64[:], out_f: i64[:]) -> i64:
    """The cluster timeline plus a job's own allocation until its planned end.

    Written to ``out_t``/``out_f`` (room for n + na + 1 entries); returns its length.
    """
    m: i64 = 0
    i: i64 = 0
    a: i64 = 0
    k: f64
    value: i64
    end_left: cython.bint = True
    base: i64 = total
    held: i64 = 0
    last: i64 = -1
    while True:
        k = INF
        if i < n:
            k = times[i]
        if a < na and at[a] < k:
            k = at[a]
        if end_left and end < k:
            k = end
        if k == INF and not (i < n or a < na or end_left):
            break
        while i < n and times[i] <= k:
            base = free[i]
            i += 1
        while a < na and at[a] <= k:
            held = ag[a]
            a += 1
        if end_left and end <= k:
            end_left = False
        value = base + held if k < end else base
        if value != last:
            out_t[m] = k
            out_f[m] = value
            m += 1
            last = value
    return m


@cython.ccall
def estimate(now: f64, total: i64, slot: f64, left: f64[:], deadline: f64[:], model: i64[:],
             stop_on_miss: cython.bint, speed2: f64[:, :], levels2: i64[:, :], nlev: i64[:],
             fit2: i64[:, :], fitrow: i64[:], cap2: i64[:]) -> tuple:
    """Plan jobs (deadline order) one after another on an empty cluster.

    Returns ``(ok, planned, ptr, at, ag, end, real_end, times, free)``: whether
    every plan meets its deadline, how many were planned (``stop_on_miss``
    stops at the first miss), their allocations as ``at[ptr[i]:ptr[i+1]]``,
    and the timeline they leave.
    """
    i: i64
    k: i64
    nn: i64
    na: i64
    e: f64
    re: f64
    m: i64 = left.shape[0]
    width: i64 = 2 * m + 8  # a plan adds at most two steps (its aligned deadline and its end)
    times_owner = np.empty(width, np.float64)
    free_owner = np.empty(width, np.int64)
    times: f64[:] = times_owner
    free: i64[:] = free_owner
    nt: f64[:] = np.empty(width, np.float64)
    nf: i64[:] = np.empty(width, np.int64)
    aval: i64[:] = np.empty(width, np.int64)
    aset: u8[:] = np.empty(width, np.bool_)
    at: f64[:] = np.empty(width, np.float64)
    ag: i64[:] = np.empty(width, np.int64)
    times[0] = now
    free[0] = total
    n: i64 = 1
    ptr_owner = np.zeros(m + 1, np.int64)
    at_owner = np.empty(16 * m + 16, np.float64)
    ag_owner = np.empty(16 * m + 16, np.int64)
    end_owner = np.empty(m, np.float64)
    real_end_owner = np.empty(m, np.float64)
    ptr: i64[:] = ptr_owner
    at_all: f64[:] = at_owner
    ag_all: i64[:] = ag_owner
    end: f64[:] = end_owner
    real_end: f64[:] = real_end_owner
    ok: cython.bint = True
    planned: i64 = 0
    for i in range(m):
        if n + 3 > width:
            raise RuntimeError("planner workspace too small")
        nn, na, e, re = plan(times, free, n, now, left[i], deadline[i], model[i], speed2,
                             levels2, nlev, fit2, fitrow, cap2, total, slot, 0, nt, nf,
                             aval, aset, at, ag)
        n = compact(nt, nf, nn, times, free)
        if ptr[i] + na > at_all.shape[0]:
            at_owner = np.concatenate((at_owner, np.empty(at_owner.shape[0] + na, np.float64)))
            ag_owner = np.concatenate((ag_owner, np.empty(ag_owner.shape[0] + na, np.int64)))
            at_all = at_owner
            ag_all = ag_owner
        for k in range(na):
            at_all[ptr[i] + k] = at[k]
            ag_all[ptr[i] + k] = ag[k]
        ptr[i + 1] = ptr[i] + na
        end[i] = e
        real_end[i] = re
        planned = i + 1
        if re > deadline[i]:
            ok = False
            if stop_on_miss:
                break
    return (ok, planned, ptr_owner, at_owner, ag_owner, end_owner, real_end_owner,
            times_owner[:n].copy(), free_owner[:n].copy())


@cython.cfunc
def sort_desc(order: i64[:], key: f64[:]) -> cython.void:
    """Sort ``order`` in place by ``key[order]``, largest first, stably (NaN last).

    What Python's ``sort(reverse=True)`` does; an insertion sort, as the
    lists are short and mostly sorted already.
    """
    i: i64
    j: i64
    x: i64
    kx: f64
    ky: f64
    for i in range(1, order.shape[0]):
        x = order[i]
        kx = key[x]
        j = i - 1
        while j >= 0:
            ky = key[order[j]]
            if kx > ky or (ky != ky and kx == kx):
                order[j + 1] = order[j]
                j -= 1
            else:
                break
        order[j + 1] = x


# -- the workspace of a round's scale-up: arrays that travel together ----------------------
@cython.cclass
class Tables:
    """The jobs' scaling models (see the module docstring): ``speed2``, ``levels2``,
    ``nlev``, ``fit2``, ``fitrow``, ``cap2``."""

    speed2: f64[:, :]
    levels2: i64[:, :]
    nlev: i64[:]
    fit2: i64[:, :]
    fitrow: i64[:]
    cap2: i64[:]

    def __init__(self, speed2, levels2, nlev, fit2, fitrow, cap2) -> None:
        self.speed2, self.levels2, self.nlev = speed2, levels2, nlev
        self.fit2, self.fitrow, self.cap2 = fit2, fitrow, cap2


@cython.cclass
class Current:
    """Per job (a row each): its allocation ``cat``/``cag``, ``cna`` steps long."""

    cat: f64[:, :]
    cag: i64[:, :]
    cna: i64[:]

    def __init__(self, cat, cag, cna) -> None:
        self.cat, self.cag, self.cna = cat, cag, cna


@cython.cclass
class Offers:
    """Per job, its offer (the plan one scaling step up): that plan's timeline ``ot``/``of``
    (``on`` long), allocation ``oat``/``oag`` (``ona`` long) and ends ``oend``/``oreal``,
    and whether it is valid for the current timeline (``has``)."""

    ot: f64[:, :]
    of: i64[:, :]
    on: i64[:]
    oat: f64[:, :]
    oag: i64[:, :]
    ona: i64[:]
    oend: f64[:]
    oreal: f64[:]
    has: u8[:]

    def __init__(self, ot, of, on, oat, oag, ona, oend, oreal, has) -> None:
        self.ot, self.of, self.on, self.oat, self.oag = ot, of, on, oat, oag
        self.ona, self.oend, self.oreal, self.has = ona, oend, oreal, has


@cython.cclass
class Prices:
    """Per job: its price (``marginal``) and what :func:`keep` needs to know when it still
    holds (``reuse``, ``r_step``, ``r_horizon``, ``r_jump``, ``r_fast``)."""

    marginal: f64[:]
    reuse: u8[:]
    r_step: f64[:]
    r_horizon: f64[:]
    r_jump: i64[:]
    r_fast: u8[:]

    def __init__(self, marginal, reuse, r_step, r_horizon, r_jump, r_fast) -> None:
        self.marginal, self.reuse, self.r_step = marginal, reuse, r_step
        self.r_horizon, self.r_jump, self.r_fast = r_horizon, r_jump, r_fast


@cython.cclass
class Work:
    """A round's scratch: the last released timeline ``rt``/``rf`` and a plan's marks."""

    rt: f64[:]
    rf: i64[:]
    aval: i64[:]
    aset: u8[:]

    def __init__(self, rt, rf, aval, aset) -> None:
        self.rt, self.rf, self.aval, self.aset = rt, rf, aval, aset


@cython.cclass
class Merged:
    """:func:`keep`'s scratch: the two timelines' steps, the change at each, the next change."""

    keys: f64[:]
    delta: i64[:]
    next_change: f64[:]

    def __init__(self, keys, delta, next_change) -> None:
        self.keys, self.delta, self.next_change = keys, delta, next_change


@cython.cclass
class Space:
    """The rows a round's plans write to, ``width`` wide (widened when a timeline could
    outgrow them): the cluster timeline's two rows ``tt``/``tf`` (row ``cur`` is the one
    after the last step, the other the one before it, for :func:`keep`), then per job its
    allocation and its offer, then the scratch."""

    width: i64
    tt: f64[:, :]
    tf: i64[:, :]
    current: Current
    offers: Offers
    work: Work
    merged: Merged

    def __init__(self, width, tt, tf, current, offers, work, merged) -> None:
        self.width, self.tt, self.tf = width, tt, tf
        self.current, self.offers, self.work, self.merged = current, offers, work, merged


@cython.cfunc
def widen(a, width: i64):
    """A copy of the 2-D buffer ``a`` with ``width`` columns."""
    out = np.empty((a.shape[0], width), a.dtype)
    keep = min(width, a.shape[1])
    out[:, :keep] = a[:, :keep]
    return out


@cython.cfunc
def roomier(n: i64, longest: i64, space: Space) -> cython.void:
    """Widen the workspace (see :func:`allocate`) for plans on an ``n``-step timeline.

    Plans need n + na + 4 entries (``longest``: the largest na). The rows keep
    their contents, in new arrays.
    """
    width: i64 = 2 * (n + longest) + 16
    current, offers = space.current, space.offers
    space.tt = widen(np.asarray(space.tt), width)
    space.tf = widen(np.asarray(space.tf), width)
    current.cat = widen(np.asarray(current.cat), width)
    current.cag = widen(np.asarray(current.cag), width)
    offers.ot = widen(np.asarray(offers.ot), width)
    offers.of = widen(np.asarray(offers.of), width)
    offers.oat = widen(np.asarray(offers.oat), width)
    offers.oag = widen(np.asarray(offers.oag), width)
    space.work, space.merged = scratch(width)
    space.width = width


@cython.cfunc
def allocate(m: i64, width: i64, cna, on, ona, oend, oreal, has) -> Space:
    """The rows a round's plans write to (see :class:`Space`); the per-job counts and ends
    are given."""
    work, merged = scratch(width)
    current = Current(np.empty((m, width), np.float64), np.empty((m, width), np.int64), cna)
    offers = Offers(np.empty((m, width), np.float64), np.empty((m, width), np.int64), on,
                    np.empty((m, width), np.float64), np.empty((m, width), np.int64), ona,
                    oend, oreal, has)  # fmt: skip
    return Space(width, np.empty((2, width), np.float64), np.empty((2, width), np.int64),
                 current, offers, work, merged)  # fmt: skip


@cython.cfunc
def scratch(width: i64) -> tuple:
    """The 1-D scratch of a round: :class:`Work` and keep()'s :class:`Merged`."""
    work = Work(np.empty(width, np.float64), np.empty(width, np.int64),
                np.empty(width, np.int64), np.empty(width, np.bool_))  # fmt: skip
    merged = Merged(np.empty(2 * width, np.float64), np.empty(2 * width, np.int64),
                    np.empty(2 * width, np.float64))  # fmt: skip
    return work, merged


@cython.cfunc
@cython.inline
def make_offer(p: i64, now: f64, total: i64, slot: f64, times: f64[:], free: i64[:], n: i64,
               current: Current, end: f64[:], left: f64[:], deadline: f64[:], model: i64[:],
               next_level: i64[:], offers: Offers, work: Work, tables: Tables) -> i64:
    """Plan job ``p`` one step up on the timeline with its own GPUs handed back.

    The released timeline it was planned on is left in ``work``; returns its length.
    """
    nn: i64
    na: i64
    e: f64
    re: f64
    rn: i64 = released(times, free, n, current.cat[p], current.cag[p], current.cna[p], end[p],
                       total, work.rt, work.rf)
    nn, na, e, re = plan(work.rt, work.rf, rn, now, left[p], deadline[p], model[p],
                         tables.speed2, tables.levels2, tables.nlev, tables.fit2, tables.fitrow,
                         tables.cap2, total, slot, next_level[p], offers.ot[p], offers.of[p],
                         work.aval, work.aset, offers.oat[p], offers.oag[p])
    offers.on[p] = nn
    offers.ona[p] = na
    offers.oend[p] = e
    offers.oreal[p] = re
    offers.has[p] = True
    return rn


@cython.cfunc
@cython.inline
def price(p: i64, spare: i64, now: f64, total: i64, slot: f64, times: f64[:], free: i64[:],
          n: i64, gpus: i64[:], current: Current, end: f64[:], left: f64[:], deadline: f64[:],
          model: i64[:], next_level: i64[:], prices: Prices, offers: Offers, work: Work,
          tables: Tables) -> cython.void:
    """The GPU-time per added GPU of scaling job ``p`` one step now (+inf for idle jobs).

    Notes, for :func:`keep`, the window of the timeline the price read: from
    its first step after now to the first step at or after its deadline slot
    and its end (if the deadline slot comes earlier, it reads more).
    """
    level: i64 = next_level[p]
    g: i64 = gpus[p]
    prices.reuse[p] = False
    offers.has[p] = False
    if level - g > spare or level == g:
        prices.marginal[p] = -INF
        return
    if g == 0:
        prices.marginal[p] = INF  # idle jobs come first; plan them only when chosen
        return
    rn: i64 = make_offer(p, now, total, slot, times, free, n, current, end, left, deadline,
                         model, next_level, offers, work, tables)
    rt: f64[:] = work.rt
    rf: i64[:] = work.rf
    new: f64 = gpu_time(offers.oat[p], offers.oag[p], offers.ona[p], offers.oend[p])
    old: f64 = gpu_time(current.cat[p], current.cag[p], current.cna[p], end[p])
    prices.marginal[p] = (new - old) / (level - g)
    aligned: f64 = align(now, deadline[p], slot)
    # the plan's first branch: the new count until done, before the timeline's first
    # step after now (and the deadline); then the price reads nothing else of it
    sp: f64 = rate(tables.speed2, model[p], level)
    real_end: f64 = float(ceil(now + left[p] / sp))
    nxt: i64 = bisect_right(rt, rn, now)
    future: f64 = rt[nxt] if nxt < rn else aligned
    k: i64
    prices.r_fast[p] = future >= align(now, real_end, slot) and deadline[p] >= real_end
    if prices.r_fast[p]:
        prices.reuse[p] = True
        prices.r_horizon[p] = offers.oend[p]
    elif rn > 1 and aligned >= rt[1]:
        k = bisect_left(rt, rn, max(aligned, offers.oend[p]))
        prices.reuse[p] = True
        prices.r_step[p] = rt[1]
        prices.r_horizon[p] = rt[k] if k < rn else INF
        prices.r_jump[p] = rf[1] - rf[0]


@cython.cfunc
@cython.inline
def any_set(flags: u8[:]) -> cython.bint:
    """Whether any of ``flags`` is set (a C loop: ``any()`` of a generator is Python)."""
    i: i64
    for i in range(flags.shape[0]):  # noqa: SIM110
        if flags[i]:
            return True
    return False


@cython.cfunc
@cython.inline
def keep(old_t: f64[:], old_f: i64[:], old_n: i64, new_t: f64[:], new_f: i64[:], new_n: i64,
         total: i64, prices: Prices, has: u8[:], merged: Merged) -> cython.void:
    """Drop the reusable prices that the timeline change old → new can affect.

    A job's price reads the timeline (with its own GPUs handed back) on a
    window from its first step after now, ``f``, to a horizon ``h``. It is
    unchanged if the change is a constant before ``f``, nothing on [f, h], and
    ``f`` is still a step. ``merged`` is scratch with room for both timelines' steps.
    """
    reuse: u8[:] = prices.reuse
    r_step: f64[:] = prices.r_step
    r_horizon: f64[:] = prices.r_horizon
    r_jump: i64[:] = prices.r_jump
    r_fast: u8[:] = prices.r_fast
    keys: f64[:] = merged.keys
    delta: i64[:] = merged.delta
    next_change: f64[:] = merged.next_change
    i: i64
    p: i64
    k: f64
    step: f64
    if not any_set(reuse):
        return
    i = 0
    j: i64 = 0
    nk: i64 = 0
    while i < old_n or j < new_n:
        if j >= new_n or (i < old_n and old_t[i] < new_t[j]):
            k = old_t[i]
            i += 1
        elif i >= old_n or new_t[j] < old_t[i]:
            k = new_t[j]
            j += 1
        else:
            k = old_t[i]
            i += 1
            j += 1
        keys[nk] = k
        nk += 1
    for i in range(nk):
        delta[i] = value_at(new_t, new_f, new_n, keys[i], total) - value_at(
            old_t, old_f, old_n, keys[i], total
        )
    first: i64 = delta[0]
    change: f64 = INF
    for i in range(1, nk):
        if delta[i] != first:
            change = keys[i]
            break
    upcoming: f64 = INF
    for i in range(nk - 1, -1, -1):
        next_change[i] = upcoming
        if delta[i]:
            upcoming = keys[i]
    for p in range(reuse.shape[0]):
        if not reuse[p]:
            continue
        if r_fast[p]:  # read only that no step falls before its end
            if change >= r_horizon[p]:
                has[p] = False
            else:
                reuse[p] = False
            continue
        step = r_step[p]
        i = wrap(bisect_right(keys, nk, step) - 1, nk)
        if change >= step and not delta[i] and next_change[i] > r_horizon[p] and (
            r_jump[p] != first
        ):
            r_jump[p] = r_jump[p] - first
            has[p] = False  # its plan's timeline is stale; re-plan if chosen
        else:
            reuse[p] = False


@cython.cfunc
@cython.inline
def take_offer(p: i64, offers: Offers, tt: f64[:, :], tf: i64[:, :], row: i64,
               current: Current) -> i64:
    """Make job ``p``'s offer current: its timeline into row ``row``, its allocation its own.

    Returns the new timeline's length.
    """
    k: i64
    cat: f64[:, :] = current.cat
    cag: i64[:, :] = current.cag
    n: i64 = compact(offers.ot[p], offers.of[p], offers.on[p], tt[row], tf[row])
    na: i64 = offers.ona[p]
    for k in range(na):
        cat[p, k] = offers.oat[p, k]
        cag[p, k] = offers.oag[p, k]
    current.cna[p] = na
    return n


@cython.cfunc
@cython.inline
def longest(counts: i64[:]) -> i64:
    """The largest of ``counts`` (0 for none)."""
    best: i64 = 0
    i: i64
    for i in range(counts.shape[0]):
        if counts[i] > best:
            best = counts[i]
    return best


@cython.ccall
def scale_up(now: f64, total: i64, slot: f64, reprice_all: cython.bint, times_in: f64[:],
             free_in: i64[:], gpus_in: i64[:], left: f64[:], deadline: f64[:], model: i64[:],
             end_in: f64[:], real_end_in: f64[:], ptr: i64[:], at_all: f64[:], ag_all: i64[:],
             speed2: f64[:, :], levels2: i64[:, :], nlev: i64[:], fit2: i64[:, :],
             fitrow: i64[:], cap2: i64[:]) -> tuple:
    """Give free GPUs one scaling step at a time to the job with the best offer.

    Jobs are given by position (the runnable list after planning, in deadline
    order). As in the reference, every job is priced again after each step;
    a price whose inputs the step provably left unchanged is reused (see
    :func:`keep`). With ``reprice_all`` false, the faster approximation:
    only the job that grew is re-priced, and when the spare GPUs cover every
    job's top level each job is scaled straight there.

    Returns ``(order, gpus, end, real_end, started, first_change)``: the
    runnable list's new order (positions), the new counts and ends, which
    jobs got their first GPUs here, and the earliest allocation change after now.
    """
    tables = Tables(speed2, levels2, nlev, fit2, fitrow, cap2)
    m: i64 = gpus_in.shape[0]
    n: i64 = times_in.shape[0]
    p: i64
    i: i64
    k: i64
    mp: i64
    top: i64
    step: i64
    old_n: i64
    chosen: i64
    t: f64
    results = (np.arange(m), np.array(gpus_in, np.int64), np.array(end_in, np.float64),
               np.array(real_end_in, np.float64), np.zeros(m, np.bool_))  # fmt: skip
    order: i64[:] = results[0]
    gpus: i64[:] = results[1]
    end: f64[:] = results[2]
    real_end: f64[:] = results[3]
    started: u8[:] = results[4]
    next_level: i64[:] = np.empty(m, np.int64)
    stale: u8[:] = np.ones(m, np.bool_)
    prices = Prices(np.zeros(m, np.float64), np.zeros(m, np.bool_), np.zeros(m, np.float64),
                    np.zeros(m, np.float64), np.zeros(m, np.int64), np.zeros(m, np.bool_))
    marginal: f64[:] = prices.marginal
    reuse: u8[:] = prices.reuse
    spare: i64 = total
    need: i64 = 0
    for p in range(m):
        mp = model[p]
        next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
        spare -= gpus[p]
        need += levels2[mp, nlev[mp] - 1] - gpus[p]
    cna: i64[:] = np.empty(m, np.int64)
    for p in range(m):
        cna[p] = ptr[p + 1] - ptr[p]
    # a plan on a released timeline needs n + na + 4
    width: i64 = 2 * (n + longest(cna)) + 16
    space: Space = allocate(m, width, cna, np.zeros(m, np.int64), np.zeros(m, np.int64),
                            np.zeros(m, np.float64), np.zeros(m, np.float64),
                            np.zeros(m, np.bool_))  # fmt: skip
    current: Current = space.current
    offers: Offers = space.offers
    tt: f64[:, :] = space.tt
    tf: i64[:, :] = space.tf
    cat: f64[:, :] = current.cat
    cag: i64[:, :] = current.cag
    oend: f64[:] = offers.oend
    oreal: f64[:] = offers.oreal
    has: u8[:] = offers.has
    cur: i64 = 0
    tt[0, :n] = times_in[:n]
    tf[0, :n] = free_in[:n]
    for p in range(m):
        for k in range(cna[p]):
            cat[p, k] = at_all[ptr[p] + k]
            cag[p, k] = ag_all[ptr[p] + k]
    if spare != 0 and not reprice_all and spare >= need:
        # fill up: idle jobs first, then the rest, each planned once at its top level
        fill: i64[:] = np.empty(m, np.int64)
        k = 0
        for i in range(m):
            if gpus[order[i]] == 0:
                fill[k] = order[i]
                k += 1
        for i in range(m):
            if gpus[order[i]] != 0:
                fill[k] = order[i]
                k += 1
        for i in range(m):
            p = fill[i]
            top = levels2[model[p], nlev[model[p]] - 1]
            if top <= gpus[p]:
                continue
            if n + longest(cna) + 8 > width:
                roomier(n, longest(cna), space)
                width, tt, tf = space.width, space.tt, space.tf
            next_level[p] = top
            make_offer(p, now, total, slot, tt[cur], tf[cur], n, current, end, left, deadline,
                       model, next_level, offers, space.work, tables)
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = top
            end[p], real_end[p] = oend[p], oreal[p]
            started[p] = True
        idle: f64[:] = np.zeros(m, np.float64)
        for p in range(m):
            idle[p] = INF if gpus[p] == 0 else 0.0
        sort_desc(order, idle)
        spare = 0
    # stale (to be priced) is everyone at first
    priced: cython.bint = spare != 0
    grew: cython.bint = True
    while True:
        if priced:
            for i in range(m):
                p = order[i]
                if stale[p]:
                    price(p, spare, now, total, slot, tt[cur], tf[cur], n, gpus, current, end,
                          left, deadline, model, next_level, prices, offers, space.work,
                          tables)
            sort_desc(order, marginal)
        if spare <= 0 or not grew:
            break
        grew = False
        chosen = -1
        for i in range(m):
            p = order[i]
            step = next_level[p] - gpus[p]
            if step > spare or step == 0:
                continue
            if not has[p]:  # priced without a plan (idle job) or on an older timeline
                make_offer(p, now, total, slot, tt[cur], tf[cur], n, current, end, left,
                           deadline, model, next_level, offers, space.work, tables)
            old_n = n
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = next_level[p]
            end[p], real_end[p] = oend[p], oreal[p]
            started[p] = True
            spare -= step
            grew = True
            mp = model[p]
            next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
            reuse[p] = False
            keep(tt[1 - cur], tf[1 - cur], old_n, tt[cur], tf[cur], n, total, prices, has,
                 space.merged)
            chosen = p
            break
        if grew and n + longest(cna) + 8 > width:  # room for the next plans
            roomier(n, longest(cna), space)
            width, tt, tf = space.width, space.tt, space.tf
            cat = current.cat
        if not reprice_all and grew:
            has[:] = False  # every other offer's timeline is stale now
            stale[:] = False
            stale[chosen] = next_level[chosen] > gpus[chosen]
        else:  # every job that can still grow, unless its price provably holds
            for p in range(m):
                step = next_level[p] - gpus[p]
                stale[p] = step > 0 and not (reuse[p] and step <= spare)
        priced = True
    first_change: f64 = INF
    cat = current.cat
    for p in range(m):
        for k in range(cna[p]):
            t = cat[p, k]
            if t > now and t < first_change:
                first_change = t
    return results[0], results[1], results[2], results[3], results[4], first_change
