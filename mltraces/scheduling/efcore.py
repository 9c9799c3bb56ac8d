"""The compiled core of the ElasticFlow replay: planning on a free-GPU timeline and scale-up.

Why compiled. The artifact prices every runnable job with a full re-plan after
every single scaling step, and the exact replay must do the same: on
cluster10 that is ~9,000 steps and ~50,000 plans, each a few dozen
interpreted loop iterations. No reordering of that work removes it (a price
depends on where the other jobs' plans put their steps, which every step
moves), so the loops run as machine code through numba. Without numba the
same functions run as plain Python, with the same results, only slower.

What it costs in machine code. A plan is a few hundred nanoseconds of
arithmetic; what used to dominate was bookkeeping around it: fresh arrays
per plan, lists of arrays, and numba's reference counting, which is an
atomic instruction for every array a call, a tuple unpacking or a row view
touches (57 % of the Philly replay's ``perf`` samples at one point). So a
round's plans write into one workspace of 2-D rows (see :class:`_Workspace`),
the per-plan helpers are inlined into their caller, only :func:`plan` stays
a separate call (inlining it too saved 5 % and cost minutes of compilation),
and every array in the loops is a borrowed view that nothing counts
(:func:`.jit.borrowed`; the owners live in tuples kept alive to the end).

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

from mltraces.scheduling.jit import borrowed, in_cache, keep_alive, njit

INF = math.inf
NONE = -(2**62)  # an unset GPU count (the reference's undefined variable)


# -- small helpers -------------------------------------------------------------------------
@njit(cache=True, inline="always")
def align(origin: float, time: float, slot: float) -> float:
    """The first slot boundary ``origin + k·slot`` at or after ``time`` (Python's divmod)."""
    x = time - origin
    mod = np.fmod(x, slot)
    div = (x - mod) / slot
    if mod != 0.0 and (slot < 0) != (mod < 0):
        mod += slot
        div -= 1.0
    steps = 0.0
    if div != 0.0:
        steps = math.floor(div)
        if div - steps > 0.5:
            steps += 1.0
    if mod > 0:
        steps += 1.0
    return origin + steps * slot


@njit(cache=True, inline="always")
def bisect_left(a, n: int, x: float) -> int:
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def bisect_right(a, n: int, x: float) -> int:
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def step_index(a, n: int, x: float) -> int:
    """Index of the step starting exactly at ``x``, or -1."""
    i = bisect_left(a, n, x)
    if i < n and a[i] == x:
        return i
    return -1


@njit(cache=True, inline="always")
def wrap(i: int, n: int) -> int:
    """A Python list index: -1 is the last element."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("timeline index out of range")
    return i


@njit(cache=True, inline="always")
def set_step(times, free, n: int, time: float, value: int) -> int:
    """Set the value from ``time`` on (insert a step or overwrite one); the new length.

    The arrays must have room for one more entry.
    """
    if value == NONE:
        raise TypeError("a timeline step without a value (the reference's unset variable)")
    i = bisect_left(times, n, time)
    if i < n and times[i] == time:
        free[i] = value
        return n
    for k in range(n, i, -1):
        times[k] = times[k - 1]
        free[k] = free[k - 1]
    times[i] = time
    free[i] = value
    return n + 1


@njit(cache=True, inline="always")
def fit_of(fit2, row: int, x: int) -> int:
    """``fit2[row, x]`` with Python's indexing (negative wraps, too large raises)."""
    if x == NONE:
        raise TypeError("free GPUs unset")
    n = fit2.shape[1]
    if x < 0:
        x += n
    if x < 0 or x >= n:
        raise IndexError("more free GPUs than the cluster has")
    return fit2[row, x]


@njit(cache=True, inline="always")
def rate(speed2, m: int, g: int) -> float:
    """Iterations per second of model row ``m`` on ``g`` GPUs; a count the profile lacks raises."""
    if g < 0 or g >= speed2.shape[1] or math.isnan(speed2[m, g]):
        raise KeyError("no throughput for this GPU count")
    return speed2[m, g]


@njit(cache=True, inline="always")
def gpu_time(at, ag, na: int, end: float) -> float:
    """GPU-seconds of an allocation held until ``end``."""
    total = 0.0
    for k in range(na - 1):
        total += ag[k] * (at[k + 1] - at[k])
    if na:
        total += ag[na - 1] * (end - at[na - 1])
    return total


@njit(cache=True, inline="always")
def value_at(times, free, n: int, time: float, default: int) -> int:
    """Free GPUs at ``time`` (``default`` before the first step)."""
    i = bisect_right(times, n, time)
    return free[i - 1] if i else default


@njit(cache=True, inline="always")
def hold(aval, aset, nf, k: int, gpus: int) -> None:
    """The plan holds ``gpus`` in the timeline's step ``k``: record it, take them off free."""
    aval[k] = gpus
    aset[k] = True
    nf[k] -= gpus


@njit(cache=True, inline="always")
def copy_into(src, dst, n: int) -> None:
    """``dst[:n] = src[:n]`` without making views (a view costs a reference count)."""
    for k in range(n):
        dst[k] = src[k]


# -- one plan --------------------------------------------------------------------------------
# A plan writes into buffers its caller owns (a workspace reused for every plan of
# a round): ``nt``/``nf``/``aval``/``aset`` need room for n + 2 entries, ``at``/``ag``
# for n + 3, where n is the length of the timeline planned on.
@njit(cache=True, inline="always")
def finish_plan(nt, nf, nn, aval, aset, xt, xv, end_step, end_value, at, ag):
    """Collect the allocation steps (sorted, repeats dropped) and add the end step.

    ``xt``/``xv`` is an allocation step at a time that is not on the timeline
    (NaN: none); only a start that the timeline lost has one (the released
    timeline of a job holding more GPUs than were free, which the reference
    would have refused by an assertion). Writes the allocation to ``at``/``ag``
    and returns ``(n, na)``: the timeline's new length (not yet compacted, see
    :func:`compact`) and the allocation's.
    """
    na = 0
    last = -1
    pending = xt == xt
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


@njit(cache=True)
def compact(nt, nf, nn, ct, cf) -> int:
    """Copy the timeline into ``ct``/``cf`` without repeated values; the new length.

    Kept apart from :func:`finish_plan` because most plans are only priced:
    their timeline is compacted only for the one a step chooses. ``ct`` may be
    ``nt`` (in place).
    """
    m = 0
    prev = -1
    for k in range(nn):
        if nf[k] != prev:
            ct[m] = nt[k]
            cf[m] = nf[k]
            m += 1
            prev = nf[k]
    return m


@njit(cache=True)
def plan(times, free, n, start, left, deadline, m, speed2, levels2, nlev, fit2, fitrow, cap2,
         total, slot, assign, nt, nf, aval, aset, at, ag):
    """Plan a job from ``start`` backwards from its deadline on the timeline.

    With ``assign`` the job first holds that many GPUs until the timeline's
    next step (how a scale-up is priced), then is planned as usual. Writes the
    timeline with the plan to ``nt``/``nf`` and the allocation to ``at``/``ag``;
    returns ``(n, na, end, real_end)``.
    """
    fr = fitrow[m]
    cap = cap2[m]
    nl = nlev[m]
    copy_into(times, nt, n)
    copy_into(free, nf, n)
    nn = n
    for k in range(n + 2):
        aval[k] = 0
        aset[k] = False
    aligned = align(start, deadline, slot)
    carried = NONE  # the pre-job value the reference restores after a plan's end
    if aligned >= start and step_index(nt, nn, aligned) < 0:
        carried = nf[wrap(bisect_left(nt, nn, aligned) - 1, nn)]
        nn = set_step(nt, nf, nn, aligned, carried)
    i_start = step_index(nt, nn, start)
    xt, xv = math.nan, 0  # the start's allocation when the timeline lacks the start
    if i_start < 0:
        xt = start
    else:
        aset[i_start] = True
    event = start
    if assign:
        sp = rate(speed2, m, assign)
        nxt = bisect_right(times, n, start)
        future = times[nxt] if nxt < n else aligned
        if i_start < 0:
            xv = assign
        else:
            aval[i_start] = assign
        real_end = float(math.ceil(start + left / sp))
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
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0, at, ag)
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
    last_t = math.nan
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
            real_end = float(math.ceil(last_t + left / rate(speed2, m, q)))
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
                nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0, at, ag)
            return nn, na, end, real_end
        left -= gained
        for u in range(n):
            if times[u] >= last_t:
                break
            carried = nf[wrap(step_index(nt, nn, times[u]), nn)]
        if t > last_t:  # a job past its deadline starts with an empty period: nothing held
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
    real_end = float(math.ceil(last_t + left / rate(speed2, m, q)))
    end = align(start, real_end, slot)
    nf[wrap(lk, nn)] = total - q
    nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, total, at, ag)
    return nn, na, end, real_end


