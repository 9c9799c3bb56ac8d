"""Seeded annotations: what a simulator's format needs and a trace does not record.

A cluster trace records when a job came, how long it ran and how many GPUs it
had; the simulators also want a model, a batch size, an amount of work and
sometimes a deadline. Each format's annotation follows the rule its own
artifact uses to make its workloads, stated where it is implemented, and draws
from one seeded generator (``numpy.random.default_rng(seed)``), so an export is
reproducible from its provenance record. Every function returns the annotated
jobs and the count of jobs dropped per reason (a GPU count with no profile).

Facts used (read in each artifact; the code here is ours):

- ElasticFlow (``trace_generator/generate_trace_from_itp.py`` and its ``utils``,
  ``job_table``): a job takes a (model, batch size) drawn uniformly from its 14
  templates among those whose batch size is at least the job's GPU count; the
  A100 profile of that model, batch size and GPU count gives the iterations,
  ``int(duration x iterations per second)``; a GPU count without a profile drops
  the job; deadline = submission + ``int(U(0.5, 1.5) x duration)``.
- Pollux (``simulator/workload.py``): the application follows the job's GPU time
  (under 1 GPU-hour: cifar10 or ncf, drawn; under 10: deepspeech2, half of them
  bert, drawn; under 100: yolov3; else imagenet). Pollux then draws replicas and
  batch size from configurations computed from its application profiles, which
  mltraces does not ship; we keep the trace's GPU count as the replicas (the
  alternative the script leaves commented out) and the application's smallest
  profiled batch size times the replicas, within its profiled range.
- Gavel (``scheduler/utils.py`` ``generate_job``): a job type drawn uniformly among
  those measured at the job's GPU count (multi-GPU ones only from distributed
  types), steps = duration x its isolated V100 throughput at that GPU count, from
  the throughputs file the user names (Gavel's ``simulation_throughputs.json``).
- Tiresias (``simulator/README.md``, ``models.py``): its schedulers never read the
  iterations; the model names one of its nine tensor profiles, drawn uniformly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mltraces.errors import MltracesError

#: ElasticFlow's job templates (trace_generator/job_table.py): (model, global batch size)
ELASTICFLOW_TEMPLATES: tuple[tuple[str, int], ...] = (
    ("resnet50", 64), ("resnet50", 128), ("resnet50", 256), ("vgg16", 64), ("vgg16", 128),
    ("vgg16", 256), ("inception3", 64), ("inception3", 128), ("gpt2", 128), ("gpt2", 256),
    ("bert", 128), ("bert", 64), ("deepspeech2", 64), ("deepspeech2", 32))
#: the deadline slack ElasticFlow draws: deadline = submit + int(U(low, high) x duration)
ELASTICFLOW_SLACK = (0.5, 1.5)
#: the profiles its trace generator reads by default (--throughputs_dir throughputs_A100)
ELASTICFLOW_GPU_TYPE = "A100"

#: Tiresias's tensor profiles (simulator/models.py); any other name becomes inception3
TIRESIAS_MODELS = ("vgg19", "vgg16", "vgg11", "alexnet", "resnet152", "resnet101", "resnet50",
                   "inception4", "inception3")

#: Pollux's applications: the batch sizes it profiled (simulator/traces/<app>/validation-*.csv)
POLLUX_BATCH_SIZES: Mapping[str, tuple[int, ...]] = {
    "bert": (12, 24, 48, 96, 192, 384),
    "cifar10": (128, 256, 512, 1024, 2048, 4096),
    "deepspeech2": (20, 40, 80, 160, 320, 640),
    "imagenet": (200, 400, 800, 1600, 3200, 6400, 12800),
    "ncf": (256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    "yolov3": (8, 16, 32, 64, 128, 256, 512),
}
#: GPU-hour bands of simulator/workload.py: (upper bound, application or the two drawn from)
POLLUX_BANDS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (1.0, ("cifar10", "ncf")), (10.0, ("deepspeech2", "bert")), (100.0, ("yolov3",)),
    (math.inf, ("imagenet",)))


@dataclass
class Annotated:
    """Annotated jobs, and how many were dropped for which reason."""

    frame: pd.DataFrame
    dropped: dict[str, int] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)


def whole_seconds(values: pd.Series) -> pd.Series:
    """Seconds as the integers the formats write (nearest second)."""
    return values.astype(float).round().astype("int64")


def _drop(frame: pd.DataFrame, keep: pd.Series, dropped: dict[str, int], reason: str
          ) -> pd.DataFrame:
    gone = int((~keep).sum())
    if gone:
        dropped[reason] = dropped.get(reason, 0) + gone
    return frame[keep]


def has_annotations(frame: pd.DataFrame) -> bool:
    """True when every job already carries ElasticFlow's model, batch, iterations, deadline."""
    columns = ("model", "batch_size", "iterations", "deadline_s")
    return bool(len(frame)) and all(frame[c].notna().all() for c in columns)


