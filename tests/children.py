"""The ``mltraces`` command in a child process with a time and memory cap, and a read-only cache.

A hang or a runaway allocation must fail its test within seconds, not stall the
suite: :func:`run_cli` kills the child at ``seconds`` and caps its address space
at ``memory``, and reports the peak RSS the kernel measured for it.

:func:`read_only_runner` gives the prefix that runs a command with a folder truly
read-only: a read-only bind mount in a private mount namespace (root with
``unshare``), else the process without the capabilities that let root ignore
permissions (``setpriv``) over a ``chmod -R a-w`` copy, else plain ``chmod`` when
not root. None when none works here.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

GiB = 1 << 30


class Run(NamedTuple):
    """What a capped child did."""

    code: int  # exit status; -9 when killed at the time cap
    out: str
    err: str
    seconds: float
    peak_mib: float  # the child's peak resident memory

    @property
    def one_line_error(self) -> str:
        """Its stderr, checked to be exactly one line with no traceback."""
        text = self.err.strip()
        assert self.code == 1, (self.code, self.out[-500:], text[-2000:])
        assert "\n" not in text and "Traceback" not in text, text[-2000:]
        return text


def _cap(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def run_cli(args: Sequence[str], *, env: dict[str, str] | None = None, seconds: float = 20.0,
            memory: int = 2 * GiB, prefix: Sequence[str] = (), pass_fds: Sequence[int] = (),
            cwd: Path | None = None) -> Run:
    """Run ``mltraces ARGS`` (after ``prefix``), killed at ``seconds``, capped at ``memory``."""
    return run_command([*prefix, sys.executable, "-m", "mltraces", *args], env=env,
                       seconds=seconds, memory=memory, pass_fds=pass_fds, cwd=cwd)


def run_python(code: str, *args: str, seconds: float = 20.0, memory: int = 2 * GiB,
               env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    """Run ``python -c CODE ARGS`` with the same caps as :func:`run_cli`."""
    return run_command([sys.executable, "-c", code, *args], env=env, seconds=seconds,
                       memory=memory, cwd=cwd)


def run_command(command: Sequence[str], *, env: dict[str, str] | None = None,
                seconds: float = 20.0, memory: int = 2 * GiB, pass_fds: Sequence[int] = (),
                cwd: Path | None = None) -> Run:
    """Run ``command``, killed at ``seconds``, its address space capped at ``memory``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env={**os.environ, **(env or {})}, pass_fds=tuple(pass_fds),
                                 preexec_fn=lambda: _cap(memory), cwd=cwd)
        timer = threading.Timer(seconds, child.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        return Run(child.returncode, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), elapsed, usage.ru_maxrss / 1024)


def _works(prefix: list[str], folder: Path) -> bool:
    """True when ``touch`` under ``prefix`` fails in ``folder`` and reading it works."""
    probe = subprocess.run([*prefix, "sh", "-c", f'touch "{folder}/.probe" 2>/dev/null; '
                            f'test ! -e "{folder}/.probe" && ls "{folder}" >/dev/null'],
                           capture_output=True, timeout=10)
    return probe.returncode == 0


def read_only_runner(folder: Path) -> list[str] | None:
    """A command prefix under which ``folder`` cannot be written (see the module doc)."""
    mount = ["unshare", "-m", "sh", "-c",
             'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"', str(folder)]
    if os.geteuid() == 0 and shutil.which("unshare") and _works(mount, folder):
        return mount
    subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
    if os.geteuid() != 0:
        return [] if _works([], folder) else None
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    if shutil.which("setpriv") and _works(drop, folder):
        return drop
    return None
