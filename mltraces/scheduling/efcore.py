"""The compiled core of the ElasticFlow replay: planning on a free-GPU timeline and scale-up.

Why compiled. The artifact prices every runnable job with a full re-plan after
every single scaling step, and the exact replay must do the same: on
cluster10 that is ~9,000 steps and ~50,000 plans, each a few dozen
interpreted loop iterations. No reordering of that work removes it (a price
depends on where the other jobs' plans put their steps, which every step
moves), so the loops run as machine code through numba. Without numba the
same functions run as plain Python, with the same results, only slower.

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
from pathlib import Path

import numpy as np

try:  # pragma: no cover - exercised by whichever environment runs the tests
    from numba import njit
except ImportError:  # pragma: no cover

    def njit(*args, **kwargs):
        """No numba: run the functions as plain Python."""
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda function: function


INF = math.inf
NONE = -(2**62)  # an unset GPU count (the reference's undefined variable)


# -- small helpers -------------------------------------------------------------------------
@njit(cache=True)
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


@njit(cache=True)
def bisect_left(a, n: int, x: float) -> int:
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def bisect_right(a, n: int, x: float) -> int:
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def step_index(a, n: int, x: float) -> int:
    """Index of the step starting exactly at ``x``, or -1."""
    i = bisect_left(a, n, x)
    if i < n and a[i] == x:
        return i
    return -1


@njit(cache=True)
def wrap(i: int, n: int) -> int:
    """A Python list index: -1 is the last element."""
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("timeline index out of range")
    return i


@njit(cache=True)
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


@njit(cache=True)
def fit_of(fit, x: int) -> int:
    """``fit[x]`` with Python's indexing (negative wraps, too large raises)."""
    if x == NONE:
        raise TypeError("free GPUs unset")
    n = fit.shape[0]
    if x < 0:
        x += n
    if x < 0 or x >= n:
        raise IndexError("more free GPUs than the cluster has")
    return fit[x]


@njit(cache=True)
def rate(speed, g: int) -> float:
    """Iterations per second on ``g`` GPUs; a count the profile lacks raises (a KeyError)."""
    if g < 0 or g >= speed.shape[0] or math.isnan(speed[g]):
        raise KeyError("no throughput for this GPU count")
    return speed[g]


@njit(cache=True)
def gpu_time(at, ag, na: int, end: float) -> float:
    """GPU-seconds of an allocation held until ``end``."""
    total = 0.0
    for k in range(na - 1):
        total += ag[k] * (at[k + 1] - at[k])
    if na:
        total += ag[na - 1] * (end - at[na - 1])
    return total


@njit(cache=True)
def value_at(times, free, n: int, time: float, default: int) -> int:
    """Free GPUs at ``time`` (``default`` before the first step)."""
    i = bisect_right(times, n, time)
    return free[i - 1] if i else default


@njit(cache=True)
def hold(aval, aset, nf, k: int, gpus: int) -> None:
    """The plan holds ``gpus`` in the timeline's step ``k``: record it, take them off free."""
    aval[k] = gpus
    aset[k] = True
    nf[k] -= gpus


# -- one plan --------------------------------------------------------------------------------
@njit(cache=True)
def finish_plan(nt, nf, nn, aval, aset, xt, xv, end_step, end_value):
    """Collect the allocation steps (sorted, repeats dropped) and add the end step.

    ``xt``/``xv`` is an allocation step at a time that is not on the timeline
    (NaN: none); only a start that the timeline lost has one (the released
    timeline of a job holding more GPUs than were free, which the reference
    would have refused by an assertion). Returns ``(times, free, n, at, ag, na)``, the
    timeline not yet compacted (see :func:`compact`).
    """
    at = np.empty(nn + 1, np.float64)
    ag = np.empty(nn + 1, np.int64)
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
    return nt, nf, nn, at, ag, na


@njit(cache=True)
def compact(nt, nf, nn):
    """The timeline without repeated values (a plan's raw timeline, ready to plan on).

    Kept apart from :func:`finish_plan` because most plans are only priced:
    their timeline is compacted only for the one a step chooses.
    """
    ct = np.empty(nn, np.float64)
    cf = np.empty(nn, np.int64)
    m = 0
    prev = -1
    for k in range(nn):
        if nf[k] != prev:
            ct[m] = nt[k]
            cf[m] = nf[k]
            m += 1
            prev = nf[k]
    return ct, cf, m


