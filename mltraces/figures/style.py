"""One look for every figure: paper-size, readable when printed, colour-blind safe.

Figures are sized in inches for a two-column paper (a column is 3.33 in, the
page 7 in) with 8 pt text, so they stay readable when dropped into a paper at
100 % and when viewed as PNG. Every plot function builds its
:class:`~matplotlib.figure.Figure` inside :func:`context`, which sets the
rcParams locally instead of changing the user's global matplotlib state, and
creates figures without pyplot so that rendering hundreds of them in a script
never leaks memory or needs a display.

Two figure styles (:data:`STYLES`): ``default`` titles each figure with where it
comes from (:func:`provenance`) and writes PNG + PDF; ``paper`` leaves those
titles out, keeps every figure a column or a page wide, and writes PDF + SVG.
Colours are the Okabe–Ito palette (:data:`PALETTE`); more series than colours
repeat them dashed (:func:`series_styles`).

>>> from mltraces.figures import style
>>> with style.context():
...     fig, ax = style.subplots(width="column")
>>> round(fig.get_figwidth(), 2)
3.33
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from functools import wraps
from pathlib import Path
from typing import Any, Literal

from cycler import cycler

#: Widths in inches: one column of a two-column paper, and the full page.
WIDTHS = {"column": 3.33, "page": 7.0}
#: PNG resolution: a page-wide figure is 1,400 pixels wide.
DPI = 200

#: Colour-blind-safe qualitative palette (Okabe & Ito), in a fixed order.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#D55E00",  # vermillion
    "#CC79A7",  # purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)

#: Line styles that multiply the palette when a figure has more series than colours:
#: every colour solid first, then every colour dashed, then dotted.
DASHES = ("-", (0, (4, 1.5)), (0, (1, 1.2)))

#: Fixed colours for names that recur across figures, so Zeus is always the same blue.
NAMED_COLORS = {
    "zeus": PALETTE[0],
    "default": PALETTE[7],
    "grid": PALETTE[1],
    "oracle": PALETTE[2],
    "pl-only": PALETTE[4],
    "bs-only": PALETTE[5],
    "Seren": PALETTE[0],
    "Kalos": PALETTE[3],
    "Philly": PALETTE[2],
    "PAI": PALETTE[1],
    "Helios": PALETTE[4],
    "COMPLETED": PALETTE[2],
    "CANCELLED": PALETTE[1],
    "FAILED": PALETTE[3],
    "RUNNING": PALETTE[5],
    "jobs": PALETTE[0],
    "GPU time": PALETTE[1],
}

RC: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "legend.frameon": False,
    "figure.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.5,
    "axes.axisbelow": True,
    "axes.prop_cycle": cycler(color=list(PALETTE)),
    "lines.linewidth": 1.3,
    "patch.linewidth": 0.5,
    "figure.dpi": 150,  # what notebooks display inline: a page-wide figure is 1,050 px
    "savefig.dpi": DPI,
    "savefig.bbox": "standard",  # the declared size: constrained layout keeps text inside
    "savefig.pad_inches": 0.03,
    "pdf.fonttype": 42,  # embed TrueType: text stays selectable and editable
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "svg.hashsalt": "mltraces",  # fixed ids in SVG output: re-rendering gives the same bytes
}

#: Figure styles and the files each writes. ``default``: every figure titled with where it
#: comes from (paper figure, data, our analysis), PNG + PDF, as committed in ``figures/``.
#: ``paper``: no provenance title (a caption says it), PDF + SVG, column or page width.
STYLES: dict[str, tuple[str, ...]] = {"default": ("png", "pdf"), "paper": ("pdf", "svg")}
_STYLE: ContextVar[str] = ContextVar("mltraces_figure_style", default="default")

#: Metadata that would change on every render (dates, versions) is left out of the files.
METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Producer": None, "Creator": None},
    "svg": {"Date": None, "Creator": None},
}


@contextlib.contextmanager
def context() -> Iterator[None]:
    """Apply the mltraces style for the duration of a ``with`` block."""
    import matplotlib

    with matplotlib.rc_context(RC):
        yield


@contextlib.contextmanager
def using(name: str) -> Iterator[None]:
    """Draw the figures plotted inside the block in style ``name`` (see :data:`STYLES`)."""
    check_style(name)
    token = _STYLE.set(name)
    try:
        yield
    finally:
        _STYLE.reset(token)


def check_style(name: str) -> str:
    """``name`` if it is a figure style, else a ValueError that lists them."""
    if name not in STYLES:
        raise ValueError(f"unknown figure style {name!r}; choose from {', '.join(STYLES)}")
    return name


def current() -> str:
    """The figure style in force (``default`` unless inside :func:`using`)."""
    return _STYLE.get()


def provenance(target: Any, text: str, **kwargs: Any) -> Any:
    """A title that says where the figure comes from, left out in the ``paper`` style.

    ``target`` is a Figure (the title becomes its suptitle) or an Axes (its
    title). Panel titles that say what a panel shows are plain ``set_title``
    calls: they stay in every style.
    """
    if current() == "paper":
        return None
    from matplotlib.figure import Figure

    if isinstance(target, Figure):
        return target.suptitle(text, **kwargs)
    return target.set_title(text, **kwargs)


def series_styles(names: Sequence[str], skip: Sequence[str] = ("#000000",)) -> dict[str, dict]:
    """``color`` and ``linestyle`` per name, for more series than the palette has colours.

    The Okabe–Ito colours (without ``skip``: black is kept for totals) in order,
    solid; past them the same colours dashed, then dotted. Distinct for up to
    21 series, colour-blind safe, and no red/green pair.
    """
    colours = [c for c in PALETTE if c not in set(skip)]
    return {
        name: {"color": colours[k % len(colours)],
               "linestyle": DASHES[(k // len(colours)) % len(DASHES)]}
        for k, name in enumerate(names)
    }


def inches(width: Literal["column", "page"] | float) -> float:
    """A figure width in inches; in the ``paper`` style any width is a column or the page."""
    if isinstance(width, str):
        return WIDTHS[width]
    value = float(width)
    if current() == "paper" and value not in WIDTHS.values():
        return WIDTHS["column"] if value <= WIDTHS["column"] else WIDTHS["page"]
    return value


def styled(plot: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: run a plot function inside :func:`context`."""

    @wraps(plot)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with context():
            return plot(*args, **kwargs)

    return wrapper


