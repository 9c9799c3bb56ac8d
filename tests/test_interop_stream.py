"""Exports stream a trace in batches: the bytes written do not depend on the batch size.

The annotation's draws are per job (Philox keyed by the seed, counter = the job's
position), a recipe's limit counts across batches and a rule that needs a fact of
every job takes a pass first, so one job per batch, a few and all at once write the
same files. Checked on the real ITP cluster10 in every format and on a synthetic
Philly job log with the recipes that gather and limit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from catalog_fixtures import loopback_only, real_catalog  # noqa: F401
from synthetic_sources import served
from test_interop import GAVEL_TYPES, _rates, common, philly_con  # noqa: F401

from mltraces.catalog import connect
from mltraces.interop import annotate
from mltraces.interop.exporting import export, provenance_path
from mltraces.interop.filters import RecipeRun, recorded_columns
from mltraces.interop.recipes import apply, get_recipe


def _exported(tmp_path: Path, name: str, *args, **kwargs) -> tuple[bytes, dict]:
    out = tmp_path / name
    export(*args[:2], out, *args[2:], **kwargs)
    record = json.loads(provenance_path(out).read_text())
    assert record.pop("file") == name
    return out.read_bytes(), record


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["elasticflow", "tiresias", "pollux", "pollux-trace", "gavel",
                                 "philly"])
def test_the_batch_size_does_not_change_the_bytes(fmt: str, real_catalog,  # noqa: F811
                                                  tmp_path: Path) -> None:
    gavel = tmp_path / "gavel.json"
    gavel.write_text(json.dumps(GAVEL_TYPES))
    files = {}
    for rows in (1, 7, 100_000):
        files[rows] = _exported(tmp_path, f"c10-{rows}.{fmt}", "itp/raw/cluster10", fmt,
                                recipe="elasticflow-itp", seed=3, gavel_throughputs=gavel,
                                con=real_catalog.con, batch_rows=rows)
    assert files[1] == files[7] == files[100_000]
    assert files[7][1]["rows"]["written"] > 200


def test_annotations_drawn_per_batch_equal_those_drawn_at_once() -> None:
    jobs = pd.DataFrame({"job_id": [f"j{i}" for i in range(300)],
                         "submit": np.arange(300) * 10, "duration": 600 + 37 * np.arange(300),
                         "gpus": [1, 2, 4, 8, 16, 3] * 50})
    profiles = annotate.gavel_profiles(GAVEL_TYPES)
    draws = {"elasticflow": lambda f, first: annotate.elasticflow(f, _rates(), 5, first),
             "tiresias": lambda f, first: annotate.tiresias(f, 5, first),
             "pollux": lambda f, first: annotate.pollux(f, 5, first),
             "gavel": lambda f, first: annotate.gavel(f, profiles, 5, first)}
    for name, draw in draws.items():
        whole = draw(jobs, 0).frame.reset_index(drop=True)
        parts = [draw(jobs.iloc[a:b], a).frame for a, b in ((0, 1), (1, 120), (120, 300))]
        pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole, obj=name)
        shifted = draw(jobs.iloc[1:120], 0).frame  # other positions draw other numbers
        assert not shifted["model"].equals(whole["model"].iloc[1:120].reset_index(drop=True))


def test_a_limit_and_a_gathered_fact_span_batches() -> None:
    hour = 3600.0
    many = common(submit_s=[2500 * hour + i for i in range(8_105)],
                  start_s=[2500 * hour + i for i in range(8_105)],
                  end_s=[2500 * hour + 5000 + i for i in range(8_105)], run_s=[5000.0] * 8_105,
                  submit_time=pd.date_range("2017-08-07", periods=8_105, freq="s",
                                            tz="America/Los_Angeles"))
    many.loc[0, ["submit_s", "start_s"]] = 0.0
    many.loc[0, "submit_time"] = many.loc[0, "submit_time"] - pd.Timedelta(hours=2500)
    recipe = get_recipe("synergy-philly")
    whole, report = apply(recipe, many)
    run = RecipeRun(recipe, recorded_columns(many))
    batches = [many.iloc[i:i + 999] for i in range(0, len(many), 999)]
    run.gather(batches)
    kept = pd.concat([run.keep(b) for b in batches])
    assert len(whole) == 8_000 and kept.equals(whole)
    assert run.report() == report


@pytest.mark.slow
def test_recipes_that_gather_write_the_same_bytes_in_any_batches(philly_con,  # noqa: F811
                                                                  tmp_path: Path) -> None:
    for recipe in ("synergy-philly", "helios-qssf", "pollux"):
        for fmt in ("philly", "pollux"):
            small = _exported(tmp_path, f"{recipe}-97.{fmt}", "philly/jobs", fmt,
                              recipe=recipe, con=philly_con, batch_rows=97)
            large = _exported(tmp_path, f"{recipe}-all.{fmt}", "philly/jobs", fmt,
                              recipe=recipe, con=philly_con)
            assert small == large, (recipe, fmt)
            assert small[1]["rows"]["written"] > 0


def test_pollux_names_jobs_by_position_when_ids_repeat(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """helios/jobs holds four clusters whose Slurm ids repeat: names are Pollux's own."""
    with served(tmp_path / "mirror", ["helios"], monkeypatch, rows=2_000, seed=4):
        con = connect(tables=["helios.jobs"], strict=True)
    try:
        [(repeated,)] = con.execute("SELECT count(*) - count(DISTINCT job_id) FROM "
                                    "helios.jobs").fetchall()
        assert repeated > 0
        found = {}
        for rows in (50, 100_000):
            out = tmp_path / f"helios-{rows}.csv"
            result = export("helios/jobs", "pollux", out, con=con, batch_rows=rows)
            found[rows] = out.read_bytes()
            assert "job ids are not unique" in " ".join(result.provenance["notes"])
    finally:
        con.close()
    assert found[50] == found[100_000]
    written = pd.read_csv(tmp_path / "helios-50.csv")
    assert written["name"].is_unique and written["name"].iloc[0].endswith("-0")
    assert written["time"].is_monotonic_increasing
