"""Drawing and saving figures, in this process or in a pool of worker processes.

Saving is most of the cost of a figure run (Agg rasterising a 200-dpi PNG,
the PDF backend subsetting and embedding TrueType fonts), and it is CPU-bound
Python: threads do not help, processes do. The main process computes every
figure's data (SQL on its catalog connection) and hands the small frames to
workers that only plot and save. Workers come from a *forkserver* that has
imported matplotlib and pandas once, so a worker costs a fork, not an import,
and never inherits the main process's DuckDB threads.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: Modules the forkserver imports once, so each worker starts warm.
PRELOAD = ["matplotlib", "matplotlib.figure", "pandas", "mltraces.figures.style"]


def mark_unverified(figure: Any, tables: list[str]) -> None:
    """A red line above the figure naming the inputs that were not hash-verified."""
    from mltraces.figures import style

    with style.context():
        figure.text(  # above the figure: the tight bounding box grows to include it
            0.0,
            1.0,
            "Drawn from unverified local files: " + ", ".join(tables),
            fontsize=6,
            color="#aa0000",
            ha="left",
            va="bottom",
        )


def plot(name: str, frame: pd.DataFrame, unverified: list[str]) -> Any:
    """Figure ``name`` drawn from its data ``frame``, marked when inputs are unverified."""
    from mltraces.figures import get

    figure = get(name).plot(frame)
    if unverified:
        mark_unverified(figure, unverified)
    return figure


def render(name: str, frame: pd.DataFrame, unverified: list[str], output_dir: str) -> list[Path]:
    """Plot ``name`` and write ``<output_dir>/<name>.png`` and ``.pdf`` (a worker's task)."""
    from mltraces.figures import style

    return style.save(plot(name, frame, unverified), Path(output_dir) / name,
                      tight=bool(unverified))


def workers(count: int | None = None) -> int:
    """How many rendering processes to use: one per core, at most ``count``."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(count or cores or 1, cores or 1))


def pool(count: int) -> Executor:
    """A process pool of ``count`` workers forked from a preloaded forkserver."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return ProcessPoolExecutor(max_workers=count, mp_context=context)
