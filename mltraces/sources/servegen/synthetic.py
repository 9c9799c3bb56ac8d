"""Synthetic ServeGen client files in the upstream format (:mod:`mltraces.synthetic`).

The language clients (m-large, m-mid, m-small: 628 files, 231 MB and more) are not
available where the tests run. These write look-alikes of each client's pair of files:

- ``chunk-N-trace.csv``: no header, CRLF line ends, one row per 600-s window of two
  weeks (2,016 rows, as every published language client has):
  ``start,rate,cv,name,shape,scale``; an idle window is ``start,0,0,,0,0``, a busy one
  names Gamma or Weibull with float parameters, its rate a whole number of requests
  per 600 s;
- ``chunk-N-dataset.json``: the 56 six-hour windows ``"0"`` ... ``"1188000"``, each
  with ``input_tokens`` and ``output_tokens`` tables as Python dict literals in JSON
  strings (``"{45: 0.0125, 46: 0.05, ...}"``; ``"{}"`` for a window without requests),
  indented by two spaces, no final newline.

``rows`` is the number of busy windows per client (default 40); deterministic for a
given ``rows`` and ``seed``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

WINDOW_S, WINDOWS = 600, 2_016
SIZE_WINDOWS = tuple(range(0, 14 * 86_400, 21_600))
BUSY = 40
#: values per table (each dataset window's input and output tables)
TABLE_VALUES = 20
#: the language models and their client counts (files chunk-0 ... chunk-(n-1))
LANGUAGE = {"m-large": 162, "m-mid": 109, "m-small": 43}


def write_trace(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """A client's ``chunk-N-trace.csv``."""
    rng = np.random.default_rng(seed)
    busy = set(rng.choice(WINDOWS, size=min(rows or BUSY, WINDOWS), replace=False).tolist())
    lines = []
    for window in range(WINDOWS):
        start = window * WINDOW_S
        if window not in busy:
            lines.append(f"{start},0,0,,0,0")
            continue
        rate = int(rng.integers(1, 400)) / WINDOW_S
        shape = float(rng.uniform(0.3, 2.5))
        name = "Gamma" if rng.random() < 0.8 else "Weibull"
        cv = 1 / np.sqrt(shape) if name == "Gamma" else float(rng.uniform(0.5, 3.0))
        scale = 1 / (rate * shape)
        lines.append(f"{start},{rate!r},{float(cv)!r},{name},{shape!r},{scale!r}")
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return path


def _table(rng: np.random.Generator, low: int, high: int) -> str:
    """A Python dict literal of token counts and probabilities, as ServeGen writes it."""
    values = np.sort(rng.choice(np.arange(low, high), size=TABLE_VALUES, replace=False))
    weights = rng.random(TABLE_VALUES)
    probabilities = weights / weights.sum()
    return "{" + ", ".join(f"{int(v)}: {float(p)!r}" for v, p in
                           zip(values, probabilities, strict=True)) + "}"


def write_dataset(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """A client's ``chunk-N-dataset.json`` (``rows`` unused): every sixth window is empty."""
    rng = np.random.default_rng(seed)
    windows = {}
    for index, start in enumerate(SIZE_WINDOWS):
        empty = index % 6 == 5
        windows[str(start)] = {
            "input_tokens": "{}" if empty else _table(rng, 20, 6_000),
            "output_tokens": "{}" if empty else _table(rng, 1, 2_000)}
    path.write_text(json.dumps(windows, indent=2), encoding="utf-8")
    return path


def _writers() -> dict[str, Callable[..., Path]]:
    found: dict[str, Callable[..., Path]] = {}
    for model, clients in LANGUAGE.items():
        for n in range(clients):
            found[f"servegen/language/{model}/chunk-{n}-trace.csv"] = write_trace
            found[f"servegen/language/{model}/chunk-{n}-dataset.json"] = write_dataset
    return found


WRITERS = _writers()


def expected_tables(rows: int | None = None) -> dict[str, int]:
    """Rows of each language table built from the synthetic files (any ``rows``)."""
    out = {}
    for model, clients in LANGUAGE.items():
        name = model.replace("-", "_")
        out[f"servegen.{name}_windows"] = clients * WINDOWS
        described = sum(index % 6 != 5 for index in range(len(SIZE_WINDOWS)))
        out[f"servegen.{name}_lengths"] = clients * described * 2 * TABLE_VALUES
    return out
