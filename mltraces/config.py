"""Settings read from the environment, in one place.

Every knob a user can turn without code lives here, so the CLI, notebooks and
library calls all see the same values. :data:`SETTINGS` lists each variable with
what it means (the documentation's configuration page is drawn from it).

:func:`check_settings` reads them all when a command starts and where a download starts,
so a bad value is one line at once rather than a failure retried as if the network were
down, or a setting silently read as something else.

Sizes take an optional ``K``/``M``/``G`` suffix (powers of 1024).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

from mltraces.errors import ConfigError


class Setting(NamedTuple):
    """One environment variable: its name and what it means (defaults included)."""

    name: str
    meaning: str


#: every environment variable mltraces reads, with its meaning and default
SETTINGS: tuple[Setting, ...] = (
    Setting("MLTRACES_CACHE", "cache directory (default: the platform's user cache dir, see "
            "`mltraces cache-path`). Its path must be UTF-8 and openable by DuckDB (not a "
            "backslash together with `[`, `*` or `?`); otherwise every command stops with one "
            "line naming the variable. It may be read-only (see below)"),
    Setting("MLTRACES_MIRROR", "URL-prefix mirror: `https://HOST/PATH?Q` is fetched from "
            "`$MLTRACES_MIRROR/HOST/PATH`. An `http(s)://` base or a local directory laid out as "
            "`HOST/PATH`. When set, it replaces the upstream hosts. (Only the Hub tree API keeps "
            "its query on an http mirror, so a proxying mirror can page through it.)"),
    Setting("MLTRACES_OFFLINE", "`1`: never touch the network (a directory mirror still serves); "
            "a missing file fails with its name and how to get it. On: `1`, `true`, `yes`, `on`; "
            "off: `0`, `false`, `no`, `off` or unset (any case); any other value is an error"),
    Setting("MLTRACES_LOCAL", "`TABLE=PATH,TABLE=PATH`: use your own copy of a table's file "
            "(upstream format); validated against the schema, marked unverified. Same as "
            "`--local TABLE=PATH` on the CLI and `connect(local={...})`. PATH is a regular file "
            "or a folder: a pipe (`<(cat f)`, a FIFO) or a device (`/dev/zero`) is refused before "
            "it is read (a conversion is reused while its file stands, which a stream cannot do: "
            "save it to a file), and so is a path that is not UTF-8. Paths are literal (no "
            "wildcards); a comma inside a path is kept unless another `TABLE=` follows it"),
    Setting("MLTRACES_HF_ENDPOINT", "https base of the HuggingFace Hub (default "
            "`https://huggingface.co`), for a Hub mirror that serves the same API"),
    Setting("MLTRACES_HF_REVISION", "revision of the AcmeTrace HuggingFace dataset (default "
            "`main`; the resolved commit is recorded so you can pin it)"),
    Setting("MLTRACES_FIGURES_DIR", "where the notebooks also save their figures (unset: they "
            "only display them)"),
    Setting("MLTRACES_SOURCES", "folders (`:`-separated) holding your own source folders; "
            "unset: `<user config dir>/mltraces/sources` when it exists; empty: none"),
    Setting("MLTRACES_INTERPRETED", "`1`: run the compiled cores (scheduling, prefix cache) "
            "as the Python they are written in, even where they were compiled (about 100 times "
            "slower; the tests compare both)"),
    Setting("MLTRACES_DOWNLOAD_TIMEOUT", "seconds one file may take, every URL and retry "
            "included (default `3600`); the partial download is kept and the next run resumes "
            "it"),
    Setting("MLTRACES_MAX_DOWNLOAD", "largest body accepted when neither the registry nor the "
            "server states a size (default `16G`)"),
    Setting("MLTRACES_HOST_DOWN_TTL", "seconds an unreachable host is remembered (in "
            "`<cache>/state/hosts.json`) and not asked again (default `300`; `0` turns it off, "
            "old records included). A record counts for the current setting from the time it "
            "was written; one dated in the future (a clock that was ahead) is ignored"),
    Setting("MLTRACES_MAX_UNPACKED", "total size (default `4G`) allowed to an archive the "
            "registry does not describe (a local one); a registry archive may hold exactly its "
            "listed members. Also bounds every xz-compressed input (`.csv.xz`), counted while "
            "it is decompressed"),
    Setting("MLTRACES_MAX_MEMBERS", "member count (default `10000`) allowed to an archive the "
            "registry does not describe"),
    Setting("MLTRACES_MAX_GPUS", "most GPUs a replayed cluster may have (default `1048576`); a "
            "larger `--cluster` or cluster spec is refused in one line before anything is "
            "built"),
    Setting("MLTRACES_MAX_REPLAY_MEMORY", "most memory a replay may need for tables that grow "
            "with the cluster rather than with the jobs (ElasticFlow's GPUs × GPUs and nodes × "
            "jobs, Gandiva's per-node sets; default `4G`); checked before they are allocated"),
    Setting("MLTRACES_MAX_SEEDS", "most seeds one simulation sweep may ask for (default "
            "`100000`); `--seeds` and `simulate(seeds=...)` are counted before they are built"),
    Setting("MLTRACES_MAX_GENERATED_JOBS", "most jobs one generated trace may have "
            "(`--generate num_jobs=`; default `1000000`)"),
)

APP_NAME = "mltraces"
HF_DEFAULT_REVISION = "main"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def cache_dir() -> Path:
    """Root of the download cache (created on demand)."""
    override = os.environ.get("MLTRACES_CACHE")
    if override:
        return _absolute(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


@cache
def _absolute(path: str) -> Path:
    """``MLTRACES_CACHE`` made absolute and checked once per value (warm calls ask per file).

    Every view reads Parquet in the cache by path, so a path DuckDB cannot open
    would break every query: it is refused here, in one line naming the variable.
    """
    from mltraces.local_paths import duckdb_cannot_open, not_utf8, shown

    if not_utf8(path):
        raise ConfigError(f"MLTRACES_CACHE={shown(path)} is not UTF-8 text, and DuckDB opens "
                          "only UTF-8 paths; choose a folder whose path is UTF-8")
    absolute = Path(path).expanduser().resolve()
    if duckdb_cannot_open(str(absolute)):
        raise ConfigError(f"MLTRACES_CACHE={path!r} holds a backslash and one of [ * ?, which "
                          "DuckDB cannot open together; choose another folder")
    return absolute


def mirror() -> str | None:
    """The configured mirror prefix, without a trailing slash, or None."""
    value = os.environ.get("MLTRACES_MIRROR", "").strip()
    return value.rstrip("/") or None


_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def offline() -> bool:
    """True when the user forbade network access (``MLTRACES_OFFLINE``).

    Only the spellings of :data:`_ON` and :data:`_OFF` are accepted (any case):
    a value that means neither (``2``, ``y``, ``enabled``) is an error naming the
    variable, never a silent "online".
    """
    value = os.environ.get("MLTRACES_OFFLINE", "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ConfigError(f"MLTRACES_OFFLINE={os.environ['MLTRACES_OFFLINE']!r} is neither on "
                      f"({', '.join(_ON)}) nor off ({', '.join(_OFF[1:])} or unset)")


def interpreted() -> bool:
    """True when the compiled cores must not be used (``MLTRACES_INTERPRETED``)."""
    return os.environ.get("MLTRACES_INTERPRETED", "").strip().lower() in _ON


def hf_revision() -> str:
    """Revision (branch, tag or commit) of the AcmeTrace HuggingFace dataset to use."""
    return os.environ.get("MLTRACES_HF_REVISION", "").strip() or HF_DEFAULT_REVISION


# A comma starts the next override only when ``TABLE=`` follows, so a path may hold commas.
_NEXT_OVERRIDE = re.compile(r",(?=\s*[A-Za-z_]\w*\.\w+=)")


def parse_local(spec: str | None) -> dict[str, Path]:
    """Parse ``"TABLE=PATH,TABLE=PATH"`` into a mapping; paths are taken literally.

    A comma inside a path is kept (``a,b.csv``) unless what follows it reads as
    another ``source.table=`` override.

    >>> parse_local("acme.seren_jobs=/tmp/s.csv")
    {'acme.seren_jobs': PosixPath('/tmp/s.csv')}
    >>> parse_local("acme.seren_jobs=/tmp/a,b.csv,acme.kalos_jobs=k.csv")["acme.seren_jobs"]
    PosixPath('/tmp/a,b.csv')
    """
    result: dict[str, Path] = {}
    for item in _NEXT_OVERRIDE.split(spec or ""):
        item = item.strip()
        if not item:
            continue
        table, sep, path = item.partition("=")
        if not sep or not table.strip() or not path.strip():
            raise ConfigError(
                f"bad local table override {item!r}: expected TABLE=PATH, "
                "e.g. acme.seren_jobs=trace_seren.csv"
            )
        result[table.strip()] = Path(path.strip()).expanduser()
    return result


def local_tables() -> dict[str, Path]:
    """Table overrides from ``MLTRACES_LOCAL``."""
    return parse_local(os.environ.get("MLTRACES_LOCAL"))


def user_source_dirs() -> list[Path]:
    """Folders whose subfolders are a user's own sources (``MLTRACES_SOURCES``).

    Unset: the platform's config folder, ``<user config dir>/sources`` (read only if it
    exists); set but empty: none (tests run this way).
    """
    value = os.environ.get("MLTRACES_SOURCES")
    if value is None:
        import platformdirs

        default = Path(platformdirs.user_config_dir(APP_NAME)) / "sources"
        return [default] if default.is_dir() else []
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def user_source_folders() -> list[Path]:
    """Every ``<dir>/<name>/`` holding a ``source.json`` in :func:`user_source_dirs`, by
    folder (the registry checks them: :func:`mltraces.registry.user_folders`)."""
    return [p for p in user_source_candidates() if (p / "source.json").is_file()]


def user_source_candidates() -> list[Path]:
    """Every folder meant as a user's source: each subfolder of :func:`user_source_dirs`
    whose name does not start with ``.`` or ``_`` (a folder lacking ``source.json`` is
    then reported as a broken source, not passed over in silence)."""
    found = []
    for root in user_source_dirs():
        try:
            found += sorted(p for p in root.iterdir()
                            if p.is_dir() and not p.name.startswith((".", "_")))
        except OSError:  # a listed folder that is absent or unreadable holds no source
            continue
    return found


def figures_dir() -> Path | None:
    """Folder the notebooks save figures to, from ``MLTRACES_FIGURES_DIR`` (None: don't save)."""
    value = os.environ.get("MLTRACES_FIGURES_DIR", "").strip()
    return Path(value).expanduser() if value else None


# --------------------------------------------------------------------------- limits


def _setting(name: str, default: str, *, unit: str) -> float:
    """A non-negative number from the environment; a bad value names the variable."""
    text = os.environ.get(name, "").strip() or default
    number, scale = text, 1
    if unit == "bytes" and text[-1:].upper() in _UNITS:
        number, scale = text[:-1], _UNITS[text[-1:].upper()]
    try:
        value = float(number) * scale
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        example = "4G" if unit == "bytes" else "600"
        raise ConfigError(f"{name}={text!r} is not a number of {unit}; e.g. {name}={example}")
    return value


def download_timeout() -> float:
    """Seconds one file's download may take in all (``MLTRACES_DOWNLOAD_TIMEOUT``)."""
    return _setting("MLTRACES_DOWNLOAD_TIMEOUT", "3600", unit="seconds")


def max_download() -> int:
    """Byte cap for a body whose size nobody states (``MLTRACES_MAX_DOWNLOAD``)."""
    return int(_setting("MLTRACES_MAX_DOWNLOAD", "16G", unit="bytes"))


def host_down_ttl() -> float:
    """Seconds an unreachable host is not asked again (``MLTRACES_HOST_DOWN_TTL``)."""
    return _setting("MLTRACES_HOST_DOWN_TTL", "300", unit="seconds")


def max_unpacked() -> int:
    """Total bytes an unlisted (local) archive may unpack to (``MLTRACES_MAX_UNPACKED``)."""
    return int(_setting("MLTRACES_MAX_UNPACKED", "4G", unit="bytes"))


def max_members() -> int:
    """Members an unlisted (local) archive may hold (``MLTRACES_MAX_MEMBERS``)."""
    return int(_setting("MLTRACES_MAX_MEMBERS", "10000", unit="members"))


def max_gpus() -> int:
    """Most GPUs a replayed cluster may have (``MLTRACES_MAX_GPUS``)."""
    return int(_setting("MLTRACES_MAX_GPUS", "1048576", unit="GPUs"))


def max_replay_memory() -> int:
    """Bytes of cluster-sized working arrays a replay may need (``MLTRACES_MAX_REPLAY_MEMORY``)."""
    return int(_setting("MLTRACES_MAX_REPLAY_MEMORY", "4G", unit="bytes"))


def max_seeds() -> int:
    """Most seeds one simulation sweep may ask for (``MLTRACES_MAX_SEEDS``)."""
    return int(_setting("MLTRACES_MAX_SEEDS", "100000", unit="seeds"))


def max_generated_jobs() -> int:
    """Most jobs one generated trace may have (``MLTRACES_MAX_GENERATED_JOBS``)."""
    return int(_setting("MLTRACES_MAX_GENERATED_JOBS", "1000000", unit="jobs"))


def check_settings() -> None:
    """Read every limit setting now, so a bad one is reported before any work.

    Called by the command line first and where a download starts: a setting first
    read inside a retry loop would otherwise look like network trouble and be retried
    for seconds.
    """
    offline()
    download_timeout()
    max_download()
    host_down_ttl()
    max_unpacked()
    max_members()
    max_gpus()
    max_replay_memory()
    max_seeds()
    max_generated_jobs()
