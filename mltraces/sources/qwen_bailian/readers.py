"""The Qwen / Bailian traces' own reader: JSON lines with 16-token block hashes.

Each line is ``{"chat_id", "parent_chat_id", "timestamp", "input_length",
"output_length", "type", "turn", "hash_ids"}``; :mod:`mltraces.catalog.jsonlines`
converts them, each line bounded by what its own token counts justify. The reader adds
``root_chat_id``: the first request of the conversation, found by following
``parent_chat_id`` through the requests read before (a parent not in the file ends the
walk at its id), so a session is one column to group by.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mltraces.catalog.jsonlines import (
    COUNT,
    IDS,
    INTEGER,
    NUMBER,
    TEXT,
    JsonKey,
    JsonLinesFormat,
    convert_json_lines,
)
from mltraces.catalog.protocol import Conversion, FileReader, ReadRequest

#: tokens per block id (the file names say blksz_16)
BLOCK_SIZE = 16
#: ``parent_chat_id`` of a conversation's first request
NO_PARENT = -1


def _roots() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A fresh walker: each request's conversation root, from the requests seen before."""
    roots: dict[int, int] = {}

    def root(row: dict[str, Any]) -> dict[str, Any]:
        chat, parent = row["chat_id"], row["parent_chat_id"]
        found = chat if parent == NO_PARENT else roots.get(parent, parent)
        roots[chat] = found
        return {"root_chat_id": found}

    return root


FORMAT = JsonLinesFormat(
    keys=(JsonKey("chat_id", "chat_id", INTEGER),
          JsonKey("parent_chat_id", "parent_chat_id", INTEGER),
          JsonKey("timestamp", "timestamp", NUMBER),
          JsonKey("input_length", "input_length", COUNT),
          JsonKey("output_length", "output_length", COUNT),
          JsonKey("type", "type", TEXT),
          JsonKey("turn", "turn", INTEGER),
          JsonKey("hash_ids", "hash_ids", IDS)),
    block_size=BLOCK_SIZE, derive=_roots)


def convert(request: ReadRequest) -> Conversion:
    """The trace's lines as typed rows (``_row``: the line), with each request's root."""
    return convert_json_lines(request, FORMAT)


READERS = {"qwen_jsonl": FileReader("qwen_jsonl", convert, row_label="line")}
