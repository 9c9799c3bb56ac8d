"""The download layer against hostile inputs (issue 10): one test per attack.

Every input is generated here; servers listen on 127.0.0.1 ephemeral ports and stop
with the test. Each attack must end in seconds, within 1 GB, as one mltraces error
(one line on the CLI), and write nothing outside MLTRACES_CACHE.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import tarfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from fakes import (
    HOST,
    DemoRegistry,
    FakeServer,
    FullDisk,
    cache_leftovers,
    closed_port_url,
    dead_pid,
    make_tar,
    serve,
    serving,
    synthetic_file,
    tar_bomb,
)

from mltraces import download as fetch_module
from mltraces.cli import main
from mltraces.download import cleanup, fetch_file, fetch_members, local_path, verify_cached
from mltraces.download import http as http_module
from mltraces.download.archives import extract_verified
from mltraces.errors import (
    CacheError,
    FetchError,
    HostDownError,
    LimitError,
    MltracesError,
    UnsafeArchiveError,
    UnsafePathError,
    VerificationError,
)
from mltraces.registry import RemoteFile
from mltraces.sources.acme import hub

GiB = 1 << 30
COMMIT = "c" * 40


# --------------------------------------------------------------------------- guards


@contextmanager
def bounded(seconds: float = 30.0, memory: int = GiB) -> Iterator[None]:
    """The block ends within ``seconds`` and its Python allocations peak under ``memory``."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        yield
    finally:
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    assert peak < memory, f"peaked at {peak / 2**20:.0f} MiB"


def files_under(root: Path, *, deep: bool = True) -> set[str]:
    """Every path under ``root`` (only its direct files when not ``deep``); races ignored."""
    if not deep:
        try:
            return {str(p) for p in root.iterdir() if p.is_file()}
        except OSError:
            return set()
    return {os.path.join(folder, name) for folder, dirs, names in os.walk(root)
            for name in [*dirs, *names]}


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory, isolated_cache: Path) -> Iterator[Path]:
    """Fails the test if anything appears outside MLTRACES_CACHE: in this session's temp
    area, or as a file beside it. Yields a folder for the test's own inputs."""
    base = tmp_path_factory.getbasetemp()
    inputs = tmp_path_factory.mktemp("inputs")
    before = files_under(base) | files_under(base.parent, deep=False)
    yield inputs
    new = files_under(base) | files_under(base.parent, deep=False)
    stray = [p for p in new - before if not p.startswith((str(isolated_cache), str(inputs)))]
    assert not stray, f"written outside the cache: {sorted(stray)[:5]}"


def one_line_cli_error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """Run the CLI, expect exit 1 and exactly one stderr line; return it."""
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- item 1: paths


