"""ServeGen's workload descriptions as tables, and request traces sampled from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from catalog_fixtures import OWN_CATALOGS, loopback_only, rows, scalar  # noqa: F401

from mltraces.catalog import connect
from mltraces.catalog.validation import failed, validate
from mltraces.sources.servegen import generator, tables

REAL = ["servegen.deepseek_r1_windows", "servegen.deepseek_r1_lengths",
        "servegen.mm_image_windows", "servegen.mm_image_lengths"]


@pytest.fixture(scope="module")
def servegen(upstream_server: str, shared_real_cache):
    """The DeepSeek-R1 and Qwen-VL clients here (216 files), fetched over the loopback mirror
    into the session's shared cache (the shared real catalogs leave them out: OWN_CATALOGS)."""
    assert "servegen" in OWN_CATALOGS
    cache = shared_real_cache
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLTRACES_CACHE", str(cache))
        patch.setenv("MLTRACES_MIRROR", upstream_server)
        patch.setenv("MLTRACES_SOURCES", "")
        con = connect(REAL, strict=True)
        report = validate(REAL)  # the rows its card promises, and every rule
    assert not failed(report), report[report.failing_rows != 0].to_string()
    assert set(report[report.rule == "expected rows"].table) == set(REAL)
    yield con
    con.close()


def test_the_tables_hold_every_client_window_and_table(servegen) -> None:
    assert rows(servegen, "SELECT count(DISTINCT client), count(*), min(window_start), "
                "max(window_start) FROM servegen.deepseek_r1_windows") == [(73, 10_512, 0,
                                                                            85_800)]
    assert rows(servegen, "SELECT distribution, count(*) FROM servegen.deepseek_r1_windows "
                "GROUP BY 1 ORDER BY 1 NULLS FIRST") == [(None, 7401), ("Gamma", 2589),
                                                        ("Weibull", 522)]
    quantities = rows(servegen, "SELECT quantity, count(DISTINCT (client, window_start)) "
                      "FROM servegen.mm_image_lengths GROUP BY 1 ORDER BY 1")
    assert [q for q, _ in quantities] == sorted(
        ["text_tokens", "image_tokens", "audio_tokens", "video_tokens", "image_count",
         "audio_count", "video_count", "output_tokens"])
    worst = scalar(servegen, "SELECT max(abs(total - 1)) FROM (SELECT sum(probability) AS "
                   "total FROM servegen.deepseek_r1_lengths GROUP BY client, window_start, "
                   "quantity)")
    assert worst < 1e-9


def test_the_views_have_their_schemas_types(servegen) -> None:
    from mltraces.schema import get_schema

    for name in REAL:
        schema = get_schema(name)
        got = [(r[0], r[1]) for r in rows(servegen, f"DESCRIBE {schema.qualified}")]
        assert got == [(f.name, f.duckdb_type) for f in schema.fields], name


def test_a_table_is_the_literal_it_was_written_as(tmp_path: Path, upstream_dir: Path) -> None:
    """Parsing as data gives the values ServeGen's own eval() would (checked on real text)."""
    import json

    path = next(upstream_dir.rglob("chunk-0-dataset.json"))
    raw = json.loads(path.read_text())
    names = frozenset({"input_tokens", "output_tokens", "reason_ratio", "text_tokens",
                       "image_tokens", "audio_tokens", "video_tokens", "image_count",
                       "audio_count", "video_count"})
    for window in tables.read_dataset(path, path.name, names):
        for name, (values, probabilities) in window.tables.items():
            text = raw[str(window.start)][name]
            pairs = [p.split(": ") for p in text[1:-1].split(", ")] if text != "{}" else []
            assert [float(k) for k, _ in pairs] == values.tolist()
            assert [float(v) for _, v in pairs] == probabilities.tolist()