@njit(cache=True, inline="always")
def forward(times, free, n, nt, nf, nn, aval, aset, xt, xv, start, event, left, deadline,
            aligned, speed2, m, fit2, fr, q, prev_q, point, total, slot, at, ag):
    """Allocate from ``event``: ``prev_q`` before ``point``, ``q`` from it, until done."""
    end = math.nan
    real_end = math.nan
    last_t = math.nan
    last_k = -1
    last_a = 0
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
                    real_left = float(math.ceil(left / sp))
                    end = last_t + align(0.0, real_left, slot)
                    real_end = last_t + real_left
                    break
        last_t, last_k = t, k
        last_a = min(q if t >= point else prev_q, fit_of(fit2, fr, nf[k]))
    if end != end:
        if last_k < 0:
            raise TypeError("nothing to allocate before the deadline")
        hold(aval, aset, nf, last_k, last_a)
        real_left = float(math.ceil(left / rate(speed2, m, last_a)))
        end = last_t + align(0.0, real_left, slot)
        real_end = last_t + real_left
    back = total
    for u in range(n):
        if times[u] >= end:
            break
        if times[u] >= event:
            back = free[u]
    if step_index(times, n, end) < 0:
        nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, back, at, ag)
    else:
        nn, na = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0, at, ag)
    return nn, na, end, real_end


