"""Synthetic job traces with the distributions of ElasticFlow's trace generator.

ElasticFlow's Figs. 9, 10 and 11 run on traces from the artifact's
``trace_generator/generate_trace.py``. :func:`generate_trace` draws the same
jobs, number for number, from the same random streams:

* four ``random.Random`` streams seeded ``seed`` … ``seed + 3``: the model and
  batch size (``job``), the inter-arrival gaps, the durations and the GPU counts;
* per job, in this order: the GPU count (``r`` = U(0, 1): 1 GPU below 0.83,
  2 up to 0.86, 4 up to 0.89, 8 up to 0.99, else 16; capped at ``max_gpus``),
  the (model, batch size) picked uniformly from :data:`JOB_TABLE`, the duration
  (60·10^U(2.5, 4) s if a uniform draw is ≥ 0.8, else 60·10^U(1, 2.5) s), and,
  from the second job on, an exponential gap with mean ``lam`` s after the
  previous arrival (the first job arrives at 0);
* iterations = duration × the profile's iterations/s at that GPU count;
* deadline = arrival + int(U(min_ddl, max_ddl) × duration), then a best-effort
  flag when U(0, 1) < ``best_effort``, both from a fifth stream.

The artifact draws the deadlines and best-effort flags from Python's unseeded
module-level ``random``, so its Figs. 9 and 11 traces differ from run to run;
here that fifth stream is ``random.Random(deadline_seed)`` (default
``seed + 4``), so every trace is reproducible. With ``min_ddl == max_ddl`` (Fig.
10: ``--min_ddl=1.5``, ``max_ddl`` left at 1.5) the draw cannot move the
deadline and the trace is the artifact's exactly. The output has the
artifact's CSV columns and integer truncation (its ``%d``), so it can be
written out and fed to the artifact's scheduler unchanged.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from mltraces.scheduling.errors import SchedulingError
from mltraces.scheduling.profiles import Profiles

#: (model, global batch size) in the artifact's ``job_table.py`` order (the draw is an index)
JOB_TABLE: tuple[tuple[str, int], ...] = (
    ("resnet50", 64), ("resnet50", 128), ("resnet50", 256),
    ("vgg16", 64), ("vgg16", 128), ("vgg16", 256),
    ("inception3", 64), ("inception3", 128),
    ("gpt2", 128), ("gpt2", 256),
    ("bert", 128), ("bert", 64),
    ("deepspeech2", 64), ("deepspeech2", 32),
)  # fmt: skip
#: GPU counts by their share of U(0, 1): below 0.83 one GPU, then up to each bound (inclusive)
GPU_SHARES: tuple[tuple[float, int], ...] = ((0.86, 2), (0.89, 4), (0.99, 8))
#: columns of the artifact's generated CSV (what its scheduler reads)
CSV_COLUMNS = ("job_id", "submit_time", "iteration", "model_name", "ddl", "batch_size",
               "num_gpu", "duration", "best_effort")  # fmt: skip


@dataclass(frozen=True)
class TraceSpec:
    """The generator's knobs (the artifact's ``generate_trace.py`` options, same names).

    Attributes:
        num_jobs: Jobs to draw.
        lam: Mean inter-arrival time in seconds (0: every job at 0).
        seed: Seed of the job streams (the artifact's ``--seed``, default 0).
        min_ddl, max_ddl: Deadline factor bounds: deadline = arrival +
            int(U(min_ddl, max_ddl) × duration).
        best_effort: Share of best-effort jobs (the artifact's ``--best_effort_percentage``).
        deadline_seed: Seed of the deadline and best-effort stream (the artifact
            leaves it unseeded); ``None`` means ``seed + 4``.
        max_gpus: Largest GPU count a job asks for (the artifact's ``--max_scale_factor``).
    """

    num_jobs: int
    lam: float = 0.0
    seed: int = 0
    min_ddl: float = 0.5
    max_ddl: float = 1.5
    best_effort: float = 0.0
    deadline_seed: int | None = None
    max_gpus: int = 16

    def __post_init__(self) -> None:
        from mltraces.config import max_generated_jobs

        problems = []
        if self.num_jobs < 1:
            problems.append(f"num_jobs={self.num_jobs} (at least 1)")
        cap = max_generated_jobs()
        if self.num_jobs > cap:
            problems.append(f"num_jobs={self.num_jobs:,} (at most {cap:,}: set "
                            "MLTRACES_MAX_GENERATED_JOBS to allow more)")
        if not 0 <= self.lam < math.inf:
            problems.append(f"lam={self.lam} (a finite number of seconds >= 0)")
        if not 0 <= self.min_ddl <= self.max_ddl < math.inf:
            problems.append(f"min_ddl={self.min_ddl}, max_ddl={self.max_ddl} "
                            "(0 <= min_ddl <= max_ddl)")
        if not 0 <= self.best_effort <= 1:
            problems.append(f"best_effort={self.best_effort} (a share in [0, 1])")
        if self.max_gpus < 1:
            problems.append(f"max_gpus={self.max_gpus} (at least 1)")
        if problems:
            raise SchedulingError(f"bad trace generator setting: {'; '.join(problems)}")

    @classmethod
    def parse(cls, text: str) -> TraceSpec:
        """``"num_jobs=100,lam=1500,min_ddl=1.5,seed=1"`` → a spec (the CLI's ``--generate``)."""
        kinds = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            key, sep, raw = item.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or key not in kinds:
                raise SchedulingError(f"--generate: {item!r} is not KEY=VALUE with KEY one of "
                                      f"{', '.join(kinds)}")
            number = int if "int" in str(kinds[key]) else float
            try:
                values[key] = number(raw.strip())
            except ValueError:
                raise SchedulingError(f"--generate: {key}={raw.strip()!r} is not "
                                      f"{'an integer' if number is int else 'a number'}") from None
        if "num_jobs" not in values:
            raise SchedulingError(f"--generate {text!r}: num_jobs is required "
                                  "(e.g. num_jobs=100,lam=1500,min_ddl=1.5,seed=1)")
        return cls(**values)

    @property
    def label(self) -> str:
        """A short trace name: the settings that differ from the defaults."""
        default = TraceSpec(1)
        shown = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                 for k, v in asdict(self).items()
                 if k == "num_jobs" or v != getattr(default, k)]
        return "generated(" + ",".join(shown) + ")"


def gpu_count(r: float, max_gpus: int) -> int:
    """The GPU count for the uniform draw ``r`` (the artifact's scale-factor shares)."""
    if r < 0.83:
        return 1
    for upper, gpus in GPU_SHARES:
        if r <= upper:
            return min(gpus, max_gpus)
    return min(16, max_gpus)


def _duration(rng: random.Random) -> float:
    """Seconds: 60·10^U(2.5, 4) with probability 0.2, else 60·10^U(1, 2.5)."""
    if rng.random() >= 0.80:
        return 60 * (10 ** rng.uniform(2.5, 4))
    return 60 * (10 ** rng.uniform(1, 2.5))


def _speed(profiles: Profiles, model: str, batch_size: int, gpus: int) -> float:
    curve = profiles.curve(model, batch_size)
    if gpus not in curve.speed:
        raise SchedulingError(f"the throughput profile of {model} at batch size {batch_size} "
                              f"has no positive value for {gpus} GPUs; the generator needs one")
    return curve.speed[gpus]


def generate_trace(profiles: Profiles, spec: TraceSpec | None = None, /,
                   **settings: Any) -> Any:
    """Draw a job trace as ElasticFlow's generator does (see the module docstring).

    Args:
        profiles: Throughput profiles (the artifact's A100 ones: Figs. 9-11).
        spec: A :class:`TraceSpec`, or give its fields as keywords
            (``generate_trace(profiles, num_jobs=100, lam=1500, min_ddl=1.5, seed=1)``).

    Returns:
        A pandas DataFrame with the artifact's columns (:data:`CSV_COLUMNS`),
        integers as its CSV writes them; ``mltraces.scheduling`` replays it
        as it is, and ``frame.to_csv(path, index=False)`` is a file the
        artifact's scheduler reads.
    """
    import pandas as pd

    if spec is None:
        spec = TraceSpec(**settings)
    elif settings:
        raise TypeError("give a TraceSpec or keywords, not both")
    job_rng, gap_rng = random.Random(spec.seed), random.Random(spec.seed + 1)
    duration_rng, gpu_rng = random.Random(spec.seed + 2), random.Random(spec.seed + 3)
    deadline_rng = random.Random(spec.seed + 4 if spec.deadline_seed is None
                                 else spec.deadline_seed)
    rows = []
    arrival = 0.0
    for i in range(spec.num_jobs):
        gpus = gpu_count(gpu_rng.uniform(0, 1), spec.max_gpus)
        model, batch_size = job_rng.choice(JOB_TABLE)
        duration = _duration(duration_rng)
        iterations = duration * _speed(profiles, model, batch_size, gpus)
        if i and spec.lam > 0:
            arrival += -math.log(1.0 - gap_rng.random()) * spec.lam
            _check_time(arrival, "arrival", i, spec)
        slack = deadline_rng.uniform(spec.min_ddl, spec.max_ddl) * duration
        _check_time(arrival + slack, "deadline", i, spec)
        deadline = arrival + int(slack)
        best_effort = int(deadline_rng.uniform(0, 1) < spec.best_effort)
        rows.append((i, int(arrival), int(iterations), model, int(deadline), batch_size, gpus,
                     int(duration), best_effort))
    return pd.DataFrame(rows, columns=list(CSV_COLUMNS))


#: the latest time a generated trace may hold: whole seconds a float keeps exactly (2**53)
MAX_SECONDS = float(2**53)


def _check_time(seconds: float, what: str, index: int, spec: TraceSpec) -> None:
    """Refuse a time past :data:`MAX_SECONDS` (lam or max_ddl of 1e300 reach infinity)."""
    if not seconds <= MAX_SECONDS:
        setting = (f"lam={spec.lam:g}" if what == "arrival"
                   else f"min_ddl={spec.min_ddl:g}, max_ddl={spec.max_ddl:g}")
        raise SchedulingError(
            f"--generate: job {index}'s {what} would be {seconds:.3g} s, past {MAX_SECONDS:.3g} "
            f"s (about 285 million years: the latest time replays keep exactly); {setting} is "
            "too large")


def generate_from(profiles: Profiles, settings: TraceSpec | str | Mapping[str, Any]) -> Any:
    """:func:`generate_trace` from a spec, its ``KEY=VALUE,...`` text or a mapping."""
    if isinstance(settings, str):
        settings = TraceSpec.parse(settings)
    elif not isinstance(settings, TraceSpec):
        settings = TraceSpec(**settings)
    return generate_trace(profiles, settings)