@njit(cache=True)
def plan(times, free, n, start, left, deadline, m, speed2, levels2, nlev, fit2, fitrow, cap2,
         total, slot, assign):
    """Plan a job from ``start`` backwards from its deadline on the timeline.

    With ``assign`` the job first holds that many GPUs until the timeline's
    next step (how a scale-up is priced), then is planned as usual.
    Returns ``(times, free, n, at, ag, na, end, real_end)``.
    """
    speed = speed2[m]
    levels = levels2[m, : nlev[m]]
    fit = fit2[fitrow[m]]
    cap = cap2[m]
    nt = np.empty(n + 2, np.float64)
    nf = np.empty(n + 2, np.int64)
    nt[:n] = times[:n]
    nf[:n] = free[:n]
    nn = n
    aval = np.zeros(n + 2, np.int64)
    aset = np.zeros(n + 2, np.bool_)
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
        sp = rate(speed, assign)
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
                r = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, back)
            else:
                r = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0)
            return r[0], r[1], r[2], r[3], r[4], r[5], end, real_end
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
    for q in levels:
        if q > total:
            break
        until = aligned
        gathered = 0.0
        for k in range(hi - 1, lo - 1, -1):
            p = nt[k]
            got = q if nf[k] >= q else min(q, fit_of(fit, nf[k]))
            if not got:
                until = p
                continue
            gathered += ((deadline if until == aligned else until) - p) * rate(speed, got)
            if gathered >= left:
                return forward(times, free, n, nt, nf, nn, aval, aset, xt, xv, start, event,
                               left, deadline, aligned, speed, fit, q, last_q, p, total, slot)
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
                left -= ((deadline if t == aligned else t) - last_t) * rate(speed, last_a)
        last_t, last_k, last_a = t, k, min(last_q, fit_of(fit, nf[k]))
    # 3. after the deadline: whatever fits, up to the cap, until done
    last_t = max(aligned, event)
    lk = step_index(nt, nn, last_t)
    for k in range(bisect_right(nt, nn, aligned), nn):
        t = nt[k]
        q = min(fit_of(fit, nf[wrap(lk, nn)]), cap)
        if not q:
            aval[wrap(lk, nn)] = 0
            aset[wrap(lk, nn)] = True
            last_t, lk = t, k
            continue
        aval[wrap(lk, nn)] = q
        aset[wrap(lk, nn)] = True
        gained = (t - last_t) * rate(speed, q)
        if gained >= left:
            real_end = float(math.ceil(last_t + left / rate(speed, q)))
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
                r = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, carried)
            else:
                r = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0)
            return r[0], r[1], r[2], r[3], r[4], r[5], end, real_end
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
        for g in levels:
            if g <= min(total, cap) and g > q:
                q = g
        if q < 0:
            q = levels[0]
    aval[wrap(lk, nn)] = q
    aset[wrap(lk, nn)] = True
    real_end = float(math.ceil(last_t + left / rate(speed, q)))
    end = align(start, real_end, slot)
    nf[wrap(lk, nn)] = total - q
    r = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, total)
    return r[0], r[1], r[2], r[3], r[4], r[5], end, real_end


@njit(cache=True)
def forward(times, free, n, nt, nf, nn, aval, aset, xt, xv, start, event, left, deadline,
            aligned, speed, fit, q, prev_q, point, total, slot):
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
                sp = rate(speed, last_a)
                gained = ((deadline if t == aligned else t) - last_t) * sp
                if last_t < point or gained < left:
                    left -= gained
                else:
                    real_left = float(math.ceil(left / sp))
                    end = last_t + align(0.0, real_left, slot)
                    real_end = last_t + real_left
                    break
        last_t, last_k = t, k
        last_a = min(q if t >= point else prev_q, fit_of(fit, nf[k]))
    if end != end:
        if last_k < 0:
            raise TypeError("nothing to allocate before the deadline")
        hold(aval, aset, nf, last_k, last_a)
        real_left = float(math.ceil(left / rate(speed, last_a)))
        end = last_t + align(0.0, real_left, slot)
        real_end = last_t + real_left
    back = total
    for u in range(n):
        if times[u] >= end:
            break
        if times[u] >= event:
            back = free[u]
    if step_index(times, n, end) < 0:
        r = finish_plan(nt, nf, nn, aval, aset, xt, xv, end, back)
    else:
        r = finish_plan(nt, nf, nn, aval, aset, xt, xv, math.nan, 0)
    return r[0], r[1], r[2], r[3], r[4], r[5], end, real_end


