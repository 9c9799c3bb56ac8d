"""The catalog: typed views over verified files, the published numbers, the Parquet cache."""

from __future__ import annotations

import dataclasses
import pickle
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from catalog_fixtures import (  # noqa: F401 - fixtures
    REAL_TABLES,
    loopback_only,
    real_catalog,
    rows,
    scalar,
    synthetic_catalog,
    synthetic_files,
)

import mltraces
from mltraces import catalog
from mltraces.catalog import connect, convert, describe_table, is_view_table, materialize
from mltraces.errors import OfflineError
from mltraces.papers.acme_nsdi24 import summary as acme
from mltraces.registry import get_source
from mltraces.schema import all_schemas, get_schema

ZEUS_DIR = ("raw.githubusercontent.com/ml-energy/zeus/75a8b9398034eb9baf74ca0a830c2c31bcce52cd/"
            "examples/research_reproducibility/zeus_nsdi23/trace")
ACME_PKL = ("raw.githubusercontent.com/InternLM/AcmeTrace/6d6ac9cd15f3b01151ac6ba00ecddd9156f0dc73/"
            "data/utilization/util_pkl")
GPUS = ("v100", "a40", "p100", "rtx6000")


def _data_lines(path: Path) -> int:
    """Data rows of a CSV file: its lines minus the header (last line may lack a newline)."""
    return len(path.read_text().splitlines()) - 1


# --------------------------------------------------------------------------- schema == view


def test_every_view_matches_its_schema(real_catalog, synthetic_catalog) -> None:  # noqa: F811
    unfetched = connect()  # every other table: a view that says it is not fetched, typed alike
    for name, schema in all_schemas().items():
        if is_view_table(schema):  # provided by another module: an empty view unless data converted
            con = connect(tables=[name], strict=True)
        elif name in REAL_TABLES:
            con = real_catalog.con
        else:
            con = synthetic_catalog.con if name in synthetic_catalog.local else unfetched
        described = rows(con, f"DESCRIBE {schema.qualified}")
        got = [(r[0], r[1]) for r in described]
        expected = [(f.name, f.duckdb_type) for f in schema.fields]
        expected += [(d.name, d.duckdb_type) for d in schema.derived]
        expected = [(n, "TIMESTAMP WITH TIME ZONE" if t == "TIMESTAMPTZ" else t)
                    for n, t in expected]
        assert got == expected, name


def test_connection_renders_times_in_utc(synthetic_catalog) -> None:  # noqa: F811
    assert scalar(synthetic_catalog.con, "SELECT current_setting('TimeZone')") == "UTC"


def test_columns_carry_descriptions_and_units(real_catalog) -> None:  # noqa: F811
    comments = dict(rows(real_catalog.con, """
        SELECT column_name, comment FROM duckdb_columns()
        WHERE schema_name = 'zeus' AND table_name = 'power'"""))
    assert comments["power_limit"].endswith("[W]")
    assert "Derived" in comments["energy_per_epoch"]


# --------------------------------------------------------------------------- ITP numbers

ITP = get_source("itp").published  # the published totals: clusters, jobs, GPU hours
ITP_ROWS = get_source("itp").expected_rows


def test_itp_jobs_reproduce_the_published_totals(real_catalog) -> None:  # noqa: F811
    [(jobs, clusters, gpu_hours)] = rows(
        real_catalog.con, "SELECT count(*), count(DISTINCT cluster), sum(gpu_hours) FROM itp.jobs")
    print(f"itp.jobs: {jobs:,} jobs, {clusters} clusters, {gpu_hours:,.1f} GPU hours")
    assert (jobs, clusters) == (ITP["jobs"], ITP["clusters"])
    assert round(gpu_hours, 1) == ITP["gpu_hours"]
    direct = "SELECT round(sum(duration * num_gpu) / 3600, 1) FROM itp.jobs"
    assert scalar(real_catalog.con, direct) == ITP["gpu_hours"]


