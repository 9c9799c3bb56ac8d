"""A synthetic Philly ``trace-data.tar.gz`` in the upstream format (:mod:`mltraces.synthetic`).

The real tarball (1 GB, a Git LFS object) is not available where the tests
run. This writes one with the same five members under ``trace-data/``:

- ``cluster_job_log``: one JSON array of jobs ``{status, vc, jobid, attempts,
  submitted_time, user}``, attempts ``{start_time, end_time, detail: [{ip, gpus}]}``,
  times ``YYYY-MM-DD HH:MM:SS`` on the Pacific clock without a zone; missing
  times in all three spellings the notebook accepts (``null``, ``""``,
  ``"None"``), jobs without attempts, and still-running last attempts;
- ``cluster_machine_list``: ``m31,8, 24GB`` rows (321 machines of 2 x 12 GB, 231 of
  8 x 24 GB) after a header line;
- ``cluster_gpu_util`` / ``cluster_cpu_util`` / ``cluster_mem_util``: per-minute rows
  after a header, times ending ``PDT`` or ``PST`` (the minutes span the end of
  daylight saving time on 2017-11-05), ``NA`` for offline machines, and the GPU
  rows ending with a trailing comma.

Placements use the listed GPUs of each machine (the real log does not always:
philly-traces#8). Deterministic for a given ``rows`` (jobs) and ``seed``;
``WRITERS`` maps the registry file to :func:`write_tarball`.
"""

from __future__ import annotations

import io
import json
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np

#: the 15 VCs of the Philly log (as Pollux's philly.csv names them)
VCS = ("6214e9", "11cb48", "6c71a0", "b436b2", "103959", "ee9e8c", "0e4a51", "ed69ec",
       "7f04ca", "2869ce", "e13805", "23dbec", "51b7ef", "925e2b", "795a4c")
PACIFIC = ZoneInfo("America/Los_Angeles")
FIRST = datetime(2017, 8, 7, tzinfo=PACIFIC)
SPAN_S = 137 * 86_400  # to 2017-12-22
#: the first utilization minute: 01:30 PDT on 2017-11-05, 30 minutes before DST ends
UTIL_START = datetime(2017, 11, 5, 8, 30, tzinfo=UTC)


#: jobs when a caller asks for no size; utilization minutes and machines of each kind
JOBS, MINUTES, MACHINES = 2_000, 90, 3


def machine_list() -> list[tuple[str, int, int]]:
    """(machine, GPUs, GB per GPU): 321 machines of 2 x 12 GB, then 231 of 8 x 24 GB."""
    return [(f"m{i}", 2, 12) if i < 321 else (f"m{i}", 8, 24) for i in range(552)]


def _clock(moment: datetime) -> str:
    """A job-log time: the Pacific wall clock, no zone."""
    return moment.astimezone(PACIFIC).strftime("%Y-%m-%d %H:%M:%S")


def _missing(rng: np.random.Generator) -> object:
    return [None, "", "None"][int(rng.integers(0, 3))]