def _hub_answer(entries: list[dict]) -> Callable[[BaseHTTPRequestHandler], None]:
    """A Hub whose revision API says COMMIT and whose tree API lists ``entries``."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if "/revision/" in handler.path:
            body = json.dumps({"sha": COMMIT}).encode()
        elif "/tree/" in handler.path:
            body = json.dumps(entries).encode()
        else:
            handler.send_error(404)
            return
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def _entry(path: object) -> dict:
    return {"type": "file", "path": path, "size": 3, "oid": "a" * 40,
            "lfs": {"oid": "b" * 64, "size": 3}}


@pytest.mark.parametrize(
    "path",
    [
        "data/utilization/../../../../victim.txt",
        "../../victim.txt",
        "/tmp/victim.txt",
        "data/utilization/seren\\..\\..\\victim.txt",
        "data/utilization/seren/GPU\x00UTIL.csv",
        "data/utilization/./seren/GPU_UTIL.csv",
        "data/utilization//GPU_UTIL.csv",
        "data/utilization/seren/",
        ".",
        "",
        "data/other/GPU_UTIL.csv",
        "data/utilization/" + "x" * 300 + ".csv",
        42,
    ],
)
def test_hub_file_list_with_unsafe_paths_is_refused(
    path: object, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, outside: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    victim = isolated_cache.parent / "victim.txt"
    entries = [_entry("data/utilization/seren/GPU_UTIL.csv"), _entry(path)]
    with serving(_hub_answer(entries)) as url, bounded():
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        with pytest.raises(FetchError, match=r"unsafe.*[Rr]efusing the whole list"):
            hub.manifest()
        err = one_line_cli_error(["list", "acme-util"], capsys)
    assert "Refusing the whole list" in err
    assert not victim.exists()
    assert not list(isolated_cache.rglob("tree/*/*.json")), "no file list was cached"


def test_a_tampered_cached_file_list_is_refused(
    monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, outside: Path,
) -> None:
    good = [_entry("data/utilization/seren/GPU_UTIL.csv")]
    with serving(_hub_answer(good)) as url:
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        hub.manifest()
    [cached] = isolated_cache.rglob("tree/*/*.json")
    data = json.loads(cached.read_text())
    data["files"][0]["path"] = "data/utilization/../../../../victim.txt"
    cached.write_text(json.dumps(data))
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    with pytest.raises(FetchError, match=r"cached file list .* is invalid.*delete it"):
        hub.manifest()
    assert hub.cached_manifests() == []  # `verify` skips it (with a warning)


def test_next_page_links_must_stay_on_the_tree_api(
    monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = json.dumps({"sha": COMMIT} if "/revision/" in handler.path else []).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Link", '<https://evil.example.org/steal?x=1>; rel="next"')
        handler.end_headers()
        handler.wfile.write(body)

    with serving(answer) as url:
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        with pytest.raises(FetchError, match=r"next page at 'https://evil\.example\.org"):
            hub.manifest()


def test_hub_names_with_query_characters_stay_paths() -> None:
    file = hub.HubFile("data/utilization/seren/GPU?UTIL#1.csv", 3, "b" * 64, None)
    remote = file.remote(COMMIT)
    assert remote.url.endswith("/seren/GPU%3FUTIL%231.csv")
    assert local_path(remote).name == "GPU%3FUTIL%231.csv"


@pytest.mark.parametrize(
    "url",
    [
        f"https://{HOST}/pinned/../../../../victim.csv",
        f"https://{HOST}/pinned/%2e%2e/./victim.csv",
        "https://../victim.csv",
        f"https://{HOST}//victim.csv",
    ],
)
def test_registry_urls_that_escape_the_cache_are_refused(
    url: str, demo_registry: DemoRegistry, isolated_cache: Path, outside: Path
) -> None:
    file = demo_registry.add(RemoteFile(id="demo/victim.csv", url=url, description="",
                                        sha256="0" * 64))
    with pytest.raises(UnsafePathError, match=r"unsafe|empty"):
        fetch_file(file)
    assert not (isolated_cache.parent.parent / "victim.csv").exists()


def test_a_symlink_inside_the_cache_cannot_redirect_a_write(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path, outside: Path
) -> None:
    data = b"a,b\n1,2\n"
    file = demo_registry.add(synthetic_file("t.csv", data))
    serve(fake_server, file, data)
    (isolated_cache / "files").mkdir()
    (isolated_cache / "files" / HOST).symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match=r"outside .*symlink"):
        fetch_file(file.id, progress=False)
    assert list(outside.iterdir()) == []
    assert fake_server.requests == []


def test_directory_mirror_paths_stay_in_the_mirror(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    mirror = outside / "mirror"
    mirror.mkdir()
    (outside / "secret.csv").write_bytes(b"secret")
    monkeypatch.setenv("MLTRACES_MIRROR", str(mirror))
    file = RemoteFile(id="demo/secret.csv", url=f"https://{HOST}/../secret.csv",
                      description="", sha256=hashlib.sha256(b"secret").hexdigest())
    from mltraces.download.mirrors import candidate_urls

    with pytest.raises(UnsafePathError):
        candidate_urls(file)


# --------------------------------------------------------------------------- item 5: limits


def _endless(handler: BaseHTTPRequestHandler, *, length: str | None = None) -> None:
    """200 with no end to the body (no Content-Length: the body ends when the socket does)."""
    handler.send_response(200)
    if length is not None:
        handler.send_header("Content-Length", length)
    handler.end_headers()
    chunk = b"x" * 65536
    for _ in range(1 << 20):  # 64 GiB: "never" for a test
        handler.wfile.write(chunk)


def _pinned_demo(demo_registry: DemoRegistry, size: int | None = 1_943_846) -> RemoteFile:
    return demo_registry.add(RemoteFile(
        id="demo/raw-traces.tar.gz", url=f"https://{HOST}/pinned/raw-traces.tar.gz",
        description="", size=size, sha256="1" * 64, kind="tar.gz",
    ))


def test_a_body_that_never_ends_is_cut_at_the_pinned_size(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path,
    outside: Path,
) -> None:
    file = _pinned_demo(demo_registry)
    with serving(_endless) as url, bounded():
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        with pytest.raises(VerificationError, match=r"sha256 mismatch.*deleted and not used"):
            fetch_file(file, progress=False)
    assert cache_leftovers(isolated_cache) == []


def test_an_unsized_body_that_never_ends_is_cut_at_the_cap(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path,
    outside: Path,
) -> None:
    file = _pinned_demo(demo_registry, size=None)
    monkeypatch.setenv("MLTRACES_MAX_DOWNLOAD", "2M")
    with serving(_endless) as url, bounded():
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        with pytest.raises(VerificationError, match=r"MLTRACES_MAX_DOWNLOAD"):
            fetch_file(file, progress=False)
    assert cache_leftovers(isolated_cache) == []


def test_an_announced_length_over_the_cap_is_not_read(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path,
    outside: Path,
) -> None:
    file = _pinned_demo(demo_registry, size=None)
    monkeypatch.setenv("MLTRACES_MAX_DOWNLOAD", "2M")
    with serving(lambda h: _endless(h, length=str(300 << 20))) as url, bounded():
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        with pytest.raises(VerificationError, match=r"announces 314,572,800 bytes, more than "
                           r"MLTRACES_MAX_DOWNLOAD"):
            fetch_file(file, progress=False)
    assert cache_leftovers(isolated_cache) == []


def _trickle(handler: BaseHTTPRequestHandler) -> None:
    """Announce 1 MB, then send one byte at a time, slowly, for ever."""
    handler.send_response(200)
    handler.send_header("Content-Length", str(1 << 20))
    handler.end_headers()
    for _ in range(1 << 20):
        handler.wfile.write(b"x")
        handler.wfile.flush()
        time.sleep(0.05)


def test_a_trickling_server_cannot_hold_the_lock_past_the_deadline(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    from filelock import FileLock

    file = demo_registry.add(RemoteFile(id="demo/slow.csv", url=f"https://{HOST}/slow.csv",
                                        description="", size=1 << 20, sha256="2" * 64))
    monkeypatch.setenv("MLTRACES_DOWNLOAD_TIMEOUT", "1.5")
    with serving(_trickle) as url, bounded(seconds=20):
        monkeypatch.setenv("MLTRACES_MIRROR", url)
        started = time.monotonic()
        with pytest.raises(LimitError, match=r"MLTRACES_DOWNLOAD_TIMEOUT=1\.5.*resumes"):
            fetch_file(file, progress=False)
        assert time.monotonic() - started < 10
    lock = FileLock(str(local_path(file)) + ".lock", timeout=0)
    lock.acquire()  # released: another process can go on
    lock.release()
    part = local_path(file).with_name("slow.csv.part")
    assert 0 < part.stat().st_size < 1000, "the trickle is kept to resume"


def test_a_pinned_archive_holds_only_its_listed_members(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path, outside: Path
) -> None:
    bomb = tar_bomb({"cluster01.csv": 6 * GiB})
    assert len(bomb) < 8 << 20
    file = demo_registry.add(RemoteFile(
        id="demo/bomb.tar.gz", url=f"https://{HOST}/pinned/bomb.tar.gz", description="",
        size=len(bomb), sha256=hashlib.sha256(bomb).hexdigest(), kind="tar.gz",
        members=(("cluster01.csv", 83726),),
    ))
    serve(fake_server, file, bomb)
    with bounded(), pytest.raises(UnsafeArchiveError, match=r"6,442,450,944 bytes, the registry"):
        fetch_members(file.id)
    assert not list((isolated_cache / "extracted").glob("*/cluster01.csv"))
    assert not list((isolated_cache / "extracted").glob("*.staging-*"))


def test_an_unlisted_member_of_a_pinned_archive_is_refused(
    fake_server: FakeServer, demo_registry: DemoRegistry, outside: Path
) -> None:
    data = make_tar({"cluster01.csv": b"job_id\n1\n", "extra.csv": b"x\n"})
    file = demo_registry.add(RemoteFile(
        id="demo/two.tar.gz", url=f"https://{HOST}/pinned/two.tar.gz", description="",
        size=len(data), sha256=hashlib.sha256(data).hexdigest(), kind="tar.gz",
        members=(("cluster01.csv", 9),),
    ))
    serve(fake_server, file, data)
    with pytest.raises(UnsafeArchiveError, match=r"'extra\.csv' is not among the 1 members"):
        fetch_members(file.id)


@pytest.mark.parametrize(
    ("members", "setting", "expected"),
    [
        ({"big.csv": 6 * GiB}, {}, r"more than 4,294,967,296 bytes"),
        ({f"part{i}.csv": 64 << 20 for i in range(100)}, {"MLTRACES_MAX_UNPACKED": "256M"},
         r"more than 268,435,456 bytes.*MLTRACES_MAX_UNPACKED"),
        ({f"m{i}.csv": 0 for i in range(200)}, {"MLTRACES_MAX_MEMBERS": "100"},
         r"more than 100 members.*MLTRACES_MAX_MEMBERS"),
    ],
)
def test_a_local_archive_is_bounded(
    members: dict[str, int], setting: dict[str, str], expected: str,
    monkeypatch: pytest.MonkeyPatch, isolated_cache: Path, outside: Path,
) -> None:
    for name, value in setting.items():
        monkeypatch.setenv(name, value)
    archive = outside / "local.tar.gz"
    archive.write_bytes(tar_bomb(members))
    target = isolated_cache / "local-extracted" / "local"
    with bounded(), pytest.raises(UnsafeArchiveError, match=expected):
        extract_verified(archive, target)
    assert not target.exists()
    assert not list(target.parent.glob("*.staging-*"))


# --------------------------------------------------------------------------- weak items


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"a" * 64
         + b"\nsize 1943846\n", "Git LFS pointer"),
        (b"<!DOCTYPE html><html><body>429 Too Many Requests</body></html>", "HTML page"),
    ],
)
def test_a_finished_short_body_is_named_at_once(
    body: bytes, named: str, fake_server: FakeServer, demo_registry: DemoRegistry,
    isolated_cache: Path, outside: Path,
) -> None:
    data = bytes(range(256)) * 100
    file = demo_registry.add(synthetic_file("sized.csv", data))  # size pinned
    serve(fake_server, file, body)
    with pytest.raises(VerificationError, match=named):
        fetch_file(file.id, progress=False)
    assert len(fake_server.requests) == 1, "a finished body is not asked for again"
    assert cache_leftovers(isolated_cache) == []


def test_a_content_length_beyond_the_body_keeps_the_last_chunk(
    fake_server: FakeServer, demo_registry: DemoRegistry, outside: Path
) -> None:
    data = os.urandom(100_000 + 123)  # not a multiple of any chunk size
    file = demo_registry.add(synthetic_file("lying.bin", data))
    serve(fake_server, file, data, content_length=len(data) + 5000)
    assert fetch_file(file.id, progress=False).read_bytes() == data
    assert len(fake_server.requests) == 1


def test_a_corrupted_part_is_retried_once_from_byte_zero(
    fake_server: FakeServer, demo_registry: DemoRegistry, outside: Path
) -> None:
    data = bytes(range(256)) * 400
    file = demo_registry.add(synthetic_file("part.bin", data))
    serve(fake_server, file, data)
    part = local_path(file).with_name("part.bin.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\xff" * 50_000)  # a killed run's part, damaged since
    assert fetch_file(file.id, progress=False).read_bytes() == data
    assert [r for _, r in fake_server.requests] == ["bytes=50000-", None]
    assert not part.exists()


def test_a_persistently_bad_mirror_still_says_upstream_changed_or_stale(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    data = bytes(range(256)) * 400
    file = demo_registry.add(synthetic_file("bad.bin", data))
    serve(fake_server, file, data[:-1] + b"\x00")
    part = local_path(file).with_name("bad.bin.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:50_000])
    with pytest.raises(VerificationError, match=r"sha256 mismatch.*mirror is stale"):
        fetch_file(file.id, progress=False)
    assert len(fake_server.requests) == 2  # the resumed attempt, then once from byte 0
    assert cache_leftovers(isolated_cache) == []


def test_leftovers_of_killed_runs_are_removed_and_live_ones_kept(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    data = b"a,b\n" * 100
    file = demo_registry.add(synthetic_file("heal.csv", data))
    serve(fake_server, file, data)
    folder = local_path(file).parent
    folder.mkdir(parents=True)
    gone, alive = dead_pid(), os.getpid()
    dead = [
        folder / f"heal.csv.verified.json.tmp-{gone}",
        folder / "heal.csv.part.copy",
        folder / "tmpab12cd34",
        isolated_cache / "hub" / "x" / f"refs.json.tmp-{gone}",
    ]
    staging = isolated_cache / "extracted" / f"a.tar.gz-0123456789abcdef.staging-{gone}"
    kept = [folder / f"other.csv.verified.json.tmp-{alive}", folder / "other.csv.part"]
    for path in [*dead, *kept]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind")
    os.utime(folder / "tmpab12cd34", (time.time() - 3600, time.time() - 3600))
    staging.mkdir(parents=True)
    (staging / "cluster01.csv").write_bytes(b"half")
    fetch_file(file.id, progress=False)  # a cold fetch sweeps its folder
    assert not any(p.exists() for p in dead[:3])
    verify_cached()  # verify sweeps the whole cache
    assert not dead[3].exists() and not staging.exists()
    assert all(p.exists() for p in kept)


def test_other_layers_can_remove_their_own_orphans(tmp_path: Path) -> None:
    import re

    gone = tmp_path / f"convert-{dead_pid()}-abc"
    mine = tmp_path / f"convert-{os.getpid()}-abc"
    gone.mkdir()
    mine.mkdir()
    removed = cleanup.remove_orphans(tmp_path, re.compile(r"^convert-(?P<pid>\d+)-"))
    assert removed == [gone] and mine.exists()


@pytest.mark.parametrize(
    ("archive", "expected"),
    [
        (lambda: make_tar({"a" * 300 + ".csv": b"x"}), r"too long \(at most 255 bytes per part"),
        (lambda: __import__("gzip").compress(b"job_id\n1\n" * 100),
         r"not a readable tar archive \(invalid header"),
        (lambda: make_tar({"cluster01.csv": os.urandom(50_000)})[:2000],
         r"not a readable tar archive"),
        (lambda: make_tar({".members.json": b"{}"}), r"named \.members\.json"),
    ],
)
def test_bad_archives_are_one_line_errors(
    archive: Callable[[], bytes], expected: str, fake_server: FakeServer,
    demo_registry: DemoRegistry, isolated_cache: Path, capsys: pytest.CaptureFixture,
    outside: Path,
) -> None:
    data = archive()
    file = demo_registry.add(synthetic_file("bad.tar.gz", data))
    serve(fake_server, file, data)
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert __import__("re").search(expected, err), err
    assert not list((isolated_cache / "extracted").glob("*/*"))


def test_disk_full_while_unpacking_is_one_line_and_leaves_no_staging(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
) -> None:
    data = make_tar({"cluster01.csv": os.urandom(200_000)})
    file = demo_registry.add(synthetic_file("full.tar.gz", data))
    serve(fake_server, file, data)
    real_open = tarfile.bltn_open  # type: ignore[attr-defined]

    def full_disk(name: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(name, mode, *args, **kwargs)
        return FullDisk(handle, room=100_000) if "w" in mode else handle

    monkeypatch.setattr(tarfile, "bltn_open", full_disk)
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert "unpacking full.tar.gz failed: the disk is full" in err and "MLTRACES_CACHE" in err
    extracted = isolated_cache / "extracted"
    assert [p.name for p in extracted.iterdir() if not p.name.endswith(".lock")] == []


def test_disk_full_while_copying_from_a_directory_mirror_leaves_nothing(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path,
    outside: Path, capsys: pytest.CaptureFixture,
) -> None:
    data = os.urandom(300_000)
    file = demo_registry.add(synthetic_file("copy.bin", data))
    source = outside / HOST / "pinned" / "copy.bin"
    source.parent.mkdir(parents=True)
    source.write_bytes(data)
    monkeypatch.setenv("MLTRACES_MIRROR", str(outside))
    real_open = Path.open

    def full_disk(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(self, mode, *args, **kwargs)
        inside = str(self).startswith(str(isolated_cache))
        return FullDisk(handle, room=100_000) if "w" in mode and inside else handle

    monkeypatch.setattr(Path, "open", full_disk)
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert "copying demo/copy.bin from the mirror failed: the disk is full" in err
    assert cache_leftovers(isolated_cache) == []


def test_disk_full_while_downloading_is_one_line(
    fake_server: FakeServer, demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    data = os.urandom(300_000)
    file = demo_registry.add(synthetic_file("dl.bin", data))
    serve(fake_server, file, data)

    def full_disk(name: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = io.open(name, mode, *args, **kwargs)  # noqa: UP020, SIM115
        return FullDisk(handle, room=100_000) if "a" in mode or "w" in mode else handle

    monkeypatch.setattr(http_module, "open", full_disk, raising=False)
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert "fetching demo/dl.bin failed: the disk is full" in err
    assert len(fake_server.requests) == 1, "a full disk is not retried"


def test_a_read_only_cache_is_one_line(
    fake_server: FakeServer, demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch,
    isolated_cache: Path, capsys: pytest.CaptureFixture,
) -> None:
    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("ro.csv", data))
    serve(fake_server, file, data)
    real_mkdir = Path.mkdir

    def read_only(self: Path, *args: object, **kwargs: object) -> None:
        if str(self).startswith(str(isolated_cache)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only)
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert "the file system is read-only" in err and "MLTRACES_CACHE" in err


def test_a_cache_path_that_is_a_file_is_one_line(
    fake_server: FakeServer, demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch,
    outside: Path, capsys: pytest.CaptureFixture,
) -> None:
    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("f.csv", data))
    serve(fake_server, file, data)
    not_a_folder = outside / "cache-file"
    not_a_folder.write_text("I am a file")
    monkeypatch.setenv("MLTRACES_CACHE", str(not_a_folder))
    err = one_line_cli_error(["fetch", file.id], capsys)
    assert "is a file, not a folder" in err and "MLTRACES_CACHE" in err
    assert not_a_folder.read_text() == "I am a file"


# --------------------------------------------------------------------------- offline: fast


def test_an_unreachable_host_fails_once_and_is_remembered(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path
) -> None:
    import requests

    files = [demo_registry.add(synthetic_file(f"t{i}.csv", b"x")) for i in range(3)]
    monkeypatch.setenv("MLTRACES_MIRROR", closed_port_url())
    monkeypatch.setattr(fetch_module, "RETRY_WAIT_S", 1.0)  # retries would show in the time
    calls: list[str] = []
    real_get = requests.get

    def counting_get(url: str, *args: object, **kwargs: object) -> object:
        calls.append(url)
        return real_get(url, *args, **kwargs)

    monkeypatch.setattr(requests, "get", counting_get)
    with bounded(seconds=5):
        with pytest.raises(FetchError, match=r"could not connect to .*Connection refused"):
            fetch_file(files[0], progress=False)
        for file in files[1:]:
            with pytest.raises(HostDownError, match=r"unreachable .*MLTRACES_OFFLINE"):
                fetch_file(file, progress=False)
    assert len(calls) == 1, "one connection attempt for three files"
    monkeypatch.setenv("MLTRACES_HOST_DOWN_TTL", "0")
    (isolated_cache / "state" / "hosts.json").unlink()
    with pytest.raises(FetchError, match=r"could not connect to"):
        fetch_file(files[1], progress=False)
    assert not (isolated_cache / "state" / "hosts.json").exists()


def test_an_unreachable_hub_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    monkeypatch.setenv("MLTRACES_MIRROR", closed_port_url())
    calls: list[str] = []
    real_get = requests.get
    monkeypatch.setattr(requests, "get", lambda url, *a, **k: calls.append(url) or real_get(
        url, *a, **k))
    with bounded(seconds=5):
        with pytest.raises(FetchError, match=r"could not connect"):
            hub.manifest()
        with pytest.raises(HostDownError):
            hub.manifest()
    assert len(calls) == 1


def test_a_partial_download_survives_a_network_that_is_down(
    demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No answer at all is no reason to throw away gigabytes that would resume."""
    file = demo_registry.add(synthetic_file("big.csv", b"x" * 1000))
    part = local_path(file).with_name("big.csv.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 600)
    monkeypatch.setenv("MLTRACES_MIRROR", closed_port_url())
    with pytest.raises(FetchError, match=r"could not connect.*partial download resumes"):
        fetch_file(file, progress=False)
    with pytest.raises(HostDownError):
        fetch_file(file, progress=False)
    assert part.read_bytes() == b"x" * 600


def test_warm_fetches_never_touch_the_network(
    fake_server: FakeServer, demo_registry: DemoRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    import requests

    data = b"a,b\n" * 10
    file = demo_registry.add(synthetic_file("warm.csv", data))
    serve(fake_server, file, data)
    path = fetch_file(file.id, progress=False)

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm fetch must not touch the network")

    monkeypatch.setattr(requests, "get", no_network)
    monkeypatch.setenv("MLTRACES_MIRROR", closed_port_url())
    assert fetch_file(file.id) == path


def test_every_hostile_error_is_an_mltraces_error() -> None:
    """The CLI prints MltracesError as one line; everything raised above is one."""
    for cls in (CacheError, FetchError, HostDownError, LimitError, UnsafeArchiveError,
                UnsafePathError, VerificationError):
        assert issubclass(cls, MltracesError)
