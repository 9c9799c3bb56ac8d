"""Safe unpacking of tarballs fetched from the network."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import DemoRegistry, FakeServer, make_tar, serve, synthetic_file

from mltraces.download import fetch_members, verify_cached
from mltraces.errors import UnsafeArchiveError


@pytest.mark.parametrize(
    ("members", "link", "expected"),
    [
        ({"../evil.csv": b"x"}, None, "would escape the extraction folder"),
        ({"/abs.csv": b"x"}, None, "would escape the extraction folder"),
        ({"ok.csv": b"x"}, "link.csv", "is a link"),
    ],
)
def test_unsafe_archives_are_refused(
    fake_server: FakeServer,
    demo_registry: DemoRegistry,
    isolated_cache: Path,
    members: dict[str, bytes],
    link: str | None,
    expected: str,
) -> None:
    data = make_tar(members, link=link)
    file = demo_registry.add(synthetic_file("evil.tar.gz", data))
    serve(fake_server, file, data)
    with pytest.raises(UnsafeArchiveError, match=expected):
        fetch_members(file.id)
    assert not (isolated_cache / "extracted").exists() or not any(
        (isolated_cache / "extracted").rglob("*.csv")
    )
    assert not (isolated_cache.parent / "evil.csv").exists()


def test_archive_members_are_recorded_and_verifiable(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    data = make_tar({"LICENSE": b"MIT", "cluster01.csv": b"job_id\n1\n"})
    file = demo_registry.add(synthetic_file("ok.tar.gz", data))
    serve(fake_server, file, data)
    members = fetch_members(file.id)
    assert set(members) == {"LICENSE", "cluster01.csv"}
    members["cluster01.csv"].write_bytes(b"job_id\n2\n")
    results = {r.id: r.status for r in verify_cached()}
    assert results["demo/ok.tar.gz"] == "ok"
    assert results["demo/ok.tar.gz/cluster01.csv"] == "corrupt"
    # the tampered member (same size) is never served again: it is unpacked afresh
    assert fetch_members(file.id)["cluster01.csv"].read_bytes() == b"job_id\n1\n"


def test_a_member_changed_after_extraction_is_unpacked_again(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    data = make_tar({"cluster01.csv": b"job_id\n1\n"})
    file = demo_registry.add(synthetic_file("edit.tar.gz", data))
    serve(fake_server, file, data)
    member = fetch_members(file.id)["cluster01.csv"]
    member.write_bytes(b"job_id\n9\n")  # same size, new mtime
    assert fetch_members(file.id)["cluster01.csv"].read_bytes() == b"job_id\n1\n"
