"""What a new user following the README ran into (issue 36's "Also fix"), each reproduced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from catalog_fixtures import rows, scalar  # noqa: F401

from mltraces.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLTRACES_")}
    return {**env, **extra}


# --------------------------------------------------------------------------- the clone's folder


def test_python_started_beside_the_clone_gets_the_package_and_is_told(tmp_path: Path) -> None:
    """Started in the folder that holds the clone, ``import mltraces`` used to find the clone's
    folder as an empty namespace package: ``mltraces.connect`` was an AttributeError."""
    holder = tmp_path / "work"
    holder.mkdir()
    (holder / "mltraces").symlink_to(ROOT, target_is_directory=True)
    done = subprocess.run([sys.executable, "-c", "import mltraces; print(mltraces.connect)"],
                          cwd=holder, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "function connect" in done.stdout
    assert "the folder that holds the clone" in done.stderr
    assert "run Python from another folder" in done.stderr


def test_an_empty_folder_named_mltraces_is_still_the_namespace_trap(tmp_path: Path) -> None:
    """The failure the clone's __init__.py answers: any folder without it still shadows."""
    (tmp_path / "mltraces").mkdir()
    done = subprocess.run([sys.executable, "-c", "import mltraces; mltraces.connect"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert "has no attribute 'connect'" in done.stderr


# --------------------------------------------------------------------------- unavailable files


@pytest.mark.upstream
def test_a_file_the_mirror_lacks_is_said_unavailable_with_what_to_do(
        upstream_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """`mltraces tables` said "fetched on first use" of a file the mirror cannot serve."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["tables", "acme"]) == 0
    assert "not fetched yet" in capsys.readouterr().out
    assert main(["fetch", "acme/trace_kalos.csv"]) == 1
    capsys.readouterr()
    assert main(["tables", "acme"]) == 0
    out = capsys.readouterr().out
    kalos = out[out.index("acme.kalos_jobs"):out.index("acme.node_metrics")]
    assert "UNAVAILABLE here" in kalos and "not in the mirror directory" in kalos
    assert "--local acme.kalos_jobs=PATH" in kalos and "MLTRACES_MIRROR" in kalos
    assert "fetched on first use" not in out


@pytest.mark.upstream
def test_the_main_job_lists_unavailable_tables_once_at_the_end(
        upstream_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["figures", "acme", "--only", "acme_fig5", "--only", "acme_fig4", "-o",
                 str(tmp_path / "f")]) == 0
    said = capsys.readouterr()
    lines = said.err.splitlines()
    assert not any(line.startswith("mltraces: acme.") for line in lines), said.err
    assert lines[-1].startswith("unavailable here: acme.kalos_jobs, acme.seren_jobs")
    assert "--local TABLE=PATH" in lines[-1] and "MLTRACES_MIRROR" in lines[-1]


@pytest.mark.upstream
def test_fetching_an_archive_that_is_never_unpacked_succeeds(
        upstream_dir: Path, monkeypatch, capsys) -> None:
    """It exited 1 ("is not unpacked") for a file that is verified and whose table works."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["fetch", "alibaba_pai/pai_machine_spec.tar.gz"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok  alibaba_pai/pai_machine_spec.tar.gz") and "unpacked" not in out


# --------------------------------------------------------------------------- CLI output


@pytest.mark.upstream
def test_the_schedule_summary_gives_its_units(upstream_dir: Path, monkeypatch, capsys) -> None:
    """`schedule --summary` printed `mean_jct 3.278e+04` with no unit."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["schedule", "--trace", "itp/cluster10", "--policy", "edf", "--summary"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    for column in ("mean_jct (s)", "makespan (s)", "gpu_seconds (GPU s)",
                   "cpu_seconds (s, CPU)"):
        assert column in header
    assert "times in seconds of the trace's clock" in out


@pytest.mark.upstream
def test_no_raw_warning_line_leaks_into_the_commands_output(upstream_dir, monkeypatch) -> None:
    """`mltraces info mltraces.jobs` printed `describe.py:75: PartialViewWarning: ...`."""
    done = subprocess.run([sys.executable, "-m", "mltraces", "info", "mltraces.jobs"],
                          env=_env(MLTRACES_MIRROR=str(upstream_dir),
                                   MLTRACES_CACHE=str(Path(os.environ["MLTRACES_CACHE"]))),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stdout + done.stderr
    assert "Status:" in done.stdout


@pytest.mark.upstream
def test_sql_shows_the_column_descriptions_as_comments(upstream_dir, monkeypatch, capsys
                                                      ) -> None:
    """They were NULL unless connect(comments=True)."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["sql", "SELECT comment FROM duckdb_columns() WHERE schema_name = 'itp' AND "
                 "table_name = 'jobs' AND column_name = 'duration'", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "comment\nRun time of the job in seconds. [s]\n"


def test_only_a_query_that_reads_comments_pays_for_them() -> None:
    from mltraces.catalog.sqlnames import names_word

    assert names_word("SELECT comment FROM duckdb_columns()", "comment")
    assert names_word('SELECT "Comment" FROM duckdb_columns()', "comment")
    assert not names_word("SELECT 'comment' AS x -- comment", "comment")
    assert not names_word("SELECT count(*) FROM itp.jobs", "comment")


# --------------------------------------------------------------------------- counting once


@pytest.mark.upstream
def test_a_plain_count_over_every_trace_counts_itp_once(upstream_dir, monkeypatch, capsys
                                                       ) -> None:
    """The README's query counted 69,351 ITP jobs twice (itp/raw and itp/elasticflow)."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    assert main(["fetch", "itp"]) == 0
    capsys.readouterr()
    assert main(["sql", "SELECT trace, count(*) AS jobs FROM mltraces.jobs WHERE trace LIKE "
                 "'itp/%' GROUP BY ALL", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "trace,jobs\nitp/raw,69351\n"
    assert main(["sql", "SELECT trace, copy_of, count(*) AS jobs FROM mltraces.jobs_of('itp') "
                 "GROUP BY ALL ORDER BY ALL", "--format", "csv"]) == 0
    assert capsys.readouterr().out == ("trace,copy_of,jobs\nitp/elasticflow,itp/raw,69351\n"
                                       "itp/raw,,69351\nitp/testbed,itp/raw,195\n")
    assert main(["sql", "SELECT count(*) FROM mltraces.jobs WHERE trace = 'itp/elasticflow'"]) == 1
    assert "a copy of itp/raw" in capsys.readouterr().err


def test_a_copy_must_name_another_trace() -> None:
    from mltraces.errors import RegistryError
    from mltraces.jobmap import parse_table

    entry = {"table": "x.jobs", "trace": "x/jobs", "time": {"kind": "relative"},
             "columns": {"job_id": "id", "submit": "t", "num_gpu": "g"}}
    assert parse_table({**entry, "copy_of": "y/jobs"}, "x", "j.json").copy_of == "y/jobs"
    for bad in ("x/jobs", "nothing", 3):
        with pytest.raises(RegistryError, match="copy_of must name another trace"):
            parse_table({**entry, "copy_of": bad}, "x", "j.json")
    with pytest.raises(RegistryError, match="utilization must list tables of this source"):
        parse_table({**entry, "utilization": ["y.util"]}, "x", "j.json")


# --------------------------------------------------------------------------- figures


@pytest.mark.upstream
def test_figures_say_wrote_only_for_what_they_wrote_and_write_the_data(
        upstream_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """It printed "wrote" for files it left untouched, and gave no way to get the numbers."""
    monkeypatch.setenv("MLTRACES_MIRROR", str(upstream_dir))
    out = tmp_path / "figs"
    argv = ["figures", "zeus", "--only", "zeus_fig1", "-o", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert f"wrote {out / 'zeus_fig1.png'} (+ .pdf .csv)" in first
    data = (out / "zeus_fig1.csv").read_text().splitlines()
    header = data[0].split(",")
    assert {"workload", "kind", "normalized", "paper"} <= set(header)  # ours, and published
    assert main(argv) == 0
    again = capsys.readouterr().out
    assert not any(line.startswith("wrote") for line in again.splitlines()), again
    assert "0 figures written" in again and "1 already there unchanged" in again
    (out / "zeus_fig1.csv").unlink()
    assert main(argv) == 0
    assert f"wrote {out / 'zeus_fig1.csv'} (the figure itself unchanged)" in (
        capsys.readouterr().out)


# --------------------------------------------------------------------------- one source of truth


def test_test_counts_and_timings_come_from_one_generated_record() -> None:
    """The README said 1,541 tests at the top and 1,521 under Development."""
    import re

    texts = [(ROOT / "README.md").read_text(encoding="utf-8"),
             *(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))]
    for text in texts:
        assert not re.search(r"\b[\d,]+ (tests|slow ones|marked `slow`)\b", text)
    record = json.loads((ROOT / "benchmarks" / "test_runs.json").read_text())
    for run in record["runs"].values():
        assert {"passed", "seconds", "date", "commit", "cores", "load"} <= set(run)
    from mltraces.docs.measured import tests_text

    assert f"{record['runs']['fast']['passed']:,} passed" in tests_text()
