"""The one exception the scheduling simulator raises on purpose."""

from __future__ import annotations

from mltraces.errors import MltracesError


class SchedulingError(MltracesError, ValueError):
    """Bad input to the scheduler: the message names the value, what was expected and the fix."""
