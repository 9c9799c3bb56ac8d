"""The registry: every upstream file and source, described as data.

A :class:`Source` is one public release (Zeus, ITP, AcmeTrace); a
:class:`RemoteFile` is one pinned file of it. Source modules in
:mod:`mltraces.sources` build these objects; nothing else keeps a list of files,
so pooch, the CLI and the tests all read the same facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_SPDX = {"Apache-2.0", "MIT", "CC-BY-4.0"}


@dataclass(frozen=True)
class RemoteFile:
    """One upstream file, pinned by URL and hash.

    ``sha256`` and ``git_blob`` (the sha1 of git's ``blob <size>\\0`` header plus
    the bytes, as GitHub's tree API publishes it) are both accepted; at least one
    is required so a file is never used unverified.
    """

    id: str
    url: str
    description: str
    size: int | None = None
    sha256: str | None = None
    git_blob: str | None = None
    mirrors: tuple[str, ...] = ()
    kind: str = "file"  # "file" or "tar.gz" (unpacked after verification)

    def __post_init__(self) -> None:
        problems = []
        if not self.sha256 and not self.git_blob:
            problems.append("needs sha256 or git_blob")
        if self.sha256 and not _SHA256.match(self.sha256):
            problems.append(f"sha256 {self.sha256!r} is not 64 lower-case hex digits")
        if self.git_blob and not _SHA1.match(self.git_blob):
            problems.append(f"git_blob {self.git_blob!r} is not 40 lower-case hex digits")
        for url in (self.url, *self.mirrors):
            if urlsplit(url).scheme != "https":
                problems.append(f"url {url!r} is not https")
        if self.kind not in {"file", "tar.gz"}:
            problems.append(f"kind {self.kind!r} is not one of 'file', 'tar.gz'")
        if problems:
            raise ValueError(f"registry entry {self.id!r}: " + "; ".join(problems))

    @property
    def source(self) -> str:
        """Name of the source this file belongs to (the id's first part)."""
        return self.id.split("/", 1)[0]

    @property
    def filename(self) -> str:
        """Base name of the file as published."""
        return urlsplit(self.url).path.rsplit("/", 1)[-1]

    @property
    def hash_kind(self) -> str:
        """The hash used to verify: ``sha256`` when known, else ``git-blob-sha1``."""
        return "sha256" if self.sha256 else "git-blob-sha1"

    @property
    def urls(self) -> tuple[str, ...]:
        """Primary URL first, then the alternatives that publish the same bytes."""
        return (self.url, *self.mirrors)


@dataclass(frozen=True)
class Source:
    """One public trace release: its files, license and citation."""

    name: str
    title: str
    description: str
    homepage: str
    license: str
    citation: str
    files: tuple[RemoteFile, ...]
    anomalies: tuple[str, ...] = ()
    pins: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problems = []
        if self.license not in _SPDX:
            problems.append(f"license {self.license!r} is not one of {sorted(_SPDX)}")
        if "@" not in self.citation:
            problems.append("citation is not a BibTeX entry")
        for f in self.files:
            if f.source != self.name:
                problems.append(f"file {f.id!r} does not start with '{self.name}/'")
        ids = [f.id for f in self.files]
        if len(ids) != len(set(ids)):
            problems.append("duplicate file ids")
        if problems:
            raise ValueError(f"source {self.name!r}: " + "; ".join(problems))

    def file(self, file_id: str) -> RemoteFile:
        """The file with this id (``zeus/summary_train.csv``) or base name."""
        for f in self.files:
            if file_id in (f.id, f.filename):
                return f
        raise KeyError(file_id)
