"""Mooncake (FAST'25): Table 2's workload statistics and Fig. 9's prefix-cache hit rates.

The trace release (``mooncake.conversation``, ``.toolagent``, ``.synthetic``; the tool &
agent trace is not obtainable here) gives each request's arrival, input and output
tokens and the ids of its 512-token prefix blocks. Read through ``mltraces.requests``'
mapping, the requests and average lengths reproduce Table 2 exactly; its cache ratio
(the share of input tokens in reusable prefix blocks) is ours from the prefix-cache
engine with a cache that never evicts (every policy agrees there).

Fig. 9 plots the prefix-cache hit rate against cache capacity (tokens) from the sequence
of requests alone; the paper does not say which eviction policy (its store evicts LRU).
We replay each trace through :mod:`mltraces.prefixcache` (via
:mod:`mltraces.workloads.requests`) under LRU, LFU, FIFO and Belady's optimal at
capacities of 16 to 2**21 blocks (8k to 1.07G tokens) and at the paper's 3M-token local
cache; the hit rate is reused prefix tokens over input tokens. The paper's "all"
curve (the three workloads together) is not redrawn: the release remaps block ids per
file, so ids of two files cannot be matched. The replays are cached beside the trace's
Parquet, keyed by it and the engine's code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.figures import store, style
from mltraces.figures.sql import requests_sql, values_sql

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

#: The paper these figures come from, as titles and listings name it.
PAPER = "Mooncake (FAST'25)"
TABLES = {"conversation": "mooncake.conversation", "toolagent": "mooncake.toolagent",
          "synthetic": "mooncake.synthetic"}
LABELS = {"conversation": "Conversation", "toolagent": "Tool & Agent", "synthetic": "Synthetic"}
BLOCK = 512
#: the paper's local cache (Fig. 9's dashed line), in tokens
LOCAL_CACHE_TOKENS = 3_000_000
#: a cache that never evicts (more blocks than any trace has)
UNBOUNDED = 1 << 40
#: capacities replayed, in blocks: powers of two from 8k to 1.07G tokens, and 3M tokens
CAPACITIES = tuple(sorted({1 << k for k in range(4, 22)} | {LOCAL_CACHE_TOKENS // BLOCK}))
POLICIES = ("lru", "lfu", "fifo", "belady")


def published() -> dict[str, Any]:
    """The paper's numbers (``published.json``)."""
    from mltraces.papers import published as numbers

    return numbers("mooncake_fast25")