def elasticflow(frame: pd.DataFrame, profiles: pd.DataFrame, seed: int) -> Annotated:
    """ElasticFlow's annotation (see the module docstring) of jobs with ``submit``/``duration``
    in whole seconds and an integer ``gpus``; ``profiles`` has model, batch_size, num_gpus,
    iterations_per_second (the A100 rows of ``elasticflow.throughputs``)."""
    rng = np.random.default_rng(seed)
    dropped: dict[str, int] = {}
    rate = {(m, int(b), int(g)): float(r) for m, b, g, r in profiles[
        ["model", "batch_size", "num_gpus", "iterations_per_second"]].itertuples(index=False)}
    jobs = frame.reset_index(drop=True)
    choice = np.full(len(jobs), -1)
    for gpus, rows in jobs.groupby("gpus").groups.items():
        eligible = [i for i, (_, batch) in enumerate(ELASTICFLOW_TEMPLATES) if batch >= gpus]
        if eligible:
            choice[np.asarray(rows)] = rng.choice(eligible, size=len(rows))
    models = [ELASTICFLOW_TEMPLATES[c] if c >= 0 else ("", 0) for c in choice]
    jobs = jobs.assign(model=[m for m, _ in models], batch_size=[b for _, b in models])
    speed = pd.Series([rate.get((m, b, int(g)), np.nan) for (m, b), g in
                       zip(models, jobs["gpus"], strict=True)], index=jobs.index)
    jobs = jobs.assign(speed=speed)
    jobs = _drop(jobs, speed.notna(), dropped,
                 "no A100 profile at its GPU count (the artifact drops these jobs)")
    low, high = ELASTICFLOW_SLACK
    factor = rng.uniform(low, high, size=len(jobs))
    jobs = jobs.assign(
        iterations=np.maximum(1, (jobs["duration"] * jobs["speed"]).astype("int64")),
        deadline=jobs["submit"] + (factor * jobs["duration"]).astype("int64"))
    rules = [f"model and batch size uniform over ElasticFlow's {len(ELASTICFLOW_TEMPLATES)} "
             "templates whose batch size >= the job's GPUs",
             f"iterations = max(1, int(duration x {ELASTICFLOW_GPU_TYPE} iterations per second "
             "of that model, batch size and GPU count))",
             f"deadline = submit + int(U({low}, {high}) x duration)"]
    return Annotated(jobs.drop(columns="speed"), dropped, rules)


def tiresias(frame: pd.DataFrame, seed: int) -> Annotated:
    """A Tiresias model per job (drawn uniformly); iterations = the run time in seconds."""
    rng = np.random.default_rng(seed)
    jobs = frame.reset_index(drop=True)
    jobs = jobs.assign(model=rng.choice(TIRESIAS_MODELS, size=len(jobs)),
                       iterations=jobs["duration"].astype("int64"))
    return Annotated(jobs, {}, [f"model uniform over Tiresias's {len(TIRESIAS_MODELS)} tensor "
                                "profiles", "iterations = duration in seconds (its schedulers do "
                                "not read them)"])


