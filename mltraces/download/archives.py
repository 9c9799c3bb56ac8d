"""Safe, bounded unpacking of tarballs and zip files, and safe reading of one member.

Only regular files and folders are extracted; a member with an absolute path, a
``..`` component, a backslash or control character, an over-long name, a link,
a device, a sparse map or (zip) encryption is refused before anything is
written. Sizes are bounded before any byte is written too: headers are read
first (a tar's lazily, so a bomb is stopped at the first header past the limit,
not after inflating it all; a zip's central directory at once) against
:class:`Limits` — for a pinned archive exactly the members the registry lists
(and their sha256 when published), for any other (a local archive)
``MLTRACES_MAX_MEMBERS`` members and ``MLTRACES_MAX_UNPACKED`` bytes in all.

Extraction goes to ``<target>.staging-<pid>`` beside the target, renamed into
place when complete; a ``.members.json`` manifest records each member's size,
mtime and sha256 so later reads can trust (and ``mltraces verify`` can re-check)
the extracted bytes.

:func:`open_member` reads **one** member as a stream instead, writing nothing:
a 1 GB tarball that unpacks to 6.6 GB is read for the one table a query needs.
The member passes the same checks (name, kind, the budget of the headers read
to reach it); its bytes are counted and hashed as they are read and compared
with the pins at the end. Every failure is one
:class:`~mltraces.errors.MltracesError` line: unreadable archives, unsafe
members, limits, a member that is not there, and a full or read-only disk.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import stat as stat_module
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, NamedTuple

from mltraces import config
from mltraces.errors import CacheError, MltracesError, UnsafeArchiveError
from mltraces.hashing import file_sha256

if TYPE_CHECKING:  # tarfile & co. load only when something is unpacked (not on warm reads)
    import tarfile
    import zipfile

MANIFEST = ".members.json"
MAX_NAME_CHARS = 1024
MAX_PART_BYTES = 255
#: no byte budget: the members of an archive verified against its publisher's hash whose
#: sizes were not published are as large as that archive's own headers say
UNBOUNDED = sys.maxsize
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
_GZIP_MAGIC = b"\x1f\x8b"

__all__ = ["MANIFEST", "Entry", "Limits", "MissingMemberError", "check_member", "discard",
           "extract_verified", "open_member", "verify_members"]


class MissingMemberError(MltracesError):
    """The archive holds no member of the name asked for (the message lists what it holds)."""


class Entry(NamedTuple):
    """One member of a tar or zip archive, as the checks see it."""

    name: str
    size: int
    kind: str  # "file", "dir", "link", "special" (device, fifo, sparse), "encrypted"


def tar_entry(member: tarfile.TarInfo) -> Entry:
    """A tar header as an :class:`Entry`."""
    if member.issparse():
        kind = "special"
    elif member.isfile():
        kind = "file"
    elif member.isdir():
        kind = "dir"
    else:
        kind = "link" if member.issym() or member.islnk() else "special"
    return Entry(member.name, member.size if kind == "file" else 0, kind)


def zip_entry(info: zipfile.ZipInfo) -> Entry:
    """A zip central-directory record as an :class:`Entry` (Unix mode bits when present)."""
    mode = info.external_attr >> 16
    kind = "file"
    if info.flag_bits & 0x1:
        kind = "encrypted"
    elif stat_module.S_ISLNK(mode):
        kind = "link"
    elif info.is_dir() or stat_module.S_ISDIR(mode):
        kind = "dir"
    elif stat_module.S_IFMT(mode) and not stat_module.S_ISREG(mode):
        kind = "special"
    return Entry(info.filename, info.file_size if kind == "file" else 0, kind)


@dataclass(frozen=True)
class Limits:
    """What an archive may unpack to: a pinned member list, or counts and bytes."""

    max_members: int
    max_bytes: int
    expected: Mapping[str, int | None] | None = field(default=None)  # name → size, when pinned
    hashes: Mapping[str, str] = field(default_factory=dict)  # name → sha256, when published
    #: members are line-oriented text (CSV): no line may be longer, so bytes that are no
    #: text (a member of zeros) stop at once rather than fill the scratch folder
    max_line: int | None = None

    @classmethod
    def local(cls, max_line: int | None = None) -> Limits:
        """For archives the registry does not describe (``MLTRACES_MAX_*`` settings)."""
        return cls(max_members=config.max_members(), max_bytes=config.max_unpacked(),
                   max_line=max_line)

    @classmethod
    def pinned(cls, members: Mapping[str, int] | Iterable[tuple[str, int | None, str | None]]
               ) -> Limits:
        """Exactly these members: ``{name: size}``, or ``(name, size, sha256)`` triples.

        A member whose size was not published (``None``) is held to its name and hash
        only: the archive itself was verified against its publisher's hash.
        """
        triples = ([(n, size, None) for n, size in members.items()]
                   if isinstance(members, Mapping) else list(members))
        sizes = {name: size for name, size, _ in triples}
        known = [size for size in sizes.values() if size is not None]
        budget = sum(known) if len(known) == len(sizes) else UNBOUNDED
        hashes = {name: sha for name, _, sha in triples if sha}
        return cls(len(sizes), budget, sizes, hashes)


def _shown(name: str) -> str:
    return repr(name if len(name) <= 80 else f"{name[:60]}…({len(name)} characters)")


def check_member(member: tarfile.TarInfo, archive: Path) -> None:
    """Raise if ``member`` could write outside the target or is not a plain file/folder."""
    check_entry(tar_entry(member), archive)


def check_entry(entry: Entry, archive: Path) -> None:
    """Raise if ``entry`` (tar or zip) could write outside the target or is no plain file/folder."""
    name = PurePosixPath(entry.name)
    shown = _shown(entry.name)
    if (
        name.is_absolute()
        or ".." in name.parts
        or entry.name.startswith(("/", "\\"))
        or "\\" in entry.name
    ):
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} would escape the extraction folder; "
            "refusing to unpack this archive"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in entry.name):
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} has a control character in its name; refusing it"
        )
    too_long = [p for p in name.parts if len(p.encode("utf-8", "surrogateescape")) > MAX_PART_BYTES]
    if too_long or len(entry.name) > MAX_NAME_CHARS:
        raise UnsafeArchiveError(
            f"{archive.name}: member name {shown} is too long (at most {MAX_PART_BYTES} bytes "
            f"per part, {MAX_NAME_CHARS} characters in all); refusing this archive"
        )
    if str(name) == MANIFEST:
        raise UnsafeArchiveError(f"{archive.name}: a member is named {MANIFEST}; refusing it")
    if entry.kind == "encrypted":
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} is encrypted; refusing this archive"
        )
    if entry.kind not in ("file", "dir"):
        kind = "link" if entry.kind == "link" else "special file"
        raise UnsafeArchiveError(
            f"{archive.name}: member {shown} is a {kind}; only regular files "
            "are unpacked, refusing this archive"
        )


@dataclass
class _Tally:
    """Members seen so far and their total size."""

    names: set[str] = field(default_factory=set)
    total: int = 0


def _check_budget(member: Entry, seen: _Tally, limits: Limits, archive: Path) -> None:
    """Raise once ``member`` goes past the member list, the count or the byte limit."""
    name = str(PurePosixPath(member.name))
    size = member.size
    if name in seen.names:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} appears twice; refusing this archive"
        )
    if limits.expected is not None:
        _check_pinned(name, member, size, limits.expected, archive)
    seen.names.add(name)
    seen.total += size
    if len(seen.names) > limits.max_members and limits.expected is None:
        raise UnsafeArchiveError(
            f"{archive.name}: more than {limits.max_members:,} members; refusing it "
            "(raise MLTRACES_MAX_MEMBERS if this archive is trusted)"
        )
    if seen.total > limits.max_bytes:
        raise UnsafeArchiveError(
            f"{archive.name}: members add up to more than {limits.max_bytes:,} bytes "
            f"(at {_shown(name)}); refusing it as a possible decompression bomb "
            "(raise MLTRACES_MAX_UNPACKED if this archive is trusted)"
        )


def _check_pinned(name: str, member: Entry, size: int, expected: Mapping[str, int | None],
                  archive: Path) -> None:
    """A pinned archive holds its listed files (at their sizes) and their folders only."""
    if member.kind == "dir":
        if not any(m.startswith(name.rstrip("/") + "/") for m in expected):
            raise UnsafeArchiveError(
                f"{archive.name}: folder {_shown(name)} holds none of the members the registry "
                "pins; refusing this archive"
            )
        return
    if name not in expected:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} is not among the {len(expected)} "
            "members the registry pins; refusing this archive"
        )
    if expected[name] is not None and size != expected[name]:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} is {size:,} bytes, the registry pins "
            f"{expected[name] or 0:,}; refusing this archive"
        )


def _read_manifest(target: Path) -> dict[str, dict] | None:
    try:
        manifest = json.loads((target / MANIFEST).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, dict) else None


def _members_intact(target: Path, manifest: dict[str, dict]) -> bool:
    """Every member is there as extracted (size and mtime, like a download's stamp)."""
    for name, record in manifest.items():
        try:
            stat = (target / name).stat()
        except OSError:
            return False
        if (stat.st_size, stat.st_mtime_ns) != (record.get("size"), record.get("mtime_ns")):
            return False
    return True


def reusable(target: Path) -> dict[str, Path] | None:
    """Member name → path of an intact earlier extraction into ``target``, else None."""
    manifest = _read_manifest(target)
    if manifest is None or not _members_intact(target, manifest):
        return None
    return {name: target / name for name in manifest}


def disk_error(error: OSError, what: str, where: Path) -> CacheError:
    """One line for a write that failed on the disk (full, read-only, not a folder)."""
    causes = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exhausted",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENOTDIR: "a path component is a file, not a folder",
        errno.EEXIST: "a file is in the way of a folder",
        errno.ENAMETOOLONG: "a name is too long for the file system",
    }
    cause = causes.get(error.errno or 0, error.strerror or type(error).__name__)
    return CacheError(
        f"{what} failed: {cause} ({where}). Free space or fix the permissions there, "
        "or point MLTRACES_CACHE at a writable folder with room"
    )


