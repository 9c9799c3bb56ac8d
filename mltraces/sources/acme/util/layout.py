"""Where converted utilization data lives, and how it is replaced atomically.

::

    <cache>/acme-util/
      converted/<sha256>-v<N>/       one folder per verified CSV (conversion is keyed
                                     by the file's sha256 and the converter version)
        meta.json                    what the file held (rows, months, time range)
        month=2023-07.parquet        its long rows, one file per UTC month
        times.parquet                every distinct Time of the file (for de-duplication)
      parquet/                       the hive-partitioned dataset users read
        gpu_metrics/cluster=kalos/metric=GPU_UTIL/month=2023-07/part-<sha16>.parquet
        node_metrics/cluster=seren/metric=NODE_CPU_UTILIZATION/month=2023-07/...
        ipmi_power/server_group=GPU_AB/month=2023-07/...
      local/                         files a user downloaded (``--local``), kept apart
        converted/<key>-v<N>/        one folder per local CSV, keyed by its path and version
                                     (size, mtime, ctime, inode)
        parquet/<name>-<key16>/      one dataset per local path given, laid out as parquet/ above
      tmp/                           work folders (same file system, so renames are atomic)

Dataset files are hard links to the converted ones when nothing needs
de-duplicating, so the two trees share disk blocks. An :class:`Area` is one
pair of (conversions, dataset): :func:`upstream` for verified downloads,
:func:`local_area` for a user's own copy.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mltraces import config

FORMAT_VERSION = 1
TABLES = ("gpu_metrics", "node_metrics", "ipmi_power")
STATE_FILE = "_mltraces.json"  # leading underscore: Spark, Hive and globs skip it
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def root() -> Path:
    """``<cache>/acme-util``."""
    return config.cache_dir() / "acme-util"


def dataset_root() -> Path:
    """The hive-partitioned Parquet dataset: ``<cache>/acme-util/parquet``."""
    return root() / "parquet"


@dataclass(frozen=True)
class Area:
    """Conversions and the dataset assembled from them: verified downloads, or a local copy.

    ``name`` prefixes the area's lock names, so two areas never wait on (or
    overwrite) each other's partitions.
    """

    converted: Path
    dataset: Path
    name: str

    def converted_dir(self, key: str) -> Path:
        """Conversion of one file, keyed by ``key`` and the converter version."""
        return self.converted / f"{key}-v{FORMAT_VERSION}"

    def partition_dir(self, table: str, group: str, metric: str) -> Path:
        """The folder holding one metric's months (one server group's for IPMI)."""
        if table == "ipmi_power":
            return self.dataset / table / f"server_group={server_group(metric)}"
        return self.dataset / table / f"cluster={group}" / f"metric={metric}"

    def lock(self, name: str):  # -> filelock.FileLock
        """An inter-process lock for one conversion or partition of this area."""
        return lock(f"{self.name}-{name}" if self.name else name)


def upstream() -> Area:
    """Verified downloads: conversions keyed by sha256, the dataset users fetch into."""
    return Area(root() / "converted", dataset_root(), "")


def local_area(override: Path) -> Area:
    """A user's local copy: its own dataset per path given, conversions keyed by file identity.

    The dataset folder is named after the path given (resolved), so two local
    copies, even in two processes at once, never share a partition.
    """
    resolved = str(override.resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", override.resolve().name)[:40].strip("._") or "root"
    base = root() / "local"
    return Area(base / "converted", base / "parquet" / f"{label}-{digest}", f"local-{digest}")


def converted_dir(sha256: str) -> Path:
    """Conversion of one verified file, keyed by its content and the converter version."""
    return upstream().converted_dir(sha256)


def partition_dir(table: str, group: str, metric: str) -> Path:
    """The folder holding one metric's months (one server group's for IPMI)."""
    return upstream().partition_dir(table, group, metric)


def server_group(ipmi_metric: str) -> str:
    """``GPU_AB_Power`` → ``GPU_AB`` (the IPMI file names a group of server models)."""
    return ipmi_metric.removesuffix("_Power")


def _owned(name: str) -> str:
    """A name under ``tmp/`` that carries its owner, as the download layer's temporaries do
    (``<name>.tmp-<pid>``): what a killed process left is found and removed."""
    return f"{name}-{uuid.uuid4().hex[:12]}.tmp-{os.getpid()}"


@contextlib.contextmanager
def work_dir(label: str) -> Iterator[Path]:
    """A fresh folder under ``tmp/`` that is removed on exit unless it was moved away."""
    path = root() / "tmp" / _owned(label)
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def spill_dir() -> Path:
    """DuckDB's spill folder for this process (``tmp/duckdb-….tmp-<pid>``): a killed
    conversion's spill files go with the rest of its leftovers."""
    path = root() / "tmp" / f"duckdb.tmp-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


_OLD_LEFTOVER_S = 24 * 3600  # named before owners were recorded: removed after a day


def clean_leftovers() -> list[Path]:
    """Remove what killed conversions left under ``tmp/`` (partial Parquet, spill files).

    Entries whose owning process is gone are removed at once; entries from before
    owners were recorded (no ``.tmp-<pid>``) once they are a day old. Run before
    each conversion and by ``mltraces verify``.
    """
    from mltraces.download.cleanup import OWNED, entries, remove_leftover, remove_orphans

    folder = root() / "tmp"
    removed = remove_orphans(folder)
    now = time.time()
    for entry in entries(folder):
        if OWNED.search(entry.name) is None and _age(entry, now) > _OLD_LEFTOVER_S \
                and remove_leftover(entry):
            removed.append(entry)
    return removed


def _age(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except OSError:
        return 0.0


def lock(name: str):  # -> filelock.FileLock
    """An inter-process lock for one conversion or one partition."""
    from filelock import FileLock

    path = root() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path))


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False when unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return result == 0


def replace_dir(new: Path, final: Path) -> None:
    """Put folder ``new`` at ``final``; readers see the old or the new folder, never a mix.

    With no old folder this is one rename. Otherwise the two are exchanged
    atomically where the OS can (Linux), else the old one is renamed away first
    (readers may then briefly see the partition missing, never half-written).
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    if not final.exists():
        os.rename(new, final)
        return
    if _exchange(new, final):
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old contents
        return
    trash = new.with_name(new.name + ".old")
    os.rename(final, trash)
    os.rename(new, final)
    shutil.rmtree(trash, ignore_errors=True)


def remove_dir(path: Path) -> None:
    """Remove a partition folder so readers never see it half-deleted."""
    if not path.exists():
        return
    trash = root() / "tmp" / _owned("removed")
    trash.parent.mkdir(parents=True, exist_ok=True)
    os.rename(path, trash)
    shutil.rmtree(trash, ignore_errors=True)


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link ``source`` to ``target`` (no extra disk), copying where links fail."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
