"""A source folder without Python files is data (issue 34): its SQL is one scalar expression
over its own columns, checked before use, and no other Python file of it ever runs."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from catalog_fixtures import rows
from test_user_sources import _forget, user_root, write_source  # noqa: F401 (a fixture)

from mltraces import jobmap
from mltraces.catalog import connect
from mltraces.cli import main
from mltraces.errors import RegistryError
from mltraces.exprcheck import UnsafeExpression, check_expression
from mltraces.schema import get_schema


def _remap(folder: Path, **changes: object) -> None:
    """Change the one mapped table of ``folder``'s jobs.json (``columns`` keys merge)."""
    path = folder / "jobs.json"
    mapping = json.loads(path.read_text())
    table = mapping["tables"][0]
    for key, value in changes.items():
        if key == "columns":
            table["columns"].update(value)
        else:
            table[key] = value
    path.write_text(json.dumps(mapping))
    _forget()


def _one_line(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- capacity


def _statements(tmp_path: Path) -> dict[str, tuple[str, Path]]:
    """Capacity expressions that end the aggregate and run statements of their own."""
    copied, attached = tmp_path / "copied.csv", tmp_path / "attached.db"
    tail = "; SELECT sum(gpus)"
    return {
        "copy": (f"sum(gpus) FROM mycluster.jobs; COPY (SELECT 42 AS answer) TO '{copied}' "
                 f"(FORMAT csv){tail}", copied),
        "attach": (f"sum(gpus) FROM mycluster.jobs; ATTACH '{attached}' AS evil; "
                   f"CREATE TABLE evil.t AS SELECT 1{tail}", attached),
    }


@pytest.mark.parametrize("attack", ["copy", "attach"])
def test_a_capacity_expression_holding_statements_never_runs(attack: str, user_root: Path,  # noqa: F811
                                                             tmp_path: Path, capsys) -> None:
    expression, written = _statements(tmp_path)[attack]
    folder = write_source(user_root, pin=False)
    _remap(folder, capacity={"table": "mycluster.jobs", "gpus": expression, "gpus_per_node": 8})
    err = _one_line(["schedule", "--trace", "mycluster/all", "--policy", "fifo", "--summary"],
                    capsys)
    assert f"{folder / 'jobs.json'}: mycluster.jobs, capacity.gpus" in err
    assert not written.exists()


def test_a_capacity_aggregate_over_its_own_table_still_gives_the_cluster(user_root: Path,  # noqa: F811
                                                                         capsys) -> None:
    folder = write_source(user_root, pin=False)
    _remap(folder, capacity={"table": "mycluster.jobs", "gpus": "sum(gpus) + 4",
                             "gpus_per_node": 8})
    assert main(["schedule", "--trace", "mycluster/all", "--policy", "fifo", "--summary",
                 "--format", "json"]) == 0
    [summary] = json.loads(capsys.readouterr().out)
    assert summary["cluster"] == "n2g8"  # 4 + 8 + 0 + 4 GPUs


# --------------------------------------------------------------------------- columns


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    return secret


FILE_READS = {
    "read_text subquery": "(SELECT content FROM read_text('{secret}'))",
    "read_csv FROM-first": "(FROM read_csv('{secret}', header = false, columns = "
                           "{{'line': 'VARCHAR'}}) LIMIT 1)",
    "read_blob": "(SELECT CAST(content AS VARCHAR) FROM read_blob('{secret}'))",
    "glob": "(SELECT file FROM glob('{secret}'))",
}


@pytest.mark.parametrize("attack", sorted(FILE_READS))
def test_a_column_expression_reading_files_is_refused(attack: str, user_root: Path,  # noqa: F811
                                                      tmp_path: Path, capsys) -> None:
    secret = _secret(tmp_path)
    folder = write_source(user_root, pin=False)
    _remap(folder, columns={"user": FILE_READS[attack].format(secret=secret)})
    err = _one_line(["sql", "SELECT DISTINCT user FROM mltraces.jobs WHERE trace = "
                     "'mycluster/jobs'", "--format", "csv"], capsys)
    assert f"{folder / 'jobs.json'}: mycluster.jobs, columns.user" in err
    assert "the secret" not in err
    con = connect(["mycluster.jobs", "mltraces.jobs"])  # the view is that table's problem
    with pytest.raises(duckdb.Error, match=r"columns\.user"):
        con.sql("SELECT user FROM mltraces.jobs").fetchall()


def _closing(copied: Path) -> str:
    """A workload_type that ends the view's SELECT, runs a COPY, and opens a view of its own
    that the rest of the generated SQL completes."""
    rest = ", ".join(f"NULL AS {c}" for c in ("model", "batch_size", "iterations",
                                             "deadline_s"))
    return (f"NULL) AS VARCHAR) AS \"workload_type\", {rest}, false AS synthetic FROM "
            f"\"mycluster\".\"jobs\")); COPY (SELECT 42 AS answer) TO '{copied}' (FORMAT csv); "
            "CREATE OR REPLACE TEMP VIEW _mltraces_injected AS (SELECT * FROM (SELECT CAST((NULL")


@pytest.mark.parametrize("argv", [
    ["sql", "SELECT count(*) FROM mltraces.jobs", "--format", "csv"],
    ["schedule", "--list-traces"],
], ids=["sql", "list-traces"])
def test_a_column_expression_closing_the_views_select_never_runs(argv: list[str],
                                                                 user_root: Path,  # noqa: F811
                                                                 tmp_path: Path, capsys) -> None:
    copied = tmp_path / "copied.csv"
    folder = write_source(user_root, pin=False)
    _remap(folder, columns={"workload_type": _closing(copied)}, replay=["all", "{cluster}"])
    err = _one_line(argv, capsys)
    assert "mycluster.jobs, columns.workload_type" in err and "jobs.json" in err
    assert not copied.exists()


def test_a_column_the_table_lacks_and_an_aggregate_are_named(user_root: Path) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    _remap(folder, columns={"num_cpu": "cpus * 2"})
    with pytest.raises(RegistryError, match=r"columns.num_cpu: the expression 'cpus \* 2' reads "
                                            "'cpus', which is not a column of the table"):
        jobmap.table_select_sql(jobmap.job_table("mycluster.jobs"))
    _remap(folder, columns={"num_cpu": "gpus * 2", "num_nodes": "count(*)"})
    with pytest.raises(RegistryError, match=r"columns\.num_nodes: .* calls the aggregate"):
        jobmap.table_select_sql(jobmap.job_table("mycluster.jobs"))


def test_a_safe_mapping_of_expressions_still_reads(user_root: Path) -> None:  # noqa: F811
    folder = write_source(user_root, pin=False)
    _remap(folder, columns={"user": "upper(NULLIF(trim(user), ''))",
                            "num_cpu": "CASE WHEN gpus > 4 THEN gpus * 2 ELSE 1 END"})
    con = connect(["mycluster.jobs", "mltraces.jobs"])
    assert rows(con, "SELECT user, num_cpu FROM mltraces.jobs WHERE trace = 'mycluster/jobs' "
                     "ORDER BY job_id") == [("ANN", 1.0), ("BOB", 16.0), ("ANN", 1.0)]


# --------------------------------------------------------------------------- the checker


REFUSED = {
    "x; ATTACH 'a.db'": "not one SQL expression",
    "x) FROM t; COPY (SELECT 1) TO 'y'; SELECT (1": "statement",
    "x) AS a, (x": "adds to the query",
    "(SELECT 1)": "subquery",
    "sum(x) OVER ()": "window",
    "main.abs(x)": "without a schema",
    "t.x": "alone",
    "getenv('HOME')": "not an allowed function",
    "read_text('/etc/hostname')": "not an allowed function",
    "list_transform([x], y -> y)": "lambda|not an allowed",
    "COLUMNS(*)": "star",
    "$1": "parameter",
    "x --": "not one SQL expression",
    "(" * 5_000 + "x" + ")" * 5_000: "characters long",
    "(" * 500 + "x" + ")" * 500: "depth",
}


@pytest.mark.parametrize("text", sorted(REFUSED), ids=lambda t: t[:30])
def test_the_checker_refuses_everything_but_one_scalar_expression(text: str) -> None:
    with pytest.raises(UnsafeExpression, match=REFUSED[text]):
        check_expression(text, ["x"])


def test_every_shipped_mapping_passes_the_checker() -> None:
    """Shipped mappings are the package's own code: queries skip the parse, this holds them
    to the same rule (their expressions are the corpus the allow-list admits)."""
    from mltraces.exprcheck import check_expression

    checked = 0
    for entry in jobmap.job_tables().values():
        assert jobmap.shipped(entry)
        schema = get_schema(entry.table)
        names = [*schema.field_names, *(d.name for d in schema.derived)]
        jobmap.checked_columns(entry, names, always=True)
        checked += len(entry.columns)
        capacity = entry.capacity
        if capacity is not None and capacity.table is not None:
            table = get_schema(capacity.table)
            check_expression(str(capacity.gpus), [*table.field_names], aggregate=True)
            jobmap.capacity_sql(entry)
    assert checked > 100


# --------------------------------------------------------------------------- Python files


def _marked_modules(folder: Path, marks: Path) -> None:
    """A cli.py, readers.py and synthetic.py that each leave a file when imported (none of
    them imported yet in this process)."""
    import sys

    from mltraces.download import extras

    extras.extras.cache_clear()
    for name in [m for m in sys.modules if m.startswith("mltraces_user_sources.")]:
        del sys.modules[name]
    for module in ("cli", "readers", "synthetic"):
        (folder / f"{module}.py").write_text(
            f"open({str(marks / module)!r}, 'w').close()\n"
            "READERS = {}\nWRITERS = {}\nEXTRAS = {}\n")


@pytest.mark.parametrize("argv", [["list"], ["list", "zeus"], ["list", "mycluster"],
                                  ["verify"], ["info", "zeus"], ["validate", "zeus.power"],
                                  ["schedule", "--list-traces"]], ids=" ".join)
def test_a_user_folders_python_runs_only_when_that_source_is_used(argv: list[str],
                                                                  user_root: Path,  # noqa: F811
                                                                  tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    folder = write_source(user_root, pin=False)
    _marked_modules(folder, marks)
    _forget()
    main(argv)
    assert not (marks / "cli").exists()  # a user folder's cli.py never runs
    if "mycluster" not in argv and "--list-traces" not in argv:
        assert sorted(p.name for p in marks.iterdir()) == []


def test_a_user_folders_cli_py_is_never_imported_even_for_that_source(user_root: Path,  # noqa: F811
                                                                      tmp_path: Path) -> None:
    from mltraces.download import extras
    from mltraces.registry import source_module

    marks = tmp_path / "marks"
    marks.mkdir()
    _marked_modules(write_source(user_root, pin=False), marks)
    _forget()
    try:
        assert "acme-util" in extras.extras()  # the shipped source's own cli.py still counts
        assert source_module("mycluster", "cli") is None
        assert not (marks / "cli").exists()
    finally:
        extras.extras.cache_clear()