def pollux_application(gpu_hours: pd.Series, rng: np.random.Generator) -> list[str]:
    """Pollux's application for each job's GPU time (hours), drawing within a band."""
    out = []
    for hours in gpu_hours.astype(float):
        choices = next(apps for bound, apps in POLLUX_BANDS if hours < bound)
        out.append(choices[int(rng.integers(len(choices)))] if len(choices) > 1 else choices[0])
    return out


def pollux(frame: pd.DataFrame, seed: int) -> Annotated:
    """Pollux's application by GPU time; replicas = GPUs; batch size from its profiled range."""
    rng = np.random.default_rng(seed)
    jobs = frame.reset_index(drop=True)
    apps = pollux_application(jobs["duration"] * jobs["gpus"] / 3600.0, rng)
    batch = [min(max(POLLUX_BATCH_SIZES[a][0] * int(g), POLLUX_BATCH_SIZES[a][0]),
                 POLLUX_BATCH_SIZES[a][-1]) for a, g in zip(apps, jobs["gpus"], strict=True)]
    jobs = jobs.assign(model=apps, batch_size=batch)
    return Annotated(jobs, {}, [
        "application by GPU-hours: < 1 cifar10 or ncf (drawn), < 10 deepspeech2 or bert "
        "(drawn), < 100 yolov3, else imagenet (simulator/workload.py)",
        "num_replicas = the job's GPUs (Pollux draws a configuration from profiles mltraces "
        "does not ship)",
        "batch_size = the application's smallest profiled batch size x replicas, within its "
        "profiled range"])


def gavel_profiles(raw: Mapping[str, Any], worker: str = "v100") -> dict[tuple[str, int], float]:
    """(job type, scale factor) -> isolated steps per second, from Gavel's throughputs file."""
    import ast

    table = raw.get(worker)
    if not isinstance(table, Mapping):
        raise MltracesError(f"the Gavel throughputs file has no {worker!r} worker type "
                            f"(it has {', '.join(map(str, raw))})")
    found = {}
    for key, value in table.items():
        try:
            job_type, scale = ast.literal_eval(key)
            rate = float(value["null"])
        except (ValueError, SyntaxError, TypeError, KeyError):
            raise MltracesError(f"the Gavel throughputs file's key {key!r} is not "
                                "\"('<job type>', <scale factor>)\" with an isolated ('null') "
                                "throughput") from None
        found[(str(job_type), int(scale))] = rate
    return found


def gavel(frame: pd.DataFrame, profiles: Mapping[tuple[str, int], float], seed: int
          ) -> Annotated:
    """Gavel's job type per job (among those measured at its GPU count) and its steps."""
    rng = np.random.default_rng(seed)
    dropped: dict[str, int] = {}
    jobs = frame.reset_index(drop=True)
    types: list[str] = [""] * len(jobs)
    for gpus, rows in jobs.groupby("gpus").groups.items():
        measured: Sequence[str] = sorted(t for t, s in profiles if s == int(gpus))
        for row in rows:
            if measured:
                types[row] = measured[int(rng.integers(len(measured)))]
    jobs = jobs.assign(model=types)
    jobs = _drop(jobs, jobs["model"] != "", dropped,
                 "no Gavel throughput at its GPU count (Gavel measured 1, 2, 4 and 8)")
    rate = [profiles[(t, int(g))] for t, g in zip(jobs["model"], jobs["gpus"], strict=True)]
    jobs = jobs.assign(iterations=np.maximum(1, (jobs["duration"] * rate).astype("int64")))
    return Annotated(jobs, dropped, [
        "job type uniform over the types Gavel measured at the job's GPU count",
        "total_steps = max(1, int(duration x its isolated v100 throughput at that GPU count))"])
