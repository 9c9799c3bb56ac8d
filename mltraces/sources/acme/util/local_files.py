"""Which of a user's downloaded files feed a view, and where each one sits on the Hub.

A researcher who fetched AcmeTrace with ``huggingface_hub``, git-lfs or a mirror
names a path; this module finds the utilization CSVs in it and gives each the
Hub path it stands for (``data/utilization/<cluster>/<name>``), from which
:class:`~mltraces.sources.acme.hub.HubFile` tells its table, cluster, metric
and month exactly as for a download. The rules:

- **One CSV**: its name is ``<METRIC>.csv`` or a split file ``<METRIC>-YYYY-MM.csv``
  (METRIC: letters, digits, ``_``). Its cluster is the folder holding it
  (``seren``, ``kalos`` or ``ipmi``, as on the Hub) or, for a flat folder of
  downloads, a ``<cluster>_`` prefix of its name (``seren_GPU_UTIL.csv``). Neither,
  or the two disagreeing, is an error that says how to name it.
- **A folder**: a dataset folder (the Hub repository's root, a
  ``huggingface_hub`` cache folder with one snapshot, or ``data/utilization``)
  is read as ``data/utilization/{seren,kalos,ipmi}/*.csv``; any other folder is
  read as a folder of such CSVs (``.../seren/``, or ``seren_GPU_UTIL.csv`` names).
  Not recursive: a second copy deeper down is never taken twice.
- Each view takes only the files that feed it (the Hub's rule): DCGM metrics →
  ``gpu_metrics``, ``NODE_*`` → ``node_metrics``, ``ipmi/`` → ``ipmi_power``.

Paths are taken literally (``[``, ``*``, spaces and commas are plain characters)
and not resolved for naming: a ``huggingface_hub`` snapshot file is a symlink to
``blobs/<sha256>``, and only the link's own path says where it belongs.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from mltraces.errors import SchemaError
from mltraces.local_paths import check_local_path
from mltraces.logs import get_logger
from mltraces.sources.acme.hub import UTIL_FOLDER, HubFile

log = get_logger(__name__)

GROUPS = ("seren", "kalos", "ipmi")
_NAME = re.compile(
    r"^(?:(?P<group>seren|kalos|ipmi)_)?(?P<stem>[A-Za-z0-9_]+(?:-\d{4}-\d{2}(?:-\d{2})?)?)\.csv$",
    re.IGNORECASE,
)
_METRIC_LIKE = re.compile(r"^[A-Z][A-Za-z0-9_]*(?:-\d{4}-\d{2}(?:-\d{2})?)?\.csv$")
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"

#: what each view expects, for error messages
EXPECTED = {
    "gpu_metrics": "DCGM metrics, {seren,kalos}/<METRIC>.csv such as seren/GPU_UTIL.csv "
    "(not NODE_*)",
    "node_metrics": "node metrics, {seren,kalos}/NODE_<METRIC>.csv such as "
    "seren/NODE_CPU_UTILIZATION.csv",
    "ipmi_power": "IPMI power, ipmi/<GROUP>_Power.csv such as ipmi/GPU_AB_Power.csv",
}
_WHERE = ("a dataset folder (holding data/utilization/), data/utilization itself, a seren/, "
          "kalos/ or ipmi/ folder, a folder of <cluster>_<METRIC>.csv files, or one such CSV")

__all__ = ["EXPECTED", "GROUPS", "LocalFile", "find"]


class LocalFile(NamedTuple):
    """One local CSV and the Hub file it stands for.

    Its version is what the job tables' input stamps hold: size, mtime, ctime and
    inode. The ctime is set by the kernel on every write and cannot be set back
    (``touch -d`` restores the mtime only), so a file edited in place with its
    size and mtime restored is still a new version; a replaced file has a new inode.
    """

    path: Path  # absolute, symlinks kept (its name says where it belongs)
    hub: HubFile  # its place on the Hub (size: the local file's; no hashes)
    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0

    @property
    def real(self) -> Path:
        """The file itself (links followed): its identity."""
        return self.path.resolve()

    @property
    def version(self) -> tuple[int, int, int, int]:
        """Size, mtime, ctime and inode: any write or replacement changes one of them."""
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode)

    @property
    def key(self) -> str:
        """Conversion key: which file (resolved path), which version, which table."""
        version = "\0".join(map(str, self.version))
        identity = f"{self.real}\0{version}\0{self.hub.table}"
        return "local-" + hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()

    def changed(self) -> bool:
        """True when the file on disk is no longer the version this record describes."""
        try:
            stat = self.path.stat()
        except OSError:
            return True
        return _version(stat) != self.version


def _version(stat: os.stat_result) -> tuple[int, int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


# --------------------------------------------------------------------------- one file


def _group_of(path: Path, named: str | None) -> str | None:
    """The cluster a file belongs to: its folder's name or its ``<cluster>_`` prefix."""
    folder = path.parent.name.lower()
    from_folder = folder if folder in GROUPS else None
    if from_folder and named and from_folder != named:
        raise SchemaError(
            f"{path}: its folder says {from_folder} but its name says {named}; rename the file "
            f"to {path.name.split('_', 1)[1]} or move it to a {named}/ folder"
        )
    return from_folder or named


def _unplaced(path: Path) -> str:
    return (f"{path}: cannot tell its cluster. Put it in a folder named seren, kalos or ipmi (as "
            f"on the Hub: data/utilization/seren/{path.name}) or name it seren_{path.name}")


def _bad_name(path: Path) -> str:
    return (f"{path}: not a utilization file name; expected <METRIC>.csv or <METRIC>-YYYY-MM.csv "
            "as on the Hub (e.g. GPU_UTIL.csv, SM_ACTIVE-2023-07.csv), METRIC being letters, "
            "digits and _")


