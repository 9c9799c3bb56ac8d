"""Synthetic copies of upstream files, in their exact upstream format, found by scanning.

Tests and benchmarks cannot download what is absent here (a 1 GB Philly tarball,
AcmeTrace's 100 MB job traces), so each source writes look-alikes of its own
files: a source folder may hold ``synthetic.py`` with

    WRITERS = {"acme/trace_seren.csv": write_seren_trace, ...}

mapping registry file ids of that source to writers
``write(path, rows=None, seed=0) -> Path``: write the file at ``path`` in the
exact upstream format (same columns, value formats, time offsets, archive
members and cross-column relations as the published file), about ``rows`` rows
(None: the writer's own test size), deterministic for a given ``(rows, seed)``.
Nothing in ``tests/`` lists which source has which writer: this module finds
them, and the tests ask it for every table whose files are absent.

Three ways to use them:

- :func:`write_file`: one file, under its published name;
- :func:`write_tables`: every file of some tables, as ``{table: path}`` for
  ``connect(local=...)`` (checked against the schema, ``unverified``);
- :func:`synthetic_mirror`: a mirror folder laid out ``HOST/PATH`` plus a registry
  whose pins are the synthetic files' own hashes, so the whole path (download,
  verification, unpacking, catalog) runs as on the real files::

      sources = synthetic_mirror(tmp / "mirror", ["acme/trace_kalos.csv"])
      mltraces.registry.set_override(sources)          # and MLTRACES_MIRROR=tmp/mirror

>>> "acme/trace_seren.csv" in writers()
True
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mltraces.errors import RegistryError

if TYPE_CHECKING:
    from mltraces.registry import RemoteFile, Source

SYNTHETIC_MODULE = "synthetic"
Writer = Callable[..., Path]


@cache
def writers() -> dict[str, Writer]:
    """Every source's writers by registry file id (scanned once; each id checked)."""
    from mltraces.registry import source_folders

    found: dict[str, Writer] = {}
    for folder in source_folders():
        found.update(_source_writers(folder))
    return found


def _source_writers(folder: Path) -> Mapping[str, Writer]:
    """One source folder's writers (its ``synthetic.py`` runs only when this is asked)."""
    from mltraces.registry import load_source, source_module

    module = source_module(folder.name, SYNTHETIC_MODULE)
    if module is None:
        return {}
    table = getattr(module, "WRITERS", None)
    where = f"{folder / SYNTHETIC_MODULE}.py"
    if not isinstance(table, Mapping) or not all(callable(w) for w in table.values()):
        raise RegistryError(f"{where}: WRITERS must map registry file ids to writers "
                            "write(path, rows=None, seed=0) -> Path")
    ids = {f.id for f in load_source(folder).files}
    unknown = sorted(set(table) - ids)
    if unknown:
        raise RegistryError(f"{where}: WRITERS names files {unknown} that "
                            f"{folder.name}/source.json does not register")
    return table


def writer(file_id: str) -> Writer:
    """The writer of one registry file (only its own source's ``synthetic.py`` runs); the
    error names the files that have one."""
    from mltraces.registry import get_file, get_source

    try:
        source = get_source(get_file(file_id).source)
    except KeyError:
        source = None
    table = _source_writers(source.folder) if source is not None and source.folder else {}
    if file_id not in table:
        table = writers()
    if file_id not in table:
        raise KeyError(f"no synthetic writer for {file_id!r}; a source adds one in its folder's "
                       f"{SYNTHETIC_MODULE}.py (WRITERS); files with one: "
                       f"{', '.join(sorted(table))}")
    return table[file_id]


def file_seed(file_id: str, seed: int) -> int:
    """A seed of its own per file, stable whatever other files exist (crc32 of the id)."""
    return seed + zlib.crc32(file_id.encode()) % 100_000


def write_file(file_id: str, folder: str | Path, rows: int | None = None, seed: int = 0) -> Path:
    """Write a synthetic copy of ``file_id`` into ``folder`` under its published name."""
    from mltraces.registry import get_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / get_file(file_id).filename
    return Path(writer(file_id)(target, rows, file_seed(file_id, seed)))


