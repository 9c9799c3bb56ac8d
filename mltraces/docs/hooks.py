"""mkdocs hooks (``mkdocs.yml``: ``hooks: [mltraces/docs/hooks.py]``): the generated pages.

``on_config`` fills the generated sections of the nav, ``on_files`` adds the generated
pages and the main job's images and figure data (``figures/*.png``, ``*.csv``),
``on_page_markdown`` replaces the ``<!-- mltraces: NAME -->`` markers of hand-written
pages. The example queries run on a catalog opened once per build from the cache
(nothing is downloaded), closed when the build ends.
"""

from __future__ import annotations

import warnings
from typing import Any

_state: dict[str, Any] = {}


def on_config(config: Any) -> Any:
    from mltraces.docs import expand_nav

    if config.nav:
        config.nav = expand_nav(config.nav)
    return config


def _catalog() -> Any:
    """Every table from the cache (never fetched); None when it cannot be opened."""
    from mltraces.catalog import connect
    from mltraces.errors import MltracesError, PartialViewWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PartialViewWarning)
            return connect()
    except MltracesError:
        return None


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    from mltraces.docs import generated_pages
    from mltraces.docs.site import CLONE

    figures = CLONE / "figures"
    con = _state["con"] = _catalog()
    for path, text in generated_pages(con, figures if figures.is_dir() else None).items():
        files.append(File.generated(config, path, content=text))
    for image in sorted(figures.glob("*")) if figures.is_dir() else ():
        if image.suffix in (".png", ".csv"):
            files.append(File.generated(config, f"figures/{image.name}",
                                        abs_src_path=str(image)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    from mltraces.docs import fill

    return fill(markdown, page.file.src_uri)


def on_post_build(config: Any) -> None:
    con = _state.pop("con", None)
    if con is not None:
        con.close()
