"""mltraces: public GPU-cluster traces, verified, in SQL, simulated and plotted.

>>> import mltraces
>>> con = mltraces.connect(["itp"])  # doctest: +SKIP
>>> con.sql("SELECT cluster, count(*) FROM itp.jobs GROUP BY 1")  # doctest: +SKIP
>>> con.sql("SELECT * FROM mltraces.status")                      # doctest: +SKIP

Heavy modules (DuckDB, pandas) load on first use, so importing the package and
running ``mltraces --help`` stay fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from mltraces import _moved

__version__ = "0.1.0"

_moved.install()  # old module names (mltraces.datasets, ...) work for one more release

# public name -> "module:attribute"
_LAZY = {
    "connect": "mltraces.catalog:connect",
    "tables": "mltraces.catalog:tables",
    "validate": "mltraces.catalog.validation:validate",
    "fetch": "mltraces.download:fetch",
    "fetch_file": "mltraces.download:fetch_file",
    "sources": "mltraces.sources:",
    "simulate": "mltraces.workloads.recurring:simulate",
    "schedule": "mltraces.scheduling:schedule",
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str) -> Any:
    try:
        module_name, _, attribute = _LAZY[name].partition(":")
    except KeyError:
        raise AttributeError(f"module 'mltraces' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
