"""First-use pins: a file no publisher hash pins is pinned by its first verified download,
and every later download or change of its bytes is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import HOST, DemoRegistry, FakeServer, cache_leftovers, serve

from mltraces.download import cached_path, fetch_file, firstuse, verify_cached
from mltraces.errors import RegistryError, VerificationError
from mltraces.registry import RemoteFile

FIRST = b"TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00+00:00,12,3\n"
CHANGED = b"TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00+00:00,12,4\n"


def _first_use(name: str = "week.csv") -> RemoteFile:
    return RemoteFile(id=f"demo/{name}", url=f"https://{HOST}/blob/{name}",
                      description="no hash published", first_use=True)


def test_the_first_download_is_recorded_and_a_changed_one_is_refused(
        fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path,
        capsys: pytest.CaptureFixture) -> None:
    from mltraces.cli import main

    file = demo_registry.add(_first_use())
    assert firstuse.describe(file) == "unverified (first use)"
    assert main(["list", "demo"]) == 0
    assert "unverified (first use)" in capsys.readouterr().out
    serve(fake_server, file, FIRST)
    path = fetch_file(file.id, progress=False)
    assert path.read_bytes() == FIRST
    record = json.loads(firstuse.record_path(file).read_text())
    assert record["size"] == len(FIRST) and record["url"] == file.url
    assert firstuse.describe(file) == "first-use pinned"
    assert main(["list", "demo"]) == 0
    assert "first-use pinned" in capsys.readouterr().out
    assert fetch_file(file.id, progress=False) == path  # warm: the stamp vouches
    # the copy goes (a new machine sharing the state, a cleaned cache): the server now
    # serves other bytes, which the recorded pin refuses in one line
    path.unlink()
    serve(fake_server, file, CHANGED)
    with pytest.raises(VerificationError) as info:
        fetch_file(file.id, progress=False)
    message = str(info.value)
    assert "\n" not in message
    assert file.id in message and record["sha256"] in message
    assert "differ from its first download" in message
    assert str(firstuse.record_path(file)) in message
    assert cached_path(file) is None
    assert [p for p in cache_leftovers(isolated_cache) if "/files/" in p] == []
    assert json.loads(firstuse.record_path(file).read_text()) == record  # never re-pinned


def test_a_cached_first_use_file_changed_in_place_is_caught_by_verify(
        fake_server: FakeServer, demo_registry: DemoRegistry) -> None:
    file = demo_registry.add(_first_use("in-place.csv"))
    serve(fake_server, file, FIRST)
    path = fetch_file(file.id, progress=False)
    path.write_bytes(CHANGED)
    [result] = verify_cached([file])
    assert result.status == "corrupt"
    assert "differ from its first download" in result.detail
    assert not path.exists()
    serve(fake_server, file, FIRST)  # the publisher's bytes again: accepted, still pinned
    assert fetch_file(file.id, progress=False).read_bytes() == FIRST
    [result] = verify_cached([file])
    assert result.status == "ok" and "first-use pinned" in result.detail


def test_deleting_the_record_accepts_the_next_download(
        fake_server: FakeServer, demo_registry: DemoRegistry) -> None:
    file = demo_registry.add(_first_use("moved.csv"))
    serve(fake_server, file, FIRST)
    fetch_file(file.id, progress=False).unlink()
    firstuse.record_path(file).unlink()
    serve(fake_server, file, CHANGED)
    assert fetch_file(file.id, progress=False).read_bytes() == CHANGED
    assert firstuse.recorded(file)["size"] == len(CHANGED)


def test_a_page_instead_of_the_data_is_never_recorded(
        fake_server: FakeServer, demo_registry: DemoRegistry) -> None:
    file = demo_registry.add(_first_use("page.csv"))
    serve(fake_server, file, b"<!DOCTYPE html><html><body>Server busy</body></html>")
    with pytest.raises(VerificationError, match="HTML page"):
        fetch_file(file.id, progress=False)
    assert firstuse.recorded(file) is None


def test_the_registry_takes_first_use_only_for_downloads_without_a_hash(tmp_path: Path) -> None:
    from mltraces.registry import load_source

    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "citation.bib").write_text("@misc{demo, title={Demo}, year={2024}}")

    def source(**entry: object) -> object:
        raw = {"name": "demo", "title": "", "description": "", "homepage": "", "license": "MIT",
               "pins": {"blob": "example.org container, no versions"},
               "files": [{"url": "https://example.org/week.csv", **entry}]}
        (folder / "source.json").write_text(json.dumps(raw))
        return load_source(folder)

    assert source(pin="first-use").files[0].first_use
    assert source(pin="first-use").files[0].hash_kind == "first-use"
    with pytest.raises(RegistryError, match="is not 'first-use'"):
        source(pin="trust-me")
    with pytest.raises(RegistryError, match="whose publisher gives no hash"):
        source(pin="first-use", sha256="a" * 64)
    with pytest.raises(RegistryError, match="needs sha256 or git_blob"):
        source()


def test_a_table_of_a_first_use_file_says_so_in_the_status(
        fake_server: FakeServer, demo_registry: DemoRegistry) -> None:
    """The not-fetched reason says ``unverified (first use)``; once fetched the table's
    origin says ``first-use pinned``."""
    from mltraces.catalog.plan import plan_for
    from mltraces.catalog.problems import NotFetchedError
    from mltraces.schema import parse_schema

    file = demo_registry.add(_first_use("t.csv"))
    schema = parse_schema({
        "name": "demo.t", "fields": [{"name": "a", "type": "integer", "description": "a"}],
        "mltraces": {"reader": "csv", "sources": [{"file": file.id}]}})
    with pytest.raises(NotFetchedError, match=r"unverified \(first use\)"):
        plan_for(schema, None, fetch=False)
    serve(fake_server, file, b"a\n1\n")
    plan = plan_for(schema, None, fetch=True)
    assert plan.origin == "upstream, first-use pinned"
    assert plan.keys == [f"{file.id}=sha256:{firstuse.recorded(file)['sha256']}"]
