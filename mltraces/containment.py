"""Proof that a path stays inside its root (the cache, a mirror) once links are followed.

Every folder mltraces writes into is built from the cache root and fixed or
checked names, but any part of the cache may have been replaced by a symlink
(by a user, another tool, or an attacker with write access to the cache). A
write through such a link would land outside the cache, so every folder is
proven to resolve under its root before anything is created, renamed or
deleted in it. The download layer, the catalog's bookkeeping (leases, warm
records) and the figure caches all use this one proof.
"""

from __future__ import annotations

import os
from pathlib import Path

from mltraces.errors import UnsafePathError

__all__ = ["folder_inside", "inside", "proven_folder"]


def inside(root: Path, path: Path, what: str) -> Path:
    """Return ``path`` once proven to resolve (links followed) under ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafePathError(
            f"{what} {path} resolves to {real}, outside {root}; refusing to touch it "
            "(a symlink inside the cache?)"
        )
    return path


_proven: set[tuple[str, str]] = set()


def folder_inside(root: Path, folder: Path, what: str) -> None:
    """:func:`inside` for a folder, remembered once it exists (warm calls share folders).

    Proving the folder suffices for the file in it: writes land there through a
    temporary file and a rename, which replaces (never follows) a link at the name.
    """
    key = (str(root), str(folder))
    if key in _proven or _below_proven(root, folder):
        return
    inside(root, folder, what)
    if folder.is_dir():
        _proven.add(key)


def _below_proven(root: Path, folder: Path) -> bool:
    """True when ``folder`` does not exist and its nearest existing ancestor is ``root`` or a
    folder proven inside it: a name that does not exist is no link, so the path resolves
    under that ancestor (a catalog of every table on a fresh cache asks this ~1,000 times;
    resolving each path twice cost ~15 ms of its ~165 ms)."""
    path = top = str(folder)
    while not os.path.lexists(path):
        path, name = os.path.split(path)
        if name in ("", ".", ".."):
            return False
    return path != top and (path == str(root) or (str(root), path) in _proven)


def proven_folder(root: Path, folder: Path, what: str, *, create: bool = False) -> Path:
    """``folder``, proven inside ``root`` (before and after it is created, if asked).

    Proving first keeps ``mkdir`` from following a planted link out of the cache;
    proving again after catches a link that appeared in between.
    """
    folder_inside(root, folder, what)
    if create and not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        folder_inside(root, folder, what)
    return folder
