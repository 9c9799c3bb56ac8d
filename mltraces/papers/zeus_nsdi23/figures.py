"""Zeus (NSDI'23) figures: Fig. 1, Fig. 2 and the paper's trace-driven evaluation.

Fig. 1 and Fig. 2 come from the traces directly (SQL on the configurations,
:mod:`.paper`); the evaluation figures replay recurring jobs with
:mod:`mltraces.simulation` as the paper's evaluation does (:mod:`.evaluation`),
named by what they show: the paper's evaluation figure numbers could not be
confirmed, so they carry none.

The paper's published numbers (in ``published.json``, read by :mod:`.paper`) are
printed beside ours: Fig. 1's bar heights as read off the paper's figure (the
SVG in the Zeus documentation's research overview) and its text's
3.0%–31.5% / 23.8%–74.7% ranges; Fig. 2's Pareto front as labelled in its
zoomed panel; the abstract's 15.3%–75.8% energy saving
(:func:`.evaluation.headline_report`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import values_sql
from mltraces.papers.zeus_nsdi23.evaluation import (
    EVALUATION_FIGURES,
    alibaba_data,
    converged_data,
    cumulative_data,
    headline_data,
    headline_report,
    history_file,
    other_gpus_data,
    regret_data,
    search_path_data,
    sensitivity_data,
    simulation_history,
    simulator_version,
)
from mltraces.papers.zeus_nsdi23.paper import (
    GPU_LABELS,
    GPUS,
    PAPER,
    PAPER_NAMES,
    PAPER_ORDER,
    POLICY_LABELS,
    configurations_sql,
    paper_fig1_bars,
    paper_fig1_ranges,
    paper_fig2_front,
    paper_fig2_limits,
    paper_headline,
    spec,
    workloads_sql,
)

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: Fig. 1's three bars, in the paper's order, with its legend's names.
SAVING_KINDS = ("batch size only", "power limit only", "batch size + power limit")
KIND_LABELS = {
    "batch size only": "Best batch size",
    "power limit only": "Best power limit",
    "batch size + power limit": "Best of both",
}
KIND_COLORS = dict(zip(SAVING_KINDS, (style.PALETTE[1], style.PALETTE[0], style.PALETTE[2]),
                       strict=True))


# --------------------------------------------------------------------------- Fig. 1


def savings_data(
    con: duckdb.DuckDBPyConnection, gpus: tuple[str, ...] = GPUS
) -> duckdb.DuckDBPyRelation:
    """Energy of the best configurations relative to the baseline, per workload (Zeus Fig. 1).

    Definition (the one that reproduces the paper on V100): the baseline is b0
    at max power. *Batch size only* keeps max power and picks the batch size
    with the lowest ETA; *power limit only* keeps b0 and picks the power limit;
    *batch size + power limit* picks the (b, p) with the lowest ETA. Only
    configurations whose every repetition reaches the target within max epochs
    count (b0 always does on the four GPUs). ``normalized`` = ETA(best) /
    ETA(baseline), what the paper plots; ``saving_pct`` = 100 × (1 − normalized),
    what its text quotes.

    On V100 this gives 2.967 %–31.44996 % and 23.846 %–74.677 %, which the paper
    prints as 3.0 %–31.5 % and 23.8 %–74.7 % (see :func:`style.percent` for the
    31.450 → 31.5 rounding). Within b0 the epochs cancel, so the power-limit-only
    saving depends on the power trace alone.

    Columns: gpu, workload, kind, baseline_batch_size, baseline_power_limit,
    baseline_eta, best_batch_size, best_power_limit, best_eta, normalized,
    saving_pct, paper (the published bar on V100, else NULL).
    """
    gpu_list = ", ".join(f"'{g}'" for g in gpus)
    paper = values_sql(
        [(kind, w, v) for kind, bars in paper_fig1_bars().items() for w, v in bars.items()],
        ["p_kind", "p_workload", "paper"],
        alias="p",
    )
    return store.query(con, f"""
        WITH c AS (SELECT * FROM ({configurations_sql()}) WHERE gpu IN ({gpu_list})),
        ok AS (SELECT * FROM c WHERE always_reaches),
        baseline AS (SELECT * FROM ok WHERE is_b0 AND is_max_power),
        best AS (
            SELECT gpu, workload, 'batch size only' AS kind,
                   arg_min(batch_size, eta) AS best_batch_size,
                   arg_min(power_limit, eta) AS best_power_limit, min(eta) AS best_eta
            FROM ok WHERE is_max_power GROUP BY gpu, workload
            UNION ALL
            SELECT gpu, workload, 'power limit only',
                   arg_min(batch_size, eta), arg_min(power_limit, eta), min(eta)
            FROM ok WHERE is_b0 GROUP BY gpu, workload
            UNION ALL
            SELECT gpu, workload, 'batch size + power limit',
                   arg_min(batch_size, eta), arg_min(power_limit, eta), min(eta)
            FROM ok GROUP BY gpu, workload
        )
        SELECT b.gpu, b.workload, b.kind,
               base.batch_size AS baseline_batch_size, base.power_limit AS baseline_power_limit,
               base.eta AS baseline_eta, b.best_batch_size, b.best_power_limit, b.best_eta,
               b.best_eta / base.eta AS normalized,
               100 * (1 - b.best_eta / base.eta) AS saving_pct,
               CASE WHEN b.gpu = 'v100' THEN p.paper END AS paper
        FROM best b JOIN baseline base USING (gpu, workload)
        LEFT JOIN {paper} ON p.p_kind = b.kind AND p.p_workload = b.workload
        ORDER BY list_position([{gpu_list}], b.gpu),
                 list_position({list(PAPER_ORDER)}, b.workload),
                 list_position({list(SAVING_KINDS)}, b.kind)
    """)


def savings_ranges(data: pd.DataFrame) -> pd.DataFrame:
    """Min and max saving per (gpu, kind), with the paper-style text ``3.0%–31.5%``."""
    ranges = (
        data.groupby(["gpu", "kind"], sort=False)["saving_pct"]
        .agg(low="min", high="max")
        .reset_index()
    )
    ranges["text"] = [
        f"{style.percent(lo)}–{style.percent(hi)}"
        for lo, hi in zip(ranges.low, ranges.high, strict=False)
    ]
    return ranges


def savings_report(con: duckdb.DuckDBPyConnection, gpus: tuple[str, ...] = GPUS) -> str:
    """Fig. 1's numbers: our ranges per GPU, and on V100 every bar beside the paper's.

    >>> print(savings_report(con, ("v100",)))                       # doctest: +SKIP
    v100     power limit only:          3.0%–31.5%    (computed 2.967%–31.450%; paper: 3.0%–31.5%)
    ...
    """
    data = savings_data(con, gpus).df()
    published = paper_fig1_ranges()
    lines = []
    for row in savings_ranges(data).itertuples():
        paper = published.get(row.kind) if row.gpu == "v100" else None
        exact = f"computed {row.low:.3f}%–{row.high:.3f}%"
        note = f"; paper: {paper[0]:.1f}%–{paper[1]:.1f}%" if paper else ""
        lines.append(f"{row.gpu:8} {row.kind + ':':26} {row.text:13} ({exact}{note})")
    v100 = data[data["gpu"] == "v100"]
    if not v100.empty:
        lines.append("")
        lines.append("V100 energy / baseline, ours vs paper (read off its Fig. 1):")
        lines.append(f"{'workload':14}" + "".join(f"{KIND_LABELS[k]:>20}" for k in SAVING_KINDS))
        for workload in PAPER_ORDER:
            rows = v100[v100["workload"] == workload].set_index("kind")
            cells = [
                f"{rows.at[k, 'normalized']:.3f} vs {rows.at[k, 'paper']:.3f}"
                if k in rows.index else "–"
                for k in SAVING_KINDS
            ]
            lines.append(f"{PAPER_NAMES[workload]:14}" + "".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)


def _normalized_bars(ax: Any, rows: pd.DataFrame, paper: bool) -> None:
    """Fig. 1's grouped bars (ours, labelled) with the paper's heights as black ticks."""
    import numpy as np

    workloads = [w for w in PAPER_ORDER if w in set(rows["workload"])]
    x = np.arange(len(workloads))
    width = 0.27
    for k, kind in enumerate(SAVING_KINDS):
        part = rows[rows["kind"] == kind].set_index("workload").reindex(workloads)
        offset = x + (k - 1) * width
        bars = ax.bar(offset, part["normalized"], width, label=KIND_LABELS[kind],
                      color=KIND_COLORS[kind])
        ax.bar_label(bars, labels=[f"{v:.2f}" for v in part["normalized"]], fontsize=5,
                     padding=1)
        if paper and part["paper"].notna().any():
            ax.scatter(offset, part["paper"], marker="_", s=60, color="black", linewidths=1.2,
                       zorder=3, label="Paper (read off its Fig. 1)" if k == 0 else None)
    ax.axhline(1.0, color="black", ls=":", lw=1.0, label="Baseline: b0 at max power")
    ax.set_xticks(x, [PAPER_NAMES[w] for w in workloads], rotation=15, ha="right")
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("Normalized energy usage")
    ax.grid(axis="x", visible=False)


@style.styled
def plot_savings(data: pd.DataFrame) -> Any:
    """Zeus Fig. 1: normalised energy per workload on V100, ours with the paper's marked."""
    fig, ax = style.subplots(width="page", height=2.5)
    rows = data[data["gpu"] == "v100"]
    _normalized_bars(ax, rows, paper=True)
    ranges = savings_ranges(rows).set_index("kind")["text"]
    published = paper_fig1_ranges()
    paper = " / ".join(f"{lo:.1f}%–{hi:.1f}%" for lo, hi in published.values())
    ours = " / ".join(ranges.get(kind, "n/a") for kind in published)
    style.provenance(ax, f"Zeus Fig. 1 (V100)\nenergy saved, power limit only / both: ours {ours}; "
                 f"paper {paper}")
    ax.legend(loc="upper left", ncols=3, bbox_to_anchor=(0, -0.25))
    return fig


