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


RESULTS = ROOT / "benchmarks" / "results.json"


def record_result(script: str, measures: str, result: str) -> None:
    """Write one benchmark's result into ``benchmarks/results.json`` (the documentation's
    performance page is drawn from it) with today's date and this checkout's commit: the
    entry with the same script and ``measures`` is replaced, else one is added."""
    import datetime
    import json
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short=8", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.strip()
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    entry = {"script": script, "measures": measures, "result": result,
             "recorded": datetime.datetime.now(datetime.UTC).date().isoformat(),
             "commit": commit}
    results = data["results"]
    same = [i for i, r in enumerate(results) if (r["script"], r["measures"]) == (script, measures)]
    if same:
        results[same[0]] = entry
    else:
        results.append(entry)
    tmp = RESULTS.with_name(RESULTS.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, RESULTS)
    print(f"recorded in {RESULTS.relative_to(ROOT)}: {result}")
    refresh_readme()


def refresh_readme() -> None:
    """Draw the README's generated blocks again: its speed section states the last results."""
    from mltraces.docs.readme import README, refresh

    README.write_text(refresh(README.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"drew {README.name}'s speed section again")


def revision_env(name: str, tree: Path, mirror: Path, cache: Path) -> dict[str, str]:
    """The environment of one revision's child processes: its own tree first on the path,
    its own cache and the mirror, no other ``MLTRACES_`` setting, and bytecode cached as on
    a user's machine (this shell may say not to write it), apart per revision."""
    kept = {k: v for k, v in os.environ.items()
            if not k.startswith("MLTRACES_") and k != "PYTHONDONTWRITEBYTECODE"}
    return {**kept, "MLTRACES_MIRROR": str(mirror), "MLTRACES_CACHE": str(cache),
            "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(WORK / "pycache" / name)}


def checkout(rev: str, work: Path) -> Path:
    """A clone of ``rev`` under ``work`` (made once), its tree imported by children."""
    import shutil
    import subprocess

    resolved = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    clone = work / f"rev-{resolved}"
    if not (clone / "mltraces").is_dir():
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(clone)],
                       check=True)
        subprocess.run(["git", "checkout", "--quiet", resolved], cwd=clone, check=True)
    return clone


class Revision:
    """One revision under test in a view benchmark: its tree, a fresh cache of its own (under
    ``work``), its children's environment, and what each step measured (``warm``: every
    warm run, the others by step)."""

    def __init__(self, name: str, tree: Path, mirror: Path, cache: Path) -> None:
        import shutil

        self.name, self.tree, self.cache = name, tree, cache
        shutil.rmtree(cache, ignore_errors=True)
        self.env = revision_env(name, tree, mirror, cache)
        self.steps: dict[str, dict] = {}
        self.warm: list[dict] = []

    def keep(self, step: str, found: dict) -> dict:
        """Record one step's measurements, with the machine's load after it."""
        found["load"] = os.getloadavg()[0]
        if step == "warm":
            self.warm.append(found)
        else:
            self.steps[step] = found
        return found

    @property
    def first(self) -> dict:
        return self.steps["first"]

    def median(self, key: str) -> float:
        return statistics.median(w[key] for w in self.warm)


def meets(value: float, goal: float) -> str:
    """Whether a measure is within its goal, in a word."""
    return "meets" if value <= goal else "misses"


def beside_base(value: float, before: float | None, unit: str, digits: int = 1) -> str:
    """A measure with the base revision's beside it, when one was measured."""
    text = f"{value:.{digits}f} {unit}"
    return text + (f" (base {before:.{digits}f} {unit})" if before is not None else "")