def extract_verified(archive: Path, target: Path, limits: Limits | None = None) -> dict[str, Path]:
    """Unpack ``archive`` into ``target`` once; return member name → path.

    A complete earlier extraction (manifest present, members unchanged since) is
    reused; a lock keeps two processes from replacing a folder the other reads.
    ``limits`` defaults to :meth:`Limits.local`.
    """
    found = reusable(target)
    if found is not None:
        return found
    from filelock import FileLock

    from mltraces.download.paths import inside

    inside(config.cache_dir(), target.parent, "the extraction folder")
    limits = limits or Limits.local()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            found = reusable(target)  # another process finished it meanwhile
            if found is not None:
                return found
            _sweep(target.parent)
            return _extract_into_place(archive, target, limits)
    except OSError as error:
        raise disk_error(error, f"unpacking {archive.name}", target.parent) from error


def _sweep(folder: Path) -> None:
    from mltraces.download.cleanup import remove_orphans

    remove_orphans(folder)


def _extract_into_place(archive: Path, target: Path, limits: Limits) -> dict[str, Path]:
    staging = target.with_name(f"{target.name}.staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        manifest = _extract_all(archive, staging, limits)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {name: target / name for name in manifest}


def discard(target: Path) -> None:
    """Remove an extraction (say, a member failed verification): the next read redoes it."""
    shutil.rmtree(target, ignore_errors=True)


def is_zip(archive: Path) -> bool:
    """True when ``archive`` starts like a zip file (else it is read as a tar)."""
    with archive.open("rb") as handle:
        return handle.read(4) in _ZIP_MAGIC


def _is_gzip(archive: Path) -> bool:
    with archive.open("rb") as handle:
        return handle.read(2) == _GZIP_MAGIC


#: what a tar read in order reads at a time: tarfile's 10 KiB records cost PAI's job table
#: 0.40 CPU-s to read out, hashed and written, against 0.31 with 1 MiB (35 k reads fewer)
STREAM_BUFFER = 1 << 20


@contextmanager
def _opened_tar(archive: Path, *, stream: bool) -> Iterator[tarfile.TarFile]:
    """``archive`` as a TarFile, read in order (``stream``) or with seeks; a gzipped one is
    inflated by ISA-L (``isal``: three times zlib's speed, 0.18 s against 0.57 s for PAI's
    147 MB task table), any other compression (or gzip without ``isal``) by tarfile itself.
    Headers and bytes are checked the same either way; a damaged stream is one line
    (:func:`_readable`, also while opening)."""
    import tarfile

    inflated = _gzip_stream(archive)
    try:
        with _readable(archive, "tar"):
            tar = tarfile.open(  # noqa: SIM115 (closed below)
                None if inflated else archive, fileobj=inflated,
                mode=("r|" if stream else "r:") + ("" if inflated else "*"),
                bufsize=STREAM_BUFFER)
        try:
            yield tar
        finally:
            tar.close()
    finally:
        if inflated is not None:  # (a TarFile leaves the stream it was handed open)
            inflated.close()


def _gzip_stream(archive: Path) -> IO[bytes] | None:
    """A gzipped archive's bytes inflated by ISA-L, else None (tarfile reads it)."""
    try:
        if not _is_gzip(archive):
            return None
        from isal import igzip

        return igzip.open(archive, "rb")
    except (OSError, ImportError):  # tarfile says what is wrong, or reads it with zlib
        return None


def _extract_all(archive: Path, staging: Path, limits: Limits) -> dict[str, dict]:
    manifest = (_extract_zip if is_zip(archive) else _extract_tar)(archive, staging, limits)
    if limits.expected is not None and set(limits.expected) - set(manifest):
        missing = sorted(set(limits.expected) - set(manifest))
        raise UnsafeArchiveError(
            f"{archive.name}: lacks members the registry pins: {', '.join(missing[:5])}"
        )
    for name, record in manifest.items():
        _check_hash(archive, name, record["sha256"], limits.hashes.get(name))
    return manifest


def _check_hash(archive: Path, name: str, found: str, pinned: str | None) -> None:
    """A member whose publisher printed its sha256 must have exactly that one."""
    if pinned is not None and found != pinned:
        raise UnsafeArchiveError(
            f"{archive.name}: member {_shown(name)} has sha256 {found}, the publisher's is "
            f"{pinned}; refusing this archive"
        )


def _record(path: Path) -> dict:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_sha256(path)}


