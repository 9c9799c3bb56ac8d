"""The other simulators' own trace parsers, run here as black boxes on our exports.

Each simulator's code comes from a snapshot of its repository (bare git mirrors under
``/work/.mirror``, or the ElasticFlow artifact's tarball in ``../shared/reference``),
extracted into ``benchmarks/_work/interop/<simulator>/src`` with a virtualenv of the
Python and packages it was written for beside it (``venv``). Nothing of theirs is
imported into this process or committed: a *driver* (``tests/interop_drivers/<name>.py``,
ours) runs in that venv, calls the simulator's own loading function on our file and
prints what it parsed as JSON, which the tests compare with what we exported.

``python benchmarks/interop_parsers.py build`` builds them (minutes, needs PyPI);
``ready(name)`` says whether one is built; the tests skip with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "_work" / "interop"
DRIVERS = Path(__file__).resolve().parent / "interop_drivers"
MIRRORS = Path(os.environ.get("MLTRACES_MIRRORS_DIR", "/work/.mirror"))
REFERENCE = REPO.parent / "shared" / "reference"
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"


@dataclass(frozen=True)
class Simulator:
    """Where one simulator's code comes from, and what it runs on."""

    name: str
    repo: str  # the snapshot's git dir under MIRRORS, or "" for the reference tarball
    ref: str  # commit-ish in that snapshot
    paths: tuple[str, ...]  # folders of the snapshot to extract
    python: str  # the interpreter version it was written for (a pyenv version)
    packages: tuple[str, ...]
    note: str = ""

    @property
    def folder(self) -> Path:
        return WORK / self.name

    @property
    def venv_python(self) -> Path:
        return self.folder / "venv" / "bin" / "python"


SIMULATORS = {s.name: s for s in (
    Simulator("elasticflow", "", "b3f5ea4c", ("ElasticFlow/scheduler",), "3.11.7",
              ("numpy", "pandas", "grpcio", "grpcio-tools", "protobuf", "psutil", "six", "pyyaml",
               "cvxpy", "ecos"),
              "gudiandian/ElasticFlow@b3f5ea4c from ../shared/reference"),
    Simulator("tiresias", "SymbioticLab+Tiresias/repo/.git", "HEAD", ("simulator",), "2.7.18",
              ("numpy==1.16.6",),
              "Python 2.7 as its README requires; lp.py imports CPLEX, which the FIFO/count "
              "replay never calls: an empty stand-in module lets run_sim.py import it"),
    Simulator("pollux", "petuum+adaptdl/repo", "osdi21-artifact", ("simulator",), "3.8.18",
              ("numpy==1.19.5", "pandas==1.1.5", "scipy==1.5.4", "pymoo==0.4.2.1", "autograd"),
              "Python 3.8 and the pins of simulator/requirements.txt"),
    Simulator("gavel", "stanford-futuredata+gavel/repo", "HEAD", ("scheduler",), "3.8.18",
              ("numpy", "scipy", "cvxpy", "ecos", "psutil"),
              "utils.parse_trace; its module imports the policies (cvxpy)"),
    Simulator("blox", "msr-fiddle+blox/repo", "HEAD", ("workload",), "3.11.7", ("numpy", "pandas")),
    Simulator("synergy", "msr-fiddle+synergy/repo", "HEAD",
              ("simulator/helpers", "simulator/jobs"), "3.11.7", ("numpy",)),
)}


def ready(name: str) -> str | None:
    """None when the simulator's parser can run here, else why not."""
    sim = SIMULATORS[name]
    if not (sim.folder / "ready.json").is_file():
        return (f"{name}'s parser is not built here: run `python benchmarks/interop_parsers.py "
                f"build {name}` (needs its snapshot and PyPI)")
    return None


def source_root(name: str) -> Path:
    return SIMULATORS[name].folder / "src"


