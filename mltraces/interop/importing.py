"""Import: a workload file of another simulator becomes a source of its own.

``import_workload("workload-6.csv", "pollux", name="pollux_w6")`` makes a user
source folder (the mechanism of "Your own cluster's trace, as a source"): the
file copied beside a ``source.json`` that pins it (size, sha256, git blob), the
simulator's paper as its ``citation.bib``, a schema of the format's columns
(``schemas/jobs.json``) and its mapping onto ``mltraces.jobs`` (``jobs.json``,
trace ``NAME/jobs``, which replays as ``NAME/jobs`` when the format carries run times). A
``<file>.provenance.json`` beside an exported file is copied too, and its clock
(zone and origin) tells how to read a Philly job log written from a trace.
The folder is built aside and renamed into place whole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mltraces.errors import MltracesError
from mltraces.interop.formats import FORMATS, Format, get_format
from mltraces.interop.formats.base import ImportTemplate

__all__ = ["ImportedSource", "detect_format", "import_workload", "sources_root"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_FIRST_LINE = 1 << 16


@dataclass(frozen=True)
class ImportedSource:
    """The source folder an import made."""

    name: str
    folder: Path
    format: str
    trace: str  # its trace in mltraces.jobs
    replay: str | None  # its replay id for `mltraces schedule`, when it can replay


def sources_root(into: str | Path | None = None) -> Path:
    """Where a new source folder goes: ``into``, else the first ``MLTRACES_SOURCES`` folder,
    else the platform's config folder (created)."""
    if into is not None:
        return Path(into)
    value = os.environ.get("MLTRACES_SOURCES")
    if value is not None:
        folders = [p for p in value.split(os.pathsep) if p.strip()]
        if not folders:
            raise MltracesError("MLTRACES_SOURCES is set but empty (no source folders are "
                                "read): set it to a folder or pass --into")
        return Path(folders[0]).expanduser()
    import platformdirs

    from mltraces.config import APP_NAME

    return Path(platformdirs.user_config_dir(APP_NAME)) / "sources"


