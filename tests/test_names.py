"""Source names with hyphens (``alibaba-pai``, as the repositories spell them) name the
package's ``alibaba_pai`` wherever a source starts a name: sources, file ids, tables,
traces, ``--local`` keys."""

from __future__ import annotations

import pytest

from mltraces import jobmap, registry
from mltraces.catalog import resolve_local, select_schemas
from mltraces.cli import main
from mltraces.download import expand
from mltraces.names import canonical
from mltraces.schema import get_schema


@pytest.mark.parametrize(("typed", "meant"), [
    ("alibaba-pai", "alibaba_pai"),
    ("alibaba-pai/all", "alibaba_pai/all"),
    ("alibaba-openb.pods", "alibaba_openb.pods"),
    ("alibaba-openb/openb_node_list_gpu_node.csv", "alibaba_openb/openb_node_list_gpu_node.csv"),
    ("itp/raw-traces.tar.gz", "itp/raw-traces.tar.gz"),  # only the source part
    ("philly/trace-data.tar.gz", "philly/trace-data.tar.gz"),
    ("alibaba_pai", "alibaba_pai"),
    ("", ""),
    ("../alibaba-pai", "../alibaba-pai"),  # not a name that starts with a source
])
def test_canonical_reads_hyphens_only_in_the_source_part(typed: str, meant: str) -> None:
    assert canonical(typed) == meant


def test_every_lookup_takes_the_hyphenated_name() -> None:
    assert registry.get_source("alibaba-pai") is registry.get_source("alibaba_pai")
    node = "alibaba_openb/openb_node_list_gpu_node.csv"
    assert registry.get_file(node.replace("_openb", "-openb")) is registry.get_file(node)
    assert expand(["alibaba-openb"]) == expand(["alibaba_openb"])
    assert get_schema("alibaba-openb.pods") is get_schema("alibaba_openb.pods")
    assert select_schemas(["alibaba-pai"]) == select_schemas(["alibaba_pai"])
    assert jobmap.resolve_replay("alibaba-pai/all").entry.table == "alibaba_pai.jobs"
    assert list(resolve_local({"alibaba-openb.pods": "/x"})) == ["alibaba_openb.pods"]


def test_a_hyphen_in_a_name_that_is_no_source_still_fails_with_the_known_names() -> None:
    with pytest.raises(KeyError, match=r"unknown source 'no-such'.*alibaba_pai"):
        registry.get_source("no-such")
    with pytest.raises(KeyError, match="unknown trace 'alibaba_pai/none'"):
        jobmap.resolve_replay("alibaba-pai/none")


def test_info_prints_the_card_of_a_hyphenated_source(capsys) -> None:
    assert main(["info", "alibaba-pai"]) == 0
    assert "name:     alibaba_pai" in capsys.readouterr().out


def test_interop_and_describe_take_the_hyphenated_name(tmp_path) -> None:
    from mltraces.catalog import describe_table
    from mltraces.interop.jobs import resolve_trace

    assert resolve_trace("alibaba-openb/pods")[0].table == "alibaba_openb.pods"
    mine = tmp_path / "my-pods.csv"
    mine.write_text("a,b\n1,2\n")
    text = describe_table("alibaba-openb.pods", local={"alibaba-openb.pods": mine})
    assert "my-pods.csv" in text and "not in the cache" not in text  # the local file is read


def test_jobs_of_takes_a_source_exactly_and_in_either_spelling() -> None:
    import duckdb

    from mltraces.catalog.jobs import Coverage, filter_macro_sql
    from mltraces.jobmap import job_tables

    tables = job_tables()
    schema = get_schema("mltraces.jobs")
    con = duckdb.connect()
    con.execute("CREATE SCHEMA mltraces; CREATE VIEW mltraces.jobs AS SELECT * FROM (VALUES "
                "('alibaba_pai/jobs'), ('alibabaXpai/jobs'), ('itp/raw')) v(trace)")
    present = Coverage([tables["alibaba_pai.jobs"], tables["itp.jobs"]], [], False)
    con.execute(filter_macro_sql(schema, present))
    for name in ("alibaba_pai", "alibaba-pai", "alibaba_pai/jobs", "alibaba-pai/jobs"):
        assert con.execute("FROM mltraces.jobs_of(?)", [name]).fetchall() == [
            ("alibaba_pai/jobs",)]  # never alibabaXpai: no LIKE wildcard in the source
    assert con.execute("FROM mltraces.jobs_of('itp')").fetchall() == [("itp/raw",)]
    con.execute(filter_macro_sql(schema, Coverage([], [], False)))  # no trace mapped at all
    with pytest.raises(duckdb.Error, match="no trace or source itp; known traces and sources: no"):
        con.execute("FROM mltraces.jobs_of('itp')").fetchall()
