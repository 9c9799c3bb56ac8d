"""Whole sources served synthetic over a loopback HTTP mirror (:mod:`mltraces.synthetic`).

For sources whose files are absent here (Philly, Helios, Alibaba PAI): every
file of the source that has a writer in its folder is written under a mirror
folder, the registry is re-pinned to the bytes written (``synthetic_mirror``),
its expected row counts become the synthetic ones, and a server on 127.0.0.1
(ephemeral port) serves the folder as ``MLTRACES_MIRROR`` until the block ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import ENV_VARS, serve_directory

from mltraces import registry, synthetic
from mltraces.catalog import connect


def written_ids(name: str) -> list[str]:
    """The files of source ``name`` that have a synthetic writer."""
    return [f.id for f in registry.get_source(name).files if f.id in synthetic.writers()]


@contextmanager
def served(root: Path, names: list[str], monkeypatch: Any, *, rows: int | None = None,
           seed: int = 0, expected: Mapping[str, int] | None = None
           ) -> Iterator[dict[str, registry.Source]]:
    """Serve ``names``' synthetic files; ``expected`` replaces those tables' expected rows."""
    ids = [i for name in names for i in written_ids(name)]
    sources = synthetic.synthetic_mirror(root, ids, seed=seed, rows=rows)
    for name in names:
        counts = {t: n for t, n in (expected or {}).items() if t.startswith(name + ".")}
        kept = {t: n for t, n in sources[name].expected_rows.items() if t not in counts}
        sources[name] = dataclasses.replace(sources[name], expected_rows={**kept, **counts})
    url, server = serve_directory(root)
    monkeypatch.setenv("MLTRACES_MIRROR", url)
    registry.set_override(sources)
    try:
        yield sources
    finally:
        registry.set_override(None)
        server.shutdown()
        server.server_close()


@contextmanager
def served_catalog(folder: Path, names: list[str], tables: list[str], *, rows: int, seed: int
                   ) -> Iterator[Any]:
    """A catalog of ``tables`` built from ``names``' synthetic files (served as :func:`served`
    serves them) in a cache of its own under ``folder``: built once for every test of a
    module that only reads it (views point at absolute Parquet paths, so it keeps working
    while each test has a fresh cache of its own)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ENV_VARS:
            patch.delenv(name, raising=False)
        patch.setenv("MLTRACES_CACHE", str(folder / "cache"))
        patch.setenv("MLTRACES_SOURCES", "")
        with served(folder / "mirror", names, patch, rows=rows, seed=seed):
            con = connect(tables=tables, strict=True)
    try:
        yield con
    finally:
        con.close()
