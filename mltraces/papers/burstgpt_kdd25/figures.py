"""BurstGPT (KDD'25): the README's overview of the first two months, redrawn.

BurstGPT logs requests to ChatGPT (GPT-3.5) and GPT-4 through Azure OpenAI, as a
conversation service ("Conversation log") and an API ("API log"). The repository's
README draws the first two months (``BurstGPT_1.csv``, here ``burstgpt.lfs_1``, the
sha256-pinned copy) in figures it numbers itself; two are redrawn here from
``mltraces.requests``' mapping of that file (arrival = seconds from 00:00 of the first
day on a UTC+8 clock; failed = no response tokens), so they are marked as our own
redraws of the README's figures, not as the paper's:

- the daily periodicity (README Figure 2): requests in each hour of the day, one box per
  hour over the days of the trace, per model and log type (boxes: quartiles; whiskers:
  5th and 95th percentiles; no outliers drawn);
- the statistics of request and response tokens (README Figure 4): for conversation
  requests of each model, the response tokens' median, mean and 5–95% band against the
  request tokens (bins of 16 tokens below 2,048; failed requests left out).

The README's line count of the file is printed beside ours (``published.json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import requests_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "BurstGPT (KDD'25)"
TABLE = "burstgpt.lfs_1"
FILE = "BurstGPT_1"
MODELS = ("ChatGPT", "GPT-4")
KINDS = {"Conversation log": "Conv.", "API log": "API"}
BIN = 16
MAX_REQUEST = 2048


def readme_lines() -> float:
    """The README's line count of the file drawn, in thousands."""
    from mltraces.papers import published

    return float(published("burstgpt_kdd25")["readme"]["lines_thousands"][FILE])


def daily_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Requests per (model, log type, hour of day) over the trace's days, as box statistics
    (hours without a request count 0). Columns: model, kind, hour, q05, q25, q50, q75, q95,
    days, requests (all rows of the file), readme_thousands."""
    requests = requests_sql([TABLE], "model, kind, arrival_s")
    return store.query(con, f"""
        WITH r AS (SELECT model, kind, floor(arrival_s / 86400)::BIGINT AS day,
                          (floor(arrival_s / 3600)::BIGINT % 24) AS hour FROM {requests}),
        counts AS (SELECT model, kind, day, hour, count(*) AS n FROM r GROUP BY ALL),
        days AS (SELECT min(day) AS lo, max(day) AS hi FROM r),
        grid AS (SELECT m.model, m.kind, d.day, h.hour
                 FROM (SELECT DISTINCT model, kind FROM r) m,
                      (SELECT unnest(range(lo, hi + 1)) AS day FROM days) d,
                      (SELECT unnest(range(24)) AS hour) h),
        filled AS (SELECT g.model, g.kind, g.hour, coalesce(c.n, 0) AS n
                   FROM grid g LEFT JOIN counts c USING (model, kind, day, hour))
        SELECT model, kind, hour,
               quantile_cont(n, 0.05) AS q05, quantile_cont(n, 0.25) AS q25,
               quantile_cont(n, 0.5) AS q50, quantile_cont(n, 0.75) AS q75,
               quantile_cont(n, 0.95) AS q95, count(*) AS days,
               (SELECT count(*) FROM r) AS requests, {readme_lines()!r} AS readme_thousands
        FROM filled GROUP BY ALL ORDER BY model, kind, hour
    """)


def _counts_note(data: pd.DataFrame) -> str:
    ours = int(data["requests"].iloc[0])
    return (f"{ours / 1000:,.1f}k requests over {int(data['days'].iloc[0])} days (README: "
            f"{data['readme_thousands'].iloc[0]:,.1f}k lines in {FILE}.csv)")


@style.styled
def plot_daily(data: pd.DataFrame) -> Any:
    """Four panels (ChatGPT and GPT-4, conversation and API): a box per hour of day."""
    panels = [(m, k) for k in KINDS for m in MODELS]
    fig, axes = style.subplots(1, len(panels), width="page", height=2.2)
    for ax, (model, kind) in zip(axes, panels, strict=True):
        part = data[(data.model == model) & (data.kind == kind)]
        stats = [{"med": r.q50, "q1": r.q25, "q3": r.q75, "whislo": r.q05, "whishi": r.q95,
                  "label": str(int(r.hour))} for r in part.itertuples()]
        if stats:
            ax.bxp(stats, positions=part["hour"].tolist(), showfliers=False, widths=0.7,
                   patch_artist=True, boxprops={"facecolor": style.color("", 0), "lw": 0.5},
                   medianprops={"color": "black", "lw": 0.8},
                   whiskerprops={"lw": 0.5}, capprops={"lw": 0.5})
        ax.set_xticks([0, 12, 23], ["0h", "12h", "23h"])
        ax.set_xlabel(f"{model} ({KINDS[kind]})")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("Requests per hour")
    style.provenance(fig, f"{PAPER}: daily periodicity, our own redraw of the README's "
                     f"Figure 2 from {FILE}.csv (hour of day, UTC+8)\n{_counts_note(data)}",
                     fontsize=7)
    return fig


def tokens_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Response tokens against request tokens for the conversation requests of each model
    that did not fail. Columns: model, request (bin start, tokens), requests, median, mean,
    q05, q95."""
    requests = requests_sql([TABLE], "model, kind, failed, input_tokens, output_tokens")
    return store.query(con, f"""
        SELECT model, (input_tokens // {BIN}) * {BIN} AS request, count(*) AS requests,
               quantile_cont(output_tokens, 0.5) AS median, avg(output_tokens) AS mean,
               quantile_cont(output_tokens, 0.05) AS q05, quantile_cont(output_tokens, 0.95) AS q95
        FROM {requests}
        WHERE kind = 'Conversation log' AND failed IS NOT TRUE AND input_tokens < {MAX_REQUEST}
        GROUP BY ALL ORDER BY model, request
    """)


