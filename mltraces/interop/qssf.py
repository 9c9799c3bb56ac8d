"""``helios-qssf``: the jobs the Helios artifact's QSSF evaluation replays (SC'21).

Stated from ``S-Lab-System-Group/HeliosArtifact@bdaae10``, ``framework/QSSF
Service/`` (read there; the code here is ours). Its data step
(``data/prepare_data.sh``) runs ``data/log_process.py`` and
``data/vc_dict_generator.py`` per cluster; ``simulator.py`` then reads the
prepared log with ``utils.trace_process`` (Helios) or ``utils.trace_philly_process``
(Philly) for the experiment's date window and replays every VC on its own
nodes. Per cluster, in that order (``cluster`` of each job: Venus, Earth,
Saturn, Uranus or Philly; the released clusters only):

1. ``vc_drops`` (``log_process.py``): the cluster's listed VCs are removed
   (test VCs, VCs with no nodes or no jobs; Philly: four VCs).
2. ``vc_merges`` (``log_process.py``): some VCs are renamed into others (Venus's
   vcbIW and vc6YE become vcvGl, ...).
3. ``gpu_jobs`` (``utils.py``): ``gpu_num > 0``.
4. ``vc_configured`` (``utils.py`` with ``vc_dict_generator.py``): the job's VC is
   a key of the cluster's VC configuration: for Helios, every VC column of the
   cluster's ``cluster_gpu_number.csv`` less the ones the generator deletes,
   which are exactly the VCs of rules 1 and 2; for Philly, the 11 VCs of the
   artifact's ``data/philly_vc.csv``.
5. ``submitted_after_origin`` (``utils.py``): submitted at or after the trace's
   origin on its wall clock (Helios 2020-04-01 00:00:00, Philly 2017-10-01 00:00:00).
6. ``window`` (``simulator.py``, ``utils.py``): the seconds from the *first
   remaining job's* submission (per cluster; the artifact subtracts the first
   row's after sorting) lie within [window start - origin, window end - origin]
   (both ends in): Sept 2020-09-01 00:00:00 to 2020-09-26 23:59:00 for Helios,
   2017-10-01 00:00:00 to 2017-11-30 23:59:00 for Philly. So the window is
   anchored at the first job, not at the origin's clock time.

Times are compared on the trace's wall clock as written: the artifact turns
naive times into seconds with ``datetime.timestamp`` (the machine's zone),
which equals wall-clock differences wherever no DST change falls inside the
span (Helios's April to September 2020 in any zone; Philly's October and
November 2017 only outside North America, where DST ended on 5 November).
Nothing else is filtered: every state, every run time (a job of 0 s is kept;
the artifact's FIFO and QSSF loops release a job only when the clock reaches
its end after the tick it started, so such a job never ends there).

``helios-qssf-july`` takes the July window (2020-07-01 00:00:00 to 2020-07-31
23:59:00) that ``simulator.py`` offers for Helios; the artifact configures July
only for its unreleased Jupiter cluster, so the released clusters keep their
rules 1-4 and their capacity is read on 2020-07-01, the date it reads for July.
Philly jobs always take Philly's window (``simulator.py`` tests for 'Philly'
first).

Capacity (``vc_dict_generator.py``): each VC replays on ``nodes`` nodes of 8
GPUs (``--num_gpus_per_node``): Helios's GPUs of that VC on the configuration
day // 8 (Sept: 2020-09-01 for Saturn, 2020-09-10 for Venus, Earth and Uranus),
Philly's node counts of ``philly_vc.csv``. An export records it per VC, with the
``mltraces schedule --cluster`` spec that replays it. The generator writes its
Helios configurations as ``vc_dict.pkl`` while ``simulator.py`` and ``utils.py``
read ``vc_dict_homo.pkl`` (written for Philly only), so the released data step
does not prepare a Helios replay as it stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from mltraces.errors import MltracesError
from mltraces.interop.filters import Facts, Gather, Recipe, Rule

if TYPE_CHECKING:
    import duckdb

    from mltraces.jobmap import JobTable

ARTIFACT = "S-Lab-System-Group/HeliosArtifact@bdaae10"
_DIR = "framework/QSSF Service/"
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class ClusterRules:
    """One cluster's data step: VCs dropped, VCs merged, when its trace starts, its window."""

    drops: tuple[str, ...]
    merges: dict[str, str]  # VC -> the VC it becomes
    origin: str  # utils.py's start: second 0 of the trace
    sept_day: str | None  # the day vc_dict_generator reads its Sept capacity on