@style.styled
def plot_savings_gpus(data: pd.DataFrame) -> Any:
    """Fig. 1 on every GPU, one panel each (our extension; the paper shows V100)."""
    gpus = [g for g in GPUS if g in set(data["gpu"])]
    fig, axes = style.subplots(
        len(gpus), 1, width="page", height=1.7 * len(gpus) + 0.4, sharex=True, squeeze=False
    )
    for ax, gpu in zip(axes[:, 0], gpus, strict=False):
        rows = data[data["gpu"] == gpu]
        _normalized_bars(ax, rows, paper=gpu == "v100")
        ranges = savings_ranges(rows).set_index("kind")["text"]
        ax.set_title(GPU_LABELS[gpu], loc="left", fontweight="bold")
        ax.set_title(
            "saved: " + "; ".join(f"{k} {ranges[k]}" for k in SAVING_KINDS if k in ranges),
            loc="right", fontsize=6.5,
        )
        ax.set_ylabel("Normalized energy")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=5)
    style.provenance(fig, "Zeus Fig. 1 on all four GPUs (our extension; the paper shows V100)")
    return fig


# --------------------------------------------------------------------------- Fig. 2


def tradeoff_data(
    con: duckdb.DuckDBPyConnection, gpu: str = "v100", workload: str | None = None
) -> duckdb.DuckDBPyRelation:
    """ETA vs TTA of every (b, p) configuration that always reaches, with the Pareto front.

    A configuration is on the Pareto front when no other one has both lower-or-
    equal TTA and lower ETA: scanning configurations by TTA, it is the one that
    beats the running minimum of ETA.

    Columns: gpu, workload, batch_size, power_limit, tta (s), eta (J), pareto,
    is_b0, is_max_power.
    """
    where = f"AND workload = '{workload}'" if workload else ""
    return store.query(con, f"""
        WITH c AS (
            SELECT * FROM ({configurations_sql()})
            WHERE always_reaches AND gpu = '{gpu}' {where}
        ),
        scanned AS (
            SELECT *, min(eta) OVER (
                PARTITION BY workload ORDER BY tta, eta, batch_size, power_limit
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS best_before
            FROM c
        )
        SELECT gpu, workload, batch_size, power_limit, tta, eta,
               coalesce(eta < best_before, TRUE) AS pareto, is_b0, is_max_power
        FROM scanned
        ORDER BY workload, tta, eta, batch_size, power_limit
    """)


