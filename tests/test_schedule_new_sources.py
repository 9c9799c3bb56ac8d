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
    assert [(r["trace"], r["policy"]) for r in rows] == [
        (t, p) for t in TRACES.split(",") for p in ("fifo", "sjf", "tiresias")]
    clusters = {r["trace"]: r["cluster"] for r in rows}
    # Philly: 2,490 GPUs of the machine list; PAI: 6,742 of the machine spec; Helios Venus:
    # the synthetic per-VC numbers' truncated mean daily total
    assert clusters["philly/all"] == "n312g8" and clusters["alibaba_pai/all"] == "n843g8"
    assert clusters["helios/venus"].endswith("g8")
    for row in rows:
        assert int(row["jobs"]) > 0 and float(row["mean_jct"]) > 0


def test_a_cluster_given_on_the_command_line_wins(three_sources, capsys) -> None:
    rows = _summary(capsys, "--cluster", "n2g8")
    assert {r["cluster"] for r in rows} == {"n2g8"}
    queued = {r["trace"]: float(r["mean_queueing_delay"]) for r in rows if r["policy"] == "fifo"}
    assert queued["philly/all"] > 0  # 16 GPUs for 600 jobs: they wait