# -- a round: plan every job, then hand out the free GPUs ----------------------------------
@njit(cache=True, inline="always")
def next_level_of(levels2, m: int, nl: int, gpus: int) -> int:
    """The next scaling step of model row ``m`` above ``gpus`` (``gpus`` itself at the top)."""
    for i in range(nl):
        g = levels2[m, i]
        if g > gpus:
            return g
    return gpus


@njit(cache=True, inline="always")
def released(times, free, n, at, ag, na, end, total, out_t, out_f) -> int:
    """The cluster timeline plus a job's own allocation until its planned end.

    Written to ``out_t``/``out_f`` (room for n + na + 1 entries); returns its length.
    """
    m = np.int64(0)  # not a literal (see estimate)
    i = a = 0
    end_left = True
    base, held, last = total, 0, -1
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


@njit(cache=True)
def estimate(now, total, slot, left, deadline, model, stop_on_miss, speed2, levels2, nlev,
             fit2, fitrow, cap2):
    """Plan jobs (deadline order) one after another on an empty cluster.

    Returns ``(ok, planned, ptr, at, ag, end, real_end, times, free)``: whether
    every plan meets its deadline, how many were planned (``stop_on_miss``
    stops at the first miss), their allocations as ``at[ptr[i]:ptr[i+1]]``,
    and the timeline they leave.
    """
    # views without owners (see :func:`.jit.borrowed`): arguments live until we
    # return, the workspace is kept alive to the end
    left, deadline, model = borrowed((left, deadline, model))
    speed2, levels2, nlev, fit2, fitrow, cap2 = borrowed((speed2, levels2, nlev, fit2, fitrow,
                                                          cap2))  # fmt: skip
    m = left.shape[0]
    width = 2 * m + 8  # a plan adds at most two steps (its aligned deadline and its end)
    owned = (np.empty(width, np.float64), np.empty(width, np.int64),
             np.empty(width, np.float64), np.empty(width, np.int64),
             np.empty(width, np.int64), np.empty(width, np.bool_),
             np.empty(width, np.float64), np.empty(width, np.int64))  # fmt: skip
    times, free, nt, nf, aval, aset, at, ag = borrowed(owned)
    times[0] = now
    free[0] = total
    n = np.int64(1)  # int64s, not literals: each literal would compile plan once more
    ptr = np.zeros(m + 1, np.int64)
    at_all = np.empty(16 * m + 16, np.float64)
    ag_all = np.empty(16 * m + 16, np.int64)
    end = np.empty(m, np.float64)
    real_end = np.empty(m, np.float64)
    ok = True
    planned = 0
    for i in range(m):
        if n + 3 > width:
            raise RuntimeError("planner workspace too small")
        nn, na, e, re = plan(times, free, n, now, left[i], deadline[i], model[i], speed2,
                             levels2, nlev, fit2, fitrow, cap2, total, slot, np.int64(0), nt, nf,
                             aval, aset, at, ag)
        n = compact(nt, nf, nn, times, free)
        if ptr[i] + na > at_all.shape[0]:
            at_all = np.concatenate((at_all, np.empty(at_all.shape[0] + na, np.float64)))
            ag_all = np.concatenate((ag_all, np.empty(ag_all.shape[0] + na, np.int64)))
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
    timeline = times[:n].copy(), free[:n].copy()
    keep_alive(owned)
    return ok, planned, ptr, at_all, ag_all, end, real_end, timeline[0], timeline[1]


