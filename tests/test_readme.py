"""The README's code runs: every Python block, and the first steps a new user types.

The README is the contract with new users, so its examples are executed here in a
fresh process each, against the loopback mirror over ../shared/upstream and an
empty cache (never the user's).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text()
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
#: the "Smaller first steps" commands (the first bash block after the quickstart)
FIRST_STEPS = re.findall(r"```bash\n(.*?)```", TEXT, re.S)[1]


def _env(mirror: str, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLTRACES_")}
    return {**env, "MLTRACES_MIRROR": mirror, "MLTRACES_CACHE": str(cache), "MPLBACKEND": "Agg"}


def _commands(block: str) -> list[list[str]]:
    """Shell lines of a bash block (continuations joined, comments and && split)."""
    joined = re.sub(r"\n\s+(?=[^\s#])", " ", block)  # indented continuation lines
    commands = []
    for line in joined.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words:
                commands.append(words)
    return commands


def test_readme_has_the_blocks_this_test_runs() -> None:
    assert len(PYTHON_BLOCKS) >= 3
    assert any(words[:2] == ["mltraces", "schedule"] for words in _commands(FIRST_STEPS))


@pytest.mark.upstream
@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_python_block_runs(index: int, upstream_server: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PYTHON_BLOCKS[index]], cwd=tmp_path,
                          env=_env(upstream_server, tmp_path / "cache"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.upstream
@pytest.mark.slow
def test_first_steps_run(upstream_server: str, tmp_path: Path) -> None:
    env = _env(upstream_server, tmp_path / "cache")
    for words in _commands(FIRST_STEPS):
        done = subprocess.run([sys.executable, "-m", "mltraces", *words[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (words, done.stderr[-2000:])


@pytest.mark.parametrize("options", [["-n", "0"], ["-p", "no:xdist", "-o",
                                                   "addopts=-m 'not slow'"]])
def test_the_documented_single_process_runs_work(options: list[str]) -> None:
    """The README's two ways to run the tests in one process (a debugger, no xdist)."""
    assert "python -m pytest -n 0" in TEXT
    assert "python -m pytest -p no:xdist -o addopts=\"-m 'not slow'\"" in TEXT
    done = subprocess.run([sys.executable, "-m", "pytest", *options, "-q",
                           "tests/test_names.py"], cwd=README.parent, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
