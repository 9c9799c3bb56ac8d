"""pooch processors: the checks pooch cannot make, and the safe untar.

A processor is pooch's ``(fname, action, pooch) -> result`` callable, run after
:meth:`pooch.Pooch.fetch` has put the file in place; ``action`` is
``"download"``, ``"update"`` (pooch replaced a copy whose hash was wrong) or
``"fetch"`` (the file was already there).

- :class:`VerifyPins` hashes the file once (size, sha256 and git blob in one
  pass), compares it with every pin of the registry entry (a first-use file: its
  recorded first download, or it records this one, :mod:`.firstuse`), and writes the stamp
  that lets later calls trust the file without hashing. It is what verifies
  files pinned only by a **git blob id**: pooch knows no such algorithm (the id
  hashes a ``blob <size>\\0`` header before the bytes, so it cannot be a
  streaming ``hashlib``-style hasher), so their pooch registry entry is ``None``
  ("no pooch check") and this processor does the check. A failing file is
  deleted before the per-file lock is released, and no stamp is ever written
  for it, so nothing in mltraces reads it.
- :class:`SafeUntar` unpacks a verified tarball or zip with :mod:`mltraces.download.archives`
  (bounded, no links, no escapes) once per archive hash, like pooch's ``Untar``
  but safe; it returns the member paths.
- :func:`chain` runs several processors in order.

All three work with any pooch, e.g. the one :func:`mltraces.download.pooch_for`
returns::

    pup = pooch_for("zeus")
    pup.fetch("alibaba_groups.csv.xz", processor=VerifyPins.for_id("zeus/alibaba_groups.csv.xz"))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mltraces.download import stamps
from mltraces.download.archives import Limits, extract_verified
from mltraces.download.checks import mismatch, rejected, sniff_file
from mltraces.download.paths import extracted_dir
from mltraces.errors import VerificationError
from mltraces.logs import get_logger
from mltraces.registry import RemoteFile

log = get_logger(__name__)

Processor = Callable[[str, str, Any], Any]

__all__ = ["PinMismatch", "SafeUntar", "StaleCopy", "VerifyPins", "chain"]


class PinMismatch(VerificationError):
    """Freshly downloaded bytes do not match their pins (the file was deleted)."""


class StaleCopy(VerificationError):
    """A file already in the cache failed its pins (deleted; download it again)."""


@dataclass(frozen=True)
class VerifyPins:
    """Check a file against every pin of ``file`` and stamp it; delete it on mismatch."""

    file: RemoteFile

    @classmethod
    def for_id(cls, file_id: str) -> VerifyPins:
        """The processor for a registry file id (``zeus/alibaba_groups.csv.xz``)."""
        from mltraces.registry import get_file

        return cls(get_file(file_id))

    def __call__(self, fname: str, action: str, pooch: Any = None) -> str:
        from mltraces import hashing
        from mltraces.download import firstuse

        path = Path(fname)
        file = firstuse.effective(self.file)  # a first-use file's recorded pin, once it has one
        # a first-use file's length is judged with its hash (one refusal naming the record)
        problem = sniff_file(path, dataclasses.replace(file, size=None) if file.first_use
                             else file)
        found = None
        unrecorded = file.first_use and not file.sha256
        if problem is None:
            found = hashing.digest(path)
            problem = None if unrecorded else mismatch(file, found)
        if problem is not None or found is None:
            path.unlink(missing_ok=True)
            stamps.remove(path)
            error = (firstuse.refused(file, found.sha256, found.size)
                     if file.first_use and found is not None
                     else rejected(file, problem or "unreadable"))
            raise (StaleCopy if action == "fetch" else PinMismatch)(str(error))
        if unrecorded:  # the first verified download of a file no publisher hash pins
            firstuse.record(file, found)
            file = firstuse.effective(file)
        stamps.write(path, file, found)
        return fname


@dataclass(frozen=True)
class SafeUntar:
    """Unpack a verified tarball once (bounded by ``members`` when the registry lists them).

    Returns the member paths, like pooch's ``Untar``; :meth:`members_of` gives them by name.
    """

    members: tuple[tuple[str, int | None, str | None], ...] = ()

    @classmethod
    def for_file(cls, file: RemoteFile) -> SafeUntar:
        """The untar for a registry archive, held to the members it lists."""
        return cls(tuple((m.name, m.size, m.sha256) for m in file.members))

    def limits(self) -> Limits:
        """Exactly the listed members, else the local-archive limits (``MLTRACES_MAX_*``)."""
        return Limits.pinned(self.members) if self.members else Limits.local()

    def target(self, archive: Path) -> Path:
        """``<cache>/extracted/<name>-<sha256[:16]>``: one folder per archive content."""
        stamp = stamps.read(archive) or {}
        sha = stamp.get("sha256")
        if not isinstance(sha, str) or len(sha) != 64:
            from mltraces.hashing import file_sha256

            sha = file_sha256(archive)
        return extracted_dir(archive, sha)

    def members_of(self, archive: Path) -> dict[str, Path]:
        """Member name → path, unpacking first when needed (reuses an intact extraction)."""
        return extract_verified(archive, self.target(archive), self.limits())

    def __call__(self, fname: str, action: str, pooch: Any = None) -> list[str]:
        return sorted(str(p) for p in self.members_of(Path(fname)).values())


def chain(*processors: Processor) -> Processor:
    """One pooch processor running ``processors`` in order, each on the previous path."""

    def run(fname: str, action: str, pooch: Any = None) -> Any:
        result: Any = fname
        for processor in processors:
            result = processor(result, action, pooch)
        return result

    return run