def color(name: str, index: int = 0) -> str:
    """The fixed colour of a recurring name, else the palette's ``index``-th colour."""
    return NAMED_COLORS.get(name, PALETTE[index % len(PALETTE)])


def colors(names: Sequence[str]) -> dict[str, str]:
    """A colour per name: fixed ones where known, the palette in order otherwise."""
    result: dict[str, str] = {}
    free = iter(c for c in PALETTE if c not in {NAMED_COLORS.get(n) for n in names})
    for name in names:
        result[name] = NAMED_COLORS.get(name) or next(free, PALETTE[len(result) % len(PALETTE)])
    return result


def subplots(
    nrows: int = 1,
    ncols: int = 1,
    *,
    width: Literal["column", "page"] | float = "column",
    height: float | None = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """A pyplot-free ``(Figure, axes)`` pair of paper width.

    ``height`` defaults to a golden-ish 0.62 × width for one row, and a bit
    less per row when there are several.
    """
    from matplotlib.figure import Figure

    wide = inches(width)
    if height is None:
        per_row = wide / max(ncols, 1) * (0.8 if ncols > 1 else 0.62)
        height = max(1.6, min(per_row * nrows + 0.35, 9.0))
    fig = Figure(figsize=(wide, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, **kwargs)
    return fig, axes


def panel_grid(count: int, row_height: float, ncols: int = 3) -> tuple[Any, list[Any]]:
    """A page-wide figure of ``count`` small multiples, ``ncols`` per row; spare cells hidden.

    Returns the figure and the ``count`` visible axes in reading order.
    """
    nrows = max(1, -(-count // ncols))
    fig, axes = subplots(nrows, ncols, width="page", height=row_height * nrows, squeeze=False)
    panels = list(axes.flat)
    for ax in panels[count:]:
        ax.set_visible(False)
    return fig, panels[:count]


def save(
    fig: Any, stem: Path | str, formats: Sequence[str] = ("png", "pdf"), *, tight: bool = False
) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.pdf``; returns the paths.

    Files are exactly the figure's declared size (a page-wide figure is 7 in,
    1,400 px), as a paper needs them; constrained layout already keeps titles
    and legends inside, and one draw per format is half the work of measuring a
    tight box first. ``tight=True`` fits the files to every artist instead (the
    unverified-input note is drawn above the figure).

    Byte-stable: no dates or versions in the files' metadata (:data:`METADATA`),
    so re-rendering unchanged data gives identical files and a clean ``git diff``.
    """
    from mltraces.errors import OutputError
    from mltraces.outputs import replace_file

    stem = Path(stem)
    paths = []
    with context(), laid_out(fig):
        bbox = tight_bbox(fig) if tight else None
        for fmt in formats:
            path = stem.with_suffix(f".{fmt}")
            try:
                stem.parent.mkdir(parents=True, exist_ok=True)
                with replace_file(path) as tmp:  # a reader never sees half a figure
                    fig.savefig(tmp, format=fmt, metadata=METADATA.get(fmt), bbox_inches=bbox)
            except OSError as error:
                raise OutputError(f"cannot write {path}: {error.strerror or error}; "
                                  "it was not changed") from None
            paths.append(path)
    return paths


@contextlib.contextmanager
def laid_out(fig: Any) -> Iterator[None]:
    """Run the figure's layout engine once and keep its result for the block.

    With a layout engine, every ``savefig`` draws the figure twice (a dry run so
    the layout can measure text, then the real draw) and solves the layout each
    time; the layout is the same for every format, so it is solved once here and
    each format then costs one draw. The engine is restored afterwards.
    """
    engine = fig.get_layout_engine()
    if engine is None:
        yield
        return
    fig.draw_without_rendering()
    fig.set_layout_engine(None)
    try:
        yield
    finally:
        fig.set_layout_engine(engine)


def tight_bbox(fig: Any) -> Any:
    """The figure's tight bounding box in inches, padded like ``bbox_inches="tight"``."""
    from matplotlib import rcParams
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    return fig.get_tightbbox(renderer).padded(rcParams["savefig.pad_inches"])


def percent(value: float, digits: int = 1) -> str:
    """``value`` (already in percent) as text with ``digits`` decimals and a % sign.

    Rounds half up after discarding floating-point noise below 0.001 percentage
    points, the way a percentage shown to three decimals reads: 31.44996 is
    31.450 %, printed as 31.5 %. Plain ``round`` would print 31.4 %.

    >>> percent(31.449960502287833), percent(23.846460221642463), percent(2.967)
    ('31.5%', '23.8%', '3.0%')
    """
    from decimal import ROUND_HALF_UP, Decimal

    three = Decimal(repr(float(value))).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    shown = three.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{shown}%"


def log2_ticks(ax: Any, values: Sequence[float], axis: str = "x") -> None:
    """Log-2 axis with ticks labelled as the plain powers of two in ``values``."""
    import numpy as np

    finite = [v for v in values if v and np.isfinite(v) and v > 0]
    if not finite:
        return
    lo, hi = int(np.floor(np.log2(min(finite)))), int(np.ceil(np.log2(max(finite))))
    step = max(1, (hi - lo + 1) // 8)
    ticks = [2**k for k in range(lo, hi + 1, step)]
    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    setter("log", base=2)
    (ax.set_xticks if axis == "x" else ax.set_yticks)(ticks, [short_number(t) for t in ticks])
    (ax.xaxis if axis == "x" else ax.yaxis).set_minor_locator(_null_locator())


def log_axis(ax: Any, axis: str = "both") -> None:
    """Log scale with plainly written ticks that suit the span of the data.

    Matplotlib labels only powers of ten (in scientific notation) on a log axis,
    which leaves a panel spanning less than a decade with no numbers at all.
    Here: spans under a decade get 4 evenly spaced "nice" ticks, up to 1.5
    decades 1-2-5 ticks, up to 3 decades 1-3 ticks, beyond that the powers of
    ten, all written as plain numbers.
    """
    import numpy as np
    from matplotlib import ticker

    for name in ("x", "y") if axis == "both" else (axis,):
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")
        ax.autoscale_view()
        lo, hi = ax.get_xlim() if name == "x" else ax.get_ylim()
        span = np.log10(hi / lo) if lo > 0 and hi > 0 else 3.0
        if span < 1.0:
            locator: Any = ticker.MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10])
        elif span < 1.5:
            locator = ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0))
        elif span < 3.0:
            locator = ticker.LogLocator(base=10, subs=(1.0, 3.0))
        else:
            locator = ticker.LogLocator(base=10, subs=(1.0,))
        target = ax.xaxis if name == "x" else ax.yaxis
        target.set_major_locator(locator)
        target.set_major_formatter(ticker.FuncFormatter(lambda v, _p: f"{v:g}"))
        target.set_minor_locator(ticker.NullLocator())


