"""Where the site's inputs live and where it is published (a leaf: every page module reads it)."""

from pathlib import Path

#: the clone's root (the site's sources, ``mkdocs.yml``, ``figures/``, ``benchmarks/``)
CLONE = Path(__file__).resolve().parents[2]
#: where the site is published; the README links into it
SITE_URL = "https://mltraces.github.io/mltraces/"
