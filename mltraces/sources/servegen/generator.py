"""A request trace sampled from ServeGen's workload description, seeded and bounded.

ServeGen publishes, per client, what its traffic looked like (``servegen.<model>_windows``:
rate, CV and the fitted arrival distribution per 600-s window; ``servegen.<model>_lengths``:
the probability tables of request sizes per 6-hour window). :func:`sample` turns a
client's windows into requests, as ServeGen's generator does:

- a busy window of rate ``r`` holds ``round(r x 600)`` requests (a whole number on every
  published row); their gaps are drawn from the named distribution with its two
  parameters (Gamma(shape, scale), Weibull(shape) x scale) and rescaled so that the
  window holds exactly them: ``n + 1`` gaps, the requests at the first ``n`` partial
  sums, all inside the window;
- sizes come from the tables of the latest size window that starts at or before the
  rate window and describes every quantity (a window whose tables are empty had no
  request and is skipped, as ServeGen skips it): input and output tokens; DeepSeek-R1
  also the reasoning share of the output; the Qwen-VL model text tokens plus the tokens
  of each image, audio clip and video its counts draw (``input_tokens`` is their sum).

:func:`generate` reads the tables of one model from a catalog connection and samples
the clients asked for. The same ``seed`` gives the same trace; each client draws from
its own stream (``seed``, client), so a client's requests do not depend on which other
clients are sampled. The number of requests is counted before anything is drawn and
held to ``max_requests``.

>>> con = mltraces.connect(["servegen.deepseek_r1_windows",
...                         "servegen.deepseek_r1_lengths"])          # doctest: +SKIP
>>> generate(con, "deepseek_r1", clients=[0, 5], seed=1).num_rows  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["DISTRIBUTIONS", "MAX_REQUESTS", "GenerationError", "Sizes", "Windows", "generate",
           "sample"]

WINDOW_S = 600
#: arrival distributions ServeGen fits, by name: (shape, scale) -> gaps
DISTRIBUTIONS = ("Gamma", "Weibull")
#: most requests one call may draw unless asked for more
MAX_REQUESTS = 10_000_000
#: multimodal parts: (count table, tokens-per-item table)
_PARTS = (("image_count", "image_tokens"), ("audio_count", "audio_tokens"),
          ("video_count", "video_tokens"))
MODELS = ("deepseek_r1", "mm_image", "m_large", "m_mid", "m_small")


class GenerationError(ValueError):
    """The windows or tables cannot give a trace (one line saying which and why)."""


class Windows(NamedTuple):
    """One client's rate windows (arrays of equal length, one element per window)."""

    start: np.ndarray  # s from the start of the day
    rate: np.ndarray  # requests/s
    distribution: list[str | None]
    shape: np.ndarray
    scale: np.ndarray


#: one client's size tables: (size window start, quantity) -> (values, probabilities)
Sizes = Mapping[tuple[int, str], tuple[np.ndarray, np.ndarray]]


def _gaps(rng: np.random.Generator, name: str, shape: float, scale: float, n: int
          ) -> np.ndarray:
    if name == "Gamma":
        return rng.gamma(shape, scale, n)
    return rng.weibull(shape, n) * scale


def _arrivals(rng: np.random.Generator, windows: Windows, index: int, n: int) -> np.ndarray:
    """``n`` arrivals inside one window, their gaps from its named distribution."""
    name = windows.distribution[index]
    shape, scale = float(windows.shape[index]), float(windows.scale[index])
    if name not in DISTRIBUTIONS or not (shape > 0 and scale > 0 and math.isfinite(shape)
                                         and math.isfinite(scale)):
        raise GenerationError(f"window at {int(windows.start[index])} s: distribution {name!r} "
                              f"({shape}, {scale}) is not one of {', '.join(DISTRIBUTIONS)} with "
                              "positive parameters")
    gaps = _gaps(rng, name, shape, scale, n + 1)
    total = gaps.sum()
    if not (total > 0 and math.isfinite(total)):  # every gap 0 (a degenerate draw): even spacing
        gaps, total = np.ones(n + 1), float(n + 1)
    end = windows.start[index] + WINDOW_S
    arrivals = windows.start[index] + WINDOW_S * np.cumsum(gaps[:n]) / total
    return np.minimum(arrivals, np.nextafter(end, -np.inf))  # a last gap that underflowed


