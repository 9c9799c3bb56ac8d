"""The Zeus traces as arrays, kept beside the catalog's warm records for ``mltraces simulate``.

Why. A warm ``mltraces simulate`` spent about a third of its process importing
DuckDB, opening the catalog and reading two small tables into arrays, the same
arrays every time. When both tables are recalled from their warm build records
(:mod:`mltraces.catalog.warm`, which proves their Parquet files and everything
they came from unchanged), the arrays saved after the last full read are used
instead, and DuckDB is never imported.

The saved file is keyed like every derived file of the cache: by what it came
from (each Parquet's path, size, mtime, ctime and inode) and by the code that
made it (this module, :mod:`.recurring` and :mod:`mltraces.simulation.traces`, by size and
mtime, and numpy's
version). Any other key, an unreadable or malformed file, or a local override
means the catalog is read as before and the file written anew (atomically; one
file, replaced, so stale copies never pile up). It is loaded without pickles
and checked for every column, dtype and length before use.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mltraces.simulation.traces import (
    NAME_COLUMNS,
    POWER_COLUMNS,
    TRAIN_COLUMNS,
    TraceSet,
)
from mltraces.workloads.recurring import TRACE_TABLES

if TYPE_CHECKING:
    from mltraces.catalog.store import Built

TABLES = TRACE_TABLES
FILE_NAME = "zeus-traces.npz"
#: more rows than any Zeus trace has by far: a larger saved file is not ours
MAX_ROWS = 1_000_000
_CODE = (Path(__file__), Path(__file__).with_name("recurring.py"),
         Path(__file__).parents[1] / "simulation" / "traces.py")


def cache_file() -> Path:
    """Where the arrays live: beside the catalog's warm records."""
    from mltraces.catalog import warm

    return warm.warm_path("x").parent / FILE_NAME


def recalled_builds() -> list[Built] | None:
    """Both tables' builds if the catalog can vouch for them without rebuilding, else None."""
    from mltraces.catalog import warm
    from mltraces.schema import get_schema

    builds = [warm.recall(get_schema(name)) for name in TABLES]
    return None if any(b is None for b in builds) else builds  # type: ignore[return-value]


def current_key() -> str | None:
    """The key of the traces the catalog would serve now, or None if it cannot vouch."""
    builds = recalled_builds()
    if builds is None:
        return None
    try:
        return cache_key(builds)
    except OSError:
        return None


def cache_key(builds: list[Built]) -> str:
    """Digest of the Parquet files the arrays came from and of the code that made them."""
    digest = hashlib.sha256(f"numpy {np.__version__}\0".encode())
    for path in [b.parquet for b in builds] + list(_CODE):
        stat = os.stat(path)
        digest.update(
            f"{path}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}\0".encode()
        )
    return digest.hexdigest()


def load(key: str, path: Path | None = None) -> TraceSet | None:
    """The saved traces if ``path`` holds arrays made under ``key``, else None."""
    path = path or cache_file()
    try:
        with np.load(path, allow_pickle=False) as saved:
            if "key" not in saved.files or str(saved["key"]) != key:
                return None
            train = _columns(saved, "train", TRAIN_COLUMNS)
            power = _columns(saved, "power", POWER_COLUMNS)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error):
        return None  # missing, truncated, tampered or pickled: read the catalog instead
    if train is None or power is None:
        return None
    return TraceSet.from_arrays(train, power, labels=TRACE_TABLES)


def _columns(saved: Mapping[str, np.ndarray], part: str, names: list[str]
             ) -> dict[str, np.ndarray] | None:
    """One table's columns, each one-dimensional, equally long and of the expected kind."""
    out: dict[str, np.ndarray] = {}
    for name in names:
        array = saved[f"{part}/{name}"]
        if array.ndim != 1 or len(array) > MAX_ROWS:
            return None
        if name in NAME_COLUMNS:
            if array.dtype.kind != "U":
                return None
            array = array.astype(object)
        elif array.dtype.kind not in "if":
            return None
        out[name] = array
    lengths = {len(a) for a in out.values()}
    return out if len(lengths) <= 1 else None


def save(traces: TraceSet, key: str, path: Path | None = None) -> None:
    """Write the arrays under ``key`` atomically; a cache that cannot be written is skipped."""
    path = path or cache_file()
    arrays: dict[str, np.ndarray] = {"key": np.array(key)}
    for part, columns in (("train", traces.train_arrays), ("power", traces.power_arrays)):
        for name, array in columns.items():
            arrays[f"{part}/{name}"] = array.astype(str) if name in NAME_COLUMNS else array
    from mltraces.catalog import warm
    from mltraces.errors import UnsafePathError

    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}.npz")
    try:
        warm.writable(path.parent)  # created, and proven inside the cache
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    except (OSError, UnsafePathError):
        return
    finally:
        with contextlib.suppress(OSError):  # a read-only cache: nothing to remove
            tmp.unlink(missing_ok=True)
