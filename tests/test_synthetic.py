"""Synthetic look-alikes of absent upstream files: found by scanning the source folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only, scalar  # noqa: F401
from upstream_files import UPSTREAM, manifest_rows

from mltraces import registry, synthetic
from mltraces.errors import RegistryError


@pytest.mark.upstream
def test_every_file_absent_here_has_a_synthetic_writer(upstream_dir: Path) -> None:
    here = {row["url"] for row in manifest_rows(upstream_dir)}
    absent = sorted(f.id for f in registry.all_files().values() if f.url not in here)
    assert absent, "expected some registered files without a copy here"
    missing = [f for f in absent if f not in synthetic.writers()]
    assert not missing, (f"{missing} have no copy in {UPSTREAM} and no writer in their source "
                         "folder's synthetic.py (WRITERS)")


def test_writers_are_deterministic_and_take_a_size(tmp_path: Path) -> None:
    one = synthetic.write_file("acme/trace_kalos.csv", tmp_path / "a", rows=50, seed=1)
    two = synthetic.write_file("acme/trace_kalos.csv", tmp_path / "b", rows=50, seed=1)
    assert one.name == "trace_kalos.csv" and one.read_bytes() == two.read_bytes()
    assert len(one.read_text().splitlines()) == 51
    other = synthetic.write_file("acme/trace_kalos.csv", tmp_path / "c", rows=50, seed=2)
    assert other.read_bytes() != one.read_bytes()


def test_a_table_of_several_files_gets_a_folder(tmp_path: Path, monkeypatch) -> None:
    from mltraces.schema import get_schema

    power = get_schema("zeus.power")
    assert len(power.file_ids) > 1
    fake = {f: (lambda path, rows=None, seed=0: _touch(path)) for f in power.file_ids}
    monkeypatch.setattr(synthetic, "writers", lambda: fake)
    paths = synthetic.write_tables(tmp_path, ["zeus.power"])
    assert paths == {"zeus.power": tmp_path / "zeus.power"}
    assert sorted(p.name for p in paths["zeus.power"].iterdir()) == sorted(
        registry.get_file(f).filename for f in power.file_ids)


def _touch(path: Path) -> Path:
    path.write_text("x\n")
    return path


def test_a_writer_for_a_file_its_source_does_not_register_is_refused(tmp_path, monkeypatch
                                                                     ) -> None:
    folder = tmp_path / "sources" / "mine"  # a user's source folder
    shutil.copytree(registry.SOURCES_DIR / "itp", folder,
                    ignore=shutil.ignore_patterns("*.py", "__pycache__", "jobs.json"))
    raw = json.loads((folder / "source.json").read_text())
    kept = {k: v for k, v in raw.items() if k not in ("expected_rows", "job_traces")}
    (folder / "source.json").write_text(json.dumps({**kept, "name": "mine"}))
    (folder / "synthetic.py").write_text("WRITERS = {'mine/nope.csv': print}\n")
    (folder / "schemas").mkdir()  # a user's folder needs its schemas folder to be a source
    monkeypatch.setenv("MLTRACES_SOURCES", str(folder.parent))
    synthetic.writers.cache_clear()
    try:
        with pytest.raises(RegistryError, match=r"WRITERS names files \['mine/nope.csv'\]"):
            synthetic.writers()
    finally:
        monkeypatch.setenv("MLTRACES_SOURCES", "")
        synthetic.writers.cache_clear()


def test_a_synthetic_mirror_is_fetched_and_verified_like_the_real_files(
        tmp_path: Path, monkeypatch) -> None:
    from mltraces.catalog import connect

    sources = synthetic.synthetic_mirror(tmp_path / "mirror", ["acme/trace_kalos.csv"], rows=80)
    pinned = sources["acme"].file("acme/trace_kalos.csv")
    assert pinned.sha256 and pinned.size == (tmp_path / "mirror" / "raw.githubusercontent.com" /
                                             pinned.url.split("/", 3)[3]).stat().st_size
    monkeypatch.setenv("MLTRACES_MIRROR", str(tmp_path / "mirror"))
    registry.set_override(sources)
    try:
        con = connect(["acme.kalos_jobs"], strict=True)
        assert scalar(con, "SELECT count(*) FROM acme.kalos_jobs") == 80
        assert scalar(con, "SELECT state FROM mltraces.status") == "ready"  # verified
    finally:
        registry.set_override(None)
