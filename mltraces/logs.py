"""The command's log format (``mltraces: message`` on stderr), installed when first needed.

Importing :mod:`logging` costs ~4 ms, a tenth of what a warm ``mltraces sql`` adds to
DuckDB, and a warm query logs nothing. So the command asks for its format with
:func:`configure`, and it is installed by the first :func:`get_logger` call (every
mltraces module takes its logger from there, which is checked by a test) or at once
when logging is already loaded. A run that never loads a logging module never
imports :mod:`logging`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

__all__ = ["FORMAT", "configure", "get_logger"]

FORMAT = "mltraces: %(message)s"
_INFO, _WARNING = 20, 30  # logging.INFO and logging.WARNING, without importing logging
_wanted: int | None = None  # the level the command asked for, until installed


def configure(*, verbose: bool | None) -> None:
    """Log at INFO (``verbose``) or WARNING in the command's format; None withdraws the request."""
    global _wanted
    _wanted = None if verbose is None else (_INFO if verbose else _WARNING)
    if _wanted is not None and "logging" in sys.modules:
        _install()


def get_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, the command's format installed first if it asked for one."""
    import logging

    _install()
    return logging.getLogger(name)


def _install() -> None:
    global _wanted
    if _wanted is None:
        return
    import logging

    logging.basicConfig(level=_wanted, format=FORMAT)
    _wanted = None
