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

The packings run in :mod:`.leasecore` (compiled: a replay packs hundreds of
thousands of times). Its callers that pack by the thousand (:mod:`.chronus`)
pass the jobs as int64 arrays (:func:`fits`, :func:`earliest_horizon`,
:func:`solve_flat`) and get plans written flat (:class:`Flat`) or, from
:func:`solve_spans`, as runs of terms (:class:`Spans`: a replay's jobs need up to
thousands of terms each, in a few runs); :func:`pack`, :func:`pack_each` and
:func:`solve` take and give them per job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import NamedTuple

import numpy as np

#: what term 0 of a plan should hold: as few GPUs as possible, or as many
OBJECTIVES = ("minimize", "maximize")
#: where a certified packing puts a job's later terms (a choice among optimal plans)
LAYOUTS = ("latest", "earliest")
#: :func:`scipy.optimize.milp`'s status when its iteration or time limit stopped it
_STOPPED = 1


@dataclass(frozen=True)
class Demand:
    """One job's claim on the coming lease terms (all whole numbers)."""

    width: int
    need: int
    horizon: int


Plan = list[np.ndarray]  # per job, the terms it runs in, ascending (int64)


@dataclass
class TimeLimit:
    """Seconds each integer program may take (the artifact gives python-mip 5), and what the
    limit did: programs ``stopped`` there with a plan that is feasible but not proven
    optimal (used, as the artifact uses its solver's incumbent), and programs ``unsolved``
    there, with no plan at all (:class:`ProgramTimedOut`)."""

    seconds: float
    stopped: int = 0
    unsolved: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.seconds < math.inf:
            raise ValueError(f"a solver time limit is a positive number of seconds, "
                             f"got {self.seconds!r}")


class ProgramTimedOut(Exception):
    """The integer program reached its :class:`TimeLimit` without any plan."""


def room_of(profile: Sequence[int] | np.ndarray, size: int, terms: int) -> np.ndarray:
    """GPUs free per term for ``terms`` terms: the profile, then the whole cluster."""
    room = np.full(max(terms, len(profile)), size, dtype=np.int64)
    room[: len(profile)] = profile
    return room


def columns(demands: Sequence[Demand]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The demands as the int64 arrays (width, need, horizon) the compiled loops read."""
    width = np.array([d.width for d in demands], np.int64)
    need = np.array([d.need for d in demands], np.int64)
    horizon = np.array([d.horizon for d in demands], np.int64)
    return width, need, horizon


class Flat(NamedTuple):
    """A plan written flat: job ``k``'s terms are ``terms[start[k]:start[k] + count[k]]``
    (one array for all jobs: cheaper than one per job where plans are made by the thousand)."""

    terms: np.ndarray
    start: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, plan: Plan) -> Flat:
        counts = np.array([len(terms) for terms in plan], np.int64)
        start = np.zeros(len(plan), np.int64)
        np.cumsum(counts[:-1], out=start[1:])
        terms = np.concatenate(plan).astype(np.int64) if plan else np.zeros(0, np.int64)
        return cls(terms, start, counts)

    def advance(self) -> list[bool]:
        """Move the plan one term later, in place (term 0 dropped, the others one earlier);
        whether each job's plan took term 0."""
        return _core().advance(*self).view(bool).tolist()

    def rows(self) -> Plan:
        """One array of terms per job."""
        return [self.terms[a: a + c] for a, c in zip(self.start.tolist(), self.count.tolist(),
                                                      strict=True)]


class Spans(NamedTuple):
    """A plan written as spans: job ``k``'s terms are the runs ``range(spans[2 * j],
    spans[2 * j + 1])`` for ``j`` from ``at[k]`` to ``at[k] + count[k] - 1``, in order (a
    job needing thousands of terms in a few runs is a few numbers, not thousands)."""

    spans: np.ndarray
    at: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, flat: Flat) -> Spans:
        return cls(*_core().spans_of(*flat))

    def rows(self) -> Plan:
        """One array of terms per job."""
        pairs = self.spans.reshape(-1, 2).tolist()
        return [np.array([t for lo, hi in pairs[a: a + c] for t in range(lo, hi)], np.int64)
                for a, c in zip(self.at.tolist(), self.count.tolist(), strict=True)]

    def reordered(self, order: np.ndarray) -> Spans:
        """Job ``k`` of the result is job ``order[k]`` of this plan."""
        return Spans(self.spans, self.at[order], self.count[order])


@cache
def _core() -> ModuleType:
    """The compiled packing loops (imported on first use, after :mod:`.native` is set up)."""
    from mltraces.scheduling.cores import leasecore

    return leasecore


