"""``files`` entries for a ``source.json``: size, sha256 and git blob id of a URL or a file.

A new source's pins are measured, never typed: :func:`pin_url` downloads the
URL through the same layer as every fetch (the mirror when one is set, the
``MLTRACES_MAX_DOWNLOAD`` cap on a body of unknown size, the
``MLTRACES_DOWNLOAD_TIMEOUT`` deadline, a temporary file inside the cache that is
deleted afterwards) and refuses what is not data (a Git LFS pointer, an HTML
page); :func:`pin_path` hashes a local file in one pass. Both return the entry
ready to paste into the ``files`` list.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mltraces import config
from mltraces.errors import FetchError
from mltraces.hashing import digest

__all__ = ["pin_path", "pin_url"]


def _entry(found: Any, **where: str) -> dict[str, Any]:
    return {**where, "size": found.size, "sha256": found.sha256, "git_blob": found.git_blob}


def pin_path(path: str | os.PathLike[str], *, relative_to: Path | None = None) -> dict[str, Any]:
    """The entry of a local file: ``{"path": NAME, "size", "sha256", "git_blob"}``.

    ``path`` is named relative to ``relative_to`` (the source folder) when given,
    else by its base name: a source's local files lie beside its ``source.json``.
    """
    path = Path(path)
    if not path.is_file():
        raise FetchError(f"cannot pin {path}: not a file (a folder is listed file by file)")
    name = str(path.resolve().relative_to(relative_to.resolve())) if relative_to else path.name
    return _entry(digest(path), path=name)


def pin_url(url: str, *, progress: bool = False) -> dict[str, Any]:
    """The entry of a URL: ``{"url", "size", "sha256", "git_blob"}``, measured on its bytes."""
    from mltraces.download.checks import sniff_file
    from mltraces.download.http import Deadline, describe_failure, transfer
    from mltraces.download.mirrors import copy_from_directory, is_http, mirrored
    from mltraces.download.paths import cache_root, url_parts
    from mltraces.registry import RemoteFile

    if urlsplit(url).scheme != "https":
        raise FetchError(f"cannot pin {url!r}: a source's URLs are https (pin the commit's URL)")
    parts = url_parts(url, "the URL to pin")  # a safe relative path, or a clear error
    source = mirrored(url, "the URL to pin")
    folder = cache_root() / "state" / "pins"
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{os.getpid()}-{parts[-1]}.part"
    limit = config.max_download()
    try:
        if is_http(source):
            deadline = Deadline(config.download_timeout(), url)
            try:
                transfer(source, part, size=None, limit=limit, deadline=deadline,
                         progressbar=progress, label=parts[-1])
            except Exception as error:  # requests' errors: say which URL and why
                if isinstance(error, FetchError):
                    raise
                raise FetchError(f"cannot pin {url}: {describe_failure(source, error)}") from None
        else:
            try:
                copy_from_directory(Path(source), part, (limit, "MLTRACES_MAX_DOWNLOAD"))
            except OSError as error:
                raise FetchError(f"cannot pin {url}: {error}") from None
        probe = RemoteFile(id="pin/" + parts[-1], url=url, description="", git_blob="0" * 40)
        problem = sniff_file(part, probe)
        if problem:
            raise FetchError(f"cannot pin {url}: {problem}")
        return _entry(digest(part), url=url)
    finally:
        part.unlink(missing_ok=True)
