"""Summaries of a simulation history: cumulative ETA/TTA/cost, vs Default, regret vs Oracle.

All functions take the tidy history of :func:`mltraces.simulation.simulate` and
return tidy frames, one row per (gpu, workload, eta, beta, policy, seed) or per
recurrence, ready for the paper's Fig. 3-style plots.
"""

from __future__ import annotations

import pandas as pd

#: One simulated job: what every summary row is keyed by.
JOB_KEYS = ["gpu", "workload", "eta", "beta", "policy", "seed"]
#: The same job under another policy: what normalisation joins on.
PEER_KEYS = ["gpu", "workload", "eta", "beta", "seed"]
TOTALS = ["energy_j", "time_s", "cost"]
VS_DEFAULT = {
    "energy_j": "energy_vs_default",
    "time_s": "time_vs_default",
    "cost": "cost_vs_default",
    "final_energy_j": "final_energy_vs_default",
    "final_time_s": "final_time_vs_default",
}


def summarize(history: pd.DataFrame, references: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per simulated job: totals, the last recurrence, and ratios to Default and Oracle.

    ``references`` is a history holding the Default and Oracle runs of the same
    jobs (by default, ``history`` itself). Columns: recurrences, runs,
    failed_runs, energy_j / time_s / cost (cumulative ETA, TTA, cost),
    final_energy_j / final_time_s / final_cost (the last recurrence, retries
    included), final_batch_size, final_power_limit, energy_vs_default,
    time_vs_default, cost_vs_default, final_energy_vs_default,
    final_time_vs_default, regret (cost minus Oracle's) and cost_vs_oracle.
    """
    summary = _totals(history)
    refs = summary if references is None else _totals(references)
    default = _reference(refs, "default", list(VS_DEFAULT))
    if default is not None:
        summary = summary.merge(default, on=PEER_KEYS, how="left")
        for column, ratio in VS_DEFAULT.items():
            summary[ratio] = summary[column] / summary.pop(f"{column}_ref")
    oracle = _reference(refs, "oracle", ["cost"])
    if oracle is not None:
        summary = summary.merge(oracle, on=PEER_KEYS, how="left")
        summary["regret"] = summary["cost"] - summary["cost_ref"]
        summary["cost_vs_oracle"] = summary["cost"] / summary.pop("cost_ref")
    return summary


def cumulative(history: pd.DataFrame, references: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per recurrence: its ETA/TTA/cost (retries included) and the running totals.

    Adds ``regret`` (cumulative cost minus Oracle's at the same recurrence) when
    ``references`` (by default ``history``) holds Oracle runs of the same jobs.
    """
    per = _per_recurrence(history)
    refs = per if references is None else _per_recurrence(references)
    oracle = refs.loc[refs["policy"] == "oracle", [*PEER_KEYS, "recurrence", "cum_cost"]]
    if not oracle.empty:
        oracle = oracle.rename(columns={"cum_cost": "oracle_cum_cost"})
        per = per.merge(oracle, on=[*PEER_KEYS, "recurrence"], how="left")
        per["regret"] = per["cum_cost"] - per.pop("oracle_cum_cost")
    return per


def _per_recurrence(history: pd.DataFrame) -> pd.DataFrame:
    keys = [*JOB_KEYS, "recurrence"]
    per = history.groupby(keys, sort=False, as_index=False)[TOTALS].sum()
    running = per.groupby(JOB_KEYS, sort=False)[TOTALS].cumsum()
    for column in TOTALS:
        per[f"cum_{column}"] = running[column]
    return per


def _totals(history: pd.DataFrame) -> pd.DataFrame:
    grouped = history.groupby(JOB_KEYS, sort=False)
    summary = grouped[TOTALS].sum()
    summary["recurrences"] = grouped["recurrence"].max()
    summary["runs"] = grouped.size()
    summary["failed_runs"] = summary["runs"] - grouped["reached"].sum()
    last = history[
        history["recurrence"] == history.groupby(JOB_KEYS)["recurrence"].transform("max")
    ]
    final = last.groupby(JOB_KEYS, sort=False)
    summary["final_energy_j"] = final["energy_j"].sum()
    summary["final_time_s"] = final["time_s"].sum()
    summary["final_cost"] = final["cost"].sum()
    summary["final_batch_size"] = final["batch_size"].last()
    summary["final_power_limit"] = final["power_limit"].last()
    order = ["recurrences", "runs", "failed_runs", *TOTALS]
    rest = [c for c in summary.columns if c not in order]
    return summary[order + rest].reset_index()


def _reference(summary: pd.DataFrame, policy: str, columns: list[str]) -> pd.DataFrame | None:
    rows = summary.loc[summary["policy"] == policy, PEER_KEYS + columns]
    if rows.empty:
        return None
    return rows.rename(columns={c: f"{c}_ref" for c in columns})
