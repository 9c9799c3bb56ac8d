"""Synthetic Alibaba recurring-job groups in the exact upstream format (:mod:`mltraces.synthetic`).

``alibaba_groups.csv.xz`` (the Alibaba GPU trace's recurring groups as Zeus ships
them) is too large for the test copy of the upstream files: 32-hex group ids,
float start/end seconds, one dataset per group, ``runtime_ratio`` against the
dataset's mean run time, xz-compressed.
"""

from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np
import pandas as pd

ALIBABA_COLUMNS = ["group", "start_time", "end_time", "dataset", "runtime_ratio"]
ZEUS_DATASETS = ["cifar100", "imagenet", "librispeech", "movielens-1m", "sentiment140", "squad"]
#: test size (groups) when a caller asks for none
ALIBABA_GROUPS = 30


def alibaba_groups(n_groups: int = 40, seed: int = 0, max_jobs: int = 30) -> pd.DataFrame:
    """Synthetic recurring-job groups in ``alibaba_groups.csv`` form (typed columns)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n_groups):
        group = "".join(rng.choice(list("0123456789abcdef"), size=32))
        dataset = str(rng.choice(ZEUS_DATASETS))
        count = int(rng.integers(2, max_jobs + 1))
        starts = np.sort(rng.integers(0, 5_000_000, size=count)).astype(float)
        runtimes = rng.lognormal(np.log(20_000), 0.5, size=count).round()
        for begin, runtime in zip(starts, runtimes, strict=True):
            rows.append((group, begin, begin + runtime, dataset, runtime))
    frame = pd.DataFrame(rows, columns=["group", "start_time", "end_time", "dataset", "runtime"])
    mean = frame.groupby("dataset")["runtime"].transform("mean")
    frame["runtime_ratio"] = frame["runtime"] / mean
    return frame[ALIBABA_COLUMNS].sort_values(["group", "start_time"], ignore_index=True)


def write_alibaba_groups_xz(path: str | Path, n_groups: int | None = None, seed: int = 0
                            ) -> Path:
    """Write a synthetic ``alibaba_groups.csv.xz`` (``ALIBABA_GROUPS`` groups by default)."""
    path = Path(path)
    frame = alibaba_groups(ALIBABA_GROUPS if n_groups is None else n_groups, seed)
    for column in ("start_time", "end_time"):
        frame[column] = frame[column].map("{:.1f}".format)
    text = frame.to_csv(index=False)
    path.write_bytes(lzma.compress(text.encode()))
    return path


#: registry file id -> writer (found by mltraces.synthetic)
WRITERS = {"zeus/alibaba_groups.csv.xz": write_alibaba_groups_xz}