@style.styled
def plot_tokens(data: pd.DataFrame) -> Any:
    """Per model: the 5–95% band, the median and the mean of response tokens per bin."""
    fig, axes = style.subplots(1, len(MODELS), width="page", height=2.4, sharey=True)
    for ax, model in zip(axes, MODELS, strict=True):
        part = data[data.model == model]
        ax.fill_between(part["request"], part["q05"], part["q95"], step="post",
                        color=style.color("", 0), alpha=0.25, lw=0, label="5–95%")
        ax.plot(part["request"], part["median"], color=style.color("", 0), lw=1.0,
                label="median")
        ax.plot(part["request"], part["mean"], color=style.PALETTE[6], lw=1.0, ls="--",
                label="mean")
        ax.set_xlabel(f"Request tokens\n{model} (Conv.), {int(part['requests'].sum()):,} "
                      "requests")
    axes[0].set_ylabel("Response tokens")
    axes[0].legend(fontsize=6, loc="upper left")
    style.provenance(fig, f"{PAPER}: response against request tokens, our own redraw of the "
                     f"README's Figure 4 from {FILE}.csv (conversation log, failed requests "
                     "left out)", fontsize=7)
    return fig


def _spec(name: str, title: str, data: Any, plot: Any, figure: str) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "burstgpt", title, (TABLE,), data, plot, figure=figure,
                      paper=PAPER)


FIGURES = (
    _spec("burstgpt_daily", "BurstGPT_1: requests per hour of day per model and log type "
          "(our own redraw of the README's Figure 2)", daily_data, plot_daily,
          "README Figure 2 (daily periodicity), redrawn"),
    _spec("burstgpt_tokens", "BurstGPT_1: response against request tokens per model, "
          "conversation log (our own redraw of the README's Figure 4)", tokens_data,
          plot_tokens, "README Figure 4 (request and response tokens), redrawn"),
)
