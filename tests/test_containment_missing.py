"""A folder that does not exist yet is proven inside the cache without resolving it, when its
nearest existing ancestor is the cache or a folder already proven; a link anywhere above it
is still followed and refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mltraces import containment
from mltraces.errors import UnsafePathError


def test_a_missing_folder_under_the_root_is_inside_without_resolving(tmp_path: Path,
                                                                     monkeypatch) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    resolved: list[str] = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p, **k: resolved.append(p) or real(p, **k))
    containment.folder_inside(root, root / "files" / "host" / "a", "the folder")
    assert resolved == []


def test_a_link_above_a_missing_folder_is_still_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "cache", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "files").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="outside"):
        containment.folder_inside(root, root / "files" / "host" / "a", "the folder")


def test_a_dangling_link_above_a_missing_folder_is_still_refused(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    (root / "files").symlink_to(tmp_path / "not-yet")
    with pytest.raises(UnsafePathError, match="outside"):
        containment.folder_inside(root, root / "files" / "host", "the folder")


def test_dot_dot_in_a_missing_path_is_resolved_and_refused(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    with pytest.raises(UnsafePathError, match="outside"):
        containment.folder_inside(root, root / "nope" / ".." / ".." / "elsewhere", "the folder")
