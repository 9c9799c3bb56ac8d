"""ElasticFlow (ASPLOS'23) Fig. 8(b) as data: traces, cluster per trace, policies, published bars.

The figure compares deadline satisfactory ratios on the ten ITP clusters of
``elasticflow-traces.tar.gz`` and the artifact's Philly trace, each replayed
on the cluster size the artifact's ``run_fig8b.sh`` uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: trace → cluster spec name (run_fig8b.sh)
FIG8B_CLUSTERS: dict[str, str] = {
    "cluster01": "n64g8",
    "cluster02": "n64g8",
    "cluster03": "n64g8",
    "cluster04": "n128g8",
    "cluster05": "n64g8",
    "cluster06": "n64g8",
    "cluster07": "n128g8",
    "cluster08": "n128g8",
    "cluster09": "n128g8",
    "cluster10": "n32g8",
    "philly_103959": "n32g8",
}
FIG8B_TRACES: tuple[str, ...] = tuple(FIG8B_CLUSTERS)
#: the figure's policies that this package replays (Chronus is a separate code base)
FIG8B_POLICIES: tuple[str, ...] = ("edf", "gandiva", "tiresias", "themis", "elasticflow")

_PUBLISHED = {
    "edf": (0.182, 0.228, 0.095, 0.007, 0.375, 0.105, 0.046, 0.252, 0.800, 0.769, 0.01),
    "gandiva": (0.246, 0.286, 0.314, 0.228, 0.228, 0.381, 0.351, 0.325, 0.329, 0.354, 0.15),
    "tiresias": (0.478, 0.470, 0.401, 0.120, 0.420, 0.466, 0.346, 0.373, 0.468, 0.473, 0.32),
    "themis": (0.464, 0.431, 0.389, 0.432, 0.430, 0.425, 0.437, 0.423, 0.456, 0.431, 0.33),
    "chronus": (0.474, 0.445, 0.426, 0.450, 0.453, 0.432, 0.460, 0.447, 0.466, 0.454, 0.324),
    "elasticflow": (0.788, 0.822, 0.455, 0.631, 0.832, 0.607, 0.665, 0.896, 0.938, 0.981, 0.87),
}
#: published deadline satisfactory ratios, policy → trace → value
#: (the artifact's plot_figure/scripts/plot_fig8b.py; an earlier state of its code)
PUBLISHED_FIG8B: dict[str, dict[str, float]] = {
    policy: dict(zip(FIG8B_TRACES, values, strict=True)) for policy, values in _PUBLISHED.items()
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
