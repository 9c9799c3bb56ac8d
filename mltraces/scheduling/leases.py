"""Chronus's lease plans: which job runs in which of the coming lease terms.

A *plan* covers lease terms 0, 1, 2, … (term 0 is the one about to start).
Job ``i`` needs ``need[i]`` terms of ``width[i]`` GPUs, each in a different
term before its ``horizon[i]`` (the last whole term before its deadline), and
term ``b`` has ``room[b]`` GPUs (the cluster's size past the given profile).
The Chronus artifact finds plans two ways, both here as facts of its code:

- :func:`pack` — its quick test: jobs by width (widest first), then by slack
  (``horizon - need``), then by horizon (latest first), each filling the
  latest terms that still have room. It decides admission, and a failed
  test is what sends it to the integer program.
- :func:`solve` — its integer program (python-mip on Gurobi in the artifact;
  HiGHS through :func:`scipy.optimize.milp` here): every job gets exactly its
  terms within its horizon, no term over its room, and the GPUs given to term
  0 are as few as possible (``"minimize"``: when some job was turned down,
  work is pushed later) or as many as possible (``"maximize"``).

The program's optimum is rarely unique: which jobs fill term 0 when many
could, and where the later terms go, are ties any solver may break its own
way. :func:`solve` returns one optimal plan. When a packing of its own provably
reaches the optimum (no GPUs in term 0 beyond the jobs whose every term is
needed, or term 0 filled up to the largest width sum that fits), that packing
is the answer and HiGHS is not called; otherwise HiGHS solves the program, cut
to the terms an optimal plan ever needs (after the last term whose room differs
from the cluster's, no more terms than the jobs' total need: an empty term
can take all of a later one's jobs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: what term 0 of a plan should hold: as few GPUs as possible, or as many
OBJECTIVES = ("minimize", "maximize")
#: where a certified packing puts a job's later terms (a choice among optimal plans)
LAYOUTS = ("latest", "earliest")


@dataclass(frozen=True)
class Demand:
    """One job's claim on the coming lease terms (all whole numbers)."""

    width: int
    need: int
    horizon: int


Plan = list[np.ndarray]  # per job, the terms it runs in, ascending (int64)


_NONE = np.zeros(0, np.int64)  # a plan with no terms (never written to)
_FIRST = np.zeros(1, np.int64)  # term 0 only


def room_of(profile: Sequence[int] | np.ndarray, size: int, terms: int) -> np.ndarray:
    """GPUs free per term for ``terms`` terms: the profile, then the whole cluster."""
    room = np.full(max(terms, len(profile)), size, dtype=np.int64)
    room[: len(profile)] = profile
    return room


def _order(demands: Sequence[Demand]) -> list[int]:
    """The artifact's packing order: widest first, then least slack, then latest horizon."""
    return sorted(range(len(demands)), key=lambda k: (-demands[k].width,
                                                      demands[k].horizon - demands[k].need,
                                                      -demands[k].horizon))


def pack(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
         ) -> tuple[bool, np.ndarray, Plan]:
    """The artifact's quick test: (every job fits?, room left per term, each job's terms).

    Jobs are taken in :func:`_order` (ties in the given order); each takes the
    latest terms before its horizon with room for it. Packing stops at the first
    job that does not fit.
    """
    room = room_of(profile, size, max((d.horizon for d in demands), default=0))
    plan: Plan = [_NONE] * len(demands)
    for k in _order(demands):
        taken = _fill_latest(demands[k], room)
        if taken is None:
            return False, room, plan
        plan[k] = taken
    return True, room, plan


def _fill_latest(demand: Demand, room: np.ndarray) -> np.ndarray | None:
    """Take the latest terms with room for the job (``room`` is updated); None if too few.

    The artifact walks terms from the latest down, taking each with room until it
    has ``need``; for ``need`` 0 that walk ends at once only if the latest term
    is full (kept as it is).
    """
    horizon = max(demand.horizon, 0)
    if demand.need <= 0:
        return _NONE if horizon and room[horizon - 1] < demand.width else None
    if demand.need <= horizon:  # the common case: the latest terms all have room
        latest = room[horizon - demand.need:horizon]
        if latest.min() >= demand.width:
            latest -= demand.width
            return np.arange(horizon - demand.need, horizon)
    open_terms = (room[:horizon] >= demand.width).nonzero()[0]
    if len(open_terms) < demand.need:
        return None
    chosen = open_terms[len(open_terms) - demand.need:]
    room[chosen] -= demand.width
    return chosen


def pack_each(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
              ) -> tuple[bool, Plan]:
    """The artifact's fallback when its integer program fails: :func:`pack`'s order, but a job
    that does not fit gives its terms back and the next is tried. True if every job got terms.
    """
    room = room_of(profile, size, max((d.horizon for d in demands), default=0))
    plan: Plan = [_NONE] * len(demands)
    placed = 0
    for k in _order(demands):
        before = room.copy()
        taken = _fill_latest(demands[k], room)
        if taken is None:
            room[:] = before
            continue
        plan[k] = taken
        placed += 1
    return placed == len(demands), plan


