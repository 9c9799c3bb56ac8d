"""The formats LLM-serving tools read request traces in: what each line holds, as SQL.

A request trace is written one request per line, in the trace's order (its arrival
order), by DuckDB: each format gives the SQL of its line over the columns
``arrival_s`` (seconds on the trace's scale), ``input_tokens``, ``output_tokens`` and
``prefix_blocks`` of ``mltraces.requests``, with the arrival already turned into the
time the format writes (:class:`Clock`: from an origin, divided by a speed factor).
Numbers are printed by DuckDB's shortest round-trip form, which is Python's ``repr``
(``4.314579``, ``0.0``), so the files read back to the same values.

- ``vidur``: Vidur's (MLSys'24) ``TraceReplayRequestGenerator`` CSV, ``arrived_at``
  (seconds from the first request written, to the microsecond),
  ``num_prefill_tokens``, ``num_decode_tokens``: the layout of the Azure 2023 traces
  Vidur ships converted (``data/processed_traces/splitwise_{code,conv}.csv``).
- ``splitwise-sim``: splitwise-sim's trace CSV (its ``generate_trace.py`` writes it and
  its simulator reads it with pandas): ``request_id`` (0, 1, ... in the file's order),
  ``request_type`` 2 (LLM inference, as its generator writes), ``application_id`` 0,
  ``arrival_timestamp`` (seconds from the first request), ``batch_size`` 1,
  ``prompt_size``, ``token_size``.
- ``mooncake``: Mooncake's JSON lines (``{"timestamp": ms, "input_length": n,
  "output_length": m, "hash_ids": [...]}``, separators as ``json.dumps`` writes them),
  which vLLM's, sglang's, aibrix's and guidellm's trace replays read; ``timestamp`` in
  whole milliseconds from the window's start (the trace's own second 0 by default), so a
  Mooncake trace written back is its upstream file byte for byte. Needs prefix blocks:
  their size is the trace's (Mooncake 512 tokens, Qwen/Bailian 16; a reader must be told).
- ``schedule``: a plain open-loop schedule, CSV ``send_at_s`` (seconds from the window's
  start), ``request_id``, ``input_tokens``, ``output_tokens`` (empty where the trace
  counts none): send each request at its time, whatever the responses do.

No format tolerates a comment line (a JSON-lines reader parses every line, a CSV reader
reads one as a row), so the provenance is a sidecar, as for the job formats.
"""

from __future__ import annotations

from dataclasses import dataclass

from mltraces.errors import MltracesError

__all__ = ["REQUEST_FORMATS", "Clock", "RequestFormat", "get_request_format"]

SIDECAR_NOTE = ("the file's readers parse every line (a comment line would be a request or "
                "a syntax error), so its provenance is this sidecar")


@dataclass(frozen=True)
class Clock:
    """How arrivals become a format's times: seconds after ``origin`` divided by ``speed``."""

    origin: float
    speed: float

    def seconds(self) -> str:
        """SQL: the arrival as the format's seconds (a DOUBLE)."""
        return f"((arrival_s - {self.origin!r}) / {self.speed!r})"


@dataclass(frozen=True)
class RequestFormat:
    """One tool's request-trace format."""

    name: str  # the --to value
    tool: str  # "Vidur (MLSys'24)"
    parser: str  # the code the format was checked against
    summary: str  # one line: fields
    header: str | None  # the first line (None: no header)
    needs: tuple[str, ...]  # columns a request must have to be written (others are dropped)
    origin: str  # "first": seconds from the first request written; "window": from its start
    line: str  # SQL of one line, {seconds} standing for the format's time (a DOUBLE)
    numbered: bool = False  # each line starts with its index in the file, then a comma
    suffix: str = ".csv"

    def line_sql(self, clock: Clock) -> str:
        return self.line.format(seconds=clock.seconds())


def _text(expression: str) -> str:
    return f"CAST({expression} AS VARCHAR)"


def _count(column: str) -> str:
    """An optional count: empty text where the trace has none."""
    return f"coalesce(CAST({column} AS VARCHAR), '')"


VIDUR = RequestFormat(
    "vidur", "Vidur (MLSys'24)",
    "microsoft/vidur@7d47513 vidur/request_generator/trace_replay_request_generator.py: "
    "TraceReplayRequestGenerator (pandas.read_csv)",
    "arrived_at (s from the first request), num_prefill_tokens, num_decode_tokens",
    "arrived_at,num_prefill_tokens,num_decode_tokens", ("input_tokens", "output_tokens"),
    "first",
    f"{_text('round({seconds}, 6)')} || ',' || {_text('input_tokens')} || ',' || "
    f"{_text('output_tokens')}")
SPLITWISE = RequestFormat(
    "splitwise-sim", "splitwise-sim (Splitwise, ISCA'24)",
    "Mutinifni/splitwise-sim@3780880 generate_trace.py: generate_trace (the columns it writes)",
    "request_id, request_type (2: LLM inference), application_id (0), arrival_timestamp "
    "(s from the first request), batch_size (1), prompt_size, token_size",
    "request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,"
    "token_size", ("input_tokens", "output_tokens"), "first",
    f"'2,0,' || {_text('round({seconds}, 6)')} || ',1,' || {_text('input_tokens')} || ',' || "
    f"{_text('output_tokens')}", numbered=True)
MOONCAKE = RequestFormat(
    "mooncake", "Mooncake traces (FAST'25): vLLM, sglang, aibrix and guidellm trace replays",
    "kvcache-ai/Mooncake@3b5a594 FAST25-release/README.md: the trace format (JSON lines)",
    "timestamp (ms from the window's start), input_length, output_length, hash_ids "
    "(the trace's prefix block ids)", None, ("input_tokens", "output_tokens", "prefix_blocks"),
    "window",
    "'{{\"timestamp\": ' || CAST(round({seconds} * 1000) AS BIGINT) || ', \"input_length\": ' "
    "|| CAST(input_tokens AS VARCHAR) || ', \"output_length\": ' || "
    "CAST(output_tokens AS VARCHAR) || ', \"hash_ids\": [' || "
    "array_to_string(prefix_blocks, ', ') || ']}}'", suffix=".jsonl")
SCHEDULE = RequestFormat(
    "schedule", "an open-loop schedule (any load generator)",
    "mltraces: send_at_s,request_id,input_tokens,output_tokens",
    "send_at_s (s from the window's start), request_id, input_tokens, output_tokens",
    "send_at_s,request_id,input_tokens,output_tokens", (), "window",
    f"{_text('round({seconds}, 6)')} || ',' || "
    "CASE WHEN regexp_matches(request_id, '[,\"\\n\\r]') "
    "THEN '\"' || replace(request_id, '\"', '\"\"') || '\"' ELSE request_id END || ',' || "
    f"{_count('input_tokens')} || ',' || {_count('output_tokens')}")

REQUEST_FORMATS: dict[str, RequestFormat] = {f.name: f for f in (VIDUR, SPLITWISE, MOONCAKE,
                                                                  SCHEDULE)}


def get_request_format(name: str) -> RequestFormat:
    """The request format called ``name``; the error lists them."""
    if name not in REQUEST_FORMATS:
        raise MltracesError(f"unknown request format {name!r}; formats: "
                            f"{', '.join(REQUEST_FORMATS)}")
    return REQUEST_FORMATS[name]
