"""Zeus (NSDI'23) figures: potential savings, the energy-time tradeoff, and the simulator.

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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mltraces.figures import style
from mltraces.figures.sql import registered, values_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

GPUS = ("v100", "a40", "p100", "rtx6000")
GPU_LABELS = {"v100": "V100", "a40": "A40", "p100": "P100", "rtx6000": "RTX6000"}
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
SAVING_KINDS = ("power limit only", "batch size + power limit")
#: Published Fig. 1 ranges on V100 (percent energy saved), for the reader's comparison.
PAPER_RANGES = {"power limit only": (3.0, 31.5), "batch size + power limit": (23.8, 74.7)}


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


def savings_data(con: duckdb.DuckDBPyConnection, gpus: tuple[str, ...] = GPUS) -> pd.DataFrame:
    """Potential energy savings per workload (Zeus Fig. 1), on each GPU.

    Definition (the one that reproduces the paper on V100): the baseline is b0
    at max power. *Power limit only* keeps b0 and picks the power limit with the
    lowest ETA; *batch size + power limit* picks the (b, p) with the lowest ETA.
    Only configurations whose every repetition reaches the target within max
    epochs count (b0 always does on the four GPUs). saving_pct =
    100 × (1 − ETA(best) / ETA(baseline)).

    On V100 this gives 2.967 %–31.44996 % and 23.846 %–74.677 %, which the paper
    prints as 3.0 %–31.5 % and 23.8 %–74.7 % (see :func:`style.percent` for the
    31.450 → 31.5 rounding). Within b0 the epochs cancel, so the power-limit-only
    saving depends on the power trace alone.

    Columns: gpu, workload, kind, baseline_batch_size, baseline_power_limit,
    baseline_eta, best_batch_size, best_power_limit, best_eta, saving_pct.
    """
    gpu_list = ", ".join(f"'{g}'" for g in gpus)
    return con.sql(f"""
        WITH c AS (SELECT * FROM ({configurations_sql()}) WHERE gpu IN ({gpu_list})),
        ok AS (SELECT * FROM c WHERE always_reaches),
        baseline AS (SELECT * FROM ok WHERE is_b0 AND is_max_power),
        best AS (
            SELECT gpu, workload, 'power limit only' AS kind,
                   arg_min(batch_size, eta) AS best_batch_size,
                   arg_min(power_limit, eta) AS best_power_limit, min(eta) AS best_eta
            FROM ok WHERE is_b0 GROUP BY gpu, workload
            UNION ALL
            SELECT gpu, workload, 'batch size + power limit',
                   arg_min(batch_size, eta), arg_min(power_limit, eta), min(eta)
            FROM ok GROUP BY gpu, workload
        )
        SELECT b.gpu, b.workload, b.kind,
               base.batch_size AS baseline_batch_size, base.power_limit AS baseline_power_limit,
               base.eta AS baseline_eta, b.best_batch_size, b.best_power_limit, b.best_eta,
               100 * (1 - b.best_eta / base.eta) AS saving_pct
        FROM best b JOIN baseline base USING (gpu, workload)
        ORDER BY list_position([{gpu_list}], b.gpu), b.workload, b.kind DESC
    """).df()


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
    """The reproduced ranges per GPU as text, with the paper's V100 numbers beside them.

    >>> print(savings_report(con))                                  # doctest: +SKIP
    v100     power limit only:          3.0%–31.5%    (computed 2.967%–31.450%; paper: 3.0%–31.5%)
    ...
    """
    lines = []
    for row in savings_ranges(savings_data(con, gpus)).itertuples():
        paper = PAPER_RANGES.get(row.kind) if row.gpu == "v100" else None
        exact = f"computed {row.low:.3f}%–{row.high:.3f}%"
        note = f"; paper: {paper[0]:.1f}%–{paper[1]:.1f}%" if paper else ""
        lines.append(f"{row.gpu:8} {row.kind + ':':26} {row.text:13} ({exact}{note})")
    return "\n".join(lines)


def _saving_bars(ax: Any, rows: pd.DataFrame, legend: bool) -> None:
    workloads = sorted(rows["workload"].unique())
    x = np.arange(len(workloads))
    width = 0.38
    for k, kind in enumerate(SAVING_KINDS):
        part = rows[rows["kind"] == kind].set_index("workload").reindex(workloads)
        bars = ax.bar(
            x + (k - 0.5) * width,
            part["saving_pct"],
            width,
            label=kind.capitalize(),
            color=style.PALETTE[1 - k],
        )
        labels = [style.percent(v)[:-1] if np.isfinite(v) else "" for v in part["saving_pct"]]
        ax.bar_label(bars, labels=labels, fontsize=5.5, padding=1)
    ax.set_xticks(x, [WORKLOAD_LABELS.get(w, w) for w in workloads], fontsize=6)
    ax.set_ylim(0, 100)
    ax.set_ylabel("Energy saved vs b0 at max power (%)")
    if legend:
        ax.legend(loc="upper left", ncols=2)


@style.styled
def plot_savings(data: pd.DataFrame) -> Any:
    """Bars of energy saved per workload on V100 (the paper's Fig. 1)."""
    fig, ax = style.subplots(width="page", height=2.3)
    _saving_bars(ax, data[data["gpu"] == "v100"], legend=True)
    ranges = savings_ranges(data[data["gpu"] == "v100"]).set_index("kind")["text"]
    ax.set_title(
        "V100: power limit only saves "
        + ranges.get("power limit only", "n/a")
        + ", batch size + power limit saves "
        + ranges.get("batch size + power limit", "n/a")
    )
    return fig


@style.styled
def plot_savings_gpus(data: pd.DataFrame) -> Any:
    """The same bars on every GPU, one panel each."""
    gpus = [g for g in GPUS if g in set(data["gpu"])]
    fig, axes = style.subplots(
        len(gpus), 1, width="page", height=1.75 * len(gpus), sharex=True, squeeze=False
    )
    for i, (ax, gpu) in enumerate(zip(axes[:, 0], gpus, strict=False)):
        rows = data[data["gpu"] == gpu]
        _saving_bars(ax, rows, legend=i == 0)
        ranges = savings_ranges(rows).set_index("kind")["text"]
        ax.set_title(GPU_LABELS[gpu], loc="left", fontweight="bold")
        ax.set_title(
            "; ".join(f"{kind}: {ranges[kind]}" for kind in SAVING_KINDS if kind in ranges),
            loc="right",
            fontsize=7,
        )
        ax.set_ylabel("Energy saved (%)")
    return fig


# --------------------------------------------------------------------------- Fig. 2


def tradeoff_data(
    con: duckdb.DuckDBPyConnection, gpu: str = "v100", workload: str | None = None
) -> pd.DataFrame:
    """ETA vs TTA of every (b, p) configuration that always reaches, with the Pareto front.

    A configuration is on the Pareto front when no other one has both lower-or-
    equal TTA and lower ETA: scanning configurations by TTA, it is the one that
    beats the running minimum of ETA.

    Columns: gpu, workload, batch_size, power_limit, tta, eta, pareto, is_b0,
    is_max_power.
    """
    where = f"AND workload = '{workload}'" if workload else ""
    return con.sql(f"""
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
        ORDER BY workload, tta
    """).df()


def _tradeoff_panel(ax: Any, rows: pd.DataFrame) -> Any:
    """Scatter of ETA vs TTA on log axes coloured by batch size, the front, and b0."""
    import matplotlib as mpl

    sizes = sorted(rows["batch_size"].unique())
    norm = mpl.colors.LogNorm(vmin=min(sizes), vmax=max(max(sizes), min(sizes) * 2))
    points = ax.scatter(
        rows["tta"] / 3600,
        rows["eta"] / 3.6e6,
        c=rows["batch_size"],
        cmap="viridis",
        norm=norm,
        s=9,
        linewidths=0,
        alpha=0.85,
    )
    front = rows[rows["pareto"]].sort_values("tta")
    ax.plot(front["tta"] / 3600, front["eta"] / 3.6e6, color=style.PALETTE[3], lw=1.1)
    base = rows[rows["is_b0"] & rows["is_max_power"]]
    ax.scatter(
        base["tta"] / 3600,
        base["eta"] / 3.6e6,
        marker="*",
        s=60,
        color=style.PALETTE[3],
        edgecolor="black",
        linewidths=0.4,
        zorder=3,
        label="b0 at max power",
    )
    style.log_axis(ax)
    ax.set_xlabel("Time to accuracy (h)")
    ax.set_ylabel("Energy to accuracy (kWh)")
    return points


def _batch_colorbar(fig: Any, points: Any, ax: Any, sizes: Any) -> Any:
    """A colour bar whose ticks are actual batch sizes, written plainly."""
    cbar = fig.colorbar(points, ax=ax, pad=0.01)
    sizes = sorted(int(b) for b in sizes)
    step = max(1, len(sizes) // 6)
    ticks = sizes[::step] if sizes[-1] in sizes[::step] else [*sizes[::step], sizes[-1]]
    cbar.set_ticks(ticks, labels=[style.short_number(t) for t in ticks])
    cbar.ax.minorticks_off()
    cbar.ax.tick_params(labelsize=6)
    return cbar


@style.styled
def plot_tradeoff(data: pd.DataFrame, workload: str = "librispeech") -> Any:
    """One workload's ETA–TTA cloud with its Pareto front (DeepSpeech2 on V100 by default)."""
    rows = data[data["workload"] == workload]
    if rows.empty:
        workload = sorted(data["workload"].unique())[0]
        rows = data[data["workload"] == workload]
    fig, ax = style.subplots(width="column", height=2.5)
    points = _tradeoff_panel(ax, rows)
    _batch_colorbar(fig, points, ax, rows["batch_size"].unique()).set_label("Batch size")
    ax.plot([], [], color=style.PALETTE[3], lw=1.1, label="Pareto front")
    ax.legend(loc="upper left")
    gpu = GPU_LABELS.get(str(rows["gpu"].iloc[0]), rows["gpu"].iloc[0])
    ax.set_title(f"{WORKLOAD_LABELS.get(workload, workload).replace(chr(10), ' ')} on {gpu}")
    return fig


@style.styled
def plot_tradeoff_all(data: pd.DataFrame) -> Any:
    """Small multiples: the ETA–TTA tradeoff of every workload."""
    workloads = sorted(data["workload"].unique())
    fig, axes = style.panel_grid(len(workloads), row_height=2.15)
    for ax, workload in zip(axes, workloads, strict=True):
        rows = data[data["workload"] == workload]
        points = _tradeoff_panel(ax, rows)
        ax.set_title(WORKLOAD_LABELS.get(workload, workload).replace("\n", " "))
        _batch_colorbar(fig, points, ax, rows["batch_size"].unique())
    handles, labels = axes[0].get_legend_handles_labels()
    from matplotlib.lines import Line2D

    handles.append(Line2D([], [], color=style.PALETTE[3], lw=1.1))
    labels.append("Pareto front (colour: batch size)")
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    return fig


# --------------------------------------------------------------------------- Fig. 3


#: Default simulation for the evaluation figures: the paper's V100, η = 0.5, β = 2.
SIM_SEEDS = tuple(range(1, 11))
EVAL_POLICIES = ("zeus", "default", "grid", "oracle")
ETAS = (0.0, 0.25, 0.5, 0.75, 1.0)
BETAS = (1.5, 2.0, 3.0, 5.0, float("inf"))

_simulations: dict[tuple, pd.DataFrame] = {}


def simulation_history(
    con: duckdb.DuckDBPyConnection,
    policies: tuple[str, ...] = EVAL_POLICIES,
    *,
    gpu: str = "v100",
    seeds: tuple[int, ...] = SIM_SEEDS,
    eta: tuple[float, ...] = (0.5,),
    beta: tuple[float, ...] = (2.0,),
    workloads: str = "all",
) -> pd.DataFrame:
    """Run :func:`mltraces.simulation.simulate` once per set of arguments and trace contents.

    The evaluation figures share one simulation; results are memoised on the
    arguments and a hash of ``zeus.train`` / ``zeus.power``, so a different
    catalog (synthetic traces in tests) never reuses another's results.
    """
    from mltraces.simulation import load_traces, simulate

    traces = load_traces(con)
    key = (policies, gpu, seeds, eta, beta, workloads, _frame_hash(traces.train, traces.power))
    if key not in _simulations:
        result = simulate(
            traces, gpu, workloads, list(policies), list(seeds), eta=list(eta), beta=list(beta)
        )
        _simulations.clear()  # keep one: a history is a few MB
        _simulations[key] = result.history
    return _simulations[key]


def _frame_hash(*frames: pd.DataFrame) -> int:
    import pandas as pd

    return hash(tuple(int(pd.util.hash_pandas_object(f, index=False).sum()) for f in frames))


def cumulative_data(
    con: duckdb.DuckDBPyConnection, workload: str = "librispeech", **simulation: Any
) -> pd.DataFrame:
    """Cumulative ETA and TTA over recurrences for Zeus, Default and Grid Search.

    Per recurrence (retries included) the run energies and times are summed,
    accumulated over recurrences, then averaged over seeds with the min–max
    spread. Columns: gpu, eta, beta, workload, policy, recurrence, metric
    ('ETA' in kWh or 'TTA' in hours), mean, low, high.
    """
    history = simulation_history(con, **simulation)
    with registered(con, history) as h:
        return con.sql(f"""
            WITH per AS (
                SELECT gpu, eta AS eta_w, beta AS beta_w, workload, policy, seed, recurrence,
                       sum(energy_j) / 3.6e6 AS eta_kwh, sum(time_s) / 3600 AS tta_h
                FROM {h} WHERE workload = '{workload}' AND policy IN ('zeus', 'default', 'grid')
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
        """).df()


@style.styled
def plot_cumulative(data: pd.DataFrame) -> Any:
    """Two panels: cumulative ETA and TTA over recurrences, one line per policy."""
    fig, axes = style.subplots(1, 2, width="page", height=2.3)
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
    name = WORKLOAD_LABELS.get(first["workload"], first["workload"]).replace("\n", " ")
    fig.suptitle(
        f"{name} on {GPU_LABELS.get(first['gpu'], first['gpu'])}, η = {first['eta']:g}, "
        f"β = {first['beta']:g}: mean over seeds, band = min–max"
    )
    return fig


def final_data(con: duckdb.DuckDBPyConnection, last: int = 5, **simulation: Any) -> pd.DataFrame:
    """ETA and TTA of the last ``last`` recurrences, normalised to Default, per workload.

    Once the optimizers have converged, a recurrence costs what the chosen
    configuration costs; averaging the last few recurrences (retries included)
    over all seeds smooths the per-run sampling of repetitions. Normalised by
    Default's same average for the same seeds, GPU, η and β. Columns: gpu, eta,
    beta, workload, policy, metric ('ETA' or 'TTA'), vs_default.
    """
    history = simulation_history(con, **simulation)
    with registered(con, history) as h:
        return con.sql(f"""
            WITH per AS (
                SELECT gpu, eta, beta, workload, policy, seed, recurrence,
                       sum(energy_j) AS energy, sum(time_s) AS duration
                FROM {h} GROUP BY ALL
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
            SELECT gpu, eta, beta, workload, policy, 'ETA' AS metric, energy_ratio AS vs_default
            FROM ratio
            UNION ALL
            SELECT gpu, eta, beta, workload, policy, 'TTA' AS metric, time_ratio AS vs_default
            FROM ratio
            ORDER BY metric, workload, policy
        """).df()


@style.styled
def plot_final(data: pd.DataFrame) -> Any:
    """Grouped bars: final ETA and TTA of each policy relative to Default, per workload."""
    fig, axes = style.subplots(1, 2, width="page", height=2.3, sharey=True)
    policies = [p for p in ("zeus", "grid", "oracle") if p in set(data["policy"])]
    workloads = sorted(data["workload"].unique())
    x = np.arange(len(workloads))
    width = 0.8 / max(len(policies), 1)
    for ax, metric in zip(axes, ("ETA", "TTA"), strict=False):
        for k, policy in enumerate(policies):
            part = data[(data["metric"] == metric) & (data["policy"] == policy)]
            part = part.set_index("workload").reindex(workloads)
            ax.bar(
                x + (k - (len(policies) - 1) / 2) * width,
                part["vs_default"],
                width,
                color=style.color(policy),
                label=POLICY_LABELS[policy],
            )
        ax.axhline(1.0, color="black", lw=0.8, ls="--")
        ax.set_xticks(x, [SHORT_LABELS.get(w, w) for w in workloads], rotation=25, ha="right")
        ax.set_title(f"{metric} of the last recurrences")
    axes[0].set_ylabel("Normalised to Default (dashed)")
    axes[0].legend(loc="upper left", ncols=3)
    return fig


def regret_data(con: duckdb.DuckDBPyConnection, **simulation: Any) -> pd.DataFrame:
    """Cumulative regret: cumulative cost minus Oracle's, per recurrence, mean over seeds.

    Cost is the Zeus cost η·ETA + (1−η)·MaxPower·TTA in joules-equivalent;
    shown in MJ. Columns: gpu, eta, beta, workload, policy, recurrence, regret_mj.
    """
    history = simulation_history(con, **simulation)
    with registered(con, history) as h:
        return con.sql(f"""
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
            GROUP BY ALL ORDER BY r.workload, r.policy, r.recurrence
        """).df()


@style.styled
def plot_regret(data: pd.DataFrame) -> Any:
    """Small multiples: cumulative regret of Zeus and Grid Search per workload."""
    workloads = sorted(data["workload"].unique())
    fig, axes = style.panel_grid(len(workloads), row_height=1.9)
    for ax, workload in zip(axes, workloads, strict=True):
        for policy in ("grid", "zeus"):
            part = data[(data["workload"] == workload) & (data["policy"] == policy)]
            ax.plot(
                part["recurrence"],
                part["regret_mj"],
                color=style.color(policy),
                label=POLICY_LABELS[policy],
            )
        ax.set_title(WORKLOAD_LABELS.get(workload, workload).replace("\n", " "))
        ax.set_xlabel("Recurrence")
        ax.set_ylabel("Cumulative regret (MJ)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def sensitivity_data(
    con: duckdb.DuckDBPyConnection,
    etas: tuple[float, ...] = ETAS,
    betas: tuple[float, ...] = BETAS,
    seeds: tuple[int, ...] = SIM_SEEDS,
    gpu: str = "v100",
) -> pd.DataFrame:
    """Zeus' cumulative ETA and TTA relative to Default as η (β = 2) and β (η = 0.5) vary.

    Columns: knob ('eta' or 'beta'), value, workload, metric ('ETA' or 'TTA'),
    vs_default (total over all recurrences and seeds, Zeus / Default).
    """
    import pandas as pd

    parts = []
    for knob, values, fixed in (("eta", etas, {"beta": (2.0,)}), ("beta", betas, {"eta": (0.5,)})):
        history = simulation_history(
            con, ("zeus", "default"), gpu=gpu, seeds=seeds, **{knob: tuple(values)}, **fixed
        )
        with registered(con, history) as h:
            part = con.sql(f"""
                WITH totals AS (
                    SELECT {knob} AS value, workload, policy,
                           sum(energy_j) AS ETA, sum(time_s) AS TTA
                    FROM {h} GROUP BY ALL
                ),
                ratio AS (
                    SELECT z.value, z.workload, z.ETA / d.ETA AS ETA, z.TTA / d.TTA AS TTA
                    FROM totals z JOIN totals d
                      ON d.policy = 'default' AND d.workload = z.workload AND d.value = z.value
                    WHERE z.policy = 'zeus'
                )
                SELECT '{knob}' AS knob, * FROM (
                    UNPIVOT ratio ON ETA, TTA INTO NAME metric VALUE vs_default)
                ORDER BY metric, workload, value
            """).df()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


@style.styled
def plot_sensitivity(data: pd.DataFrame) -> Any:
    """A 2×2 grid: ETA and TTA vs Default as η varies (top) and as β varies (bottom)."""
    fig, axes = style.subplots(2, 2, width="page", height=4.0, squeeze=False)
    workloads = sorted(data["workload"].unique())
    colors = style.colors(workloads)
    for row, knob in enumerate(("eta", "beta")):
        rows = data[data["knob"] == knob]
        values = sorted(rows["value"].unique())
        positions = {v: i for i, v in enumerate(values)}
        for col, metric in enumerate(("ETA", "TTA")):
            ax = axes[row, col]
            for workload in workloads:
                part = rows[(rows["metric"] == metric) & (rows["workload"] == workload)]
                part = part.sort_values("value")
                ax.plot(
                    [positions[v] for v in part["value"]],
                    part["vs_default"],
                    marker="o",
                    ms=3,
                    color=colors[workload],
                    label=WORKLOAD_LABELS.get(workload, workload).replace("\n", " "),
                )
            ax.axhline(1.0, color="black", lw=0.8, ls="--")
            if knob == "beta":  # no early stopping (β = ∞) can cost several times Default
                style.log_axis(ax, "y")
            ax.set_xticks(range(len(values)), [_knob_label(v) for v in values])
            symbol = "η" if knob == "eta" else "β"
            fixed = "β = 2" if knob == "eta" else "η = 0.5"
            ax.set_xlabel(f"{symbol} ({fixed})")
            ax.set_ylabel(f"Zeus {metric} / Default")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=3)
    return fig


def _knob_label(value: float) -> str:
    return "∞" if np.isinf(value) else f"{value:g}"


def alibaba_data(
    con: duckdb.DuckDBPyConnection, gpu: str = "v100", processes: int | None = None
) -> pd.DataFrame:
    """Alibaba recurring groups replayed under Zeus and Default: totals per workload.

    Uses :func:`mltraces.simulation.replay_alibaba` on ``zeus.alibaba_groups``.
    Columns: workload, metric ('ETA' or 'TTA'), vs_default (Zeus total over all
    groups of the workload divided by Default's).
    """
    from mltraces.simulation import replay_alibaba

    groups = con.sql(
        'SELECT "group", start_time, end_time, dataset, runtime_ratio FROM zeus.alibaba_groups'
    ).df()
    history, _ = replay_alibaba(con, groups, gpu=gpu, policies="zeus,default", processes=processes)
    with registered(con, history) as h:
        return con.sql(f"""
            WITH totals AS (
                SELECT workload, policy, sum(energy_j) AS ETA, sum(time_s) AS TTA
                FROM {h} GROUP BY ALL
            ),
            ratio AS (
                SELECT z.workload, z.ETA / d.ETA AS ETA, z.TTA / d.TTA AS TTA
                FROM totals z JOIN totals d ON d.workload = z.workload AND d.policy = 'default'
                WHERE z.policy = 'zeus'
            )
            UNPIVOT ratio ON ETA, TTA INTO NAME metric VALUE vs_default
            ORDER BY metric, workload
        """).df()


@style.styled
def plot_alibaba(data: pd.DataFrame) -> Any:
    """Bars: Zeus' ETA and TTA relative to Default on the Alibaba recurring groups."""
    fig, ax = style.subplots(width="column", height=2.3)
    workloads = sorted(data["workload"].unique())
    x = np.arange(len(workloads))
    for k, metric in enumerate(("ETA", "TTA")):
        part = data[data["metric"] == metric].set_index("workload").reindex(workloads)
        ax.bar(x + (k - 0.5) * 0.38, part["vs_default"], 0.38, label=metric, color=style.PALETTE[k])
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(x, [SHORT_LABELS.get(w, w) for w in workloads], rotation=25, ha="right")
    ax.set_ylabel("Zeus / Default")
    ax.legend(loc="upper left", ncols=2)
    ax.set_title("Alibaba recurring groups")
    return fig


def _spec(name: str, title: str, data: Any, plot: Any, tables: tuple[str, ...] = ()) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "zeus", title, tables or ("zeus.train", "zeus.power"), data, plot)


