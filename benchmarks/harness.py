"""What the benchmark scripts share: a timer and the synthetic inputs they generate.

Inputs are generated once into ``benchmarks/_work`` (gitignored), atomically, so
an interrupted run never leaves a half-written trace for the next one.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mltraces.synthetic import writer

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work"
sys.path.insert(0, str(ROOT / "tests"))  # test helpers some benchmarks share


def timed(action: Callable[[], object], repeat: int = 1) -> tuple[float, object]:
    """Median wall time of ``repeat`` runs, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def unpacked_once(tarball: Path, root: Path, pattern: str) -> Path:
    """The folder matching ``pattern`` inside ``tarball``, extracted into ``root`` once."""
    import tarfile

    found = next(root.glob(pattern), None) if root.exists() else None
    if found is None:
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(root, filter="data")
        found = next(root.glob(pattern))
    return found


def _generate_once(path: Path, write: Callable[[Path], None]) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        write(tmp)
        os.replace(tmp, path)
    return path


def synthetic_job_traces(seren_rows: int) -> dict[str, Path]:
    """AcmeTrace-sized synthetic Seren (``seren_rows`` jobs) and Kalos (62,413) traces."""
    seren = WORK / f"trace_seren-{seren_rows}.csv"
    if not seren.exists():
        print(f"generating {seren_rows:,} synthetic Seren jobs ...", flush=True)
    _generate_once(seren, lambda p: writer("acme/trace_seren.csv")(p, seren_rows, 2024))
    kalos = _generate_once(
        WORK / "trace_kalos.csv", lambda p: writer("acme/trace_kalos.csv")(p, 62_413, 2024)
    )
    return {"acme.seren_jobs": seren, "acme.kalos_jobs": kalos}


def synthetic_alibaba_groups(groups: int = 400) -> Path:
    """A synthetic ``alibaba_groups.csv.xz`` in the upstream format."""
    return _generate_once(
        WORK / "alibaba_groups.csv.xz",
        lambda p: writer("zeus/alibaba_groups.csv.xz")(p, groups, 2024),
    )