def solve(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
          objective: str,
          *, shortcut: bool = True, layout: str = "latest") -> Plan | None:
    """An optimal plan of the artifact's integer program, or None when none exists.

    Args:
        demands: The jobs' claims (jobs with ``need`` 0 get an empty row).
        profile: GPUs free per term at the start (past it: ``size``).
        size: The cluster's GPUs.
        objective: ``"minimize"`` or ``"maximize"`` the GPUs in term 0.
        shortcut: Use a packing when it provably reaches the optimum (see the
            module docstring); False always asks HiGHS.
        layout: Where that packing puts the terms after term 0: ``"latest"`` (as
            late as each job can, the artifact's own packing) or ``"earliest"``;
            both are optimal plans, so the choice is one among ties.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if any(d.need > d.horizon for d in demands):
        return None
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if shortcut:
        plan = _certified(demands, profile, size, objective, layout)
        if plan is not None:
            return plan
    return _milp(demands, profile, size, objective)


def _certified(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
               objective: str, layout: str) -> Plan | None:
    """A packing whose term 0 provably holds the optimum, else None."""
    room0 = int(profile[0]) if len(profile) else size
    if objective == "minimize":
        first = [k for k, d in enumerate(demands) if d.need and d.need == d.horizon]
    else:
        first = _fullest_first_term(demands, room0)
        if first is None:
            return None
    return _pack_around(demands, profile, size, set(first), layout)


def _fullest_first_term(demands: Sequence[Demand], room0: int) -> list[int] | None:
    """Jobs for term 0 with the largest width sum that fits (least slack first), if that sum
    is the most any choice can reach; None when the greedy choice falls short of it."""
    eligible = [k for k, d in enumerate(demands) if d.need and d.horizon]
    chosen, used = [], 0
    for k in sorted(eligible, key=lambda k: (demands[k].horizon - demands[k].need, k)):
        if used + demands[k].width <= room0:
            chosen.append(k)
            used += demands[k].width
    if used < _best_width_sum([demands[k].width for k in eligible], room0):
        return None
    return chosen


def _best_width_sum(widths: Sequence[int], limit: int) -> int:
    """The largest sum of a subset of ``widths`` that is at most ``limit`` (subset sum)."""
    limit = max(int(limit), 0)
    reachable = np.zeros(limit + 1, dtype=bool)
    reachable[0] = True
    for width in widths:
        if 0 < width <= limit:
            reachable[width:] |= reachable[:-width].copy()
    return int(np.flatnonzero(reachable).max())


def _pack_around(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
                 first: set[int], layout: str = "latest") -> Plan | None:
    """Term 0 holds exactly the jobs in ``first``; the rest is packed in :func:`pack`'s order,
    each job in its latest (or earliest) open terms from term 1 on. None if that fails."""
    room = room_of(profile, size, max(max((d.horizon for d in demands), default=0), 1))
    plan: Plan = [_NONE] * len(demands)
    for k in first:
        if room[0] < demands[k].width:
            return None
        room[0] -= demands[k].width
        plan[k] = _FIRST
    room[0] = -1  # nobody else takes term 0
    for k in _order(demands):
        d = demands[k]
        rest = Demand(d.width, d.need - (k in first), d.horizon)
        if rest.need == 0:
            continue
        taken = _fill_latest(rest, room) if layout == "latest" else _fill_earliest(rest, room)
        if taken is None:
            return None
        plan[k] = np.concatenate([plan[k], taken]) if k in first else taken
    return plan


def _fill_earliest(demand: Demand, room: np.ndarray) -> np.ndarray | None:
    """Take the earliest terms with room for the job (``room`` is updated); None if too few."""
    open_terms = (room[: max(demand.horizon, 0)] >= demand.width).nonzero()[0]
    if len(open_terms) < demand.need:
        return None
    chosen = open_terms[: demand.need]
    room[chosen] -= demand.width
    return chosen


def _milp(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
          objective: str) -> Plan | None:
    """The integer program solved by HiGHS on the terms an optimal plan needs."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    varied = max((b + 1 for b, r in enumerate(profile) if r != size), default=0)
    cut = max(varied, 1) + sum(d.need for d in demands)
    horizons = [min(d.horizon, cut) for d in demands]
    terms = max(horizons, default=0)
    if terms == 0:
        return [_NONE] * len(demands)
    room = room_of(profile, size, terms)[:terms]
    starts = np.concatenate([[0], np.cumsum(horizons)]).astype(np.int64)
    count = int(starts[-1])
    job_of = np.repeat(np.arange(len(demands)), horizons)
    term_of = np.arange(count) - starts[job_of]
    width = np.array([d.width for d in demands], dtype=float)
    sign = 1.0 if objective == "minimize" else -1.0
    cost = np.where(term_of == 0, sign * width[job_of], 0.0)
    rows = np.concatenate([job_of, len(demands) + term_of])
    cols = np.concatenate([np.arange(count), np.arange(count)])
    values = np.concatenate([np.ones(count), width[job_of]])
    matrix = coo_matrix((values, (rows, cols)), shape=(len(demands) + terms, count)).tocsr()
    lower = np.concatenate([[d.need for d in demands], np.full(terms, -np.inf)])
    upper = np.concatenate([[d.need for d in demands], room])
    result = milp(cost, constraints=LinearConstraint(matrix, lower, upper),
                  integrality=np.ones(count), bounds=Bounds(0, 1),
                  options={"mip_rel_gap": 0.0})
    if result.x is None:
        return None
    chosen = np.round(result.x) > 0
    return [chosen[starts[k]: starts[k + 1]].nonzero()[0] for k in range(len(demands))]
