"""The package's layers as data: which folder may import which, read against the code.

Data flows one way, from an upstream file to a figure::

    upstream file -> download (verified cache) -> catalog (typed tables)
                  -> workloads (an engine's inputs) -> engines (replays)
                  -> papers (setups, figure data) -> figures (drawn) -> commands

:data:`LAYERS` lists the package's parts from the ground up, each with the parts it
may import. ``tests/test_layers.py`` reads every module's imports (:func:`imports`:
``import`` statements anywhere in a module, type-only ones included) and holds the
code to this table: a part imports only what its row allows, never a part above it,
and no two modules import each other in a loop. The architecture page is drawn from
the same table and the measured imports (:func:`markdown`), so it cannot drift.

Plug-ins are found by scanning, never imported by name: the catalog finds a source's
``readers.py``, the figure registry a paper's ``figures.py``, the notebook writer a
paper's ``notebook.py`` (``importlib`` over the folder names). Moved names are served
by :mod:`mltraces._moved` the same way, for one release.

>>> [layer.name for layer in LAYERS][:3]
['foundation', 'model', 'download']
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Layer:
    """One part of the package: its modules (dotted prefixes), its purpose, what it may import."""

    name: str
    modules: tuple[str, ...]
    purpose: str
    may_import: tuple[str, ...] = ()

    def holds(self, module: str) -> bool:
        """Whether ``module`` belongs to this part."""
        return any(module == m or module.startswith(m + ".") for m in self.modules)


_FOUNDATION = ("mltraces._moved", "mltraces.errors", "mltraces.logs", "mltraces.names",
               "mltraces.hashing", "mltraces.atomic", "mltraces.containment", "mltraces.config",
               "mltraces.local_paths", "mltraces.outputs", "mltraces.workers",
               "mltraces.safepickle", "mltraces.layers", "mltraces.compiled", "mltraces.cyshim")

#: the parts from the ground up; a part may import the parts its row names, and itself
LAYERS: tuple[Layer, ...] = (
    Layer("foundation", _FOUNDATION,
          "errors, settings, logging, atomic writes, worker pools, safe unpickling"),
    Layer("model", ("mltraces.registry", "mltraces.schema", "mltraces.mapping", "mltraces.jobmap",
                    "mltraces.requestmap", "mltraces.exprcheck"),
          "what the data is, read from JSON: source cards, table schemas, job and request "
          "mappings",
          ("foundation",)),
    Layer("download", ("mltraces.download",),
          "pooch engine: pinned files fetched, verified, cached, archives unpacked safely",
          ("foundation", "model")),
    Layer("catalog", ("mltraces.catalog",),
          "DuckDB: conversions tied to their bytes, typed views, validation, the jobs view",
          ("foundation", "model", "download")),
    Layer("synthetic", ("mltraces.synthetic",),
          "the kit sources use to write files in their exact upstream formats",
          ("foundation", "model", "download")),
    Layer("sources", ("mltraces.sources",),
          "one folder per release: its card, mappings, format readers and synthetic writers",
          ("foundation", "model", "download", "catalog", "synthetic")),
    Layer("scheduling", ("mltraces.scheduling",),
          "engine: cluster scheduling replays (policies/, compiled cores/, the model)",
          ("foundation", "model")),
    Layer("simulation", ("mltraces.simulation",),
          "engine: the Zeus recurring-job replay", ("foundation", "model")),
    Layer("prefixcache", ("mltraces.prefixcache",),
          "engine: prefix KV-cache replay of request traces (LRU, LFU, FIFO, Belady)",
          ("foundation",)),
    Layer("workloads", ("mltraces.workloads",),
          "an engine's inputs read from the catalog (job traces, clusters, profiles, traces)",
          ("foundation", "model", "catalog", "scheduling", "simulation", "prefixcache")),
    Layer("interop", ("mltraces.interop",),
          "other simulators' trace formats: export, import, round trips",
          ("foundation", "model", "download", "catalog", "synthetic", "scheduling",
           "workloads")),
    Layer("figures", ("mltraces.figures",),
          "the drawing kit: figure specs, SQL helpers, the render cache, style",
          ("foundation", "model", "catalog")),
    Layer("papers", ("mltraces.papers",),
          "one folder per paper: setups, figure data, published numbers, notebook cells",
          ("foundation", "model", "catalog", "scheduling", "simulation", "workloads",
           "figures")),
    Layer("commands", ("mltraces.commands", "mltraces.cli", "mltraces.__main__"),
          "the mltraces verbs; a default that comes from a paper is asked of that paper",
          ("foundation", "model", "download", "catalog", "scheduling", "simulation",
           "prefixcache", "workloads", "interop", "figures", "papers")),
    Layer("docs", ("mltraces.docs",),
          "the documentation site: pages drawn from source and paper folders, docstrings, "
          "the CLI parser and the measured results (its verb, `mltraces docs`, lives here)",
          ("foundation", "model", "download", "catalog", "synthetic", "sources", "scheduling",
           "simulation", "prefixcache", "workloads", "interop", "figures", "papers",
           "commands")),
)
#: the package's own ``__init__``: lazy names only (strings), so it is ground floor
ROOT = "mltraces"


def layer_of(module: str) -> Layer | None:
    """The part ``module`` belongs to (None for the package root, which imports nothing)."""
    return next((layer for layer in LAYERS if layer.holds(module)), None)


def modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once per version of the file (the graph is asked for both ways)."""
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