@contextmanager
def _readable(archive: Path, kind: str) -> Iterator[None]:
    """Turn the ways a damaged archive fails to read into one line naming it."""
    import lzma
    import tarfile
    import zipfile
    import zlib

    try:
        yield
    except tarfile.ReadError as error:
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable {kind} archive ({_read_error(archive, error)})"
        ) from error
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError,
            NotImplementedError, *_inflate_errors()) as error:
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable {kind} archive ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else 'truncated'})"
        ) from error
    except OSError as error:
        if error.errno in {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                           errno.ENAMETOOLONG}:
            raise
        raise UnsafeArchiveError(
            f"{archive.name}: not a readable {kind} archive ({type(error).__name__}: {error})"
        ) from error


def _inflate_errors() -> tuple[type[Exception], ...]:
    """How ISA-L says a deflate stream is damaged (its own error, not zlib's), when loaded."""
    module = sys.modules.get("isal.isal_zlib")
    return (module.error,) if module is not None else ()


def _extract_tar(archive: Path, staging: Path, limits: Limits) -> dict[str, dict]:
    manifest = {}
    with _readable(archive, "tar"), _opened_tar(archive, stream=False) as tar:
        for member in _checked_members(tar, archive, limits):
            if not member.isfile():
                continue
            if limits.max_line is None:
                tar.extract(member, staging, filter="data")
            else:  # copied with its lines checked as they go
                path = staging / member.name
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None  # a regular file
                with source, path.open("wb") as sink:
                    _copy_lines(source, sink, _Lines(archive, member.name, limits.max_line))
            manifest[str(PurePosixPath(member.name))] = _record(staging / member.name)
    return manifest


