"""Zeus (NSDI'23) figures: Fig. 1 and Fig. 2 of the paper, and our own simulator figures.

Every quantity follows the Zeus trace model. A workload is trained at batch
size b with GPU power limit p. Its repetitions (``run``) of ``zeus.train`` give
the epoch at which each reached the workload's target metric; a repetition
*reaches* when that epoch exists and is at most the workload's max epochs. For
a configuration (b, p):

- epochs(b) = the mean target epoch over the repetitions that reach;
- TTA(b, p) = epochs(b) × time_per_epoch(b, p)  (seconds);
- ETA(b, p) = TTA(b, p) × average_power(b, p)  (joules).

b0 is the workload's default batch size capped at the largest batch size in the
GPU's power trace, and "max power" is the GPU's largest power limit (250 W on
V100), exactly as in :mod:`mltraces.simulation`.

The paper's published numbers are printed beside ours: Fig. 1's bar heights as
read off the paper's figure (the SVG in the Zeus documentation's research
overview) and its text's 3.0%–31.5% / 23.8%–74.7% ranges; Fig. 2's Pareto front
as labelled in its zoomed panel. The simulator figures (``zeus_cumulative`` and
after) are our own analysis with :mod:`mltraces.simulation`, not paper figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import registered, values_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "Zeus (NSDI'23)"

GPUS = ("v100", "a40", "p100", "rtx6000")
GPU_LABELS = {"v100": "V100", "a40": "A40", "p100": "P100", "rtx6000": "RTX6000"}
#: The paper's workload order and names in Fig. 1 (dataset → model as the paper prints it).
PAPER_ORDER = ("librispeech", "squad", "sentiment140", "imagenet", "cifar100", "movielens-1m")
PAPER_NAMES = {
    "librispeech": "DeepSpeech2",
    "squad": "BERT (QA)",
    "sentiment140": "BERT (SA)",
    "imagenet": "ResNet-50",
    "cifar100": "ShuffleNet V2",
    "movielens-1m": "NeuMF",
}
#: How the paper names the workloads (dataset, model).
WORKLOAD_LABELS = {
    "cifar100": "CIFAR-100\nShuffleNet-v2",
    "imagenet": "ImageNet\nResNet-50",
    "librispeech": "LibriSpeech\nDeepSpeech2",
    "movielens-1m": "MovieLens-1M\nNCF",
    "sentiment140": "Sentiment140\nBERT",
    "squad": "SQuAD\nBERT",
}
#: One-line names for narrow panels.
SHORT_LABELS = {
    "cifar100": "CIFAR-100",
    "imagenet": "ImageNet",
    "librispeech": "LibriSpeech",
    "movielens-1m": "MovieLens",
    "sentiment140": "Sentiment140",
    "squad": "SQuAD",
}
POLICY_LABELS = {
    "zeus": "Zeus",
    "default": "Default",
    "grid": "Grid Search",
    "oracle": "Oracle",
    "pl-only": "Power limit only",
    "bs-only": "Batch size only",
}
#: Fig. 1's three bars, in the paper's order, with its legend's names.
SAVING_KINDS = ("batch size only", "power limit only", "batch size + power limit")
KIND_LABELS = {
    "batch size only": "Best batch size",
    "power limit only": "Best power limit",
    "batch size + power limit": "Best of both",
}
KIND_COLORS = dict(zip(SAVING_KINDS, (style.PALETTE[1], style.PALETTE[0], style.PALETTE[2]),
                       strict=True))
#: Published Fig. 1 ranges on V100 (percent energy saved), from the paper's text.
PAPER_RANGES = {"power limit only": (3.0, 31.5), "batch size + power limit": (23.8, 74.7)}
#: Published Fig. 1 bar heights on V100 (energy normalised to the baseline), read off the
#: paper's figure as published in the Zeus docs (research_overview/img/eta-potential-all-v100).
PAPER_FIG1 = {
    "batch size only": dict(zip(PAPER_ORDER, (0.820, 0.933, 0.966, 0.970, 0.368, 0.350),
                                strict=True)),
    "power limit only": dict(zip(PAPER_ORDER, (0.838, 0.822, 0.788, 0.775, 0.686, 0.972),
                                 strict=True)),
    "batch size + power limit": dict(zip(PAPER_ORDER, (0.572, 0.724, 0.736, 0.762, 0.253,
                                                       0.334), strict=True)),
}
#: Published Fig. 2 Pareto front of DeepSpeech2 on V100: (batch size, power limit in W),
#: from the labels of its zoomed panel, fastest first.
PAPER_FIG2_FRONT = ((48, 250), (56, 225), (48, 200), (48, 175), (48, 150), (48, 125), (32, 100))
#: Fig. 2(a)'s axes as published: 0–80,000 s and 0–1.2e7 J.
PAPER_FIG2_LIMITS = (80_000.0, 1.2e7)


def workloads_sql() -> str:
    """The six workloads (target, max epochs, b0) as a SQL relation named ``w``."""
    from mltraces.simulation import WORKLOADS

    rows = [
        (
            w.dataset,
            w.network,
            w.optimizer,
            float(w.target_metric),
            w.max_epochs,
            w.default_batch_size,
        )
        for w in WORKLOADS.values()
    ]
    columns = ["dataset", "network", "optimizer", "target_metric", "max_epochs", "b0"]
    return values_sql(rows, columns, alias="w")


def configurations_sql() -> str:
    """SQL: ETA and TTA of every (gpu, workload, b, p), with whether every repetition reaches.

    Columns: gpu, workload, batch_size, power_limit, runs, reached_runs,
    always_reaches, epochs, tta, eta, is_b0, is_max_power. Rows exist where the
    train and power traces join (the simulator's inner join).
    """
    return f"""
        WITH w AS (SELECT * FROM {workloads_sql()}),
        runs AS (
            SELECT t.dataset, t.batch_size, count(*) AS runs,
                   count(*) FILTER (WHERE t.target_epoch <= w.max_epochs) AS reached_runs,
                   avg(t.target_epoch) FILTER (WHERE t.target_epoch <= w.max_epochs) AS epochs
            FROM zeus.train t
            JOIN w ON t.dataset = w.dataset AND t.network = w.network
                  AND lower(t.optimizer) = w.optimizer
                  AND abs(t.target_metric - w.target_metric) < 1e-9
            GROUP BY ALL
        ),
        -- MaxPower over the GPU's whole power trace, b0's cap over the dataset's rows on
        -- that GPU: taken before the join, as mltraces.simulation does
        every_row AS (
            SELECT *, max(power_limit) OVER (PARTITION BY gpu) AS max_power,
                   max(batch_size) OVER (PARTITION BY gpu, dataset) AS largest_batch
            FROM zeus.power
        ),
        power AS (
            SELECT p.*, w.b0
            FROM every_row p
            JOIN w ON p.dataset = w.dataset AND p.network = w.network
                  AND lower(p.optimizer) = w.optimizer
        )
        SELECT p.gpu, p.dataset AS workload, p.batch_size, p.power_limit,
               r.runs, r.reached_runs, r.reached_runs = r.runs AS always_reaches, r.epochs,
               r.epochs * p.time_per_epoch AS tta,
               r.epochs * p.time_per_epoch * p.average_power AS eta,
               p.batch_size = least(p.b0, p.largest_batch) AS is_b0,
               p.power_limit = p.max_power AS is_max_power
        FROM power p JOIN runs r ON r.dataset = p.dataset AND r.batch_size = p.batch_size
    """


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
        [(kind, w, v) for kind, bars in PAPER_FIG1.items() for w, v in bars.items()],
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
    lines = []
    for row in savings_ranges(data).itertuples():
        paper = PAPER_RANGES.get(row.kind) if row.gpu == "v100" else None
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
    paper = " / ".join(f"{lo:.1f}%–{hi:.1f}%" for lo, hi in PAPER_RANGES.values())
    ours = " / ".join(ranges.get(kind, "n/a") for kind in PAPER_RANGES)
    ax.set_title(f"Zeus Fig. 1 (V100)\nenergy saved, power limit only / both: ours {ours}; "
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
    fig.suptitle("Zeus Fig. 1 on all four GPUs (our extension; the paper shows V100)")
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
    paper = [f"{b}, {p}W" for b, p in PAPER_FIG2_FRONT]
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
    for k, r in enumerate(front.itertuples()):  # alternate sides: neighbours can be close
        right = k % 2 == 0
        ax.annotate(f"{int(r.batch_size)}, {int(r.power_limit)}W", (r.tta, r.eta),
                    xytext=(5, 2) if right else (-5, -2), textcoords="offset points",
                    fontsize=6, ha="left" if right else "right", va="bottom" if right else "top")
    published = {(b, p) for b, p in PAPER_FIG2_FRONT}
    ringed = front[[(int(b), int(p)) in published
                    for b, p in zip(front["batch_size"], front["power_limit"], strict=True)]]
    ax.scatter(ringed["tta"], ringed["eta"], s=55, facecolors="none", edgecolors="black",
               linewidths=0.8, zorder=4, label="On the paper's front")


@style.styled
def plot_tradeoff(data: pd.DataFrame, workload: str = "librispeech") -> Any:
    """Zeus Fig. 2: (a) every configuration and the Pareto front, (b) the front zoomed in."""
    rows = data[data["workload"] == workload]
    if rows.empty:
        workload = sorted(data["workload"].unique())[0]
        rows = data[data["workload"] == workload]
    fig, (every, zoom) = style.subplots(1, 2, width="page", height=2.6)
    t_max, e_max = PAPER_FIG2_LIMITS
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
    fig.suptitle(f"Zeus Fig. 2: {PAPER_NAMES.get(workload, workload)} on {gpu} "
                 f"(the paper's front has {len(PAPER_FIG2_FRONT)} points, ringed)")
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
    fig.suptitle("Zeus Fig. 2 for every workload on V100 (our extension; the paper shows "
                 "DeepSpeech2)")
    return fig


# --------------------------------------------------------------------------- our simulations


#: Default simulation for the evaluation figures: the paper's V100, η = 0.5, β = 2.
SIM_SEEDS = tuple(range(1, 11))
EVAL_POLICIES = ("zeus", "default", "grid", "oracle")
ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
BETAS = (1.5, 2.0, 3.0, 5.0, float("inf"))
#: How many of the last recurrences ``zeus_final`` averages.
FINAL_RECURRENCES = 5
OWN = "our simulation, not a paper figure"


def simulator_version() -> str:
    """Hash of the simulator's source: a changed simulator never reuses cached results."""
    return store.source_version("mltraces.simulation")


def _trace_files(con: duckdb.DuckDBPyConnection, tables: str = "zeus.train zeus.power") -> list:
    files = store.identity(con, tables)
    if files is None:
        raise LookupError(f"{tables} are not catalog tables on this connection")
    return files


def history_file(
    con: duckdb.DuckDBPyConnection,
    policies: tuple[str, ...] = EVAL_POLICIES,
    *,
    gpu: str = "v100",
    seeds: tuple[int, ...] = SIM_SEEDS,
    eta: tuple[float, ...] = (0.5,),
    beta: tuple[float, ...] = (2.0,),
    workloads: str = "all",
) -> Path:
    """Parquet history of :func:`mltraces.simulation.simulate` for these arguments.

    Simulated once, then cached beside the trace tables, keyed by the
    arguments, the traces' Parquet files and :func:`simulator_version`.
    """
    from mltraces.simulation import load_traces, simulate

    def write(path: Path) -> None:
        result = simulate(load_traces(con), gpu, workloads, list(policies), list(seeds),
                          eta=list(eta), beta=list(beta))
        with registered(con, result.history) as h:
            con.execute(f"COPY {h} TO {store.literal(path)} (FORMAT parquet)")

    args = repr((policies, gpu, seeds, eta, beta, workloads))
    return store.stored_path(_trace_files(con), ["zeus-simulation", args, simulator_version()],
                             write)


def simulation_history(con: duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any
                       ) -> pd.DataFrame:
    """The simulation history of :func:`history_file` as a pandas frame."""
    path = history_file(con, *args, **kwargs)
    return con.sql(f"SELECT * FROM read_parquet({store.literal(path)})").df()


def _over_history(con: duckdb.DuckDBPyConnection, sql: str, **simulation: Any
                  ) -> duckdb.DuckDBPyRelation:
    """``sql`` with ``{h}`` standing for the history table, cached like any figure data."""
    history = f"read_parquet({store.literal(history_file(con, **simulation))})"
    return store.query(con, sql.format(h=history))


def cumulative_data(
    con: duckdb.DuckDBPyConnection, workload: str = "librispeech", **simulation: Any
) -> duckdb.DuckDBPyRelation:
    """Cumulative ETA and TTA over recurrences for Zeus, Default and Grid Search.

    Per recurrence (retries included) the run energies and times are summed,
    accumulated over recurrences, then averaged over seeds with the min–max
    spread. Columns: gpu, eta, beta, workload, policy, recurrence, metric
    ('ETA' in kWh or 'TTA' in hours), mean, low, high.
    """
    return _over_history(con, f"""
        WITH per AS (
            SELECT gpu, eta AS eta_w, beta AS beta_w, workload, policy, seed, recurrence,
                   sum(energy_j) / 3.6e6 AS eta_kwh, sum(time_s) / 3600 AS tta_h
            FROM {{h}} WHERE workload = '{workload}' AND policy IN ('zeus', 'default', 'grid')
            GROUP BY ALL
        ),
        running AS (
            SELECT gpu, eta_w, beta_w, workload, policy, seed, recurrence,
                   sum(eta_kwh) OVER w AS ETA, sum(tta_h) OVER w AS TTA
            FROM per
            WINDOW w AS (
                PARTITION BY gpu, eta_w, beta_w, workload, policy, seed ORDER BY recurrence)
        ),
        long AS (UNPIVOT running ON ETA, TTA INTO NAME metric VALUE value)
        SELECT gpu, eta_w AS eta, beta_w AS beta, workload, policy, recurrence, metric,
               avg(value) AS mean, min(value) AS low, max(value) AS high
        FROM long GROUP BY ALL ORDER BY metric, policy, recurrence
    """, **simulation)


@style.styled
def plot_cumulative(data: pd.DataFrame) -> Any:
    """Two panels: cumulative ETA and TTA over recurrences, one line per policy."""
    fig, axes = style.subplots(1, 2, width="page", height=2.4)
    units = {"ETA": "Cumulative ETA (kWh)", "TTA": "Cumulative TTA (h)"}
    for ax, metric in zip(axes, ("ETA", "TTA"), strict=False):
        for policy in ("default", "grid", "zeus"):
            part = data[(data["metric"] == metric) & (data["policy"] == policy)]
            if part.empty:
                continue
            c = style.color(policy)
            ax.plot(part["recurrence"], part["mean"], color=c, label=POLICY_LABELS[policy])
            ax.fill_between(part["recurrence"], part["low"], part["high"], color=c, alpha=0.15)
        ax.set_xlabel("Recurrence")
        ax.set_ylabel(units[metric])
    axes[0].legend(loc="upper left")
    first = data.iloc[0]
    fig.suptitle(
        f"{PAPER_NAMES.get(first['workload'], first['workload'])} on "
        f"{GPU_LABELS.get(first['gpu'], first['gpu'])}, η = {first['eta']:g}, "
        f"β = {first['beta']:g}: mean over seeds, band = min–max ({OWN})"
    )
    return fig


def final_data(con: duckdb.DuckDBPyConnection, last: int = FINAL_RECURRENCES,
               **simulation: Any) -> duckdb.DuckDBPyRelation:
    """ETA and TTA of the last ``last`` recurrences, normalised to Default, per workload.

    Once the optimizers have converged, a recurrence costs what the chosen
    configuration costs; summing the last ``last`` recurrences (retries
    included) over all seeds smooths the per-run sampling of repetitions.
    Normalised by Default's same sum for the same seeds, GPU, η and β. Columns:
    gpu, eta, beta, workload, policy, metric ('ETA' or 'TTA'), vs_default, last.
    """
    return _over_history(con, f"""
        WITH per AS (
            SELECT gpu, eta, beta, workload, policy, seed, recurrence,
                   sum(energy_j) AS energy, sum(time_s) AS duration
            FROM {{h}} GROUP BY ALL
        ),
        tail AS (
            SELECT *, max(recurrence) OVER (
                PARTITION BY gpu, eta, beta, workload, policy, seed) AS n
            FROM per
        ),
        final AS (
            SELECT gpu, eta, beta, workload, policy,
                   sum(energy) AS energy, sum(duration) AS duration
            FROM tail WHERE recurrence > n - {int(last)} GROUP BY ALL
        ),
        ratio AS (
            SELECT f.gpu, f.eta, f.beta, f.workload, f.policy,
                   f.energy / d.energy AS energy_ratio, f.duration / d.duration AS time_ratio
            FROM final f JOIN final d
              ON d.policy = 'default' AND (d.gpu, d.eta, d.beta, d.workload)
                 = (f.gpu, f.eta, f.beta, f.workload)
            WHERE f.policy <> 'default'
        )
        SELECT gpu, eta, beta, workload, policy, 'ETA' AS metric, energy_ratio AS vs_default,
               {int(last)} AS last
        FROM ratio
        UNION ALL
        SELECT gpu, eta, beta, workload, policy, 'TTA' AS metric, time_ratio AS vs_default,
               {int(last)} AS last
        FROM ratio
        ORDER BY metric, workload, policy, gpu, eta, beta
    """, **simulation)


@style.styled
def plot_final(data: pd.DataFrame) -> Any:
    """Grouped bars: final ETA and TTA of each policy relative to Default, per workload."""
    import numpy as np

    fig, axes = style.subplots(1, 2, width="page", height=2.4, sharey=True)
    policies = [p for p in ("zeus", "grid", "oracle") if p in set(data["policy"])]
    workloads = [w for w in PAPER_ORDER if w in set(data["workload"])]
    x = np.arange(len(workloads))
    width = 0.8 / max(len(policies), 1)
    last = int(data["last"].iloc[0])
    for ax, metric in zip(axes, ("ETA", "TTA"), strict=False):
        for k, policy in enumerate(policies):
            part = data[(data["metric"] == metric) & (data["policy"] == policy)]
            part = part.set_index("workload").reindex(workloads)
            ax.bar(x + (k - (len(policies) - 1) / 2) * width, part["vs_default"], width,
                   color=style.color(policy), label=POLICY_LABELS[policy])
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xticks(x, [PAPER_NAMES.get(w, w) for w in workloads], rotation=25, ha="right")
        ax.set_title(f"{metric} of the last {last} recurrences (all seeds)")
    axes[0].set_ylabel("Relative to Default (dashed)")
    axes[0].legend(loc="upper left", ncols=3)
    fig.suptitle(f"Converged cost per workload on V100, η = 0.5, β = 2 ({OWN})")
    return fig


def regret_data(con: duckdb.DuckDBPyConnection, **simulation: Any) -> duckdb.DuckDBPyRelation:
    """Cumulative regret: cumulative cost minus Oracle's, per recurrence, mean over seeds.

    Cost is the Zeus cost η·ETA + (1−η)·MaxPower·TTA in joules-equivalent;
    shown in MJ. Columns: gpu, eta, beta, workload, policy, recurrence, regret_mj.
    """
    return _over_history(con, """
        WITH per AS (
            SELECT gpu, eta, beta, workload, policy, seed, recurrence, sum(cost) AS cost
            FROM {h} GROUP BY ALL
        ),
        running AS (
            SELECT *, sum(cost) OVER (
                PARTITION BY gpu, eta, beta, workload, policy, seed ORDER BY recurrence
            ) AS cum_cost
            FROM per
        )
        SELECT r.gpu, r.eta, r.beta, r.workload, r.policy, r.recurrence,
               avg(r.cum_cost - o.cum_cost) / 1e6 AS regret_mj
        FROM running r
        JOIN running o ON o.policy = 'oracle'
             AND (o.gpu, o.eta, o.beta, o.workload, o.seed, o.recurrence)
               = (r.gpu, r.eta, r.beta, r.workload, r.seed, r.recurrence)
        WHERE r.policy IN ('zeus', 'grid')
        GROUP BY ALL ORDER BY r.workload, r.policy, r.gpu, r.eta, r.beta, r.recurrence
    """, **simulation)


@style.styled
def plot_regret(data: pd.DataFrame) -> Any:
    """Small multiples: cumulative regret of Zeus and Grid Search per workload."""
    workloads = [w for w in PAPER_ORDER if w in set(data["workload"])]
    fig, axes = style.panel_grid(len(workloads), row_height=1.9)
    for ax, workload in zip(axes, workloads, strict=True):
        for policy in ("grid", "zeus"):
            part = data[(data["workload"] == workload) & (data["policy"] == policy)]
            ax.plot(part["recurrence"], part["regret_mj"], color=style.color(policy),
                    label=POLICY_LABELS[policy])
        ax.set_title(PAPER_NAMES.get(workload, workload))
        ax.set_xlabel("Recurrence")
        ax.set_ylabel("Cumulative regret (MJ)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    fig.suptitle(f"Cumulative regret vs Oracle on V100, mean over seeds ({OWN})")
    return fig


def sensitivity_data(
    con: duckdb.DuckDBPyConnection,
    etas: tuple[float, ...] = ETAS,
    betas: tuple[float, ...] = BETAS,
    seeds: tuple[int, ...] = SIM_SEEDS,
    gpu: str = "v100",
) -> duckdb.DuckDBPyRelation:
    """Zeus' cumulative ETA and TTA relative to Default as η (β = 2) and β (η = 0.5) vary.

    Columns: knob ('eta' or 'beta'), value, workload, metric ('ETA' or 'TTA'),
    vs_default (total over all recurrences and seeds, Zeus / Default).
    """
    parts = []
    for knob, values, fixed in (("eta", etas, {"beta": (2.0,)}), ("beta", betas, {"eta": (0.5,)})):
        path = history_file(con, ("zeus", "default"), gpu=gpu, seeds=seeds,
                            **{knob: tuple(values)}, **fixed)
        parts.append(f"""
            SELECT '{knob}' AS knob, {knob} AS value, workload, policy,
                   sum(energy_j) AS ETA, sum(time_s) AS TTA
            FROM read_parquet({store.literal(path)}) GROUP BY ALL
        """)
    return store.query(con, f"""
        WITH totals AS ({" UNION ALL ".join(parts)}),
        ratio AS (
            SELECT z.knob, z.value, z.workload, z.ETA / d.ETA AS ETA, z.TTA / d.TTA AS TTA
            FROM totals z JOIN totals d
              ON d.policy = 'default' AND (d.knob, d.workload, d.value)
                 = (z.knob, z.workload, z.value)
            WHERE z.policy = 'zeus'
        )
        SELECT knob, value, workload, metric, vs_default
        FROM (UNPIVOT ratio ON ETA, TTA INTO NAME metric VALUE vs_default)
        ORDER BY knob DESC, metric, workload, value
    """)


def _knob_positions(values: list[float]) -> dict[float, float]:
    """Numeric x positions: the values themselves, ∞ one step past the largest finite one."""
    import math

    finite = [v for v in values if math.isfinite(v)]
    step = (max(finite) - min(finite)) / max(len(finite) - 1, 1) if finite else 1.0
    far = (max(finite) if finite else 0.0) + 1.5 * step
    return {v: (v if math.isfinite(v) else far) for v in values}


@style.styled
def plot_sensitivity(data: pd.DataFrame) -> Any:
    """A 2×2 grid: ETA and TTA vs Default as η varies (top) and as β varies (bottom)."""
    import math

    fig, axes = style.subplots(2, 2, width="page", height=4.2, squeeze=False)
    workloads = [w for w in PAPER_ORDER if w in set(data["workload"])]
    colors = style.colors(workloads)
    for row, knob in enumerate(("eta", "beta")):
        rows = data[data["knob"] == knob]
        values = sorted(rows["value"].unique())
        at = _knob_positions(values)
        for col, metric in enumerate(("ETA", "TTA")):
            ax = axes[row, col]
            for workload in workloads:
                part = rows[(rows["metric"] == metric) & (rows["workload"] == workload)]
                part = part.sort_values("value")
                finite = part[[math.isfinite(v) for v in part["value"]]]
                ax.plot(finite["value"], finite["vs_default"], marker="o", ms=3,
                        color=colors[workload], label=PAPER_NAMES.get(workload, workload))
                if len(finite) < len(part):  # β = ∞: a separate point, joined by a dotted line
                    ax.plot([finite["value"].iloc[-1], at[math.inf]],
                            [finite["vs_default"].iloc[-1], part["vs_default"].iloc[-1]],
                            ls=":", marker="o", ms=3, color=colors[workload], markevery=[1])
            ax.axhline(1.0, color="black", lw=0.8, ls="--")
            if knob == "beta":  # no early stopping (β = ∞) can cost several times Default
                style.log_axis(ax, "y")
                ax.set_xticks([at[v] for v in values], [_knob_label(v) for v in values])
            else:
                ax.set_xticks(values, [_knob_label(v) for v in values])
            symbol, fixed = ("η", "β = 2") if knob == "eta" else ("β", "η = 0.5")
            ax.set_xlabel(f"{symbol} ({fixed})")
            ax.set_ylabel(f"Zeus {metric} / Default")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=6)
    fig.suptitle(f"Sensitivity of Zeus to η and β on V100, totals over all seeds ({OWN})")
    return fig


def _knob_label(value: float) -> str:
    import math

    return "∞" if math.isinf(value) else f"{value:g}"


def alibaba_data(
    con: duckdb.DuckDBPyConnection, gpu: str = "v100", processes: int | None = None
) -> duckdb.DuckDBPyRelation:
    """Alibaba recurring groups replayed under Zeus and Default: totals per workload.

    Uses :func:`mltraces.simulation.replay_alibaba` on ``zeus.alibaba_groups``,
    cached like the other simulations. Columns: workload, metric ('ETA' or
    'TTA'), vs_default (Zeus total over all groups of the workload divided by
    Default's).
    """
    from mltraces.simulation import replay_alibaba

    def write(path: Path) -> None:
        groups = con.sql('SELECT "group", start_time, end_time, dataset, runtime_ratio '
                         "FROM zeus.alibaba_groups").df()
        history, _ = replay_alibaba(con, groups, gpu=gpu, policies="zeus,default",
                                    processes=processes)
        with registered(con, history) as h:
            con.execute(f"COPY {h} TO {store.literal(path)} (FORMAT parquet)")

    files = _trace_files(con, "zeus.train zeus.power zeus.alibaba_groups")
    path = store.stored_path(files, ["zeus-alibaba", gpu, simulator_version()], write)
    return store.query(con, f"""
        WITH totals AS (
            SELECT workload, policy, sum(energy_j) AS ETA, sum(time_s) AS TTA
            FROM read_parquet({store.literal(path)}) GROUP BY ALL
        ),
        ratio AS (
            SELECT z.workload, z.ETA / d.ETA AS ETA, z.TTA / d.TTA AS TTA
            FROM totals z JOIN totals d ON d.workload = z.workload AND d.policy = 'default'
            WHERE z.policy = 'zeus'
        )
        SELECT * FROM (UNPIVOT ratio ON ETA, TTA INTO NAME metric VALUE vs_default)
        ORDER BY metric, workload
    """)


@style.styled
def plot_alibaba(data: pd.DataFrame) -> Any:
    """Bars: Zeus' ETA and TTA relative to Default on the Alibaba recurring groups."""
    import numpy as np

    fig, ax = style.subplots(width="column", height=2.4)
    workloads = [w for w in PAPER_ORDER if w in set(data["workload"])]
    x = np.arange(len(workloads))
    for k, metric in enumerate(("ETA", "TTA")):
        part = data[data["metric"] == metric].set_index("workload").reindex(workloads)
        ax.bar(x + (k - 0.5) * 0.38, part["vs_default"], 0.38, label=metric, color=style.PALETTE[k])
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(x, [PAPER_NAMES.get(w, w) for w in workloads], rotation=25, ha="right")
    ax.set_ylabel("Zeus / Default")
    ax.legend(loc="upper left", ncols=2)
    ax.set_title(f"Alibaba recurring groups replayed ({OWN})")
    return fig


def _spec(name: str, title: str, data: Any, plot: Any, tables: tuple[str, ...] = (),
          figure: str = "") -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "zeus", title, tables or ("zeus.train", "zeus.power"), data, plot,
                      figure=figure, paper=PAPER)


