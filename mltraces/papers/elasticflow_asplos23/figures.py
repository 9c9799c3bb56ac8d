"""ElasticFlow (ASPLOS'23) figures that need its scheduling evaluation: Figs. 7(a), 8, 9-11.

All come from :mod:`mltraces.scheduling` replaying the artifact's schedulers
on the catalog's traces, so they are *our simulation* of the paper's setup:

- Fig. 8(a): deadline satisfactory ratio of EDF, Gandiva, Tiresias, Themis,
  Chronus and ElasticFlow on the artifact's Pollux trace (195 jobs) on 16 x 4
  T4 GPUs, beside the published bars; Pollux (its own simulator) is published
  only. The artifact run here gives our EDF, Gandiva, Tiresias, Themis and
  ElasticFlow ratios exactly; its plot script's legend swaps the names of the
  Gandiva and Tiresias bars, which are drawn here by what they hold.
- Fig. 8(b): deadline satisfactory ratio of the same six schedulers on ITP
  clusters 1-10 and Philly, each on the cluster the artifact gives it, beside
  the published bars (which come from an earlier state of the artifact's
  code). Chronus is the artifact's ``chronus-scheduler`` with its lease programs
  solved by HiGHS (the artifact asks Gurobi).
- Fig. 7(a): GPUs allocated over the 48 hours of the 195-job testbed trace. The
  paper measured this on its 16 x 8-GPU testbed; we replay the same trace on
  ``n16g8`` in the simulator (a Fig. 7(a)-style figure, not the testbed run).
- Figs. 9, 10 and 11 on the generator's traces: :mod:`.generated`
  (``fig9_data``, ``fig10_data``, ``fig11_data`` are re-exported here).
- Fig. 7(b) and our characterisation of the released ITP traces: :mod:`.itp_figures`
  (their specs are part of :data:`FIGURES`).

Replays are cached beside the catalog Parquet they read, keyed by those files
and the scheduler's source, so a warm figure run does not replay again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.papers.elasticflow_asplos23 import generated, itp_figures
from mltraces.papers.elasticflow_asplos23.cached import cached_replay as _cached_replay
from mltraces.papers.elasticflow_asplos23.cached import scheduler_version as scheduler_version
from mltraces.papers.elasticflow_asplos23.generated import fig9_data as fig9_data  # re-exported
from mltraces.papers.elasticflow_asplos23.generated import fig10_data as fig10_data
from mltraces.papers.elasticflow_asplos23.generated import fig11_data as fig11_data
from mltraces.schema import sql_literal

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

PAPER = "ElasticFlow (ASPLOS'23)"
#: the testbed of Fig. 6/7: 16 nodes of 8 GPUs
TESTBED_CLUSTER = "n16g8"
TESTBED_TRACE = "itp/testbed"
FIG7A_HOURS = 48
FIG8B_INPUTS = "itp.elasticflow_jobs elasticflow.philly_jobs elasticflow.cluster_specs " \
               "elasticflow.throughputs"
FIG7A_INPUTS = "itp.testbed_jobs elasticflow.cluster_specs elasticflow.throughputs"
FIG8A_INPUTS = "elasticflow.pollux_jobs elasticflow.cluster_specs elasticflow.throughputs"


def fig8b_data(con: duckdb.DuckDBPyConnection, labels: Sequence[str] | None = None,
               policies: Sequence[str] | None = None) -> duckdb.DuckDBPyRelation:
    """Ours and the published deadline satisfactory ratio per (trace, policy).

    Columns: trace (cluster01 ... cluster10, philly_103959), policy, name (as in
    the paper's legend), ours, published. ``labels`` and
    ``policies`` select a part of the figure (the whole takes ~7 min on 2 cores,
    once).
    """
    from mltraces.papers.elasticflow_asplos23.fig8b import (
        FIG8B_NAMES,
        FIG8B_POLICIES,
        FIG8B_TRACES,
        PUBLISHED_FIG8B,
        catalog_cases,
    )
    from mltraces.scheduling import sweep

    chosen = list(labels or FIG8B_TRACES)
    replayed = list(policies or FIG8B_POLICIES)

    def replay() -> pd.DataFrame:
        summary = sweep(catalog_cases(con, chosen), replayed).summary
        return summary[["trace", "policy", "ddl_satis_ratio"]]

    path = _cached_replay(con, FIG8B_INPUTS, ["elasticflow-fig8b", repr((chosen, replayed))],
                          replay)
    published = [(trace, policy, FIG8B_NAMES[policy], value, order, k)
                 for order, policy in enumerate(PUBLISHED_FIG8B)
                 for k, (trace, value) in enumerate(PUBLISHED_FIG8B[policy].items())
                 if trace in chosen and (policy in replayed or policy not in FIG8B_POLICIES)]
    rows = ", ".join(f"({sql_literal(t)}, {sql_literal(p)}, {sql_literal(n)}, "
                     f"CAST({v!r} AS DOUBLE), {o}, {k})" for t, p, n, v, o, k in published)
    return con.sql(f"""
        WITH published(trace, policy, name, published, p_order, t_order) AS (VALUES {rows})
        SELECT p.trace, p.policy, p.name, o.ddl_satis_ratio AS ours, p.published
        FROM published p LEFT JOIN read_parquet({store.literal(path)}) o
          ON o.trace = p.trace AND o.policy = p.policy
        ORDER BY p.t_order, p.p_order
    """)


def fig8a_data(con: duckdb.DuckDBPyConnection, policies: Sequence[str] | None = None
               ) -> duckdb.DuckDBPyRelation:
    """Ours and the published deadline satisfactory ratio per bar of Fig. 8(a).

    Columns: policy, name (by what the bar holds), ours (NULL for Pollux, which
    is published only), published, in the paper's bar order. ``policies``
    replays a part (the whole takes about a minute, once).
    """
    from mltraces.papers.elasticflow_asplos23.fig8a import (
        FIG8A_CLUSTER,
        FIG8A_GPU_TYPE,
        FIG8A_LABEL,
        FIG8A_NAMES,
        FIG8A_POLICIES,
        FIG8A_TRACE,
        PUBLISHED_FIG8A,
    )
    from mltraces.scheduling import sweep
    from mltraces.workloads import cluster as inputs

    replayed = list(policies or FIG8A_POLICIES)

    def replay() -> pd.DataFrame:
        case = inputs.case(con, FIG8A_TRACE, FIG8A_CLUSTER, gpu_type=FIG8A_GPU_TYPE,
                           label=FIG8A_LABEL)
        return sweep([case], replayed).summary[["policy", "ddl_satis_ratio"]]

    path = _cached_replay(con, FIG8A_INPUTS, ["elasticflow-fig8a", repr(replayed)], replay)
    bars = [(p, FIG8A_NAMES[p], PUBLISHED_FIG8A[p], k) for k, p in enumerate(FIG8A_NAMES)
            if p in replayed or p not in FIG8A_POLICIES]
    rows = ", ".join(f"({sql_literal(p)}, {sql_literal(n)}, CAST({v!r} AS DOUBLE), {k})"
                     for p, n, v, k in bars)
    return con.sql(f"""
        WITH published(policy, name, published, p_order) AS (VALUES {rows})
        SELECT p.policy, p.name, o.ddl_satis_ratio AS ours, p.published
        FROM published p LEFT JOIN read_parquet({store.literal(path)}) o USING (policy)
        ORDER BY p.p_order
    """)


def fig7a_data(con: duckdb.DuckDBPyConnection, policies: Sequence[str] | None = None
               ) -> duckdb.DuckDBPyRelation:
    """GPUs allocated over time on the testbed trace, per policy (a step series).

    Columns: policy, name, hour (since the first submission), allocated_gpus,
    cluster_gpus; clipped to the 48 hours the paper plots.
    """
    from mltraces.papers.elasticflow_asplos23.fig8b import FIG8B_NAMES, FIG8B_POLICIES
    from mltraces.scheduling import sweep
    from mltraces.workloads import cluster as inputs

    replayed = list(policies or FIG8B_POLICIES)

    def replay() -> pd.DataFrame:
        case = inputs.case(con, TESTBED_TRACE, TESTBED_CLUSTER, label="testbed")
        result = sweep([case], replayed)
        first = float(case.jobs.frame["submit_time"].min())
        series = result.utilisation
        return series.assign(hour=(series["time"] - first) / 3600)

    path = _cached_replay(con, FIG7A_INPUTS, ["elasticflow-fig7a", repr(replayed)], replay)
    names = ", ".join(f"({sql_literal(p)}, {sql_literal(FIG8B_NAMES[p])}, {k})"
                      for k, p in enumerate(replayed))
    return con.sql(f"""
        WITH names(policy, name, p_order) AS (VALUES {names})
        SELECT u.policy, n.name, u.hour, u.allocated_gpus, u.cluster_gpus
        FROM read_parquet({store.literal(path)}) u JOIN names n USING (policy)
        WHERE u.hour <= {FIG7A_HOURS}
        ORDER BY n.p_order, u.hour
    """)


def _colors(names: Sequence[str]) -> dict[str, str]:
    return style.colors(list(names))


@style.styled
def plot_fig8b(data: pd.DataFrame) -> Any:
    """Published bars (top) and our replay (bottom), same traces, policies and colours."""
    import numpy as np

    names = list(dict.fromkeys(data["name"]))
    traces = list(dict.fromkeys(data["trace"]))
    colors = _colors(names)
    fig, axes = style.subplots(2, 1, width="page", height=4.4, sharex=True)
    width = 0.8 / len(names)
    x = np.arange(len(traces))
    ours = data.dropna(subset=["ours"])
    gap = (ours["ours"] - ours["published"]).abs()
    replay = (f"mltraces replay of the artifact's schedulers (Chronus: HiGHS); "
              f"|ours - published| median {gap.median():.3f}, max {gap.max():.3f}")
    published = "ElasticFlow Fig. 8(b), deadline satisfactory ratio: the paper's bars"
    if style.current() == "paper":  # the caption says where each panel comes from
        published, replay = "(a) Published", "(b) Replayed by mltraces"
    for ax, column, label in ((axes[0], "published", published),
                              (axes[1], "ours", replay)):
        for k, name in enumerate(names):
            rows = data[data["name"] == name].set_index("trace").reindex(traces)
            values = rows[column].to_numpy(dtype=float)
            ax.bar(x + (k - (len(names) - 1) / 2) * width, np.nan_to_num(values), width,
                   color=colors[name], label=name)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("Deadline satisfactory\nratio")
        ax.set_title(label, loc="left", fontsize="medium")
    axes[1].set_xticks(x, [t.replace("cluster", "ITP ").replace("philly_103959", "Philly")
                           for t in traces])
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(names))
    return fig


@style.styled
def plot_fig8a(data: pd.DataFrame) -> Any:
    """Published (hatched) and ours (solid) side by side per bar, values printed on top."""
    import numpy as np
    from matplotlib.patches import Patch

    from mltraces.papers.elasticflow_asplos23.fig8a import FIG8A_PRINTED_LEGEND, POLLUX_README_RATIO

    names = list(data["name"])
    colors = _colors(names)
    fig, ax = style.subplots(width="page", height=2.9)
    x = np.arange(len(names))
    width = 0.38
    for k, row in enumerate(data.itertuples(index=False)):
        ax.bar(x[k] - width / 2, row.published, width, color="white", edgecolor=colors[row.name],
               hatch="///", lw=0.8)
        ax.text(x[k] - width / 2, row.published + 0.015, f"{row.published:.3f}".lstrip("0"),
                ha="center", va="bottom", fontsize=6)
        if row.ours == row.ours and row.ours is not None:  # not NaN: replayed
            ax.bar(x[k] + width / 2, row.ours, width, color=colors[row.name])
            ax.text(x[k] + width / 2, row.ours + 0.015, f"{row.ours:.3f}".lstrip("0"),
                    ha="center", va="bottom", fontsize=6)
    handles = [Patch(facecolor="white", edgecolor="0.3", hatch="///", label="published"),
               Patch(facecolor="0.3", label="ours")]
    if "Pollux" in names:
        k = names.index("Pollux")
        handles += ax.plot(x[k] + width / 2, POLLUX_README_RATIO, marker="D", ms=4,
                           color=colors["Pollux"], ls="none",
                           label=f"Pollux README's run ({POLLUX_README_RATIO:.3f})")
    ax.set_xticks(x, names)
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("Deadline satisfactory ratio")
    ax.legend(handles=handles, loc="upper left", ncols=3)
    swapped = [p for p, q in zip(names, FIG8A_PRINTED_LEGEND, strict=False) if p != q]
    style.provenance(ax, "ElasticFlow Fig. 8(a): the Pollux trace (195 jobs) on 16 x 4 T4 GPUs, "
                     "ours (solid) beside the paper's bars (hatched)")
    fig.supxlabel("Ours equal the artifact run here, job for job, for EDF, Gandiva, Tiresias and "
                  "ElasticFlow.\nThe paper's legend calls bars 2 and 3 "
                  f"{' and '.join(FIG8A_PRINTED_LEGEND[names.index(p)] for p in swapped)}; they "
                  f"hold the {' and '.join(swapped)} values, named here by what they hold.\n"
                  "Chronus: its lease programs solved by HiGHS (the artifact asks Gurobi; run here "
                  "it gives .426 with our solver, .431 as shipped).\nPollux: its own simulator, "
                  "published only.",
                  fontsize=6, x=0.01, ha="left")
    return fig


@style.styled
def plot_fig7a(data: pd.DataFrame) -> Any:
    """GPUs allocated over the testbed trace's 48 hours: one panel per policy, shared axes.

    One panel each, because EDF and ElasticFlow both hold the whole cluster for
    most of the two days: drawn on one axis, one line hides the other.
    """
    names = list(dict.fromkeys(data["name"]))
    colors = _colors(names)
    total = int(data["cluster_gpus"].max())
    fig, axes = style.subplots(len(names), 1, width="page", height=0.72 * len(names) + 0.75,
                               sharex=True, sharey=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        rows = data[data["name"] == name]
        ax.plot(rows["hour"], rows["allocated_gpus"], drawstyle="steps-post", lw=1.1,
                color=colors[name])
        ax.axhline(total, color="0.6", lw=0.8, ls=":")
        ax.set_title(f"{name}: {_gpu_hours(rows):,.0f} GPU hours allocated", loc="left",
                     fontsize=7, color=colors[name], fontweight="bold", pad=2)
        ax.set_ylim(0, total * 1.08)
        ax.set_yticks([0, total // 2, total])
    last = axes[-1, 0]
    last.set_xlim(0, FIG7A_HOURS)
    last.set_xticks(range(0, FIG7A_HOURS + 1, 12))
    last.set_xlabel("Time (hour)")
    fig.supylabel("GPUs allocated", fontsize=8)
    style.provenance(fig, f"ElasticFlow Fig. 7(a)-style, simulated: the testbed trace on "
                     f"{TESTBED_CLUSTER} ({total} GPUs, dotted); the paper measured its testbed",
                     fontsize=8)
    return fig


def _gpu_hours(rows: pd.DataFrame) -> float:
    """GPU hours allocated over the plotted window: the area under the step series."""
    import numpy as np

    hours = rows["hour"].to_numpy(dtype=float)
    gpus = rows["allocated_gpus"].to_numpy(dtype=float)
    widths = np.diff(np.append(np.minimum(hours, FIG7A_HOURS), FIG7A_HOURS))
    return float(np.dot(gpus, np.clip(widths, 0, None)))


def _spec(name: str, title: str, data: Any, plot: Any, tables: tuple[str, ...],
          figure: str) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "elasticflow", title, tables, data, plot, figure=figure,
                      paper=PAPER)


def _generated() -> tuple[Any, ...]:
    tables = tuple(generated.INPUTS.split())
    return (
        _spec("elasticflow_fig9", "ElasticFlow Fig. 9: deadline satisfactory ratio of EDF, EDF + "
              "admission control, EDF + elastic scaling and ElasticFlow on 64, 128 and 256 GPUs "
              "(generated traces), our replay beside the published bars", generated.fig9_data,
              generated.plot_fig9, tables, figure="Fig. 9"),
        _spec("elasticflow_fig10", "ElasticFlow Fig. 10: cluster efficiency over time on the "
              "generated 100-job trace, our replay", generated.fig10_data, generated.plot_fig10,
              tables, figure="Fig. 10"),
        _spec("elasticflow_fig11", "ElasticFlow Fig. 11: deadline satisfactory ratio and "
              "best-effort JCT by share of best-effort jobs (generated traces), our replay "
              "beside the published curves", generated.fig11_data, generated.plot_fig11, tables,
              figure="Fig. 11"),
    )


FIGURES = (
    _spec("elasticflow_fig8a", "ElasticFlow Fig. 8(a): deadline satisfactory ratio of six "
          "schedulers on the Pollux trace (16 x 4 T4 GPUs), our replay beside the published "
          "bars and Pollux's", fig8a_data, plot_fig8a, tuple(FIG8A_INPUTS.split()),
          figure="Fig. 8(a)"),
    _spec("elasticflow_fig8b", "ElasticFlow Fig. 8(b): deadline satisfactory ratio of six "
          "schedulers on ITP clusters 1-10 and Philly, our replay beside the published bars",
          fig8b_data, plot_fig8b, tuple(FIG8B_INPUTS.split()), figure="Fig. 8(b)"),
    _spec("elasticflow_fig7a", "ElasticFlow Fig. 7(a)-style: GPUs allocated over the testbed "
          "trace, simulated on 16 x 8 GPUs", fig7a_data, plot_fig7a,
          tuple(FIG7A_INPUTS.split()), figure="Fig. 7(a), simulated"),
    *_generated(),
    *itp_figures.FIGURES,  # the released traces: Fig. 7(b) and our characterisation
)