class _Lines:
    """Counts the bytes since a member's last newline; a line longer than ``limit`` is no
    line of text (an archive of zeros), refused as soon as it is seen."""

    def __init__(self, archive: Path, name: str, limit: int) -> None:
        self.archive, self.name, self.limit = archive, name, limit
        self.since = 0
        self.read = 0

    def feed(self, data: bytes | memoryview) -> None:
        data = bytes(data)
        self.read += len(data)
        last = data.rfind(b"\n")
        self.since = len(data) - last - 1 if last >= 0 else self.since + len(data)
        if self.since > self.limit:
            raise UnsafeArchiveError(
                f"{self.archive.name}: member {_shown(self.name)} holds a line longer than "
                f"{self.limit:,} bytes (within its first {self.read:,}): not text in lines "
                "such as CSV; refusing it before writing more")


def _copy_lines(source: IO[bytes], sink: IO[bytes], lines: _Lines) -> None:
    while chunk := source.read(1 << 20):
        lines.feed(chunk)
        sink.write(chunk)


def _extract_zip(archive: Path, staging: Path, limits: Limits) -> dict[str, dict]:
    """Unpack a zip: every record checked (central directory) before a byte is written."""
    import zipfile

    manifest = {}
    with _readable(archive, "zip"), zipfile.ZipFile(archive) as zipped:
        infos = _checked_zip(zipped, archive, limits)
        for info in infos:
            name = str(PurePosixPath(info.filename))
            if info.is_dir():
                continue
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            # zipfile stops at the declared size and checks the CRC at the end
            with zipped.open(info) as source, path.open("wb") as sink:
                if limits.max_line is None:
                    shutil.copyfileobj(source, sink, 1 << 20)
                else:
                    _copy_lines(source, sink, _Lines(archive, name, limits.max_line))
            manifest[name] = _record(path)
    return manifest


