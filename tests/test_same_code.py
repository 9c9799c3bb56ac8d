"""The same code in every process (issue 34): replay workers import the package their parent
imported, never a ``mltraces/`` folder of the current directory, and a process that runs the
scheduling cores uncompiled says so once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mltraces

RUN = """
import os


def where():
    import mltraces

    return os.path.dirname(os.path.realpath(mltraces.__file__))


if __name__ == "__main__":
    from mltraces.workers import process_pool

    with process_pool(2, preload=["pandas", "mltraces.figures.style"]) as pool:
        print(pool.submit(where).result())
        print(pool.submit(where).result())
    print(where())
"""


def test_workers_import_the_parents_package_not_a_folder_in_the_current_directory(
        tmp_path: Path) -> None:
    """Run from a folder holding a ``mltraces/`` tree (another checkout): the forkserver
    starts with the current directory first on its path and preloaded that tree, so the
    workers ran its uncompiled code (900 s for the figures instead of about 70)."""
    decoy = tmp_path / "checkout"
    marker = tmp_path / "decoy-imported"
    for package in ("mltraces", "mltraces/figures"):
        (decoy / package).mkdir(parents=True)
        (decoy / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    (decoy / "mltraces" / "figures" / "style.py").write_text("")
    script = tmp_path / "run.py"  # not in the current directory: a console script's case
    script.write_text(RUN)
    run = subprocess.run([sys.executable, str(script)], cwd=decoy, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    installed = str(Path(mltraces.__file__).resolve().parent)
    assert run.stdout.split() == [installed] * 3
    assert not marker.exists(), marker.read_text()


def test_a_worker_on_another_copy_of_the_package_refuses_to_work(tmp_path: Path) -> None:
    from mltraces.errors import MltracesError
    from mltraces.workers import check_package

    try:
        check_package(str(tmp_path))
    except MltracesError as error:
        assert f"its parent from {tmp_path}" in str(error)
        assert "shadows the installed one" in str(error)
    else:
        raise AssertionError("a worker on another package went to work")
    calls = []
    check_package(str(Path(mltraces.__file__).resolve().parent), calls.append, (1,))
    assert calls == [1]


INTERPRETED = """
import sys
sys.path.insert(0, {tests!r})
from test_chronus import busy_trace
from mltraces.scheduling import schedule
for policy in ("chronus", "gandiva", "chronus"):
    schedule(busy_trace(jobs=8), "n2g8", None, policy)
print("done")
"""


def test_a_process_running_the_cores_uncompiled_says_so_once(tmp_path: Path) -> None:
    import os

    script = INTERPRETED.format(tests=str(Path(__file__).parent))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "MLTRACES_INTERPRETED": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    said = [line for line in run.stderr.splitlines() if "plain Python" in line]
    assert len(said) == 1, run.stderr
    assert said[0].startswith("mltraces: the scheduling cores run as plain Python, about 100 "
                              "times slower: MLTRACES_INTERPRETED is set (process ")
    assert str(Path(mltraces.__file__).resolve().parent / "scheduling") in said[0]
