"""Warm-up truncation by MSER-5, per step: how much of a step's start is still a transient.

**Rule** (White 1997; Franklin & White 2008; the rule AIPerf uses): cut the series, in
time order, into batches of 5 and take the batch means ``Y_1..Y_k``. For each candidate
truncation ``d`` (in batches) the MSER statistic is

    MSER(d) = Σ_{i>d} (Y_i − Ȳ_d)² / (k − d)²,

the squared standard error of the mean of what is kept. The truncation point is the ``d``
minimising it over ``d ≤ k/2``; a minimum in the last fifth of that range (``d ≥ 0.8 · k/2``,
i.e. 40 % or more of the window cut) means the search bound, not the data, stopped it: the
series never settled and the step is **still filling up** (a queue growing through the
window puts the minimum there; a clean 25 % warm-up is cut at 15–35 %, tested). MSER-5 was chosen over a slope test
(GuideLLM's t-interval on a linear trend) because it needs no choice of window or
significance level and names the truncation point itself, which a slope test does not.

bearing applies it to each step's latency series (TTFT when present, else end-to-end
latency) of the requests in the step's **steady window** (``bearing_lib.limits.curves``:
the send window minus ``max(10 %, 2 mean latencies)`` at each end). The result is a per-step
diagnostic in the limits JSON (``steps[].mser5``: the truncation in seconds after the
window's start and whether the window settled); the step verdicts still come from the
curve's ``not_steady`` trend test, which fails a step whose latency or in-flight count is
still rising (a step still filling up counts as failing). Numpy only: O(k) with cumulative sums.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

BATCH = 5
SETTLED_SHARE = 0.8


def mser(values: np.ndarray, batch: int = BATCH) -> tuple[int, bool]:
    """``(d, settled)``: the MSER-``batch`` truncation in observations and whether it cut < 40 % of the series.

    Fewer than 4 batches: ``(0, True)`` (too short to say anything).
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    k = v.size // batch
    if k < 4:
        return 0, True
    y = v[: k * batch].reshape(k, batch).mean(axis=1)
    # suffix sums of y and y² give every tail's mean and sum of squares at once
    s1 = np.cumsum(y[::-1])[::-1]
    s2 = np.cumsum((y * y)[::-1])[::-1]
    d = np.arange(k // 2 + 1)
    n = k - d
    ss = s2[d] - s1[d] ** 2 / n
    stat = np.maximum(ss, 0.0) / n.astype(float) ** 2
    best = int(np.argmin(stat))
    return best * batch, best < SETTLED_SHARE * (k // 2)


@dataclass(frozen=True)
class Mser5:
    """The MSER-5 warm-up diagnostic of one step (the limits JSON's ``steps[].mser5``)."""

    rule: str
    """Always ``"MSER-5"``."""
    truncate_s: float | None
    """Seconds after the first steady request that MSER cuts (0 when nothing is cut)."""
    truncated: int
    """Requests cut (a multiple of :data:`BATCH`)."""
    of: int
    """Requests in the step's steady window with the metric."""
    settled: bool
    """The cut lies below 40 % of the window (False: the series never settled)."""


@dataclass(frozen=True)
class StepWarmups:
    """The MSER-5 warm-up of each (run, step) of a trace (:func:`mser_by_step`); a step without one (no start
    times, no value of the metric) is not held."""

    by_step: Mapping[tuple[str, int], Mser5] = field(default_factory=dict)

    def of(self, run: object, step: object) -> Mser5 | None:
        """The warm-up of ``step`` of ``run``, or None when the step has none."""
        return self.by_step.get((str(run), int(step)))  # type: ignore[call-overload]


def mser_by_step(steady: pl.DataFrame | pl.LazyFrame, metric: str) -> StepWarmups:
    """Per (run, step): MSER-5 on the step's ``metric`` in start order (:class:`Mser5`).

    ``steady`` may be lazy: then only its four columns are collected, in one pass."""
    out: dict[tuple[str, int], Mser5] = {}
    names = steady.collect_schema().names()
    if metric not in names or "start_s" not in names:
        return StepWarmups(out)
    f = steady.lazy().select(pl.col("run_id").fill_null("run"), "step", "start_s", metric).drop_nulls().sort(
        "run_id", "step", "start_s").collect()
    if f.height == 0:
        return StepWarmups(out)
    # memory: each step is a zero-copy slice of the sorted frame, not a partition_by copy
    spans = f.select("run_id", "step").with_row_index("_i").group_by("run_id", "step", maintain_order=True).agg(
        pl.col("_i").first().alias("_at"), pl.len().alias("_n"))
    for run, step, at, length in spans.iter_rows():
        part = f.slice(at, length)
        t = part["start_s"].to_numpy()
        d, settled = mser(part[metric].to_numpy())
        trunc_s = float(t[d] - t[0]) if 0 < d < t.size else 0.0
        out[(str(run), int(step))] = Mser5(rule="MSER-5", truncate_s=trunc_s if math.isfinite(trunc_s) else None,
                                           truncated=int(d), of=int(t.size), settled=bool(settled))
    return StepWarmups(out)


__all__ = ["BATCH", "Mser5", "StepWarmups", "mser", "mser_by_step"]
