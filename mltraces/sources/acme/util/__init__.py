"""AcmeTrace's raw utilization metrics (~80 GB on HuggingFace) as long-form Parquet and SQL.

The HuggingFace dataset ``Qinghao/AcmeTrace`` publishes 15-second DCGM GPU
metrics and Prometheus node metrics as wide CSVs (``Time`` plus one column per
GPU ``<ip>-<gpu>`` or per node ``<ip>``, mostly empty) and IPMI power as long
CSVs. This package turns them into one hive-partitioned Parquet dataset::

    <cache>/acme-util/parquet/gpu_metrics/cluster=kalos/metric=GPU_UTIL/month=2023-07/*.parquet

and three DuckDB views over it (``acme.gpu_metrics``, ``acme.node_metrics``,
``acme.ipmi_power``).

>>> from mltraces.sources.acme.util import fetch_util, attach_views, util_cdf_from_long
>>> fetch_util("seren", ["GPU_UTIL"], since="2023-07-01", until="2023-07-31")  # doctest: +SKIP
>>> con = duckdb.connect(); attach_views(con)                                 # doctest: +SKIP
>>> x, y = util_cdf_from_long(con, "seren", "GPU_UTIL")                        # doctest: +SKIP

Modules: :mod:`.fetching` (selection, download, disk checks), :mod:`.convert`
(wide → long, once per verified file), :mod:`.assemble` (merge split files,
de-duplicate, atomic swap), :mod:`.views`, :mod:`.cdf`, :mod:`.layout` (paths).
Heavy libraries (DuckDB, pyarrow) load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "fetch_util": "mltraces.sources.acme.util.fetching",
    "select": "mltraces.sources.acme.util.fetching",
    "UtilFetch": "mltraces.sources.acme.util.fetching",
    "convert": "mltraces.sources.acme.util.convert",
    "Settings": "mltraces.sources.acme.util.convert",
    "assemble": "mltraces.sources.acme.util.assemble",
    "attach_views": "mltraces.sources.acme.util.views",
    "util_cdf_from_long": "mltraces.sources.acme.util.cdf",
    "dataset_root": "mltraces.sources.acme.util.layout",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module = importlib.import_module(_LAZY[name])
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(module, name)