# -- a round: plan every job, then hand out the free GPUs ----------------------------------
@njit(cache=True)
def next_level_of(levels, gpus: int) -> int:
    """The next scaling step above ``gpus`` (``gpus`` itself at the top)."""
    for g in levels:
        if g > gpus:
            return g
    return gpus


@njit(cache=True)
def released(times, free, n, at, ag, na, end, total):
    """The cluster timeline plus a job's own allocation until its planned end."""
    out_t = np.empty(n + na + 1, np.float64)
    out_f = np.empty(n + na + 1, np.int64)
    m = 0
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
    return out_t, out_f, m


@njit(cache=True)
def estimate(now, total, slot, left, deadline, model, stop_on_miss, speed2, levels2, nlev,
             fit2, fitrow, cap2):
    """Plan jobs (deadline order) one after another on an empty cluster.

    Returns ``(ok, planned, ptr, at, ag, end, real_end, times, free)``: whether
    every plan meets its deadline, how many were planned (``stop_on_miss``
    stops at the first miss), their allocations as ``at[ptr[i]:ptr[i+1]]``,
    and the timeline they leave.
    """
    m = left.shape[0]
    times = np.empty(1, np.float64)
    free = np.empty(1, np.int64)
    times[0] = now
    free[0] = total
    n = 1
    ptr = np.zeros(m + 1, np.int64)
    at_all = np.empty(16 * m + 16, np.float64)
    ag_all = np.empty(16 * m + 16, np.int64)
    end = np.empty(m, np.float64)
    real_end = np.empty(m, np.float64)
    ok = True
    planned = 0
    for i in range(m):
        r = plan(times, free, n, now, left[i], deadline[i], model[i], speed2, levels2, nlev,
                 fit2, fitrow, cap2, total, slot, 0)
        times, free, n = compact(r[0], r[1], r[2])
        na = r[5]
        if ptr[i] + na > at_all.shape[0]:
            at_all = np.concatenate((at_all, np.empty(at_all.shape[0] + na, np.float64)))
            ag_all = np.concatenate((ag_all, np.empty(ag_all.shape[0] + na, np.int64)))
        at_all[ptr[i] : ptr[i] + na] = r[3][:na]
        ag_all[ptr[i] : ptr[i] + na] = r[4][:na]
        ptr[i + 1] = ptr[i] + na
        end[i] = r[6]
        real_end[i] = r[7]
        planned = i + 1
        if r[7] > deadline[i]:
            ok = False
            if stop_on_miss:
                break
    return ok, planned, ptr, at_all, ag_all, end, real_end, times[:n].copy(), free[:n].copy()


@njit(cache=True)
def stable_desc(order, key):
    """``order`` stably sorted by ``key[order]``, largest first (Python's sort(reverse=True))."""
    return order[np.argsort(-key[order], kind="mergesort")]


class _Offers:  # documentation only: what the parallel arrays in scale_up hold
    """Per job (by position): the plan one scaling step up, priced on some timeline.

    ``ot/of/on`` its timeline, ``oat/oag/ona`` its allocation, ``oend/oreal`` its
    ends, ``has`` whether it is valid for the current timeline.
    """


@njit(cache=True)
def make_offer(p, now, total, slot, times, free, n, at_l, ag_l, end, left, deadline, model,
               next_level, ot, of, on, oat, oag, ona, oend, oreal, has, speed2, levels2, nlev,
               fit2, fitrow, cap2):
    """Plan job ``p`` one step up on the timeline with its own GPUs handed back.

    Returns the released timeline it was planned on.
    """
    rt, rf, rn = released(times, free, n, at_l[p], ag_l[p], at_l[p].shape[0], end[p], total)
    r = plan(rt, rf, rn, now, left[p], deadline[p], model[p], speed2, levels2, nlev, fit2,
             fitrow, cap2, total, slot, next_level[p])
    ot[p], of[p], on[p] = r[0], r[1], r[2]
    oat[p], oag[p], ona[p] = r[3], r[4], r[5]
    oend[p], oreal[p] = r[6], r[7]
    has[p] = True
    return rt, rf, rn


