"""Synthetic Helios files in the exact upstream format (:mod:`mltraces.synthetic`).

``data.zip`` (36 MB, pinned by its git blob) is not available where the tests
run; the Venus GPU numbers of the 2021 release are. This writes ``data.zip``
as the README's tree shows it (``data/<Cluster>/cluster_log.csv`` and
``data/<Cluster>/cluster_gpu_number.csv`` for Venus, Earth, Saturn and Uranus,
plus the folder entries), with the published columns and value formats
(``1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,...,36848,0``):
Slurm ids rising with submission within a cluster, ``duration = end - start``,
``queue = start - submit``, ``gpu_num = 0`` for CPU jobs, one SUSPENDED job in
Uranus, and per-VC daily GPU numbers (multiples of 8) whose sum is the day's
``total``. Jobs are split between clusters in the published proportions. The
2021 Venus-only ``cluster_gpu_number.csv`` equals the Venus member.
The GPU numbers depend on the cluster only, so the 2021 file and the Venus
member agree whatever seed each gets. Deterministic for a given ``rows`` (jobs
in all) and ``seed``; ``WRITERS`` maps the two registry files to their writers.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

#: cluster -> (published jobs, mean daily GPUs, VCs)
CLUSTERS = {"Venus": (246_708, 1_022, 25), "Earth": (872_886, 997, 25),
            "Saturn": (1_753_078, 2_080, 30), "Uranus": (490_309, 2_119, 20)}
JOB_COLUMNS = ["job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
               "submit_time", "start_time", "end_time", "duration", "queue"]
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")
START = np.datetime64("2020-04-01T00:00:00", "s")
DAYS = 181
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))


#: jobs in all when a caller asks for no size
JOBS = 2_000


def split(jobs: int) -> dict[str, int]:
    """``jobs`` shared between the clusters as the published counts are (at least 2 each)."""
    total = sum(n for n, _, _ in CLUSTERS.values())
    shares = {c: max(2, round(jobs * n / total)) for c, (n, _, _) in CLUSTERS.items()}
    shares["Saturn"] += jobs - sum(shares.values())
    return shares


def _names(rng: np.random.Generator, prefix: str, count: int, length: int) -> np.ndarray:
    letters = rng.choice(_LETTERS, size=(count * 3, length))
    unique = np.unique(np.char.add(prefix, np.array(["".join(r) for r in letters])))
    return rng.permutation(unique)[:count]


def _times(seconds: np.ndarray) -> np.ndarray:
    text = np.datetime_as_string(START + seconds.astype("timedelta64[s]"), unit="s")
    return np.char.replace(text, "T", " ")


def cluster_log(cluster: str, n_jobs: int, seed: int = 0) -> pd.DataFrame:
    """One cluster's jobs as the CSV's text cells."""
    vcs = _names(np.random.default_rng(list(CLUSTERS).index(cluster)), "vc",
                 CLUSTERS[cluster][2], 3)  # the VCs of gpu_number
    rng = np.random.default_rng([seed, list(CLUSTERS).index(cluster)])
    users = _names(rng, "u", 200, 4)
    submit = np.sort(rng.integers(0, DAYS * 86_400 - 3 * 86_400, size=n_jobs))
    gpus = rng.choice([0, 1, 2, 4, 8, 16, 32, 64], size=n_jobs,
                      p=[0.53, 0.33, 0.04, 0.04, 0.04, 0.01, 0.005, 0.005])
    nodes = np.maximum(1, np.ceil(gpus / 8)).astype(np.int64)
    queue = np.where(rng.random(n_jobs) < 0.7, 0, rng.lognormal(4, 2, size=n_jobs)).astype(int)
    queue = np.minimum(queue, 86_400)
    duration = np.minimum(np.maximum(1, rng.lognormal(5, 2.5, size=n_jobs)), 2 * 86_400)
    duration = duration.astype(np.int64)
    state = rng.choice(STATES, size=n_jobs, p=[0.62, 0.2, 0.16, 0.015, 0.005])
    if cluster == "Uranus":
        state[n_jobs // 2] = "SUSPENDED"
    start = submit + queue
    frame = pd.DataFrame({
        "job_id": (1_000_000 + np.cumsum(rng.integers(1, 3, size=n_jobs))).astype(str),
        "user": users[rng.zipf(1.5, n_jobs) % len(users)],
        "vc": vcs[rng.integers(0, len(vcs), size=n_jobs)],
        "gpu_num": gpus.astype(str), "cpu_num": np.maximum(1, gpus * 4).astype(str),
        "node_num": nodes.astype(str), "state": state,
        "submit_time": _times(submit), "start_time": _times(start),
        "end_time": _times(start + duration), "duration": duration.astype(str),
        "queue": queue.astype(str)})
    return frame[JOB_COLUMNS]


def gpu_number(cluster: str) -> pd.DataFrame:
    """One cluster's GPUs per VC per day: ``date``, a column per VC, ``total``."""
    rng = np.random.default_rng(10 + list(CLUSTERS).index(cluster))
    _, mean, count = CLUSTERS[cluster]
    vcs = _names(np.random.default_rng(list(CLUSTERS).index(cluster)), "vc", count, 3)
    weights = rng.dirichlet(np.ones(count))
    days = pd.date_range("2020-04-01", periods=DAYS, freq="D").strftime("%Y-%m-%d")
    frame = pd.DataFrame({"date": days})
    drift = 1 + 0.12 * np.sin(np.linspace(0, 3, DAYS))
    per_vc = np.floor(np.outer(drift * mean, weights) / 8).astype(int) * 8
    for i, vc in enumerate(vcs):
        frame[vc] = per_vc[:, i]
    frame["total"] = per_vc.sum(axis=1)
    return frame


def _csv(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False, lineterminator="\n").encode()


def write_zip(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """``data.zip``: each cluster's job log and GPU numbers, folders included."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zipped:
        zipped.writestr(_folder("data/"), b"")
        for cluster, n_jobs in split(rows or JOBS).items():
            zipped.writestr(_folder(f"data/{cluster}/"), b"")
            zipped.writestr(_file(f"data/{cluster}/cluster_log.csv"),
                            _csv(cluster_log(cluster, n_jobs, seed)))
            zipped.writestr(_file(f"data/{cluster}/cluster_gpu_number.csv"),
                            _csv(gpu_number(cluster)))
    Path(path).write_bytes(buffer.getvalue())
    return Path(path)


def write_venus_2021(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """The 2021 release's ``data/Venus/cluster_gpu_number.csv`` (the Venus member's numbers)."""
    Path(path).write_bytes(_csv(gpu_number("Venus")))
    return Path(path)


WRITERS = {"helios/data.zip": write_zip,
           "helios/venus-2021/cluster_gpu_number.csv": write_venus_2021}


def _folder(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2022, 9, 27, 0, 0, 0))
    info.external_attr = (0o40755 << 16) | 0x10
    return info


def _file(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2022, 9, 27, 0, 0, 0))
    info.external_attr = 0o100644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def expected(rows: int | None = None, seed: int = 0) -> tuple[dict[str, int], dict[str, int]]:
    """(rows per table, jobs per cluster in ``mltraces.jobs``) of what ``WRITERS`` write."""
    counts = split(rows or JOBS)
    capacity = sum(DAYS * vcs for _, _, vcs in CLUSTERS.values())
    return ({"helios.jobs": sum(counts.values()), "helios.gpu_capacity": capacity,
             "helios.venus_gpu_capacity_2021": DAYS * CLUSTERS["Venus"][2]},
            {c.lower(): n for c, n in counts.items()})