HELIOS_ORIGIN = "2020-04-01 00:00:00"
CLUSTERS = {
    "venus": ClusterRules(("vcEhP", "vcIya", "vcJLV", "vcJkd", "vcsBT"),
                          {"vcbIW": "vcvGl", "vc6YE": "vcvGl", "vcOhe": "vcKeu",
                           "vccJW": "vcKeu", "vcP2J": "vchA3"}, HELIOS_ORIGIN, "2020-09-10"),
    "earth": ClusterRules(("vcp4O", "vcvcM", "vcXrB", "vc7hD", "vcIya", "vc8Sj", "vcLJZ"),
                          {"vcxS0": "vc3sl"}, HELIOS_ORIGIN, "2020-09-10"),
    "saturn": ClusterRules(("vc7Bz", "vcHcQ", "vck1d", "vcj72", "vcIya", "vcygX", "vcxqr",
                            "vcsgw"), {}, HELIOS_ORIGIN, "2020-09-01"),
    "uranus": ClusterRules(("vc7Bz", "vczGr", "vciN1", "vcV7h", "vcRAl", "vcvcM", "vc1z2"),
                           {"vcVvI": "vcUV3", "vcxqr": "vcUV3", "vcsBT": "vcUV3",
                            "vcygX": "vcUV3", "vcHyk": "vcOlr", "vcRDh": "vc7hD",
                            "vcFsC": "vc7hD"}, HELIOS_ORIGIN, "2020-09-10"),
    "philly": ClusterRules(("795a4c", "51b7ef", "925e2b", "23dbec"), {}, "2017-10-01 00:00:00",
                           None),
}
#: data/philly_vc.csv: Philly's VCs and their nodes (8 GPUs each in the replay)
PHILLY_NODES = {"6214e9": 64, "7f04ca": 32, "11cb48": 16, "b436b2": 64, "ee9e8c": 64,
                "e13805": 16, "6c71a0": 32, "2869ce": 16, "ed69ec": 8, "103959": 8,
                "0e4a51": 32}
#: simulator.py's windows (first and last minute, both in)
WINDOWS = {"sept": ("2020-09-01 00:00:00", "2020-09-26 23:59:00"),
           "july": ("2020-07-01 00:00:00", "2020-07-31 23:59:00")}
PHILLY_WINDOW = ("2017-10-01 00:00:00", "2017-11-30 23:59:00")
#: the day vc_dict_generator reads a July configuration on (Jupiter's, the only one it has)
JULY_DAY = "2020-07-01"
CAPACITY_TABLE = "helios.gpu_capacity"


@dataclass(frozen=True)
class Context:
    """The VC configuration of each cluster: VC -> nodes on the configuration day (None: the
    VC is configured but has no GPUs listed that day)."""

    window: str
    nodes: dict[str, dict[str, int | None]]
    days: dict[str, str]


def _cluster_rules(frame: pd.DataFrame) -> pd.Series:
    """Each job's cluster, checked: the artifact knows these clusters only."""
    clusters = frame["cluster"].astype("string").str.lower()
    unknown = sorted(set(clusters.dropna()) - set(CLUSTERS)) + (
        ["(none)"] if clusters.isna().any() else [])
    if unknown:
        raise MltracesError(f"recipe helios-qssf: the Helios artifact prepares the clusters "
                            f"{', '.join(CLUSTERS)} only; this trace has {', '.join(unknown)} "
                            "(log_process.py: 'Wrong Cluster Name')")
    return clusters


def _not_dropped(frame: pd.DataFrame, facts: Facts) -> pd.Series:
    clusters = _cluster_rules(frame)
    dropped = pd.Series(False, index=frame.index)
    for name, rules in CLUSTERS.items():
        dropped |= (clusters == name) & frame["vc"].isin(rules.drops)
    return ~dropped


def _merged(frame: pd.DataFrame, facts: Facts) -> pd.DataFrame:
    clusters = _cluster_rules(frame)
    vc = frame["vc"].copy()
    for name, rules in CLUSTERS.items():
        mine = clusters == name
        if rules.merges and mine.any():
            vc[mine] = vc[mine].replace(rules.merges)
    return frame.assign(vc=vc)


