"""Synthetic Alibaba PAI 2020 files in the exact upstream format (:mod:`mltraces.synthetic`).

The real tables (60 MB to 700 MB each, on Aliyun OSS) are not available where
the tests run; only the machine spec and the ``.header`` files are. This writes
every registry file of the source with the same layout: one ``pai_<table>.tar.gz``
per table holding one headerless ``pai_<table>.csv`` (flat member name, LF
endings), the seven ``.header`` files (one comma-separated line; byte-identical
to the published ones), times as floats on a shifted clock (``4550879.0``),
per-instance requests (``plan_gpu`` 50.0 = half a GPU, empty for CPU tasks),
``MISC``/``T4``/``P100``/``V100``/``V100M32`` GPU types and hashed names. A job
has one to three tasks; Running and Waiting jobs have an empty ``end_time``.
The seven tables of one size share one skeleton of jobs, so their names join
whatever seed each file gets: ``rows`` (the number of jobs) decides every
table, and ``seed`` is accepted and unused. ``WRITERS`` maps each registry file
(the tarballs and the header files) to its writer.

Assumptions (not visible in the README's samples): names are 24 lower-case hex
digits, missing values are empty fields, and a job's tasks start after it was
submitted.
"""

from __future__ import annotations

import io
import tarfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = {
    "job_table": ["job_name", "inst_id", "user", "status", "start_time", "end_time"],
    "task_table": ["job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                   "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"],
    "instance_table": ["job_name", "task_name", "inst_name", "worker_name", "inst_id", "status",
                       "start_time", "end_time", "machine"],
    "sensor_table": ["job_name", "task_name", "worker_name", "inst_id", "machine", "gpu_name",
                     "cpu_usage", "gpu_wrk_util", "avg_mem", "max_mem", "avg_gpu_wrk_mem",
                     "max_gpu_wrk_mem", "read", "write", "read_count", "write_count"],
    "group_tag_table": ["inst_id", "user", "gpu_type_spec", "group", "workload"],
    "machine_spec": ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"],
    "machine_metric": ["worker_name", "machine", "start_time", "end_time", "machine_cpu_iowait",
                       "machine_cpu_kernel", "machine_cpu_usr", "machine_gpu", "machine_load_1",
                       "machine_net_receive", "machine_num_worker", "machine_cpu"],
}
#: (gpu_type, machines, GPUs per machine, memory GB) as in the published machine spec
MACHINES = (("MISC", 280, 8, 512), ("P100", 798, 2, 512), ("V100M32", 135, 8, 384),
            ("T4", 497, 2, 512), ("V100", 59, 8, 512), ("V100", 45, 8, 384), ("CPU", 83, 0, 512))
STATUSES = ("Terminated", "Failed", "Running", "Waiting")
TASK_NAMES = ("tensorflow", "worker", "ps", "evaluator", "PyTorchWorker")
WORKLOADS = ("graphlearn", "ctr", "bert", "nmt", "inception", "resnet")


#: jobs when a caller asks for no size
JOBS = 2_000


def _hashes(rng: np.random.Generator, n: int, digits: int = 24) -> np.ndarray:
    """``n`` distinct lower-case hex names."""
    values = rng.choice(2**62, size=n, replace=False)
    text = np.char.mod("%016x", values)
    salt = np.char.mod("%08x", rng.integers(0, 2**32, size=n))
    return np.char.add(text, salt) if digits == 24 else text


def _floats(values: np.ndarray) -> np.ndarray:
    """Seconds written as the upstream writes them: ``4550879.0``."""
    return np.char.add(np.asarray(values, dtype=np.int64).astype(str), ".0")


def machines(seed: int = 0) -> pd.DataFrame:
    """A machine spec with the published shape (1,897 machines, 6,742 GPUs)."""
    rng = np.random.default_rng(seed)
    rows = [(kind, 96 if gpus != 2 or kind == "T4" else 64, memory, gpus)
            for kind, count, gpus, memory in MACHINES for _ in range(count)]
    frame = pd.DataFrame(rows, columns=["gpu_type", "cap_cpu", "cap_mem", "cap_gpu"])
    frame.insert(0, "machine", _hashes(rng, len(frame)))
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def jobs_and_tasks(n_jobs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The job and task tables (text cells, upstream column order)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.integers(494_319, 494_319 + 62 * 86_400, size=n_jobs))
    status = rng.choice(STATUSES, size=n_jobs, p=[0.78, 0.18, 0.03, 0.01])
    names, inst = _hashes(rng, n_jobs), _hashes(rng, n_jobs)
    users = np.char.mod("%012x", rng.integers(0, 2**40, size=1300))[rng.zipf(1.5, n_jobs) % 1300]
    per_job = rng.choice([1, 2, 3], size=n_jobs, p=[0.8, 0.15, 0.05])
    owner = np.repeat(np.arange(n_jobs), per_job)
    n_tasks = len(owner)
    wait = rng.exponential(300, size=n_tasks).astype(np.int64)
    run = np.maximum(1, rng.lognormal(7.0, 1.8, size=n_tasks)).astype(np.int64)
    task_start = submit[owner] + wait
    task_end = task_start + run
    gpu = rng.choice([0.0, 25.0, 50.0, 100.0, 200.0, 800.0], size=n_tasks,
                     p=[0.18, 0.12, 0.25, 0.35, 0.06, 0.04])
    inst_num = rng.choice([1.0, 2.0, 4.0, 8.0], size=n_tasks, p=[0.8, 0.1, 0.07, 0.03])
    gpu_type = rng.choice(["MISC", "T4", "P100", "V100", "V100M32"], size=n_tasks)
    open_ended = np.isin(status, ["Running", "Waiting"])
    job_end = np.zeros(n_jobs, dtype=np.int64)
    np.maximum.at(job_end, owner, task_end)
    ranks = np.arange(n_tasks) - np.repeat(np.cumsum(per_job) - per_job, per_job)
    jobs = pd.DataFrame({
        "job_name": names, "inst_id": inst, "user": users, "status": status,
        "start_time": _floats(submit), "end_time": np.where(open_ended, "", _floats(job_end))})
    tasks = pd.DataFrame({
        "job_name": names[owner],
        "task_name": np.array(TASK_NAMES)[ranks % len(TASK_NAMES)],
        "inst_num": inst_num.astype(str), "status": status[owner],
        "start_time": _floats(task_start),
        "end_time": np.where(open_ended[owner], "", _floats(task_end)),
        "plan_cpu": rng.choice([50.0, 200.0, 600.0, 1200.0], size=n_tasks).astype(str),
        "plan_mem": rng.choice([3.90625, 29.296875, 58.59375], size=n_tasks).astype(str),
        "plan_gpu": np.where(gpu > 0, gpu.astype(str), ""),
        "gpu_type": np.where(gpu > 0, gpu_type, "MISC")})
    return jobs, tasks


def _instances(jobs: pd.DataFrame, tasks: pd.DataFrame, spec: pd.DataFrame,
               rng: np.random.Generator) -> pd.DataFrame:
    counts = tasks["inst_num"].astype(float).astype(int).to_numpy()
    rows = tasks.loc[tasks.index.repeat(counts)].reset_index(drop=True)
    inst_of = dict(zip(jobs["job_name"], jobs["inst_id"], strict=True))
    gpu_machines = spec.loc[spec["cap_gpu"] > 0, "machine"].to_numpy()
    return pd.DataFrame({
        "job_name": rows["job_name"], "task_name": rows["task_name"],
        "inst_name": _hashes(rng, len(rows)), "worker_name": _hashes(rng, len(rows)),
        "inst_id": rows["job_name"].map(inst_of), "status": rows["status"],
        "start_time": rows["start_time"], "end_time": rows["end_time"],
        "machine": rng.choice(gpu_machines, size=len(rows))})


def _sensors(instances: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    n = len(instances)

    def numbers(scale: float) -> np.ndarray:
        return np.round(rng.exponential(scale, size=n), 3).astype(str)

    return pd.DataFrame({
        "job_name": instances["job_name"], "task_name": instances["task_name"],
        "worker_name": instances["worker_name"], "inst_id": instances["inst_id"],
        "machine": instances["machine"],
        "gpu_name": np.char.mod("/dev/nvidia%d", rng.integers(0, 8, size=n)),
        "cpu_usage": numbers(300), "gpu_wrk_util": numbers(30), "avg_mem": numbers(10),
        "max_mem": numbers(15), "avg_gpu_wrk_mem": numbers(3), "max_gpu_wrk_mem": numbers(5),
        "read": numbers(1e8), "write": numbers(1e8), "read_count": numbers(1e5),
        "write_count": numbers(1e5)})


def _metrics(instances: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    n = len(instances)
    start = instances["start_time"].str.removesuffix(".0")
    end = instances["end_time"].str.removesuffix(".0")
    return pd.DataFrame({
        "worker_name": instances["worker_name"], "machine": instances["machine"],
        "start_time": start, "end_time": end,
        **{c: np.round(rng.exponential(20, size=n), 3).astype(str) for c in
           COLUMNS["machine_metric"][4:]}})


def _group_tags(jobs: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    n = len(jobs)
    tagged = rng.random(n) < 0.09
    return pd.DataFrame({
        "inst_id": jobs["inst_id"], "user": jobs["user"],
        "gpu_type_spec": np.where(rng.random(n) < 0.1, rng.choice(["V100", "T4"], size=n), ""),
        "group": np.char.mod("%032x", rng.integers(0, 2**62, size=n) % max(1, n // 3)),
        "workload": np.where(tagged, rng.choice(WORKLOADS, size=n), "")})


def _tarball(path: Path, member: str, frame: pd.DataFrame) -> None:
    """``path`` as a tar.gz holding ``member``: the frame as a headerless CSV."""
    data = frame.to_csv(index=False, header=False, lineterminator="\n").encode()
    info = tarfile.TarInfo(member)
    info.size = len(data)
    info.mtime = 1_618_451_700  # fixed: the same inputs give the same bytes
    info.uname, info.gname, info.mode = "synthetic", "users", 0o644
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        tar.addfile(info, io.BytesIO(data))


@lru_cache(maxsize=2)
def frames(n_jobs: int, instances: bool = False) -> dict[str, pd.DataFrame]:
    """Every table of ``n_jobs`` jobs, text cells in upstream column order (one skeleton)."""
    rng = np.random.default_rng(n_jobs)
    job_frame, task_frame = jobs_and_tasks(n_jobs, seed=0)
    spec = machines(0)
    found = {"job_table": job_frame, "task_table": task_frame, "machine_spec": spec,
             "group_tag_table": _group_tags(job_frame, rng)}
    if instances:
        listed = _instances(job_frame, task_frame, spec, rng)
        found.update(instance_table=listed, sensor_table=_sensors(listed, rng),
                     machine_metric=_metrics(listed, rng))
    return {name: frame[COLUMNS[name]] for name, frame in found.items()}


def _table_writer(table: str):
    """The writer of ``pai_<table>.tar.gz``: ``write(path, rows=None, seed=0) -> Path``."""
    per_instance = table in ("instance_table", "sensor_table", "machine_metric")

    def write(path: Path, rows: int | None = None, seed: int = 0) -> Path:
        _tarball(Path(path), f"pai_{table}.csv", frames(rows or JOBS, per_instance)[table])
        return Path(path)

    return write


def _header_writer(table: str):
    """The writer of ``pai_<table>.header``: its one line, byte for byte as published."""

    def write(path: Path, rows: int | None = None, seed: int = 0) -> Path:
        Path(path).write_text(",".join(COLUMNS[table]) + "\n")
        return Path(path)

    return write


WRITERS = {
    **{f"alibaba_pai/pai_{t}.tar.gz": _table_writer(t) for t in COLUMNS},
    **{f"alibaba_pai/pai_{t}.header": _header_writer(t) for t in COLUMNS},
}


def expected(rows: int | None = None, seed: int = 0) -> tuple[dict[str, int], dict[str, int]]:
    """(rows per table, jobs per cluster in ``mltraces.jobs``) of what ``WRITERS`` write."""
    tables = frames(rows or JOBS, True)
    names = {"job_table": "jobs", "task_table": "tasks", "instance_table": "instances",
             "sensor_table": "sensors", "group_tag_table": "group_tags",
             "machine_spec": "machine_specs", "machine_metric": "machine_metrics"}
    counts = {f"alibaba_pai.{names[t]}": len(frame) for t, frame in tables.items()}
    return counts, {"pai": rows or JOBS}