@njit(cache=True)
def price(p, spare, now, total, slot, times, free, n, gpus, at_l, ag_l, end, left, deadline,
          model, next_level, marginal, reuse, r_step, r_horizon, r_jump, ot, of, on, oat, oag,
          ona, oend, oreal, has, speed2, levels2, nlev, fit2, fitrow, cap2):
    """The GPU-time per added GPU of scaling job ``p`` one step now (+inf for idle jobs).

    Notes, for :func:`keep`, the window of the timeline the price read: from
    its first step after now to the first step at or after its deadline slot
    and its end (if the deadline slot comes earlier, it reads more).
    """
    level, g = next_level[p], gpus[p]
    reuse[p] = False
    has[p] = False
    if level - g > spare or level == g:
        marginal[p] = -INF
        return
    if g == 0:
        marginal[p] = INF  # idle jobs come first; plan them only when chosen
        return
    rt, rf, rn = make_offer(p, now, total, slot, times, free, n, at_l, ag_l, end, left,
                            deadline, model, next_level, ot, of, on, oat, oag, ona, oend,
                            oreal, has, speed2, levels2, nlev, fit2, fitrow, cap2)
    new = gpu_time(oat[p], oag[p], ona[p], oend[p])
    old = gpu_time(at_l[p], ag_l[p], at_l[p].shape[0], end[p])
    marginal[p] = (new - old) / (level - g)
    aligned = align(now, deadline[p], slot)
    if rn > 1 and aligned >= rt[1]:
        k = bisect_left(rt, rn, max(aligned, oend[p]))
        reuse[p] = True
        r_step[p] = rt[1]
        r_horizon[p] = rt[k] if k < rn else INF
        r_jump[p] = rf[1] - rf[0]


@njit(cache=True)
def keep(old_t, old_f, old_n, new_t, new_f, new_n, total, reuse, r_step, r_horizon, r_jump,
         has):
    """Drop the reusable prices that the timeline change old → new can affect.

    A job's price reads the timeline (with its own GPUs handed back) on a
    window from its first step after now, ``f``, to a horizon ``h``. It is
    unchanged if the change is a constant before ``f``, nothing on [f, h], and
    ``f`` is still a step.
    """
    if not reuse.any():
        return
    keys = np.empty(old_n + new_n, np.float64)
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
    delta = np.empty(nk, np.int64)
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
    next_change = np.empty(nk, np.float64)
    upcoming = INF
    for i in range(nk - 1, -1, -1):
        next_change[i] = upcoming
        if delta[i]:
            upcoming = keys[i]
    for p in range(reuse.shape[0]):
        if not reuse[p]:
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