def pareto_report(con: duckdb.DuckDBPyConnection, workload: str = "librispeech") -> str:
    """Fig. 2's Pareto front on V100, ours beside the paper's labels (fastest first)."""
    rows = tradeoff_data(con, "v100", workload).df()
    front = rows[rows["pareto"]].sort_values("tta")
    ours = [f"{int(r.batch_size)}, {int(r.power_limit)}W" for r in front.itertuples()]
    paper = [f"{b}, {p}W" for b, p in paper_fig2_front()]
    lines = [f"{'ours':>24}   {'paper':>12}"]
    for k in range(max(len(ours), len(paper))):
        mine = ""
        if k < len(front):
            r = front.iloc[k]
            mine = f"{ours[k]} ({r.tta:,.0f} s, {r.eta / 1e6:.2f} MJ)"
        lines.append(f"{mine:>24}   {paper[k] if k < len(paper) else '':>12}")
    return "\n".join(lines)


def _front(ax: Any, rows: pd.DataFrame, labels: bool) -> None:
    """The Pareto front as a line; zoomed in, its points labelled 'b, p' and the paper's ringed."""
    front = rows[rows["pareto"]].sort_values("tta")
    ax.plot(front["tta"], front["eta"], color=style.PALETTE[1], lw=1.6,
            marker="o" if labels else None, ms=3.5, label="Pareto front (ours)", zorder=3)
    if not labels:
        return
    sides = _label_sides(front["tta"].tolist(), front["eta"].tolist())
    for r, up_right in zip(front.itertuples(), sides, strict=True):
        ax.annotate(f"{int(r.batch_size)}, {int(r.power_limit)}W", (r.tta, r.eta),
                    xytext=(4, 3) if up_right else (-4, -3), textcoords="offset points",
                    fontsize=6, ha="left" if up_right else "right",
                    va="bottom" if up_right else "top")
    published = set(paper_fig2_front())
    ringed = front[[(int(b), int(p)) in published
                    for b, p in zip(front["batch_size"], front["power_limit"], strict=True)]]
    ax.scatter(ringed["tta"], ringed["eta"], s=55, facecolors="none", edgecolors="black",
               linewidths=0.8, zorder=4, label="On the paper's front")


