"""Helpers for tests that edit synthetic files.

The synthetic files themselves are written by the source folders' own
``synthetic.py`` (found by :mod:`mltraces.synthetic`); the AcmeTrace job-trace
writers are re-exported here for the tests that edit those traces line by line.
:func:`helios_gpu_jobs` is not a source's file but a load-shaped job table for the
scale tests and ``benchmarks/bench_million.py``: Helios' columns at a chosen size
and offered load.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mltraces.sources.acme.synthetic import (  # noqa: F401 - re-exported for the tests
    KALOS_COLUMNS,
    SEREN_COLUMNS,
    _users,
    write_kalos_trace,
    write_seren_trace,
)
from mltraces.sources.helios.synthetic import JOB_COLUMNS as HELIOS_COLUMNS
from mltraces.sources.zeus.synthetic import write_alibaba_groups_xz  # noqa: F401

#: Helios-like GPU requests (mostly one GPU, a tail of 8-GPU nodes and multi-node jobs)
_HELIOS_GPUS = np.array([1, 2, 4, 8, 16, 32, 64])
_HELIOS_WEIGHTS = np.array([0.62, 0.09, 0.09, 0.14, 0.03, 0.02, 0.01])


def helios_gpu_jobs(n_jobs: int, seed: int = 0, cluster_gpus: int = 4096, load: float = 0.8,
                    burst_share: float = 0.3, cluster: str = "Venus") -> pd.DataFrame:
    """Synthetic GPU jobs in the shape of Helios' ``cluster_log.csv`` (typed columns).

    Heavy-tailed run times (log-normal, median 5 minutes, capped at a week's
    Slurm limit), mostly one-GPU jobs, arrivals with a day/night rhythm and a
    ``burst_share`` of jobs submitted in bursts (a user's sweep: 2 to ~500 jobs
    in the same second), at a rate that offers ``load`` × ``cluster_gpus`` GPUs
    on average. Twice the jobs cover twice the time at the same rate, so the
    trace's shape does not change with its size. Times are ``YYYY-MM-DD
    HH:MM:SS`` text from 2020-04-01 (no zone, as Helios); everything finished. The
    ``cluster`` column is the one ``helios.jobs`` adds (its member's folder), so
    :func:`~mltraces.scheduling.as_jobs` reads the frame through Helios' mapping.
    """
    rng = np.random.default_rng(seed)
    weights = _HELIOS_WEIGHTS / _HELIOS_WEIGHTS.sum()
    gpus = rng.choice(_HELIOS_GPUS, size=n_jobs, p=weights)
    duration = np.minimum(np.maximum(1, rng.lognormal(np.log(300), 2.0, size=n_jobs)),
                          7 * 86400).astype(np.int64)
    mean_work = float((_HELIOS_GPUS * weights).sum()) * 300 * np.exp(2.0**2 / 2)
    rate = load * cluster_gpus / mean_work  # jobs per second
    span = n_jobs / rate
    submit = _rhythmic_arrivals(rng, n_jobs, span, burst_share)
    queue = np.zeros(n_jobs, np.int64)
    start = np.datetime64("2020-04-01T00:00:00", "s").astype(np.int64)
    text = lambda seconds: np.char.replace(  # noqa: E731
        np.datetime_as_string((start + seconds).astype("datetime64[s]"), unit="s"), "T", " ")
    frame = pd.DataFrame({
        "job_id": (1_000_000 + np.arange(n_jobs)).astype(str),
        "user": _users(rng, n_jobs, pool=400),
        "vc": np.char.add("vc", _users(rng, n_jobs, pool=25)),
        "gpu_num": gpus,
        "cpu_num": gpus * 4,
        "node_num": np.maximum(1, np.ceil(gpus / 8)).astype(np.int64),
        "state": rng.choice(["COMPLETED", "CANCELLED", "FAILED"], size=n_jobs, p=[0.6, 0.2, 0.2]),
        "submit_time": text(submit),
        "start_time": text(submit + queue),
        "end_time": text(submit + queue + duration),
        "duration": duration,
        "queue": queue,
    })
    frame.insert(0, "cluster", cluster)  # helios.jobs takes it from the member's folder
    return frame[["cluster", *HELIOS_COLUMNS]]


def _rhythmic_arrivals(rng: np.random.Generator, n: int, span: float, burst_share: float
                       ) -> np.ndarray:
    """Sorted whole-second submission times over ``span``: a day/night rhythm, and bursts."""
    n_bursty = int(n * burst_share)
    sizes = []
    while sum(sizes) < n_bursty:
        sizes.append(int(min(2 + rng.zipf(1.8), 500)))
    sizes[-1] -= sum(sizes) - n_bursty
    sizes = [s for s in sizes if s > 0]
    # day/night: thinning of a uniform draw keeps the rate between 0.4x and 1.6x the mean
    singles = n - n_bursty + len(sizes)
    times = np.empty(0)
    while len(times) < singles:
        draw = rng.uniform(0, span, size=2 * singles)
        keep = rng.random(2 * singles) < (1 + 0.6 * np.sin(2 * np.pi * draw / 86400)) / 1.6
        times = np.concatenate([times, draw[keep]])
    times = times[:singles].astype(np.int64)
    bursts = times[:len(sizes)]
    return np.sort(np.concatenate([np.repeat(bursts, sizes), times[len(sizes):]]))


def write_helios_trace(path: str | Path, n_jobs: int = 1000, seed: int = 0, **shape: float
                       ) -> Path:
    """Write a synthetic Helios-shaped ``cluster_log.csv`` (see :func:`helios_gpu_jobs`)."""
    path = Path(path)
    helios_gpu_jobs(n_jobs, seed, **shape).to_csv(path, index=False)
    return path


def edit_cell(line: str, column: str, value: str) -> str:
    """One Seren CSV line with ``column`` set to ``value`` (a bad value for a validation test)."""
    cells = line.split(",")
    cells[SEREN_COLUMNS.index(column)] = value
    return ",".join(cells)


def single_finding(report, rule: str) -> dict:
    """The one row of a validation report for ``rule``, as a dict (fails if not exactly one)."""
    found = report[report.rule == rule]
    assert len(found) == 1, f"no single {rule!r} row in\n{report[['rule', 'failing_rows']]}"
    return found.iloc[0].to_dict()
