"""Splitwise (ISCA'24): the Azure LLM inference traces 2023, token lengths and arrival rate.

Splitwise characterises two of Azure's LLM inference services, coding and conversation,
from an hour of their requests; Azure released that hour (``azure_llm.code_2023``,
``azure_llm.conv_2023``), read here as ``mltraces.requests`` maps it (prompt =
``input_tokens``, generated = ``output_tokens``, arrivals on the files' clock, read as
UTC). The publisher's notebook redraws the paper's characterisation plots from these
files, but the paper's figure numbers could not be checked here, so both figures are
marked as our own analysis. Each prints our medians beside the medians quoted for the
paper (``published.json``), labelled unconfirmed: the paper's text could not be read
here to confirm them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import cdf_from_points_sql, requests_sql, values_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "Splitwise (ISCA'24)"
OWN = "our own analysis"
TABLES = ("azure_llm.code_2023", "azure_llm.conv_2023")
LABELS = {"azure_llm/code_2023": "Coding", "azure_llm/conv_2023": "Conversation"}
MEASURES = {"input_tokens": "Prompt (input) tokens", "output_tokens": "Generated (output) tokens"}


def quoted_medians() -> dict[str, Any]:
    """The medians quoted for the paper, with their status (``published.json``)."""
    from mltraces.papers import published

    return published("splitwise_isca24")["token_medians"]


def _quoted_sql() -> str:
    quoted = quoted_medians()
    rows = [(trace, measure, float(quoted[label.lower()][measure]))
            for trace, label in LABELS.items() for measure in MEASURES]
    return values_sql(rows, ["trace", "measure", "x"], "q")


def tokens_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """CDFs of prompt and generated tokens per trace, with our exact medians and the quoted
    ones. Columns: trace, measure, kind (cdf, median, quoted), x (tokens), cdf."""
    requests = requests_sql(TABLES, "trace, input_tokens, output_tokens")
    long = (f"(SELECT trace, 'input_tokens' AS measure, input_tokens AS v FROM {requests} "
            f"UNION ALL SELECT trace, 'output_tokens', output_tokens FROM {requests})")
    points = f"SELECT trace, measure, v AS x, count(*) AS w FROM {long} WHERE v IS NOT NULL " \
             "GROUP BY ALL"
    curves = cdf_from_points_sql(points, by=["trace", "measure"])
    return store.query(con, f"""
        SELECT trace, measure, 'cdf' AS kind, x::DOUBLE AS x, cdf FROM ({curves})
        UNION ALL
        SELECT trace, measure, 'median', median(v)::DOUBLE, 0.5 FROM {long} GROUP BY ALL
        UNION ALL
        SELECT trace, measure, 'quoted', x, 0.5 FROM {_quoted_sql()}
        ORDER BY trace, measure, kind, x
    """)


def medians_text(data: pd.DataFrame, trace: str) -> str:
    """``ours 1,469 / 13, quoted 1,500 / 13`` for one trace (prompt / generated)."""
    def pick(kind: str, measure: str) -> float:
        rows = data[(data.trace == trace) & (data.measure == measure) & (data.kind == kind)]
        return float(rows["x"].iloc[0])

    ours = " / ".join(f"{pick('median', m):,.0f}" for m in MEASURES)
    quoted = " / ".join(f"{pick('quoted', m):,.0f}" for m in MEASURES)
    return f"{LABELS[trace]}: ours {ours}; quoted {quoted}"


def medians_report(con: duckdb.DuckDBPyConnection) -> str:
    """Our medians beside the quoted ones, prompt / generated tokens, one line per trace."""
    data = tokens_data(con).df()
    lines = [medians_text(data, trace) for trace in LABELS]
    return "\n".join(lines) + f"\n(quoted medians: {quoted_medians()['status']}; see " \
                              "published.json)"


@style.styled
def plot_tokens(data: pd.DataFrame) -> Any:
    """Two panels (prompt, generated): a CDF per trace, our median dotted, the quoted one
    a hollow marker."""
    fig, axes = style.subplots(1, 2, width="page", height=2.6)
    looks = style.colors(list(LABELS.values()))
    for ax, (measure, label) in zip(axes, MEASURES.items(), strict=True):
        for trace, name in LABELS.items():
            part = data[(data.trace == trace) & (data.measure == measure)]
            curve = part[part.kind == "cdf"]
            ax.step(curve["x"], 100 * curve["cdf"], where="post", lw=1.1, color=looks[name],
                    label=name)
            median = part[part.kind == "median"]["x"].iloc[0]
            quoted = part[part.kind == "quoted"]["x"].iloc[0]
            ax.axvline(median, color=looks[name], lw=0.7, ls=":")
            ax.plot([quoted], [50], marker="o", mfc="none", color=looks[name], ms=5)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        style.cdf_axis(ax)
        ax.legend(loc="lower right", fontsize=6)
    notes = "; ".join(medians_text(data, trace) for trace in LABELS)
    style.provenance(fig, f"Azure LLM inference 2023: token lengths ({OWN}); dotted: our "
                     f"medians, circles: medians quoted for {PAPER}, unconfirmed\n{notes} "
                     "(prompt / generated)", fontsize=6.5)
    return fig


def rate_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Requests per minute of each trace on the files' clock (UTC), idle minutes as 0.
    Columns: trace, minute (s since the Unix epoch, a whole minute), requests."""
    requests = requests_sql(TABLES, "trace, arrival_time")
    return store.query(con, f"""
        WITH per AS (
            SELECT trace, (floor(epoch(arrival_time) / 60) * 60)::BIGINT AS minute,
                   count(*) AS requests
            FROM {requests} GROUP BY ALL
        ),
        span AS (SELECT trace, min(minute) AS lo, max(minute) AS hi FROM per GROUP BY trace),
        grid AS (SELECT trace, unnest(range(lo, hi + 60, 60)) AS minute FROM span)
        SELECT g.trace, g.minute, coalesce(p.requests, 0) AS requests
        FROM grid g LEFT JOIN per p USING (trace, minute)
        ORDER BY g.trace, g.minute
    """)


