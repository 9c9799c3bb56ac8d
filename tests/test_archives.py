"""Safe unpacking of tarballs fetched from the network."""

from __future__ import annotations

import io
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


# --------------------------------------------------------------------------- one member, zip


def _zip(members: dict[str, bytes], *, link: str | None = None, mode: int | None = None,
         encrypted: str | None = None) -> bytes:
    import io
    import stat
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zipped.writestr(info, "/etc/passwd")
        if mode is not None:
            info = zipfile.ZipInfo("fifo")
            info.external_attr = mode << 16
            zipped.writestr(info, "")
    data = buffer.getvalue()
    if encrypted:  # set the "encrypted" flag bit in the central directory record
        at = data.rindex(b"PK\x01\x02")
        data = data[:at + 8] + bytes([data[at + 8] | 1]) + data[at + 9:]
    return data


def _read(archive: Path, name: str, limits=None) -> bytes:
    from mltraces.download.archives import open_member

    with open_member(archive, name, limits) as stream:
        return stream.read()


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_one_member_is_read_as_a_stream_and_nothing_is_written(tmp_path: Path, kind: str) -> None:
    from mltraces.download.archives import MissingMemberError

    members = {"trace-data/cluster_job_log": b"[]" * 1000, "trace-data/other": b"x" * 10}
    archive = tmp_path / f"a.{kind}"
    archive.write_bytes(make_tar(members) if kind == "tar" else _zip(members))
    before = sorted(tmp_path.rglob("*"))
    assert _read(archive, "trace-data/cluster_job_log") == b"[]" * 1000
    assert _read(archive, "./trace-data/other") == b"x" * 10
    assert sorted(tmp_path.rglob("*")) == before
    with pytest.raises(MissingMemberError, match=r"a\.\w+ holds no file 'nope' \(it holds: "
                       r"'trace-data/cluster_job_log', 'trace-data/other'\)"):
        _read(archive, "nope")


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_a_member_is_checked_against_its_published_hash_as_it_is_read(
        tmp_path: Path, kind: str) -> None:
    import hashlib

    from mltraces.download.archives import Limits, open_member

    data = b"job,1\n" * 5000
    archive = tmp_path / f"a.{kind}"
    archive.write_bytes(make_tar({"t.csv": data}) if kind == "tar" else _zip({"t.csv": data}))
    good = Limits.pinned([("t.csv", len(data), hashlib.sha256(data).hexdigest())])
    assert _read(archive, "t.csv", good) == data
    bad = Limits.pinned([("t.csv", None, "0" * 64)])
    with pytest.raises(UnsafeArchiveError, match=r"member 't\.csv' has sha256 [0-9a-f]{64}, "
                       "the publisher's is 0{64}"):
        _read(archive, "t.csv", bad)
    # read in part: the rest is drained, and checked, when the block ends
    with pytest.raises(UnsafeArchiveError, match="the publisher's is"), \
            open_member(archive, "t.csv", bad) as stream:
        stream.read(10)
    with pytest.raises(UnsafeArchiveError, match=r"'t\.csv' is 30,000 bytes, the registry pins 9"):
        _read(archive, "t.csv", Limits.pinned({"t.csv": 9}))


@pytest.mark.parametrize(
    ("kind", "members", "extra", "expected"),
    [
        ("tar", {"../evil": b"x", "t.csv": b"1"}, {}, "would escape the extraction folder"),
        ("tar", {"a.csv": b"1"}, {"link": "l"}, "'l' is a link"),  # met on the way to t.csv
        ("zip", {"../evil": b"x", "t.csv": b"1"}, {}, "would escape the extraction folder"),
        ("zip", {"t.csv": b"1"}, {"link": "l"}, "'l' is a link"),
        ("zip", {"t.csv": b"1"}, {"mode": 0o010644}, "'fifo' is a special file"),
        ("zip", {"t.csv": b"1"}, {"encrypted": "t.csv"}, "is encrypted"),
    ],
)
def test_an_unsafe_archive_is_refused_before_its_member_is_read(
        tmp_path: Path, kind: str, members: dict, extra: dict, expected: str) -> None:
    archive = tmp_path / f"bad.{kind}"
    archive.write_bytes(make_tar(members, **extra) if kind == "tar" else _zip(members, **extra))
    with pytest.raises(UnsafeArchiveError, match=expected):
        _read(archive, "t.csv")


