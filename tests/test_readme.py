"""The README's code runs, and the ways to run the tests it points to work.

The README is the contract with new users: its tour (and every block of the guides) is
run by ``tests/test_docs_examples.py`` in a fresh process per page, against the loopback
mirror over ../shared/upstream and an empty cache (never the user's); this file holds the
README to having that tour, and checks the development page's single-process test runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import docs_examples
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DEVELOPMENT = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")


def test_readme_has_a_tour_that_the_example_tests_run() -> None:
    blocks = [b for b in docs_examples.blocks(README) if b.skip is None]
    assert {b.language for b in blocks} >= {"bash", "python"}
    tour = "\n".join(b.body for b in blocks)
    for step in ("mltraces fetch", "mltraces sql", "mltraces schedule", "mltraces figures",
                 "mltraces.connect"):
        assert step in tour, step
    assert README in docs_examples.PAGES


@pytest.mark.slow  # two pytest sessions in child processes
@pytest.mark.parametrize("options", [["-n", "0"], ["-p", "no:xdist", "-o",
                                                   "addopts=-m 'not slow'"]])
def test_the_documented_single_process_runs_work(options: list[str]) -> None:
    """The development page's two ways to run the tests in one process (a debugger, no
    xdist)."""
    assert "python -m pytest -n 0" in DEVELOPMENT
    assert "python -m pytest -p no:xdist -o addopts=\"-m 'not slow'\"" in DEVELOPMENT
    done = subprocess.run([sys.executable, "-m", "pytest", *options, "-q",
                           "tests/test_names.py"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
