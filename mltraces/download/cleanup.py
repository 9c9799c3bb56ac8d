"""Remove what killed runs left behind, and only that.

Temporary files and folders of the download layer carry their owner: a process
id in the name (``<name>.tmp-<pid>``, ``<target>.staging-<pid>``), or a per-file
lock that its owner holds while it works (pooch's ``tmpXXXXXXXX`` files, legacy
``.part.copy`` files). A leftover is removed once its owner is provably gone: the
process no longer exists, or no lock in its folder is held. Partial downloads
(``.part``) are not leftovers: they are how a download resumes.

:func:`remove_orphans` is reusable by other layers for their own pid-named
temporaries (e.g. ``convert-<pid>-*`` folders) with their own pattern.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from mltraces.download.paths import LOCK_SUFFIX
from mltraces.logs import get_logger

log = get_logger(__name__)

OWNED = re.compile(r"\.(?:tmp|staging)-(?P<pid>\d+)$")
POOCH_TEMP = re.compile(r"^tmp[a-z0-9_]{8}$")
LEGACY = re.compile(r"\.part\.copy$")
IDLE_S = 600.0  # a foreign (plain pooch) temp file untouched this long is abandoned

__all__ = ["OWNED", "entries", "pid_alive", "remove_leftover", "remove_orphans", "sweep",
           "sweep_folder"]


def pid_alive(pid: int) -> bool:
    """True unless process ``pid`` provably does not exist (on this machine)."""
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_leftover(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        return False
    except OSError as error:
        log.debug("could not remove leftover %s: %s", path, error)
        return False
    log.info("removed leftover %s", path)
    return True


def entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def remove_orphans(folder: Path, pattern: re.Pattern[str] = OWNED) -> list[Path]:
    """Remove entries of ``folder`` whose name matches ``pattern`` and whose pid is dead.

    ``pattern`` must have a named group ``pid``; e.g. ``re.compile(r"^convert-(?P<pid>\\d+)-")``.
    """
    removed = []
    for entry in entries(folder):
        match = pattern.search(entry.name)
        if match and not pid_alive(int(match["pid"])) and remove_leftover(entry):
            removed.append(entry)
    return removed


def _any_lock_held(folder: Path) -> bool:
    """True when some process holds a per-file lock in ``folder`` (it may own temp files)."""
    from filelock import FileLock, Timeout

    for lock in folder.glob("*" + LOCK_SUFFIX):
        probe = FileLock(str(lock), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            return True
        except OSError:
            return True  # cannot tell: assume someone works here
        else:
            probe.release()
    return False


def _lock_owned(folder: Path) -> list[Path]:
    """Unowned temp files of lock-holding writers: only when no lock in the folder is held."""
    # list first, then look at the locks: a writer that starts after the listing creates
    # a new name, so nothing listed here can belong to it
    now = time.time()
    candidates = []
    for entry in entries(folder):
        if LEGACY.search(entry.name):
            candidates.append(entry)
        elif POOCH_TEMP.match(entry.name):
            try:
                idle = now - entry.stat().st_mtime
            except OSError:
                continue
            if idle > IDLE_S:
                candidates.append(entry)
    if not candidates or _any_lock_held(folder):
        return []
    return [entry for entry in candidates if remove_leftover(entry)]


def sweep_folder(folder: Path) -> list[Path]:
    """Remove the download layer's leftovers directly in ``folder``."""
    return remove_orphans(folder) + _lock_owned(folder)


def sweep(folders: Iterable[Path]) -> list[Path]:
    """Sweep every folder under each of ``folders`` (``mltraces verify`` runs this)."""
    removed: list[Path] = []
    for top in folders:
        if not top.is_dir():
            continue
        for current, _, _ in os.walk(top):
            removed.extend(sweep_folder(Path(current)))
    return removed
