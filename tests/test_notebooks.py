"""Every notebook runs top to bottom on a fresh kernel, headless, against the loopback mirror.

The kernel inherits this process's environment: ``MLTRACES_MIRROR`` points at
the loopback server over ../shared/upstream, ``MLTRACES_CACHE`` at the test's
own empty cache, ``MLTRACES_LOCAL`` at synthetic AcmeTrace job traces and
Alibaba groups (absent here), and ``MLTRACES_FIGURES_DIR`` at a temporary
folder, so nothing is written into the repository's ``figures/``.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import nbclient  # test dependencies (pyproject [test]): missing ones must fail, not skip
import nbformat
import pytest
import synthetic

from mltraces.registry import get_source

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: Fig. 8(b) in the test run: two of its eleven traces (the whole figure takes ~10 min)
QUICK_FIG8B = ["cluster10", "philly_103959"]


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_notebooks", ROOT / "notebooks" / "make_notebooks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_generated_notebook_is_committed_without_outputs() -> None:
    assert [p.name for p in NOTEBOOKS] == sorted(_generator().notebooks())
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, path.name


def test_notebooks_match_their_generator() -> None:
    """The committed notebooks are what ``notebooks/make_notebooks.py`` writes."""
    module = _generator()
    for name, cells in module.notebooks().items():
        expected = nbformat.writes(module.build(cells)) + "\n"  # nbformat.write adds one
        assert (ROOT / "notebooks" / name).read_text() == expected, (
            f"{name} is stale: run python notebooks/make_notebooks.py"
        )


def test_a_paper_folder_writes_its_notebook_from_its_own_cells() -> None:
    """The ElasticFlow paper's notebook.py is its notebook: its intro, a setup cell that
    connects to its sources' tables and imports its modules, then its cells in order."""
    from mltraces.papers.elasticflow_asplos23 import notebook

    cells = _generator().notebooks()[notebook.NOTEBOOK]
    assert cells[1:] == notebook.CELLS
    assert 'figures.tables_for(["itp", "elasticflow"])' in cells[0][1]
    for name, module in notebook.MODULES.items():
        assert f"from mltraces.papers.elasticflow_asplos23 import {module} as {name}" in cells[0][1]
    assert cells[0][0].startswith("# Microsoft ITP traces")


def test_figure_cells_name_registered_figures_with_their_paper_numbers() -> None:
    from mltraces import figures

    for _name, cells in _generator().notebooks().items():
        for markdown, code in cells[1:]:
            if "figures.show(" not in code:
                continue
            name = re.search(r'figures\.show\("([^"]+)"', code)[1]
            spec = figures.get(name)
            if spec.paper_figure and markdown.startswith("##"):
                number = spec.figure.split(",")[0].split("(")[0].strip()  # "Fig. 7"
                assert number in markdown, (name, markdown[:60])


@pytest.mark.upstream
def test_own_scheduler_example_differs_from_fifo_and_says_so(
    http_mirror: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The notebook's plugged-in policy must change the result, or it shows nothing."""
    import mltraces
    from mltraces import figures

    code = next(code for _name, cells in _generator().notebooks().items()
                for _markdown, code in cells if "(AllocationPolicy)" in code)
    con = mltraces.connect(figures.tables_for(["itp", "elasticflow"]))
    scope: dict = {"con": con}
    exec(code.rsplit("\n", 1)[0], scope)  # all but the displayed last line
    con.close()
    summary = scope["result"].summary.set_index("policy")
    custom = next(p for p in summary.index if p != "fifo")
    columns = ["ddl_satis_ratio", "mean_jct", "mean_queueing_delay"]
    differs = summary.loc[custom, columns] != summary.loc["fifo", columns]
    assert differs.all(), summary[columns]
    assert "vs FIFO" in capsys.readouterr().out


@pytest.fixture
def notebook_env(http_mirror: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Environment the kernel inherits; returns the folder figures are written to."""
    synthetic_dir = tmp_path / "synthetic"
    synthetic_dir.mkdir()
    seren = synthetic.write_seren_trace(synthetic_dir / "trace_seren.csv", 3000, 1)
    kalos = synthetic.write_kalos_trace(synthetic_dir / "trace_kalos.csv", 1500, 2)
    groups = synthetic.write_alibaba_groups_xz(synthetic_dir / "alibaba_groups.csv.xz", 8, 3)
    from mltraces.synthetic import write_tables  # the serving traces absent here

    serving = write_tables(synthetic_dir / "serving", ["burstgpt.lfs_1", "mooncake.toolagent"],
                           seed=1, rows=2000)
    monkeypatch.setenv(
        "MLTRACES_LOCAL",
        f"acme.seren_jobs={seren},acme.kalos_jobs={kalos},zeus.alibaba_groups={groups},"
        + ",".join(f"{table}={path}" for table, path in serving.items()),
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
    for cell in notebook.cells:  # a parameter, as papermill sets one: two Fig. 8(b) traces
        cell.source = cell.source.replace("FIG8B_TRACES = None", f"FIG8B_TRACES = {QUICK_FIG8B}")
        cell.source = cell.source.replace("SEEDS = None", "SEEDS = (1,)")  # Figs. 9 and 11
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
    assert "IProgress not found" not in text and "TqdmWarning" not in text, text
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
        assert "56, 225W" in text  # Fig. 2's published front beside ours
        assert "Paper: energy 15.3%–75.8%, time 60.6%" in text  # the headline beside ours
        assert "last 5 recurrences, seed 1: energy 15.304%–75.755%" in text
    if path.stem == "itp_elasticflow":
        published = get_source("itp").published
        totals = f"{published['jobs']:,} jobs, {published['gpu_hours']:,.1f} GPU hours"
        assert f"reproduced: {totals}" in text and f"published:  {totals}" in text
        assert "deadlines met: " in text and " vs FIFO " in text  # your own scheduler


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
