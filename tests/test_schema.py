"""Schema files: well-formed Frictionless Table Schemas, tied to the registry, compiled to SQL."""

from __future__ import annotations

import json

import duckdb
import pytest

from mltraces.errors import SchemaError
from mltraces.schema import (
    SCHEMA_DIR,
    all_schemas,
    compile_rules,
    get_schema,
    load_schema,
    parse_schema,
)

REQUIRED_TABLES = {
    "zeus.train", "zeus.power", "zeus.alibaba_groups",
    "itp.jobs", "itp.elasticflow_jobs", "itp.testbed_jobs",
    "acme.seren_jobs", "acme.kalos_jobs", "acme.cluster_summary", "acme.util_cdf",
    "mltraces.jobs",
}
# Table Schema v1 keys plus the two this project adds.
TOP_LEVEL = {"$schema", "name", "title", "description", "fields", "primaryKey", "foreignKeys",
             "missingValues", "mltraces"}
# itemType: a Table Schema v2 list field's item type (Mooncake's hash ids)
FIELD_KEYS = {"name", "title", "type", "format", "description", "constraints", "unit", "example",
              "itemType"}
FRICTIONLESS_TYPES = {"string", "number", "integer", "boolean", "object", "array", "date", "time",
                      "datetime", "year", "yearmonth", "duration", "geopoint", "geojson", "any",
                      "list"}


def test_every_required_table_has_a_schema() -> None:
    from mltraces.registry import all_sources

    assert set(all_schemas()) >= REQUIRED_TABLES
    counted = {table for source in all_sources().values() for table in source.expected_rows}
    assert set(all_schemas()) >= counted
    # "mltraces" holds the catalog's own tables (the jobs view), every other a source's
    assert {s.schema_name for s in all_schemas().values()} <= {*all_sources(), "mltraces"}


SCHEMA_FILES = sorted(SCHEMA_DIR.glob("*/*.json"))


def test_schema_files_are_found() -> None:
    assert len(SCHEMA_FILES) == len(all_schemas()) > 0


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_schema_file_is_a_documented_table_schema(path) -> None:
    raw = json.loads(path.read_text())
    assert set(raw) <= TOP_LEVEL, f"unexpected keys {set(raw) - TOP_LEVEL}"
    assert raw["$schema"].startswith("https://specs.frictionlessdata.io/")
    assert raw["title"] and raw["description"]
    for field in raw["fields"]:
        assert set(field) <= FIELD_KEYS, f"{field['name']}: unexpected keys"
        assert field["type"] in FRICTIONLESS_TYPES
        assert field["description"], f"{field['name']} has no description"
    schema = load_schema(path)
    assert schema.name == f"{path.parent.name}.{path.stem}"


@pytest.mark.parametrize("name", sorted(REQUIRED_TABLES))
def test_sources_are_registered_files(name: str) -> None:
    from mltraces.registry import get_file

    schema = get_schema(name)
    for file_id in schema.file_ids:
        remote = get_file(file_id)
        assert remote.id == file_id
        assert any(s.members for s in schema.sources) == remote.unpacked


QUANTITIES = {"duration", "queue", "submission_time", "deadline", "power_limit", "average_power",
              "time_per_epoch", "gpu_time", "start_time", "end_time", "batch_size", "num_gpu"}


def test_time_and_quantity_fields_carry_units() -> None:
    for schema in all_schemas().values():
        for field in schema.fields:
            if field.name in QUANTITIES and field.type != "datetime":
                assert field.unit, f"{schema.name}.{field.name} needs a unit"