def _checked_zip(zipped: zipfile.ZipFile, archive: Path, limits: Limits
                 ) -> list[zipfile.ZipInfo]:
    seen = _Tally()
    infos = zipped.infolist()
    for info in infos:
        entry = zip_entry(info)
        check_entry(entry, archive)
        _check_budget(entry, seen, limits, archive)
    return infos


def _read_error(archive: Path, error: tarfile.ReadError) -> str:
    """tarfile's (multi-line) reason as a few words, naming a gzip without a tar inside
    (tarfile says "invalid header" of the first header only: later ones end the archive)."""
    lines = str(error).splitlines()
    gz = next((line for line in lines if line.startswith("- method gz:")), None)
    if gz is not None:  # tarfile tried each compression: "- method gz: ReadError('...')"
        lines = [gz.split(":", 1)[1].strip().removeprefix("ReadError(").strip("')")]
    why = lines[0].rstrip(":") if lines else "unreadable"
    if why == "invalid header" and _is_gzip(archive):
        return f"{why}: gzip data that holds no tar"
    return why


def _checked_members(tar: tarfile.TarFile, archive: Path, limits: Limits) -> list[tarfile.TarInfo]:
    """Every member header, checked as it is read: nothing is written before all pass."""
    seen = _Tally()
    members = []
    for member in tar:  # reads one header at a time: a bomb stops at its first bad one
        entry = tar_entry(member)
        check_entry(entry, archive)
        _check_budget(entry, seen, limits, archive)
        members.append(member)
    return members


# --------------------------------------------------------------------------- one member


class _CheckedStream(io.RawIOBase):
    """A member's bytes as they are read: counted, hashed, compared with the pins at the end."""

    def __init__(self, raw: IO[bytes], archive: Path, entry: Entry, kind: str,
                 sha256: str | None, max_line: int | None = None) -> None:
        super().__init__()
        self._raw, self._archive, self._entry, self._kind = raw, archive, entry, kind
        self._pinned = sha256
        self._hash = hashlib.sha256() if sha256 else None
        self._lines = None if max_line is None else _Lines(archive, entry.name, max_line)
        self.read_bytes = 0
        self.finished = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        with _readable(self._archive, self._kind):
            data = self._raw.read(len(buffer))
        if not data:
            self._finish()
            return 0
        if self._lines is not None:
            self._lines.feed(data)
        buffer[: len(data)] = data
        self.read_bytes += len(data)
        if self._hash is not None:
            self._hash.update(data)
        return len(data)

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        name = _shown(self._entry.name)
        if self.read_bytes != self._entry.size:
            raise UnsafeArchiveError(
                f"{self._archive.name}: member {name} ended after {self.read_bytes:,} of its "
                f"{self._entry.size:,} bytes; the archive is cut or damaged"
            )
        if self._hash is not None:
            _check_hash(self._archive, self._entry.name, self._hash.hexdigest(), self._pinned)

    def drain(self) -> None:
        """Read what the consumer left, so the size and hash are checked all the same."""
        while self.readinto(bytearray(1 << 20)):
            pass


@contextmanager
def open_member(archive: Path, name: str, limits: Limits | None = None) -> Iterator[IO[bytes]]:
    """Member ``name`` of a tar (any compression) or zip as a binary stream; nothing is written.

    The member must be a regular file with a safe name; reaching it reads at most
    ``limits.max_members`` headers, each checked like an extraction's (a pinned
    archive may hold only its listed members, at their sizes). Its bytes are
    checked as they are read: the size its header states, and the sha256 the
    limits pin for it — when the ``with`` block ends without an error, whatever
    the reader left is read too, so a damaged or swapped member always raises
    (:class:`~mltraces.errors.UnsafeArchiveError`). A missing member raises
    :class:`MissingMemberError` listing what the archive holds.
    """
    limits = limits or Limits.local()
    wanted = str(PurePosixPath(name))
    opener = _zip_member if is_zip(archive) else _tar_member
    with opener(archive, wanted, limits) as (raw, entry, kind):
        checked = _CheckedStream(raw, archive, entry, kind, limits.hashes.get(wanted),
                                 limits.max_line)
        yield io.BufferedReader(checked, 1 << 20)
        checked.drain()


