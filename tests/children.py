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

import contextlib
import os
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


#: runs the command as its own child, capped, and reports that child's peak RSS on an FD. A
#: child forked straight from the pytest worker would count the worker's pages in its peak
#: (the kernel folds the old image's high-water mark in at exec): 433 MiB for a command that
#: peaks at 78 when the worker had grown. Forked from this small process, it counts ~10 MiB.
_SPAWNER = """
import os, resource, signal, sys
limit, report = int(sys.argv[1]), int(sys.argv[2])
os.set_inheritable(report, False)
pid = os.fork()
if pid == 0:
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(report, str(usage.ru_maxrss).encode())
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
"""


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
    """Run ``command``, killed at ``seconds`` (with all it started), its address space capped
    at ``memory``; its peak RSS is its own (:data:`_SPAWNER`)."""
    read, write = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            os.fdopen(read, "rb") as report:
        started = time.monotonic()
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", _SPAWNER, str(memory), str(write), *command],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})}, pass_fds=(write, *pass_fds), cwd=cwd,
                start_new_session=True)
        finally:
            os.close(write)
        timer = threading.Timer(seconds, _kill_group, (child.pid,))
        timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            timer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - started
        reported = report.read()
        out.seek(0)
        err.seek(0)
        peak = int(reported) if reported else usage.ru_maxrss  # (killed before it reported)
        return Run(child.returncode, out.read().decode(errors="replace"),
                   err.read().decode(errors="replace"), elapsed, peak / 1024)


def _kill_group(pid: int) -> None:
    """The time cap: the spawner, the command and anything the command started."""
    import signal

    with contextlib.suppress(ProcessLookupError):  # (it ended as the timer fired)
        os.killpg(pid, signal.SIGKILL)


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