def test_elasticflow_deadlines_follow_the_generator(real_catalog) -> None:  # noqa: F811
    con = real_catalog.con
    outside = scalar(con, """SELECT count(*) FROM itp.elasticflow_jobs WHERE
        deadline - submission_time NOT BETWEEN floor(0.5 * duration) AND ceil(1.5 * duration)""")
    assert outside == 0
    # Deadlines are whole seconds: exactly three fall below 0.5 x duration by truncation.
    truncated = rows(con, """SELECT deadline - submission_time, duration FROM itp.elasticflow_jobs
                             WHERE deadline - submission_time < 0.5 * duration""")
    assert len(truncated) == 3
    assert all(slack == duration // 2 for slack, duration in truncated)
    [(low, high)] = rows(con, "SELECT min(deadline_factor), max(deadline_factor) "
                              "FROM itp.elasticflow_jobs")
    assert 0.499 < low < 0.5 and 1.49 < high <= 1.5
    assert scalar(con, "SELECT count(*) FROM itp.elasticflow_jobs") == ITP["jobs"]
    assert scalar(con, "SELECT count(*) FROM itp.testbed_jobs") == ITP_ROWS["itp.testbed_jobs"]


def test_elasticflow_jobs_are_the_raw_jobs(real_catalog) -> None:  # noqa: F811
    mismatched = scalar(real_catalog.con, """
        SELECT count(*) FROM itp.jobs r FULL JOIN itp.elasticflow_jobs e USING (job_id)
        WHERE r.cluster IS DISTINCT FROM e.cluster OR r.duration IS DISTINCT FROM e.duration
           OR r.num_gpu IS DISTINCT FROM e.num_gpu
           OR r.submission_time IS DISTINCT FROM e.submission_time""")
    assert mismatched == 0


# --------------------------------------------------------------------------- Zeus numbers


def test_zeus_row_counts_equal_line_counts(real_catalog, upstream_dir) -> None:  # noqa: F811
    folder = upstream_dir / ZEUS_DIR
    con = real_catalog.con
    counts = dict(rows(con, "SELECT gpu, count(*) FROM zeus.power GROUP BY gpu"))
    assert counts == {g: _data_lines(folder / f"summary_power_{g}.csv") for g in GPUS}
    assert counts == {"v100": 476, "a40": 453, "p100": 270, "rtx6000": 410}
    train = folder / "summary_train.csv"
    assert scalar(con, "SELECT count(*) FROM zeus.train") == _data_lines(train) == 3_759
    never = sum(line.endswith(",nan") for line in train.read_text().splitlines())
    assert scalar(con, "SELECT count(*) FROM zeus.train WHERE target_epoch IS NULL") == never


def test_zeus_power_keeps_the_csv_columns(real_catalog) -> None:  # noqa: F811
    columns = [r[0] for r in rows(real_catalog.con, "DESCRIBE zeus.power")]
    assert columns == ["dataset", "network", "batch_size", "optimizer", "power_limit",
                       "time_per_epoch", "average_power", "gpu", "energy_per_epoch"]
    columns = [r[0] for r in rows(real_catalog.con, "DESCRIBE zeus.train")]
    assert columns == ["dataset", "network", "batch_size", "optimizer", "learning_rate", "run",
                       "target_metric", "target_epoch"]


# The paper's six recurring jobs (dataset, network, optimizer, target metric, default batch size).
PAPER_JOBS = [
    ("cifar100", "shufflenetv2", "adadelta", 0.6, 1024),
    ("imagenet", "resnet50", "adadelta", 0.65, 256),
    ("squad", "bert_base_uncased", "adamw", 84.0, 32),
    ("librispeech", "deepspeech2", "adamw", 40.0, 256),
    ("movielens-1m", "ncf", "adam", 0.41, 1024),
    ("sentiment140", "bert_base_uncased", "adamw", 0.84, 128),
]
UNJOINED = {"v100": 91, "a40": 59, "p100": 18, "rtx6000": 24}


def test_power_rows_join_train_where_the_simulator_expects(real_catalog, upstream_dir  # noqa: F811
                                                           ) -> None:
    """The Zeus simulator merges the traces on their shared columns (dataset, network,
    batch_size, optimizer) and starts each job at min(default batch size, largest batch size
    profiled on the GPU). Every power row of such a start must join trained paths (at least four
    runs, the job's target), and the power rows that do not join are exactly those an
    independent pandas merge drops."""
    con = real_catalog.con
    folder = upstream_dir / ZEUS_DIR
    train = pd.read_csv(folder / "summary_train.csv")
    keys = ["dataset", "network", "batch_size", "optimizer"]
    for gpu in GPUS:
        power = pd.read_csv(folder / f"summary_power_{gpu}.csv")
        merged = power.merge(train[keys].drop_duplicates(), how="left", indicator=True)
        assert (merged["_merge"] == "left_only").sum() == UNJOINED[gpu]
        unjoined = scalar(con, f"""SELECT count(*) FROM zeus.power p WHERE gpu = '{gpu}' AND NOT
            EXISTS (SELECT 1 FROM zeus.train t WHERE (t.dataset, t.network, t.batch_size,
                    t.optimizer) = (p.dataset, p.network, p.batch_size, p.optimizer))""")
        assert unjoined == UNJOINED[gpu]
        for dataset, network, optimizer, target, default in PAPER_JOBS:
            b0 = min(default, int(power.loc[power.dataset == dataset, "batch_size"].max()))
            profiled = power[(power.dataset == dataset) & (power.batch_size == b0)
                             & (power.optimizer == optimizer)]
            limits = set(profiled.power_limit)
            assert limits, (gpu, dataset, b0)
            joined = rows(con, f"""
                SELECT p.power_limit, count(DISTINCT t.run), count(t.target_epoch)
                FROM zeus.power p JOIN zeus.train t USING (dataset, network, batch_size, optimizer)
                WHERE p.gpu = '{gpu}' AND dataset = '{dataset}' AND network = '{network}'
                  AND optimizer = '{optimizer}' AND batch_size = {b0} AND t.target_metric = {target}
                GROUP BY ALL""")
            assert {r[0] for r in joined} == limits, (gpu, dataset, b0)
            assert all(r[1] >= 4 and r[2] >= 1 for r in joined), (gpu, dataset, b0)


# --------------------------------------------------------------------------- util_cdf


def _numpy_curve(upstream_dir: Path, name: str, curve: int) -> tuple[np.ndarray, np.ndarray]:
    """Independent path: the standard unpickler on the (hash-verified) upstream file."""
    arrays = pickle.loads((upstream_dir / ACME_PKL / name).read_bytes())
    return np.asarray(arrays[2 * curve]), np.asarray(arrays[2 * curve + 1])


def _share_at_most(x: np.ndarray, y: np.ndarray, value: float) -> float:
    i = int(np.searchsorted(x, value, side="right"))
    if i == 0:
        return 0.0
    if i == len(x) or x[i] == x[i - 1]:
        return float(y[i - 1])
    return float(y[i - 1] + (value - x[i - 1]) * (y[i] - y[i - 1]) / (x[i] - x[i - 1]))


def test_util_cdf_medians_and_power_above_tdp(real_catalog, upstream_dir) -> None:  # noqa: F811
    con = real_catalog.con
    for cluster in ("seren", "kalos"):
        name = f"util_gpu_{cluster}.pkl"
        ours = acme.cdf_quantile(con, name, "gpu_util", 50)
        x, y = _numpy_curve(upstream_dir, name, 0)
        theirs = float(np.interp(50.0, y, x))
        print(f"{cluster}: median GPU utilization {ours:.2f} % (numpy: {theirs:.2f} %)")
        assert ours == pytest.approx(theirs, abs=1e-9)
        name = f"gpu_power_{cluster}.pkl"
        above = 100 - acme.cdf_share_at_most(con, name, "gpu_power", 400)
        x, y = _numpy_curve(upstream_dir, name, 0)
        expected = 100 - _share_at_most(x, y, 400.0)
        print(f"{cluster}: {above:.2f} % of GPU power samples above the 400 W TDP "
              f"(numpy: {expected:.2f} %)")
        assert above == pytest.approx(expected, abs=1e-9)
    assert acme.cdf_quantile(con, "util_gpu_seren.pkl", "gpu_util", 50) == pytest.approx(99.0)
    assert acme.cdf_quantile(con, "util_gpu_kalos.pkl", "gpu_util", 50) == pytest.approx(97.0)


def test_util_cdf_is_tidy(real_catalog, upstream_dir) -> None:  # noqa: F811
    con = real_catalog.con
    per_file = dict(rows(con, "SELECT source_file, count(DISTINCT series) FROM acme.util_cdf "
                              "GROUP BY ALL"))
    assert len(per_file) == 13 and per_file["util_gpu_seren.pkl"] == 5
    # 28 curves: 27 of 1,000 points and PAI's 74
    assert scalar(con, "SELECT count(*) FROM acme.util_cdf") == 27 * 1000 + 74
    assert scalar(con, "SELECT count(*) FROM acme.util_cdf WHERE cluster = 'PAI'") == 74
    x, y = _numpy_curve(upstream_dir, "server_power.pkl", 1)
    got = rows(con, """SELECT x, y FROM acme.util_cdf WHERE source_file = 'server_power.pkl'
                       AND series = 'cpu_node_power' ORDER BY point""")
    assert np.array_equal(np.array(got), np.column_stack([x, y]))
    units = dict(rows(con, "SELECT DISTINCT metric, unit FROM acme.util_cdf"))
    assert units["POWER_USAGE"] == "W" and units["GPU_TEMP"] == "°C"


# --------------------------------------------------------------------------- AcmeTrace jobs


def test_both_time_formats_parse_to_the_same_instants(synthetic_catalog) -> None:  # noqa: F811
    con = synthetic_catalog.con
    for table in ("acme.seren_jobs", "acme.kalos_jobs"):
        text = pd.read_csv(synthetic_catalog.local[table], dtype=str, keep_default_na=False)
        for column in ("submit_time", "start_time"):
            instants = pd.to_datetime(text[column], utc=True)
            seconds = (instants - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(seconds=1)
            expected = dict(zip(text["job_id"], seconds.tolist(), strict=True))
            got = dict(rows(con, f"SELECT job_id::VARCHAR, epoch({column})::BIGINT FROM {table}"))
            assert got == expected, (table, column)
    offsets = {t: synthetic_catalog.local[t].read_text().splitlines()[1].split(",")[7][-6:]
               for t in ("acme.seren_jobs",)}
    assert offsets == {"acme.seren_jobs": "+08:00"}
    seren_first = scalar(con, "SELECT strftime(min(submit_time), '%Y-%m-%d %H:%M:%S%z') "
                              "FROM acme.seren_jobs")
    assert seren_first.endswith("+00")  # rendered in UTC, 8 hours before the file's +08:00 text


def _independent_summary(path: Path) -> pd.Series:
    """cluster_summary's columns computed with plain pandas from the CSV."""
    jobs = pd.read_csv(path)
    gpu = jobs[jobs.gpu_num > 0]
    cpu = jobs[jobs.gpu_num == 0]
    out = {
        "job_num": len(jobs), "cpu_job_num": len(cpu), "gpu_job_num": len(gpu),
        "avg_run_time_gpu": gpu.duration.mean(), "avg_que_time_gpu": gpu.queue.mean(),
        "avg_gpu_num": gpu.gpu_num.mean(), "med_run_time_gpu": gpu.duration.median(),
        "med_que_time_gpu": gpu.queue.median(), "med_gpu_num": gpu.gpu_num.median(),
        "max_run_time_gpu": gpu.duration.max(), "max_gpu": gpu.gpu_num.max(),
    }
    names = {"complete": "COMPLETED", "cancel": "CANCELLED", "fail": "FAILED"}
    for prefix, state in names.items():
        out[f"{prefix}_rate_gpu"] = (gpu.state == state).mean()
    for prefix, state in names.items():
        out[f"{prefix}_gpu_time"] = gpu.loc[gpu.state == state, "gpu_time"].sum()
    for prefix in names:
        out[f"{prefix}_rate_gpu_time"] = out[f"{prefix}_gpu_time"] / gpu.gpu_time.sum()
    out |= {"avg_run_time_cpu": cpu.duration.mean(), "avg_que_time_cpu": cpu.queue.mean(),
            "med_run_time_cpu": cpu.duration.median(), "med_que_time_cpu": cpu.queue.median()}
    for prefix, state in names.items():
        out[f"{prefix}_rate_cpu"] = (cpu.state == state).mean()
    return pd.Series(out, dtype="float64")


def test_cluster_summary_recomputation_matches_pandas(synthetic_catalog) -> None:  # noqa: F811
    ours = acme.cluster_summary(synthetic_catalog.con)
    assert list(ours.index) == ["Seren", "Kalos"]
    assert list(ours.columns) == acme.SUMMARY_COLUMNS
    for cluster, table in acme.JOB_TABLES.items():
        expected = _independent_summary(synthetic_catalog.local[table])
        pd.testing.assert_series_equal(ours.loc[cluster].astype("float64"), expected,
                                       check_names=False, rtol=1e-12)


def test_cluster_summary_columns_are_the_published_ones(real_catalog) -> None:  # noqa: F811
    published = [r[0] for r in rows(real_catalog.con, "DESCRIBE acme.cluster_summary")]
    assert published == ["id", *acme.SUMMARY_COLUMNS]
    assert scalar(real_catalog.con,
                  "SELECT job_num FROM acme.cluster_summary WHERE id = 'Kalos'") == 62_413


def test_compare_cluster_summary_lines_up_both_tables(real_catalog, synthetic_files  # noqa: F811
                                                     ) -> None:
    from mltraces.catalog import attach_table

    con = real_catalog.con.cursor()
    for table in ("acme.seren_jobs", "acme.kalos_jobs"):
        attach_table(con, get_schema(table), synthetic_files[table], strict=True)
    compared = acme.compare_cluster_summary(con)
    assert len(compared) == 2 * len(acme.SUMMARY_COLUMNS)
    kalos = compared.set_index(["cluster", "column"]).loc[("Kalos", "job_num")]
    assert (kalos.published, kalos.recomputed) == (62_413, 1_500)


def test_alibaba_groups_load_from_xz(synthetic_catalog) -> None:  # noqa: F811
    import lzma

    text = lzma.decompress(synthetic_catalog.local["zeus.alibaba_groups"].read_bytes()).decode()
    expected = pd.read_csv(pd.io.common.StringIO(text))
    got = synthetic_catalog.con.sql("SELECT * EXCLUDE (runtime) FROM zeus.alibaba_groups").df()
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)


# --------------------------------------------------------------------------- cache behaviour


def _parquets(cache: Path, table: str) -> list[Path]:
    return sorted((cache / catalog.TABLES_DIR).glob(f"{table}-*.parquet"))


def test_tables_limit_what_is_touched(http_mirror, isolated_cache) -> None:
    con = connect(tables=["zeus.train"])
    assert scalar(con, "SELECT count(*) FROM zeus.train") == 3_759
    fetched = [p.name for p in (isolated_cache / "files").rglob("*") if p.is_file()
               and not p.name.endswith((".json", ".lock"))]
    assert fetched == ["summary_train.csv"]
    views = rows(con, "SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal "
                      "ORDER BY ALL")
    assert views == [("mltraces", "status"), ("zeus", "train")]
    assert [t.name for t in catalog.select_schemas("itp")] == ["itp.elasticflow_jobs", "itp.jobs",
                                                         "itp.testbed_jobs"]
    with pytest.raises(KeyError, match="known tables"):
        connect(tables=["zeus.nope"])


def test_warm_connect_reuses_the_conversion(http_mirror, isolated_cache, monkeypatch) -> None:
    materialize("zeus.power")
    first = _parquets(isolated_cache, "zeus.power")
    assert len(first) == 1
    monkeypatch.setattr(convert, "convert_table", lambda *a: pytest.fail("converted twice"))
    con = connect(tables=["zeus.power"])
    assert scalar(con, "SELECT count(*) FROM zeus.power") == 1_609
    assert _parquets(isolated_cache, "zeus.power") == first


def test_schema_change_invalidates_the_conversion(http_mirror, isolated_cache) -> None:
    schema = get_schema("zeus.power")
    old = materialize(schema).parquet
    changed = dataclasses.replace(schema, digest="0" * 64)
    new = materialize(changed).parquet
    assert new != old and new.is_file() and not old.exists()


def test_changed_local_file_invalidates_the_conversion(synthetic_files, tmp_path,  # noqa: F811
                                                      isolated_cache) -> None:
    path = shutil.copy(synthetic_files["acme.kalos_jobs"], tmp_path / "trace_kalos.csv")
    first = materialize("acme.kalos_jobs", path)
    assert first.rows == 1_500 and not first.verified and "local" in first.origin
    lines = Path(path).read_text().splitlines()
    Path(path).write_text("\n".join(lines[:-10]) + "\n")
    second = materialize("acme.kalos_jobs", path)
    assert second.rows == 1_490 and second.parquet != first.parquet
    assert not first.parquet.exists()  # an older version of the same input is removed
    other = materialize("acme.kalos_jobs", synthetic_files["acme.kalos_jobs"])
    assert other.parquet.exists() and second.parquet.exists()  # other inputs are kept


def test_offline_without_cache_leaves_a_view_that_explains(monkeypatch, caplog) -> None:
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    con = connect(tables=["zeus.train", "itp.jobs"])
    assert "zeus.train is unavailable" in caplog.text
    with pytest.raises(Exception, match="MLTRACES_OFFLINE"):
        rows(con, "SELECT count(*) FROM zeus.train")
    assert rows(con, "DESCRIBE zeus.train")[0][0] == "dataset"
    with pytest.raises(OfflineError):
        connect(tables=["zeus.train"], strict=True)


def test_an_unfetchable_table_does_not_break_the_others(http_mirror, caplog) -> None:
    con = connect(tables=["acme.kalos_jobs", "acme.cluster_summary"])
    assert scalar(con, "SELECT count(*) FROM acme.cluster_summary") == 5
    with pytest.raises(Exception, match=r"acme\.kalos_jobs is unavailable"):
        rows(con, "SELECT * FROM acme.kalos_jobs")


# --------------------------------------------------------------------------- local copies


def test_local_via_environment_and_unverified_marking(synthetic_files, monkeypatch  # noqa: F811
                                                      ) -> None:
    monkeypatch.setenv("MLTRACES_LOCAL", f"acme.kalos_jobs={synthetic_files['acme.kalos_jobs']}")
    con = mltraces.connect(tables=["acme.kalos_jobs"])
    assert scalar(con, "SELECT count(*) FROM acme.kalos_jobs") == 1_500
    assert scalar(con, "SELECT count(*) FROM acme.kalos_jobs WHERE state = 'RUNNING'") == 3
    comment = scalar(con, "SELECT comment FROM duckdb_views() WHERE view_name = 'kalos_jobs'")
    assert "UNVERIFIED" in comment
    with pytest.raises(KeyError, match="unknown table"):
        connect(local={"acme.nope": "x.csv"})


def test_local_folder_and_archive(upstream_dir, tmp_path) -> None:
    folder = tmp_path / "zeus"
    folder.mkdir()
    for gpu in GPUS:
        shutil.copy(upstream_dir / ZEUS_DIR / f"summary_power_{gpu}.csv", folder)
    archive = tmp_path / "my-raw-traces.tar.gz"
    raw = next(upstream_dir.rglob("raw-traces.tar.gz"))
    shutil.copy(raw, archive)
    con = connect(tables=["zeus.power", "itp.jobs"],
                  local={"zeus.power": folder, "itp.jobs": archive}, strict=True)
    assert scalar(con, "SELECT count(*) FROM zeus.power") == 1_609
    assert scalar(con, "SELECT count(DISTINCT cluster) FROM itp.jobs") == 10
    with tarfile.open(raw) as tar:
        member = tar.extractfile("cluster10.csv").read()
    single = tmp_path / "cluster10.csv"
    single.write_bytes(member)
    con = connect(tables=["itp.jobs"], local={"itp.jobs": single}, strict=True)
    assert rows(con, "SELECT cluster, count(*) FROM itp.jobs GROUP BY ALL") == [("cluster10", 260)]


def test_multi_file_table_needs_a_folder(tmp_path) -> None:
    path = tmp_path / "summary_power_v100.csv"
    path.write_text("dataset\n")
    with pytest.raises(Exception, match="give a directory"):
        connect(tables=["zeus.power"], local={"zeus.power": path}, strict=True)


# --------------------------------------------------------------------------- describe / tables


def test_tables_lists_every_schema() -> None:
    assert mltraces.tables() == sorted(all_schemas())


def test_describe_table(http_mirror) -> None:
    text = describe_table("zeus.power")
    assert "1,609 rows" in text and "(verified)" in text
    assert "power_limit" in text and " W " in text and "energy_per_epoch" in text
    assert "Primary key: (gpu, dataset, network, batch_size, optimizer, power_limit)" in text


def test_descriptions_never_break_a_path_at_its_hyphens() -> None:
    # textwrap breaks at hyphens by default: `mltraces info` printed a local folder under
    # /tmp/pytest-of-root/.../popen-gw0 as "popen-" and "gw0" on two lines
    from mltraces.catalog.describe import _fill

    path = "/tmp/" + "-".join(["pytest-of-root"] * 8) + "/popen-gw0/repo"
    text = _fill(f"Status: 397 rows (local: {path} (2023-06 to 2023-07; 2 file(s) verified)",
                 subsequent_indent="  ")
    assert path in text.split()


def test_describe_unavailable_table(monkeypatch) -> None:
    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    text = describe_table("acme.seren_jobs")
    assert "unavailable" in text and "TIMESTAMPTZ" in text and "GPU s" in text


# --------------------------------------------------------------------------- CLI


def test_cli_sql_formats(http_mirror, isolated_cache, tmp_path, capsys) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT count(*) AS n, count(DISTINCT cluster) AS c FROM itp.jobs",
                 "--format", "csv"]) == 0
    assert capsys.readouterr().out == f"n,c\n{ITP['jobs']},{ITP['clusters']}\n"
    parquets = (isolated_cache / catalog.TABLES_DIR).glob("*.parquet")
    built = sorted(p.name.split("-")[0] for p in parquets)
    assert built == ["itp.jobs"]  # only the table the query names was set up
    assert main(["sql", "SELECT gpu, max(power_limit) AS w FROM zeus.power GROUP BY gpu "
                 "ORDER BY gpu", "--format", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '{"gpu":"a40","w":300}' and len(lines) == 4
    assert main(["sql", "SELECT * FROM zeus.power", "--format", "parquet"]) == 1
    assert "--output" in capsys.readouterr().err
    out = tmp_path / "power.parquet"
    assert main(["sql", "SELECT * FROM zeus.power", "--format", "parquet", "-o", str(out)]) == 0
    assert len(pd.read_parquet(out)) == 1_609
    table = tmp_path / "power.txt"
    assert main(["sql", "SELECT power_limit FROM zeus.power", "-o", str(table)]) == 0
    assert len(table.read_text().splitlines()) == 1 + 1_609  # header + every row
    assert main(["sql", "SELECT nope FROM zeus.power"]) == 1
    assert "query failed" in capsys.readouterr().err
    assert main(["sql", "SELECT count(*) FROM itp.testbed_jobs"]) == 0
    assert "195" in capsys.readouterr().out


def test_cli_sql_writes_what_a_view_could_not_hold(capsys) -> None:
    from mltraces.cli import main

    pivot = "PIVOT (SELECT 2 AS n, 'k' AS key) ON key USING sum(n)"
    for query, csv, json in ((pivot, "k\n2\n", '{"k":2}\n'),
                             ("SELECT 1 AS a -- a trailing comment", "a\n1\n", '{"a":1}\n')):
        assert main(["sql", query, "--format", "csv"]) == 0
        assert capsys.readouterr().out == csv
        assert main(["sql", query, "--format", "json"]) == 0
        assert capsys.readouterr().out == json


def test_cli_sql_with_local(synthetic_files, capsys) -> None:  # noqa: F811
    from mltraces.cli import main

    path = synthetic_files["acme.seren_jobs"]
    assert main(["sql", "SELECT count(*) AS n FROM acme.seren_jobs", "--format", "csv",
                 "--local", f"acme.seren_jobs={path}"]) == 0
    assert capsys.readouterr().out == "n\n3000\n"


def test_sql_sets_up_only_named_tables_and_refuses_unknown_ones() -> None:
    from mltraces.commands.sql import tables_in

    assert tables_in("SELECT * FROM itp.jobs j JOIN ITP.testbed_jobs t USING (job_id)") == [
        "itp.jobs", "itp.testbed_jobs"]
    assert tables_in("SELECT 'itp.jobs'") is None  # a string, not a table
    assert tables_in("SELECT acme.floor_time(now(), 60)") is None  # a macro, not a table
    assert tables_in("SELECT 1") is None
    with pytest.raises(KeyError, match=r"unknown table 'itp\.job'; tables: .*itp\.jobs"):
        tables_in("SELECT * FROM itp.job")


def test_sql_finds_quoted_table_names(monkeypatch) -> None:
    from mltraces.commands.sql import tables_in

    assert tables_in('SELECT * FROM "itp"."jobs" JOIN itp."testbed_jobs" USING (job_id)') == [
        "itp.jobs", "itp.testbed_jobs"]


def test_cli_sql_on_an_unavailable_table_says_why_once(monkeypatch, capsys) -> None:
    from mltraces.cli import main

    monkeypatch.setenv("MLTRACES_OFFLINE", "1")
    assert main(["sql", "SELECT count(*) FROM itp.jobs"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("mltraces sql: error: itp/raw-traces.tar.gz is not")


def test_cli_bad_local_spec_is_one_line(capsys) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT 1", "--local", "acme.seren_jobs"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mltraces sql: error: bad local table override 'acme.seren_jobs'")
    assert "Traceback" not in err and "TABLE=PATH" in err


def test_cli_tables(capsys) -> None:
    from mltraces.cli import main

    assert main(["tables"]) == 0
    out = capsys.readouterr().out
    for name in all_schemas():
        assert name in out
    assert "not fetched yet: `mltraces fetch" in out


def test_the_schema_module_knows_the_built_in_readers() -> None:
    from mltraces.catalog.readers import BUILTIN, FileReader, reader_for
    from mltraces.schema import BUILTIN_FILE_READERS

    files = {name for name, reader in BUILTIN.items() if isinstance(reader, FileReader)}
    assert files == BUILTIN_FILE_READERS
    for schema in all_schemas().values():
        assert is_view_table(schema) == (reader_for(schema).kind == "view")


def test_external_reader_tables_are_views_of_their_module() -> None:
    # the jobs and requests views unite other tables: tests/test_jobs.py and
    # tests/test_requests.py hold them
    unions = {"mltraces.jobs", "mltraces.requests"}
    external = [s for s in all_schemas().values() if is_view_table(s) and s.name not in unions]
    if not external:
        pytest.skip("no schema uses an external reader")
    from mltraces.catalog.validation import validate
    from mltraces.errors import SchemaError

    con = connect(tables=[s.name for s in external], strict=True)
    for schema in external:
        assert rows(con, f"SELECT count(*) FROM {schema.qualified}") == [(0,)]  # nothing converted
        with pytest.raises(SchemaError, match="provided by reader"):
            materialize(schema)
    report = validate([s.name for s in external])
    assert (report.failing_rows == 0).all()


# --------------------------------------------------------------------------- readers by name


def test_a_source_folder_brings_its_own_reader(tmp_path, monkeypatch) -> None:
    """A wide throughput CSV (one column per GPU count) unpivoted by a reader that lives in
    its source's folder: the catalog resolves it by name and caches its Parquet."""
    import sys
    import types

    from mltraces.catalog import Conversion, FileReader, attach_table, readers
    from mltraces.schema import parse_schema, sql_literal, sql_path

    def unpivot(request) -> Conversion:
        import duckdb

        (item,) = request.inputs
        con = duckdb.connect()
        wide = f"read_csv({sql_path(item.path)}, header = true)"
        con.execute(f"COPY (SELECT model, CAST(gpus AS BIGINT) AS gpus, throughput, "
                    f"{sql_literal(item.label)} AS _source, row_number() OVER () AS _row "
                    f"FROM (UNPIVOT {wide} ON COLUMNS(* EXCLUDE model) INTO NAME gpus "
                    f"VALUE throughput)) TO {sql_literal(str(request.out))} (FORMAT parquet)")
        counted = con.execute(f"SELECT count(*) FROM read_parquet({sql_path(request.out)})")
        return Conversion(counted.fetchall()[0][0])

    module = types.ModuleType("mltraces.sources.demo.readers")
    module.READERS = {"wide_throughput": FileReader("wide_throughput", unpivot)}
    monkeypatch.setitem(sys.modules, "mltraces.sources.demo", types.ModuleType("demo"))
    monkeypatch.setitem(sys.modules, "mltraces.sources.demo.readers", module)
    readers.source_readers.cache_clear()
    schema = parse_schema({
        "name": "demo.throughput", "title": "t", "description": "d",
        "fields": [{"name": "model", "type": "string", "description": "m"},
                   {"name": "gpus", "type": "integer", "description": "g"},
                   {"name": "throughput", "type": "number", "description": "t"}],
        "mltraces": {"reader": "wide_throughput", "sources": [{"file": "demo/wide.csv"}]}})
    path = tmp_path / "wide.csv"
    path.write_text("model,1,2,4\nresnet50,100.0,190.0,370.0\nbert,50.0,95.0,180.0\n")
    con = connect(tables=[])  # no shipped table: the demo schema is not in schemas/
    attach_table(con, schema, path, strict=True)
    assert scalar(con, "SELECT sum(throughput) FROM demo.throughput WHERE gpus = 4") == 550.0
    assert rows(con, 'SELECT table_name, state FROM mltraces.status') == [
        ("demo.throughput", "unverified")]
    readers.source_readers.cache_clear()


# --------------------------------------------------------------------------- status, offline


def test_status_says_what_is_ready_and_why_not(http_mirror, synthetic_files) -> None:  # noqa: F811
    con = connect(["zeus.power", "acme.kalos_jobs", "acme.seren_jobs", "acme.gpu_metrics"],
                  local={"acme.kalos_jobs": synthetic_files["acme.kalos_jobs"]})
    status = {r[0]: r[1:] for r in rows(con, "SELECT * FROM mltraces.status")}
    assert status["zeus.power"] == ("ready", "upstream", 1_609, None)
    state, origin, count, reason = status["acme.kalos_jobs"]
    assert (state, count) == ("unverified", 1_500) and origin.startswith("local: ")
    state, _, count, reason = status["acme.seren_jobs"]  # not in the mirror
    assert state == "unavailable" and count is None and "trace_seren.csv" in reason
    state, _, count, reason = status["acme.gpu_metrics"]
    assert state == "unavailable" and "mltraces fetch acme-util" in reason
    from mltraces.figures import table_problem, unverified_inputs

    assert unverified_inputs(con, ["zeus.power", "acme.kalos_jobs"]) == ["acme.kalos_jobs"]
    assert table_problem(con, "zeus.power") is None
    assert "trace_seren.csv" in table_problem(con, "acme.seren_jobs")


def test_connect_without_names_touches_no_network(http_mirror, isolated_cache, caplog) -> None:
    materialize("zeus.train")  # cached, so ready; every other table: not fetched
    con = connect()
    fetched = [p.name for p in (isolated_cache / "files").rglob("*.csv")]
    assert fetched == ["summary_train.csv"]
    states = dict(rows(con, 'SELECT table_name, state FROM mltraces.status'))
    assert states["zeus.train"] == "ready" and states["zeus.power"] == "unavailable"
    assert "WARNING" not in caplog.text  # a status, not a problem nobody asked about
    with pytest.raises(Exception, match=r"not fetched — run `mltraces fetch zeus/summary_power"):
        rows(con, "SELECT * FROM zeus.power")


def test_warm_connect_with_the_network_down_needs_no_network(http_mirror, monkeypatch) -> None:
    connect(["zeus.train", "itp.jobs"], strict=True)
    monkeypatch.setenv("MLTRACES_MIRROR", "http://127.0.0.1:9")  # nothing listens there
    con = connect(["zeus.train", "itp.jobs"], strict=True)
    assert scalar(con, "SELECT count(*) FROM itp.jobs") == ITP["jobs"]


# --------------------------------------------------------------------------- CLI wording


def test_cli_sql_suggests_the_catalog_name_without_unrelated_warnings(capsys) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT * FROM itp_jobs"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean itp.jobs?" in err[0]


def test_cli_sql_on_a_table_with_nothing_fetched_says_how_to_fetch(capsys) -> None:
    from mltraces.cli import main

    assert main(["sql", "SELECT count(*) FROM acme.gpu_metrics"]) == 1
    err = capsys.readouterr().err
    assert "acme.gpu_metrics has no data: nothing fetched yet" in err
    assert "mltraces fetch acme-util" in err


def test_cli_tables_and_validate_say_plainly_what_is_missing(capsys) -> None:
    from mltraces.cli import main

    assert main(["tables", "acme"]) == 0
    out = capsys.readouterr().out
    assert "reader" not in out and "nothing fetched yet" in out
    assert "not fetched yet: `mltraces fetch acme/trace_seren.csv`" in out
    assert main(["validate"]) == 0  # nothing fetched, nothing downloaded: every table skipped
    out = capsys.readouterr().out
    assert "[skipped] input files: not checked - its files are not fetched yet" in out
    assert "not fetched — run `mltraces fetch zeus/summary_train.csv`" in out
