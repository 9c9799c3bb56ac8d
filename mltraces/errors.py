"""Exceptions with messages that name the bad value and the fix.

The CLI prints ``str(error)`` as a one-line cause and exits non-zero, so every
message here must stand on its own.
"""

from __future__ import annotations


class MltracesError(Exception):
    """Base class of every error mltraces raises on purpose."""


class ByDurationWarning(UserWarning):
    """Jobs of a replayed trace name models that have no throughput profile, so they replay
    by their run time; said once per trace (the CLI prints it as one ``note:`` line)."""


class PartialViewWarning(UserWarning):
    """A view ``connect()`` set up (``mltraces.jobs``) unites tables some of which are not fetched.

    Its queries would silently leave those tables' rows out; the message names them
    and the ``mltraces fetch`` command that brings them. Silence it with
    ``warnings.simplefilter("ignore", PartialViewWarning)`` once you know.
    """


class RegistryError(MltracesError, ValueError):
    """A source folder (``source.json``, ``citation.bib``) is malformed."""


class ConfigError(MltracesError, ValueError):
    """A setting (environment variable or command-line value) has a bad value."""


class FetchError(MltracesError):
    """A file could not be downloaded from any of its URLs."""


class VerificationError(FetchError):
    """Downloaded or cached bytes do not match the registry (the file was removed)."""


class OfflineError(FetchError):
    """Offline mode is on and a needed file is not in the cache."""

    @classmethod
    def for_file(cls, file_id: str, path: object, url: str) -> OfflineError:
        """The error for one missing file: where it should be and three ways to get it."""
        return cls(
            f"{file_id} is not in the cache ({path}) and MLTRACES_OFFLINE is set. "
            f"Unset MLTRACES_OFFLINE and run `mltraces fetch {file_id}`, point MLTRACES_MIRROR "
            f"at a copy, or download {url} to that path"
        )


class HostDownError(FetchError):
    """A host was unreachable a moment ago; it is not asked again until its record expires."""


class LimitError(FetchError):
    """A download went past a limit (pinned size, size cap, deadline) and was stopped."""


class UnsafePathError(MltracesError):
    """A path from the network or the registry would land outside its root (cache, mirror)."""


class OutputError(MltracesError):
    """A command's output (``-o``) cannot be written, found before any work or on writing."""


class CacheError(MltracesError):
    """The cache directory cannot be written: read-only, a file, or the disk is full."""


class UnsafeArchiveError(MltracesError):
    """An archive member would escape the extraction folder or is a link/device."""


class UnsafePickleError(MltracesError):
    """A pickle was refused: a global mltraces does not allow, a limit exceeded, or bad bytes."""


class SchemaError(MltracesError):
    """A schema file is malformed, or a data file does not match its schema."""