FIGURES = (
    _spec(
        "zeus_savings",
        "Fig. 1: energy saved by tuning the power limit, and batch size + power limit (V100)",
        savings_data,
        plot_savings,
    ),
    _spec(
        "zeus_savings_gpus",
        "Fig. 1 on all four GPUs (V100, A40, P100, RTX6000)",
        savings_data,
        plot_savings_gpus,
    ),
    _spec(
        "zeus_tradeoff",
        "Fig. 2: ETA vs TTA of every configuration and the Pareto front, DeepSpeech2 on V100",
        tradeoff_data,
        plot_tradeoff,
    ),
    _spec(
        "zeus_tradeoff_all",
        "Fig. 2 for every workload on V100",
        tradeoff_data,
        plot_tradeoff_all,
    ),
    _spec(
        "zeus_cumulative",
        "Simulated cumulative ETA and TTA over recurrences: Zeus, Default, Grid Search "
        "(DeepSpeech2, V100, 10 seeds)",
        cumulative_data,
        plot_cumulative,
    ),
    _spec(
        "zeus_final",
        "Simulated ETA and TTA of the last recurrences, normalised to Default, per workload",
        final_data,
        plot_final,
    ),
    _spec(
        "zeus_regret",
        "Simulated cumulative regret vs Oracle of Zeus and Grid Search, per workload",
        regret_data,
        plot_regret,
    ),
    _spec(
        "zeus_sensitivity",
        "Sensitivity of Zeus' ETA and TTA (vs Default) to η and β",
        sensitivity_data,
        plot_sensitivity,
    ),
    _spec(
        "zeus_alibaba",
        "Alibaba recurring groups replayed: Zeus' ETA and TTA vs Default per workload",
        alibaba_data,
        plot_alibaba,
        ("zeus.train", "zeus.power", "zeus.alibaba_groups"),
    ),
)