def _configured(frame: pd.DataFrame, facts: Facts) -> pd.Series:
    context: Context = facts.context
    clusters = _cluster_rules(frame)
    keep = pd.Series(False, index=frame.index)
    for name in set(clusters.dropna()):
        if name not in context.nodes:
            raise MltracesError(f"recipe helios-qssf: no VC configuration for cluster {name} "
                                f"(its {CAPACITY_TABLE} rows)")
        keep |= (clusters == name) & frame["vc"].isin(list(context.nodes[name]))
    return keep


def _wall(frame: pd.DataFrame) -> pd.Series:
    """Submission on the trace's wall clock, naive, truncated to the second (as int() does)."""
    return frame["submit_time"].dt.tz_localize(None).dt.floor("s")


def _after_origin(frame: pd.DataFrame, facts: Facts) -> pd.Series:
    clusters = _cluster_rules(frame)
    origin = clusters.map({c: pd.Timestamp(r.origin) for c, r in CLUSTERS.items()})
    return _wall(frame) >= pd.to_datetime(origin)


def _first_per_cluster(frame: pd.DataFrame) -> dict[str, pd.Timestamp]:
    if frame.empty:
        return {}
    firsts = _wall(frame).groupby(_cluster_rules(frame)).min()
    return {str(c): t for c, t in firsts.items()}


def _earliest(parts: list[dict[str, pd.Timestamp]]) -> dict[str, pd.Timestamp]:
    out: dict[str, pd.Timestamp] = {}
    for part in parts:
        for cluster, moment in part.items():
            out[cluster] = min(moment, out.get(cluster, moment))
    return out


def _bounds(cluster: str, window: str) -> tuple[float, float]:
    """(begin, end) seconds from the trace's origin, as simulator.py and utils.py compute."""
    first, last = PHILLY_WINDOW if cluster == "philly" else WINDOWS[window]
    origin = pd.Timestamp(CLUSTERS[cluster].origin)
    return ((pd.Timestamp(first) - origin).total_seconds(),
            (pd.Timestamp(last) - origin).total_seconds())


def _in_window(frame: pd.DataFrame, facts: Facts) -> pd.Series:
    context: Context = facts.context
    clusters = _cluster_rules(frame)
    keep = pd.Series(False, index=frame.index)
    wall = _wall(frame)
    for cluster, first in (facts.gathered or {}).items():
        begin, end = _bounds(cluster, context.window)
        seconds = (wall - first).dt.total_seconds()
        keep |= (clusters == cluster) & seconds.between(begin, end, inclusive="both")
    return keep


def _tables(source: str) -> tuple[str, ...]:
    return (CAPACITY_TABLE,) if source == "helios" else ()


def _configuration_day(cluster: str, window: str) -> str:
    if window == "july":
        return JULY_DAY
    day = CLUSTERS[cluster].sept_day
    assert day is not None
    return day


def helios_configuration(con: duckdb.DuckDBPyConnection, window: str
                         ) -> tuple[dict[str, dict[str, int | None]], dict[str, str]]:
    """Per Helios cluster, its configured VCs (``cluster_gpu_number.csv``'s columns less the
    deleted ones) and their nodes on the configuration day (GPUs // 8), as
    vc_dict_generator.py computes them."""
    nodes: dict[str, dict[str, int | None]] = {}
    days: dict[str, str] = {}
    for cluster, rules in CLUSTERS.items():
        if cluster == "philly":
            continue
        day = _configuration_day(cluster, window)
        found = con.execute(
            f"SELECT vc, max(gpus) FILTER (WHERE date = CAST(? AS DATE)) FROM {CAPACITY_TABLE} "
            "WHERE cluster = ? GROUP BY vc ORDER BY vc", [day, cluster]).fetchall()
        deleted = set(rules.drops) | set(rules.merges)
        nodes[cluster] = {vc: None if gpus is None else int(gpus) // GPUS_PER_NODE
                          for vc, gpus in found if vc not in deleted}
        days[cluster] = day
    return nodes, days


def _context(window: str):
    def load(con: duckdb.DuckDBPyConnection | None, entry: JobTable | None) -> Context:
        nodes: dict[str, dict[str, int | None]] = {"philly": dict(PHILLY_NODES)}
        days = {"philly": "data/philly_vc.csv"}
        if entry is not None and entry.source == "helios":
            if con is None:
                raise MltracesError("recipe helios-qssf reads each Helios cluster's VCs from "
                                    f"{CAPACITY_TABLE}: give it a catalog connection")
            helios, helios_days = helios_configuration(con, window)
            nodes |= helios
            days |= helios_days
        return Context(window, nodes, days)
    return load


