"""The prefix cache's core: a C extension built by Cython at install, or the same source as Python.

:mod:`.cachecore` is written in Cython's pure Python mode; whether the extension or the
source runs is decided once per process, as :class:`mltraces.compiled.Cores` describes
(the scheduling engine's cores are another such set). :func:`core` gives the module to
call; :func:`source` the source run as Python even where the extension runs (the tests
compare the two).
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

from mltraces.compiled import Build, Cores

CORE = "cachecore"
PACKAGE = __name__.rpartition(".")[0]
FOLDER = Path(__file__).parent
SET = Cores(PACKAGE, FOLDER, (CORE,), "the prefix-cache replay")

build = SET.build


def extension() -> Path | None:
    """The built extension beside the core's source, if there is one."""
    return SET.extension(CORE)


def notice() -> str | None:
    """One line to print before a replay that runs interpreted; None when compiled."""
    return SET.notice(plural=False)


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