def test_a_sampled_trace_keeps_each_windows_count_its_span_and_the_tables_support(
        servegen) -> None:
    trace = generator.generate(servegen, "deepseek_r1", clients=[3, 5, 64], seed=7).to_pydict()
    windows = rows(servegen, "SELECT client, window_start, rate FROM "
                   "servegen.deepseek_r1_windows WHERE client IN (3, 5, 64) AND rate > 0")
    arrivals = np.array(trace["arrival_s"])
    clients = np.array(trace["client"])
    for client, start, rate in windows:
        inside = (clients == client) & (arrivals >= start) & (arrivals < start + 600)
        assert inside.sum() == round(rate * 600)
    assert len(arrivals) == sum(round(r * 600) for _, _, r in windows)
    assert (np.diff(arrivals) >= 0).all() and trace["request_id"] == list(range(len(arrivals)))
    support = {q: set(v for (v,) in rows(servegen, "SELECT DISTINCT value FROM "
                                      f"servegen.deepseek_r1_lengths WHERE quantity = '{q}' "
                                      "AND client IN (3, 5, 64)"))
               for q in ("input_tokens", "output_tokens", "reason_ratio")}
    for name in support:
        assert set(map(float, trace[name])) <= support[name]


def test_the_same_seed_gives_the_same_trace_and_each_client_its_own_stream(servegen) -> None:
    one = generator.generate(servegen, "deepseek_r1", clients=[3, 5], seed=11)
    assert one.equals(generator.generate(servegen, "deepseek_r1", clients=[3, 5], seed=11))
    assert not one.equals(generator.generate(servegen, "deepseek_r1", clients=[3, 5], seed=12))
    alone = generator.generate(servegen, "deepseek_r1", clients=[5], seed=11).to_pydict()
    both = one.to_pydict()
    mine = [i for i, c in enumerate(both["client"]) if c == 5]
    assert [both["arrival_s"][i] for i in mine] == alone["arrival_s"]
    assert [both["input_tokens"][i] for i in mine] == alone["input_tokens"]


def test_a_multimodal_trace_adds_each_images_tokens_to_the_text(servegen) -> None:
    trace = generator.generate(servegen, "mm_image", clients=[0, 1, 2], seed=3,
                               span=(0, 43_200)).to_pydict()
    assert trace["image_count"] and max(trace["arrival_s"]) < 43_200
    text = {v for (v,) in rows(servegen, "SELECT DISTINCT value FROM servegen.mm_image_lengths "
                                 "WHERE quantity = 'text_tokens' AND client IN (0, 1, 2)")}
    smallest_image = scalar(servegen, "SELECT min(value) FROM servegen.mm_image_lengths WHERE "
                            "quantity = 'image_tokens' AND client IN (0, 1, 2)")
    for tokens, images in zip(trace["input_tokens"], trace["image_count"], strict=True):
        if images == 0:
            assert tokens in text
        else:
            assert tokens >= min(text) + images * smallest_image


def test_the_bound_and_the_names_are_one_line_errors(servegen) -> None:
    with pytest.raises(generator.GenerationError, match="more than max_requests") as info:
        generator.generate(servegen, "deepseek_r1", max_requests=1_000)
    assert "\n" not in str(info.value)
    with pytest.raises(generator.GenerationError, match="unknown ServeGen model"):
        generator.generate(servegen, "gpt5")
    with pytest.raises(generator.GenerationError, match="has no client"):
        generator.generate(servegen, "deepseek_r1", clients=[999])


def test_every_real_servegen_table_states_its_row_count() -> None:
    from mltraces.registry import get_source

    assert set(REAL) <= set(get_source("servegen").expected_rows)


def test_arrivals_stay_inside_their_window_when_the_last_gap_underflows() -> None:
    windows = generator.Windows(np.array([0.0]), np.array([5 / 600]), ["Gamma"],
                                np.array([1e-300]), np.array([1.0]))
    sizes = {(0, "input_tokens"): (np.array([5.0]), np.array([1.0])),
             (0, "output_tokens"): (np.array([7.0]), np.array([1.0]))}
    drawn = generator.sample(windows, sizes, np.random.default_rng(1))
    assert drawn["arrival_s"].size == 5
    assert ((drawn["arrival_s"] >= 0) & (drawn["arrival_s"] < 600)).all()
    assert np.isfinite(drawn["arrival_s"]).all()
