"""Where bytes may come from: upstream URLs, or the mirror that replaces them.

``MLTRACES_MIRROR`` is a URL prefix: ``https://HOST/PATH`` is fetched from
``$MLTRACES_MIRROR/HOST/PATH``. An ``http(s)://`` base is downloaded like any
URL; a directory is read directly. A mirror is a deliberate setting (air-gapped
sites, tests), so it replaces the upstream hosts instead of falling back to them.

A directory mirror's path is built from checked segments and stays lexically
under the mirror root (symlinks inside a mirror are followed: mirrors are often
link farms, and reading cannot write anywhere). Only a regular file of an
acceptable size is copied; the caller deletes a failed copy (say, disk full).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

from mltraces import config
from mltraces.download.http import TooLong
from mltraces.download.paths import url_parts
from mltraces.registry import RemoteFile

CHUNK = 1 << 20

__all__ = ["candidate_urls", "copy_from_directory", "is_http"]


def is_http(url: str) -> bool:
    """True for ``http(s)://`` URLs (anything else is a directory mirror path)."""
    return urlsplit(url).scheme in {"http", "https"}


def candidate_urls(file: RemoteFile) -> list[str]:
    """URLs to try, in order: the mirror's copies when one is set, else the real ones."""
    return [mirrored(url, f"a URL of {file.id}") for url in file.urls]


def mirrored(url: str, what: str) -> str:
    """``url`` itself, or its copy in the mirror when one is set (an http URL or a path)."""
    prefix = config.mirror()
    if prefix is None:
        return url
    parts = url_parts(url, what)
    if is_http(prefix):
        return f"{prefix}/{'/'.join(parts)}"
    root = Path(prefix).expanduser()
    return str(Path(os.path.normpath(root.joinpath(*parts))))


def copy_from_directory(source: Path, output: Path, cap: tuple[int, str]) -> None:
    """Copy a mirror file into ``output``, within ``cap`` bytes."""
    limit, why = cap
    try:
        info = source.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"not in the mirror directory: {source}") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileNotFoundError(f"not a regular file in the mirror directory: {source}")
    if info.st_size > limit:
        raise TooLong(f"{source} is {info.st_size:,} bytes, more than {why} ({limit:,})")
    left = limit + 1  # one byte more than allowed tells a file that grew while copied
    with source.open("rb") as src, output.open("wb") as out:
        while left and (chunk := src.read(min(CHUNK, left))):
            out.write(chunk)
            left -= len(chunk)
    if not left:
        raise TooLong(f"{source} grew past {why} ({limit:,} bytes) while being copied")
