"""The shipped registry: every file pinned, licensed, cited, and true to upstream."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from upstream_files import manifest_rows

from mltraces.registry import RemoteFile, all_files

GIT_HOSTS = {"raw.githubusercontent.com", "media.githubusercontent.com", "huggingface.co",
             "github.com"}


def test_every_registry_entry_is_pinned_licensed_and_cited() -> None:
    from mltraces.registry import SPDX_LICENSES, all_sources, source_folders

    sources = all_sources()
    assert set(sources) == {folder.name for folder in source_folders()}
    for source in sources.values():
        assert source.license in SPDX_LICENSES
        assert source.citation.startswith("@inproceedings{")
        assert source.anomalies
        commits = {pin.rsplit("@", 1)[-1] for pin in source.pins.values()}
        for file in source.files:
            assert file.sha256 or file.git_blob
            assert file.url.startswith("https://")
            # a host without commits (Alibaba's OSS bucket): pinned by the publisher's sha256
            versioned = urlsplit(file.url).hostname in GIT_HOSTS
            assert commits & set(file.url.split("/")) or (file.sha256 and not versioned), (
                f"{file.id} URL is not pinned to a commit")
    absent = {"zeus/alibaba_groups.csv.xz", "acme/trace_seren.csv", "acme/trace_kalos.csv"}
    assert absent <= set(all_files())
    assert all_files()["acme/trace_seren.csv"].mirrors[0].startswith("https://huggingface.co/")


def test_registry_rejects_entries_without_a_usable_hash() -> None:
    with pytest.raises(ValueError, match="needs sha256 or git_blob"):
        RemoteFile(id="x/y", url="https://a/b", description="")
    with pytest.raises(ValueError, match="not 64 lower-case hex"):
        RemoteFile(id="x/y", url="https://a/b", description="", sha256="abc")
    with pytest.raises(ValueError, match="is not https"):
        RemoteFile(id="x/y", url="http://a/b", description="", git_blob="0" * 40)


def test_registry_hashes_agree_with_the_upstream_manifest(upstream_dir: Path) -> None:
    by_url = {f.url: f for f in all_files().values()}
    rows = manifest_rows(upstream_dir)
    assert rows
    for row in rows:
        file = by_url[row["url"]]
        assert file.size == int(row["size"])
        assert file.sha256 == row["sha256"]
        assert file.git_blob == row["git_blob_sha1"]


def test_archive_entries_list_members_by_size_or_published_hash(tmp_path: Path) -> None:
    import json

    from mltraces.errors import RegistryError
    from mltraces.registry import Member, load_source

    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "citation.bib").write_text("@misc{demo, title={Demo}}")
    entry = {"url": "https://example.org/c0ffee/t.tar.gz", "sha256": "a" * 64, "kind": "tar.gz",
             "unpack": False, "members": {"t/log": 12, "t/x.csv": {"sha256": "b" * 64}}}

    def source(**changes: object) -> object:
        raw = {"name": "demo", "title": "", "description": "", "homepage": "", "license": "MIT",
               "files": [{**entry, **changes}]}
        (folder / "source.json").write_text(json.dumps(raw))
        return load_source(folder)

    file = source().files[0]
    assert file.members == (Member("t/log", 12), Member("t/x.csv", None, "b" * 64))
    assert file.archive and not file.unpacked
    assert RemoteFile(id="x/y", url="https://a/b", description="", sha256="a" * 64,
                      kind="zip", members=(("m", 3),)).members == (Member("m", 3),)
    for changes, problem in [
        ({"members": {"t/log": {"sha": "c"}}}, "unknown keys"),
        ({"members": {"t/log": {}}}, "give its size in bytes, its sha256 or both"),
        ({"members": {"t/log": {"sha256": "xyz"}}}, "is not 64 hex digits"),
        ({"kind": "file"}, "is not an archive"),
        ({"kind": "rar"}, "is not one of 'file', 'tar.gz', 'zip'"),
        ({"kind": "file", "members": {}}, "unpack: false is for archives only"),
    ]:
        with pytest.raises(RegistryError, match=problem):
            source(**changes)


def test_a_source_without_a_licence_says_so_on_its_card(monkeypatch) -> None:
    import dataclasses

    from mltraces.commands.info import format_source
    from mltraces.registry import NO_LICENSE, all_sources, get_source, set_override

    bare = dataclasses.replace(get_source("pollux"), license=NO_LICENSE)
    set_override({**all_sources(), "pollux": bare})
    try:
        card = format_source("pollux")
    finally:
        set_override(None)
    assert "license:  none stated by the publisher (NOASSERTION)" in card
    with pytest.raises(ValueError, match="license 'Proprietary' is not one of"):
        dataclasses.replace(bare, license="Proprietary")