def test_types_are_explicit_duckdb_types() -> None:
    seren = get_schema("acme.seren_jobs")
    assert seren.field("submit_time").duckdb_type == "TIMESTAMPTZ"
    assert seren.field("job_id").duckdb_type == "BIGINT"
    assert seren.field("gpu_time").duckdb_type == "DOUBLE"
    assert get_schema("itp.jobs").field("submission_time").duckdb_type == "BIGINT"
    naive = parse_schema(_minimal(primaryKey=[], mltraces={
        "reader": "csv", "sources": [{"file": "zeus/summary_train.csv"}]},
        fields=[{"name": "t", "type": "datetime", "format": "%Y-%m-%d %H:%M:%S",
                 "description": "d"}]))
    assert naive.field("t").duckdb_type == "TIMESTAMP"


def test_added_columns_are_fields() -> None:
    power = get_schema("zeus.power")
    assert power.added_columns == ("gpu",)
    assert [f.name for f in power.file_fields] == [
        "dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch",
        "average_power"]
    assert get_schema("itp.jobs").sources[0].columns == {"cluster": "{member_stem}"}


def test_digest_follows_content() -> None:
    base = parse_schema(_minimal())
    changed = parse_schema(_minimal(description="other"))
    assert base.digest != changed.digest
    assert parse_schema(_minimal()).digest == base.digest


def _minimal(**overrides) -> dict:
    raw = {
        "name": "demo.table",
        "title": "t",
        "description": "d",
        "fields": [
            {"name": "id", "type": "integer", "description": "key",
             "constraints": {"required": True, "minimum": 0, "maximum": 9}},
            {"name": "kind", "type": "string", "description": "kind",
             "constraints": {"enum": ["a", "b"], "pattern": "[a-z]"}},
            {"name": "tag", "type": "string", "description": "tag",
             "constraints": {"unique": True}},
        ],
        "primaryKey": ["id"],
        "mltraces": {"reader": "csv", "sources": [{"file": "zeus/summary_train.csv"}],
                     "checks": [{"name": "small", "sql": "id < 5", "description": "id < 5"}]},
    }
    raw.update(overrides)
    return raw


def test_every_problem_is_listed_at_once() -> None:
    bad = _minimal(primaryKey=["nope"])
    bad["fields"][0]["type"] = "decimal"
    bad["fields"][1]["constraints"]["bogus"] = 1
    bad["mltraces"]["reader"] = "Excel!"
    with pytest.raises(SchemaError) as caught:
        parse_schema(bad)
    message = str(caught.value)
    for expected in ("decimal", "bogus", "'nope'", "Excel!"):
        assert expected in message


def test_a_reader_no_one_provides_is_named_with_the_choices() -> None:
    from mltraces.catalog.readers import reader_for

    schema = parse_schema({**_minimal(), "mltraces": {**_minimal()["mltraces"], "reader": "excel"}})
    with pytest.raises(SchemaError, match=r"reader 'excel' is neither built in .* choose from csv"):
        reader_for(schema)


def test_constraints_compile_to_sql_that_finds_each_violation() -> None:
    schema = parse_schema(_minimal())
    rules = compile_rules(schema)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id BIGINT, kind VARCHAR, tag VARCHAR)")
    con.execute("""INSERT INTO t VALUES (1, 'a', 'x'), (1, 'c', 'x'), (NULL, 'b', NULL),
                   (12, '', 'y'), (-1, NULL, 'z'), (3, 'b', NULL)""")
    counts = {}
    for rule in rules:
        counts[rule.name] = con.execute(
            f"SELECT count(*) FILTER (WHERE bad) FROM (SELECT ({rule.fail_sql}) AS bad FROM t)"
        ).fetchall()[0][0]
    assert counts == {
        "id: required": 1,
        "id: minimum 0": 1,
        "id: maximum 9": 1,
        "kind: enum": 2,          # 'c' and '' (NULL is the required rule's business)
        "kind: pattern": 1,       # '' does not match [a-z]
        "tag: unique": 2,         # the two 'x' rows; NULLs are not duplicates
        "primary key (id)": 2,    # id 1 twice
        "check small": 1,         # 12 (NULL ids pass a check)
    }
    assert {r.severity for r in rules} == {"error"}
    check = next(r for r in rules if r.name == "check small")
    assert check.columns == ("id",)
