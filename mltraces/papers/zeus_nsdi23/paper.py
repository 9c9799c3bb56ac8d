"""What the Zeus (NSDI'23) figures share: names, the published numbers, the configuration SQL.

The paper's numbers live as data in this folder's ``published.json``:
Fig. 1's bar heights and saved ranges, Fig. 2's Pareto front and axes, and the
abstract's headline result. The accessors here read them from there, so a
figure, a report and a test all see the same values.

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

from dataclasses import dataclass
from typing import Any

from mltraces.figures.sql import values_sql

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
POLICY_LABELS = {
    "zeus": "Zeus",
    "default": "Default",
    "grid": "Grid Search",
    "oracle": "Oracle",
    "pl-only": "Power limit only",
    "bs-only": "Batch size only",
}


def published() -> dict[str, Any]:
    """The paper's published numbers (this folder's ``published.json``)."""
    from mltraces.papers import published as numbers

    return numbers("zeus_nsdi23")


def paper_fig1_bars() -> dict[str, dict[str, float]]:
    """Fig. 1's V100 bar heights (energy / baseline) per kind and workload, as published."""
    bars = published()["fig1"]["normalized_energy"]
    return {kind: {w: float(v) for w, v in heights.items()} for kind, heights in bars.items()}


def paper_fig1_ranges() -> dict[str, tuple[float, float]]:
    """Fig. 1's saved ranges (percent) as the paper's text prints them, per kind."""
    ranges = published()["fig1"]["saved_pct"]
    return {kind: (float(lo), float(hi)) for kind, (lo, hi) in ranges.items()}


def paper_fig2_front() -> tuple[tuple[int, int], ...]:
    """Fig. 2's published Pareto front of DeepSpeech2 on V100: (batch size, W), fastest first."""
    return tuple((int(b), int(p)) for b, p in published()["fig2"]["pareto_front"])


def paper_fig2_limits() -> tuple[float, float]:
    """Fig. 2(a)'s axes as published: (time in s, energy in J)."""
    axes = published()["fig2"]["axes"]
    return float(axes["time_s"]), float(axes["energy_j"])


@dataclass(frozen=True)
class Headline:
    """The abstract's result: energy and time saved against its baseline, in percent."""

    energy_saved: tuple[float, float]
    time_saved: float
    baseline: str


def paper_headline() -> Headline:
    """The paper's headline numbers (:class:`Headline`), from ``published.json``."""
    raw = published()["headline"]
    low, high = raw["energy_saved_pct"]
    return Headline((float(low), float(high)), float(raw["time_saved_pct"]), raw["baseline"])


def spec(name: str, title: str, data: Any, plot: Any, tables: tuple[str, ...] = (),
         figure: str = "") -> Any:
    """A zeus :class:`~mltraces.figures.FigureSpec` (train and power traces unless told)."""
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "zeus", title, tables or ("zeus.train", "zeus.power"), data, plot,
                      figure=figure, paper=PAPER)


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