def _null_locator() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def short_number(value: float) -> str:
    """1024 → '1K', 16384 → '16K'; keeps tick labels narrow."""
    if value >= 1024 and value % 1024 == 0:
        return f"{int(value // 1024)}K"
    return f"{value:g}"


def duration_axis(ax: Any, axis: str = "x") -> None:
    """Log-scaled seconds with ticks at 1 s, 10 s, 1 min, 10 min, 1 h, 1 d, 1 w, 1 mo.

    Only ticks inside the data's range are set, so the axis does not stretch
    to a month for jobs that last hours.
    """
    ticks = [1, 10, 60, 600, 3600, 86400, 7 * 86400, 30 * 86400]
    labels = ["1s", "10s", "1min", "10min", "1h", "1d", "1w", "1mo"]
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    ax.autoscale_view()
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    keep = [(t, label) for t, label in zip(ticks, labels, strict=False) if lo <= t <= hi]
    if keep:
        (ax.set_xticks if axis == "x" else ax.set_yticks)(*map(list, zip(*keep, strict=False)))
        (ax.set_xlim if axis == "x" else ax.set_ylim)(lo, hi)
    (ax.xaxis if axis == "x" else ax.yaxis).set_minor_locator(_null_locator())


def cdf_axis(ax: Any, label: str = "CDF (%)") -> None:
    """Y axis from 0 to 100 % for cumulative distributions."""
    ax.set_ylim(0, 100)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_ylabel(label)


