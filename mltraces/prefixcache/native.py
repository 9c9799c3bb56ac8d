"""The prefix cache's core: a C extension built by Cython at install, or the same source as Python.

:mod:`.cachecore` is written in Cython's pure Python mode; ``pip install``
compiles it ahead of time (``setup.py``, which writes the source's sha256 beside
the extension). Which one runs is decided here, once per process: the source
runs when ``MLTRACES_INTERPRETED=1`` is set (the tests compare the two), when
there is no extension, or when the extension was built from another version
of the source (after an edit in an editable install, until ``pip install -e .``
compiles it again). The scheduling engine decides the same way for its cores
(:mod:`mltraces.scheduling.native`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from mltraces import config

CORE = "cachecore"
PACKAGE = __name__.rpartition(".")[0]
FOLDER = Path(__file__).parent


@dataclass(frozen=True)
class Build:
    """Whether the compiled core runs, and if not, why (one line for the user)."""

    compiled: bool
    reason: str = ""


def extension() -> Path | None:
    """The built extension beside the core's source, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = FOLDER / f"{CORE}{suffix}"
        if path.is_file():
            return path
    return None


def compiled_from_source(path: Path, source: Path) -> bool:
    """Whether ``path`` was built from ``source`` as it is now (its ``.sha256`` stamp)."""
    try:
        recorded = Path(f"{path}.sha256").read_text().strip()
    except OSError:
        return False
    return recorded == hashlib.sha256(source.read_bytes()).hexdigest()


@cache
def build() -> Build:
    """Whether this process runs the compiled core (decided once)."""
    if config.interpreted():
        return Build(False, "MLTRACES_INTERPRETED is set")
    path = extension()
    if path is None:
        return Build(False, "it was not compiled at install (no C compiler?); "
                            "`pip install -e .` with one compiles it")
    if not compiled_from_source(path, FOLDER / f"{CORE}.py"):
        return Build(False, f"{CORE}.py changed since it was compiled; "
                            "`pip install -e .` compiles it again")
    return Build(True)


def notice() -> str | None:
    """One line to print before a replay that runs interpreted; None when compiled."""
    state = build()
    if state.compiled:
        return None
    return f"the prefix-cache replay runs as plain Python, about 100 times slower: {state.reason}"


@cache
def source() -> ModuleType:
    """The core's source run as Python (a module of its own: never the extension)."""
    spec = importlib.util.spec_from_file_location(f"{PACKAGE}._{CORE}_source",
                                                  FOLDER / f"{CORE}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def core() -> ModuleType:
    """The core this process runs: the extension when :func:`build` allows it, else
    :func:`source`."""
    if build().compiled:
        return importlib.import_module(f"{PACKAGE}.{CORE}")
    return source()


__all__ = ["Build", "build", "core", "extension", "notice", "source"]
