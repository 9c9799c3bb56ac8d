"""Conversion itself: run a table's reader into a scratch folder, record provenance, rename.

The reader writes a temporary file (``<target>.tmp-PID``) and may use a scratch
folder (``convert-PID-*``); both go whatever happens, and those of a killed run
are removed once its process is gone. The Parquet is renamed into place first,
then its record is written: the record marks a complete conversion. A full
disk or an unwritable cache is one :class:`ConversionError`, never a bad row.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from mltraces.catalog import store, upkeep
from mltraces.catalog.plan import Plan
from mltraces.catalog.problems import disk_problem
from mltraces.catalog.protocol import FileReader, ReadRequest
from mltraces.catalog.store import CONVERTER_VERSION, Built
from mltraces.logs import get_logger
from mltraces.schema import TableSchema

log = get_logger(__name__)

__all__ = ["convert_table"]


def convert_table(schema: TableSchema, reader: FileReader, plan: Plan, target: Path) -> Built:
    """Convert ``plan``'s inputs with ``reader`` into ``target`` and record where they came from.

    Called under ``target``'s lock. Inputs are stamped before they are read, so a
    file changed during the conversion no longer matches its stamp afterwards.
    """
    upkeep.clean_orphans(target.parent)
    inputs = plan.load()
    # before reading: a later change shows (an archive once, however many members it gives)
    read = dict.fromkeys(p for i in inputs for p in (i.path, i.header) if p is not None)
    stamps = [store.InputStamp.of(p) for p in read]
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    work = Path(tempfile.mkdtemp(prefix=f"convert-{os.getpid()}-", dir=target.parent))
    started = time.perf_counter()
    try:
        result = _run(reader, ReadRequest(schema, inputs, tmp, work))
        record = store.new_record(
            table=schema.name, origin=plan.origin, verified=plan.verified, rows=result.rows,
            inputs=[i.label for i in inputs], input_keys=plan.keys, identity=plan.identity,
            schema_sha256=schema.digest, converter=CONVERTER_VERSION,
            warnings=[w._asdict() for w in result.warnings], parquet_size=tmp.stat().st_size,
            parquet_sha256=store.file_sha256(tmp), stamps=stamps)
        os.replace(tmp, target)
        store.write_record(target, record)
    except OSError as error:
        raise disk_problem(schema.name, target.parent, error) or error from None
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    log.info("converted %s (%d rows) in %.1f s", schema.name, result.rows,
             time.perf_counter() - started)
    for warning in result.warnings:
        log.warning("%s: schema drift: %s", schema.name, warning)
    return Built(schema, target, plan.verified, plan.origin, result.rows,
                 tuple(i.label for i in inputs), tuple(result.warnings))


def _run(reader: FileReader, request: ReadRequest) -> Any:
    """Run a reader; a disk or permission failure inside it becomes one clear error."""
    try:
        return reader.convert(request)
    except OSError as error:
        problem = disk_problem(request.schema.name, request.out.parent, error)
        if problem is None:
            raise
        raise problem from None