def _describe(context: Context, seen: set[tuple[Any, Any]]) -> dict:
    """The artifact's capacity of every VC of the clusters whose jobs were kept."""
    kept = {(str(c).lower(), v) for c, v in seen if c is not None}
    clusters = sorted({c for c, _ in kept})
    vcs = {}
    for cluster in clusters:
        for vc, nodes in sorted(context.nodes.get(cluster, {}).items()):
            jobs_kept = (cluster, vc) in kept
            vcs[f"{cluster}/{vc}"] = {
                "nodes": nodes, "gpus": None if nodes is None else nodes * GPUS_PER_NODE,
                "cluster_spec": None if not nodes else f"n{nodes}g{GPUS_PER_NODE}",
                "has_jobs": jobs_kept}
    return {"capacity": {
        "what": "each VC replays alone on its nodes of 8 GPUs (vc_dict_generator.py; "
                "simulator.py --num_gpus_per_node 8): mltraces schedule --trace NAME/vc/VC "
                "--cluster <cluster_spec> after mltraces import",
        "configuration_day": {c: context.days[c] for c in clusters if c in context.days},
        "vcs": vcs}}


def _recipe(name: str, window: str) -> Recipe:
    first, last = WINDOWS[window]
    return Recipe(
        name,
        f"Helios (SC'21) QSSF evaluation: the jobs its simulator replays per VC ({window.title()} "
        "window for Helios, Philly's own for Philly)",
        f"{ARTIFACT} {_DIR}data/log_process.py, data/vc_dict_generator.py, simulator.py, "
        "utils.py",
        (Rule("vc_drops", "the cluster's dropped VCs are removed (Venus vcEhP vcIya vcJLV vcJkd "
              "vcsBT; Earth vcp4O vcvcM vcXrB vc7hD vcIya vc8Sj vcLJZ; Saturn vc7Bz vcHcQ vck1d "
              "vcj72 vcIya vcygX vcxqr vcsgw; Uranus vc7Bz vczGr vciN1 vcV7h vcRAl vcvcM vc1z2; "
              "Philly 795a4c 51b7ef 925e2b 23dbec)", _not_dropped, where="data/log_process.py"),
         Rule("vc_merges", "VCs renamed into others (Venus vcbIW, vc6YE -> vcvGl; vcOhe, vccJW "
              "-> vcKeu; vcP2J -> vchA3; Earth vcxS0 -> vc3sl; Uranus vcVvI, vcxqr, vcsBT, "
              "vcygX -> vcUV3; vcHyk -> vcOlr; vcRDh, vcFsC -> vc7hD)", change=_merged,
              where="data/log_process.py"),
         Rule("gpu_jobs", "GPU jobs only (gpu_num > 0)", lambda f, _: f["num_gpu"] > 0,
              where="utils.py trace_process, trace_philly_process"),
         Rule("vc_configured", "the VC is configured: a VC column of the cluster's "
              "cluster_gpu_number.csv not deleted by the generator (Helios), one of the 11 VCs "
              "of data/philly_vc.csv (Philly)", _configured,
              where="utils.py; data/vc_dict_generator.py"),
         Rule("submitted_after_origin", "submitted at or after the trace's origin on its wall "
              "clock (Helios 2020-04-01 00:00:00, Philly 2017-10-01 00:00:00)", _after_origin,
              needs=("submit_time",), where="utils.py"),
         Rule("window", f"seconds from the cluster's first remaining submission within "
              f"[{first} - origin, {last} - origin] (Helios), [0, 2017-11-30 23:59:00 - origin] "
              "(Philly), both ends in, on the wall clock", _in_window, needs=("submit_time",),
              gather=Gather(_first_per_cluster, _earliest), where="simulator.py; utils.py")),
        tables=_tables, context=_context(window), describe=_describe)


HELIOS_QSSF = _recipe("helios-qssf", "sept")
HELIOS_QSSF_JULY = _recipe("helios-qssf-july", "july")

__all__ = ["CLUSTERS", "HELIOS_QSSF", "HELIOS_QSSF_JULY", "PHILLY_NODES", "WINDOWS",
           "helios_configuration"]
