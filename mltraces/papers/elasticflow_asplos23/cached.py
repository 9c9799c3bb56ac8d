"""ElasticFlow's replays for its figures, cached: computed once per catalog input and scheduler.

Shared by :mod:`.figures` (Figs. 7(a), 8(b)) and :mod:`.generated` (Figs. 9-11):
a replay is stored beside the catalog Parquet it reads, keyed by those files
and the scheduler's source, so a warm figure run does not replay again.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mltraces.figures import store

if TYPE_CHECKING:
    import duckdb


def scheduler_version() -> str:
    """Hash of the scheduler's source: a changed scheduler never reuses cached replays."""
    return store.source_version("mltraces.scheduling")


def cached_replay(con: duckdb.DuckDBPyConnection, inputs: str, parts: list[str],
                  replay: Any) -> Path:
    """The Parquet of ``replay()`` (a pandas frame), computed once per inputs and scheduler."""
    files = store.identity(con, inputs)
    if files is None:
        raise LookupError(f"{inputs} are not catalog tables on this connection")

    def write(path: Path) -> None:
        con.register("_replay", replay())
        try:
            con.execute(f"COPY (SELECT * FROM _replay) TO {store.literal(path)} (FORMAT parquet)")
        finally:
            con.unregister("_replay")

    return store.stored_path(files, [*parts, scheduler_version()], write)
