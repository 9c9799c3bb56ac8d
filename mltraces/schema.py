"""Table schemas: read ``schemas/<source>/<table>.json``, map types to DuckDB, build SQL checks.

Each catalog table ``SOURCE.TABLE`` is defined by one file, ``schemas/SOURCE/TABLE.json``,
a `Frictionless Table Schema
<https://specs.frictionlessdata.io/table-schema/>`_ file, so the documentation a
user reads *is* the definition the catalog builds from. Besides the standard
keys (``fields`` with ``name``/``type``/``format``/``description``/
``constraints``, ``primaryKey``, ``missingValues``) mltraces uses:

- ``unit`` on a field (custom key): the unit of its values (``s``, ``W``, ``GPU h``).
- ``list`` fields (Table Schema v2: ``"type": "list", "itemType": "integer"``): a LIST
  column (``BIGINT[]``), written by a source's own reader (Mooncake's prefix hash ids).
- an ``mltraces`` block: the ``reader`` (a name: ``csv`` is built in; a source
  folder brings its own in ``mltraces/sources/<source>/readers.py``, see
  :mod:`mltraces.catalog.readers`), the ``sources`` (registry file ids; for
  archives a ``members`` glob, or one ``member`` read as a stream; constant or
  ``{member_stem}`` ``columns`` added per file; a ``header`` file naming the
  columns of a CSV without a header row), the CSV ``dialect`` (``header``,
  ``delimiter``, ``quoteChar``, ``escapeChar``; Frictionless CSV Dialect names and
  defaults), ``derived`` columns
  (SQL over the fields, computed in the view), row-level ``checks`` (SQL that must
  hold, ``severity`` ``error`` or ``warning``) and ``notes`` (known anomalies).

Adding a table is adding a schema file; nothing else keeps a list of tables.
The SQL text helpers every module uses (:func:`quote_ident`, :func:`sql_literal`,
:func:`sql_path`) live here too, so there is one way to quote.

>>> from mltraces.schema import get_schema
>>> get_schema("itp.jobs").primary_key
('job_id',)
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from mltraces.errors import SchemaError
from mltraces.names import canonical

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

# Frictionless type -> DuckDB type. ``datetime`` is special-cased: with an offset
# in its format (``%z``, or the default ISO form) it is an absolute instant.
_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "time": "TIME",
    "year": "INTEGER",
    "any": "VARCHAR",
}
_TYPES = {*_DUCKDB_TYPES, "datetime", "list"}
#: what a ``list`` field (Table Schema v2) may hold: one primitive type per list
_ITEM_TYPES = ("integer", "number", "string", "boolean")
_CONSTRAINTS = {
    "required", "unique", "enum", "minimum", "maximum", "pattern", "minLength", "maxLength",
}
_ORDERED = {"integer", "number", "date", "time", "datetime", "year"}
_SEVERITIES = {"error", "warning"}
MEMBER_STEM = "{member_stem}"
#: Names of the file readers built into the catalog (``mltraces.catalog.readers.BUILTIN``):
#: a table naming one is known to be converted without loading the readers.
BUILTIN_FILE_READERS = frozenset({"csv"})
_EMPTY: Mapping[str, Any] = MappingProxyType({})

# The records below are NamedTuples: immutable, and cheap to define at start-up
# (every process that connects imports this module). TableSchema stays a dataclass.


class Field(NamedTuple):
    """One column: its Frictionless description and the DuckDB type it becomes."""

    name: str
    type: str
    description: str
    unit: str | None = None
    format: str | None = None
    constraints: Mapping[str, Any] = _EMPTY
    item_type: str | None = None  # a ``list`` field's ``itemType``

    @property
    def duckdb_type(self) -> str:
        """The explicit DuckDB type the catalog reads this column as (never sniffed)."""
        if self.type == "list":  # a LIST column: BIGINT[] for a list of integers
            return f"{_DUCKDB_TYPES[self.item_type or 'string']}[]"
        if self.type == "datetime":  # an offset (%z) or a zone name (%Z: PDT) makes an instant
            with_offset = self.format in (None, "default", "any") or any(
                z in self.format for z in ("%z", "%Z"))
            return "TIMESTAMPTZ" if with_offset else "TIMESTAMP"
        return _DUCKDB_TYPES[self.type]

    @property
    def needs_offset(self) -> bool:
        """True when every value must carry its UTC offset (a bare time would be a guess)."""
        return self.type == "datetime" and (self.format in (None, "default")
                                            or "%z" in (self.format or ""))

    @property
    def required(self) -> bool:
        return bool(self.constraints.get("required"))


class Derived(NamedTuple):
    """A convenience column computed in the view from the stored fields."""

    name: str
    type: str
    sql: str
    description: str
    unit: str | None = None

    @property
    def duckdb_type(self) -> str:
        return Field(self.name, self.type, self.description).duckdb_type


class Check(NamedTuple):
    """A row-level rule in SQL that must hold (NULL counts as passing)."""

    name: str
    sql: str
    description: str
    severity: str = "error"


class SourceSpec(NamedTuple):
    """One input of a table: a registry file, optionally archive members, extra columns.

    ``members`` (a glob) reads members of an archive the registry unpacks;
    ``member`` (one path) reads one member of an archive as a stream, unpacking
    nothing. ``header`` names a registry file whose one line lists the columns of a
    CSV that has no header row (Alibaba's ``pai_job_table.header``).
    """

    file: str
    members: str | None = None
    columns: Mapping[str, str] = _EMPTY
    compression: str | None = None
    extra: Mapping[str, Any] = _EMPTY
    member: str | None = None
    header: str | None = None

    @property
    def file_ids(self) -> tuple[str, ...]:
        """Registry ids this input reads: its file, and its header file when it has one."""
        return (self.file, self.header) if self.header else (self.file,)


class Dialect(NamedTuple):
    """How a CSV input is written (Frictionless CSV Dialect keys, same defaults)."""

    header: bool = True
    delimiter: str = ","
    quote: str = '"'
    escape: str = '"'


_DEFAULT_DIALECT = Dialect()
_DIALECT_KEYS = {"header": "header", "delimiter": "delimiter", "quoteChar": "quote",
                 "escapeChar": "escape"}


class Rule(NamedTuple):
    """A compiled check: ``fail_sql`` is true on each row that violates it."""

    table: str
    name: str
    fail_sql: str
    description: str
    columns: tuple[str, ...] = ()
    severity: str = "error"


@dataclass(frozen=True)
class TableSchema:
    """A parsed schema file: the definition of one catalog table."""

    name: str
    title: str
    description: str
    fields: tuple[Field, ...]
    primary_key: tuple[str, ...]
    missing_values: tuple[str, ...]
    reader: str
    sources: tuple[SourceSpec, ...]
    derived: tuple[Derived, ...] = ()
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = ()
    path: Path | None = None
    digest: str = ""
    dialect: Dialect = _DEFAULT_DIALECT

    @property
    def schema_name(self) -> str:
        """DuckDB schema (the source): ``zeus`` for ``zeus.train``."""
        return self.name.split(".", 1)[0]

    @property
    def table_name(self) -> str:
        """View name inside the DuckDB schema: ``train`` for ``zeus.train``."""
        return self.name.split(".", 1)[1]

    @property
    def qualified(self) -> str:
        """Quoted ``"schema"."table"`` for SQL."""
        return f"{quote_ident(self.schema_name)}.{quote_ident(self.table_name)}"

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @property
    def added_columns(self) -> tuple[str, ...]:
        """Fields that come from the file name or member name, not from the file's header."""
        names: list[str] = []
        for source in self.sources:
            names.extend(c for c in source.columns if c not in names)
        return tuple(names)

    @property
    def file_fields(self) -> tuple[Field, ...]:
        """Fields expected in each input file's header, in schema order."""
        added = set(self.added_columns)
        return tuple(f for f in self.fields if f.name not in added)

    @property
    def file_ids(self) -> tuple[str, ...]:
        """Registry ids of the files this table reads (each once), header files included."""
        return tuple(dict.fromkeys(f for s in self.sources for f in s.file_ids))

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        columns = ", ".join(self.field_names)
        raise KeyError(f"{self.name} has no column {name!r}; columns: {columns}")


# --------------------------------------------------------------------------- SQL helpers


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB (``group`` is a keyword, so always quote)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """A SQL literal for a JSON scalar from a schema (or any text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise SchemaError(f"cannot use {value!r} as a SQL literal")


_GLOB_CHARS = {"[": "[[]", "*": "[*]", "?": "[?]"}


def sql_path(path: str | Path) -> str:
    """A SQL literal naming exactly one file for DuckDB's file functions, never a pattern.

    ``read_csv('trace[12].csv')`` would read ``trace1.csv`` and ``trace2.csv``:
    DuckDB expands ``[...]``, ``*`` and ``?``. Each becomes a one-character class
    (``[[]``, ``[*]``, ``[?]``). DuckDB's matcher cannot combine such a class with
    a backslash in the same path, so that case is refused with the fix.

    >>> sql_path("/data/trace[12].csv")
    "'/data/trace[[]12].csv'"
    """
    return sql_literal(_escape_glob(str(path)))


def _escape_glob(text: str) -> str:
    from mltraces.local_paths import duckdb_cannot_open

    if duckdb_cannot_open(text):
        raise SchemaError(f"cannot read {text!r}: DuckDB cannot open a path that holds both a "
                          "backslash and one of [ * ?; rename the file or its folder")
    return "".join(_GLOB_CHARS.get(c, c) for c in text)


def sql_glob(folder: str | Path, pattern: str) -> str:
    """A SQL literal for the files matching ``pattern`` (a glob) under exactly ``folder``.

    >>> sql_glob("/cache [1]", "*/month=2023-07/*.parquet")
    "'/cache [[]1]/*/month=2023-07/*.parquet'"
    """
    return sql_literal(_escape_glob(str(folder)).rstrip("/") + "/" + pattern)


# --------------------------------------------------------------------------- loading


def _digest(raw: dict) -> str:
    """sha256 of the schema's canonical JSON: changes whenever the definition does."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _parse_field(raw: Any, where: str, problems: list[str]) -> Field | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        problems.append(f"{where}: a field needs at least a string 'name'")
        return None
    name = raw["name"]
    ftype = raw.get("type", "string")
    if ftype not in _TYPES:
        problems.append(f"{where}: field {name!r} has type {ftype!r}; known: {sorted(_TYPES)}")
        return None
    constraints = raw.get("constraints", {}) or {}
    unknown = set(constraints) - _CONSTRAINTS
    if unknown:
        problems.append(f"{where}: field {name!r} has unknown constraints {sorted(unknown)}")
    if ("minimum" in constraints or "maximum" in constraints) and ftype not in _ORDERED:
        problems.append(f"{where}: field {name!r} ({ftype}) cannot have minimum/maximum")
    if "enum" in constraints and not isinstance(constraints["enum"], list):
        problems.append(f"{where}: field {name!r} enum must be a list")
    if not raw.get("description"):
        problems.append(f"{where}: field {name!r} has no description")
    item_type = raw.get("itemType")
    if (ftype == "list") != (item_type is not None) or (
            item_type is not None and item_type not in _ITEM_TYPES):
        problems.append(f"{where}: field {name!r}: a list field names its itemType (one of "
                        f"{', '.join(_ITEM_TYPES)}), and only a list field does")
    return Field(
        name=name,
        type=ftype,
        description=raw.get("description", ""),
        unit=raw.get("unit"),
        format=raw.get("format"),
        constraints=dict(constraints),
        item_type=item_type,
    )


def _parse_sources(block: dict, where: str, problems: list[str]) -> tuple[SourceSpec, ...]:
    sources = []
    raw_sources = block.get("sources")
    # a file reader needs files; a view reader may serve other tables (mltraces.jobs)
    if not isinstance(raw_sources, list) or (
            not raw_sources and block.get("reader") in BUILTIN_FILE_READERS):
        problems.append(f"{where}: mltraces.sources must be a non-empty list")
        return ()
    for raw in raw_sources:
        if not isinstance(raw, dict) or not isinstance(raw.get("file"), str):
            problems.append(f"{where}: each source needs a registry 'file' id")
            continue
        known = {"file", "members", "columns", "compression", "member", "header"}
        sources.append(
            SourceSpec(
                file=raw["file"],
                members=raw.get("members"),
                columns=dict(raw.get("columns", {})),
                compression=raw.get("compression"),
                extra={k: v for k, v in raw.items() if k not in known},
                member=raw.get("member"),
                header=raw.get("header"),
            )
        )
    return tuple(sources)


def _check_consistency(schema: TableSchema, where: str, problems: list[str]) -> None:
    names = schema.field_names
    if len(set(names)) != len(names):
        problems.append(f"{where}: duplicate field names")
    for key in schema.primary_key:
        if key not in names:
            problems.append(f"{where}: primaryKey column {key!r} is not a field")
    for source in schema.sources:
        for column in source.columns:
            if column not in names:
                problems.append(f"{where}: source column {column!r} is not a field")
        if source.compression not in (None, "xz"):
            problems.append(f"{where}: compression {source.compression!r} is not supported (xz)")
        if source.member is not None and (source.members is not None
                                          or not isinstance(source.member, str)):
            problems.append(f"{where}: source {source.file!r}: 'member' (one path, streamed) "
                            "and 'members' (a glob, unpacked) exclude each other")
        if source.header is not None and schema.dialect.header:
            problems.append(f"{where}: source {source.file!r} names a header file, so the "
                            'dialect must say "header": false')
    for derived in schema.derived:
        if derived.name in names:
            problems.append(f"{where}: derived column {derived.name!r} clashes with a field")
    for check in schema.checks:
        if check.severity not in _SEVERITIES:
            problems.append(f"{where}: check {check.name!r} severity must be one of {_SEVERITIES}")
    if "." not in schema.name:
        problems.append(f"{where}: name {schema.name!r} must be SOURCE.TABLE")
    if not re.match(r"^[a-z][a-z0-9_]*$", schema.reader):
        problems.append(f"{where}: reader {schema.reader!r} must be a reader's name (csv, or "
                        "one of the source's own in mltraces/sources/<source>/readers.py)")


def _parse_dialect(block: dict, where: str, problems: list[str]) -> Dialect:
    raw = block.get("dialect", {})
    if not isinstance(raw, dict):
        problems.append(f"{where}: mltraces.dialect must be an object")
        return Dialect()
    unknown = set(raw) - set(_DIALECT_KEYS)
    if unknown:
        problems.append(f"{where}: dialect has unknown keys {sorted(unknown)}; "
                        f"known: {sorted(_DIALECT_KEYS)}")
    values = {_DIALECT_KEYS[k]: v for k, v in raw.items() if k in _DIALECT_KEYS}
    dialect = Dialect(**values)
    if not isinstance(dialect.header, bool):
        problems.append(f"{where}: dialect header must be true or false")
    for name in ("delimiter", "quote", "escape"):
        value = getattr(dialect, name)
        if not isinstance(value, str) or len(value) != 1 or value in "\r\n":
            problems.append(f"{where}: dialect {name} must be one character, got {value!r}")
    return dialect


def parse_schema(raw: dict, path: Path | None = None) -> TableSchema:
    """Build a :class:`TableSchema` from a loaded JSON document, listing every problem."""
    where = str(path) if path else raw.get("name", "schema")
    problems: list[str] = []
    block = raw.get("mltraces") or {}
    if not block:
        problems.append(f"{where}: missing the 'mltraces' block (reader, sources)")
    fields = [_parse_field(f, where, problems) for f in raw.get("fields", [])]
    if not fields:
        problems.append(f"{where}: no fields")
    try:
        derived = tuple(Derived(**d) for d in block.get("derived", []))
        checks = tuple(Check(**c) for c in block.get("checks", []))
    except TypeError as error:
        problems.append(f"{where}: bad derived/check entry ({error})")
        derived, checks = (), ()
    schema = TableSchema(
        name=raw.get("name", ""),
        title=raw.get("title", ""),
        description=raw.get("description", ""),
        fields=tuple(f for f in fields if f is not None),
        primary_key=tuple(raw.get("primaryKey", []) or []),
        missing_values=tuple(raw.get("missingValues", [""])),
        reader=block.get("reader", ""),
        sources=_parse_sources(block, where, problems),
        derived=derived,
        checks=checks,
        notes=tuple(block.get("notes", [])),
        path=path,
        digest=_digest(raw),
        dialect=_parse_dialect(block, where, problems),
    )
    _check_consistency(schema, where, problems)
    if problems:
        raise SchemaError("invalid table schema:\n  " + "\n  ".join(problems))
    return schema


def load_schema(path: str | Path) -> TableSchema:
    """Read and check one schema file; its name must match the file name."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise SchemaError(f"cannot read schema {path}: {error}") from error
    schema = parse_schema(raw, path)
    source = path.parent.parent.name if path.parent.name == "schemas" else path.parent.name
    if f"{source}.{path.stem}" != schema.name:
        raise SchemaError(f"{path}: schema name {schema.name!r} does not match "
                          "schemas/<source>/<table>.json (or <source folder>/schemas/<table>.json)")
    return schema


@cache
def schema_files() -> dict[str, Path]:
    """Every schema file by table name, from the file names alone (nothing parsed).

    The shipped ones (``schemas/<source>/<table>.json``), then those of a user's own
    source folders (``<folder>/schemas/<table>.json``). Commands that only need
    names (``mltraces sql`` finding the tables a query mentions) stay fast;
    schemas are parsed when first asked for.
    """
    from mltraces.config import user_source_folders

    found = {f"{p.parent.name}.{p.stem}": p for p in sorted(SCHEMA_DIR.glob("*/*.json"))}
    for folder in user_source_folders():  # a broken one's tables fail with its reason
        found.update({f"{folder.name}.{p.stem}": p
                      for p in sorted((folder / "schemas").glob("*.json"))})
    return found


@cache
def _loaded(name: str) -> TableSchema:
    return load_schema(schema_files()[name])


def all_schemas() -> dict[str, TableSchema]:
    """Every table schema shipped with mltraces, by table name."""
    return {name: _loaded(name) for name in schema_files()}


def get_schema(name: str) -> TableSchema:
    """The schema of table ``name``; the error lists the known tables."""
    name = canonical(name)
    names = schema_files()
    if name not in names:
        hint = [n for n in names if name in n] or list(names)
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(hint)}")
    return _loaded(name)


def constraint_text(constraints: Mapping[str, Any], enum_width: int | None = 60) -> str:
    """A field's constraints in words (``required; >= 0; one of {a, b}``); an enum longer
    than ``enum_width`` characters is cut with ``...`` (None: shown whole)."""
    parts = []
    if constraints.get("required"):
        parts.append("required")
    if constraints.get("unique"):
        parts.append("unique")
    if "minimum" in constraints:
        parts.append(f">= {constraints['minimum']}")
    if "maximum" in constraints:
        parts.append(f"<= {constraints['maximum']}")
    if "enum" in constraints:
        shown = ", ".join(str(v) for v in constraints["enum"])
        if enum_width is not None and len(shown) > enum_width:
            shown = shown[:enum_width - 4].rsplit(", ", 1)[0] + ", ..."
        parts.append(f"one of {{{shown}}}")
    if "pattern" in constraints:
        parts.append(f"matches {constraints['pattern']}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- constraints -> SQL


def _field_rules(schema: TableSchema, f: Field) -> list[Rule]:
    q = quote_ident(f.name)
    c = f.constraints
    rules = []

    def add(name: str, fail: str, description: str) -> None:
        rules.append(Rule(schema.name, f"{f.name}: {name}", fail, description, (f.name,)))

    if c.get("required"):
        add("required", f"{q} IS NULL", f"{f.name} must not be empty")
    if "enum" in c:
        allowed = ", ".join(sql_literal(v) for v in c["enum"])
        add("enum", f"{q} IS NOT NULL AND {q} NOT IN ({allowed})",
            f"{f.name} must be one of {', '.join(map(str, c['enum']))}")
    # a bound on a number means a finite number within it: NaN compares above every
    # value and inf passes a minimum, so neither slips through as "in range"
    finite = f"NOT isfinite({q}) OR " if f.type == "number" else ""
    if "minimum" in c:
        add(f"minimum {c['minimum']}", f"{finite}{q} < {sql_literal(c['minimum'])}",
            f"{f.name} >= {c['minimum']}")
    if "maximum" in c:
        add(f"maximum {c['maximum']}", f"{finite}{q} > {sql_literal(c['maximum'])}",
            f"{f.name} <= {c['maximum']}")
    if "pattern" in c:
        pattern = sql_literal(c["pattern"])
        add("pattern", f"{q} IS NOT NULL AND NOT regexp_full_match({q}, {pattern})",
            f"{f.name} matches {c['pattern']}")
    if "minLength" in c:
        add("minLength", f"length({q}) < {int(c['minLength'])}", f"length >= {c['minLength']}")
    if "maxLength" in c:
        add("maxLength", f"length({q}) > {int(c['maxLength'])}", f"length <= {c['maxLength']}")
    if c.get("unique"):
        add("unique", f"{q} IS NOT NULL AND count(*) OVER (PARTITION BY {q}) > 1",
            f"{f.name} values are unique")
    return rules


def compile_rules(schema: TableSchema) -> list[Rule]:
    """Every constraint of ``schema`` as SQL predicates true on violating rows.

    Predicates may use window functions, so evaluate them in a SELECT list:
    ``SELECT count(*) FILTER (WHERE bad) FROM (SELECT <fail_sql> AS bad FROM t)``.
    """
    rules: list[Rule] = []
    for f in schema.fields:
        rules.extend(_field_rules(schema, f))
    if schema.primary_key:
        cols = ", ".join(quote_ident(k) for k in schema.primary_key)
        key = ", ".join(schema.primary_key)
        rules.append(
            Rule(schema.name, f"primary key ({key})", f"count(*) OVER (PARTITION BY {cols}) > 1",
                 f"({key}) identifies each row", schema.primary_key)
        )
    for check in schema.checks:
        used = tuple(n for n in schema.field_names if re.search(rf"\b{re.escape(n)}\b", check.sql))
        rules.append(
            Rule(schema.name, f"check {check.name}", f"NOT coalesce(({check.sql}), true)",
                 check.description, used, check.severity)
        )
    return rules