def table_figure(
    rows: Sequence[Sequence[str]],
    columns: Sequence[str],
    *,
    title: str | None = None,
    width: Literal["column", "page"] | float = "page",
    highlight_last: bool = False,
    col_widths: Sequence[float] | None = None,
) -> Any:
    """A figure that shows a small table (for tables that papers print as tables)."""
    from matplotlib.figure import Figure

    wide = inches(width)
    if current() == "paper":
        title = None
    header_lines = max(str(c).count("\n") + 1 for c in columns)
    title_space = 0.14 + 0.16 * (title.count("\n") + 1) if title else 0.05
    height = 0.22 * (len(rows) + header_lines) + title_space
    fig = Figure(figsize=(wide, height))
    ax = fig.add_axes((0, 0, 1, 1 if not title else 1 - title_space / height))
    ax.axis("off")
    table = ax.table(
        cellText=[list(r) for r in rows],
        colLabels=list(columns),
        loc="upper center",
        cellLoc="right",
        colLoc="right",
        colWidths=list(col_widths) if col_widths else None,
        bbox=(0, 0, 1, 1),
    )
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    for (row, col), cell in table.get_celld().items():
        cell.set_edgecolor("#bbbbbb")
        cell.set_linewidth(0.4)
        if col == 0:
            cell.set_text_props(ha="left")
            cell._loc = "left"
        if row == 0:
            cell.set_text_props(weight="bold")
            cell.set_facecolor("#eeeeee")
            cell.set_height(cell.get_height() * header_lines)
        elif highlight_last and row == len(rows):
            cell.set_text_props(weight="bold")
    if title:
        fig.suptitle(title, y=1 - 0.02 / height, va="top")
    return fig
