"""Source names as users type them: ``alibaba-pai`` is ``alibaba_pai``.

Sources are Python packages (``mltraces/sources/<name>``) and SQL schemas, so
their names use underscores; repositories and papers spell some of them with
hyphens. A hyphen can never be part of a source name, so reading it as an
underscore in the source part of a name never changes what a valid name means.
"""

from __future__ import annotations

import re

__all__ = ["canonical"]

_SOURCE_PART = re.compile(r"^[A-Za-z0-9_-]+(?=[/.]|$)")


def canonical(name: str) -> str:
    """``name`` with hyphens in its source part read as underscores.

    The source part is what comes before the first ``/`` (a file id or trace:
    ``alibaba-pai/all``) or ``.`` (a table: ``alibaba-openb.pods``), or the whole
    name. A bare file name (``trace-data.tar.gz``) has no source part to rewrite:
    callers pass only names that start with a source.

    >>> canonical("alibaba-pai/all"), canonical("alibaba-openb.pods"), canonical("itp")
    ('alibaba_pai/all', 'alibaba_openb.pods', 'itp')
    """
    found = _SOURCE_PART.match(name)
    if found is None or "-" not in found.group():
        return name
    return found.group().replace("-", "_") + name[found.end():]