def _placement(rng: np.random.Generator, gpus: int) -> list[dict]:
    """Which machines and GPUs an attempt used: small jobs on one machine, large on 8-GPU ones."""
    if gpus <= 2:
        machine = f"m{int(rng.integers(0, 321))}"
        return [{"ip": machine, "gpus": [f"gpu{g}" for g in range(gpus)]}]
    machines = rng.choice(np.arange(321, 552), size=max(1, gpus // 8), replace=False)
    each = min(gpus, 8)
    return [{"ip": f"m{m}", "gpus": [f"gpu{g}" for g in range(each)]} for m in machines]


def job_log(n_jobs: int, seed: int = 0) -> list[dict]:
    """The job log's items."""
    rng = np.random.default_rng(seed)
    submits = np.sort(rng.integers(0, SPAN_S, size=n_jobs))
    users = [f"{u:06x}" for u in rng.integers(0, 16**6, size=400)]
    log = []
    for index, offset in enumerate(submits):
        submitted = FIRST + timedelta(seconds=int(offset))
        attempts = []
        count = int(rng.choice([0, 1, 2, 3], p=[0.02, 0.85, 0.1, 0.03]))
        gpus = int(rng.choice([1, 2, 4, 8, 16, 32], p=[0.7, 0.1, 0.08, 0.08, 0.03, 0.01]))
        start = submitted + timedelta(seconds=int(rng.exponential(600)))
        for _ in range(count):
            end = start + timedelta(seconds=int(max(1, rng.lognormal(7, 2))))
            attempts.append({"start_time": _clock(start), "end_time": _clock(end),
                             "detail": _placement(rng, gpus)})
            start = end + timedelta(seconds=int(rng.integers(1, 120)))
        if attempts and index >= n_jobs - max(3, n_jobs // 200):  # still running at the end
            attempts[-1]["end_time"] = _missing(rng)
        status = str(rng.choice(["Pass", "Killed", "Failed"], p=[0.6, 0.25, 0.15]))
        log.append({"status": status, "vc": VCS[int(rng.zipf(1.6)) % len(VCS)],
                    "jobid": f"application_1506638472019_{index + 1}",
                    "attempts": attempts, "submitted_time": _clock(submitted),
                    "user": users[int(rng.zipf(1.5)) % len(users)]})
    return log


def _minutes(count: int) -> list[str]:
    """Utilization times: the Pacific wall clock with its zone name (PDT, then PST)."""
    moments = (UTIL_START + timedelta(minutes=m) for m in range(count))
    return [m.astimezone(PACIFIC).strftime("%Y-%m-%d %H:%M:%S %Z") for m in moments]


def util_files(minutes: int, machines: int, seed: int = 0) -> dict[str, str]:
    """The three utilization CSVs' text for the first ``machines`` machines of each kind."""
    rng = np.random.default_rng(seed + 1)
    listed = machine_list()
    chosen = listed[:machines] + listed[321:321 + machines]
    gpu = ["time,machineId," + ",".join(f"gpu{i}_util" for i in range(8))]
    cpu, mem = ["time,machine_id,cpu_util"], ["time,machine_id,mem_total,mem_free"]
    for time in _minutes(minutes):
        for machine, count, _ in chosen:
            offline = rng.random() < 0.02
            values = ["NA" if offline or g >= count else f"{rng.uniform(0, 100):.1f}"
                      for g in range(8)]
            gpu.append(f"{time},{machine},{','.join(values)},")
            cpu.append(f"{time},{machine},{'NA' if offline else f'{rng.uniform(0, 100):.3f}'}")
            free = f"{rng.uniform(1e6, 5e8):.4f}"
            mem.append(f"{time},{machine}," + ("NA,NA" if offline else f"528272672.0,{free}"))
    return {name: "\n".join(lines) + "\n" for name, lines in
            (("cluster_gpu_util", gpu), ("cluster_cpu_util", cpu), ("cluster_mem_util", mem))}


def _job_log(log: list[dict]) -> bytes:
    """One JSON array, an item per line."""
    return ("[\n" + ",\n".join(json.dumps(job) for job in log) + "\n]\n").encode()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 1_562_716_800, 0o644
    tar.addfile(info, io.BytesIO(data))


def write_tarball(path: Path, rows: int | None = None, seed: int = 0) -> Path:
    """``trace-data.tar.gz``: the folder and its five members (the utilization files hold
    ``MINUTES`` minutes of ``MACHINES`` machines of each kind)."""
    log = job_log(rows or JOBS, seed)
    listed = machine_list()
    machine_text = "machineId,number of GPUs,single GPU mem\n" + "".join(
        f"{m},{g}, {gb}GB\n" for m, g, gb in listed)
    members = {"cluster_job_log": _job_log(log), "cluster_machine_list": machine_text.encode(),
               **{k: v.encode() for k, v in util_files(MINUTES, MACHINES, seed).items()}}
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        folder = tarfile.TarInfo("trace-data")
        folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, 1_562_716_800
        tar.addfile(folder)
        for name in sorted(members):
            _add(tar, f"trace-data/{name}", members[name])
    return Path(path)


WRITERS = {"philly/trace-data.tar.gz": write_tarball}


def expected(rows: int | None = None, seed: int = 0) -> tuple[dict[str, int], dict[str, int]]:
    """(rows per table, jobs per cluster in ``mltraces.jobs``) of what ``WRITERS`` write."""
    from mltraces.synthetic import file_seed

    log = job_log(rows or JOBS, file_seed("philly/trace-data.tar.gz", seed))
    attempts = [a for job in log for a in job["attempts"]]
    util = MINUTES * 2 * MACHINES
    counts = {"philly.jobs": len(log), "philly.attempts": len(attempts),
              "philly.attempt_gpus": sum(len(d["gpus"]) for a in attempts for d in a["detail"]),
              "philly.machines": len(machine_list()), "philly.gpu_util": util,
              "philly.cpu_util": util, "philly.mem_util": util}
    return counts, {"philly": len(log)}
