"""Synthetic Qwen / Bailian traces in the upstream format (:mod:`mltraces.synthetic`).

Neither Git LFS file is available where the tests run. These write look-alikes: one
JSON object per line with the README's keys in its order, ``{"chat_id",
"parent_chat_id", "timestamp", "input_length", "output_length", "type", "turn",
"hash_ids"}``, sorted by arrival (seconds from the start, three decimals) over two
hours. Conversations of a few turns: a later turn's parent is the turn before, its
prompt repeats the whole previous prompt and answer, so its first blocks repeat the
previous turn's ids (``ceil(input_length / 16)`` ids, the last block partial), and
block 0 is the common system prompt. Chat ids are shuffled, as the README says they
are randomised. Deterministic for a given ``rows`` and ``seed``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

BLOCK = 16
ROWS = 800
TYPES = ("text", "search", "image", "file")


def _conversation(rng: np.random.Generator, turns: int, next_block: int, start: float
                  ) -> tuple[list[dict], int]:
    """One conversation's requests (without chat ids yet) and the next free block id."""
    blocks = [0]
    tokens = 0
    out = []
    for turn in range(1, turns + 1):
        tokens += int(rng.integers(8, 900))
        need = math.ceil(tokens / BLOCK)
        blocks = blocks[:need] if len(blocks) >= need else blocks + list(
            range(next_block, next_block + need - len(blocks)))
        next_block = max(next_block, max(blocks) + 1)
        answer = int(rng.integers(1, 1_200))
        out.append({"timestamp": round(start + 30.0 * (turn - 1) + float(rng.random()), 3),
                    "input_length": tokens, "output_length": answer,
                    "type": str(rng.choice(TYPES, p=[0.82, 0.1, 0.05, 0.03])), "turn": turn,
                    "hash_ids": list(blocks)})
        tokens += answer  # the next prompt repeats this answer
    return out, next_block


def write_trace(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """A Qwen / Bailian JSON-lines trace of ``rows`` requests."""
    rng = np.random.default_rng(seed)
    n = rows or ROWS
    chat_ids = iter(rng.permutation(10 * n) + 1)  # randomised, unique
    requests: list[dict] = []
    next_block = 1
    while len(requests) < n:
        turns = min(int(rng.integers(1, 6)), n - len(requests))
        made, next_block = _conversation(rng, turns, next_block, float(rng.uniform(0, 7_000)))
        parent = -1
        for request in made:  # in turn order: each turn's parent is the turn before
            request["chat_id"], request["parent_chat_id"] = int(next(chat_ids)), parent
            parent = request["chat_id"]
        requests.extend(made)
    keys = ("chat_id", "parent_chat_id", "timestamp", "input_length", "output_length", "type",
            "turn", "hash_ids")
    lines = [json.dumps({k: r[k] for k in keys})
             for r in sorted(requests, key=lambda r: r["timestamp"])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


WRITERS = {
    "qwen_bailian/qwen_coder_blksz_16.jsonl": write_trace,
    "qwen_bailian/qwen_thinking_blksz_16.jsonl": write_trace,
}


def expected_tables(rows: int | None = None) -> dict[str, int]:
    """Rows of each table built from the synthetic files written with ``rows``."""
    return {"qwen_bailian.coder": rows or ROWS, "qwen_bailian.thinking": rows or ROWS}
