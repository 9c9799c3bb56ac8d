"""The Hub client: revision → commit, the recursive tree listing, caching, offline, mirrors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from synthetic_util import COMMIT, HOST, REPO, FakeHub, running

from mltraces.cli import main
from mltraces.errors import FetchError, OfflineError
from mltraces.sources.acme import hub

FILES = {
    "data/utilization/seren/GPU_UTIL.csv": b"Time,10.140.0.1-0\n",
    "data/utilization/seren/NODE_CPU_UTILIZATION.csv": b"Time,10.140.0.1\n",
    "data/utilization/kalos/SM_ACTIVE-2023-07.csv": b"Time,10.140.1.1-7\n",
    "data/utilization/kalos/SM_ACTIVE-2023-08.csv": b"Time,10.140.1.1-7\n\n",
    "data/utilization/ipmi/GPU_AB_Power.csv": b"Time,node,CPU_Power\n",
    "data/job_trace/trace_kalos.csv": b"job_id\n",  # outside the folder: never listed
}


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """A fake Hub on 127.0.0.1, set as MLTRACES_MIRROR."""
    fake = FakeHub(files=dict(FILES))
    for started in running(fake):
        monkeypatch.setenv("MLTRACES_MIRROR", started.url)
        yield started


def test_manifest_lists_the_folder_with_sizes_and_sha256(fake_hub: FakeHub) -> None:
    found = hub.manifest()
    assert found.commit == COMMIT and found.revision == "main" and found.repo == REPO
    listed = {f.path: f for f in found.files}
    assert set(listed) == {p for p in FILES if p.startswith("data/utilization/")}
    for path, data in FILES.items():
        if path in listed:
            assert listed[path].size == len(data)
            assert listed[path].sha256 == hashlib.sha256(data).hexdigest()
    assert found.total_size == sum(f.size for f in found.files)


def test_manifest_is_fetched_once_and_cached_by_commit(fake_hub: FakeHub, isolated_cache) -> None:
    hub.manifest()
    asked = len(fake_hub.requests)
    again = hub.manifest()
    assert len(fake_hub.requests) == asked, "a cached manifest asks the Hub nothing"
    assert len(again.files) == 5
    cached = list((isolated_cache / "hub").rglob(f"tree/{COMMIT}/*.json"))
    assert len(cached) == 1 and json.loads(cached[0].read_text())["commit"] == COMMIT
    assert not list(isolated_cache.rglob("*.tmp")), "JSON is written atomically"


def test_tree_pages_are_followed(fake_hub: FakeHub) -> None:
    fake_hub.page_size = 2
    found = hub.manifest()
    assert len(found.files) == 5
    assert fake_hub.count("/tree/") >= 4  # 3 directories + 5 files, 2 per page
    assert all("recursive=true" in path for path, _ in fake_hub.requests if "/tree/" in path)


def test_a_pinned_commit_needs_no_revision_lookup(fake_hub: FakeHub, monkeypatch) -> None:
    monkeypatch.setenv("MLTRACES_HF_REVISION", COMMIT)
    assert hub.manifest().commit == COMMIT
    assert fake_hub.count("/revision/") == 0


def test_a_branch_is_resolved_once_until_refreshed(fake_hub: FakeHub) -> None:
    assert hub.resolve_commit() == COMMIT
    fake_hub.commit = "f" * 40  # the branch moved upstream
    assert hub.resolve_commit() == COMMIT, "cached: runs stay reproducible"
    assert hub.resolve_commit(refresh=True) == "f" * 40


def test_offline_uses_the_cache_and_explains_otherwise(fake_hub: FakeHub, monkeypatch) -> None:
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    with pytest.raises(OfflineError, match=r"MLTRACES_OFFLINE"):
        hub.manifest()
    assert fake_hub.requests == []
    monkeypatch.delenv("MLTRACES_OFFLINE")
    hub.manifest()
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    asked = len(fake_hub.requests)
    assert len(hub.manifest().files) == 5
    assert len(fake_hub.requests) == asked


def test_unknown_revision_is_a_clear_error(fake_hub: FakeHub, monkeypatch) -> None:
    monkeypatch.setenv("MLTRACES_HF_REVISION", "a" * 40)
    with pytest.raises(FetchError, match=r"HTTP 404.*MLTRACES_HF_REVISION"):
        hub.manifest()


def test_directory_mirror_serves_the_api_as_files(tmp_path: Path, monkeypatch) -> None:
    fake = FakeHub(files=dict(FILES))
    api = tmp_path / HOST / "api" / "datasets" / REPO
    (api / "revision").mkdir(parents=True)
    (api / "revision" / "main").write_text(json.dumps({"sha": COMMIT}))
    tree = api / "tree" / COMMIT / "data"
    tree.mkdir(parents=True)
    (tree / "utilization").write_text(json.dumps(fake.tree("data/utilization")))
    monkeypatch.setenv("MLTRACES_MIRROR", str(tmp_path))
    assert len(hub.manifest().files) == 5


@pytest.mark.parametrize(
    ("path", "group", "metric", "period", "table"),
    [
        ("data/utilization/kalos/GPU_UTIL.csv", "kalos", "GPU_UTIL", None, "gpu_metrics"),
        (
            "data/utilization/seren/SM_ACTIVE-2023-07.csv",
            "seren",
            "SM_ACTIVE",
            "2023-07",
            "gpu_metrics",
        ),
        (
            "data/utilization/seren/FB_USED-2023-07-15.csv",
            "seren",
            "FB_USED",
            "2023-07-15",
            "gpu_metrics",
        ),
        ("data/utilization/seren/NODE_IB_SEND.csv", "seren", "NODE_IB_SEND", None, "node_metrics"),
        ("data/utilization/ipmi/GPU_C_Power.csv", "ipmi", "GPU_C_Power", None, "ipmi_power"),
        ("data/utilization/seren/.gitattributes", "seren", ".gitattributes", None, None),
    ],
)
def test_paths_say_cluster_metric_and_month(path, group, metric, period, table) -> None:
    file = hub.HubFile(path=path, size=1, sha256="0" * 64, git_blob=None)
    assert (file.group, file.metric, file.period, file.table) == (group, metric, period, table)


def test_remote_file_is_pinned_to_the_commit_and_the_lfs_sha256() -> None:
    file = hub.HubFile("data/utilization/seren/GPU_UTIL.csv", 10, "a" * 64, "b" * 40)
    remote = file.remote(COMMIT)
    assert remote.url == (
        f"https://huggingface.co/datasets/{REPO}/resolve/{COMMIT}/data/utilization/seren/GPU_UTIL.csv"
    )
    assert (remote.id, remote.size, remote.sha256, remote.hash_kind) == (
        "acme-util/data/utilization/seren/GPU_UTIL.csv",
        10,
        "a" * 64,
        "sha256",
    )


def test_endpoint_override_must_be_https(monkeypatch) -> None:
    monkeypatch.setenv("MLTRACES_HF_ENDPOINT", "https://hub.example.org/")
    assert hub.endpoint() == "https://hub.example.org"
    file = hub.HubFile("data/utilization/seren/GPU_UTIL.csv", 10, "a" * 64, None)
    assert file.remote(COMMIT).url.startswith("https://hub.example.org/datasets/")
    monkeypatch.setenv("MLTRACES_HF_ENDPOINT", "http://hub.example.org")
    with pytest.raises(ValueError, match=r"MLTRACES_MIRROR"):
        hub.endpoint()


def test_cli_lists_every_file_with_sizes_and_totals(fake_hub: FakeHub, capsys) -> None:
    assert main(["list", "acme-util"]) == 0
    out = capsys.readouterr().out
    assert f"commit {COMMIT}" in out and f"MLTRACES_HF_REVISION={COMMIT}" in out
    for path, data in FILES.items():
        if path.startswith("data/utilization/"):
            line = next(x for x in out.splitlines() if path.split("utilization/")[1] in x)
            assert f"{len(data)} B" in line
    assert "total kalos         2 files" in out
    assert f"{sum(len(d) for p, d in FILES.items() if 'utilization' in p)} B" in out


def test_cli_list_of_a_source_is_unchanged(capsys) -> None:
    assert main(["list", "itp"]) == 0
    assert "acme-util" not in capsys.readouterr().out


def test_manifest_file_lookup_suggests_names(fake_hub: FakeHub) -> None:
    found = hub.manifest()
    assert found.file("acme-util/data/utilization/seren/GPU_UTIL.csv").size == 18
    with pytest.raises(KeyError, match=r"did you mean: data/utilization/seren/GPU_UTIL\.csv"):
        found.file("data/utilization/kalos/GPU_UTIL.csv")