@njit(cache=True)
def scale_up(now, total, slot, reprice_all, times, free, gpus_in, left, deadline, model,
             end_in, real_end_in, ptr, at_all, ag_all, speed2, levels2, nlev, fit2, fitrow,
             cap2):
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
    m = gpus_in.shape[0]
    n = times.shape[0]
    gpus = gpus_in.copy()
    end = end_in.copy()
    real_end = real_end_in.copy()
    started = np.zeros(m, np.bool_)
    order = np.arange(m)
    at_l = [at_all[ptr[p] : ptr[p + 1]].copy() for p in range(m)]
    ag_l = [ag_all[ptr[p] : ptr[p + 1]].copy() for p in range(m)]
    next_level = np.empty(m, np.int64)
    spare = total
    need = 0
    for p in range(m):
        lv = levels2[model[p], : nlev[model[p]]]
        next_level[p] = next_level_of(lv, gpus[p])
        spare -= gpus[p]
        need += lv[-1] - gpus[p]
    ot = [times for _ in range(m)]
    of = [free for _ in range(m)]
    on = np.zeros(m, np.int64)
    oat = [at_all[:0] for _ in range(m)]
    oag = [ag_all[:0] for _ in range(m)]
    ona = np.zeros(m, np.int64)
    oend = np.zeros(m, np.float64)
    oreal = np.zeros(m, np.float64)
    has = np.zeros(m, np.bool_)
    marginal = np.zeros(m, np.float64)
    reuse = np.zeros(m, np.bool_)
    r_step = np.zeros(m, np.float64)
    r_horizon = np.zeros(m, np.float64)
    r_jump = np.zeros(m, np.int64)
    if spare != 0 and not reprice_all and spare >= need:
        # fill up: idle jobs first, then the rest, each planned once at its top level
        fill = np.concatenate((order[gpus[order] == 0], order[gpus[order] != 0]))
        for p in fill:
            top = levels2[model[p], nlev[model[p]] - 1]
            if top <= gpus[p]:
                continue
            next_level[p] = top
            make_offer(p, now, total, slot, times, free, n, at_l, ag_l, end, left, deadline,
                       model, next_level, ot, of, on, oat, oag, ona, oend, oreal, has,
                       speed2, levels2, nlev, fit2, fitrow, cap2)
            times, free, n = compact(ot[p], of[p], on[p])
            at_l[p], ag_l[p] = oat[p][: ona[p]].copy(), oag[p][: ona[p]].copy()
            gpus[p] = top
            end[p], real_end[p] = oend[p], oreal[p]
            started[p] = True
        idle = np.zeros(m, np.float64)
        for p in range(m):
            idle[p] = INF if gpus[p] == 0 else 0.0
        order = stable_desc(order, idle)
        spare = 0
    elif spare != 0:
        for p in order:
            price(p, spare, now, total, slot, times, free, n, gpus, at_l, ag_l, end, left,
                  deadline, model, next_level, marginal, reuse, r_step, r_horizon, r_jump, ot,
                  of, on, oat, oag, ona, oend, oreal, has, speed2, levels2, nlev, fit2,
                  fitrow, cap2)
        order = stable_desc(order, marginal)
    grew = True
    while spare > 0 and grew:
        grew = False
        chosen = -1
        for p in order:
            step = next_level[p] - gpus[p]
            if step > spare or step == 0:
                continue
            if not has[p]:  # priced without a plan (idle job) or on an older timeline
                make_offer(p, now, total, slot, times, free, n, at_l, ag_l, end, left,
                           deadline, model, next_level, ot, of, on, oat, oag, ona, oend,
                           oreal, has, speed2, levels2, nlev, fit2, fitrow, cap2)
            old_t, old_f, old_n = times, free, n
            times, free, n = compact(ot[p], of[p], on[p])
            at_l[p], ag_l[p] = oat[p][: ona[p]].copy(), oag[p][: ona[p]].copy()
            gpus[p] = next_level[p]
            end[p], real_end[p] = oend[p], oreal[p]
            started[p] = True
            spare -= step
            grew = True
            lv = levels2[model[p], : nlev[model[p]]]
            next_level[p] = next_level_of(lv, gpus[p])
            reuse[p] = False
            keep(old_t, old_f, old_n, times, free, n, total, reuse, r_step, r_horizon,
                 r_jump, has)
            chosen = p
            break
        if not reprice_all and grew:
            has[:] = False  # every other offer's timeline is stale now
            if next_level[chosen] > gpus[chosen]:
                price(chosen, spare, now, total, slot, times, free, n, gpus, at_l, ag_l, end,
                      left, deadline, model, next_level, marginal, reuse, r_step, r_horizon,
                      r_jump, ot, of, on, oat, oag, ona, oend, oreal, has, speed2, levels2,
                      nlev, fit2, fitrow, cap2)
            order = stable_desc(order, marginal)
            continue
        for p in order:
            if next_level[p] > gpus[p]:
                if reuse[p] and next_level[p] - gpus[p] <= spare:
                    continue
                price(p, spare, now, total, slot, times, free, n, gpus, at_l, ag_l, end, left,
                      deadline, model, next_level, marginal, reuse, r_step, r_horizon, r_jump,
                      ot, of, on, oat, oag, ona, oend, oreal, has, speed2, levels2, nlev, fit2,
                      fitrow, cap2)
        order = stable_desc(order, marginal)
    first_change = INF
    for p in range(m):
        for t in at_l[p]:
            if t > now and t < first_change:
                first_change = t
    return order, gpus, end, real_end, started, first_change


def compiled() -> bool:
    """Whether numba's cache already holds the compiled planner.

    False means the next ElasticFlow replay compiles it first (about 40 s, once
    per installation), which the CLI says rather than look stuck. Plain Python
    (no numba, or ``NUMBA_DISABLE_JIT``) has nothing to compile.
    """
    folder = getattr(getattr(scale_up, "_cache", None), "cache_path", None)
    if folder is None:
        return True
    return all(any(Path(folder).glob(f"efcore.{name}-*.nbi")) for name in ("scale_up", "estimate"))
