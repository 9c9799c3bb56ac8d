"""The documentation: the site is drawn from the package (a new source gets its page with no
edit to docs/), the README stays short and links every trace's page, and the facts on the
pages come from the cards, schemas, mappings and docstrings that hold them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_user_sources import _forget, write_source

from mltraces import docs
from mltraces.docs import markdown as md
from mltraces.docs import papers as paper_pages
from mltraces.docs import readme, traces
from mltraces.registry import all_sources, get_source

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the README


def test_the_readme_is_short_and_starts_with_the_three_commands() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    first = README.index("```bash\n")
    assert "## " not in README[:first]  # nothing before them but the introduction
    block = README[first:README.index("```\n", first + 8)]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:]]
    assert commands == ['python3 -m venv .venv && . .venv/bin/activate && pip install -U pip && '
                        'pip install -e ".[test]"', "mltraces figures --output figures/",
                        "python -m pytest"]


def test_the_readme_table_of_traces_is_drawn_from_the_source_folders() -> None:
    assert readme.refresh(README) == README, "stale: run `mltraces docs --readme`"


def test_every_shipped_trace_is_one_click_from_the_readme() -> None:
    for name, source in all_sources().items():
        if source.folder is not None and source.folder.parent.name == "sources":
            assert f"[{name}]({docs.SITE_URL}traces/{name}/)" in README, name


def test_the_site_url_is_the_one_mkdocs_publishes() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"site_url: {docs.SITE_URL}" in config
    assert "font: false" in config  # offline: no web font is fetched


# --------------------------------------------------------------------------- trace pages


def test_a_trace_page_has_every_column_file_anomaly_and_the_citation() -> None:
    from mltraces.schema import all_schemas

    source = get_source("itp")
    page = traces.trace_page(source, None)
    for schema in all_schemas().values():
        if schema.schema_name == "itp":
            for field in schema.fields:
                assert f"| {md.inline(field.name)} | {field.duckdb_type} |" in page
    for file in source.files:
        assert md.inline(file.id) in page
    for anomaly in source.anomalies:
        assert " ".join(anomaly.split()) in page
    assert source.citation.splitlines()[0] in page
    assert "## How it maps onto `mltraces.jobs`" in page


def test_the_matrix_says_itp_cannot_answer_queueing_and_acme_can() -> None:
    """ITP publishes no start times: median(queue_s) is NULL for all of it, and the page says
    so where a reader looks before querying."""
    itp = traces.answer_matrix(traces.job_entries(get_source("itp")))
    row = next(line for line in itp.splitlines() if line.startswith("| `itp/raw` |"))
    queueing, deadlines, clock, gpu_type, utilization = row.split(" | ")[1:6]
    assert queueing.startswith("✗ no start times")
    assert deadlines.startswith("✗") and clock.startswith("✗") and gpu_type.startswith("✗")
    assert utilization.rstrip(" |").startswith("✗")
    assert "| `itp/elasticflow` (copy of `itp/raw`) | ✗ no start times" in itp
    acme = traces.answer_matrix(traces.job_entries(get_source("acme")))
    seren = next(line for line in acme.splitlines() if line.startswith("| `acme/seren` |"))
    assert "✓ queue_s = start − submit" in seren and "✓ acme.gpu_metrics" in seren


def test_mappings_are_read_generically_so_a_requests_mapping_gets_a_section(tmp_path) -> None:
    """A mapping file the generator has never heard of (requests.json) is drawn from its JSON."""
    raw = {"tables": [{"table": "x.requests", "trace": "x/chat", "description": "chat turns",
                       "time": {"kind": "relative"},
                       "columns": {"arrival": "timestamp", "input_tokens": "context_tokens"}}]}
    section = traces.mapping_section("requests", raw)
    assert "`mltraces.requests`" in section and "#### `x.requests` → trace `x/chat`" in section
    assert "| `input_tokens` | `context_tokens` |" in section


def test_every_marker_a_page_uses_is_known_and_an_unknown_one_is_refused() -> None:
    for page in (ROOT / "docs").rglob("*.md"):
        for name in docs.MARKER.findall(page.read_text(encoding="utf-8")):
            assert name in docs.PLACEHOLDERS, (page, name)
    with pytest.raises(KeyError, match=r"unknown marker .* known: benchmarks"):
        docs.fill("<!-- mltraces: nothing -->", "p.md")


def test_the_configuration_table_lists_every_setting_the_code_reads() -> None:
    from mltraces.config import SETTINGS

    named = {s.name for s in SETTINGS}
    read = set()
    for path in (ROOT / "mltraces").rglob("*.py"):
        read |= set(re.findall(r"\bMLTRACES_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    assert read - named - {"MLTRACES_MAX"} == set()
    assert docs.PLACEHOLDERS["settings"]().count("\n| `MLTRACES_") == len(SETTINGS)


def test_the_cli_reference_has_every_verb() -> None:
    from mltraces.commands import VERBS
    from mltraces.docs.reference import cli_page

    page = cli_page()
    for verb in VERBS:
        assert f"## mltraces {verb}\n" in page


def test_every_paper_figure_has_a_status_and_every_figure_of_ours_a_paper_entry() -> None:
    from mltraces.figures import registry
    from mltraces.papers import all_papers, figure_statuses

    drawn = {n for p in all_papers() for s in figure_statuses(p) for n in s.drawn_by}
    assert drawn == set(registry())
    page = paper_pages.paper_page("zeus_nsdi23", ROOT / "figures")
    assert "![zeus_fig1](../figures/zeus_fig1.png)" in page
    assert "mltraces figures --only zeus_fig1" in page and "**Status: not public.**" in page


def test_a_bad_status_file_names_each_problem(tmp_path, monkeypatch) -> None:
    from mltraces import papers
    from mltraces.errors import RegistryError

    folder = tmp_path / "toy_paper"
    folder.mkdir()
    (folder / "paper.json").write_text(json.dumps({"name": "toy_paper", "title": "T",
                                                   "venue": "V", "sources": [], "cites": "x"}))
    (folder / "published.json").write_text("{}")
    (folder / "status.json").write_text(json.dumps({"figures": [
        {"figure": "Fig. 1", "status": "done"}, {"figure": "Fig. 2", "status": "reproduced",
                                                  "published": "fig2"}]}))
    monkeypatch.setattr(papers, "__path__", [*papers.__path__, str(tmp_path)])
    papers.get_paper.cache_clear()
    papers.published.cache_clear()
    try:
        with pytest.raises(RegistryError, match=r"status 'done' is not one of reproduced.*"
                                                r"published 'fig2' is not a key"):
            papers.figure_statuses("toy_paper")
    finally:
        papers.get_paper.cache_clear()
        papers.published.cache_clear()


# --------------------------------------------------------------------------- the site


@pytest.mark.slow  # a whole mkdocs build (~10 s)
def test_the_site_builds_offline_and_a_new_source_gets_its_page(tmp_path: Path) -> None:
    """`mltraces docs` with a user's source folder: its page is there, live example
    included, with no edit to docs/; no page asks a web font or script from the network."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    write_source(tmp_path / "sources", pin=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLTRACES_")}
    env.update(MLTRACES_SOURCES=str(tmp_path / "sources"), MLTRACES_CACHE=str(tmp_path / "c"),
               MLTRACES_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "mltraces", "docs", "-o", str(tmp_path / "s")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    page = (tmp_path / "s" / "traces" / "mycluster" / "index.html").read_text(encoding="utf-8")
    assert "Our GPU cluster" in page and "mycluster.jobs" in page and "COMPLETED" in page
    assert "your own source folder" in page
    home = (tmp_path / "s" / "traces" / "index.html").read_text(encoding="utf-8")
    assert 'href="mycluster/"' in home
    for html in (tmp_path / "s").rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html
        assert not re.search(r"<script[^>]+src=\"https?://", text), html
    for name in all_sources():
        assert (tmp_path / "s" / "traces" / name / "index.html").is_file()
    assert (tmp_path / "s" / "reference" / "cli" / "index.html").is_file()
    assert (tmp_path / "s" / "figures" / "zeus_fig1.png").is_file()


@pytest.fixture(autouse=True)
def _fresh_registry():
    _forget()
    yield
    _forget()


def test_the_readme_states_the_speed_last_measured_in_benchmarks() -> None:
    """Issue 35's goals beside their last measurement, drawn from benchmarks/ (never typed)."""
    import json

    block = README[README.index(readme.SPEED_BEGIN):README.index(readme.SPEED_END)]
    results = json.loads((ROOT / "benchmarks" / "results.json").read_text())["results"]
    for script in ("bench_jobs_view.py", "bench_requests_view.py", "bench_cold.py"):
        last = [r for r in results if r["script"] == f"benchmarks/{script}"][-1]
        assert last["result"] in block, script
    runs = json.loads((ROOT / "benchmarks" / "test_runs.json").read_text())["runs"]
    assert f"**`python -m pytest`**: {runs['fast']['seconds']:.0f} s" in block
