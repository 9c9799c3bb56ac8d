"""The Zeus traces saved for a warm ``mltraces simulate``: used only while their tables stand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mltraces.simulation import simulate
from mltraces.workloads import recurring_cache as trace_cache
from mltraces.workloads.recurring import load_traces

pytestmark = pytest.mark.upstream

SIMULATE = ["simulate", "--gpu", "v100,a40", "--workload", "cifar100,squad", "--seeds", "1",
            "--format", "csv"]  # fmt: skip


def _run(*argv: str) -> str:
    """``mltraces`` in a fresh process (the environment's cache and mirror)."""
    done = subprocess.run([sys.executable, "-m", "mltraces", "-q", *argv], capture_output=True,
                          text=True, check=True, env=os.environ.copy())  # fmt: skip
    return done.stdout


def _imports_duckdb(*argv: str) -> bool:
    """Whether a fresh ``mltraces`` process imported DuckDB to do ``argv``."""
    probe = (
        "import sys; from mltraces.cli import main; code = main(['-q', *sys.argv[1:]]);"
        "print('duckdb' in sys.modules, file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True,
                          check=True, env=os.environ.copy())  # fmt: skip
    return done.stderr.strip().splitlines()[-1] == "True"


def _run_here(*argv: str, capsys: pytest.CaptureFixture) -> str:
    """``mltraces`` in this process: what a cold run does needs no process of its own (the
    warm runs the tests compare with it, and the probes of DuckDB, are fresh processes)."""
    from mltraces.cli import main

    capsys.readouterr()
    assert main(["-q", *argv]) == 0
    return capsys.readouterr().out


@pytest.fixture
def warm_cli(dir_mirror: Path, isolated_cache: Path, capsys: pytest.CaptureFixture) -> str:
    """One cold ``mltraces simulate``: it reads the catalog and saves the arrays."""
    first = _run_here(*SIMULATE, capsys=capsys)
    assert trace_cache.cache_file().is_file()
    return first


def test_a_warm_simulate_gives_the_same_rows_without_duckdb(warm_cli: str) -> None:
    assert _run(*SIMULATE) == warm_cli
    assert not _imports_duckdb(*SIMULATE)


def test_the_saved_arrays_equal_the_catalog_read(warm_cli: str) -> None:
    import mltraces

    saved = trace_cache.load(trace_cache.current_key())
    assert saved is not None
    read = load_traces(mltraces.connect(tables=list(trace_cache.TABLES)))
    for mine, theirs in ((saved.train_arrays, read.train_arrays),
                         (saved.power_arrays, read.power_arrays)):  # fmt: skip
        assert mine.keys() == theirs.keys()
        for name in mine:
            assert mine[name].dtype == theirs[name].dtype
            np.testing.assert_array_equal(mine[name], theirs[name])
    a = simulate(saved, "v100", "all", "zeus,default", [1, 2]).history
    b = simulate(read, "v100", "all", "zeus,default", [1, 2]).history
    assert a.equals(b)


def test_a_rebuilt_table_invalidates_the_arrays(warm_cli: str) -> None:
    before = trace_cache.current_key()
    parquet = trace_cache.recalled_builds()[0].parquet
    os.utime(parquet, ns=(1, 1))  # any change of the Parquet file: the catalog rebuilds
    assert trace_cache.current_key() != before
    assert _imports_duckdb(*SIMULATE)  # read through the catalog again, and saved anew
    assert trace_cache.load(trace_cache.current_key()) is not None
    assert _run(*SIMULATE) == warm_cli


def test_changed_code_invalidates_the_arrays(warm_cli: str, monkeypatch) -> None:
    key = trace_cache.current_key()
    assert trace_cache.load(key) is not None
    monkeypatch.setattr(np, "__version__", "0.0.0")  # stands for any change of the makers
    assert trace_cache.current_key() != key
    assert trace_cache.load(trace_cache.current_key()) is None


@pytest.mark.parametrize(
    "tamper",
    [
        "garbage",
        "pickled names",
        "two-dimensional",
        "ragged",
        "wrong key",
        "numbers as text",
    ],
)
def test_a_tampered_file_is_never_used(warm_cli: str, tamper: str,
                                       capsys: pytest.CaptureFixture) -> None:
    path = trace_cache.cache_file()
    key = trace_cache.current_key()
    with np.load(path, allow_pickle=False) as saved:
        arrays = {name: saved[name] for name in saved.files}
    if tamper == "garbage":
        path.write_bytes(b"PK\x03\x04 not an archive")
    else:
        if tamper == "pickled names":
            arrays["train/dataset"] = arrays["train/dataset"].astype(object)
        elif tamper == "two-dimensional":
            arrays["power/average_power"] = arrays["power/average_power"].reshape(1, -1)
        elif tamper == "ragged":
            arrays["power/average_power"] = arrays["power/average_power"][:-1]
        elif tamper == "wrong key":
            arrays["key"] = np.array("0" * 64)
        elif tamper == "numbers as text":
            arrays["train/batch_size"] = arrays["train/batch_size"].astype(str)
        _savez(path, arrays)
    assert trace_cache.load(key) is None
    # read through the catalog instead, and healed
    assert _run_here(*SIMULATE, capsys=capsys) == warm_cli
    assert trace_cache.load(key) is not None


def _savez(path: Path, arrays: dict) -> None:
    with open(path, "wb") as out:
        np.savez(out, **arrays)


def test_local_files_never_use_or_write_the_arrays(dir_mirror: Path, isolated_cache: Path,
                                                   upstream_dir: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    trace = next(upstream_dir.rglob("summary_train.csv"))
    _run_here(*SIMULATE, "--local", f"zeus.train={trace}", capsys=capsys)
    assert not trace_cache.cache_file().exists()
