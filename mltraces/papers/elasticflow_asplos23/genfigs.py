"""ElasticFlow (ASPLOS'23) Figs. 9, 10 and 11 as data: generated traces, clusters, policies.

The three figures run on traces from the artifact's generator (:mod:`.generator`),
with 240 s slots:

* Fig. 9, cluster size: 1,000 jobs (``lam`` 1,500 s) on 64, 128 and 256 GPUs under
  EDF, EDF + admission control, EDF + elastic scaling and ElasticFlow;
* Fig. 10, cluster efficiency over time: the deterministic 100-job trace on 128 GPUs;
* Fig. 11, share of best-effort jobs: 200 jobs (``lam`` 900 s) on 64 GPUs with 10 %
  to 90 % of them best-effort.

The setups and published values live once, in this paper's ``published.json``
(``fig9``/``fig10``/``fig11``). The artifact
draws Figs. 9 and 11's deadlines unseeded; here each seed is a deadline stream
(``deadline_seed``) over the artifact's jobs (``seed=0``), and one seed serves
every best-effort share of Fig. 11 (the shares then differ only in which jobs
are best-effort). Every policy of these figures is replayed, Chronus too (its
round log is the artifact's resource log; best-effort jobs keep their listed
deadline there, as the artifact's trace converter writes them); a policy not
registered in :data:`~mltraces.scheduling.api.POLICIES` would be shown as
published only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mltraces.papers.elasticflow_asplos23.generator import TraceSpec, generate_trace
from mltraces.scheduling.api import POLICIES, Case
from mltraces.scheduling.cluster import ClusterSpec
from mltraces.scheduling.jobs import as_jobs
from mltraces.scheduling.profiles import Profiles
from mltraces.scheduling.results import ScheduleResult

#: deadline streams replayed for Figs. 9 and 11 (the artifact's are unseeded)
SEEDS: tuple[int, ...] = tuple(range(1, 11))


def setup(figure: str) -> dict[str, Any]:
    """The figure's setup and published values from the paper's published.json."""
    from mltraces.papers import published

    return published("elasticflow_asplos23")[figure]


def replayed(policies: Iterable[str]) -> list[str]:
    """The figure's policies that this package replays (the rest are published only)."""
    return [p for p in policies if p in POLICIES]


def trace_spec(figure: str, **changes: Any) -> TraceSpec:
    return TraceSpec(**{**setup(figure)["trace"], **changes})


# -- cases ----------------------------------------------------------------------------------
def fig9_cases(profiles: Profiles, clusters: Mapping[str, ClusterSpec],
               seeds: Sequence[int] = SEEDS) -> list[Case]:
    """One case per (seed, cluster), labelled ``seed=<s>``; the cluster is the case's."""
    slot = setup("fig9")["slot"]
    cases = []
    for seed in seeds:  # one trace per seed, converted once for all of its clusters
        jobs = as_jobs(generate_trace(profiles, trace_spec("fig9", deadline_seed=seed)))
        for name in setup("fig9")["clusters"]:
            cases.append(Case.build(f"seed={seed}", jobs, clusters[name], profiles, slot=slot))
    return cases


def fig10_case(profiles: Profiles, cluster: ClusterSpec) -> Case:
    jobs = generate_trace(profiles, trace_spec("fig10"))
    return Case.build("fig10", jobs, cluster, profiles, slot=setup("fig10")["slot"])


def fig11_cases(profiles: Profiles, cluster: ClusterSpec, seeds: Sequence[int] = SEEDS,
                shares: Sequence[float] | None = None) -> list[Case]:
    """One case per (seed, best-effort share), labelled ``share=<x>,seed=<s>``."""
    shares = setup("fig11")["best_effort"] if shares is None else shares
    slot = setup("fig11")["slot"]
    return [Case.build(f"share={share},seed={seed}",
                       generate_trace(profiles,
                                      trace_spec("fig11", best_effort=share, deadline_seed=seed)),
                       cluster, profiles, slot=slot)
            for seed in seeds for share in shares]


# -- measures -------------------------------------------------------------------------------
def _labels(trace: str) -> dict[str, float]:
    return {k: float(v) for k, v in (part.split("=") for part in trace.split(","))}


def fig9_table(result: ScheduleResult) -> Any:
    """cluster, seed, policy, ratio: one row per replay."""
    summary = result.summary
    seeds = [int(_labels(t)["seed"]) for t in summary["trace"]]
    return summary.assign(seed=seeds)[["cluster", "seed", "policy", "ddl_satis_ratio"]].rename(
        columns={"ddl_satis_ratio": "ratio"})


def fig11_table(result: ScheduleResult) -> Any:
    """share, seed, policy, ratio, best-effort mean JCT and its improvement over Gandiva.

    The JCT is the one the artifact's job log records (``logged_jct``,
    truncated to whole seconds as it writes it), averaged over the best-effort
    jobs that finished; the improvement is Gandiva's mean over the policy's,
    per trace (Gandiva = 1).
    """
    import pandas as pd

    jobs = result.jobs
    best = jobs[jobs["best_effort"] & np.isfinite(jobs["logged_jct"])]
    jct = (np.trunc(best["logged_jct"]).groupby([best["trace"], best["policy"]]).mean()
           .rename("best_effort_jct"))
    summary = result.summary.set_index(["trace", "policy"])[["ddl_satis_ratio"]]
    table = summary.join(jct).reset_index()
    gandiva = table[table["policy"] == "gandiva"].set_index("trace")["best_effort_jct"]
    table["jct_improvement"] = table["trace"].map(gandiva) / table["best_effort_jct"]
    labels = pd.DataFrame([_labels(t) for t in table["trace"]], index=table.index)
    return table.assign(share=labels["share"], seed=labels["seed"].astype(int)).rename(
        columns={"ddl_satis_ratio": "ratio"})[
        ["share", "seed", "policy", "ratio", "best_effort_jct", "jct_improvement"]]


def efficiency_steps(times: Sequence[float], efficiency: Sequence[float], gap: float = 2400,
                     since: float = -610, skip_zero: bool = False
                     ) -> tuple[list[float], list[float]]:
    """The curve the artifact's ``plot_fig10.py`` draws from a round log.

    It keeps a round only if it comes at least ``gap`` seconds after the last
    one kept (starting from ``since``, so the first one at or after 1,790 s),
    draws each as a step (a point just before it at the previous value), drops
    to 0 at the end, and measures hours from the first round kept. Its points
    go through a dict keyed by hour, so the final drop replaces the last
    value there: kept, as drawn. For Chronus's log the script also passes over
    rounds of efficiency 0 (``skip_zero``).
    """
    xs: list[float] = []
    ys: list[float] = []
    last = since
    for t, e in zip(times, efficiency, strict=True):
        t = int(float(t))
        if t - last < gap or (skip_zero and e == 0):
            continue
        last = t
        if xs:
            xs.append(t - 1e-6)
            ys.append(ys[-1])
        xs.append(t)
        ys.append(float(e))
    if not xs:
        return [], []
    if ys[-1] != 0:
        xs.append(xs[-1])
        ys.append(0.0)
    points = dict(zip(((x - xs[0]) / 3600 for x in xs), ys, strict=True))
    return list(points), list(points.values())