@njit(cache=True)
def sort_desc(order, key) -> None:
    """Sort ``order`` in place by ``key[order]``, largest first, stably (NaN last).

    What Python's ``sort(reverse=True)`` does; an insertion sort, as the
    lists are short and mostly sorted already.
    """
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


class _Workspace:  # documentation only: what the arrays in scale_up hold
    """Per job (by position ``p``, a row of each 2-D array):

    ``current = (cat, cag, cna)`` its allocation; ``offers = (ot, of, on, oat,
    oag, ona, oend, oreal, has)`` its offer (the plan one scaling step up):
    that plan's timeline, allocation and ends, and whether it is valid for the
    current timeline; ``prices = (marginal, reuse, r_step, r_horizon,
    r_jump)`` its price and what :func:`keep` needs to know when it still holds.
    The cluster timeline is row ``cur`` of ``tt/tf`` (two rows: the one before
    a step and the one after, for :func:`keep`); ``work = (rt, rf, aval,
    aset)`` is scratch: the last released timeline and a plan's marks.
    Rows are ``width`` wide and widened when a timeline could outgrow them.

    Why tuples: the helpers below are inlined into :func:`scale_up` (a call
    of a compiled function pays two atomic reference counts per array
    argument, which cost a third of the replay before), and a call of more
    than 30 arguments cannot be inlined.
    """


@njit(cache=True)
def widen(a, width: int):
    """A copy of the 2-D buffer ``a`` with ``width`` columns."""
    out = np.empty((a.shape[0], width), a.dtype)
    for r in range(a.shape[0]):
        for k in range(min(width, a.shape[1])):
            out[r, k] = a[r, k]
    return out


@njit(cache=True)
def widened(a, b, c, d, width: int):
    """Four 2-D buffers of one dtype, widened to ``width`` columns (a growing workspace)."""
    return widen(a, width), widen(b, width), widen(c, width), widen(d, width)


@njit(cache=True)
def roomier(n, longest, space):
    """A new workspace (see :func:`allocate`) for plans on an ``n``-step timeline.

    Plans need n + na + 4 entries (``longest``: the largest na). Returns
    ``(width, space)``; the rows keep their contents, in new arrays.
    """
    tt, tf, cat, cag, ot, of, oat, oag, _, _ = space
    width = 2 * (n + longest) + 16
    tt, cat, ot, oat = widened(tt, cat, ot, oat, width)
    tf, cag, of, oag = widened(tf, cag, of, oag, width)
    work, merged = scratch(width)
    return width, (tt, tf, cat, cag, ot, of, oat, oag, work, merged)


@njit(cache=True)
def allocate(m: int, width: int):
    """The rows a round's plans write to: ``(tt, tf, cat, cag, ot, of, oat, oag, work, merged)``.

    The cluster timeline's two rows, then per job its allocation and its
    offer's timeline and allocation, then the scratch (see :class:`_Workspace`).
    """
    work, merged = scratch(width)
    return (np.empty((2, width), np.float64), np.empty((2, width), np.int64),
            np.empty((m, width), np.float64), np.empty((m, width), np.int64),
            np.empty((m, width), np.float64), np.empty((m, width), np.int64),
            np.empty((m, width), np.float64), np.empty((m, width), np.int64),
            work, merged)  # fmt: skip


