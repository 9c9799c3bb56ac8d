"""The data layer: downloads, verification, cache, mirrors, offline, failure modes."""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
from pathlib import Path

import pytest
from fakes import (
    KALOS_SAMPLE,
    DemoRegistry,
    FakeServer,
    cache_leftovers,
    serve,
    synthetic_file,
)
from upstream_files import manifest_rows

from mltraces import download as fetch_module
from mltraces.download import cached_path, fetch, fetch_file, local_path, verify_cached
from mltraces.errors import FetchError, OfflineError, VerificationError
from mltraces.registry import RemoteFile, all_files, get_file

# --------------------------------------------------------------------------- helpers


def _present_files(upstream: Path) -> list[RemoteFile]:
    """Every registered file with a real copy in ``upstream`` (from its manifests)."""
    here = {row["url"] for row in manifest_rows(upstream)}
    return [f for f in all_files().values() if f.url in here]


def test_real_files_over_loopback_http_are_verified(http_mirror: str, upstream_dir: Path) -> None:
    sha_by_url = {r["url"]: r["sha256"] for r in manifest_rows(upstream_dir)}
    files = _present_files(upstream_dir)
    paths = fetch(*(f.id for f in files), progress=False)
    for file in files:
        path = paths[file.id]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha_by_url[file.url]
        stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
        assert stamp["sha256"] == file.sha256 and stamp["git_blob"] == file.git_blob
    raw = [k for k in paths if k.startswith("itp/raw-traces.tar.gz/cluster")]
    ef = [k for k in paths if k.startswith("itp/elasticflow-traces.tar.gz/")]
    members = get_file("itp/raw-traces.tar.gz").members
    assert len(raw) == sum(m.name.startswith("cluster") for m in members)
    assert {k.rsplit("/", 1)[1] for k in ef} >= {"195job.csv", "cluster01.csv", "cluster10.csv"}
    # Each extracted CSV is recorded with its own sha256, and the record is true.
    member = paths["itp/raw-traces.tar.gz/cluster01.csv"]
    record = json.loads((member.parent / ".members.json").read_text())["cluster01.csv"]
    assert record["sha256"] == hashlib.sha256(member.read_bytes()).hexdigest()
    assert member.read_text().splitlines()[0] == "job_id,submission_time,duration,num_gpu"


def test_real_files_from_a_directory_mirror(dir_mirror: Path) -> None:
    file = all_files()["zeus/summary_power_v100.csv"]
    path = fetch_file(file.id, progress=False)
    original = dir_mirror / file.url.removeprefix("https://")
    assert path.read_bytes() == original.read_bytes()
    assert cached_path(file) == path


def test_git_blob_verification_on_real_files(http_mirror: str, upstream_dir: Path) -> None:
    """Pin real files by their git blob id only, as for the files absent here."""
    for row in manifest_rows(upstream_dir)[:8]:
        file = RemoteFile(
            id="blob/" + row["url"].rsplit("/", 1)[1],
            url=row["url"],
            description="",
            git_blob=row["git_blob_sha1"],
        )
        path = fetch_file(file, progress=False)
        stamp = json.loads(path.with_name(path.name + ".verified.json").read_text())
        assert stamp["verified_by"] == "git-blob-sha1"
        assert stamp["git_blob"] == row["git_blob_sha1"]
        path.unlink()
        path.with_name(path.name + ".verified.json").unlink()
    wrong = RemoteFile(
        id="blob/wrong",
        url=manifest_rows(upstream_dir)[0]["url"],
        description="",
        git_blob="0" * 40,
    )
    with pytest.raises(VerificationError, match="git-blob-sha1 mismatch: expected 0000"):
        fetch_file(wrong, progress=False)


