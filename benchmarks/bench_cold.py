"""First-run and warm times of the README's commands in fresh clones: this checkout against
a base commit, measured in the same run, as whole processes.

For each revision (``--base``, default the commit before the cores were compiled
ahead of time, and ``HEAD``) the script makes a fresh clone under
``benchmarks/_work/cold/{base,head}/c`` (``../shared`` linked beside it, as in CI), a
fresh virtual environment there (``pip install -e ".[test]"``, timed), and a fresh cache
(files come from ``../shared/upstream`` through ``MLTRACES_MIRROR``, no network). Then, per
part:

* ``schedule``: ``mltraces schedule --trace itp/cluster10 --policy edf,elasticflow``
  the first time in the fresh cache (download, verify, catalog, replays), then once
  more after only the catalog was built (``--policy edf`` first: the first
  ElasticFlow replay alone, which used to compile), then warm (median of ``--repeat``);
* ``figures``: the README's main job ``mltraces figures --output figures/`` in the
  fresh cache, then warm (median of 3), and whether ``figures/`` is byte-identical to
  the committed one (``git status``);
* ``tests``: the README's test command ``python -m pytest`` (wall time, exit status);
* ``wheel``: ``pip wheel . -w dist --no-deps`` once (the cores compiled into a wheel),
  then that wheel into a fresh venv with its dependencies (``[test]``), and again alone
  (``--no-deps``): what a lab's other machines pay instead of a build.

Also prints what each install costs: the size of numba + llvmlite (base) or of the
compiled cores (``*.so``), and the time ``setup.py build_ext`` takes to compile them.
Wall seconds on a shared machine are noisy: the load is printed; compare the two
revisions from one run::

    python benchmarks/bench_cold.py [--base e672374] [--parts schedule,figures,tests,wheel]
        [--repeat 5] [--revs base,head]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "_work" / "cold"
UPSTREAM = REPO.parent / "shared" / "upstream"
BASE = "e672374"  # the last commit with numba compiling at first use
SCHEDULE = ["schedule", "--trace", "itp/cluster10", "--policy", "edf,elasticflow"]


CPU: list[float] = [0.0]  # CPU seconds of the last run()'s process tree
INSTALL_CPU: list[float] = [0.0]  # CPU seconds of the last timed install
MEASURED: dict[str, str] = {}  # what --record writes into results.json, by part


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None,
        check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds and the result of one whole process (its CPU seconds, worker
    processes it waited for, go to ``CPU[0]``: on a shared machine the steadier number,
    but worker processes started from a forkserver are not counted)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[0] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {cwd}:\n{done.stderr[-3000:]}")
    return seconds, done


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def prepare(rev: str, name: str) -> tuple[Path, Path, float]:
    """A fresh clone of ``rev`` with its own venv: (clone, venv python, install seconds).

    The clone is ``<name>/c`` with ``<name>/shared`` linked to ``../shared``, as CI lays
    it out, so its tests read the real upstream files instead of skipping.
    """
    clone = WORK / name / "c"
    if clone.parent.exists():
        shutil.rmtree(clone.parent)
    clone.parent.mkdir(parents=True)
    (clone.parent / "shared").symlink_to(UPSTREAM.parent, target_is_directory=True)
    run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], REPO)
    run(["git", "checkout", "--quiet", rev], clone)
    run([sys.executable, "-m", "venv", ".venv"], clone)
    python = clone / ".venv" / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], clone)
    seconds, _ = run([str(python), "-m", "pip", "install", "--quiet", "-e", ".[test]"], clone)
    INSTALL_CPU[0] = CPU[0]
    return clone, python, seconds


def env_for(clone: Path, cache: str) -> dict[str, str]:
    folder = clone / "_cache" / cache
    return {**os.environ, "MLTRACES_MIRROR": str(UPSTREAM), "MLTRACES_CACHE": str(folder),
            "PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}"}


def install_cost(clone: Path, python: Path) -> str:
    """What compiling the planner costs this install: numba + llvmlite, or the cores."""
    site = next((clone / ".venv" / "lib").glob("python3*/site-packages"))
    numba = sum(f.stat().st_size for name in ("numba", "llvmlite")
                for f in (site / name).rglob("*") if f.is_file())
    cores = sum(f.stat().st_size for f in (clone / "mltraces").rglob("*.so"))  # + shared
    if numba:
        return f"numba + llvmlite installed: {numba / 2**20:.0f} MB"
    if not cores:
        return "no compiled cores (they run as Python)"
    run([str(python), "-m", "pip", "install", "--quiet", "cython>=3.1", "setuptools>=77"], clone)
    seconds, _ = run([str(python), "setup.py", "build_ext", "--inplace", "--force"], clone)
    return (f"compiled cores: {cores / 2**20:.1f} MB of extensions, build_ext {seconds:.1f} s, "
            f"{CPU[0]:.1f} CPU-s (Cython + a C compiler at install only)")


def forget_compiled(clone: Path) -> None:
    """Drop numba's on-disk cache (the base's planner compiled at first use), so the next
    ElasticFlow replay is a first one again; nothing to drop for ahead-of-time builds."""
    for path in (clone / "mltraces" / "scheduling" / "__pycache__").glob("*.nb[ic]"):
        path.unlink()


def bench_schedule(clone: Path, repeat: int) -> None:
    mltraces = str(clone / ".venv" / "bin" / "mltraces")
    forget_compiled(clone)
    first, done = run([mltraces, *SCHEDULE], clone, env_for(clone, "schedule"))
    said = [line for line in done.stderr.splitlines() if line.strip()]
    print(f"  schedule, first run in a fresh cache: {first:7.2f} s, {CPU[0]:.2f} CPU-s  "
          f"({load()})" + (f"  [{said[0][:90]}]" if said else ""))
    env = env_for(clone, "schedule-ef")
    run([mltraces, "schedule", "--trace", "itp/cluster10", "--policy", "edf"], clone, env)
    forget_compiled(clone)
    first_ef, _ = run([mltraces, *SCHEDULE], clone, env)
    print(f"  schedule, first ElasticFlow replay (catalog built): {first_ef:7.2f} s, "
          f"{CPU[0]:.2f} CPU-s")
    warm, cpu = [], []
    for _ in range(repeat):
        warm.append(run([mltraces, *SCHEDULE], clone, env)[0])
        cpu.append(CPU[0])
    print(f"  schedule, warm: median {statistics.median(warm):.2f} s, "
          f"{statistics.median(cpu):.2f} CPU-s (min {min(warm):.2f}, max {max(warm):.2f} s, "
          f"{repeat} runs; {load()})")


def bench_figures(clone: Path) -> None:
    mltraces = str(clone / ".venv" / "bin" / "mltraces")
    env = env_for(clone, "figures")
    command = [mltraces, "figures", "--output", "figures/"]
    forget_compiled(clone)
    first, _ = run(command, clone, env)
    print(f"  main job, first run in a fresh cache: {first:7.1f} s  ({load()})")
    warm = [run(command, clone, env)[0] for _ in range(3)]
    print(f"  main job, warm: median {statistics.median(warm):.2f} s (3 runs; {load()})")
    _, status = run(["git", "status", "--porcelain", "figures"], clone)
    changed = status.stdout.strip()
    print("  figures/ byte-identical to the committed ones" if not changed
          else f"  figures/ CHANGED:\n{changed}")


def bench_tests(clone: Path, python: Path) -> None:
    """The README's test command, then (where the revision has them) the slow tests that
    CI runs beyond it; with ``MLTRACES_REQUIRE_UPSTREAM=1``, as in CI, nothing skips for
    want of the upstream files."""
    env = {**os.environ, "PATH": f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}",
           "MLTRACES_REQUIRE_UPSTREAM": "1"}
    commands = {"test command": [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"]}
    if "-m 'not slow'" in (clone / "pyproject.toml").read_text():
        commands["slow tests (CI only)"] = [*commands["test command"], "-m", "slow"]
    for label, command in commands.items():
        seconds, done = run(command, clone, env, check=False)
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
        print(f"  {label}: {seconds:7.1f} s  ({summary}; {load()})")


def bench_wheel(clone: Path, python: Path) -> None:
    """Build a wheel once, then install it where nothing is compiled: a fresh venv with the
    dependencies, and the wheel alone into a venv that has them."""
    dist = clone / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    build, _ = run([str(python), "-m", "pip", "wheel", ".", "-w", str(dist), "--no-deps",
                    "--quiet"], clone)
    [wheel] = dist.glob("mltraces-*.whl")
    print(f"  pip wheel . --no-deps: {build:.1f} s, {wheel.stat().st_size / 2**20:.1f} MB "
          f"({load()})")
    venv = clone.parent / "wheel-venv"
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", str(venv)], clone)
    other = venv / "bin" / "python"
    run([str(other), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], clone)
    with_deps, _ = run([str(other), "-m", "pip", "install", "--quiet", f"{wheel}[test]"], clone)
    alone, _ = run([str(other), "-m", "pip", "install", "--quiet", "--no-deps",
                    "--force-reinstall", str(wheel)], clone)
    check = ("from mltraces.scheduling.cores import native; import sys; "
             "sys.exit(0 if native.build().compiled else 1)")
    compiled = run([str(other), "-c", check], venv, check=False)[1].returncode == 0
    print(f"  the wheel into a fresh venv with its [test] dependencies: {with_deps:.1f} s; "
          f"the wheel alone: {alone:.1f} s; cores compiled there: {compiled} ({load()})")
    MEASURED["wheel"] = (f"`pip wheel . --no-deps` {build:.0f} s once; that wheel into a fresh "
                         f"venv with its [test] dependencies {with_deps:.0f} s, alone "
                         f"{alone:.1f} s, cores compiled: {compiled} ({load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE, help=f"baseline revision (default {BASE})")
    parser.add_argument("--revs", default="base,head", help="which revisions to measure")
    parser.add_argument("--parts", default="schedule,figures",
                        help="schedule, figures, tests, wheel (comma-separated)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="write the installs and the "
                        "wheel into benchmarks/results.json (harness.record_result)")
    args = parser.parse_args()
    if not (UPSTREAM / "MANIFEST.tsv").exists():
        raise SystemExit(f"needs the upstream files at {UPSTREAM}")
    head = run(["git", "rev-parse", "--short", "HEAD"], REPO)[1].stdout.strip()
    revisions = {"base": args.base, "head": head}
    parts = set(args.parts.split(","))
    for name in args.revs.split(","):
        rev = revisions[name]
        print(f"{name} ({rev}): fresh clone and venv ...", flush=True)
        clone, python, install = prepare(rev, name)
        print(f"  pip install -e '.[test]': {install:.1f} s, {INSTALL_CPU[0]:.1f} CPU-s  "
              f"({load()})")
        cost = install_cost(clone, python)
        print(f"  {cost}")
        MEASURED[f"install {name}"] = (f"{name} ({rev}) {install:.0f} s, {INSTALL_CPU[0]:.0f} "
                                       f"CPU-s ({load()}; {cost})")
        if "schedule" in parts:
            bench_schedule(clone, args.repeat)
        if "figures" in parts:
            bench_figures(clone)
        if "tests" in parts:
            bench_tests(clone, python)
        if "wheel" in parts:
            bench_wheel(clone, python)
    if args.record:
        from harness import record_result

        record_result("benchmarks/bench_cold.py",
                      "set-up in a fresh clone and venv: `pip install -e \".[test]\"` for this "
                      "checkout against a base commit in one run (CPU seconds beside the wall "
                      "time), and a wheel built once, installed where nothing is compiled",
                      "; ".join(f"{k}: {v}" for k, v in MEASURED.items()))


if __name__ == "__main__":
    main()
