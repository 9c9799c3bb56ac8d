"""Where things live in the cache, and the proof that they stay there.

Every path the download layer opens, deletes or renames is built here from a
root and segments that came from the registry or the network. Segments are
checked one by one (no ``..``, ``.``, empty parts, backslashes, control
characters or over-long names), and the joined path must still resolve, links
followed, under its root: a hostile URL or Hub file list cannot name a file
outside the cache, and a symlink planted inside it cannot redirect a write.

>>> relative_parts("data/utilization/seren/GPU_UTIL.csv", "Hub path")
('data', 'utilization', 'seren', 'GPU_UTIL.csv')
>>> relative_parts("../etc/passwd", "Hub path")
Traceback (most recent call last):
...
mltraces.errors.UnsafePathError: Hub path '../etc/passwd' has an unsafe part '..'; refusing it
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from mltraces import config
from mltraces.containment import folder_inside, inside
from mltraces.errors import UnsafePathError
from mltraces.registry import RemoteFile

STAMP_SUFFIX = ".verified.json"
PART_SUFFIX = ".part"
LOCK_SUFFIX = ".lock"
MAX_SEGMENT_BYTES = 255  # NAME_MAX on Linux, macOS and Windows
MAX_PATH_CHARS = 1024  # well under PATH_MAX once the cache root is added
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")

__all__ = [
    "LOCK_SUFFIX",
    "PART_SUFFIX",
    "STAMP_SUFFIX",
    "cache_root",
    "check_segment",
    "extracted_dir",
    "inside",
    "local_path",
    "lock_path",
    "part_path",
    "relative_parts",
    "stamp_path",
]


def cache_root() -> Path:
    """The cache directory (``MLTRACES_CACHE`` or the platform default)."""
    return config.cache_dir()


def _shown(text: str) -> str:
    """A value quoted for a one-line message (long ones shortened)."""
    return repr(text if len(text) <= 80 else text[:60] + "…" + text[-12:])


def check_segment(part: str, text: str, what: str) -> None:
    """Raise unless ``part`` is a plain file or folder name (``text`` is the whole path)."""
    if part in {"", ".", ".."}:
        raise UnsafePathError(
            f"{what} {_shown(text)} has an {'empty' if not part else 'unsafe'} part "
            f"{part!r}; refusing it"
        )
    if _CONTROL.search(part):
        raise UnsafePathError(
            f"{what} {_shown(text)} holds a backslash or control character; refusing it"
        )
    if len(part.encode("utf-8", "surrogatepass")) > MAX_SEGMENT_BYTES:
        raise UnsafePathError(
            f"{what} {_shown(text)} has a name longer than {MAX_SEGMENT_BYTES} bytes; refusing it"
        )


def relative_parts(text: object, what: str) -> tuple[str, ...]:
    """Split a ``/``-separated relative path from the network, checking every part."""
    if not isinstance(text, str) or not text:
        raise UnsafePathError(f"{what} {text!r} is not a non-empty string; refusing it")
    if len(text) > MAX_PATH_CHARS:
        raise UnsafePathError(f"{what} {_shown(text)} is longer than {MAX_PATH_CHARS} characters")
    if text.startswith("/"):
        raise UnsafePathError(f"{what} {_shown(text)} is absolute; refusing it")
    parts = tuple(text.split("/"))
    for part in parts:
        check_segment(part, text, what)
    return parts


def url_parts(url: str, what: str) -> tuple[str, ...]:
    """``https://HOST/a/b`` → ``("HOST", "a", "b")``, every part checked."""
    parts = urlsplit(url)
    return relative_parts(parts.netloc + parts.path, what)


def local_path(file: RemoteFile) -> Path:
    """Where a registry file lives in the cache: ``<cache>/files/<host>/<url path>``.

    A local file of a user's source lives where its ``source.json`` says (never copied).
    """
    if file.path is not None:
        return file.path
    root = cache_root()
    path = root.joinpath("files", *url_parts(file.url, f"the URL of {file.id}"))
    folder_inside(root, path.parent, f"the cache folder of {file.id}")
    return path


def extracted_dir(archive: Path, sha256: str) -> Path:
    """Where an archive with this sha256 is unpacked: ``<cache>/extracted/<name>-<sha[:16]>``."""
    return cache_root() / "extracted" / f"{archive.name}-{sha256[:16]}"


def stamp_path(path: Path) -> Path:
    """The stamp beside a cached file (what was verified, and when)."""
    return path.with_name(path.name + STAMP_SUFFIX)


def part_path(path: Path) -> Path:
    """The persistent partial download beside a cached file (kept to resume)."""
    return path.with_name(path.name + PART_SUFFIX)


def lock_path(path: Path) -> Path:
    """The per-file lock beside a cached file."""
    return path.with_name(path.name + LOCK_SUFFIX)
