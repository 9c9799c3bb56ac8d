"""The trace model: one recurring job on one GPU, compiled to numpy arrays.

The Zeus release has two traces. The *train trace* says, for each
(workload, batch size) and each repetition (``run``) of training, the epoch at
which the target metric was first reached (empty when it never was). The
*power trace* says, for each (workload, batch size, power limit), how long one
epoch takes and the GPU's average power meanwhile. They join on
(dataset, network, batch_size, optimizer).

Everything the simulator asks per step (epoch time and energy, which
repetitions exist, the profiling epoch, the best power limit for a given η) is
computed here once per (GPU, workload) with numpy, so the recurrence loop only
indexes Python lists and never touches pandas.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mltraces.errors import MltracesError

if TYPE_CHECKING:
    import pandas as pd

JOIN_KEYS = ["dataset", "network", "batch_size", "optimizer"]
TRAIN_COLUMNS = [*JOIN_KEYS, "learning_rate", "run", "target_metric", "target_epoch"]
POWER_COLUMNS = ["gpu", *JOIN_KEYS, "power_limit", "time_per_epoch", "average_power"]
GPUS = ("v100", "a40", "p100", "rtx6000")
NAME_COLUMNS = {"gpu", "dataset", "network", "optimizer"}
INT_COLUMNS = {"batch_size", "power_limit", "run"}
#: how errors name the two traces unless told otherwise (the catalog names its tables)
LABELS = ("train trace", "power trace")


class SimulationError(MltracesError):
    """The simulation cannot go on: unknown names, missing trace rows, a stuck job."""


@dataclass(frozen=True)
class Workload:
    """A recurring training job as the Zeus paper defines it.

    ``default_batch_size`` is b0, the batch size the user would pick; the
    simulation caps it at the largest batch size the GPU's power trace has.
    """

    dataset: str
    network: str
    optimizer: str
    target_metric: float
    max_epochs: int
    default_batch_size: int

    @property
    def name(self) -> str:
        """The workload's name on the command line: its dataset."""
        return self.dataset


