"""Settings read from the environment, in one place.

Every knob a user can turn without code lives here, so the CLI, notebooks and
library calls all see the same values:

- ``MLTRACES_CACHE``: cache directory (default: the platform's user cache dir).
- ``MLTRACES_MIRROR``: URL-prefix mirror. ``https://HOST/PATH?Q`` is fetched from
  ``$MLTRACES_MIRROR/HOST/PATH``; the mirror is an ``http(s)://`` base or a directory.
- ``MLTRACES_OFFLINE=1``: never touch the network.
- ``MLTRACES_LOCAL="TABLE=PATH,TABLE=PATH"``: user-supplied files for tables (paths are
  literal: no wildcards; a comma before another ``TABLE=`` separates overrides).
- ``MLTRACES_HF_REVISION``: HuggingFace revision of the AcmeTrace dataset (default ``main``).
- ``MLTRACES_HF_ENDPOINT``: https base of the HuggingFace Hub API (default
  ``https://huggingface.co``; read by :mod:`mltraces.datasets.acme.hub`).
- ``MLTRACES_FIGURES_DIR``: where the notebooks also save their figures (unset: only shown).

Limits on what the network and archives may cost (each error names its setting):

- ``MLTRACES_DOWNLOAD_TIMEOUT``: seconds one file may take, every URL and retry
  included (default 3600); the partial download is kept and resumes next time.
- ``MLTRACES_MAX_DOWNLOAD``: largest body accepted when neither the registry nor the
  server states a size (default ``16G``).
- ``MLTRACES_HOST_DOWN_TTL``: seconds an unreachable host is remembered and not asked
  again (default 300; ``0`` turns the memory off).
- ``MLTRACES_MAX_UNPACKED`` / ``MLTRACES_MAX_MEMBERS``: total size (default ``4G``) and
  member count (default 10000) of an archive whose members the registry does not list
  (a local archive); a pinned archive may hold exactly its listed members.

Limits on what a simulation may ask for (each refusal names its setting):

- ``MLTRACES_MAX_GPUS``: most GPUs a replayed cluster may have (default 1048576);
  a larger ``--cluster`` is refused before anything is built.
- ``MLTRACES_MAX_REPLAY_MEMORY``: most working memory a replay may need for arrays
  that grow with the cluster rather than the work (ElasticFlow's GPUs × GPUs and
  nodes × jobs tables, Gandiva's per-node sets; default ``4G``).
- ``MLTRACES_MAX_SEEDS``: most seeds one ``simulate`` call may sweep (default 100000).

Sizes take an optional ``K``/``M``/``G`` suffix (powers of 1024).
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

from mltraces.errors import ConfigError

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
    """``MLTRACES_CACHE`` made absolute once per value (warm calls ask for it per file)."""
    return Path(path).expanduser().resolve()


def mirror() -> str | None:
    """The configured mirror prefix, without a trailing slash, or None."""
    value = os.environ.get("MLTRACES_MIRROR", "").strip()
    return value.rstrip("/") or None


def offline() -> bool:
    """True when the user forbade network access."""
    return os.environ.get("MLTRACES_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


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