@njit(cache=True, inline="always")
def lend(space, per_job):
    """Borrowed views of the workspace, grouped as the helpers take them.

    Returns ``(tt, tf, current, offers, work, merged)``; ``per_job`` is
    ``(cna, on, ona, oend, oreal, has)``.
    """
    tt, tf, cat, cag, ot, of, oat, oag, work, merged = borrowed(space)
    cna, on, ona, oend, oreal, has = borrowed(per_job)
    offers = (ot, of, on, oat, oag, ona, oend, oreal, has)
    return tt, tf, (cat, cag, cna), offers, work, merged


@njit(cache=True)
def scratch(width: int):
    """The 1-D scratch of a round: ``(rt, rf, aval, aset)`` and keep()'s ``(keys, delta, next)``."""
    work = (np.empty(width, np.float64), np.empty(width, np.int64),
            np.empty(width, np.int64), np.empty(width, np.bool_))  # fmt: skip
    merged = (np.empty(2 * width, np.float64), np.empty(2 * width, np.int64),
              np.empty(2 * width, np.float64))  # fmt: skip
    return work, merged


@njit(cache=True, inline="always")
def make_offer(p, now, total, slot, times, free, n, current, end, left, deadline, model,
               next_level, offers, work, tables) -> int:
    """Plan job ``p`` one step up on the timeline with its own GPUs handed back.

    The released timeline it was planned on is left in ``work``; returns its length.
    """
    cat, cag, cna = current
    ot, of, on, oat, oag, ona, oend, oreal, has = offers
    rt, rf, aval, aset = work
    speed2, levels2, nlev, fit2, fitrow, cap2 = tables
    rn = released(times, free, n, cat[p], cag[p], cna[p], end[p], total, rt, rf)
    nn, na, e, re = plan(rt, rf, rn, now, left[p], deadline[p], model[p], speed2, levels2,
                         nlev, fit2, fitrow, cap2, total, slot, next_level[p], ot[p], of[p],
                         aval, aset, oat[p], oag[p])
    on[p] = nn
    ona[p] = na
    oend[p] = e
    oreal[p] = re
    has[p] = True
    return rn


@njit(cache=True, inline="always")
def price(p, spare, now, total, slot, times, free, n, gpus, current, end, left, deadline,
          model, next_level, prices, offers, work, tables) -> None:
    """The GPU-time per added GPU of scaling job ``p`` one step now (+inf for idle jobs).

    Notes, for :func:`keep`, the window of the timeline the price read: from
    its first step after now to the first step at or after its deadline slot
    and its end (if the deadline slot comes earlier, it reads more).
    """
    marginal, reuse, r_step, r_horizon, r_jump, r_fast = prices
    level, g = next_level[p], gpus[p]
    reuse[p] = False
    offers[8][p] = False
    if level - g > spare or level == g:
        marginal[p] = -INF
        return
    if g == 0:
        marginal[p] = INF  # idle jobs come first; plan them only when chosen
        return
    rn = make_offer(p, now, total, slot, times, free, n, current, end, left, deadline, model,
                    next_level, offers, work, tables)
    cat, cag, cna = current
    oat, oag, ona, oend = offers[3], offers[4], offers[5], offers[6]
    rt, rf = work[0], work[1]
    new = gpu_time(oat[p], oag[p], ona[p], oend[p])
    old = gpu_time(cat[p], cag[p], cna[p], end[p])
    marginal[p] = (new - old) / (level - g)
    aligned = align(now, deadline[p], slot)
    # the plan's first branch: the new count until done, before the timeline's first
    # step after now (and the deadline); then the price reads nothing else of it
    sp = rate(tables[0], model[p], level)
    real_end = float(math.ceil(now + left[p] / sp))
    nxt = bisect_right(rt, rn, now)
    future = rt[nxt] if nxt < rn else aligned
    r_fast[p] = future >= align(now, real_end, slot) and deadline[p] >= real_end
    if r_fast[p]:
        reuse[p] = True
        r_horizon[p] = oend[p]
    elif rn > 1 and aligned >= rt[1]:
        k = bisect_left(rt, rn, max(aligned, oend[p]))
        reuse[p] = True
        r_step[p] = rt[1]
        r_horizon[p] = rt[k] if k < rn else INF
        r_jump[p] = rf[1] - rf[0]