def test_a_member_of_a_bomb_or_a_cut_archive_is_refused(tmp_path: Path) -> None:
    from fakes import tar_bomb

    bomb = tmp_path / "bomb.tar.gz"
    bomb.write_bytes(tar_bomb({"t.csv": 6 << 30}))
    with pytest.raises(UnsafeArchiveError, match="more than 4,294,967,296 bytes"):
        _read(bomb, "t.csv")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(make_tar({"t.csv": bytes(range(256)) * 4000})[:3000])
    with pytest.raises(UnsafeArchiveError, match=r"not a readable tar archive|cut or damaged"):
        _read(cut, "t.csv")
    (tmp_path / "cut.zip").write_bytes(_zip({"t.csv": b"x" * 100_000})[:200])
    with pytest.raises(UnsafeArchiveError, match="not a readable zip archive"):
        _read(tmp_path / "cut.zip", "t.csv")


def _zip_damaged(data: bytes, member: bytes, how: str) -> bytes:
    """A one-member zip broken one way: a deflate block garbled, or its stated CRC wrong."""
    if how == "garbled":
        start = data.index(b"t.csv") + len(b"t.csv") + 40  # inside the deflate stream
        return data[:start] + b"\xff" * 64 + data[start + 64:]
    import zlib

    crc = zlib.crc32(member).to_bytes(4, "little")
    return data.replace(crc, bytes(b ^ 0xFF for b in crc))  # local header and directory


