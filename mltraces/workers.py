"""Process pools whose workers start clean: the one way mltraces runs work on several cores.

Why not ``fork`` (Linux's default): the parent usually holds a DuckDB
connection and pyarrow threads, and a child forked from it inherits their
half-held locks; the first garbage collection in such a child (numba's import
on ElasticFlow's first replay) crashed with a segfault. A forkserver is a
single-threaded process that forks the workers, and can import heavy modules
once first (``preload``) so each worker starts warm. Platforms without it
spawn fresh interpreters.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["process_pool"]


def process_pool(
    workers: int,
    *,
    preload: Sequence[str] = (),
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes started from a forkserver (spawned where there is none).

    ``preload`` names modules the forkserver imports before forking (it applies
    when this call starts the forkserver; an already running one keeps its own).
    Work and its arguments are pickled, so functions and classes must be
    importable by name (a class defined in a notebook cell is not).
    """
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if preload and "forkserver" in methods:
        context.set_forkserver_preload(list(preload))
    return ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=initializer, initargs=initargs)