@contextmanager
def _tar_member(archive: Path, wanted: str, limits: Limits
                ) -> Iterator[tuple[IO[bytes], Entry, str]]:

    seen = _Tally()
    names: list[str] = []
    with _opened_tar(archive, stream=True) as tar:
        while True:
            with _readable(archive, "tar"):
                member = tar.next()  # one header at a time
            if member is None:
                break
            entry = tar_entry(member)
            check_entry(entry, archive)
            _check_budget(entry, seen, limits, archive)
            if str(PurePosixPath(member.name)) == wanted and entry.kind == "file":
                with _readable(archive, "tar"):
                    raw = tar.extractfile(member)
                if raw is not None:  # errors of the reader below pass through unchanged
                    yield raw, entry, "tar"
                    if limits.expected is None:  # a local archive: which copy is meant?
                        _rest_of(tar, archive, seen, limits)
                    return
            names.append(member.name)
    raise _missing(archive, wanted, names)


def _rest_of(tar: tarfile.TarFile, archive: Path, seen: _Tally, limits: Limits) -> None:
    """Read the headers after the member that was read, held to the same checks: a name
    that comes again is refused (GNU tar and ``tarfile.getmember`` take its last copy, a
    stream its first). A pinned archive lists its members, so only a local one needs this."""
    while True:
        with _readable(archive, "tar"):
            member = tar.next()
        if member is None:
            return
        entry = tar_entry(member)
        check_entry(entry, archive)
        _check_budget(entry, seen, limits, archive)


@contextmanager
def _zip_member(archive: Path, wanted: str, limits: Limits
                ) -> Iterator[tuple[IO[bytes], Entry, str]]:
    import zipfile

    with _readable(archive, "zip"):
        zipped = zipfile.ZipFile(archive)
    try:
        infos = _checked_zip(zipped, archive, limits)
        for info in infos:
            if str(PurePosixPath(info.filename)) == wanted and not info.is_dir():
                with _readable(archive, "zip"):
                    raw = zipped.open(info)
                _inflate_with_isal(raw, info)
                with raw:
                    yield raw, zip_entry(info), "zip"
                return
    finally:
        zipped.close()
    raise _missing(archive, wanted, [i.filename for i in infos])


def _inflate_with_isal(raw: IO[bytes], info: zipfile.ZipInfo) -> None:
    """Hand a deflated member's reader an ISA-L inflater (``isal``, as for gzipped tarballs),
    before it has read a byte: Helios's four CSVs (343 MB) inflated in 0.2 CPU-s against
    0.57 with zlib. zipfile reads through it as through zlib's (same interface) and still
    checks the member's size and CRC; a damaged stream is ISA-L's error (:func:`_readable`).
    Left as it is without ``isal``, or where zipfile keeps no such reader."""
    import zipfile

    if info.compress_type != zipfile.ZIP_DEFLATED or not hasattr(raw, "_decompressor"):
        return
    try:
        from isal import isal_zlib
    except ImportError:
        return
    raw._decompressor = isal_zlib.decompressobj(-15)  # type: ignore[attr-defined] # raw deflate


def _missing(archive: Path, wanted: str, names: list[str]) -> MissingMemberError:
    shown = ", ".join(_shown(n) for n in names[:10]) + (" …" if len(names) > 10 else "")
    return MissingMemberError(
        f"{archive.name} holds no file {_shown(wanted)} (it holds: {shown or 'nothing'})"
    )


def verify_members(target: Path) -> dict[str, str | None]:
    """Re-hash extracted members against the manifest: name → problem (None if fine)."""
    manifest = _read_manifest(target)
    if manifest is None:
        return {}
    problems: dict[str, str | None] = {}
    for name, record in manifest.items():
        path = target / name
        if not path.is_file():
            problems[name] = "missing"
        elif file_sha256(path) != record["sha256"]:
            problems[name] = (
                f"sha256 differs from the one recorded at extraction ({record['sha256']})"
            )
        else:
            problems[name] = None
    return problems
