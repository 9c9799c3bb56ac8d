"""`mltraces export` in the serving tools' request formats: exact, round-tripping, refusing.

The real traces (Mooncake conversation and synthetic, Azure 2023) come from a loopback
mirror of ../shared/upstream; a trace absent here (Qwen/Bailian) is a synthetic file in
its exact format given with ``--local``. Each export is read back with the reader its tool
uses (pandas for the CSVs, :mod:`json` for JSON lines) and compared with the trace.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest
from catalog_fixtures import loopback_only  # noqa: F401

from mltraces.cli import main
from mltraces.interop.names import REQUEST_FORMAT_NAMES
from mltraces.interop.request_formats import REQUEST_FORMATS

TRACES = ("raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28"
          "/FAST25-release/traces")
AZURE = ("raw.githubusercontent.com/Azure/AzurePublicDataset/"
         "b469a113cedca53ddc3bdea71a143dc4b7d8700c/data/AzureLLMInferenceTrace_code.csv")


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export-requests")


@pytest.fixture
def mirrored(http_mirror: str, warm_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MLTRACES_CACHE", str(warm_cache))
    return warm_cache


def _export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["-q", "export", *argv])
    return code, capsys.readouterr().err


def test_the_names_for_the_command_line_are_the_formats() -> None:
    assert tuple(REQUEST_FORMATS) == REQUEST_FORMAT_NAMES


@pytest.mark.upstream
@pytest.mark.parametrize("name", ["conversation", "synthetic"])
def test_a_mooncake_trace_exported_to_its_format_is_the_upstream_file(
        name: str, mirrored: Path, upstream_dir: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"{name}.jsonl"
    code, err = _export(capsys, "--trace", f"mooncake/{name}", "--to", "mooncake", "-o",
                        str(out))
    assert code == 0, err
    assert out.read_bytes() == (upstream_dir / TRACES / f"{name}_trace.jsonl").read_bytes()
    record = json.loads(Path(f"{out}.provenance.json").read_text())
    assert record["rows"]["written"] == record["rows"]["read"] and record["block_size"] == 512
    assert record["files"]["mooncake/" + f"{name}_trace.jsonl"]["sha256"]


@pytest.mark.upstream
def test_speed_and_window_place_mooncake_times(mirrored: Path, upstream_dir: Path,
                                               tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fast.jsonl"
    code, err = _export(capsys, "--trace", "mooncake/conversation", "--to", "mooncake",
                        "--start", "600", "--end", "1200.5", "--speed", "2", "-o", str(out))
    assert code == 0, err
    source = [json.loads(line) for line in
              (upstream_dir / TRACES / "conversation_trace.jsonl").read_text().splitlines()]
    kept = [r for r in source if 600_000 <= r["timestamp"] < 1_200_500]
    ours = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(ours) == len(kept) > 0
    for mine, theirs in zip(ours, kept, strict=True):
        assert mine["timestamp"] == round((theirs["timestamp"] - 600_000) / 2)
        assert (mine["hash_ids"], mine["input_length"]) == (theirs["hash_ids"],
                                                            theirs["input_length"])


@pytest.mark.upstream
def test_vidur_and_splitwise_sim_read_back_the_azure_trace(
        mirrored: Path, upstream_dir: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    raw = pd.read_csv(upstream_dir / AZURE)
    seconds = (pd.to_datetime(raw["TIMESTAMP"]) - pd.to_datetime(raw["TIMESTAMP"]).iloc[0]
               ).dt.total_seconds()
    vidur, split = tmp_path / "code.csv", tmp_path / "split.csv"
    assert _export(capsys, "--trace", "azure_llm/code_2023", "--to", "vidur", "-o",
                   str(vidur))[0] == 0
    assert _export(capsys, "--trace", "azure_llm/code_2023", "--to", "splitwise-sim", "-o",
                   str(split))[0] == 0
    ours = pd.read_csv(vidur)
    assert list(ours.columns) == ["arrived_at", "num_prefill_tokens", "num_decode_tokens"]
    assert ours["arrived_at"].iloc[0] == 0.0
    # the file keeps 7 fractional digits; microseconds here (what Vidur's own copy keeps)
    assert (ours["arrived_at"] - seconds).abs().max() < 1e-6
    assert ours["num_prefill_tokens"].tolist() == raw["ContextTokens"].tolist()
    assert ours["num_decode_tokens"].tolist() == raw["GeneratedTokens"].tolist()
    theirs = pd.read_csv(split)
    assert list(theirs.columns) == ["request_id", "request_type", "application_id",
                                    "arrival_timestamp", "batch_size", "prompt_size",
                                    "token_size"]
    assert theirs["request_id"].tolist() == list(range(len(raw)))
    assert set(theirs["request_type"]) == {2} and set(theirs["batch_size"]) == {1}
    assert theirs["arrival_timestamp"].tolist() == ours["arrived_at"].tolist()
    assert theirs["prompt_size"].tolist() == raw["ContextTokens"].tolist()


@pytest.mark.upstream
def test_a_rate_rescale_gives_the_asked_mean_rate(mirrored: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "schedule.csv"
    code, err = _export(capsys, "--trace", "azure_llm/conv_2023", "--to", "schedule",
                        "--rate", "50", "-o", str(out))
    assert code == 0, err
    sent = pd.read_csv(out)
    assert list(sent.columns) == ["send_at_s", "request_id", "input_tokens", "output_tokens"]
    rate = (len(sent) - 1) / (sent["send_at_s"].iloc[-1] - sent["send_at_s"].iloc[0])
    assert rate == pytest.approx(50, rel=1e-4)
    record = json.loads(Path(f"{out}.provenance.json").read_text())
    assert record["time"]["rate"]["asked"] == 50
    assert record["time"]["speed"] == pytest.approx(50 / record["time"]["rate"]["trace"])


def _qwen(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A Qwen/Bailian-format trace with its lines shuffled (the file out of arrival order)."""
    from mltraces import synthetic

    path = synthetic.write_tables(tmp_path, ["qwen_bailian.coder"], seed=2, rows=300)[
        "qwen_bailian.coder"]
    lines = path.read_text().splitlines()
    random.Random(4).shuffle(lines)
    path.write_text("\n".join(lines) + "\n")
    return path, [json.loads(line) for line in lines]


