"""Throughput profiles: iterations per second by model, global batch size and GPU count.

ElasticFlow's artifact ships one CSV per model (``throughputs_A100/<model>.csv``):
rows are global batch sizes, columns GPU counts (1, 2, 4, … 64), values
iterations per second. A GPU count is *allowed* for a (model, batch) when its
cell holds a positive number; an empty cell, ``nan`` or ``0`` means the model
cannot run at that scale.

Two per-job GPU caps exist in the reference simulator and both are here:
:func:`plain_cap` (largest allowed count ≤ 64 and ≤ the batch size; EDF,
Gandiva, Tiresias, Themis) and :func:`elasticflow_cap` (a per-model table,
ElasticFlow only, with one table for A100 and another for T4). So a
:class:`Profiles` knows which GPU it was measured on (``gpu_type``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from mltraces.scheduling.errors import SchedulingError


@dataclass(frozen=True)
class Curve:
    """Throughput of one (model, batch size) by GPU count.

    ``columns`` keeps every GPU count of the profile in file order (the
    reference walks them in that order); ``speed`` holds the allowed ones.
    """

    model: str
    batch_size: int
    columns: tuple[int, ...]
    speed: Mapping[int, float]

    @cached_property
    def allowed(self) -> tuple[int, ...]:
        """GPU counts this (model, batch) can run on, ascending (computed once: policies ask
        per job)."""
        return tuple(n for n in self.columns if n in self.speed)

    def levels(self, cap: int) -> tuple[int, ...]:
        """Allowed GPU counts up to ``cap``: the steps an elastic policy scales through."""
        return tuple(n for n in self.allowed if n <= cap)

    def scaling_levels(self, cap: int) -> tuple[int, ...]:
        """The levels up to ``cap``, else the smallest allowed count; an error when the
        profile has no usable speed at all (its values are 0 or missing: the job could
        never run)."""
        levels = self.levels(cap) or self.allowed[:1]
        if not levels:
            raise SchedulingError(
                f"the throughput profile of {self.model!r} at batch size {self.batch_size} has "
                "no usable speed at any GPU count (every value is 0 or missing), so its jobs "
                "could never run; drop them or give the profile a positive speed"
            )
        return levels


#: the GPU types the artifact measured, each in its folder ``throughputs_<type>``
GPU_TYPES = ("A100", "T4")


@dataclass
class Profiles:
    """All throughput curves, keyed by (model, batch size), and the GPU they were measured on.

    ``gpu_type`` matters beyond the numbers: ElasticFlow's cap per model differs
    between A100 and T4 (:func:`elasticflow_cap`).
    """

    curves: dict[tuple[str, int], Curve] = field(default_factory=dict)
    gpu_type: str = "A100"

    def __post_init__(self) -> None:
        if self.gpu_type not in GPU_TYPES:
            raise SchedulingError(
                f"unknown GPU type {self.gpu_type!r}; the artifact measured {', '.join(GPU_TYPES)}"
            )

    def curve(self, model: str, batch_size: int) -> Curve:
        """The curve of one (model, batch); the error lists what is known."""
        try:
            return self.curves[(model, int(batch_size))]
        except KeyError:
            known = ", ".join(f"{m}@{b}" for m, b in sorted(self.curves))
            raise SchedulingError(
                f"no throughput profile for model {model!r} at global batch size {batch_size}; "
                f"known: {known or 'none'} (load the artifact's throughputs_A100 folder with "
                "load_profiles())"
            ) from None

    @property
    def models(self) -> list[str]:
        return sorted({m for m, _ in self.curves})

    def to_frame(self):
        """One row per (model, batch_size, gpus): a tidy table for SQL or plots."""
        import pandas as pd

        rows = [
            (c.model, c.batch_size, n, s)
            for c in self.curves.values()
            for n, s in sorted(c.speed.items())
        ]
        return pd.DataFrame(rows, columns=["model", "batch_size", "gpus", "iterations_per_s"])

    @classmethod
    def from_frame(cls, frame, gpu_type: str = "A100") -> Profiles:
        """Build from a tidy table with model, batch_size, gpus, iterations_per_s."""
        missing = {"model", "batch_size", "gpus", "iterations_per_s"} - set(frame.columns)
        if missing:
            raise SchedulingError(
                f"throughput table lacks columns {sorted(missing)}; expected model, "
                "batch_size, gpus, iterations_per_s (one row per point)"
            )
        grouped: dict[tuple[str, int], dict[int, float]] = {}
        for model, batch, gpus, speed in frame[
            ["model", "batch_size", "gpus", "iterations_per_s"]
        ].itertuples(index=False):
            grouped.setdefault((str(model), int(batch)), {})[int(gpus)] = float(speed)
        profiles = cls(gpu_type=gpu_type)
        for (model, batch), points in grouped.items():
            columns = tuple(sorted(points))
            speed = {n: s for n, s in points.items() if _usable(s)}
            profiles.curves[(model, batch)] = Curve(model, batch, columns, speed)
        return profiles


def _usable(value: float) -> bool:
    return math.isfinite(value) and value > 0


def _parse(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def read_profile_csv(path: str | Path, model: str | None = None) -> list[Curve]:
    """Curves of one artifact CSV (``global_batch_size,1,2,4,…``); model = file stem."""
    path = Path(path)
    model = model or path.stem
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header or header[0].strip() != "global_batch_size":
            raise SchedulingError(
                f"{path}: first column must be global_batch_size, got {header!r}; "
                "is this a throughputs_A100/<model>.csv file?"
            )
        columns = tuple(int(h) for h in header[1:])
        curves = []
        for row in reader:
            if not row or not row[0].strip():
                continue
            cells = [_parse(c) for c in row[1:]] + [math.nan] * (len(columns) - len(row) + 1)
            speed = {n: v for n, v in zip(columns, cells, strict=False) if _usable(v)}
            curves.append(Curve(model, int(row[0]), columns, speed))
    return curves


def load_profiles(
    folder: str | Path | Iterable[str | Path], gpu_type: str | None = None
) -> Profiles:
    """Every ``*.csv`` of an artifact throughput folder (or an explicit list of files).

    ``gpu_type`` defaults to what the artifact's folder name says
    (``throughputs_T4`` → ``"T4"``), else ``"A100"``, the artifact's default.
    """
    if gpu_type is None:
        gpu_type = _gpu_type_of(folder)
    if isinstance(folder, (str, Path)):
        folder = Path(folder)
        if not folder.is_dir():
            raise SchedulingError(
                f"throughput folder {folder} does not exist; point at the artifact's "
                "ElasticFlow/scheduler/throughputs_A100"
            )
        files: Iterable[str | Path] = sorted(folder.glob("*.csv"))
    else:
        files = folder
    profiles = Profiles(gpu_type=gpu_type)
    for file in files:
        for curve in read_profile_csv(file):
            profiles.curves[(curve.model, curve.batch_size)] = curve
    if not profiles.curves:
        raise SchedulingError(f"no throughput CSV files found in {folder}")
    return profiles


def _gpu_type_of(folder: str | Path | Iterable[str | Path]) -> str:
    """The GPU type an artifact folder name ``throughputs_<type>`` states, else A100."""
    if isinstance(folder, (str, Path)):
        prefix, _, suffix = Path(folder).name.partition("_")
        if prefix == "throughputs" and suffix in GPU_TYPES:
            return suffix
    return "A100"


def plain_cap(curve: Curve) -> int:
    """Largest allowed count ≤ 64 and ≤ the batch size (the reference's default cap).

    The reference takes the largest column whose cell is not ``nan`` (an empty
    cell counts); for every A100 curve the batch-size bound decides first, so
    the two agree there. Here the cap is always a count the job can run on.
    """
    bound = min(64, curve.batch_size)
    return max((n for n in curve.allowed if n <= bound), default=1)


def elasticflow_cap(model: str, batch_size: int, gpu_type: str = "A100") -> int:
    """ElasticFlow's per-model maximum GPU count (the artifact's ``models.get_max_gpu``).

    The artifact keeps one table per ``--gpu_type``; on T4 (the Pollux trace of
    Fig. 8(a)) NCF runs on 1 GPU, YOLOv3 on up to 4, BERT and CIFAR-10 on up to 16.
    """
    if gpu_type == "T4":
        return _t4_cap(model, batch_size)
    if model == "deepspeech2":
        return batch_size
    if model == "gpt2" and batch_size in (128, 256):
        return 16 if batch_size == 128 else 32
    if model == "bert":
        return 8 if batch_size == 64 else 16
    if model == "inception3" and batch_size in (64, 128):
        return 16 if batch_size == 64 else 32
    if model in ("resnet50", "vgg16") and batch_size == 64:
        return 32
    return min(batch_size, 64)


def _t4_cap(model: str, batch_size: int) -> int:
    """ElasticFlow's cap on T4: a table by model, every other model 64."""
    if model in ("bert", "cifar10"):
        return 16
    if model == "deepspeech2" and batch_size == 320:
        return 32
    return {"yolov3": 4, "ncf": 1}.get(model, 64)
