"""The code base stays ruff-clean: part of the one test command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the [test] extra)")
    targets = [name for name in ("mltraces", "tests", "benchmarks") if (ROOT / name).is_dir()]
    result = subprocess.run(
        [ruff, "check", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
