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
    from mltraces.registry import NO_LICENSE, SPDX_LICENSES, all_sources, source_folders

    sources = all_sources()
    assert set(sources) == {folder.name for folder in source_folders()}
    for source in sources.values():
        # no licence stated (Alibaba's 2023 trace): the card says what the publisher does state
        assert source.license in SPDX_LICENSES or (source.license == NO_LICENSE
                                                   and source.license_note)
        # a paper, or a preprint (ServeGen's arXiv report)
        assert source.citation.startswith(("@inproceedings{", "@misc{"))
        assert source.anomalies
        commits = {pin.rsplit("@", 1)[-1] for pin in source.pins.values()}
        for file in source.files:
            # no hash published at all (Azure's week-long traces): pinned by its first download
            assert file.sha256 or file.git_blob or file.first_use
            assert file.url.startswith("https://")
            # a host without commits (Alibaba's OSS bucket): pinned by the publisher's sha256
            versioned = urlsplit(file.url).hostname in GIT_HOSTS
            assert commits & set(file.url.split("/")) or (file.sha256 and not versioned) or (
                file.first_use), f"{file.id} URL is not pinned to a commit"
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
    (folder / "citation.bib").write_text("@misc{demo, title={Demo}, year={2024}}")
    entry = {"url": "https://example.org/c0ffee/t.tar.gz", "sha256": "a" * 64, "kind": "tar.gz",
             "unpack": False, "members": {"t/log": 12, "t/x.csv": {"sha256": "b" * 64}}}

    def source(**changes: object) -> object:
        raw = {"name": "demo", "title": "", "description": "", "homepage": "", "license": "MIT",
               "pins": {"web": "example.org@c0ffee"}, "files": [{**entry, **changes}]}
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


# --------------------------------------------------------------------------- loader rules


def _source_folder(tmp_path: Path, name: str = "mine", **changes: object) -> Path:
    """A copy of the itp source folder renamed ``name``, with ``changes`` to source.json."""
    import json
    import shutil

    from mltraces.registry import SOURCES_DIR

    folder = tmp_path / name
    shutil.copytree(SOURCES_DIR / "itp", folder,
                    ignore=shutil.ignore_patterns("*.py", "__pycache__", "jobs.json"))
    raw = json.loads((folder / "source.json").read_text())
    raw = {k: v for k, v in raw.items() if k != "expected_rows"}
    if "sha256" in changes:  # the files without their sha256 (git blob ids only)
        changes.pop("sha256")
        raw["files"] = [{k: v for k, v in f.items() if k != "sha256"} for f in raw["files"]]
    (folder / "source.json").write_text(json.dumps({**raw, "name": name, **changes}))
    return folder


@pytest.mark.parametrize(("changes", "citation", "message"), [
    ({}, "@misc{x}", "must be one BibTeX entry with a key, a title and a year"),
    ({"license": "Proprietary"}, None, "license 'Proprietary' is not one of"),
    ({"license": "NOASSERTION"}, None, "NOASSERTION needs a license_note"),
    ({"pins": {"github": "microsoft/elasticflow-traces@0123456"}, "sha256": None}, None,
     "carries none of the pinned commits .* and it has no sha256"),
    ({"pins": {}}, None, "pins is empty"),
])
def test_the_loader_holds_a_source_to_the_registry_rules(tmp_path: Path, changes: dict,
                                                         citation: str | None,
                                                         message: str) -> None:
    from mltraces.errors import RegistryError
    from mltraces.registry import load_source

    folder = _source_folder(tmp_path, **changes)
    if citation is not None:
        (folder / "citation.bib").write_text(citation)
    with pytest.raises(RegistryError, match=message):
        load_source(folder)


def test_unversioned_hosts_are_pinned_by_the_sha256(tmp_path: Path) -> None:
    from mltraces.registry import load_source

    folder = _source_folder(tmp_path, pins={"oss": "an unversioned bucket"})
    assert all(f.sha256 for f in load_source(folder).files)  # itp's files carry a sha256


@pytest.mark.parametrize("name", ["mltraces", "alibaba-pai"])
def test_a_source_name_must_be_a_free_sql_identifier(tmp_path: Path, name: str) -> None:
    from mltraces.errors import RegistryError
    from mltraces.registry import load_source

    with pytest.raises(RegistryError, match=r"reserved|lower-case letters"):
        load_source(_source_folder(tmp_path, name=name))
