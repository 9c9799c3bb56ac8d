"""Mooncake's own reader: its JSON-lines traces with 512-token prefix block hashes.

Each line is ``{"timestamp": ms, "input_length": tokens, "output_length": tokens,
"hash_ids": [block ids]}``; :mod:`mltraces.catalog.jsonlines` converts them, each line
bounded by what its own token counts justify (a line of 10 M ids behind an
``input_length`` of 7,000 is refused after 64 KiB, naming its line).
"""

from __future__ import annotations

from mltraces.catalog.jsonlines import (
    COUNT,
    IDS,
    INTEGER,
    JsonKey,
    JsonLinesFormat,
    convert_json_lines,
)
from mltraces.catalog.protocol import Conversion, FileReader, ReadRequest

#: tokens per prefix block id (the FAST'25 README)
BLOCK_SIZE = 512
FORMAT = JsonLinesFormat(
    keys=(JsonKey("timestamp", "timestamp", INTEGER),
          JsonKey("input_length", "input_length", COUNT),
          JsonKey("output_length", "output_length", COUNT),
          JsonKey("hash_ids", "hash_ids", IDS)),
    block_size=BLOCK_SIZE)


def convert(request: ReadRequest) -> Conversion:
    """The trace's lines as typed rows (``_row``: the line)."""
    return convert_json_lines(request, FORMAT)


READERS = {"mooncake_jsonl": FileReader("mooncake_jsonl", convert, row_label="line")}
