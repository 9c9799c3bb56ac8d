"""The sources mltraces knows, one module each; adding a trace = adding a module.

Sources are loaded when first asked for, never at import time, so
``mltraces --help`` stays instant.
"""

from __future__ import annotations

import importlib
from functools import cache

from mltraces.registry import RemoteFile, Source

SOURCE_MODULES = ("zeus", "itp", "acme")

_override: dict[str, Source] | None = None


@cache
def _builtin() -> dict[str, Source]:
    found = {}
    for module_name in SOURCE_MODULES:
        module = importlib.import_module(f"mltraces.sources.{module_name}")
        found[module.SOURCE.name] = module.SOURCE
    return found


def all_sources() -> dict[str, Source]:
    """Every known source by name (the test override when one is active)."""
    return dict(_override) if _override is not None else _builtin()


def get_source(name: str) -> Source:
    """The source called ``name``; the error lists the valid names."""
    sources = all_sources()
    try:
        return sources[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; known sources: {', '.join(sources)}") from None


def all_files() -> dict[str, RemoteFile]:
    """Every registered file by id."""
    return {f.id: f for s in all_sources().values() for f in s.files}


def get_file(file_id: str) -> RemoteFile:
    """The file with this id (``itp/raw-traces.tar.gz``); the error suggests ids."""
    files = all_files()
    if file_id in files:
        return files[file_id]
    matches = [f for f in files.values() if f.filename == file_id]
    if len(matches) == 1:
        return matches[0]
    hint = ", ".join(sorted(i for i in files if file_id in i)[:5]) or "run `mltraces list`"
    raise KeyError(f"unknown file {file_id!r}; did you mean: {hint}")


def set_override(sources: dict[str, Source] | None) -> None:
    """Replace the registry (tests use this for synthetic files); None restores it."""
    global _override
    _override = dict(sources) if sources is not None else None
