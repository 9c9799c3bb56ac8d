"""Sources whose upstream files are absent here, served synthetic over a loopback mirror.

A source folder that ships ``synthetic.py`` with ``write(root, jobs=..., seed=...)``
(found by scanning, like everything else about a source) can be exercised end to
end: its generator writes every registry file in the upstream format, laid out
as a mirror (``<host>/<url path>``); :func:`pinned_to` gives the registry the
synthetic files' own pins (size, sha256, git blob, and each listed archive
member's size and sha256), exactly where the real entry pins them; and a
loopback server on 127.0.0.1 serves the folder as ``MLTRACES_MIRROR``. The
catalog then fetches, verifies, converts and validates them like the real ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import serve_directory

from mltraces.hashing import digest
from mltraces.registry import DATASETS_DIR, RemoteFile, Source, all_sources, set_override


def generators() -> dict[str, Any]:
    """Each source folder's ``synthetic`` module, by source name."""
    found = {}
    for path in sorted(DATASETS_DIR.glob("*/synthetic.py")):
        module = importlib.import_module(f"mltraces.datasets.{path.parent.name}.synthetic")
        if callable(getattr(module, "write", None)):
            found[path.parent.name] = module
    return found


def _member_bytes(archive: Path, name: str) -> bytes:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped:
            return zipped.read(name)
    with tarfile.open(archive) as tar:
        member = tar.extractfile(name)
        assert member is not None, f"{archive.name} lacks {name}"
        return member.read()


def _repinned(file: RemoteFile, path: Path) -> RemoteFile:
    """``file`` pinned to the synthetic bytes at ``path``, with the same kinds of pin."""
    found = digest(path)
    members = []
    for member in file.members:
        data = _member_bytes(path, member.name)
        members.append(member._replace(
            size=len(data) if member.size is not None else None,
            sha256=hashlib.sha256(data).hexdigest() if member.sha256 else None))
    return dataclasses.replace(
        file, size=found.size if file.size is not None else None,
        sha256=found.sha256 if file.sha256 else None,
        git_blob=found.git_blob if file.git_blob else None, members=tuple(members))


def pinned_to(source: Source, files: dict[str, Path], rows: dict[str, int] | None = None
              ) -> Source:
    """``source`` with every file that has a synthetic copy pinned to that copy, and the
    synthetic tables' row counts as its expected rows (a ``validate`` rule)."""
    repinned = tuple(_repinned(f, files[f.url]) if f.url in files else f for f in source.files)
    expected = {t: n for t, n in source.expected_rows.items() if t not in (rows or {})}
    expected.update({t: n for t, n in (rows or {}).items() if t in source.expected_rows})
    return dataclasses.replace(source, files=repinned, expected_rows=expected)


@contextmanager
def served(root: Path, sources: dict[str, Source], monkeypatch: Any) -> Iterator[str]:
    """The registry with ``sources`` replaced, ``root`` served as the mirror; yields its URL."""
    url, server = serve_directory(root)
    monkeypatch.setenv("MLTRACES_MIRROR", url)
    set_override({**all_sources(), **sources})
    try:
        yield url
    finally:
        set_override(None)
        server.shutdown()
        server.server_close()


def synthetic_source(name: str, root: Path, **options: Any) -> tuple[Source, Any]:
    """Write ``name``'s synthetic files under ``root``; the repinned source and what was written."""
    written = generators()[name].write(root, **options)
    return pinned_to(all_sources()[name], written.files, written.rows), written