def test_a_deflated_zip_member_is_inflated_by_isal_to_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Members are inflated by ISA-L (Helios's 343 MB in 0.2 CPU-s against 0.57 with zlib);
    what is read is what zlib gives."""
    import random
    import zipfile

    from isal import isal_zlib

    from mltraces.download import archives

    made: list[object] = []
    monkeypatch.setattr(isal_zlib, "decompressobj",
                        lambda *a, real=isal_zlib.decompressobj: made.append(a) or real(*a))
    data = random.Random(3).randbytes(300_000) + b"job,1\n" * 100_000
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip({"t.csv": data}))
    assert _read(archive, "t.csv") == data
    assert made == [(-15,)]
    with zipfile.ZipFile(archive) as zipped:  # a stored member has nothing to inflate
        info = zipfile.ZipInfo("s.csv")
        raw = io.BytesIO(b"x")
        archives._inflate_with_isal(raw, info)
        assert not hasattr(raw, "_decompressor") and zipped.namelist() == ["t.csv"]


@pytest.mark.parametrize("how", ["garbled", "crc"])
def test_a_damaged_zip_member_is_one_line_naming_the_archive(tmp_path: Path, how: str) -> None:
    import random

    member = random.Random(5).randbytes(200_000) + b"x" * 200_000
    archive = tmp_path / "broken.zip"
    archive.write_bytes(_zip_damaged(_zip({"t.csv": member}), member, how))
    with pytest.raises(UnsafeArchiveError, match=r"^broken\.zip: ") as caught:
        _read(archive, "t.csv")
    assert "\n" not in str(caught.value)


def test_a_zip_unpacks_with_the_guarantees_of_a_tarball(
        tmp_path: Path, isolated_cache: Path) -> None:
    import hashlib

    from mltraces.download.archives import Limits, extract_verified, verify_members

    data = {"data/Venus/cluster_log.csv": b"job_id\n1\n", "data/Earth/cluster_log.csv": b"j\n"}
    archive = tmp_path / "data.zip"
    archive.write_bytes(_zip(data))
    target = isolated_cache / "extracted" / "data.zip-x"
    found = extract_verified(archive, target)
    assert {n: p.read_bytes() for n, p in found.items()} == data
    assert verify_members(target) == dict.fromkeys(data)
    pins = [(n, len(b), hashlib.sha256(b).hexdigest()) for n, b in data.items()]
    pins[0] = (pins[0][0], pins[0][1], "f" * 64)
    with pytest.raises(UnsafeArchiveError, match=r"the publisher's is f{64}"):
        extract_verified(archive, isolated_cache / "extracted" / "data.zip-y", Limits.pinned(pins))
    assert not (isolated_cache / "extracted" / "data.zip-y").exists()
    evil = tmp_path / "evil.zip"
    evil.write_bytes(_zip({"ok": b"1"}, link="l"))
    with pytest.raises(UnsafeArchiveError, match="is a link"):
        extract_verified(evil, isolated_cache / "extracted" / "evil.zip-z")
    left = (isolated_cache / "extracted").glob("evil.zip-z*")
    assert [p.name for p in left] == ["evil.zip-z.lock"]


def test_an_archive_read_member_by_member_is_fetched_but_never_unpacked(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    import dataclasses

    from mltraces.download import fetch, member_limits
    from mltraces.download.archives import open_member
    from mltraces.errors import MltracesError

    data = make_tar({"trace-data/log": b"[1]", "trace-data/util": b"x" * 1000})
    file = dataclasses.replace(synthetic_file("big.tar.gz", data), unpack=False,
                               members=(("trace-data/log", 3), ("trace-data/util", 1000)))
    file = demo_registry.add(file)
    serve(fake_server, file, data)
    paths = fetch(file.id)
    assert list(paths) == [file.id] and not (isolated_cache / "extracted").exists()
    with open_member(paths[file.id], "trace-data/log", member_limits(file)) as stream:
        assert stream.read() == b"[1]"
    with pytest.raises(MltracesError, match="unpack: false"):
        fetch_members(file.id)


# --------------------------------------------------------------------------- one member, gzip


def _damaged(data: bytes, how: str) -> bytes:
    """A gzipped tar broken one way: cut short, a deflate block garbled, or its CRC wrong."""
    if how == "cut":
        return data[: len(data) // 2]
    if how == "garbled":
        return data[:20] + b"\xff" * 64 + data[84:]
    return data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:]  # the CRC32 trailer


@pytest.mark.parametrize("how", ["cut", "garbled", "crc"])
def test_a_damaged_gzip_stream_is_one_line_naming_the_archive(tmp_path: Path, how: str) -> None:
    import random

    noise = random.Random(7).randbytes(200_000)  # incompressible: the damage lands in data
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(_damaged(make_tar({"t.csv": noise, "u.csv": b"x" * 10}), how))
    with pytest.raises(UnsafeArchiveError, match=r"^broken\.tar\.gz: ") as caught:
        _read(archive, "u.csv")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("compression", ["gz", "xz", "bz2", ""])
def test_tar_members_read_the_same_whatever_the_compression(
        tmp_path: Path, compression: str) -> None:
    """gzip goes through ISA-L (three times zlib's speed), the others through tarfile."""
    import io
    import tarfile

    from mltraces.download.archives import _gzip_stream

    data = b"job,1\n" * 20_000
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}") as tar:
        info = tarfile.TarInfo("t.csv")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    archive = tmp_path / "a.tar"
    archive.write_bytes(buffer.getvalue())
    stream = _gzip_stream(archive)
    assert (stream is not None) == (compression == "gz")
    if stream is not None:
        stream.close()
    assert _read(archive, "t.csv") == data


@pytest.mark.parametrize("path", ["member", "extraction"])
def test_gzip_data_that_holds_no_tar_says_so(tmp_path: Path, isolated_cache: Path,
                                              path: str) -> None:
    """Both ways into a tar (one member streamed, the whole archive unpacked) open it alike."""
    import gzip

    from mltraces.download.archives import Limits, extract_verified

    archive = tmp_path / "notatar.tar.gz"
    archive.write_bytes(gzip.compress(b"job_id,user\n1,a\n" * 200))
    with pytest.raises(UnsafeArchiveError, match=r"^notatar\.tar\.gz: not a readable tar "
                       r"archive \(invalid header: gzip data that holds no tar\)$"):
        if path == "member":
            _read(archive, "t.csv")
        else:
            extract_verified(archive, isolated_cache / "extracted" / "out", Limits.local())


def test_a_tar_member_streams_in_large_reads(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A member read in order comes out of the inflater a MiB at a time, not in tarfile's
    10 KiB records (35 k reads for PAI's job table, a quarter of its read-out time)."""
    from mltraces.download import archives

    reads: list[int] = []
    real = archives._gzip_stream

    class Counted(io.RawIOBase):
        def __init__(self, inner) -> None:
            self.inner = inner

        def read(self, size: int = -1) -> bytes:
            reads.append(size)
            return self.inner.read(size)

        def close(self) -> None:
            self.inner.close()

    monkeypatch.setattr(archives, "_gzip_stream", lambda a: Counted(real(a)))
    data = b"job,1\n" * 1_000_000  # 6 MB
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(make_tar({"t.csv": data}))
    assert _read(archive, "t.csv") == data
    assert 0 < len(reads) < 30
