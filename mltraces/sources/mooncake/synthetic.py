"""Synthetic Mooncake traces in the upstream format (:mod:`mltraces.synthetic`).

The tool & agent trace and the arXiv-report trace are not available where the tests
run. These write look-alikes: one JSON object per line, ``{"timestamp": ms,
"input_length": n, "output_length": n, "hash_ids": [...]}`` (Python's ``json.dumps``
spacing, as the published files), sorted by arrival over one hour, a final newline.
Requests come in conversations: each turn's prefix repeats the previous turn's blocks
and adds its own (``ceil(input_length / 512)`` ids in all, the last block partial), and
every conversation opens with block 0, the shared system prompt, as the real traces do.
Deterministic for a given ``rows`` and ``seed``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

BLOCK = 512
ROWS = 800
HOUR_MS = 3_600_000


def _requests(rows: int, seed: int) -> list[dict]:
    """Conversations of a few turns whose prefixes grow turn by turn."""
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    next_id = 1
    while len(out) < rows:
        start = int(rng.integers(0, HOUR_MS - 600_000))
        blocks = [0]
        for turn in range(int(rng.integers(1, 6))):
            if len(out) == rows:
                break
            grown = int(rng.integers(1, 12))
            blocks = blocks + list(range(next_id, next_id + grown))
            next_id += grown
            tokens = (len(blocks) - 1) * BLOCK + int(rng.integers(1, BLOCK + 1))
            out.append({"timestamp": start + turn * int(rng.integers(5_000, 90_000)),
                        "input_length": tokens, "output_length": int(rng.integers(1, 900)),
                        "hash_ids": blocks[:math.ceil(tokens / BLOCK)]})
    return sorted(out, key=lambda r: r["timestamp"])


def write_trace(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """A Mooncake JSON-lines trace (tool & agent, or the arXiv report's)."""
    lines = [json.dumps(r) for r in _requests(rows or ROWS, seed)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


WRITERS = {
    "mooncake/toolagent_trace.jsonl": write_trace,
    "mooncake/mooncake_trace.jsonl": write_trace,
}


def expected_tables(rows: int | None = None) -> dict[str, int]:
    """Rows of each table built from the synthetic files written with ``rows``."""
    return {"mooncake.toolagent": rows or ROWS, "mooncake.arxiv": rows or ROWS}