def can_write(table: str) -> bool:
    """True when every file of ``table`` has a writer."""
    from mltraces.schema import get_schema

    files = get_schema(table).file_ids
    return bool(files) and all(f in writers() for f in files)


def write_tables(folder: str | Path, tables: Iterable[str], seed: int = 0,
                 rows: int | Mapping[str, int] | None = None) -> dict[str, Path]:
    """Synthetic inputs of ``tables`` as ``{table: path}`` for ``connect(local=...)``.

    A table read from one file gets that file; a table read from several gets a
    folder holding them under their published names (so does a file whose published
    name another file took already: BurstGPT publishes ``BurstGPT_1.csv`` three times).
    ``rows`` is one size for every file, or sizes by file id (others: each writer's own).
    """
    from mltraces.registry import get_file
    from mltraces.schema import get_schema

    folder = Path(folder)
    written: dict[str, Path] = {}
    out: dict[str, Path] = {}
    names: dict[str, str] = {}  # published name -> the file id written under it in ``folder``
    for table in tables:
        files = get_schema(table).file_ids
        name = get_file(files[0]).filename
        shared = len(files) == 1 and names.setdefault(name, files[0]) == files[0]
        target = folder if shared else folder / table
        for file_id in files:
            if file_id not in written or written[file_id].parent != target:
                size = rows.get(file_id) if isinstance(rows, Mapping) else rows
                written[file_id] = write_file(file_id, target, size, seed)
        out[table] = written[files[0]] if len(files) == 1 else target
    return out


def synthetic_mirror(root: str | Path, file_ids: Iterable[str], seed: int = 0,
                     rows: int | Mapping[str, int] | None = None) -> dict[str, Source]:
    """Write ``file_ids`` under ``root/HOST/PATH`` and return the registry re-pinned to them.

    The returned ``{name: Source}`` keeps every source as shipped except the
    synthetic files, whose size, sha256, git blob id and archive members are those
    of the bytes written; pass it to ``mltraces.registry.set_override`` and point
    ``MLTRACES_MIRROR`` at ``root``.
    """
    from mltraces.registry import all_sources, get_file

    root = Path(root)
    pinned = {}
    for file_id in file_ids:
        remote = get_file(file_id)
        parts = urlsplit(remote.url)
        target = root / parts.netloc / parts.path.lstrip("/")
        size = rows.get(file_id) if isinstance(rows, Mapping) else rows
        written = Path(writer(file_id)(_ready(target), size, file_seed(file_id, seed)))
        pinned[file_id] = _repinned(remote, written)
    return {name: dataclasses.replace(source, files=tuple(pinned.get(f.id, f)
                                                          for f in source.files))
            for name, source in all_sources().items()}


def _ready(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _repinned(remote: RemoteFile, path: Path) -> RemoteFile:
    """``remote`` pinned to the file at ``path``: size, sha256, git blob, archive members."""
    from mltraces.hashing import digest

    found = digest(path)
    members = remote.members
    if remote.archive and not members:  # a listing of what was written: nothing else is let in
        members = tuple(_written_members(path))
    elif remote.archive:  # the same members, pinned as the registry pins them (size, sha256)
        members = tuple(_repinned_member(path, m) for m in members)
    return dataclasses.replace(remote, size=found.size, sha256=found.sha256,
                               git_blob=found.git_blob, members=members, mirrors=())


def _written_members(path: Path) -> list[tuple[str, int]]:
    """(name, size) of every file in the archive at ``path`` (tar or zip)."""
    import tarfile
    import zipfile

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zipped:
            return sorted((i.filename, i.file_size) for i in zipped.infolist() if not i.is_dir())
    with tarfile.open(path) as archive:
        return sorted((m.name, m.size) for m in archive.getmembers() if m.isfile())


def _repinned_member(path: Path, member: Any) -> Any:
    """``member`` of the archive at ``path`` with the size and sha256 of the bytes written."""
    import hashlib

    from mltraces.download.archives import Limits, open_member

    with open_member(path, member.name, Limits.local()) as stream:
        data = stream.read()
    return member._replace(size=len(data) if member.size is not None else None,
                           sha256=hashlib.sha256(data).hexdigest() if member.sha256 else None)