#: The six workloads of the Zeus paper (Table 3), keyed by dataset.
WORKLOADS: dict[str, Workload] = {
    w.dataset: w
    for w in (
        Workload("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024),
        Workload("imagenet", "resnet50", "adadelta", 0.65, 100, 256),
        Workload("squad", "bert_base_uncased", "adamw", 84.0, 6, 32),
        Workload("librispeech", "deepspeech2", "adamw", 40.0, 16, 256),
        Workload("movielens-1m", "ncf", "adam", 0.41, 100, 1024),
        Workload("sentiment140", "bert_base_uncased", "adamw", 0.84, 10, 128),
    )
}


def get_workload(workload: str | Workload) -> Workload:
    """A workload by dataset name (or the object itself)."""
    if isinstance(workload, Workload):
        return workload
    try:
        return WORKLOADS[workload]
    except KeyError:
        raise SimulationError(
            f"unknown workload {workload!r}; choose one of {', '.join(WORKLOADS)} "
            "or pass a mltraces.simulation.Workload"
        ) from None


@dataclass(frozen=True, eq=False)
class JobTrace:
    """One workload on one GPU as arrays indexed by (batch size, power limit).

    Attributes:
        gpu: GPU name, e.g. ``"v100"``.
        workload: The job, with b0 already capped for this GPU.
        batch_sizes: Batch sizes present in both traces, ascending.
        power_limits: Power limits (W) profiled for any of those batch sizes, ascending.
        epoch_time: Seconds per epoch, shape (B, P); NaN where not profiled.
        epoch_power: Average watts during an epoch, shape (B, P); NaN where not profiled.
        run_epochs: Per batch size, the epoch each repetition reached the target
            (NaN: never), in trace order; one of them is drawn per run.
        max_power: The GPU's largest power limit, MaxPower in the cost metric.
    """

    gpu: str
    workload: Workload
    batch_sizes: tuple[int, ...]
    power_limits: tuple[int, ...]
    epoch_time: np.ndarray
    epoch_power: np.ndarray
    run_epochs: tuple[np.ndarray, ...]
    max_power: float
    _index: dict[int, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {b: i for i, b in enumerate(self.batch_sizes)})

    @property
    def default_batch_size(self) -> int:
        """b0 for this GPU."""
        return self.workload.default_batch_size

    @property
    def default_recurrences(self) -> int:
        """2·|B|·|P|, the paper's number of recurrences for this job."""
        return 2 * len(self.batch_sizes) * len(self.power_limits)

    def index(self, batch_size: int) -> int:
        """Row of ``batch_size`` in the arrays."""
        try:
            return self._index[batch_size]
        except KeyError:
            raise SimulationError(
                f"batch size {batch_size} is not in the {self.gpu} traces of "
                f"{self.workload.name}; choose one of {list(self.batch_sizes)}"
            ) from None

    @cached_property
    def epoch_energy(self) -> np.ndarray:
        """Joules per epoch, (B, P)."""
        return self.epoch_time * self.epoch_power

    @cached_property
    def profiled(self) -> np.ndarray:
        """Which (batch size, power limit) cells the power trace has, (B, P)."""
        return ~np.isnan(self.epoch_time)

    @cached_property
    def top_power_limit(self) -> np.ndarray:
        """Largest profiled power limit per batch size, (B,).

        The artifact normalises a batch size's per-epoch cost (to choose its
        power limit and to early-stop) by this value, not by the GPU's MaxPower;
        the two differ only where a batch size lacks the top limits.
        """
        limits = np.where(self.profiled, np.asarray(self.power_limits, float), -np.inf)
        return limits.max(axis=1)

    @cached_property
    def profiling_epoch(self) -> tuple[np.ndarray, np.ndarray]:
        """(seconds, joules) of the epoch that profiles every power limit, (B,) each.

        The epoch is split evenly across the profiled limits, so it costs the
        mean time and the mean energy of one epoch at each of them.
        """
        return np.nanmean(self.epoch_time, axis=1), np.nanmean(self.epoch_energy, axis=1)

    def epoch_cost(self, eta: float) -> np.ndarray:
        """Per-epoch cost (η·power + (1−η)·top limit)·time, (B, P); NaN where not profiled."""
        top = self.top_power_limit[:, None]
        return (eta * self.epoch_power + (1 - eta) * top) * self.epoch_time

    def expected_cost(self, eta: float) -> np.ndarray:
        """Expected cost of reaching the target at each (b, p), retries included, (B, P).

        With success probability q per run and no early stopping, a success costs
        its mean epochs and each of the (1−q)/q expected failures max_epochs.
        Infinite where no repetition succeeds or the cell was not profiled.
        """
        cap = self.workload.max_epochs
        per_epoch = (eta * self.epoch_power + (1 - eta) * self.max_power) * self.epoch_time
        out = np.full(per_epoch.shape, np.inf)
        for i, epochs in enumerate(self.run_epochs):
            ok = epochs[epochs <= cap]
            if len(ok) == 0:
                continue
            q = len(ok) / len(epochs)
            out[i] = per_epoch[i] * (ok.mean() + (1 - q) / q * cap)
        return np.where(self.profiled, out, np.inf)


class TraceSet:
    """The Zeus train trace plus the power traces of one or more GPUs.

    Build it from data frames (or mappings of column arrays) shaped like the
    upstream CSVs (:meth:`from_frames`), from a folder of those CSVs
    (:meth:`from_csv_dir`), or from the catalog (:func:`mltraces.workloads.recurring.load_traces`).
    :meth:`job` compiles one (GPU, workload) once. ``labels`` name the two traces in
    error messages (the catalog's reader names its tables).

    Row order in the train trace matters only for which repetition a given seed
    draws; trace order is kept so results match the Zeus artifact run for run.
    """

    def __init__(self, train: pd.DataFrame | Mapping[str, Any],
                 power: pd.DataFrame | Mapping[str, Any],
                 labels: tuple[str, str] = LABELS) -> None:
        _require_columns(train, TRAIN_COLUMNS, labels[0])
        _require_columns(power, POWER_COLUMNS, labels[1])
        self._train = _arrays(train, TRAIN_COLUMNS)
        self._power = _arrays(power, POWER_COLUMNS)
        _check_values(self._train, self._power, labels)
        self._jobs: dict[tuple[str, Workload], JobTrace] = {}

    @cached_property
    def train(self) -> pd.DataFrame:
        """The train trace's columns as a pandas frame (built on first use)."""
        import pandas as pd

        return pd.DataFrame(self._train)

    @cached_property
    def power(self) -> pd.DataFrame:
        """The power traces' columns as a pandas frame (built on first use)."""
        import pandas as pd

        return pd.DataFrame(self._power)

    @property
    def train_arrays(self) -> dict[str, np.ndarray]:
        """The train trace's columns in the simulator's form (names as str objects)."""
        return self._train

    @property
    def power_arrays(self) -> dict[str, np.ndarray]:
        """The power traces' columns in the simulator's form."""
        return self._power

    @classmethod
    def from_arrays(cls, train: Mapping[str, np.ndarray], power: Mapping[str, np.ndarray],
                    labels: tuple[str, str] = LABELS) -> TraceSet:
        """From columns already in the simulator's form (:attr:`train_arrays`,
        :attr:`power_arrays`; how a saved set is restored)."""
        traces = cls.__new__(cls)
        traces._train = {name: train[name] for name in TRAIN_COLUMNS}
        traces._power = {name: power[name] for name in POWER_COLUMNS}
        _check_values(traces._train, traces._power, labels)
        traces._jobs = {}
        return traces

    @classmethod
    def from_frames(
        cls, train: pd.DataFrame, power: pd.DataFrame, gpu: str | None = None
    ) -> TraceSet:
        """From frames with the CSV columns; ``gpu`` labels a power frame without a gpu column."""
        if "gpu" not in power.columns:
            if gpu is None:
                raise SimulationError("the power frame has no 'gpu' column: pass gpu='v100' etc.")
            power = power.assign(gpu=gpu)
        return cls(train, power)

    @classmethod
    def from_csv_dir(cls, folder: str | Path, gpus: Iterable[str] = GPUS) -> TraceSet:
        """From ``summary_train.csv`` and ``summary_power_{gpu}.csv`` in ``folder``."""
        import pandas as pd

        folder = Path(folder)
        train = pd.read_csv(folder / "summary_train.csv")
        powers = [
            pd.read_csv(folder / f"summary_power_{gpu}.csv").assign(gpu=gpu)
            for gpu in gpus
            if (folder / f"summary_power_{gpu}.csv").is_file()
        ]
        if not powers:
            raise SimulationError(f"no summary_power_{{gpu}}.csv in {folder}")
        return cls(train, pd.concat(powers, ignore_index=True))

    @property
    def gpus(self) -> list[str]:
        """GPUs with a power trace, in first-seen order."""
        return list(dict.fromkeys(self._power["gpu"]))

    def job(self, gpu: str, workload: str | Workload) -> JobTrace:
        """The compiled trace of ``workload`` on ``gpu`` (cached)."""
        spec = get_workload(workload)
        key = (gpu, spec)
        if key not in self._jobs:
            self._jobs[key] = _compile(self._train, self._power, gpu, spec)
        return self._jobs[key]


def _arrays(table: pd.DataFrame | Mapping[str, Any], columns: list[str]
            ) -> dict[str, np.ndarray]:
    """Columns as numpy arrays: names as str objects (optimizers lower-cased), numbers
    as int or float (missing values, e.g. a never-reached target epoch, as NaN).

    ``table`` is a pandas frame or a mapping of arrays (DuckDB's ``fetchnumpy()``,
    whose missing values arrive as masked arrays)."""
    out: dict[str, np.ndarray] = {}
    for name in columns:
        column = table[name]
        if name in NAME_COLUMNS:
            text = [str(v) for v in np.asarray(column, dtype=object)]
            if name == "optimizer":
                text = [v.lower() for v in text]
            out[name] = np.array(text, dtype=object)
        elif name in INT_COLUMNS:
            out[name] = np.asarray(column, dtype=np.int64)
        else:
            values = np.ma.masked_invalid(np.ma.asarray(column, dtype=float))
            out[name] = np.ma.filled(values, np.nan)
    return out


def _positive(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values > 0)


def _at_least_one(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values >= 1)


#: (trace: 0 train, 1 power; column, what a usable value is, test) for the values the cost
#: model divides by or multiplies with; a never-reached target (missing epoch) is fine
_USABLE = (
    (1, "time_per_epoch", "a positive number of seconds", _positive),
    (1, "average_power", "a positive number of watts", _positive),
    (1, "power_limit", "a positive number of watts", _positive),
    (1, "batch_size", "at least 1", _at_least_one),
    (0, "batch_size", "at least 1", _at_least_one),
    (0, "target_epoch", "at least 1, or missing", lambda v: np.isnan(v) | _at_least_one(v)),
)


def _check_values(train: dict[str, np.ndarray], power: dict[str, np.ndarray],
                  labels: tuple[str, str]) -> None:
    """Refuse values the cost model cannot use (a zero-second epoch divides by zero, a
    negative one pays energy back), naming the trace (``labels``) and its first such row."""
    for trace, column, usable, test in _USABLE:
        columns, table = (train, power)[trace], labels[trace]
        values = columns[column].astype(float)
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~test(values))
        if len(bad):
            row = bad[0]
            where = ", ".join(f"{k} {columns[k][row]}" for k in ("gpu", *JOIN_KEYS, "power_limit")
                              if k in columns and k != column)
            raise SimulationError(
                f"{table}: {column} must be {usable}; {len(bad)} row(s) are not, the first "
                f"({where}) has {values[row]:g}"
            )