def _first_line(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.readline(MAX_FIRST_LINE)
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError:
        raise MltracesError(f"{path}: its first line is not UTF-8 text") from None


def detect_format(path: Path) -> Format:
    """The format whose parser accepts the file's first line (exactly one must)."""
    line = _first_line(path)
    fits = []
    for fmt in FORMATS.values():
        try:
            fmt.template(line)
        except MltracesError:
            continue
        fits.append(fmt)
    if len(fits) != 1:
        names = ", ".join(f.name for f in fits) or "none"
        raise MltracesError(f"{path}: cannot tell its format from its first line (fits: "
                            f"{names}); give it with --from ({', '.join(FORMATS)})")
    return fits[0]


def default_name(path: Path) -> str:
    """A source name from the file name: lower-case letters, digits and '_'."""
    stem = re.sub(r"[^a-z0-9_]+", "_", path.name.split(".")[0].lower()).strip("_") or "workload"
    return stem if stem[0].isalpha() else f"w_{stem}"


def _check_name(name: str, root: Path) -> None:
    from mltraces.registry import RESERVED_NAMES, SOURCES_DIR

    if not _NAME.match(name) or name in RESERVED_NAMES:
        raise MltracesError(f"source name {name!r} must be lower-case letters, digits and '_', "
                            "starting with a letter, and not 'mltraces' (it is a SQL schema)")
    if (SOURCES_DIR / name).is_dir():
        raise MltracesError(f"source name {name!r} is a shipped source; choose another --name")
    if (root / name).exists():
        raise MltracesError(f"{root / name} exists already; choose another --name or remove it")


def _provenance(path: Path) -> dict | None:
    from mltraces.interop.exporting import provenance_path

    sidecar = provenance_path(path)
    if not sidecar.is_file():
        return None
    try:
        found = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise MltracesError(f"cannot read {sidecar}: {error}") from None
    return found if isinstance(found, dict) else None


def _mapping(template: ImportTemplate, provenance: dict | None) -> dict[str, Any]:
    """The format's mapping; a Philly log written from a trace is read on its recorded clock."""
    mapping = json.loads(json.dumps(template.mapping))
    clock = (provenance or {}).get("time", {})
    if mapping["time"]["kind"] == "clock" and clock.get("zone"):
        mapping["time"]["zone"] = clock["zone"]
        if clock.get("origin"):
            mapping["time"]["origin"] = clock["origin"]
    return mapping


def _schema(name: str, fmt: Format, template: ImportTemplate, filename: str) -> dict[str, Any]:
    block: dict[str, Any] = {"reader": template.reader,
                             "sources": [{"file": f"{name}/{filename}"}]}
    if template.dialect:
        block["dialect"] = template.dialect
    if template.derived:
        block["derived"] = template.derived
    block["notes"] = [f"Imported from {filename}, a {fmt.simulator} input file ({fmt.summary}).",
                      *template.notes]
    schema: dict[str, Any] = {
        "$schema": "https://specs.frictionlessdata.io/schemas/table-schema.json",
        "name": f"{name}.jobs", "title": f"{fmt.simulator}: {filename}",
        "description": f"The jobs of {filename}, one per row, read as {fmt.parser} reads them.",
        "fields": [{"description": f["name"], **f} for f in template.fields],
        "missingValues": [""], "mltraces": block}
    if template.primary_key:
        schema["primaryKey"] = template.primary_key
    return schema


def import_workload(path: str | Path, fmt: str | None = None, *, name: str | None = None,
                    into: str | Path | None = None) -> ImportedSource:
    """Make ``path`` (a file in one of :data:`~mltraces.interop.formats.FORMATS`) a source."""
    from mltraces.download.pin import pin_path

    path = Path(path)
    if not path.is_file():
        raise MltracesError(f"cannot import {path}: not a file")
    chosen = get_format(fmt) if fmt else detect_format(path)
    template = chosen.template(_first_line(path))
    root = sources_root(into)
    name = name or default_name(path)
    _check_name(name, root)
    provenance = _provenance(path)
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    except OSError as error:
        raise MltracesError(f"cannot create a source folder in {root}: {error.strerror}") from None
    try:
        _fill(staging, name, chosen, template, path, provenance, pin_path)
        staging.rename(root / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _forget_scans()
    mapping = template.mapping
    return ImportedSource(name, root / name, chosen.name, f"{name}/jobs",
                          f"{name}/jobs" if "all" in mapping.get("replay", []) else None)


def _fill(folder: Path, name: str, fmt: Format, template: ImportTemplate, path: Path,
          provenance: dict | None, pin_path: Any) -> None:
    filename = path.name
    shutil.copyfile(path, folder / filename)
    entry = pin_path(folder / filename, relative_to=folder)
    note = (f"imported with mltraces from {path.name}" +
            (f", exported by mltraces from {provenance.get('trace')}" if provenance else ""))
    source = {
        "name": name, "title": f"{fmt.simulator} workload {filename}",
        "description": f"A workload in the {fmt.name} format ({fmt.summary}), {note}.",
        "homepage": fmt.homepage, "license": "NOASSERTION",
        "license_note": "an imported file: its terms are those of whoever published it "
                        "(an exported trace keeps its source's licence and citation)",
        "files": [{**entry, "description": f"the {fmt.name} file as imported"}],
        "anomalies": list(template.notes)}
    (folder / "source.json").write_text(json.dumps(source, indent=1) + "\n", encoding="utf-8")
    (folder / "citation.bib").write_text(fmt.citation + "\n", encoding="utf-8")
    (folder / "schemas").mkdir()
    (folder / "schemas" / "jobs.json").write_text(
        json.dumps(_schema(name, fmt, template, filename), indent=1) + "\n", encoding="utf-8")
    mapping = {"$comment": f"{fmt.name} file mapped onto mltraces.jobs by mltraces import",
               "tables": [{"table": f"{name}.jobs", "trace": f"{name}/jobs",
                           "description": f"{fmt.simulator}: {filename}",
                           **_mapping(template, provenance)}]}
    (folder / "jobs.json").write_text(json.dumps(mapping, indent=1) + "\n", encoding="utf-8")
    if template.readers_module:
        (folder / "readers.py").write_text(
            f'"""The {fmt.name} format\'s reader, as mltraces ships it."""\n\n'
            f"from {template.readers_module} import READERS  # noqa: F401\n", encoding="utf-8")
    if provenance is not None:
        (folder / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n",
                                                encoding="utf-8")


def _forget_scans() -> None:
    """The registry, schemas and mappings are scanned once per process: rescan them."""
    from mltraces import jobmap, registry, schema, synthetic
    from mltraces.catalog import readers

    for cached in (registry._scanned, registry._loaded, schema.schema_files, schema._loaded,
                   jobmap.job_tables, synthetic.writers, readers.source_readers):
        cached.cache_clear()