def run_driver(name: str, *args: str, timeout: float = 600) -> dict:
    """Run ``interop_drivers/<name>.py`` in the simulator's venv; its JSON output."""
    sim = SIMULATORS[name]
    done = subprocess.run([str(sim.venv_python), str(DRIVERS / f"{name}.py"),
                           str(source_root(name)), *args],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{name} driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ building


def _extract_snapshot(sim: Simulator, target: Path) -> None:
    """Copy the snapshot's folders, file by file (a snapshot may lack its largest blobs)."""
    git_dir = MIRRORS / sim.repo
    listing = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", sim.ref, "--",
                              *sim.paths], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _, kind, blob = meta.split()
        if kind != "blob":
            continue
        data = subprocess.run(["git", "-C", str(git_dir), "cat-file", "blob", blob],
                              capture_output=True)
        if data.returncode != 0:  # absent from the snapshot (large data files)
            continue
        out = target / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data.stdout)


def _extract_reference(target: Path) -> None:
    with tarfile.open(REFERENCE / "ElasticFlow-scheduler.tar.gz") as archive:
        archive.extractall(target, filter="data")
    inner = next(target.glob("*/ElasticFlow"))
    for child in inner.parent.iterdir():
        if child.name != "ElasticFlow":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    inner.rename(target / "ElasticFlow")
    inner.parent.rmdir()


def _stub_cplex(target: Path) -> None:
    """An importable ``cplex`` for Tiresias's lp.py (never called by the replays we run)."""
    package = target / "simulator" / "cplex"
    (package / "six").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("# stand-in: CPLEX is not installed here\n")
    (package / "exceptions.py").write_text("class CplexError(Exception):\n    pass\n")
    (package / "six" / "__init__.py").write_text("")
    (package / "six" / "moves.py").write_text("range = range\n")


def build(name: str, log=print) -> Path:
    """Extract one simulator and make its venv; returns its folder."""
    sim = SIMULATORS[name]
    interpreter = PYENV / sim.python / "bin" / "python"
    if not interpreter.exists():
        raise SystemExit(f"{name}: Python {sim.python} not found at {interpreter}")
    sim.folder.mkdir(parents=True, exist_ok=True)
    (sim.folder / "ready.json").unlink(missing_ok=True)
    src = source_root(name)
    if src.exists():
        shutil.rmtree(src)
    src.mkdir()
    log(f"{name}: extracting its code into {src}")
    if sim.repo:
        if not (MIRRORS / sim.repo).exists():
            raise SystemExit(f"{name}: snapshot {MIRRORS / sim.repo} not found")
        _extract_snapshot(sim, src)
    else:
        _extract_reference(src)
    if name == "tiresias":
        _stub_cplex(src)
    venv = sim.folder / "venv"
    if not sim.venv_python.exists():
        log(f"{name}: creating a Python {sim.python} venv and installing {' '.join(sim.packages)}")
        if sim.python.startswith("2."):
            subprocess.run([str(interpreter), "-m", "pip", "install", "-q", "virtualenv<20.22"],
                           check=True)
            subprocess.run([str(interpreter), "-m", "virtualenv", "-q", str(venv)], check=True)
        else:
            subprocess.run([str(interpreter), "-m", "venv", str(venv)], check=True)
        subprocess.run([str(sim.venv_python), "-m", "pip", "install", "-q", *sim.packages],
                       check=True)
    if name == "elasticflow":
        scheduler = src / "ElasticFlow" / "scheduler"
        env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        subprocess.run(["make", "rpc"], cwd=scheduler, env=env, check=True, capture_output=True)
    (sim.folder / "ready.json").write_text(json.dumps(
        {"python": str(sim.venv_python), "src": str(src), "note": sim.note}, indent=1))
    log(f"{name}: ready")
    return sim.folder


if __name__ == "__main__":  # pragma: no cover - the benchmark script is the entry point
    for simulator in sys.argv[1:] or list(SIMULATORS):
        build(simulator)
