"""ServeGen (arXiv 2505.09999): per-client request rates, from the released workload windows.

ServeGen describes each client (an anonymised API customer) of a model service by 600-s
windows: its request rate, the CV of its inter-arrival times and the fitted arrival
distribution. The DeepSeek-R1 (73 clients) and Qwen-VL image (35 clients) descriptions
cover one day and are obtainable here (``servegen.deepseek_r1_windows``,
``servegen.mm_image_windows``: only the windows, not the length tables). The figure is
our own analysis of the windows: how a service's load splits over its clients during the
day (the largest five, the rest together), and each client's mean rate ranked, which
shows how few clients carry most of the load. The paper's own per-client figures could
not be read here to number or check them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "ServeGen (arXiv'25)"
OWN = "our own analysis"
SERVICES = {"DeepSeek-R1": "servegen.deepseek_r1_windows",
            "Qwen-VL image": "servegen.mm_image_windows"}
TOP = 5
WINDOW_S = 600


def rates_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Per service: each client's mean rate and rank, and the day's rate per window split
    into the :data:`TOP` busiest clients and the rest. Columns: service, part ('rank' or
    'window'), client (its rank for 'rank'; a top client's rank, or 0 for the rest, for
    'window'), window_start (s; NULL for 'rank'), rate (requests/s), share (of the
    service's requests: a client's for 'rank')."""
    windows = " UNION ALL ".join(
        f"SELECT '{name}' AS service, client, window_start, rate FROM {table}"
        for name, table in SERVICES.items())
    return store.query(con, f"""
        WITH w AS ({windows}),
        mean AS (SELECT service, client, avg(rate) AS rate FROM w GROUP BY ALL),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY service ORDER BY rate DESC, client)
                          AS rank,
                          rate / sum(rate) OVER (PARTITION BY service) AS share FROM mean),
        split AS (SELECT w.service, CASE WHEN r.rank <= {TOP} THEN r.rank ELSE 0 END AS client,
                         w.window_start, sum(w.rate) AS rate
                  FROM w JOIN ranked r USING (service, client) GROUP BY ALL)
        SELECT service, 'rank' AS part, rank AS client, NULL::BIGINT AS window_start, rate,
               share FROM ranked
        UNION ALL
        SELECT service, 'window', client, window_start, rate, NULL FROM split
        ORDER BY service, part, client, window_start
    """)


def shares_text(data: pd.DataFrame, service: str) -> str:
    """``73 clients; the busiest 1% ...``: how concentrated the service's load is."""
    ranked = data[(data.service == service) & (data.part == "rank")].sort_values("client")
    top1, top5 = ranked["share"].iloc[0], ranked["share"].iloc[:TOP].sum()
    return (f"{service}: {len(ranked)} clients; the busiest carries {100 * top1:.0f}% of the "
            f"requests,\nthe busiest {TOP} {100 * top5:.0f}%")


@style.styled
def plot_rates(data: pd.DataFrame) -> Any:
    """Per service (a row): the day's rate stacked by client, and the ranked mean rates."""
    services = [s for s in SERVICES if s in set(data.service)]
    fig, axes = style.subplots(len(services), 2, width="page", height=2.3 * len(services),
                               squeeze=False)
    names = [f"client #{k}" for k in range(1, TOP + 1)] + ["the others"]
    looks = style.colors(names)
    for row, service in zip(axes, services, strict=True):
        windows = data[(data.service == service) & (data.part == "window")]
        hours = sorted(windows["window_start"].unique())
        stacks = []
        for k in [*range(1, TOP + 1), 0]:
            part = windows[windows.client == k].set_index("window_start")["rate"]
            stacks.append([float(part.get(h, 0.0)) for h in hours])
        row[0].stackplot([h / 3600 for h in hours], stacks, labels=names, step="post",
                         colors=[looks[n] for n in names], lw=0)
        row[0].set_xlim(0, 24)
        row[0].set_xticks([0, 6, 12, 18, 24])
        row[0].set_xlabel("Hour of the day described")
        row[0].set_ylabel("Requests / s")
        row[0].set_title(f"{service}: rate per 600-s window", fontsize=7)
        ranked = data[(data.service == service) & (data.part == "rank")].sort_values("client")
        row[1].plot(ranked["client"], ranked["rate"], marker="o", ms=2.5, lw=0.8,
                    color=looks[names[0]])
        row[1].set_yscale("log")
        row[1].set_xlabel("Client, ranked by its mean rate")
        row[1].set_ylabel("Mean requests / s")
        row[1].set_title(shares_text(data, service), fontsize=6.5)
    axes[0][0].legend(fontsize=5.5, ncols=2, loc="upper left")
    style.provenance(fig, f"{PAPER} released workload windows: per-client request rates "
                     f"({OWN})", fontsize=7)
    return fig


def _spec(name: str, title: str, data: Any, plot: Any) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "servegen", title, tuple(SERVICES.values()), data, plot,
                      paper=PAPER)


FIGURES = (
    _spec("servegen_client_rates", "ServeGen DeepSeek-R1 and Qwen-VL image: each client's "
          f"request rate over the day, and ranked ({OWN})", rates_data, plot_rates),
)
