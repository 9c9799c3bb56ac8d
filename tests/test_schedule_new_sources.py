"""Philly, Helios and PAI replay under FIFO, SJF and Tiresias on synthetic traces, on the
cluster their own capacity declares (machine list, per-VC GPU numbers, machine spec) or on
--cluster."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from catalog_fixtures import loopback_only  # noqa: F401
from synthetic_sources import served

from mltraces.cli import main

TRACES = "philly/all,helios/venus,alibaba_pai/all"


@pytest.fixture
def three_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with served(tmp_path / "mirror", ["philly", "helios", "alibaba_pai"], monkeypatch,
                rows=600, seed=4) as sources:
        yield sources


def _summary(capsys: pytest.CaptureFixture, *extra: str) -> list[dict]:
    assert main(["schedule", "--trace", TRACES, "--policy", "fifo,sjf,tiresias", "--workers",
                 "1", "--format", "csv", "--summary", *extra]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_the_new_traces_replay_on_their_own_capacity(three_sources, capsys) -> None:
    rows = _summary(capsys)
    named = {"philly/all": "philly/jobs", "alibaba_pai/all": "alibaba_pai/jobs",
             "helios/venus": "helios/jobs/venus"}  # printed as the jobs view names them
    assert [(r["trace"], r["policy"]) for r in rows] == [
        (named.get(t, t), p) for t in TRACES.split(",") for p in ("fifo", "sjf", "tiresias")]
    clusters = {r["trace"]: r["cluster"] for r in rows}
    # Philly: 2,490 GPUs of the machine list; PAI: 6,742 of the machine spec; Helios Venus:
    # the synthetic per-VC numbers' truncated mean daily total
    assert clusters["philly/jobs"] == "n312g8" and clusters["alibaba_pai/jobs"] == "n843g8"
    assert clusters["helios/jobs/venus"].endswith("g8")
    for row in rows:
        assert int(row["jobs"]) > 0 and float(row["mean_jct"]) > 0


def test_a_cluster_given_on_the_command_line_wins(three_sources, capsys) -> None:
    rows = _summary(capsys, "--cluster", "n2g8")
    assert {r["cluster"] for r in rows} == {"n2g8"}
    queued = {r["trace"]: float(r["mean_queueing_delay"]) for r in rows if r["policy"] == "fifo"}
    assert queued["philly/jobs"] > 0  # 16 GPUs for 600 jobs: they wait


def test_the_sources_answer_to_their_hyphenated_names(three_sources, capsys) -> None:
    """The issue and the repositories write alibaba-pai; the package is alibaba_pai."""
    rows = _summary(capsys)
    assert main(["schedule", "--trace", "alibaba-pai/all", "--policy", "fifo", "--workers", "1",
                 "--format", "csv", "--summary"]) == 0
    [hyphen] = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    [underscore] = [r for r in rows if r["trace"] == "alibaba_pai/jobs" and r["policy"] == "fifo"]
    timing = {"seconds", "cpu_seconds"}
    assert {k: v for k, v in hyphen.items() if k not in timing} == {
        k: v for k, v in underscore.items() if k not in timing}  # named as the package names it


def test_a_trace_whose_files_cannot_be_fetched_is_one_line_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # it was a DuckDB traceback from the replay's first read of the unavailable view
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    assert main(["schedule", "--trace", "helios/venus", "--policy", "fifo"]) != 0
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("mltraces schedule: error: ") and "helios/data.zip" in line


def test_a_given_cluster_needs_no_capacity_table(tmp_path: Path, monkeypatch, capsys) -> None:
    """The capacity table (PAI's machine spec) is read only when no --cluster is given."""
    with served(tmp_path / "mirror", ["alibaba_pai"], monkeypatch, rows=200, seed=4):
        [spec] = (tmp_path / "mirror").rglob("pai_machine_spec.tar.gz")
        spec.unlink()
        run = ["schedule", "--trace", "alibaba-pai/all", "--policy", "fifo", "--workers", "1",
               "--format", "csv", "--summary"]
        assert main([*run, "--cluster", "n2g8"]) == 0
        assert "alibaba_pai/jobs,n2g8,fifo" in capsys.readouterr().out
        assert main(run) != 0  # its own capacity: the machine spec is needed, and named
        [line] = capsys.readouterr().err.splitlines()
        assert "alibaba_pai.machine_specs" in line and "pai_machine_spec.tar.gz" in line