@njit(cache=True, inline="always")
def keep(old_t, old_f, old_n, new_t, new_f, new_n, total, prices, has, merged) -> None:
    """Drop the reusable prices that the timeline change old → new can affect.

    A job's price reads the timeline (with its own GPUs handed back) on a
    window from its first step after now, ``f``, to a horizon ``h``. It is
    unchanged if the change is a constant before ``f``, nothing on [f, h], and
    ``f`` is still a step. ``merged`` is scratch with room for both timelines' steps.
    """
    _, reuse, r_step, r_horizon, r_jump, r_fast = prices
    keys, delta, next_change = merged
    if not reuse.any():
        return
    i = j = nk = 0
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
    first = delta[0]
    change = INF
    for i in range(1, nk):
        if delta[i] != first:
            change = keys[i]
            break
    upcoming = INF
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


@njit(cache=True, inline="always")
def take_offer(p, offers, tt, tf, row, current) -> int:
    """Make job ``p``'s offer current: its timeline into row ``row``, its allocation its own.

    Returns the new timeline's length.
    """
    ot, of, on, oat, oag, ona = offers[0], offers[1], offers[2], offers[3], offers[4], offers[5]
    cat, cag, cna = current
    n = compact(ot[p], of[p], on[p], tt[row], tf[row])
    na = ona[p]
    for k in range(na):
        cat[p, k] = oat[p, k]
        cag[p, k] = oag[p, k]
    cna[p] = na
    return n