def _draw(rng: np.random.Generator, table: tuple[np.ndarray, np.ndarray], n: int) -> np.ndarray:
    """``n`` values from a probability table (the last value takes any rounding remainder)."""
    values, probabilities = table
    cumulative = np.cumsum(probabilities)
    picks = np.searchsorted(cumulative / cumulative[-1], rng.random(n), side="right")
    return values[np.minimum(picks, values.size - 1)]


def _size_window(sizes: Sizes, quantities: tuple[str, ...], start: int) -> int | None:
    """The latest size window at or before ``start`` whose tables describe every quantity
    (an empty table gives no rows: its window had no request)."""
    usable = [s for s in sorted({s for s, _ in sizes})
              if s <= start and all(sizes.get((s, q), ((),))[0].__len__() for q in quantities)]
    return usable[-1] if usable else None


def _sizes(rng: np.random.Generator, sizes: Sizes, window: int, n: int) -> dict[str, np.ndarray]:
    """Token counts (and counts of images, reasoning shares) of ``n`` requests."""
    table = {q: t for (s, q), t in sizes.items() if s == window}
    out: dict[str, Any] = {"output_tokens": _draw(rng, table["output_tokens"], n)}
    if "reason_ratio" in table:
        out["reason_ratio"] = _draw(rng, table["reason_ratio"], n)
    if "text_tokens" not in table:
        out["input_tokens"] = _draw(rng, table["input_tokens"], n)
        return out
    tokens = _draw(rng, table["text_tokens"], n)
    for count_name, tokens_name in _PARTS:
        counts = _draw(rng, table[count_name], n).astype(np.int64)
        if counts.sum():  # each item's own tokens, summed per request
            owner = np.repeat(np.arange(n), counts)
            tokens = tokens + np.bincount(owner, _draw(rng, table[tokens_name], owner.size), n)
        if count_name == "image_count":
            out["image_count"] = counts
    out["input_tokens"] = tokens
    return out


def _quantities(sizes: Sizes) -> tuple[str, ...]:
    return tuple(sorted({q for _, q in sizes}))


def sample(windows: Windows, sizes: Sizes, rng: np.random.Generator,
           span: tuple[float, float] = (0, math.inf)) -> dict[str, np.ndarray]:
    """One client's requests in the rate windows that start within ``span`` (seconds from
    the start of the description: one day, or two weeks for the language models).

    Returns arrays ``arrival_s``, ``input_tokens``, ``output_tokens`` and, where the model
    has them, ``image_count`` and ``reason_ratio``, in arrival order.
    """
    quantities = _quantities(sizes)
    parts: list[dict[str, np.ndarray]] = []
    for index, start in enumerate(windows.start):
        n = round(float(windows.rate[index]) * WINDOW_S)
        if n <= 0 or not span[0] <= start < span[1]:
            continue
        chosen = _size_window(sizes, quantities, int(start))
        if chosen is None:
            raise GenerationError(f"window at {int(start)} s has {n} requests but no size "
                                  "window at or before it describes every quantity")
        part = {"arrival_s": _arrivals(rng, windows, index, n)}
        part.update(_sizes(rng, sizes, chosen, n))
        parts.append(part)
    names = ["arrival_s", "input_tokens", "output_tokens", "image_count", "reason_ratio"]
    out = {k: np.concatenate([p[k] for p in parts]) for k in names if parts and k in parts[0]}
    if not out:
        return {"arrival_s": np.empty(0), "input_tokens": np.empty(0, np.int64),
                "output_tokens": np.empty(0, np.int64)}
    order = np.argsort(out["arrival_s"], kind="stable")
    return {k: v[order] for k, v in out.items()}


# --------------------------------------------------------------------------- from the catalog