FIGURES = (
    _spec("zeus_fig1", "Zeus Fig. 1: normalised energy of the best batch size, power limit "
          "and both per workload on V100, with the paper's bars", savings_data, plot_savings,
          figure="Fig. 1"),
    _spec("zeus_fig1_gpus", "Zeus Fig. 1 on all four GPUs (our extension)", savings_data,
          plot_savings_gpus, figure="our extension of Fig. 1 to all four GPUs"),
    _spec("zeus_fig2", "Zeus Fig. 2: energy vs time of every (batch size, power limit) of "
          "DeepSpeech2 on V100, Pareto front, zoomed panel", tradeoff_data, plot_tradeoff,
          figure="Fig. 2"),
    _spec("zeus_fig2_workloads", "Zeus Fig. 2 for every workload on V100 (our extension)",
          tradeoff_data, plot_tradeoff_all, figure="our extension of Fig. 2 to every workload"),
    _spec("zeus_cumulative", "Cumulative ETA and TTA over recurrences: Zeus, Default, Grid "
          f"Search (DeepSpeech2, V100, 10 seeds; {OWN})", cumulative_data, plot_cumulative),
    _spec("zeus_final", f"ETA and TTA of the last {FINAL_RECURRENCES} recurrences relative to "
          f"Default, per workload ({OWN})", final_data, plot_final),
    _spec("zeus_regret", f"Cumulative regret vs Oracle of Zeus and Grid Search ({OWN})",
          regret_data, plot_regret),
    _spec("zeus_sensitivity", f"Sensitivity of Zeus' ETA and TTA to η and β ({OWN})",
          sensitivity_data, plot_sensitivity),
    _spec("zeus_alibaba", f"Alibaba recurring groups replayed: Zeus vs Default ({OWN})",
          alibaba_data, plot_alibaba, ("zeus.train", "zeus.power", "zeus.alibaba_groups")),
)
