"""Synthetic AcmeTrace job traces in the exact upstream format (:mod:`mltraces.synthetic`).

AcmeTrace's job traces (``trace_seren.csv``, ``trace_kalos.csv``) are too large
for the test copy of the upstream files. These writers produce files with the
same columns, value formats (``2023-03-01 00:18:22+08:00``, ``936.0``), time
offsets and cross-column relations as the published samples, with plausible
distributions, so catalog, simulator and figure code run on them
(``WRITERS``, found by :func:`mltraces.synthetic.writers`). Every writer takes a
size and a ``seed`` and is deterministic for a given pair.

Formats reproduced (see ``../shared/UPSTREAM.md``):

- Seren: ``+08:00`` times; ``duration = end - start``; ``queue = start - submit``;
  ``gpu_time = duration x gpu_num`` written as a float; CPU jobs have ``gpu_num = 0``.
- Kalos: ``+00:00`` times; ``duration = end - submit`` (queueing included, as on
  the published rows); ``queue`` and ``shared_mem_per_pod`` written as floats;
  ``fail_time`` only for FAILED jobs and ``stop_time`` only for CANCELLED ones.
  Assumption (not visible in the samples): RUNNING jobs have empty end, fail and
  stop times, duration and gpu_time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEREN_COLUMNS = [
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state",
    "submit_time", "start_time", "end_time", "duration", "queue", "gpu_time",
]
KALOS_COLUMNS = [
    "job_id", "user", "node_num", "gpu_num", "cpu_num", "mem_per_pod_GB", "shared_mem_per_pod",
    "type", "state", "submit_time", "start_time", "end_time", "fail_time", "stop_time",
    "duration", "queue", "gpu_time",
]
#: test sizes (rows) when a caller asks for none
SEREN_ROWS, KALOS_ROWS = 3000, 1500

_GPU_COUNTS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
_GPU_WEIGHTS = np.array([0.62, 0.06, 0.07, 0.14, 0.04, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002])


def _format_times(seconds: np.ndarray, offset_hours: int) -> np.ndarray:
    """Epoch seconds -> ``YYYY-MM-DD HH:MM:SS+HH:00`` in the given fixed offset."""
    local = (seconds + offset_hours * 3600).astype("datetime64[s]")
    text = np.datetime_as_string(local, unit="s")
    text = np.char.replace(text, "T", " ")
    return np.char.add(text, f"+{offset_hours:02d}:00")


def _users(rng: np.random.Generator, n: int, pool: int) -> np.ndarray:
    ids = rng.choice(16**4, size=pool, replace=False)
    names = np.array([f"u{i:04x}" for i in ids])
    return names[rng.zipf(1.6, size=n) % pool]


def _gpu_requests(rng: np.random.Generator, n: int, cpu_share: float) -> np.ndarray:
    gpus = rng.choice(_GPU_COUNTS, size=n, p=_GPU_WEIGHTS / _GPU_WEIGHTS.sum())
    gpus[rng.random(n) < cpu_share] = 0
    return gpus


def _states(rng: np.random.Generator, gpus: np.ndarray) -> np.ndarray:
    """Final states with the cluster summary's proportions (GPU and CPU jobs differ)."""
    n = len(gpus)
    gpu_state = rng.choice(["COMPLETED", "CANCELLED", "FAILED"], size=n, p=[0.5, 0.075, 0.425])
    cpu_state = rng.choice(["COMPLETED", "CANCELLED", "FAILED"], size=n, p=[0.86, 0.04, 0.10])
    return np.where(gpus > 0, gpu_state, cpu_state)


def _types(rng: np.random.Generator, gpus: np.ndarray, kinds: list[str], weights: list[float]
           ) -> np.ndarray:
    p = np.array(weights) / sum(weights)
    return np.where(gpus > 0, rng.choice(kinds, size=len(gpus), p=p), "CPU")


def _durations(rng: np.random.Generator, n: int, median: float) -> np.ndarray:
    return np.maximum(1, rng.lognormal(np.log(median), 2.2, size=n)).astype(np.int64)


def _queues(rng: np.random.Generator, n: int) -> np.ndarray:
    heavy = rng.random(n) < 0.3
    waits = np.where(heavy, rng.lognormal(4.0, 2.0, size=n), rng.integers(0, 3, size=n))
    return waits.astype(np.int64)