def test_warm_fetch_trusts_the_stamp_and_hashes_nothing(
    http_mirror: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fetch_file("acme/cluster_summary.csv", progress=False)

    def no_hashing(*args: object) -> None:
        raise AssertionError("a warm fetch must not re-hash")

    import pooch.hashes

    from mltraces import hashing

    monkeypatch.setattr(hashing, "digest", no_hashing)
    monkeypatch.setattr(hashing, "file_sha256", no_hashing)
    monkeypatch.setattr(pooch.hashes, "file_hash", no_hashing)
    assert fetch_file("acme/cluster_summary.csv") == path
    assert cached_path(all_files()["acme/cluster_summary.csv"]) == path


def test_cli_fetch_list_verify_and_info(http_mirror: str, capsys: pytest.CaptureFixture) -> None:
    from mltraces.cli import main

    assert main(["fetch", "itp", "--quiet"]) == 0
    assert logging.getLogger("mltraces").level == logging.NOTSET  # --quiet did not leak
    assert fetch_module._progress_default is None
    assert main(["list", "itp"]) == 0
    out = capsys.readouterr().out
    assert "itp/raw-traces.tar.gz" in out and "cached" in out
    assert main(["verify", "itp"]) == 0
    out = capsys.readouterr().out
    assert "ok       itp/raw-traces.tar.gz/cluster01.csv" in out
    assert "0 corrupt" in out
    assert main(["info", "acme"]) == 0
    out = capsys.readouterr().out
    assert "CC-BY-4.0" in out and "1,031,550" in out and "818,327" in out
    assert "@inproceedings{hu2024characterization" in out


# --------------------------------------------------------------------------- failure modes


def test_tampered_bytes_are_rejected_and_removed(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    good = b"a,b\n1,2\n"
    file = demo_registry.add(synthetic_file("t.csv", good))
    serve(fake_server, file, b"a,b\n1,3\n")
    with pytest.raises(VerificationError) as info:
        fetch_file(file.id, progress=False)
    message = str(info.value)
    assert "demo/t.csv: sha256 mismatch" in message
    assert file.sha256 in message and hashlib.sha256(b"a,b\n1,3\n").hexdigest() in message
    assert "deleted and not used" in message
    assert cache_leftovers(isolated_cache) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 99\n",
            "Git LFS pointer",
        ),
        (b"<!DOCTYPE html><html><body>Rate limited</body></html>", "HTML page"),
    ],
)
def test_lfs_pointers_and_html_pages_are_named(
    fake_server: FakeServer,
    demo_registry: DemoRegistry,
    isolated_cache: Path,
    body: bytes,
    expected: str,
) -> None:
    file = demo_registry.add(synthetic_file("trace.csv", b"job_id\n1\n" * 50, size=False))
    serve(fake_server, file, body)
    with pytest.raises(VerificationError, match=expected):
        fetch_file(file.id, progress=False)
    assert cache_leftovers(isolated_cache) == []


