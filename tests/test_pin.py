"""`mltraces pin`: a source.json files entry measured from a URL (through the download layer)
or a local file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only  # noqa: F401
from fakes import Route
from upstream_files import manifest_rows

from mltraces.cli import main
from mltraces.download.pin import pin_path, pin_url
from mltraces.errors import FetchError
from mltraces.hashing import git_blob_sha1


@pytest.mark.upstream
def test_a_url_is_pinned_as_the_manifest_pins_it(http_mirror, capsys) -> None:
    row = next(r for r in manifest_rows() if r["url"].endswith("openb_node_list_gpu_node.csv"))
    assert main(["pin", row["url"]]) == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry == {"url": row["url"], "size": int(row["size"]), "sha256": row["sha256"],
                     "git_blob": row["git_blob_sha1"]}


def test_what_is_not_data_or_too_big_is_refused(fake_server, monkeypatch, isolated_cache) -> None:
    url = "https://files.example.org/pinned/trace.csv"
    fake_server.routes["/files.example.org/pinned/trace.csv"] = Route(
        body=b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 3\n")
    with pytest.raises(FetchError, match="Git LFS pointer"):
        pin_url(url)
    fake_server.routes["/files.example.org/pinned/trace.csv"] = Route(body=b"x" * 5000)
    monkeypatch.setenv("MLTRACES_MAX_DOWNLOAD", "1K")
    with pytest.raises(FetchError, match="MLTRACES_MAX_DOWNLOAD"):
        pin_url(url)
    monkeypatch.delenv("MLTRACES_MAX_DOWNLOAD")
    assert pin_url(url)["git_blob"] == git_blob_sha1(b"x" * 5000)
    assert not list((isolated_cache / "state" / "pins").iterdir())  # nothing left behind


def test_a_local_file_is_named_relative_to_its_source_folder(tmp_path: Path, capsys) -> None:
    (tmp_path / "logs").mkdir()
    path = tmp_path / "logs" / "jobs.csv"
    path.write_text("id\n1\n")
    assert pin_path(path, relative_to=tmp_path)["path"] == "logs/jobs.csv"
    assert main(["pin", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == "jobs.csv"
    assert main(["pin", "http://example.org/x.csv"]) == 1
    assert "URLs are https" in capsys.readouterr().err
