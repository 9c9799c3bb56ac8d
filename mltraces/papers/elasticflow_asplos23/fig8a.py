"""ElasticFlow (ASPLOS'23) Fig. 8(a) as data: the Pollux trace's setup, policies, published bars.

The figure compares deadline satisfactory ratios on the trace the artifact
ships for its comparison with Pollux (``elasticVpollux_e.csv``, 195 jobs of
six T4-profiled models) on 16 nodes of 4 GPUs with the T4 throughputs and
60 s slots (``run_fig8a.sh``). Pollux comes from its own simulator and is
published only. The facts live once, in this paper's ``published.json``
(``fig8a``).
"""

from __future__ import annotations

from typing import Any


def _figure() -> dict[str, Any]:
    """Fig. 8(a)'s setup and published bars, as the paper's published.json records them."""
    from mltraces.papers import published

    return published("elasticflow_asplos23")["fig8a"]


_SETUP = _figure()["setup"]
#: the catalog trace, the cluster spec and the throughput profiles of Fig. 8(a)
FIG8A_TRACE: str = _SETUP["trace"]
FIG8A_CLUSTER: str = _SETUP["cluster"]
FIG8A_LABEL: str = _SETUP["label"]
FIG8A_GPU_TYPE: str = _figure()["gpu_type"]
#: the figure's bars in the paper's order (name → legend name); Pollux is published only
FIG8A_NAMES: dict[str, str] = dict(_figure()["policies"])
#: the bars this package replays
FIG8A_POLICIES: tuple[str, ...] = tuple(p for p in FIG8A_NAMES if p != "pollux")
#: published deadline satisfactory ratios, policy → value (plot_fig8a.py)
PUBLISHED_FIG8A: dict[str, float] = dict(_figure()["ratios"])
#: the ratio the Pollux simulator's README prints for this trace (the plot draws .523)
POLLUX_README_RATIO: float = _figure()["pollux_readme"]["ratio"]
#: the legend the artifact's plot script prints, bar by bar (it swaps Gandiva and Tiresias)
FIG8A_PRINTED_LEGEND: tuple[str, ...] = tuple(_figure()["legend_printed"])