def _compile(
    train: dict[str, np.ndarray], power: dict[str, np.ndarray], gpu: str, spec: Workload
) -> JobTrace:
    on_gpu = power["gpu"] == gpu
    if not on_gpu.any():
        known = ", ".join(dict.fromkeys(power["gpu"]))
        raise SimulationError(f"no power trace for GPU {gpu!r}; known GPUs: {known}")
    in_power = on_gpu & _matches(power, spec)
    in_train = _matches(train, spec) & np.isclose(train["target_metric"], spec.target_metric)
    sizes = sorted(set(train["batch_size"][in_train]) & set(power["batch_size"][in_power]))
    if not sizes:
        raise SimulationError(
            f"the {gpu} traces have no rows for {spec.name} "
            f"({spec.network}, {spec.optimizer}, target {spec.target_metric})"
        )
    largest = power["batch_size"][on_gpu & (power["dataset"] == spec.dataset)].max()
    spec = replace(spec, default_batch_size=int(min(spec.default_batch_size, largest)))
    if spec.default_batch_size not in sizes:
        raise SimulationError(
            f"default batch size {spec.default_batch_size} of {spec.name} is not in the "
            f"{gpu} traces; choose one of {sizes}"
        )
    in_power &= np.isin(power["batch_size"], sizes)
    limits = sorted(int(p) for p in set(power["power_limit"][in_power]))
    time, watts = _power_grid({k: v[in_power] for k, v in power.items()}, sizes, limits)
    epochs = train["target_epoch"][in_train]
    train_sizes = train["batch_size"][in_train]
    return JobTrace(
        gpu=gpu,
        workload=spec,
        batch_sizes=tuple(int(b) for b in sizes),
        power_limits=tuple(limits),
        epoch_time=time,
        epoch_power=watts,
        run_epochs=tuple(epochs[train_sizes == b] for b in sizes),
        max_power=float(power["power_limit"][on_gpu].max()),
    )


def _matches(columns: dict[str, np.ndarray], spec: Workload) -> np.ndarray:
    return (
        (columns["dataset"] == spec.dataset)
        & (columns["network"] == spec.network)
        & (columns["optimizer"] == spec.optimizer.lower())
    )


def _power_grid(
    rows: dict[str, np.ndarray], sizes: list[int], limits: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(B, P) arrays of epoch time and average power; NaN where absent, duplicates averaged."""
    i = np.searchsorted(sizes, rows["batch_size"])
    j = np.searchsorted(limits, rows["power_limit"])
    shape = (len(sizes), len(limits))
    count, time, watts = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    np.add.at(count, (i, j), 1)
    np.add.at(time, (i, j), rows["time_per_epoch"])
    np.add.at(watts, (i, j), rows["average_power"])
    with np.errstate(invalid="ignore"):
        return time / count, watts / count


def _require_columns(table: pd.DataFrame | Mapping[str, Any], columns: list[str], what: str
                     ) -> None:
    present = set(table) if isinstance(table, Mapping) else set(table.columns)
    missing = [c for c in columns if c not in present]
    if missing:
        raise SimulationError(
            f"the {what} lacks columns {missing}; expected {columns} (the upstream CSV layout)"
        )