def test_a_trace_out_of_order_is_written_by_arrival(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _qwen(tmp_path)
    out = tmp_path / "qwen.jsonl"
    code, err = _export(capsys, "--trace", "qwen_bailian/coder", "--to", "mooncake", "-o",
                        str(out), "--local", f"qwen_bailian.coder={path}")
    assert code == 0, err
    ours = [json.loads(line) for line in out.read_text().splitlines()]
    ordered = sorted(rows, key=lambda r: r["timestamp"])
    assert [r["timestamp"] for r in ours] == [round(r["timestamp"] * 1000) for r in ordered]
    assert [r["hash_ids"] for r in ours] == [r["hash_ids"] for r in ordered]
    record = json.loads(Path(f"{out}.provenance.json").read_text())
    assert record["time"]["sorted_by_arrival"] is True and record["block_size"] == 16
    assert "16 tokens each" in record["notes"][0]


@pytest.mark.parametrize(("argv", "message"), [
    (["--speed", "0"], "--speed must be a finite number above 0, got 0.0"),
    (["--speed", "-2"], "--speed must be a finite number above 0"),
    (["--speed", "nan"], "--speed must be a finite number above 0, got nan"),
    (["--speed", "inf"], "--speed must be a finite number above 0, got inf"),
    (["--speed", "1e9"], "--speed must be between 1e-6 and 1e6"),
    (["--rate", "-1"], "--rate must be a finite number above 0"),
    (["--rate", "2", "--speed", "2"], "--speed and --rate both set the time factor"),
    (["--start", "10", "--end", "10"], "the window [10.0, 10.0) is empty"),
    (["--start", "nan"], "--start must be a finite number of seconds"),
    (["--recipe", "pollux"], "--recipe filters job traces"),
])
def test_bad_time_options_are_one_line_and_write_nothing(
        argv: list[str], message: str, tmp_path: Path, isolated_cache: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.jsonl"
    code, err = _export(capsys, "--trace", "mooncake/conversation", "--to", "mooncake", "-o",
                        str(out), *argv)
    assert code == 1 and len(err.strip().splitlines()) == 1 and message in err, err
    assert list(tmp_path.iterdir()) == [] and not (isolated_cache / "files").exists()


@pytest.mark.parametrize(("argv", "message"), [
    (["--trace", "azure_llm/code_2023", "--to", "mooncake"],
     "the mooncake format needs prefix blocks (hash_ids), which azure_llm/code_2023 does not "
     "give"),
    (["--trace", "nope/x", "--to", "vidur"], "unknown request trace 'nope/x'"),
    (["--trace", "philly/jobs", "--to", "tiresias", "--speed", "2"],
     "--speed apply to the request formats"),
])
def test_a_trace_the_format_cannot_take_is_one_line(
        argv: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _export(capsys, *argv, "-o", str(tmp_path / "x"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.upstream
def test_an_empty_window_writes_nothing(mirrored: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "empty.csv"
    out.write_text("kept\n")
    code, err = _export(capsys, "--trace", "mooncake/conversation", "--to", "vidur",
                        "--start", "99999", "-o", str(out))
    assert code == 1 and "no request of mooncake/conversation arrives in the window " \
        "[99999.0, inf) s" in err
    assert out.read_text() == "kept\n" and not Path(f"{out}.provenance.json").exists()


@pytest.mark.upstream
def test_an_export_onto_its_own_input_is_refused(mirrored: Path, upstream_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _export(capsys, "--trace", "mooncake/synthetic", "--to", "schedule", "-o",
                   str(mirrored / "x.csv"))[0] == 0  # fetched into the cache
    cached = next(mirrored.rglob("synthetic_trace.jsonl"))
    before = cached.read_bytes()
    code, err = _export(capsys, "--trace", "mooncake/synthetic", "--to", "mooncake", "-o",
                        str(cached))
    assert code == 1 and "the trace is read from" in err and "write elsewhere" in err
    assert cached.read_bytes() == before
    code, err = _export(capsys, "--trace", "mooncake/synthetic", "--to", "vidur", "-o",
                        str(cached.parent))
    assert code == 1 and "it is a folder" in err


def test_times_are_written_to_the_microsecond_and_read_back_exactly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, rows = _qwen(tmp_path)
    out = tmp_path / "v.csv"
    code, err = _export(capsys, "--trace", "qwen_bailian/coder", "--to", "vidur", "--speed",
                        "3", "-o", str(out), "--local", f"qwen_bailian.coder={path}")
    assert code == 0, err
    ours = pd.read_csv(out)
    ordered = sorted(rows, key=lambda r: r["timestamp"])
    first = ordered[0]["timestamp"]
    for got, row in zip(ours["arrived_at"], ordered, strict=True):
        assert got == round((row["timestamp"] - first) / 3, 6) or math.isclose(
            got, (row["timestamp"] - first) / 3, abs_tol=5e-7)
