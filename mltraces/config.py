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
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mltraces.errors import ConfigError

APP_NAME = "mltraces"
HF_DEFAULT_REVISION = "main"


def cache_dir() -> Path:
    """Root of the download cache (created on demand)."""
    override = os.environ.get("MLTRACES_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


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