def _record(path: Path, group: str, stem: str) -> LocalFile:
    stat = path.stat()
    hub = HubFile(f"{UTIL_FOLDER}/{group}/{stem}.csv", stat.st_size, None, None)
    return LocalFile(path, hub, *_version(stat))


def describe(path: Path) -> LocalFile:
    """The Hub file a local CSV stands for, from its path alone (see the module's rules)."""
    match = _NAME.match(path.name)
    if match is None:
        raise SchemaError(_bad_name(path))
    group = _group_of(path, match["group"] and match["group"].lower())
    if group is None:
        raise SchemaError(_unplaced(path))
    return _record(path, group, match["stem"])


def _check_not_pointer(files: Iterable[LocalFile]) -> None:
    """Refuse Git LFS pointer files (a clone without ``git lfs pull``) with the command."""
    pointers = []
    for file in files:
        if file.size < 1024:
            with file.path.open("rb") as handle:
                if handle.read(len(_LFS_POINTER)) == _LFS_POINTER:
                    pointers.append(file)
    if pointers:
        shown = ", ".join(str(f.path) for f in pointers[:3])
        more = f" and {len(pointers) - 3} more" if len(pointers) > 3 else ""
        include = ",".join(f.hub.path for f in pointers[:3])
        raise SchemaError(
            f"{shown}{more}: Git LFS pointer file(s), not the data; in the clone run "
            f"`git lfs pull --include \"{include}\"` (or --include \"data/utilization/**\")"
        )


# --------------------------------------------------------------------------- folders


def _snapshot(folder: Path) -> Path:
    """A ``huggingface_hub`` cache folder's only snapshot (``snapshots/<commit>``)."""
    snapshots = sorted(p for p in (folder / "snapshots").iterdir() if p.is_dir())
    if len(snapshots) != 1:
        names = ", ".join(p.name for p in snapshots) or "none"
        raise SchemaError(
            f"{folder} is a huggingface_hub cache folder with {len(snapshots)} snapshots "
            f"({names}); give one of them: {folder / 'snapshots' / '<commit>'}"
        )
    return snapshots[0]


def scan_dirs(folder: Path) -> list[Path]:
    """The folders whose CSVs are looked at, by what ``folder`` is (see the module's rules)."""
    if (folder / "snapshots").is_dir() and not (folder / "data").is_dir():
        folder = _snapshot(folder)
    base = folder / "data" / "utilization"
    if not base.is_dir():
        base = folder
    groups = [base / g for g in GROUPS if (base / g).is_dir()]
    return groups or [folder]


def _csvs(folder: Path) -> list[Path]:
    """CSV files directly in ``folder`` (links to files count: the Hub cache is all links)."""
    return sorted(p for p in folder.iterdir() if p.name.lower().endswith(".csv") and p.is_file())


def _placed(path: Path, skipped: list[str]) -> LocalFile | None:
    """The record of a CSV in a scanned folder, or None (noted in ``skipped``) for one that
    is not a utilization file or whose cluster cannot be told (warned if it looks like one)."""
    match = _NAME.match(path.name)
    group = match and _group_of(path, match["group"] and match["group"].lower())
    if match is None or group is None:
        skipped.append(path.name)
        if match is not None and _METRIC_LIKE.match(path.name):
            log.warning("ignoring %s", _unplaced(path))
        return None
    return _record(path, group, match["stem"])


def _unique(files: list[LocalFile]) -> list[LocalFile]:
    """Refuse two files standing for the same Hub file (which one would be meant?)."""
    seen: dict[str, LocalFile] = {}
    for file in files:
        other = seen.setdefault(file.hub.path, file)
        if other is not file:
            raise SchemaError(
                f"{other.path} and {file.path} both stand for {file.hub.path}; keep one of them"
            )
    return sorted(files, key=lambda f: f.hub.path)


def _nothing_found(table: str, path: Path, others: list[LocalFile], skipped: list[str]) -> str:
    found = [f"{f.path.name} (feeds acme.{f.hub.table})" for f in others[:5]]
    found += [f"{name} (not a utilization file name)" for name in skipped[:5]]
    return (
        f"{path} holds no CSV for acme.{table}: expected {EXPECTED[table]}, in {_WHERE}; "
        f"found {', '.join(found) if found else 'no CSV at all'}"
    )


def find(table: str, path: Path) -> list[LocalFile]:
    """The local files feeding ``acme.<table>`` at ``path`` (a CSV or a folder), sorted.

    Raises :class:`SchemaError` naming the path and what was expected when the
    path does not exist, holds nothing for this table, or names a file that
    belongs to another table.
    """
    path = Path(os.path.abspath(path))  # absolute, links kept (their names matter)
    check_local_path(f"acme.{table}", path)  # no pipe, no device, no non-UTF-8 name
    if not path.exists():
        raise SchemaError(
            f"local path for acme.{table} not found: {path} (used literally: no wildcards); "
            f"expected {_WHERE}"
        )
    if path.is_file():
        file = describe(path)
        if file.hub.table != table:
            other = f"acme.{file.hub.table}" if file.hub.table else "no table"
            raise SchemaError(
                f"{path} feeds {other}, not acme.{table} (expected {EXPECTED[table]}); "
                f"give it as --local {other}={path}"
            )
        files = [file]
    else:
        skipped: list[str] = []
        placed = [f for d in scan_dirs(path) for p in _csvs(d) if (f := _placed(p, skipped))]
        files = [f for f in placed if f.hub.table == table]
        if not files:
            others = [f for f in placed if f.hub.table != table]
            raise SchemaError(_nothing_found(table, path, others, skipped))
    _check_not_pointer(files)
    return _unique(files)
