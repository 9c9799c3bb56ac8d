"""Small files written whole or not at all: a temp file per process, then a rename.

Stamps, warm-build records, host health and leases are read by other processes
at any moment; a reader must see the old file or the new one, never half of
either, and a failed write must leave no temp file behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_text_atomic(target: Path, text: str) -> None:
    """Replace ``target`` with ``text`` (the temp file is named per process: writers may race)."""
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
    finally:  # never hide the write's own error behind the cleanup's (a read-only cache)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
