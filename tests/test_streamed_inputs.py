"""Tables read from one member of an archive as a stream, and headerless CSVs named by a header
file: registry archives over the loopback, a user's own archive, and their unpacked layout."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import zipfile
from pathlib import Path

import pytest
from catalog_fixtures import rows
from fakes import DemoRegistry, FakeServer, make_tar, serve, synthetic_file

from mltraces.catalog import attach_table, connect, materialize
from mltraces.catalog.problems import SchemaDriftError
from mltraces.errors import UnsafeArchiveError
from mltraces.schema import parse_schema

JOBS = b"j1,u1,4.0\nj2,u2,0.5\nj3,u1,8.0\n"  # headerless, like Alibaba's pai_*.csv
HEADER = b"job_name,user,plan_gpu\n"


def _schema(sources: list[dict], *, header: bool = False) -> object:
    fields = [{"name": "job_name", "type": "string", "description": "j"},
              {"name": "user", "type": "string", "description": "u"},
              {"name": "plan_gpu", "type": "number", "description": "g"}]
    if any("columns" in s for s in sources):
        fields.append({"name": "cluster", "type": "string", "description": "c"})
    return parse_schema({"name": "demo.jobs", "title": "t", "description": "d", "fields": fields,
                         "mltraces": {"reader": "csv", "dialect": {"header": header},
                                      "sources": sources}})


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


def _registered(demo: DemoRegistry, fake: FakeServer, name: str, data: bytes,
                **changes: object) -> object:
    file = synthetic_file(name, data)
    if changes:
        file = dataclasses.replace(file, **changes)
    file = demo.add(file)
    serve(fake, file, data)
    return file


def test_a_headerless_member_of_a_registry_tarball_becomes_a_table_without_unpacking(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    tarball = make_tar({"pai_job_table.csv": JOBS, "pai_other.csv": b"x\n" * 100})
    sha = hashlib.sha256(JOBS).hexdigest()
    _registered(demo_registry, fake_server, "pai_job_table.tar.gz", tarball, unpack=False,
                members=(("pai_job_table.csv", None, sha), ("pai_other.csv", 200, None)))
    _registered(demo_registry, fake_server, "pai_job_table.header", HEADER)
    schema = _schema([{"file": "demo/pai_job_table.tar.gz", "member": "pai_job_table.csv",
                       "header": "demo/pai_job_table.header"}])
    assert schema.file_ids == ("demo/pai_job_table.tar.gz", "demo/pai_job_table.header")
    built = materialize(schema)
    assert built.rows == 3 and built.inputs == ("pai_job_table.csv",)
    con = connect(tables=[])
    attach_table(con, schema, None, strict=True)
    assert rows(con, "SELECT sum(plan_gpu) FROM demo.jobs") == [(12.5,)]
    assert rows(con, "SELECT job_name, plan_gpu, _source, _row FROM "
                f"read_parquet('{built.parquet}') ORDER BY 1") == [
        ("j1", 4.0, "pai_job_table.csv", 1), ("j2", 0.5, "pai_job_table.csv", 2),
        ("j3", 8.0, "pai_job_table.csv", 3)]
    assert not (isolated_cache / "extracted").exists()  # the archive was never unpacked
    leftovers = [p.name for p in (isolated_cache / "tables").rglob("*") if p.is_file()]
    assert not [n for n in leftovers if n.endswith(".csv")]  # nor the member kept


def test_a_member_that_is_not_the_published_one_fails_the_build(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    tarball = make_tar({"pai_job_table.csv": JOBS})
    _registered(demo_registry, fake_server, "t.tar.gz", tarball, unpack=False,
                members=(("pai_job_table.csv", None, "0" * 64),))
    _registered(demo_registry, fake_server, "h.header", HEADER)
    schema = _schema([{"file": "demo/t.tar.gz", "member": "pai_job_table.csv",
                       "header": "demo/h.header"}])
    with pytest.raises(UnsafeArchiveError, match=r"the publisher's is 0{64}"):
        materialize(schema)
    missing = _schema([{"file": "demo/t.tar.gz", "member": "nope.csv", "header": "demo/h.header"}])
    with pytest.raises(SchemaDriftError, match=r"nope\.csv: t\.tar\.gz holds no file 'nope\.csv'"):
        materialize(missing)


def test_a_header_file_that_differs_from_the_schema_is_drift(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    _registered(demo_registry, fake_server, "jobs.csv", JOBS)
    _registered(demo_registry, fake_server, "h.header", b"job_name,usr,plan_gpu\n")
    schema = _schema([{"file": "demo/jobs.csv", "header": "demo/h.header"}])
    with pytest.raises(SchemaDriftError, match="'user' appears renamed to 'usr'"):
        materialize(schema)


def test_members_of_a_zip_give_one_table_with_a_column_per_member(
    fake_server: FakeServer, demo_registry: DemoRegistry, tmp_path: Path
) -> None:
    header = b"job_name,user,plan_gpu\n"
    data = _zip({"data/Venus/log.csv": header + b"v1,u,1\nv2,u,2\n",
                 "data/Earth/log.csv": header + b"e1,u,4\n", "__MACOSX/._x": b"junk"})
    _registered(demo_registry, fake_server, "data.zip", data, kind="zip", unpack=False)
    sources = [{"file": "demo/data.zip", "member": f"data/{c}/log.csv",
                "columns": {"cluster": c.lower()}} for c in ("Venus", "Earth")]
    schema = _schema(sources, header=True)
    expected = [("e1", "earth", "data/Earth/log.csv", 2), ("v1", "venus", "data/Venus/log.csv", 2),
                ("v2", "venus", "data/Venus/log.csv", 3)]
    query = "SELECT job_name, cluster, _source, _row FROM read_parquet('{}') ORDER BY 1"
    con = connect(tables=[])
    attach_table(con, schema, None, strict=True)
    assert rows(con, "SELECT count(*) FROM demo.jobs") == [(3,)]
    assert rows(con, query.format(materialize(schema).parquet)) == expected
    # the user's own copy: the zip itself, or the folder it unpacks to
    archive = tmp_path / "data.zip"
    archive.write_bytes(data)
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(unpacked)
    for local in (archive, unpacked):
        assert rows(con, query.format(materialize(schema, local).parquet)) == expected
