"""ElasticFlow's ITP traces re-derived from the raw ITP traces with the ``elasticflow-itp`` recipe.

Per cluster: the raw jobs (``itp/raw/<cluster>``), what the recipe keeps, and
ElasticFlow's published jobs (``itp/<cluster>``); the jobs matched exactly (same
id, submission time, GPUs and duration); then the annotations, which are random
in the artifact and in ours, compared in distribution:

- ``iterations_rule``: ElasticFlow's own jobs whose iterations equal
  ``int(duration x A100 throughput)`` of their own model, batch size and GPUs
  (the rule, checked exactly);
- ``model_p``: chi-square test of our (model, batch size) counts against theirs
  (a 2 x 14 contingency table); ``ef_uniform_p``: theirs against the rule's
  expectation (uniform over the templates whose batch size covers the GPUs);
- ``deadline_ks``/``deadline_p``: two-sample Kolmogorov-Smirnov test of the
  deadline slack ``(deadline - submission) / duration``, ours against theirs;
  ``ef_deadline_p``: theirs against U(0.5, 1.5);
- ``iterations_p``: two-sample KS test of the iterations, ours against theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mltraces.interop import annotate
from mltraces.interop.exporting import job_frame
from mltraces.interop.formats import get_format
from mltraces.interop.jobs import read_trace
from mltraces.interop.recipes import ELASTICFLOW_ITP, apply

if TYPE_CHECKING:
    import duckdb

#: the tables a re-derivation reads
TABLES = ["itp.jobs", "itp.elasticflow_jobs", "elasticflow.throughputs"]


def profiles(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT model, batch_size, num_gpus, iterations_per_second FROM "
                       "elasticflow.throughputs WHERE gpu_type = ?",
                       [annotate.ELASTICFLOW_GPU_TYPE]).df()


def ours(con: duckdb.DuckDBPyConnection, cluster: str, seed: int, rates: pd.DataFrame
         ) -> tuple[int, pd.DataFrame]:
    """(raw jobs, our annotated jobs) of one cluster: recipe, then ElasticFlow's annotation."""
    raw = read_trace(con, f"itp/raw/{cluster}")
    kept, _ = apply(ELASTICFLOW_ITP, raw.frame)
    jobs, dropped, _ = job_frame(raw, kept, get_format("elasticflow"))
    assert not dropped, dropped
    return len(raw.frame), annotate.elasticflow(jobs, rates, seed).frame


def published(con: duckdb.DuckDBPyConnection, cluster: str) -> pd.DataFrame:
    """ElasticFlow's jobs of one cluster, in the writer's columns."""
    frame = read_trace(con, f"itp/{cluster}").frame
    return pd.DataFrame({"job_id": frame["job_id"], "submit": frame["submit_s"].astype("int64"),
                         "duration": frame["run_s"].astype("int64"),
                         "gpus": frame["num_gpu"].astype("int64"), "model": frame["model"],
                         "batch_size": frame["batch_size"].astype("int64"),
                         "iterations": frame["iterations"].astype("int64"),
                         "deadline": frame["deadline_s"].astype("int64")})


def _slack(jobs: pd.DataFrame) -> np.ndarray:
    return ((jobs["deadline"] - jobs["submit"]) / jobs["duration"]).to_numpy()


def _expected_templates(gpus: pd.Series) -> np.ndarray:
    """Expected count of each template under the rule (uniform over the eligible ones)."""
    expected = np.zeros(len(annotate.ELASTICFLOW_TEMPLATES))
    for count, n in gpus.value_counts().items():
        eligible = [i for i, (_, b) in enumerate(annotate.ELASTICFLOW_TEMPLATES) if b >= count]
        expected[eligible] += n / len(eligible)
    return expected


def _template_counts(jobs: pd.DataFrame) -> np.ndarray:
    found = jobs.groupby(["model", "batch_size"]).size()
    return np.array([found.get(t, 0) for t in annotate.ELASTICFLOW_TEMPLATES], dtype=float)


def compare(raw: int, mine: pd.DataFrame, theirs: pd.DataFrame, rates: pd.DataFrame
            ) -> dict[str, float]:
    """One cluster's row of the table (see the module docstring)."""
    from scipy import stats

    key = ["job_id", "submit", "gpus", "duration"]
    matched = mine[key].merge(theirs[key], on=key, how="inner")
    rate = {(m, int(b), int(g)): r for m, b, g, r in rates.itertuples(index=False)}
    rule = sum(int(d * rate[(m, b, g)]) == i for m, b, g, d, i in theirs[
        ["model", "batch_size", "gpus", "duration", "iterations"]].itertuples(index=False))
    table = np.vstack([_template_counts(mine), _template_counts(theirs)])
    table = table[:, table.sum(axis=0) > 0]
    expected = _expected_templates(theirs["gpus"])
    observed = _template_counts(theirs)
    used = expected > 0
    slack = stats.ks_2samp(_slack(mine), _slack(theirs))
    return {
        "raw": raw, "kept": len(mine), "elasticflow": len(theirs), "matched": len(matched),
        "iterations_rule": int(rule),
        "model_p": float(stats.chi2_contingency(table).pvalue),
        "ef_uniform_p": float(stats.chisquare(observed[used], expected[used]).pvalue),
        "deadline_ks": float(slack.statistic), "deadline_p": float(slack.pvalue),
        "ef_deadline_p": float(stats.kstest(_slack(theirs), stats.uniform(0.5, 1.0).cdf).pvalue),
        "iterations_p": float(stats.ks_2samp(mine["iterations"], theirs["iterations"]).pvalue),
    }


def itp_rederivation(con: duckdb.DuckDBPyConnection, seed: int = 0,
                     clusters: list[str] | None = None) -> pd.DataFrame:
    """The table, one row per cluster (``con`` holds :data:`TABLES`)."""
    rates = profiles(con)
    names = clusters or [c for (c,) in con.execute(
        "SELECT DISTINCT cluster FROM itp.jobs ORDER BY 1").fetchall()]
    rows = []
    for cluster in names:
        raw, mine = ours(con, cluster, seed, rates)
        rows.append({"cluster": cluster, **compare(raw, mine, published(con, cluster), rates)})
    return pd.DataFrame(rows)