@njit(cache=True)
def scale_up(now, total, slot, reprice_all, times_in, free_in, gpus_in, left, deadline, model,
             end_in, real_end_in, ptr, at_all, ag_all, speed2, levels2, nlev, fit2, fitrow,
             cap2):
    """Give free GPUs one scaling step at a time to the job with the best offer.

    Jobs are given by position (the runnable list after planning, in deadline
    order). As in the reference, every job is priced again after each step;
    a price whose inputs the step provably left unchanged is reused (see
    :func:`keep`). With ``reprice_all`` false, the faster approximation:
    only the job that grew is re-priced, and when the spare GPUs cover every
    job's top level each job is scaled straight there.

    Returns ``(order, gpus, end, real_end, started, first_change, (next_change,
    step_job, step_end))``: the runnable list's new order (positions), the new
    counts and ends, which jobs got their first GPUs here, the earliest
    allocation change after now; each job's own next change (INF: none), and
    the steps in the order taken (the job's position and its end after it).
    """
    # The arguments live until we return, so their views need no owner; what we
    # allocate is owned by ``results``, ``per_job``, ``space`` and ``state``,
    # which stay alive to the end (see :func:`.jit.borrowed`).
    tables = borrowed((speed2, levels2, nlev, fit2, fitrow, cap2))
    _, levels2, nlev, _, _, _ = tables
    left, deadline, model = borrowed((left, deadline, model))
    m = gpus_in.shape[0]
    n = times_in.shape[0]
    results = (np.arange(m), gpus_in.copy(), end_in.copy(), real_end_in.copy(),
               np.zeros(m, np.bool_))  # fmt: skip
    order, gpus, end, real_end, started = borrowed(results)
    state = (np.empty(m, np.int64), np.ones(m, np.bool_), np.zeros(m, np.float64),
             np.zeros(m, np.bool_), np.zeros(m, np.float64), np.zeros(m, np.float64),
             np.zeros(m, np.int64), np.zeros(m, np.bool_))  # fmt: skip
    next_level, stale, marginal, reuse, r_step, r_horizon, r_jump, r_fast = borrowed(state)
    prices = (marginal, reuse, r_step, r_horizon, r_jump, r_fast)
    steps = (np.empty(total + m, np.int64), np.empty(total + m, np.float64))
    n_steps = 0
    spare = total
    need = 0
    for p in range(m):
        mp = model[p]
        next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
        spare -= gpus[p]
        need += levels2[mp, nlev[mp] - 1] - gpus[p]
    per_job = (ptr[1:] - ptr[:-1], np.zeros(m, np.int64), np.zeros(m, np.int64),
               np.zeros(m, np.float64), np.zeros(m, np.float64), np.zeros(m, np.bool_))  # fmt: skip
    # a plan on a released timeline needs n + na + 4
    width = 2 * (n + (per_job[0].max() if m else 0)) + 16
    space = allocate(m, width)
    tt, tf, current, offers, work, merged = lend(space, per_job)
    cat, cag, cna = current
    oend, oreal, has = offers[6], offers[7], offers[8]
    cur = 0
    copy_into(times_in, tt[0], n)
    copy_into(free_in, tf[0], n)
    for p in range(m):
        for k in range(cna[p]):
            cat[p, k] = at_all[ptr[p] + k]
            cag[p, k] = ag_all[ptr[p] + k]
    if spare != 0 and not reprice_all and spare >= need:
        # fill up: idle jobs first, then the rest, each planned once at its top level
        fill = np.concatenate((order[gpus[order] == 0], order[gpus[order] != 0]))
        for p in fill:
            top = levels2[model[p], nlev[model[p]] - 1]
            if top <= gpus[p]:
                continue
            if n + cna.max() + 8 > width:
                width, space = roomier(n, cna.max(), space)
                tt, tf, current, offers, work, merged = lend(space, per_job)
            next_level[p] = top
            make_offer(p, now, total, slot, tt[cur], tf[cur], n, current, end, left, deadline,
                       model, next_level, offers, work, tables)
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = top
            end[p], real_end[p] = oend[p], oreal[p]
            steps[0][n_steps], steps[1][n_steps] = p, end[p]
            n_steps += 1
            started[p] = True
        idle = np.zeros(m, np.float64)
        for p in range(m):
            idle[p] = INF if gpus[p] == 0 else 0.0
        sort_desc(order, idle)
        spare = 0
    # stale (to be priced) is everyone at first
    priced = spare != 0
    grew = True
    while True:
        if priced:
            for p in order:
                if stale[p]:
                    price(p, spare, now, total, slot, tt[cur], tf[cur], n, gpus, current, end,
                          left, deadline, model, next_level, prices, offers, work, tables)
            sort_desc(order, marginal)
        if spare <= 0 or not grew:
            break
        grew = False
        chosen = -1
        for p in order:
            step = next_level[p] - gpus[p]
            if step > spare or step == 0:
                continue
            if not has[p]:  # priced without a plan (idle job) or on an older timeline
                make_offer(p, now, total, slot, tt[cur], tf[cur], n, current, end, left,
                           deadline, model, next_level, offers, work, tables)
            old_n = n
            cur = 1 - cur
            n = take_offer(p, offers, tt, tf, cur, current)
            gpus[p] = next_level[p]
            end[p], real_end[p] = oend[p], oreal[p]
            steps[0][n_steps], steps[1][n_steps] = p, end[p]
            n_steps += 1
            started[p] = True
            spare -= step
            grew = True
            mp = model[p]
            next_level[p] = next_level_of(levels2, mp, nlev[mp], gpus[p])
            reuse[p] = False
            keep(tt[1 - cur], tf[1 - cur], old_n, tt[cur], tf[cur], n, total, prices, has,
                 merged)
            chosen = p
            break
        if grew and n + cna.max() + 8 > width:  # room for the next plans
            width, space = roomier(n, cna.max(), space)
            tt, tf, current, offers, work, merged = lend(space, per_job)
        if not reprice_all and grew:
            has[:] = False  # every other offer's timeline is stale now
            stale[:] = False
            stale[chosen] = next_level[chosen] > gpus[chosen]
        else:  # every job that can still grow, unless its price provably holds
            for p in range(m):
                step = next_level[p] - gpus[p]
                stale[p] = step > 0 and not (reuse[p] and step <= spare)
        priced = True
    first_change = INF
    next_change = np.full(m, INF)
    cat = current[0]
    for p in range(m):
        for k in range(cna[p]):
            t = cat[p, k]
            if t > now and t < next_change[p]:
                next_change[p] = t
        if next_change[p] < first_change:
            first_change = next_change[p]
    keep_alive((space, per_job, state))
    return (results[0], results[1], results[2], results[3], results[4], first_change,
            (next_change, steps[0][:n_steps], steps[1][:n_steps]))


def compiled() -> bool:
    """Whether numba's cache already holds the planner and the round loop (else the next
    replay compiles them first, about 40 s once per installation)."""
    from mltraces.scheduling import efrounds

    return in_cache(scale_up, estimate) and efrounds.compiled()