def seren_jobs(n_rows: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Synthetic Seren jobs as the CSV's text cells (every column a string)."""
    rng = np.random.default_rng(seed)
    start = np.datetime64("2023-03-01T00:00:00", "s").astype(np.int64) - 8 * 3600
    span = 183 * 86400
    submit = np.sort(start + rng.integers(0, span, size=n_rows))
    gpus = _gpu_requests(rng, n_rows, cpu_share=0.36)
    duration = _durations(rng, n_rows, median=120)
    queue = _queues(rng, n_rows)
    begin = submit + queue
    end = begin + duration
    nodes = np.maximum(1, np.ceil(gpus / 8)).astype(np.int64)
    cpus = np.where(gpus > 0, np.maximum(16, gpus * 16), rng.choice([1, 4, 8, 16, 64], size=n_rows))
    kinds = ["Eval", "Pretrain", "SFT", "MLLM", "Debug", "Other"]
    frame = pd.DataFrame({
        "job_id": (5_000_000 + np.cumsum(rng.integers(1, 4, size=n_rows))).astype(str),
        "user": _users(rng, n_rows, pool=300),
        "node_num": nodes.astype(str),
        "gpu_num": gpus.astype(str),
        "cpu_num": cpus.astype(str),
        "type": _types(rng, gpus, kinds, [0.6, 0.01, 0.05, 0.05, 0.09, 0.2]),
        "state": _states(rng, gpus),
        "submit_time": _format_times(submit, 8),
        "start_time": _format_times(begin, 8),
        "end_time": _format_times(end, 8),
        "duration": duration.astype(str),
        "queue": queue.astype(str),
        "gpu_time": np.char.add((duration * gpus).astype(str), ".0"),
    })
    return frame[SEREN_COLUMNS]


def kalos_jobs(n_rows: int = 1000, seed: int = 0, n_running: int = 3) -> pd.DataFrame:
    """Synthetic Kalos jobs as the CSV's text cells (every column a string)."""
    rng = np.random.default_rng(seed)
    start = np.datetime64("2023-05-01T00:00:00", "s").astype(np.int64)
    submit = np.sort(start + rng.integers(0, 120 * 86400, size=n_rows))
    gpus = _gpu_requests(rng, n_rows, cpu_share=0.68)
    queue = _queues(rng, n_rows)
    run = _durations(rng, n_rows, median=110)
    begin = submit + queue
    end = begin + run
    duration = end - submit  # Kalos counts queueing in duration (published sample rows)
    state = _states(rng, gpus)
    running = rng.choice(n_rows, size=min(n_running, n_rows), replace=False)
    state[running] = "RUNNING"
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    ids = ["dlc" + "".join(row) for row in rng.choice(letters, size=(n_rows, 13))]
    end_text = _format_times(end, 0)
    blank = np.full(n_rows, "", dtype=object)
    is_running = state == "RUNNING"
    frame = pd.DataFrame({
        "job_id": ids,
        "user": _users(rng, n_rows, pool=120),
        "node_num": np.maximum(1, np.ceil(gpus / 8)).astype(np.int64).astype(str),
        "gpu_num": gpus.astype(str),
        "cpu_num": np.where(gpus > 0, gpus * 15, 8).astype(str),
        "mem_per_pod_GB": rng.choice([100, 500, 1000], size=n_rows).astype(str),
        "shared_mem_per_pod": np.char.add(rng.choice([10, 50, 100], size=n_rows).astype(str), ".0"),
        "type": _types(rng, gpus, ["Eval", "Pretrain", "SFT", "Debug", "Other"],
                       [0.9, 0.005, 0.005, 0.04, 0.05]),
        "state": state,
        "submit_time": _format_times(submit, 0),
        "start_time": _format_times(begin, 0),
        "end_time": np.where(is_running, blank, end_text),
        "fail_time": np.where(state == "FAILED", end_text, blank),
        "stop_time": np.where(state == "CANCELLED", end_text, blank),
        "duration": np.where(is_running, blank, duration.astype(str)),
        "queue": np.char.add(queue.astype(str), ".0"),
        "gpu_time": np.where(is_running, blank, np.char.add((duration * gpus).astype(str), ".0")),
    })
    return frame[KALOS_COLUMNS]


def write_seren_trace(path: str | Path, n_rows: int | None = None, seed: int = 0) -> Path:
    """Write a synthetic ``trace_seren.csv`` (``SEREN_ROWS`` jobs by default); returns the path."""
    path = Path(path)
    seren_jobs(SEREN_ROWS if n_rows is None else n_rows, seed).to_csv(path, index=False)
    return path


def write_kalos_trace(path: str | Path, n_rows: int | None = None, seed: int = 0,
                      n_running: int = 3) -> Path:
    """Write a synthetic ``trace_kalos.csv`` (``KALOS_ROWS`` jobs by default); returns the path."""
    path = Path(path)
    kalos_jobs(KALOS_ROWS if n_rows is None else n_rows, seed, n_running).to_csv(path, index=False)
    return path


#: registry file id -> writer (found by mltraces.synthetic)
WRITERS = {"acme/trace_seren.csv": write_seren_trace, "acme/trace_kalos.csv": write_kalos_trace}