def _windows(con: duckdb.DuckDBPyConnection, model: str, clients: list[int]
             ) -> dict[int, Windows]:
    rows = con.execute(f"SELECT client, window_start, rate, distribution, shape, scale FROM "
                       f"servegen.{model}_windows WHERE list_contains(?, client) "
                       "ORDER BY client, window_start", [clients]).fetchall()
    found: dict[int, list[tuple]] = {}
    for row in rows:
        found.setdefault(int(row[0]), []).append(row[1:])
    return {client: Windows(np.array([r[0] for r in got], dtype=np.float64),
                            np.array([r[1] for r in got], dtype=np.float64), [r[2] for r in got],
                            np.array([r[3] for r in got], dtype=np.float64),
                            np.array([r[4] for r in got], dtype=np.float64))
            for client, got in found.items()}


def _size_tables(con: duckdb.DuckDBPyConnection, model: str, clients: list[int]
                 ) -> dict[int, dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]]:
    rows = con.execute(f"SELECT client, window_start, quantity, list(value ORDER BY value), "
                       f"list(probability ORDER BY value) FROM servegen.{model}_lengths "
                       "WHERE list_contains(?, client) GROUP BY ALL", [clients]).fetchall()
    found: dict[int, dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]] = {}
    for client, start, quantity, values, probabilities in rows:
        found.setdefault(int(client), {})[(int(start), quantity)] = (
            np.array(values, dtype=np.float64), np.array(probabilities, dtype=np.float64))
    return found


def _all_clients(con: duckdb.DuckDBPyConnection, model: str) -> list[int]:
    return [int(r[0]) for r in con.execute(
        f"SELECT DISTINCT client FROM servegen.{model}_windows ORDER BY 1").fetchall()]


def _planned(windows: Iterable[Windows], span: tuple[float, float]) -> int:
    """How many requests the windows hold within ``span`` (counted before any draw)."""
    return sum(int(np.round(w.rate[(w.start >= span[0]) & (w.start < span[1])] * WINDOW_S)
                   .sum()) for w in windows)


def generate(con: duckdb.DuckDBPyConnection, model: str, *, clients: Iterable[int] | None = None,
             seed: int = 0, span: tuple[float, float] = (0, math.inf),
             max_requests: int = MAX_REQUESTS) -> pa.Table:
    """A request trace of ``model``'s clients (all by default) over the rate windows that
    start within ``span`` (seconds; every window by default), as an Arrow table sorted by
    arrival: ``request_id``, ``client``, ``arrival_s``,
    ``input_tokens``, ``output_tokens`` (and ``image_count``, ``reason_ratio`` where the
    model has them)."""
    import pyarrow as pa

    if model not in MODELS:
        raise GenerationError(f"unknown ServeGen model {model!r}; models: {', '.join(MODELS)}")
    chosen = sorted(set(clients)) if clients is not None else _all_clients(con, model)
    windows = _windows(con, model, chosen)
    unknown = sorted(set(chosen) - set(windows))
    if unknown:
        raise GenerationError(f"servegen.{model}_windows has no client {unknown[:5]} (clients "
                              f"are 0 to {max(_all_clients(con, model), default=-1)})")
    planned = _planned(windows.values(), span)
    if planned > max_requests:
        raise GenerationError(f"the windows hold {planned:,} requests, more than max_requests "
                              f"({max_requests:,}): sample fewer clients or a shorter span, or "
                              "raise max_requests")
    tables = _size_tables(con, model, chosen)
    parts = []
    for client in chosen:
        rng = np.random.default_rng([seed, client])
        try:
            drawn = sample(windows[client], tables.get(client, {}), rng, span)
        except GenerationError as error:
            raise GenerationError(f"servegen.{model} client {client}: {error}") from None
        drawn["client"] = np.full(drawn["arrival_s"].size, client, dtype=np.int64)
        parts.append(drawn)
    names = ["client", "arrival_s", "input_tokens", "output_tokens", "image_count",
             "reason_ratio"]
    merged = {k: np.concatenate([p[k] for p in parts]) for k in names
              if parts and all(k in p for p in parts)}
    order = np.lexsort((merged["client"], merged["arrival_s"])) if merged else np.empty(0, int)
    columns = {"request_id": np.arange(order.size, dtype=np.int64)}
    for name, values in merged.items():
        values = values[order]
        columns[name] = values.astype(np.int64) if name.endswith(("tokens", "count")) else values
    return pa.table(columns)
