"""Synthetic files in the exact upstream formats of files that are absent here.

AcmeTrace's job traces (``trace_seren.csv``, ``trace_kalos.csv``) and Zeus's
``alibaba_groups.csv.xz`` are too large for the test copy in
``../shared/upstream``. These generators write files with the same columns,
value formats (``2023-03-01 00:18:22+08:00``, ``936.0``), time offsets and
cross-column relations as the published samples, with plausible distributions,
so catalog, simulator and figure code can be exercised through
``mltraces.connect(local={...})``. Every generator takes a ``seed`` and a size,
and is deterministic for a given pair.

Formats reproduced (see ``../shared/UPSTREAM.md``):

- Seren: ``+08:00`` times; ``duration = end - start``; ``queue = start - submit``;
  ``gpu_time = duration x gpu_num`` written as a float; CPU jobs have ``gpu_num = 0``.
- Kalos: ``+00:00`` times; ``duration = end - submit`` (queueing included, as on
  the published rows); ``queue`` and ``shared_mem_per_pod`` written as floats;
  ``fail_time`` only for FAILED jobs and ``stop_time`` only for CANCELLED ones.
  Assumption (not visible in the samples): RUNNING jobs have empty end, fail and
  stop times, duration and gpu_time.
- Alibaba groups: 32-hex group ids, float start/end seconds, one dataset per group.
"""

from __future__ import annotations

import lzma
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
ALIBABA_COLUMNS = ["group", "start_time", "end_time", "dataset", "runtime_ratio"]
HELIOS_COLUMNS = [
    "job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
    "submit_time", "start_time", "end_time", "duration", "queue",
]
ZEUS_DATASETS = ["cifar100", "imagenet", "librispeech", "movielens-1m", "sentiment140", "squad"]

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


def alibaba_groups(n_groups: int = 40, seed: int = 0, max_jobs: int = 30) -> pd.DataFrame:
    """Synthetic recurring-job groups in ``alibaba_groups.csv`` form (typed columns)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_groups):
        group = "".join(rng.choice(list("0123456789abcdef"), size=32))
        dataset = str(rng.choice(ZEUS_DATASETS))
        count = int(rng.integers(2, max_jobs + 1))
        starts = np.sort(rng.integers(0, 5_000_000, size=count)).astype(float)
        runtimes = rng.lognormal(np.log(20_000), 0.5, size=count).round()
        for begin, runtime in zip(starts, runtimes, strict=True):
            rows.append((group, begin, begin + runtime, dataset, runtime))
    frame = pd.DataFrame(rows, columns=["group", "start_time", "end_time", "dataset", "runtime"])
    mean = frame.groupby("dataset")["runtime"].transform("mean")
    frame["runtime_ratio"] = frame["runtime"] / mean
    return frame[ALIBABA_COLUMNS].sort_values(["group", "start_time"], ignore_index=True)


#: Helios-like GPU requests (mostly one GPU, a tail of 8-GPU nodes and multi-node jobs)
_HELIOS_GPUS = np.array([1, 2, 4, 8, 16, 32, 64])
_HELIOS_WEIGHTS = np.array([0.62, 0.09, 0.09, 0.14, 0.03, 0.02, 0.01])


def helios_gpu_jobs(n_jobs: int, seed: int = 0, cluster_gpus: int = 4096, load: float = 0.8,
                    burst_share: float = 0.3) -> pd.DataFrame:
    """Synthetic GPU jobs in the shape of Helios' ``cluster_log.csv`` (typed columns).

    Heavy-tailed run times (log-normal, median 5 minutes, capped at a week's
    Slurm limit), mostly one-GPU jobs, arrivals with a day/night rhythm and a
    ``burst_share`` of jobs submitted in bursts (a user's sweep: 2 to ~500 jobs
    in the same second), at a rate that offers ``load`` × ``cluster_gpus`` GPUs
    on average. Twice the jobs cover twice the time at the same rate, so the
    trace's shape does not change with its size. Times are ``YYYY-MM-DD
    HH:MM:SS`` text from 2020-04-01 (no zone, as Helios); everything finished.
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
    return frame[HELIOS_COLUMNS]


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


def write_seren_trace(path: str | Path, n_rows: int = 1000, seed: int = 0) -> Path:
    """Write a synthetic ``trace_seren.csv``; returns the path."""
    path = Path(path)
    seren_jobs(n_rows, seed).to_csv(path, index=False)
    return path


def write_kalos_trace(path: str | Path, n_rows: int = 1000, seed: int = 0, n_running: int = 3
                      ) -> Path:
    """Write a synthetic ``trace_kalos.csv``; returns the path."""
    path = Path(path)
    kalos_jobs(n_rows, seed, n_running).to_csv(path, index=False)
    return path


def write_helios_trace(path: str | Path, n_jobs: int = 1000, seed: int = 0, **shape: float
                       ) -> Path:
    """Write a synthetic Helios-shaped ``cluster_log.csv`` (see :func:`helios_gpu_jobs`)."""
    path = Path(path)
    helios_gpu_jobs(n_jobs, seed, **shape).to_csv(path, index=False)
    return path


def write_alibaba_groups_xz(path: str | Path, n_groups: int = 40, seed: int = 0) -> Path:
    """Write a synthetic xz-compressed ``alibaba_groups.csv.xz``; returns the path."""
    path = Path(path)
    frame = alibaba_groups(n_groups, seed)
    for column in ("start_time", "end_time"):
        frame[column] = frame[column].map("{:.1f}".format)
    text = frame.to_csv(index=False)
    path.write_bytes(lzma.compress(text.encode()))
    return path


def write_local_tables(
    folder: Path, seren_rows: int, kalos_rows: int, groups: int, seed: int = 0
) -> dict[str, Path]:
    """All three absent-upstream tables as files, keyed by table name (for ``local=``)."""
    return {
        "acme.seren_jobs": write_seren_trace(folder / "trace_seren.csv", seren_rows, seed + 1),
        "acme.kalos_jobs": write_kalos_trace(folder / "trace_kalos.csv", kalos_rows, seed + 2),
        "zeus.alibaba_groups": write_alibaba_groups_xz(
            folder / "alibaba_groups.csv.xz", groups, seed + 3
        ),
    }
