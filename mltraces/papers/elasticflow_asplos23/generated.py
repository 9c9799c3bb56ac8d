"""ElasticFlow (ASPLOS'23) Figs. 9, 10 and 11: replays of the artifact's generated traces.

Our generator draws the artifact's jobs number for number (:mod:`.generator`)
and our schedulers equal the artifact's on them job for job, so these are the
paper's figures re-run, beside the published values:

- Fig. 9: deadline satisfactory ratio of EDF, EDF + admission control, EDF +
  elastic scaling and ElasticFlow on 64, 128 and 256 GPUs; the artifact draws
  the deadlines unseeded, so ours are the mean over several deadline seeds
  with their range as error bars, the published bars as black ticks.
- Fig. 10: cluster efficiency over time on the deterministic 100-job trace, drawn as
  the artifact's plot script draws its logs, with each policy's final ratio beside
  the published one (its shipped logs').
- Fig. 11: (a) deadline satisfactory ratio and (b) best-effort JCT improvement over
  Gandiva, for 10 % to 90 % best-effort jobs; mean and range over seeds, the published
  curves dashed.

Setups and published numbers are this paper's (``published.json``: ``fig9`` ...
``fig11``). Chronus is the artifact's ``chronus-scheduler``
(:mod:`~mltraces.scheduling.policies.chronus`), its lease programs solved by HiGHS as in
Figs. 8(a) and 8(b).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mltraces.figures import style
from mltraces.schema import sql_literal

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: the catalog tables these replays read (profiles and cluster specs; the traces are drawn)
INPUTS = "elasticflow.cluster_specs elasticflow.throughputs"


def _replay(con: duckdb.DuckDBPyConnection, figure: str, parts: list[Any], replay: Any) -> str:
    """Parquet path of a cached replay (see :func:`.cached.cached_replay`)."""
    from mltraces.figures import store
    from mltraces.papers.elasticflow_asplos23.cached import cached_replay

    return store.literal(cached_replay(con, INPUTS, [f"elasticflow-{figure}", repr(parts)],
                                       replay))


def _values(rows: list[tuple], columns: str) -> str:
    body = ", ".join("(" + ", ".join(sql_literal(v) if isinstance(v, str) else
                                     "NULL" if v is None else f"CAST({v!r} AS DOUBLE)"
                                     if isinstance(v, float) else repr(v) for v in row) + ")"
                     for row in rows)
    return f"published({columns}) AS (VALUES {body})"


# -- Fig. 9 ---------------------------------------------------------------------------------
def fig9_data(con: duckdb.DuckDBPyConnection, seeds: Sequence[int] | None = None,
              policies: Sequence[str] | None = None) -> duckdb.DuckDBPyRelation:
    """Ours (mean, min, max over deadline seeds) and the published ratio per (GPUs, policy).

    Columns: gpus, cluster, policy, name, mean, lo, hi, seeds, published.
    """
    from mltraces.papers.elasticflow_asplos23 import genfigs
    from mltraces.scheduling import sweep
    from mltraces.workloads import cluster as inputs

    fig = genfigs.setup("fig9")
    seeds = list(seeds or genfigs.SEEDS)
    chosen = list(policies or fig["policies"])
    replay_list = genfigs.replayed(chosen)

    def replay() -> pd.DataFrame:
        profiles = inputs.load_profiles(con, "A100")
        clusters = {name: inputs.load_cluster(con, name) for name in fig["clusters"]}
        cases = genfigs.fig9_cases(profiles, clusters, seeds)
        return genfigs.fig9_table(sweep(cases, replay_list))

    path = _replay(con, "fig9", [seeds, replay_list], replay)
    published = [(c, p, fig["policies"][p], float(fig["ratios"][p][k]), k, o)
                 for o, p in enumerate(chosen) for k, c in enumerate(fig["clusters"])]
    return con.sql(f"""
        WITH {_values(published, "cluster, policy, name, published, c_order, p_order")},
        ours AS (SELECT cluster, policy, avg(ratio) AS mean, min(ratio) AS lo,
                        max(ratio) AS hi, count(*) AS seeds
                 FROM read_parquet({path}) GROUP BY cluster, policy)
        SELECT s.num_gpus AS gpus, p.cluster, p.policy, p.name, o.mean, o.lo, o.hi, o.seeds,
               p.published
        FROM published p LEFT JOIN ours o USING (cluster, policy)
        JOIN elasticflow.cluster_specs s ON s.spec = p.cluster
        ORDER BY p.c_order, p.p_order
    """)


@style.styled
def plot_fig9(data: pd.DataFrame) -> Any:
    """Bars per cluster size and policy: our mean with its range over seeds, published ticks."""
    import numpy as np

    names = list(dict.fromkeys(data["name"]))
    sizes = list(dict.fromkeys(data["gpus"]))
    colors = style.colors(names)
    fig, ax = style.subplots(width="column", height=2.5)
    width = 0.8 / len(names)
    x = np.arange(len(sizes))
    for k, name in enumerate(names):
        rows = data[data["name"] == name].set_index("gpus").reindex(sizes)
        at = x + (k - (len(names) - 1) / 2) * width
        mean = rows["mean"].to_numpy(float)
        ax.bar(at, np.nan_to_num(mean), width, color=colors[name], label=name)
        err = np.vstack([mean - rows["lo"].to_numpy(float), rows["hi"].to_numpy(float) - mean])
        ax.errorbar(at, mean, yerr=err, fmt="none", ecolor="0.25", elinewidth=0.7, capsize=1.5)
        ax.scatter(at, rows["published"], marker="_", s=60, color="black", zorder=5,
                   label="published" if k == 0 else None)
    ax.set_xticks(x, [f"{g} GPUs" for g in sizes])
    ax.set_ylim(0, 1.25)
    ax.set_yticks(np.arange(0, 1.01, 0.2))
    ax.set_ylabel("Deadline satisfactory ratio")
    seeds = int(data["seeds"].max())
    ax.legend(loc="upper left", ncols=2, fontsize=6)
    style.provenance(fig, f"ElasticFlow Fig. 9: our replay (mean, range over {seeds} seeds)\n"
                     "black ticks: the published bars", fontsize=7)
    return fig


# -- Fig. 10 --------------------------------------------------------------------------------
def fig10_data(con: duckdb.DuckDBPyConnection, policies: Sequence[str] | None = None
               ) -> duckdb.DuckDBPyRelation:
    """The plotted cluster-efficiency points per policy, and its final ratio beside the
    published one.

    Columns: policy, name, hour (from the policy's first plotted round),
    efficiency, ratio (ours, NULL when not replayed), published.
    """
    import pandas as pd

    from mltraces.papers.elasticflow_asplos23 import genfigs
    from mltraces.scheduling import sweep
    from mltraces.workloads import cluster as inputs

    fig = genfigs.setup("fig10")
    chosen = list(policies or fig["policies"])
    replay_list = genfigs.replayed(chosen)
    plot = fig["plot"]

    def replay() -> pd.DataFrame:
        case = genfigs.fig10_case(inputs.load_profiles(con, "A100"),
                                  inputs.load_cluster(con, fig["cluster"]))
        frames = []
        for outcome in sweep([case], replay_list).outcomes:
            hours, values = genfigs.efficiency_steps(  # Chronus: as its resource log is read
                outcome.rounds, outcome.efficiency, plot["gap_s"], plot["since_s"],
                skip_zero=outcome.policy == "chronus")
            frames.append(pd.DataFrame({"policy": outcome.policy, "point": range(len(hours)),
                                        "hour": hours, "efficiency": values,
                                        "ratio": outcome.ratio}))
        return pd.concat(frames, ignore_index=True)

    path = _replay(con, "fig10", [replay_list, plot], replay)
    published = [(p, fig["policies"][p], None if p not in fig["ratios"] else
                  float(fig["ratios"][p]), o) for o, p in enumerate(chosen)]
    return con.sql(f"""
        WITH {_values(published, "policy, name, published, p_order")}
        SELECT p.policy, p.name, o.hour, o.efficiency, o.ratio, p.published
        FROM published p LEFT JOIN read_parquet({path}) o USING (policy)
        ORDER BY p.p_order, o.point
    """)


@style.styled
def plot_fig10(data: pd.DataFrame) -> Any:
    """Cluster efficiency over time, one line per policy, as the artifact's script draws it."""
    names = list(dict.fromkeys(data["name"]))
    colors = style.colors(names)
    fig, ax = style.subplots(width="page", height=2.5)
    for k, name in enumerate(names):
        rows = data[data["name"] == name]
        ratio, published = rows["ratio"].iloc[0], rows["published"].iloc[0]
        shown = f"published {published:.2f}" if published == published else "none published"
        label = (f"{name}: ratio {ratio:.2f} ({shown})" if ratio == ratio
                 else f"{name}: not replayed here")
        if rows["hour"].notna().any():
            ax.plot(rows["hour"], rows["efficiency"], color=colors[name],
                    lw=max(0.8, 1.8 - 0.2 * k), label=label, zorder=2 + k)
        else:
            ax.plot([], [], color=colors[name], label=label)
    ax.set_ylim(0, 0.35)
    ax.set_xlim(left=0)
    ax.set_xlabel("Time (hour)")
    ax.set_ylabel("Cluster efficiency")
    ax.legend(loc="upper right", ncols=2)
    style.provenance(ax, "ElasticFlow Fig. 10: cluster efficiency over time on the generated "
                     "100-job trace, our replay (published: the shipped logs' final ratios)")
    return fig


# -- Fig. 11 --------------------------------------------------------------------------------
def fig11_data(con: duckdb.DuckDBPyConnection, seeds: Sequence[int] | None = None,
               policies: Sequence[str] | None = None,
               shares: Sequence[float] | None = None) -> duckdb.DuckDBPyRelation:
    """Ours (mean, min, max over seeds) and published, per (panel, share, policy).

    Columns: panel ('ratio' or 'jct_improvement'), share, policy, name, mean,
    lo, hi, seeds, published.
    """
    from mltraces.papers.elasticflow_asplos23 import genfigs
    from mltraces.scheduling import sweep
    from mltraces.workloads import cluster as inputs

    fig = genfigs.setup("fig11")
    seeds = list(seeds or genfigs.SEEDS)
    chosen = list(policies or fig["policies"])
    shares = list(shares or fig["best_effort"])
    replay_list = genfigs.replayed(chosen)
    if "gandiva" not in replay_list:
        replay_list.append("gandiva")  # the JCT baseline

    def replay() -> pd.DataFrame:
        cases = genfigs.fig11_cases(inputs.load_profiles(con, "A100"),
                                    inputs.load_cluster(con, fig["cluster"]), seeds, shares)
        return genfigs.fig11_table(sweep(cases, replay_list))

    path = _replay(con, "fig11", [seeds, replay_list, shares], replay)
    published = [(panel, float(share), p, fig["policies"][p],
                  float(fig[panel][p][fig["best_effort"].index(share)]), o)
                 for panel in ("ratios", "jct_improvement") for o, p in enumerate(chosen)
                 for share in shares]
    return con.sql(f"""
        WITH {_values(published, "panel, share, policy, name, published, p_order")},
        ours AS (SELECT 'ratios' AS panel, share, policy, avg(ratio) AS mean, min(ratio) AS lo,
                        max(ratio) AS hi, count(*) AS seeds
                 FROM read_parquet({path}) GROUP BY share, policy
                 UNION ALL
                 SELECT 'jct_improvement', share, policy, avg(jct_improvement),
                        min(jct_improvement), max(jct_improvement), count(*)
                 FROM read_parquet({path}) GROUP BY share, policy)
        SELECT CASE p.panel WHEN 'ratios' THEN 'ratio' ELSE p.panel END AS panel, p.share,
               p.policy, p.name, o.mean, o.lo, o.hi, o.seeds, p.published
        FROM published p LEFT JOIN ours o USING (panel, share, policy)
        ORDER BY p.panel DESC, p.p_order, p.share
    """)


@style.styled
def plot_fig11(data: pd.DataFrame) -> Any:
    """(a) ratio and (b) best-effort JCT improvement over Gandiva by best-effort share."""
    import numpy as np

    names = list(dict.fromkeys(data["name"]))
    colors = style.colors(names)
    fig, axes = style.subplots(1, 2, width="page", height=2.6)
    panels = (("ratio", "Deadline satisfactory ratio", "(a)"),
              ("jct_improvement", "Best-effort JCT improvement\n(Gandiva = 1)", "(b)"))
    for ax, (panel, label, tag) in zip(axes, panels, strict=True):
        part = data[data["panel"] == panel]
        for name in names:
            rows = part[part["name"] == name]
            x = rows["share"].to_numpy(float) * 100
            ax.plot(x, rows["published"], ls="--", lw=0.8, color=colors[name], alpha=0.8)
            if rows["mean"].notna().any():
                mean = rows["mean"].to_numpy(float)
                err = np.vstack([mean - rows["lo"].to_numpy(float),
                                 rows["hi"].to_numpy(float) - mean])
                ax.errorbar(x, mean, yerr=err, color=colors[name], marker="o", ms=2.5,
                            lw=1.2, elinewidth=0.6, capsize=1.5, label=name)
            else:
                ax.plot([], [], ls="--", color=colors[name], label=f"{name} (published)")
        ax.set_xticks(range(10, 91, 10), [f"{s}%" for s in range(10, 91, 10)])
        ax.set_xlabel("Share of best-effort jobs")
        ax.set_ylabel(label)
        ax.set_title(tag, loc="left")
        ax.set_ylim(bottom=0)
    axes[0].set_ylim(0, 1.05)
    seeds = int(data["seeds"].max())
    axes[0].legend(loc="upper left", ncols=2, fontsize=6)
    style.provenance(fig, f"ElasticFlow Fig. 11: our replay (solid: mean and range over "
                     f"{seeds} seeds) and the published curves (dashed)")
    return fig