@style.styled
def plot_rate(data: pd.DataFrame) -> Any:
    """Requests per minute over the hour, one line per trace, on the clock's HH:MM."""
    import datetime as dt

    fig, ax = style.subplots(width="column", height=2.4)
    looks = style.colors(list(LABELS.values()))
    for trace, name in LABELS.items():
        part = data[data.trace == trace]
        mean = part["requests"].mean() / 60
        ax.plot(part["minute"], part["requests"], lw=1.0, color=looks[name],
                label=f"{name}: {mean:.2f} req/s")
    ticks = [t for t in range(int(data["minute"].min()) // 600 * 600,
                              int(data["minute"].max()) + 600, 600)]
    ax.set_xticks(ticks, [dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%H:%M")
                          for t in ticks])
    ax.set_xlim(data["minute"].min(), data["minute"].max())
    ax.set_ylim(0, data["requests"].max() * 1.3)
    ax.set_xlabel("2023-11-16, the trace's clock (read as UTC)")
    ax.set_ylabel("Requests per minute")
    ax.legend(fontsize=6, loc="upper right", ncols=2, handlelength=1.2, title="mean rate",
              title_fontsize=6)
    style.provenance(ax, f"Azure LLM inference 2023: request rate ({OWN})", fontsize=7)
    return fig


def _spec(name: str, title: str, data: Any, plot: Any) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "azure_llm", title, TABLES, data, plot, paper=PAPER)


FIGURES = (
    _spec("splitwise_tokens", f"Azure LLM 2023: CDFs of prompt and generated tokens, coding "
          f"and conversation, our medians beside the quoted ones ({OWN})", tokens_data,
          plot_tokens),
    _spec("splitwise_rate", f"Azure LLM 2023: requests per minute, coding and conversation "
          f"({OWN})", rate_data, plot_rate),
)
