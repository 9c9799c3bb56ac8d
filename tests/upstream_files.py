"""What ../shared/upstream holds, read from its manifests (never from literals).

Tests use this to decide which tables can be built from the real files here and
to check the registry against the published sizes and hashes.
"""

from __future__ import annotations

import csv
from pathlib import Path

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "upstream"


#: manifests beside MANIFEST*.tsv: the LLM request traces' (read once their sources existed)
OTHER_MANIFESTS = ("REQUESTS.manifest.tsv",)


def manifest_rows(upstream: Path = UPSTREAM) -> list[dict[str, str]]:
    """Every row (url, size, sha256, git_blob_sha1) of every manifest (``MANIFEST*.tsv`` and
    :data:`OTHER_MANIFESTS`); [] when absent."""
    rows: list[dict[str, str]] = []
    manifests = [*upstream.glob("MANIFEST*.tsv"), *(upstream / n for n in OTHER_MANIFESTS)]
    for manifest in sorted(m for m in manifests if m.is_file()):
        with manifest.open() as handle:
            rows.extend(csv.DictReader(handle, delimiter="\t"))
    return rows


def tables_with_upstream_files(upstream: Path = UPSTREAM) -> list[str]:
    """Catalog tables whose every input file has a real copy in ``upstream``."""
    from mltraces.catalog import is_view_table
    from mltraces.registry import get_file
    from mltraces.schema import all_schemas

    here = {row["url"] for row in manifest_rows(upstream)}
    return sorted(name for name, schema in all_schemas().items() if not is_view_table(schema)
                  and all(get_file(f).url in here for f in schema.file_ids))


#: sources of many small files (ServeGen: 216 real ones here, 628 synthetic): their own tests
#: build them once (about 14 s of downloads or 13 s of writing per catalog), the shared real
#: and synthetic catalogs leave them out
OWN_CATALOGS = ("servegen",)


def synthetic_tables(upstream: Path = UPSTREAM) -> list[str]:
    """Catalog tables whose files are absent here but have synthetic writers in their
    source folder (:mod:`mltraces.synthetic`): what the synthetic catalogs are built from
    (but :data:`OWN_CATALOGS`' tables)."""
    from mltraces.catalog import is_view_table
    from mltraces.schema import all_schemas
    from mltraces.synthetic import can_write

    real = set(tables_with_upstream_files(upstream))
    return sorted(name for name, schema in all_schemas().items()
                  if name not in real and not is_view_table(schema) and can_write(name)
                  and schema.schema_name not in OWN_CATALOGS)