def test_truncated_body_fails_after_retries_and_leaves_nothing(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    data = bytes(range(256)) * 400
    file = demo_registry.add(synthetic_file("big.bin", data))
    serve(fake_server, file, data, drop_after=1000)
    with pytest.raises(FetchError, match=r"could not download demo/big\.bin") as info:
        fetch_file(file.id, progress=False)
    assert "dropped" in str(info.value) or "ended after" in str(info.value)
    assert cache_leftovers(isolated_cache) == []


def test_short_body_without_a_known_size_is_caught_by_the_hash(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    data = b"x" * 5000
    file = demo_registry.add(synthetic_file("nosize.bin", data, size=False))
    serve(fake_server, file, data[:4000])
    with pytest.raises(VerificationError, match="sha256 mismatch"):
        fetch_file(file.id, progress=False)
    assert cache_leftovers(isolated_cache) == []


def test_dropped_connection_resumes_with_a_range_request(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    data = bytes(range(256)) * 400
    file = demo_registry.add(synthetic_file("resume.bin", data))
    serve(fake_server, file, data, drop_after=80_000, drops_left=1)
    path = fetch_file(file.id, progress=False)
    assert path.read_bytes() == data
    assert fake_server.requests[0][1] is None
    resumed_at = int(fake_server.requests[1][1].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= 80_000, "the second request resumes, it does not restart"


def test_http_404_names_the_status_and_url(
    fake_server: FakeServer, demo_registry: DemoRegistry, isolated_cache: Path
) -> None:
    file = demo_registry.add(synthetic_file("missing.csv", b"x"))
    with pytest.raises(FetchError, match=r"HTTP 404 from http://127\.0\.0\.1:\d+/files"):
        fetch_file(file.id, progress=False)
    assert len(fake_server.requests) == 1, "a 404 is permanent: no retries"
    assert cache_leftovers(isolated_cache) == []


def test_offline_with_nothing_cached_says_how_to_get_the_file(
    monkeypatch: pytest.MonkeyPatch, isolated_cache: Path
) -> None:
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    with pytest.raises(OfflineError) as info:
        fetch_file("zeus/summary_train.csv")
    message = str(info.value)
    assert "zeus/summary_train.csv is not in the cache" in message
    assert "mltraces fetch zeus/summary_train.csv" in message
    assert "MLTRACES_MIRROR" in message
    assert cache_leftovers(isolated_cache) == []


def test_offline_uses_cached_files(http_mirror: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = fetch_file("zeus/summary_power_a40.csv", progress=False)
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    monkeypatch.delenv("MLTRACES_MIRROR")
    assert fetch_file("zeus/summary_power_a40.csv") == path


def test_cli_failure_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from mltraces.cli import main

    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    assert main(["fetch", "zeus/summary_train.csv"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mltraces fetch: error: zeus/summary_train.csv is not in the cache")
    assert "\n" not in err
    assert main(["fetch", "nope"]) == 1
    assert "unknown file 'nope'" in capsys.readouterr().err


def test_cli_fetch_goes_on_past_a_failure_and_names_each(
    fake_server: FakeServer, demo_registry: DemoRegistry, capsys: pytest.CaptureFixture
) -> None:
    from mltraces.cli import main

    files = {name: demo_registry.add(synthetic_file(name, name.encode() * 50))
             for name in ("a.csv", "b.csv", "c.csv")}
    serve(fake_server, files["b.csv"], b"b.csv" * 50)  # a.csv and c.csv answer 404
    assert main(["fetch", "demo"]) == 1
    captured = capsys.readouterr()
    assert "ok  demo/b.csv" in captured.out and cached_path(files["b.csv"]) is not None
    err = captured.err.splitlines()
    assert [line.split(":")[0] for line in err[:2]] == [
        "failed  could not download demo/a.csv", "failed  could not download demo/c.csv"]
    assert err[2].startswith("mltraces fetch: error: 2 of 3 files could not be fetched (each "
                             "reason above); for the tables that need them, give a local copy")


def test_verify_deletes_a_corrupted_cached_file_and_fetch_heals_it(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    data = b"a,b\n" * 100
    file = demo_registry.add(synthetic_file("heal.csv", data))
    serve(fake_server, file, data)
    path = fetch_file(file.id, progress=False)
    path.write_bytes(b"a,b\n" * 99 + b"a,c\n")
    # The stamp no longer matches (mtime changed), so the file is re-checked.
    assert cached_path(file) is None
    [result] = verify_cached()
    assert result.status == "corrupt" and not path.exists()
    assert fetch_file(file.id, progress=False).read_bytes() == data


def test_absent_upstream_file_path_with_a_synthetic_kalos_trace(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    """Files absent here (AcmeTrace traces) are pinned by git blob: same code path."""
    file = demo_registry.add(synthetic_file("trace_kalos.csv", KALOS_SAMPLE, by="git_blob"))
    serve(fake_server, file, KALOS_SAMPLE)
    path = fetch_file(file.id, progress=False)
    assert path.read_bytes() == KALOS_SAMPLE
    assert (
        json.loads(path.with_name(path.name + ".verified.json").read_text())["verified_by"]
        == "git-blob-sha1"
    )


def _fetch_in_child(cache: str, mirror: str, override: RemoteFile, queue: object) -> None:
    import os

    os.environ["MLTRACES_CACHE"] = cache
    os.environ["MLTRACES_MIRROR"] = mirror
    try:
        path = fetch_file(override, progress=False)
        queue.put(("ok", str(path)))  # type: ignore[attr-defined]
    except Exception as error:  # report, the parent asserts
        queue.put(("error", repr(error)))  # type: ignore[attr-defined]


def test_two_concurrent_fetches_download_once(
    fake_server: FakeServer, isolated_cache: Path
) -> None:
    data = bytes(range(256)) * 4000
    file = synthetic_file("shared.bin", data)
    serve(fake_server, file, data)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [
        context.Process(
            target=_fetch_in_child, args=(str(isolated_cache), fake_server.url, file, queue)
        )
        for _ in range(2)
    ]
    for child in children:
        child.start()
    outcomes = [queue.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert [o[0] for o in outcomes] == ["ok", "ok"], outcomes
    assert local_path(file).read_bytes() == data
    assert len([r for r in fake_server.requests if r[0].endswith("shared.bin")]) == 1
    assert not local_path(file).with_name("shared.bin.part").exists()


# --------------------------------------------------------------------------- pooch


def test_each_source_is_a_plain_pooch(
    upstream_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pooch_for(source) is pooch.create over the registry: a pooch user fetches from it
    with pooch alone (its own HTTPDownloader, its own sha256 check) into mltraces's cache,
    and mltraces then trusts the file after one hash, without downloading it again."""
    import pooch

    from mltraces.download import VerifyPins, pooch_for

    pup = pooch_for("zeus")
    assert isinstance(pup, pooch.Pooch)
    train = all_files()["zeus/summary_train.csv"]
    assert pup.registry["summary_train.csv"] == f"sha256:{train.sha256}"
    assert pup.get_url("summary_train.csv") == train.url
    assert pup.registry["alibaba_groups.csv.xz"] is None  # git blob only: see VerifyPins

    def loopback(url: str, output_file: str, pup: object) -> None:  # the network, here
        mirrored = url.replace("https://", upstream_server + "/")
        pooch.HTTPDownloader()(mirrored, output_file, pup)

    path = pup.fetch("summary_train.csv", downloader=loopback)
    assert Path(path) == local_path(train)
    assert cached_path(train) is None, "pooch writes no stamp"
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")  # adopting it needs no network
    assert fetch_file(train) == local_path(train) and cached_path(train) is not None

    # pooch's own check refuses a tampered body
    power = "summary_power_v100.csv"

    def tampered(url: str, output_file: str, pup: object) -> None:
        Path(output_file).write_bytes(b"a,b\n")

    with pytest.raises(ValueError, match="does not match the known hash"):
        pup.fetch(power, downloader=tampered)
    assert not (Path(pup.abspath) / power).exists()

    # a git-blob pin: pooch's registry has no algorithm for it, the processor checks it
    blob_only = RemoteFile(id="zeus/summary_power_a40.csv",
                           url=all_files()["zeus/summary_power_a40.csv"].url,
                           description="", git_blob=all_files()["zeus/summary_power_a40.csv"]
                           .git_blob)
    single = fetch_module.pooch_for_files([blob_only])
    name = single.registry_files[0]
    assert single.registry[name] is None
    fetched = single.fetch(name, downloader=loopback, processor=VerifyPins(blob_only))
    assert cached_path(blob_only) == Path(fetched)


def test_a_part_left_by_a_killed_process_is_resumed(
    fake_server: FakeServer, demo_registry: DemoRegistry
) -> None:
    """The .part outlives pooch's temporary file, so the next process asks for the rest."""
    data = bytes(range(256)) * 400
    file = demo_registry.add(synthetic_file("killed.bin", data))
    serve(fake_server, file, data)
    part = local_path(file).with_name("killed.bin.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:60_000])
    assert fetch_file(file.id, progress=False).read_bytes() == data
    assert [r for _, r in fake_server.requests] == ["bytes=60000-"]
    assert not part.exists()


def test_offline_a_directory_mirror_still_serves(
    dir_mirror: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLTRACES_OFFLINE forbids the network, not a local copy."""
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    path = fetch_file("zeus/summary_power_p100.csv", progress=False)
    assert cached_path(all_files()["zeus/summary_power_p100.csv"]) == path
