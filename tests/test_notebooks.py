"""Every notebook runs top to bottom on a fresh kernel, headless, against the loopback mirror.

The kernel inherits this process's environment: ``MLTRACES_MIRROR`` points at
the loopback server over ../shared/upstream, ``MLTRACES_CACHE`` at the test's
own empty cache, ``MLTRACES_LOCAL`` at synthetic AcmeTrace job traces and
Alibaba groups (absent here), and ``MLTRACES_FIGURES_DIR`` at a temporary
folder, so nothing is written into the repository's ``figures/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbclient  # test dependencies (pyproject [test]): missing ones must fail, not skip
import nbformat
import pytest
import synthetic

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_exist_and_are_stored_without_outputs() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "acme_nsdi24.ipynb",
        "itp_elasticflow.ipynb",
        "zeus_nsdi23.ipynb",
    ]
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


def test_notebooks_match_their_generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The committed notebooks are what ``notebooks/make_notebooks.py`` writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_notebooks", NOTEBOOKS[0].parent / "make_notebooks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, cells in module.NOTEBOOKS.items():
        expected = nbformat.writes(module.build(cells)) + "\n"  # nbformat.write adds one
        assert (ROOT / "notebooks" / name).read_text() == expected, (
            f"{name} is stale: run python notebooks/make_notebooks.py"
        )


@pytest.fixture
def notebook_env(http_mirror: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Environment the kernel inherits; returns the folder figures are written to."""
    synthetic_dir = tmp_path / "synthetic"
    synthetic_dir.mkdir()
    seren = synthetic.write_seren_trace(synthetic_dir / "trace_seren.csv", 3000, 1)
    kalos = synthetic.write_kalos_trace(synthetic_dir / "trace_kalos.csv", 1500, 2)
    groups = synthetic.write_alibaba_groups_xz(synthetic_dir / "alibaba_groups.csv.xz", 8, 3)
    monkeypatch.setenv(
        "MLTRACES_LOCAL",
        f"acme.seren_jobs={seren},acme.kalos_jobs={kalos},zeus.alibaba_groups={groups}",
    )
    out = tmp_path / "figures"
    monkeypatch.setenv("MLTRACES_FIGURES_DIR", str(out))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return out


@pytest.mark.upstream
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_headless(path: Path, notebook_env: Path) -> None:
    repo_figures = ROOT / "figures"
    before = _snapshot(repo_figures)
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    started = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - started
    assert elapsed < 180, f"{path.name} took {elapsed:.0f} s"

    errors = [
        o for c in notebook.cells for o in c.get("outputs", []) if o["output_type"] == "error"
    ]
    assert not errors, errors
    text = _stream_text(notebook)
    assert "skipped" not in text, text  # every input is available (real or synthetic)
    images = [
        o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    shown = [c for c in notebook.cells if c.cell_type == "code" and "figures.show(" in c.source]
    assert len(images) == len(shown), "every figure cell displays its figure"
    written = sorted(p.name for p in notebook_env.iterdir())
    assert len(written) == 2 * len(shown)
    assert _snapshot(repo_figures) == before, "notebooks must not write into figures/"

    if path.stem == "zeus_nsdi23":
        assert "3.0%–31.5%" in text and "23.8%–74.7%" in text
    if path.stem == "itp_elasticflow":
        assert "reproduced: 69,351 jobs, 1,632,719.7 GPU hours" in text


def _stream_text(notebook) -> str:
    return "".join(
        o.get("text", "")
        for c in notebook.cells
        for o in c.get("outputs", [])
        if o["output_type"] == "stream"
    )


def _snapshot(folder: Path) -> dict[str, int]:
    if not folder.is_dir():
        return {}
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
