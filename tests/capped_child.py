"""Run code or the CLI in a child process with a wall-time and memory cap.

A test of something that used to hang or grow without bound must not hang
itself: the child is killed at the time cap (the test then fails with what
the child printed), and its address space is capped so an unbounded
allocation fails fast instead of taking the machine's memory.

The cap is on address space, which counts what libraries reserve without using:
DuckDB's worker threads each get a 64 MB glibc malloc arena (about 0.7 GB of
a fresh connection's 0.8 GB), and a small replay peaks at 2.3 GB of address
space with 0.17 GB resident. The child runs with ``MALLOC_ARENA_MAX=2`` (1.6 GB)
and the caps leave room above that, so only a real unbounded allocation hits them.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from typing import Any

import pytest


def _limits(memory_mb: int):
    def apply() -> None:
        cap = memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return apply


def run_capped(args: list[str], *, seconds: float, memory_mb: int = 4096,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python args...`` under the caps; fails the test if the time cap is hit."""
    try:
        return subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=seconds,
            preexec_fn=_limits(memory_mb),
            env={**os.environ, "MALLOC_ARENA_MAX": "2", **(env or {})},
        )
    except subprocess.TimeoutExpired as timeout:
        out = (timeout.stdout or b"")[-2000:]
        pytest.fail(f"child still running after {seconds} s (a hang?): {args[:3]} ... {out!r}")


def python_json(code: str, *, seconds: float, memory_mb: int = 4096) -> Any:
    """Run ``code`` (which prints one JSON value last) under the caps; the value."""
    done = run_capped(["-c", code], seconds=seconds, memory_mb=memory_mb)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli(*args: str, seconds: float, memory_mb: int = 4096,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``mltraces args...`` under the caps."""
    return run_capped(["-m", "mltraces", *args], seconds=seconds, memory_mb=memory_mb, env=env)
