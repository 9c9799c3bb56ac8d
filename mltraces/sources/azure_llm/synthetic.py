"""Synthetic Azure LLM traces in the upstream formats (:mod:`mltraces.synthetic`).

The 2024 week-long files (hundreds of megabytes in a blob container) and the 2025
multimodal file are not available where the tests run. These write look-alikes:

- ``AzureLLMInferenceTrace_{code,conv}_1week.csv``: ``TIMESTAMP,ContextTokens,
  GeneratedTokens``, times in UTC with ``+00:00`` and mixed precision (a whole second
  has no fraction, as Python prints it), in arrival order over the published week
  (code from 2024-05-10, conversation from 2024-05-12), ending with a newline;
- ``AzureLMMInferenceTrace_multimodal.csv.gz``: ``TIMESTAMP,NumImages,ContextTokens,
  GeneratedTokens``, ISO 8601 times with milliseconds and ``Z`` from 2024-10-15 12:00,
  gzip-compressed.

Token counts are log-normal around the published medians; deterministic for a given
``rows`` and ``seed``. :func:`expected_tables` says what each table then holds.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

WEEK_S = 7 * 86_400
ROWS = 1_500
CODE_START = datetime(2024, 5, 10, tzinfo=UTC)
CONV_START = datetime(2024, 5, 12, tzinfo=UTC)
MULTIMODAL_START = datetime(2024, 10, 15, 12, tzinfo=UTC)


def _tokens(rng: np.random.Generator, n: int, median: float, sigma: float) -> np.ndarray:
    return np.maximum(1, np.round(rng.lognormal(np.log(median), sigma, n))).astype(int)


def _offsets(rng: np.random.Generator, n: int) -> np.ndarray:
    """Sorted arrival offsets in microseconds over one week; a few on whole seconds."""
    micros = np.sort(rng.integers(0, WEEK_S * 1_000_000, size=n))
    whole = rng.random(n) < 0.05
    micros[whole] -= micros[whole] % 1_000_000
    return np.sort(micros)


def _week_file(path: Path, rows: int | None, seed: int, start: datetime,
               medians: tuple[float, float]) -> Path:
    rng = np.random.default_rng(seed)
    n = rows or ROWS
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    contexts, generated = _tokens(rng, n, medians[0], 1.0), _tokens(rng, n, medians[1], 1.3)
    for micros, context, out in zip(_offsets(rng, n), contexts, generated, strict=True):
        moment = start + timedelta(microseconds=int(micros))
        lines.append(f"{moment.isoformat(sep=' ')},{context},{out}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_code_week(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """``AzureLLMInferenceTrace_code_1week.csv``: the coding service, 2024-05-10 on."""
    return _week_file(path, rows, seed, CODE_START, (1_900.0, 20.0))


def write_conv_week(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """``AzureLLMInferenceTrace_conv_1week.csv``: the conversation service, 2024-05-12 on."""
    return _week_file(path, rows, seed, CONV_START, (1_000.0, 110.0))


def write_multimodal(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """``AzureLMMInferenceTrace_multimodal.csv.gz``: a week of multimodal requests."""
    rng = np.random.default_rng(seed)
    n = rows or ROWS
    images = np.where(rng.random(n) < 0.4, 0, rng.geometric(0.6, n))
    contexts = _tokens(rng, n, 900.0, 0.9) + 300 * images
    generated = _tokens(rng, n, 80.0, 1.0)
    lines = ["TIMESTAMP,NumImages,ContextTokens,GeneratedTokens"]
    for micros, count, context, out in zip(_offsets(rng, n), images, contexts, generated,
                                           strict=True):
        moment = MULTIMODAL_START + timedelta(microseconds=int(micros))
        stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        lines.append(f"{stamp},{count},{context},{out}")
    with gzip.GzipFile(path, "wb", mtime=0) as handle:
        handle.write(("\n".join(lines) + "\n").encode())
    return path


WRITERS = {
    "azure_llm/AzureLLMInferenceTrace_code_1week.csv": write_code_week,
    "azure_llm/AzureLLMInferenceTrace_conv_1week.csv": write_conv_week,
    "azure_llm/AzureLMMInferenceTrace_multimodal.csv.gz": write_multimodal,
}


def expected_tables(rows: int | None = None) -> dict[str, int]:
    """Rows of each table built from the synthetic files written with ``rows``."""
    n = rows or ROWS
    return {"azure_llm.code_2024": n, "azure_llm.conv_2024": n, "azure_llm.multimodal_2025": n}