#: Two front points closer than this share of the front's span are labelled on opposite sides.
CLOSE = 0.08


def _label_sides(tta: list[float], eta: list[float]) -> list[bool]:
    """Per front point (fastest first): label above-right (True) or below-left (False).

    The front falls from upper left to lower right, so a label straight above-
    right or below-left of its point is away from both neighbours. Labels go
    above-right, except that of the faster of two close points, which goes
    below-left: each of the pair then has its label on the side away from the
    other (alternating by position instead put (32, 125 W)'s label beside
    (48, 125 W), 876 s slower, and the other way round).
    """
    span_t = (max(tta) - min(tta)) or 1.0
    span_e = (max(eta) - min(eta)) or 1.0
    sides = [True] * len(tta)
    for k in range(len(tta) - 1):
        gap = math.hypot((tta[k + 1] - tta[k]) / span_t, (eta[k + 1] - eta[k]) / span_e)
        if gap < CLOSE:
            sides[k] = False
    return sides


@style.styled
def plot_tradeoff(data: pd.DataFrame, workload: str = "librispeech") -> Any:
    """Zeus Fig. 2: (a) every configuration and the Pareto front, (b) the front zoomed in."""
    rows = data[data["workload"] == workload]
    if rows.empty:
        workload = sorted(data["workload"].unique())[0]
        rows = data[data["workload"] == workload]
    fig, (every, zoom) = style.subplots(1, 2, width="page", height=2.6)
    t_max, e_max = paper_fig2_limits()
    outside = int(((rows["tta"] > t_max) | (rows["eta"] > e_max)).sum())
    every.scatter(rows["tta"], rows["eta"], s=7, color="#555555", alpha=0.6, linewidths=0,
                  label=f"Feasible (b, p); {outside} beyond the published axes")
    _front(every, rows, labels=False)
    every.set_xlim(0, max(t_max, 1.05 * rows.loc[rows["pareto"], "tta"].max()))
    every.set_ylim(0, max(e_max, 1.05 * rows.loc[rows["pareto"], "eta"].max()))
    every.legend(loc="upper left")
    front = rows[rows["pareto"]]
    _front(zoom, rows, labels=True)
    span_t = front["tta"].max() - front["tta"].min()
    span_e = front["eta"].max() - front["eta"].min()
    zoom.set_xlim(front["tta"].min() - 0.1 * span_t, front["tta"].max() + 0.35 * span_t)
    zoom.set_ylim(front["eta"].min() - 0.15 * span_e, front["eta"].max() + 0.3 * span_e)
    zoom.legend(loc="upper right")
    for ax, what in ((every, "(a) All (batch size, power limit) configurations"),
                     (zoom, "(b) The Pareto front zoomed in (labels: b, p)")):
        ax.set_xlabel("Training time (s)")
        ax.set_ylabel("Energy consumption (J)")
        ax.set_title(what)
        ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4))
    gpu = GPU_LABELS.get(str(rows["gpu"].iloc[0]), rows["gpu"].iloc[0])
    style.provenance(fig, f"Zeus Fig. 2: {PAPER_NAMES.get(workload, workload)} on {gpu} "
                 f"(the paper's front has {len(paper_fig2_front())} points, ringed)")
    return fig


