"""Names that moved in the layered tree still work for one release, and say where they went."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

from mltraces import _moved


@pytest.mark.parametrize(("old", "new"), [
    ("mltraces.datasets.zeus", "mltraces.sources.zeus"),
    ("mltraces.datasets.acme.util", "mltraces.sources.acme.util"),
    ("mltraces.datasets.zeus.figures", "mltraces.papers.zeus_nsdi23.figures"),
    ("mltraces.scheduling.fig8b", "mltraces.papers.elasticflow_asplos23.fig8b"),
    ("mltraces.scheduling.inputs", "mltraces.workloads.cluster"),
    ("mltraces.scheduling.edf", "mltraces.scheduling.policies.edf"),
    ("mltraces.scheduling.efcore", "mltraces.scheduling.cores.efcore"),
    ("mltraces.archives", "mltraces.download.archives"),
    ("mltraces.validation", "mltraces.catalog.validation"),
])
def test_an_old_module_name_is_the_new_module_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:  # its parents may warn too
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert any(w.category is DeprecationWarning and f"{old} moved to {new}" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize(("package", "name"), sorted(_moved.ATTRIBUTES))
def test_an_old_public_name_is_served_from_its_new_home(package: str, name: str) -> None:
    module, _, attribute = _moved.ATTRIBUTES[(package, name)].partition(":")
    with pytest.warns(DeprecationWarning, match=f"{package}.{name} moved to {module}"):
        value = getattr(importlib.import_module(package), name)
    assert value is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import mltraces.scheduling

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        mltraces.scheduling.nope  # noqa: B018


def test_simulate_on_a_connection_still_reads_the_catalog_with_a_warning(monkeypatch) -> None:
    from mltraces.simulation import sweep
    from mltraces.workloads import recurring

    seen = []
    monkeypatch.setattr(recurring, "load_traces", lambda con: seen.append(con) or 1 / 0)
    with pytest.warns(DeprecationWarning, match=r"simulate\(<connection>\) moved to "
                      "mltraces.workloads.recurring.load_traces"), pytest.raises(
            ZeroDivisionError):
        sweep.simulate("a connection")
    assert seen == ["a connection"]


def test_no_module_of_the_package_imports_an_old_name() -> None:
    """The package's own code imports every module by its new name (the finder is for users)."""
    from mltraces.layers import imports, modules

    known = modules()
    old = [f"{name} imports {target}" for name, path in known.items()
           for target in imports(path, name, known) if _moved.new_module_name(target)]
    assert not old, old
