"""ElasticFlow (ASPLOS'23) Fig. 8(b) as data: traces, cluster per trace, policies, published bars.

The figure compares deadline satisfactory ratios on the ten ITP clusters of
``elasticflow-traces.tar.gz`` and the artifact's Philly trace, each replayed
on the cluster size the artifact's ``run_fig8b.sh`` uses. The facts live once,
in this paper's ``published.json`` (``fig8b``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _figure() -> dict[str, Any]:
    """Fig. 8(b)'s setup and published bars, as the paper's published.json records them."""
    from mltraces.papers import published

    return published("elasticflow_asplos23")["fig8b"]


_SETUP = _figure()["setup"]
#: trace label → cluster spec name (run_fig8b.sh)
FIG8B_CLUSTERS: dict[str, str] = {row["label"]: row["cluster"] for row in _SETUP}
#: trace label → the catalog trace it replays (``mltraces schedule --trace``)
FIG8B_TRACE_IDS: dict[str, str] = {row["label"]: row["trace"] for row in _SETUP}
FIG8B_TRACES: tuple[str, ...] = tuple(FIG8B_CLUSTERS)
#: the figure's policies, in its legend's order (Chronus: the artifact's chronus-scheduler)
FIG8B_POLICIES: tuple[str, ...] = ("edf", "gandiva", "tiresias", "themis", "chronus",
                                   "elasticflow")
#: policy name → the figure's legend name
FIG8B_NAMES: dict[str, str] = dict(_figure()["policies"])
#: published deadline satisfactory ratios, policy → trace → value
#: (the artifact's plot_figure/scripts/plot_fig8b.py; an earlier state of its code)
PUBLISHED_FIG8B: dict[str, dict[str, float]] = {
    policy: dict(zip(FIG8B_TRACES, values, strict=True))
    for policy, values in _figure()["ratios"].items()
}


def published_frame():
    """PUBLISHED_FIG8B as a tidy table: trace, policy, published_ratio."""
    import pandas as pd

    return pd.DataFrame(
        [(t, p, v) for p, row in PUBLISHED_FIG8B.items() for t, v in row.items()],
        columns=["trace", "policy", "published_ratio"],
    )


def fig8b_cases(
    traces: Mapping[str, Any],
    throughputs: Any,
    clusters: Mapping[str, Any] | None = None,
    **options: Any,
) -> list:
    """One :class:`~mltraces.scheduling.api.Case` per Fig. 8(b) trace given.

    Args:
        traces: Trace name (``cluster01`` … ``cluster10``, ``philly_103959``) → jobs
            (DataFrame, pyarrow table, :class:`~mltraces.scheduling.jobs.Jobs` or CSV path).
        throughputs: Profiles, or the artifact's ``throughputs_A100`` folder.
        clusters: Override the cluster per trace (spec, name or spec-CSV path);
            default :data:`FIG8B_CLUSTERS`.
        options: Passed to every case (``slot``, ``overhead``).
    """
    from mltraces.scheduling.api import Case

    unknown = sorted(set(traces) - set(FIG8B_CLUSTERS) - set(clusters or {}))
    if unknown:
        from mltraces.scheduling.errors import SchedulingError

        raise SchedulingError(
            f"no Fig. 8(b) cluster for traces {unknown}; Fig. 8(b) uses "
            f"{', '.join(FIG8B_TRACES)} (or pass clusters={{name: 'n32g8'}})"
        )
    chosen = {**FIG8B_CLUSTERS, **(clusters or {})}
    return [
        Case.build(name, jobs, chosen[name], throughputs, **options)
        for name, jobs in traces.items()
    ]


def catalog_cases(con: Any, labels: Iterable[str] | None = None, **options: Any) -> list:
    """The Fig. 8(b) cases (every trace on its cluster, A100 throughputs), from the catalog."""
    from mltraces.scheduling.api import Case
    from mltraces.scheduling.errors import SchedulingError
    from mltraces.workloads import cluster

    chosen = list(FIG8B_CLUSTERS) if labels is None else list(labels)
    unknown = [label for label in chosen if label not in FIG8B_CLUSTERS]
    if unknown:
        raise SchedulingError(f"{unknown} are not Fig. 8(b) traces; it has "
                              f"{', '.join(FIG8B_CLUSTERS)}")
    profiles = cluster.load_profiles(con, "A100")
    return [Case.build(label, cluster.load_jobs(con, FIG8B_TRACE_IDS[label]),
                       cluster.load_cluster(con, FIG8B_CLUSTERS[label]), profiles, **options)
            for label in chosen]


def tables() -> list[str]:
    """The catalog tables the Fig. 8(b) replays read: what to pass to ``connect()``."""
    from mltraces.workloads import cluster

    return cluster.tables_for(FIG8B_TRACE_IDS.values())