def _tradeoff_panel(ax: Any, rows: pd.DataFrame) -> Any:
    """Scatter of ETA vs TTA on log axes coloured by batch size, the front, and b0."""
    import matplotlib as mpl

    sizes = sorted(rows["batch_size"].unique())
    norm = mpl.colors.LogNorm(vmin=min(sizes), vmax=max(max(sizes), min(sizes) * 2))
    points = ax.scatter(rows["tta"] / 3600, rows["eta"] / 3.6e6, c=rows["batch_size"],
                        cmap="viridis", norm=norm, s=9, linewidths=0, alpha=0.85)
    front = rows[rows["pareto"]].sort_values("tta")
    ax.plot(front["tta"] / 3600, front["eta"] / 3.6e6, color=style.PALETTE[3], lw=1.1)
    base = rows[rows["is_b0"] & rows["is_max_power"]]
    ax.scatter(base["tta"] / 3600, base["eta"] / 3.6e6, marker="*", s=60, color=style.PALETTE[3],
               edgecolor="black", linewidths=0.4, zorder=3, label="b0 at max power")
    style.log_axis(ax)
    ax.set_xlabel("Time to accuracy (h)")
    ax.set_ylabel("Energy to accuracy (kWh)")
    return points


def _batch_colorbar(fig: Any, points: Any, ax: Any, sizes: Any) -> Any:
    """A colour bar labelled "Batch size" whose ticks are actual batch sizes."""
    cbar = fig.colorbar(points, ax=ax, pad=0.01)
    sizes = sorted(int(b) for b in sizes)
    step = max(1, len(sizes) // 6)
    ticks = sizes[::step] if sizes[-1] in sizes[::step] else [*sizes[::step], sizes[-1]]
    cbar.set_ticks(ticks, labels=[style.short_number(t) for t in ticks])
    cbar.ax.minorticks_off()
    cbar.ax.tick_params(labelsize=6)
    cbar.set_label("Batch size", fontsize=6.5, labelpad=1)
    return cbar


@style.styled
def plot_tradeoff_all(data: pd.DataFrame) -> Any:
    """Small multiples: the ETA–TTA tradeoff of every workload (our extension of Fig. 2)."""
    from matplotlib.lines import Line2D

    workloads = [w for w in PAPER_ORDER if w in set(data["workload"])]
    fig, axes = style.panel_grid(len(workloads), row_height=2.15)
    for ax, workload in zip(axes, workloads, strict=True):
        rows = data[data["workload"] == workload]
        points = _tradeoff_panel(ax, rows)
        ax.set_title(PAPER_NAMES.get(workload, workload))
        _batch_colorbar(fig, points, ax, rows["batch_size"].unique())
    handles, labels = axes[0].get_legend_handles_labels()
    handles.append(Line2D([], [], color=style.PALETTE[3], lw=1.1))
    labels.append("Pareto front (colour: batch size; log axes)")
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    style.provenance(fig, "Zeus Fig. 2 for every workload on V100 (our extension; the paper shows "
                 "DeepSpeech2)")
    return fig


FIGURES = (
    spec("zeus_fig1", "Zeus Fig. 1: normalised energy of the best batch size, power limit "
         "and both per workload on V100, with the paper's bars", savings_data, plot_savings,
         figure="Fig. 1"),
    spec("zeus_fig1_gpus", "Zeus Fig. 1 on all four GPUs (our extension)", savings_data,
         plot_savings_gpus, figure="our extension of Fig. 1 to all four GPUs"),
    spec("zeus_fig2", "Zeus Fig. 2: energy vs time of every (batch size, power limit) of "
         "DeepSpeech2 on V100, Pareto front, zoomed panel", tradeoff_data, plot_tradeoff,
         figure="Fig. 2"),
    spec("zeus_fig2_workloads", "Zeus Fig. 2 for every workload on V100 (our extension)",
         tradeoff_data, plot_tradeoff_all, figure="our extension of Fig. 2 to every workload"),
    *EVALUATION_FIGURES,
)

#: What the notebooks and tests reach through this module (the evaluation lives in .evaluation).
__all__ = [
    "FIGURES",
    "GPUS",
    "GPU_LABELS",
    "PAPER",
    "PAPER_NAMES",
    "PAPER_ORDER",
    "POLICY_LABELS",
    "alibaba_data",
    "configurations_sql",
    "converged_data",
    "cumulative_data",
    "headline_data",
    "headline_report",
    "history_file",
    "other_gpus_data",
    "paper_fig1_bars",
    "paper_fig1_ranges",
    "paper_fig2_front",
    "paper_fig2_limits",
    "paper_headline",
    "pareto_report",
    "regret_data",
    "savings_data",
    "savings_ranges",
    "savings_report",
    "search_path_data",
    "sensitivity_data",
    "simulation_history",
    "simulator_version",
    "tradeoff_data",
    "workloads_sql",
]
