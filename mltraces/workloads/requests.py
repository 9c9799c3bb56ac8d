"""Prefix-cache replays from the catalog: a request trace's prefix blocks as the engine's arrays.

The prefix KV-cache engine (:mod:`mltraces.prefixcache`) takes flat arrays and names no
table. This module reads them from the catalog for a trace of ``mltraces.requests``
(``mooncake/conversation``): the trace's rows as its source's ``requests.json`` maps them
(:func:`mltraces.requestmap.table_select_sql`, the very SELECT the union view runs for
that trace, without uniting the other traces), its ``prefix_blocks`` list column and
``input_tokens`` handed over through Arrow as values and offsets (no Python loop over
requests), in arrival order (the table's order; a trace whose file is not sorted by
arrival is put in order by a stable sort, ties keep the file's order).

A trace without prefix blocks (Azure, BurstGPT, GenTD26 publish none) or with a request
whose blocks are missing is refused in one line naming the trace (and the request);
:func:`block_traces` lists the traces that have blocks.

Capacities are in blocks of the trace's own size (Mooncake 512 tokens, Qwen/Bailian 16);
:func:`blocks_for_tokens` turns a capacity in tokens into whole blocks (a cache of T
tokens holds ``T // block_size`` blocks).

>>> con = mltraces.connect(tables=tables_for("mooncake/conversation"))  # doctest: +SKIP
>>> replay(con, "mooncake/conversation", plan([1000, 8000], "lru,belady"))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import duckdb

    from mltraces.prefixcache import Plan, PrefixCacheResult, RequestBlocks
    from mltraces.requestmap import RequestTable

__all__ = ["TraceBlocks", "block_traces", "blocks_for_tokens", "plan", "read_blocks", "replay",
           "replay_blocks",
           "request_trace", "tables_for"]


def _with_blocks() -> dict[str, RequestTable]:
    """Every mapped request table that gives prefix blocks, by trace name."""
    from mltraces.requestmap import request_tables

    return {entry.trace: entry for entry in request_tables().values()
            if "prefix_blocks" in entry.columns}


def block_traces() -> list[str]:
    """The traces of ``mltraces.requests`` whose requests carry prefix block ids."""
    return sorted(_with_blocks())


def request_trace(trace: str) -> RequestTable:
    """The mapped table behind ``trace`` (``SOURCE/NAME``); one line listing the traces with
    prefix blocks when it has none or is unknown."""
    from mltraces.names import canonical
    from mltraces.requestmap import request_tables

    name = canonical(trace)
    found = _with_blocks().get(name)
    if found is not None:
        return found
    known = ", ".join(block_traces())
    if any(entry.trace == name for entry in request_tables().values()):
        raise MltracesError(f"trace {trace!r} gives no prefix blocks, so no prefix cache can "
                            f"be replayed on it; traces with prefix blocks: {known}")
    raise MltracesError(f"unknown request trace {trace!r}; traces with prefix blocks: {known}")


def tables_for(trace: str) -> list[str]:
    """The catalog table a replay of ``trace`` reads (what to pass to ``connect()``)."""
    return [request_trace(trace).table]


def blocks_for_tokens(tokens: int, block_size: int) -> int:
    """Whole blocks of ``block_size`` tokens that fit in a cache of ``tokens`` tokens."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise MltracesError(f"a capacity in tokens must be a whole number >= 0, got {tokens!r}")
    return tokens // block_size


class TraceBlocks:
    """A trace's checked arrays (:class:`~mltraces.prefixcache.RequestBlocks`) and where they
    came from: the trace, its table and whether its requests had to be put in order."""

    def __init__(self, trace: str, table: str, blocks: RequestBlocks, sorted_by_arrival: bool
                 ) -> None:
        self.trace = trace
        self.table = table
        self.blocks = blocks
        self.sorted_by_arrival = sorted_by_arrival

    @property
    def block_size(self) -> int:
        return self.blocks.block_size


def _query(entry: RequestTable) -> str:
    from mltraces.requestmap import table_select_sql

    return (f"SELECT request_id, arrival_s, input_tokens, prefix_blocks "
            f"FROM ({table_select_sql(entry)})")


def _in_arrival_order(table: Any) -> tuple[Any, bool]:
    """The Arrow table by arrival (stable), and whether it had to be reordered."""
    import numpy as np

    from mltraces.prefixcache.trace import arrow_numbers

    if table["arrival_s"].null_count:
        raise MltracesError(f"request {_first_null_id(table, 'arrival_s')} has no arrival time")
    values = arrow_numbers(table["arrival_s"], "arrival_s")  # a view: pandas stays unloaded
    if len(values) < 2 or bool(np.all(values[1:] >= values[:-1])):
        return table, False
    return table.take(np.argsort(values, kind="stable")), True


def _first_null_id(table: Any, column: str) -> str:
    import pyarrow.compute as pc

    index = pc.index(pc.is_null(table[column]), True).as_py()
    return str(table["request_id"][index].as_py())


def read_blocks(con: duckdb.DuckDBPyConnection, trace: str, *,
                max_request_blocks: int | None = None) -> TraceBlocks:
    """``trace``'s prefix blocks and input tokens, checked, in arrival order."""
    from mltraces.prefixcache import RequestBlocks
    from mltraces.prefixcache.trace import MAX_REQUEST_BLOCKS

    entry = request_trace(trace)
    table = con.sql(_query(entry)).to_arrow_table()
    if table.num_rows == 0:
        raise MltracesError(f"trace {entry.trace} has no requests in {entry.table}")
    for column, what in (("prefix_blocks", "no prefix blocks"),
                         ("input_tokens", "no input tokens")):
        if table[column].null_count:
            raise MltracesError(f"{entry.trace}: request {_first_null_id(table, column)} has "
                                f"{what}; a prefix-cache replay needs both on every request")
    table, reordered = _in_arrival_order(table)
    try:
        blocks = RequestBlocks.from_arrow(table["prefix_blocks"], table["input_tokens"],
                                          entry.block_size,
                                          max_request_blocks=max_request_blocks or
                                          MAX_REQUEST_BLOCKS)
    except ValueError as error:
        raise MltracesError(f"{entry.trace}: {error}") from None
    return TraceBlocks(entry.trace, entry.table, blocks, reordered)


def plan(capacities: Any, policies: Any = "all", **options: Any) -> Plan:
    """A checked :class:`~mltraces.prefixcache.Plan` (for callers above this layer, which
    name no engine): capacities in blocks, policies, ``instances=``, ``routing=``."""
    from mltraces.prefixcache import Plan

    return Plan.checked(capacities, policies, **options)


def replay_blocks(trace: TraceBlocks, plan: Plan) -> PrefixCacheResult:
    """Replay blocks read before (:func:`read_blocks`) under ``plan``."""
    from mltraces.prefixcache import replay_trace

    return replay_trace(trace.blocks, plan)


def replay(con: duckdb.DuckDBPyConnection, trace: str, plan: Plan) -> PrefixCacheResult:
    """Read ``trace``'s blocks on ``con`` and replay them under ``plan``."""
    return replay_blocks(read_blocks(con, trace), plan)
