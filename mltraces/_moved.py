"""Old names of moved modules and public names, kept working for one release with a warning.

Release 0.2 gave the tree its layers (``sources/``, ``papers/``, ``workloads/``,
``scheduling/policies`` and ``scheduling/cores``): a module or a public name that
moved keeps its old name until the next release, and every use of an old name warns
with a :class:`DeprecationWarning` that says the new one. The tables below are the
only place the old names live; :func:`install` puts a finder for the old module
names on ``sys.meta_path`` (``mltraces/__init__.py`` calls it), and a package whose
public names moved asks :func:`attribute` from its ``__getattr__``. Both import the
new home by name when the old one is used, so no layer imports a layer above it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

#: old module name (or prefix, for a package) -> new one
MODULES: dict[str, str] = {
    "mltraces.datasets": "mltraces.sources",
    "mltraces.datasets.zeus.evaluation": "mltraces.papers.zeus_nsdi23.evaluation",
    "mltraces.datasets.zeus.figures": "mltraces.papers.zeus_nsdi23.figures",
    "mltraces.datasets.zeus.notebook": "mltraces.papers.zeus_nsdi23.notebook",
    "mltraces.datasets.zeus.paper": "mltraces.papers.zeus_nsdi23.paper",
    "mltraces.datasets.acme.figures": "mltraces.papers.acme_nsdi24.figures",
    "mltraces.datasets.acme.notebook": "mltraces.papers.acme_nsdi24.notebook",
    "mltraces.datasets.acme.summary": "mltraces.papers.acme_nsdi24.summary",
    "mltraces.datasets.elasticflow.cached": "mltraces.papers.elasticflow_asplos23.cached",
    "mltraces.datasets.elasticflow.figures": "mltraces.papers.elasticflow_asplos23.figures",
    "mltraces.datasets.elasticflow.generated": "mltraces.papers.elasticflow_asplos23.generated",
    "mltraces.datasets.elasticflow.notebook": "mltraces.papers.elasticflow_asplos23.notebook",
    "mltraces.datasets.itp.figures": "mltraces.papers.elasticflow_asplos23.itp_figures",
    "mltraces.datasets.itp.notebook": "mltraces.papers.elasticflow_asplos23.notebook",
    "mltraces.scheduling.fig8a": "mltraces.papers.elasticflow_asplos23.fig8a",
    "mltraces.scheduling.fig8b": "mltraces.papers.elasticflow_asplos23.fig8b",
    "mltraces.scheduling.genfigs": "mltraces.papers.elasticflow_asplos23.genfigs",
    "mltraces.scheduling.generator": "mltraces.papers.elasticflow_asplos23.generator",
    "mltraces.scheduling.inputs": "mltraces.workloads.cluster",
    "mltraces.archives": "mltraces.download.archives",
    "mltraces.validation": "mltraces.catalog.validation",
    "mltraces.commands.extras": "mltraces.download.extras",
    "mltraces.simulation.trace_cache": "mltraces.workloads.recurring_cache",
    "mltraces.scheduling.chronus": "mltraces.scheduling.policies.chronus",
    "mltraces.scheduling.edf": "mltraces.scheduling.policies.edf",
    "mltraces.scheduling.edfadmit": "mltraces.scheduling.policies.edfadmit",
    "mltraces.scheduling.efnoadmit": "mltraces.scheduling.policies.efnoadmit",
    "mltraces.scheduling.elasticflow": "mltraces.scheduling.policies.elasticflow",
    "mltraces.scheduling.gandiva": "mltraces.scheduling.policies.gandiva",
    "mltraces.scheduling.leases": "mltraces.scheduling.policies.leases",
    "mltraces.scheduling.paidrounds": "mltraces.scheduling.policies.paidrounds",
    "mltraces.scheduling.themis": "mltraces.scheduling.policies.themis",
    "mltraces.scheduling.tiresias": "mltraces.scheduling.policies.tiresias",
    "mltraces.scheduling.native": "mltraces.scheduling.cores.native",
    "mltraces.scheduling.cyshim": "mltraces.cyshim",
    "mltraces.scheduling.efcore": "mltraces.scheduling.cores.efcore",
    "mltraces.scheduling.efrounds": "mltraces.scheduling.cores.efrounds",
    "mltraces.scheduling.gandivacore": "mltraces.scheduling.cores.gandivacore",
    "mltraces.scheduling.leasecore": "mltraces.scheduling.cores.leasecore",
    "mltraces.scheduling.chronuscore": "mltraces.scheduling.cores.chronuscore",
}

#: (package, old public name) -> "new.module:name"
ATTRIBUTES: dict[tuple[str, str], str] = {
    ("mltraces.scheduling", "FIG8B_CLUSTERS"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                               "FIG8B_CLUSTERS",
    ("mltraces.scheduling", "FIG8B_POLICIES"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                               "FIG8B_POLICIES",
    ("mltraces.scheduling", "FIG8B_TRACES"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                             "FIG8B_TRACES",
    ("mltraces.scheduling", "PUBLISHED_FIG8B"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                                "PUBLISHED_FIG8B",
    ("mltraces.scheduling", "fig8b_cases"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                            "fig8b_cases",
    ("mltraces.scheduling", "published_frame"): "mltraces.papers.elasticflow_asplos23.fig8b:"
                                                "published_frame",
    ("mltraces.scheduling", "TraceSpec"): "mltraces.papers.elasticflow_asplos23.generator:"
                                          "TraceSpec",
    ("mltraces.scheduling", "generate_trace"): "mltraces.papers.elasticflow_asplos23.generator:"
                                               "generate_trace",
    ("mltraces.simulation", "load_traces"): "mltraces.workloads.recurring:load_traces",
}


def new_module_name(old: str) -> str | None:
    """The module that ``old`` now is (the longest moved prefix wins), or None."""
    parts = old.split(".")
    for end in range(len(parts), 1, -1):
        prefix = ".".join(parts[:end])
        if prefix in MODULES:
            return ".".join([MODULES[prefix], *parts[end:]])
    return None


def warn(old: str, new: str) -> None:
    """Say once per call site that ``old`` is now ``new``."""
    warnings.warn(f"{old} moved to {new}; the old name goes in the next release",
                  DeprecationWarning, stacklevel=4)


def attribute(package: str, name: str) -> Any:
    """A moved public name of ``package`` from its new home (with a warning), else
    AttributeError as a module's ``__getattr__`` must raise."""
    target = ATTRIBUTES.get((package, name))
    if target is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    warn(f"{package}.{name}", f"{module}.{attr}")
    return getattr(importlib.import_module(module), attr)


class _OldNames:
    """Serves an old module name as the module it moved to (the same object, not a copy).

    A meta path finder and loader by protocol (``find_spec``; ``create_module`` and
    ``exec_module``), first on ``sys.meta_path`` so that ``mltraces.datasets.zeus`` is
    ``mltraces.sources.zeus`` itself and never a second import of its files.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("mltraces.") or new_module_name(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_module_name(spec.name)
        assert new is not None
        warn(spec.name, new)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is the one already imported under its new name."""


_FINDER = _OldNames()


def install() -> None:
    """Put the finder of old module names first on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def call(target: str, *args: Any, old: str) -> Any:
    """Call ``"module:function"`` (the new home of what ``old`` did), with a warning."""
    module, _, name = target.partition(":")
    warn(old, f"{module}.{name}")
    return getattr(importlib.import_module(module), name)(*args)