def _available(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    from mltraces.figures import available

    found = set(available(con, list(TABLES.values())))
    if not found:
        raise LookupError("no Mooncake trace is available: run `mltraces fetch mooncake`")
    return {name: table for name, table in TABLES.items() if table in found}


def replays_file(con: duckdb.DuckDBPyConnection) -> Path:
    """Every available trace replayed under every policy at :data:`CAPACITIES` and
    unbounded, as Parquet (cached beside the traces' Parquet, keyed by them and the
    engine's code). Columns: workload, policy, capacity (blocks), capacity_tokens, blocks,
    block_hits, prefix_hit_blocks, reused_tokens, input_tokens, token_hit_ratio."""
    tables = _available(con)
    files = store.identity(con, " ".join(tables.values()))
    if files is None:
        raise LookupError("the Mooncake traces are not catalog tables on this connection")

    def write(path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from mltraces.workloads import requests

        rows: dict[str, list] = {k: [] for k in (
            "workload", "policy", "capacity", "capacity_tokens", "blocks", "block_hits",
            "prefix_hit_blocks", "reused_tokens", "input_tokens", "token_hit_ratio")}
        for name, table in tables.items():
            trace = requests.read_blocks(con, table.replace(".", "/"))
            result = requests.replay_blocks(
                trace, requests.plan([*CAPACITIES, UNBOUNDED], ",".join(POLICIES)))
            for stats in result.totals:
                values = (name, stats.policy, stats.capacity, stats.capacity * BLOCK,
                          stats.blocks, stats.block_hits, stats.prefix_hit_blocks,
                          stats.reused_tokens, stats.input_tokens, stats.token_hit_ratio)
                for key, value in zip(rows, values, strict=True):
                    rows[key].append(value)
        pq.write_table(pa.table(rows), path)

    parts = ["mooncake-prefix-cache", repr((CAPACITIES, UNBOUNDED, POLICIES)),
             store.source_version("mltraces.prefixcache"),
             store.source_version("mltraces.workloads")]
    return store.stored_path(files, parts, write)


def _published_table2_sql() -> str:
    rows = [(name, int(w["requests"]), float(w["avg_input_tokens"]),
             float(w["avg_output_tokens"]), float(w["cache_ratio"]))
            for name, w in published()["table2"]["workloads"].items()]
    return values_sql(rows, ["workload", "requests", "avg_input", "avg_output", "cache_ratio"],
                      "p")


def table2_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Table 2 as published and as ours, per workload (ours only where the trace is here).
    Columns: workload, who (paper, ours), requests, avg_input, avg_output, cache_ratio."""
    tables = _available(con)
    stats = " UNION ALL ".join(
        f"SELECT '{name}' AS workload, count(*) AS requests, avg(input_tokens) AS avg_input, "
        f"avg(output_tokens) AS avg_output FROM {requests_sql([table])}"
        for name, table in tables.items())
    replays = f"read_parquet({store.literal(replays_file(con))})"
    return store.query(con, f"""
        SELECT workload, 'paper' AS who, requests, avg_input, avg_output, cache_ratio
        FROM {_published_table2_sql()}
        UNION ALL
        SELECT s.workload, 'ours', s.requests, s.avg_input, s.avg_output, r.token_hit_ratio
        FROM ({stats}) s JOIN {replays} r
          ON r.workload = s.workload AND r.policy = 'lru' AND r.capacity = {UNBOUNDED}
        ORDER BY workload, who
    """)


def table2_report(con: duckdb.DuckDBPyConnection) -> str:
    """Table 2, ours beside the paper's, as text."""
    data = table2_data(con).df()
    lines = []
    for name, label in LABELS.items():
        part = data[data.workload == name].set_index("who")
        if "ours" not in part.index:
            lines.append(f"{label}: not here (paper: {_row(part.loc['paper'])})")
            continue
        lines.append(f"{label}: ours {_row(part.loc['ours'])}; paper {_row(part.loc['paper'])}")
    return "\n".join(lines)


def _row(row: Any) -> str:
    return (f"{int(row.requests):,} requests, avg input {row.avg_input:,.0f}, avg output "
            f"{row.avg_output:,.0f}, cache ratio {100 * row.cache_ratio:.0f}%")


@style.styled
def plot_table2(data: pd.DataFrame) -> Any:
    """Table 2 with ours beside each published value (a dash where the trace is not here)."""
    rows = []
    for name, label in LABELS.items():
        part = data[data.workload == name].set_index("who")
        paper = part.loc["paper"]
        ours = part.loc["ours"] if "ours" in part.index else None

        shown = {"requests": lambda v: f"{int(v):,}", "avg_input": lambda v: f"{v:,.0f}",
                 "avg_output": lambda v: f"{v:,.0f}", "cache_ratio": lambda v: f"{100 * v:.0f}%"}
        rows.append([label, *(f"{'—' if ours is None else form(ours[column])} "
                              f"({form(paper[column])})" for column, form in shown.items())])
    return style.table_figure(
        rows, ["Workload", "Requests", "Avg input len", "Avg output len", "Cache ratio"],
        title=f"{PAPER} Table 2: ours (as published)\ncache ratio: reused prefix tokens / "
              "input tokens with a cache that never evicts", width="page",
        col_widths=[0.2, 0.2, 0.2, 0.2, 0.2])


def _published_fig9_sql() -> str:
    fig9, table2 = published()["fig9"], published()["table2"]["workloads"]
    rows = [(name, float(fig9["share_of_max_at_local_cache"][name]),
             float(table2[name]["cache_ratio"])) for name in TABLES]
    return values_sql(rows, ["workload", "share_at_local", "cache_ratio"], "p")


def fig9_data(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    """Hit rate against capacity per workload and policy, each workload's maximum (a cache
    that never evicts) and the paper's share of it at 3M tokens and maximum. Columns:
    workload, policy, capacity_tokens, hit (reused / input tokens), max_hit,
    paper_share_at_local, paper_max."""
    replays = f"read_parquet({store.literal(replays_file(con))})"
    return store.query(con, f"""
        WITH top AS (SELECT workload, token_hit_ratio AS max_hit FROM {replays}
                     WHERE capacity = {UNBOUNDED} AND policy = 'lru')
        SELECT r.workload, r.policy, r.capacity_tokens, r.token_hit_ratio AS hit, t.max_hit,
               p.share_at_local AS paper_share_at_local, p.cache_ratio AS paper_max
        FROM {replays} r JOIN top t USING (workload) JOIN {_published_fig9_sql()} USING (workload)
        WHERE r.capacity < {UNBOUNDED}
        ORDER BY r.workload, r.policy, r.capacity_tokens
    """)


def share_at_local(data: pd.DataFrame, workload: str, policy: str = "lru") -> float:
    """Our hit rate at the 3M-token local cache as a share of the workload's maximum."""
    row = data[(data.workload == workload) & (data.policy == policy)
               & (data.capacity_tokens == LOCAL_CACHE_TOKENS // BLOCK * BLOCK)]
    return float(row["hit"].iloc[0] / row["max_hit"].iloc[0])


@style.styled
def plot_fig9(data: pd.DataFrame) -> Any:
    """One panel per workload: hit rate against capacity (log tokens) per policy, the
    maximum dotted, the paper's maximum a tick on the right, the 3M-token cache dashed."""
    workloads = [w for w in TABLES if w in set(data.workload)]
    fig, axes = style.subplots(1, len(workloads), width="page", height=2.6, squeeze=False)
    looks = style.series_styles(list(POLICIES))
    for ax, workload in zip(axes[0], workloads, strict=True):
        part = data[data.workload == workload]
        for policy in POLICIES:
            line = part[part.policy == policy]
            ax.plot(line["capacity_tokens"], 100 * line["hit"], lw=1.1, label=policy.upper()
                    if policy != "belady" else "Belady", **looks[policy])
        top, paper_top = part["max_hit"].iloc[0], part["paper_max"].iloc[0]
        ax.axhline(100 * top, color="0.4", lw=0.7, ls=":")
        ax.plot([1.0], [100 * paper_top], marker="<", color="black", ms=5, clip_on=False,
                transform=ax.get_yaxis_transform())
        ax.axvline(LOCAL_CACHE_TOKENS, color="0.5", lw=0.8, ls="--")
        ours = share_at_local(data, workload)
        paper = part["paper_share_at_local"].iloc[0]
        ax.text(LOCAL_CACHE_TOKENS * 1.3, 3, f"3M tokens, LRU:\n{100 * ours:.0f}% of max "
                f"(paper {100 * paper:.0f}%)", fontsize=6)
        ax.set_xscale("log")
        ax.set_xlim(1e4, 1.1e9)
        ax.set_ylim(0, 100 * max(top, paper_top) * 1.15)
        ax.set_xlabel("Cache capacity (tokens)")
        ax.set_title(f"{LABELS[workload]} (max {100 * top:.0f}%; paper ◀ {100 * paper_top:.0f}%)",
                     fontsize=7)
    axes[0][0].set_ylabel("Prefix cache hit rate (%)")
    axes[0][0].legend(fontsize=6, loc="upper left")
    style.provenance(fig, f"{PAPER} Fig. 9 replayed: reused prefix tokens / input tokens "
                     "against cache capacity, per eviction policy\n(the paper's policy is not "
                     "stated; its all-workloads curve cannot be rebuilt: block ids are "
                     "remapped per file)", fontsize=7)
    return fig


def _spec(name: str, title: str, data: Any, plot: Any, figure: str) -> Any:
    from mltraces.figures import FigureSpec

    return FigureSpec(name, "mooncake", title, (), data, plot, any_of=tuple(TABLES.values()),
                      figure=figure, paper=PAPER)


FIGURES = (
    _spec("mooncake_table2", f"{PAPER} Table 2: requests, average input and output lengths "
          "and cache ratio per workload, ours beside the paper's", table2_data, plot_table2,
          "Table 2"),
    _spec("mooncake_fig9", f"{PAPER} Fig. 9: prefix cache hit rate against capacity, per "
          "workload and eviction policy (LRU, LFU, FIFO, Belady)", fig9_data, plot_fig9,
          "Fig. 9"),
)