def as_profile(profile: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.asarray(profile, dtype=np.int64).reshape(-1)


def pack(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
         ) -> tuple[bool, np.ndarray, Plan]:
    """The artifact's quick test: (every job fits?, room left per term, each job's terms).

    Jobs are taken in the artifact's order (widest first, then least slack, then latest
    horizon; ties in the given order); each takes the latest terms before its horizon
    with room for it. Packing stops at the first job that does not fit.
    """
    return _packed(demands, profile, size, stop=True)


def fits(width: np.ndarray, need: np.ndarray, horizon: np.ndarray,
         profile: np.ndarray, size: int) -> bool:
    """:func:`pack`'s answer alone, for jobs given as int64 arrays (nothing is allocated
    for the plan)."""
    return bool(_core().fits(width, need, horizon, profile, size))


def earliest_horizon(width: np.ndarray, need: np.ndarray, horizon: np.ndarray,
                     profile: np.ndarray, size: int, low: int, high: int) -> int:
    """The artifact's binary search for the least horizon in ``[low, high]`` of the last job
    with which :func:`fits` (``high`` when none below it); ``horizon[-1]`` is left at it."""
    return int(_core().earliest_horizon(width, need, horizon, profile, size, low, high))


def _packed(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
            stop: bool) -> tuple[bool, np.ndarray, Plan]:
    """Pack in the artifact's order; a job that does not fit ends it (``stop``) or is passed
    over (its terms given back)."""
    width, need, horizon = columns(demands)
    room = _core().room_for(horizon, as_profile(profile), size, 0)
    flat = Flat(*_core().slots(need))
    placed = _core().fill(width, need, horizon, room, stop, *flat)
    return placed == len(demands), room, flat.rows()


def pack_each(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
              ) -> tuple[bool, Plan]:
    """The artifact's fallback when its integer program fails: :func:`pack`'s order, but a job
    that does not fit gives its terms back and the next is tried. True if every job got terms.
    """
    fit, _, plan = _packed(demands, profile, size, stop=False)
    return fit, plan


def solve(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
          objective: str,
          *, shortcut: bool = True, layout: str = "latest", limit: TimeLimit | None = None
          ) -> Plan | None:
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
        limit: Seconds HiGHS may take (None: no limit). Stopped there, it answers with
            the best plan it found (counted in ``limit.stopped``), or raises
            :class:`ProgramTimedOut` when it found none.
    """
    flat = solve_flat(*columns(demands), as_profile(profile), size, objective,
                      shortcut=shortcut, layout=layout, limit=limit)
    return None if flat is None else flat.rows()


def solve_flat(width: np.ndarray, need: np.ndarray, horizon: np.ndarray, profile: np.ndarray,
               size: int, objective: str,
               *, shortcut: bool = True, layout: str = "latest", limit: TimeLimit | None = None
               ) -> Flat | None:
    """:func:`solve` for jobs given as int64 arrays, its plan written flat."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    if _core().overdrawn(need, horizon):
        return None
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if shortcut:  # a packing that provably reaches the optimum (see the module docstring)
        flat = _core().certified(width, need, horizon, profile, size, objective == "maximize",
                                 layout == "latest")
        if flat is not None:
            return Flat(*flat)
    demands = [Demand(w, q, h) for w, q, h in zip(width.tolist(), need.tolist(),
                                                  horizon.tolist(), strict=True)]
    plan = _milp(demands, profile, size, objective, limit)
    return None if plan is None else Flat.of(plan)


def solve_spans(width: np.ndarray, need: np.ndarray, horizon: np.ndarray, profile: np.ndarray,
                size: int, objective: str,
                *, shortcut: bool = True, layout: str = "latest", limit: TimeLimit | None = None
                ) -> Spans | None:
    """:func:`solve_flat`'s plan written as spans: the certified packing with the latest
    layout writes it so directly, at a cost per run of terms rather than per term."""
    if shortcut and layout == "latest" and objective in OBJECTIVES:
        if _core().overdrawn(need, horizon):
            return None
        spans = _core().certified_spans(width, need, horizon, profile, size,
                                        objective == "maximize")
        if spans is not None:
            return Spans(*spans)
        shortcut = False  # the same packing as solve_flat's: it would fail there too
    flat = solve_flat(width, need, horizon, profile, size, objective, shortcut=shortcut,
                      layout=layout, limit=limit)
    return None if flat is None else Spans.of(flat)


def _milp(demands: Sequence[Demand], profile: Sequence[int] | np.ndarray, size: int,
          objective: str, limit: TimeLimit | None = None) -> Plan | None:
    """The integer program solved by HiGHS on the terms an optimal plan needs (within
    ``limit``: see :func:`solve`)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    varied = max((b + 1 for b, r in enumerate(profile) if r != size), default=0)
    cut = max(varied, 1) + sum(d.need for d in demands)
    horizons = [min(d.horizon, cut) for d in demands]
    terms = max(horizons, default=0)
    if terms == 0:
        return [np.zeros(0, np.int64) for _ in demands]
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
    options: dict[str, float] = {"mip_rel_gap": 0.0}
    if limit is not None:
        options["time_limit"] = limit.seconds
    result = milp(cost, constraints=LinearConstraint(matrix, lower, upper),
                  integrality=np.ones(count), bounds=Bounds(0, 1), options=options)
    if limit is not None and result.status == _STOPPED:
        if result.x is None:
            limit.unsolved += 1
            raise ProgramTimedOut(f"no lease plan within {limit.seconds:g} s")
        limit.stopped += 1
    if result.x is None:
        return None
    chosen = np.round(result.x) > 0
    return [chosen[starts[k]: starts[k + 1]].nonzero()[0] for k in range(len(demands))]