@cache
def _parsed(path: str, mtime_ns: int, size: int) -> ast.Module:
    """The AST of one version of a file (``mtime_ns`` and ``size`` key the version)."""
    return ast.parse(Path(path).read_text(encoding="utf-8"), path)


#: the fields of a node that hold statements (an import is a statement: no expression holds
#: one), so a walk skips every expression: 0.2 s for the package against 1.4 for every node
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _type_checking(test: ast.expr) -> bool:
    """True when an ``if``'s test names ``TYPE_CHECKING`` (``typing.TYPE_CHECKING`` too)."""
    return any((isinstance(n, ast.Name) and n.id == "TYPE_CHECKING")
               or (isinstance(n, ast.Attribute) and n.attr == "TYPE_CHECKING")
               for n in ast.walk(test))


def _statements(tree: ast.Module, *, type_only: bool) -> Iterator[ast.AST]:
    """Every statement of ``tree``, nested ones too (``type_only=False``: leaving out
    each ``if`` whose test names ``TYPE_CHECKING``, with all it holds)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for field in _BODIES:
            for child in getattr(node, field, ()):
                if not type_only and isinstance(child, ast.If) and _type_checking(child.test):
                    continue
                stack.append(child)
                yield child


def imports(path: Path, module: str, known: Iterable[str] = (), *, type_only: bool = True
            ) -> set[str]:
    """The ``mltraces`` modules ``path`` imports, anywhere in it (inside functions too).

    ``from pkg import sub`` is an import of ``pkg.sub`` when that is one of the ``known``
    modules (Python runs ``pkg/__init__`` on the way, as it does for any submodule), and
    of ``pkg`` itself when ``sub`` is a name ``pkg`` defines. ``type_only=False`` leaves
    out the imports under ``if TYPE_CHECKING:`` (they never run).
    """
    known = set(known)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in _statements(_tree(path), type_only=type_only):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    top = module.split(".")[0]
    return {name for name in found if name.split(".")[0] == top}


@cache
def graph(root: Path = PACKAGE_DIR, *, type_only: bool = True) -> dict[str, frozenset[str]]:
    """Module -> the package's modules it imports (``type_only=False``: those that run)."""
    known = modules(root)
    return {name: frozenset(target for target in imports(path, name, known, type_only=type_only)
                            if target in known and target != name)
            for name, path in known.items()}


def violations(root: Path = PACKAGE_DIR) -> list[str]:
    """Every import a part's row does not allow, one line each (empty when the code obeys)."""
    problems = []
    for module, targets in sorted(graph(root).items()):
        here = layer_of(module)
        for target in sorted(targets):
            there = layer_of(target)
            if here is None or there is None or there is here:
                continue
            if there.name not in here.may_import:
                problems.append(f"{module} imports {target}: {here.name} may not import "
                                f"{there.name} (allowed: {', '.join(here.may_import) or 'none'})")
    return problems


def cycles(root: Path = PACKAGE_DIR) -> list[frozenset[str]]:
    """Groups of modules that import each other in a loop, through imports that run
    (strongly connected components of more than one module; Tarjan's, iterative)."""
    edges = graph(root, type_only=False)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def part_edges(root: Path = PACKAGE_DIR) -> dict[tuple[str, str], int]:
    """(importing part, imported part) -> how many module imports run along it."""
    counts: dict[tuple[str, str], int] = {}
    for module, targets in graph(root).items():
        here = layer_of(module)
        for target in targets:
            there = layer_of(target)
            if here is not None and there is not None and there is not here:
                counts[(here.name, there.name)] = counts.get((here.name, there.name), 0) + 1
    return counts


def markdown(root: Path = PACKAGE_DIR) -> str:
    """The architecture page: the parts drawn from the measured imports, and the rules."""
    counts = part_edges(root)
    lines = ["Every part imports `foundation`; the other arrows, with how many module imports",
             "run along each, as measured in the code:", "", "```mermaid", "flowchart BT"]
    lines += [f'  {layer.name}["{layer.name}"]' for layer in LAYERS]
    lines += [f"  {a} -->|{n}| {b}" for (a, b), n in sorted(counts.items())
              if b != "foundation"]
    lines += ["```", "", "| part | modules | what it is | may import |", "|---|---|---|---|"]
    for layer in reversed(LAYERS):
        names = ", ".join(f"`{m.removeprefix('mltraces.')}`" for m in layer.modules[:6])
        more = f" and {len(layer.modules) - 6} more" if len(layer.modules) > 6 else ""
        lines.append(f"| **{layer.name}** | {names}{more} | {layer.purpose} | "
                     f"{', '.join(layer.may_import) or '—'} |")
    return "\n".join(lines) + "\n"


#: where the architecture page (``docs/architecture.md``) holds :func:`markdown`'s output
BEGIN, END = "<!-- layers: generated by `python -m mltraces.layers` -->", "<!-- layers: end -->"


def refresh(text: str) -> str:
    """``text`` (a page) with the block between :data:`BEGIN` and :data:`END` drawn anew."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest or END not in rest:
        raise ValueError(f"the page has no {BEGIN!r} ... {END!r} block")
    return f"{head}{BEGIN}\n{markdown()}{END}{tail}"


#: the page that holds the block, in the clone
PAGE = PACKAGE_DIR.parent / "docs" / "architecture.md"

if __name__ == "__main__":  # rewrite the architecture page's block from the code
    PAGE.write_text(refresh(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote the layers into {PAGE}")
