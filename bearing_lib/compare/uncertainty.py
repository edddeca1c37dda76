"""The uncertainty of a ratio of two limits, and the verdict it supports.

A limit's uncertainty enters as **draws** of the limit: the estimator's own posterior or
bootstrap draws (:attr:`bearing_lib.limits.result.MixLimit.replicates`) when the limit was
computed in this process *and* their own 95 % interval agrees with the reported one, else
draws from a **two-piece log-normal** fitted to the reported 95 % interval (median at the point
value, ``σ_lo = ln(q / lo) / 1.96`` below and ``σ_hi = ln(hi / q) / 1.96`` above; the plan's FOS
uses the same approximation), said in ``method``. The draws are set aside when the limits
widened their interval beyond the bootstrap's (to the step grid): they would understate it. The two
deployments were tested independently, so the draws of the ratio ``Q_a / Q_b`` are the
quotients of independently paired draws; its 95 % interval is their 2.5 % and 97.5 %
quantiles (percentile interval, Efron & Tibshirani 1993, ch. 13).

A **verdict** follows from the interval of the ratio: above 1 everywhere, ``better``; below 1
everywhere, ``worse``; covering 1, ``not distinguishable at this test length`` (a longer or
finer test narrows both limits' intervals). A limit known only as a bound (the SLA held at
every tested load, or broke at the first) is compared by interval overlap only: a bound
never becomes a point value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bearing_lib.compare.result import Verdict

Z975 = 1.959963984540054
N_DRAWS = 4000
"""Draws of each limit used for a ratio (replicates are resampled to this many)."""
MIN_REPLICATES = 50
REPLICATE_TOLERANCE = 0.05
"""The draws stand for the limit when their 95 % interval's ends are within 5 % (log scale) of the reported ones."""

DrawSource = Literal["replicates", "lognormal", "none"]


@dataclass(frozen=True)
class LimitDraws:
    """Draws of one limit (per-instance, achieved basis) and where they came from."""

    draws: np.ndarray | None
    source: DrawSource
    method: str


def two_piece_sigmas(value: float, ci95: tuple[float | None, float | None]) -> tuple[float, float] | None:
    """σ of ln Q below and above the point value from a 95 % interval (None when unusable).

    >>> [round(s, 4) for s in two_piece_sigmas(10.0, (5.0, 20.0))]   # ln 2 / 1.96 each side
    [0.3537, 0.3537]
    """
    lo, hi = ci95
    if lo is None or hi is None or not (0 < lo <= value <= hi) or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return math.log(value / lo) / Z975, math.log(hi / value) / Z975


def replicates_agree(r: np.ndarray, ci95: tuple[float | None, float | None], *, tolerance: float = REPLICATE_TOLERANCE
                     ) -> bool:
    """The draws' own 95 % interval matches the reported one (each end within ``tolerance`` in log scale).

    The limits may widen the bootstrap interval to the step grid (``QUlt.interval_method``); draws
    of the narrower bootstrap would then understate the limit's uncertainty.
    """
    lo, hi = ci95
    if lo is None or hi is None or not (lo > 0 and hi > 0):
        return False
    rlo, rhi = np.percentile(r, [2.5, 97.5])
    return abs(math.log(rlo / lo)) <= tolerance and abs(math.log(rhi / hi)) <= tolerance


def limit_draws(value: float | None, ci95: tuple[float | None, float | None], replicates: object,
                rng: np.random.Generator, *, scale: float = 1.0, n: int = N_DRAWS) -> LimitDraws:
    """Draws of ``value × scale``: the estimator's draws when they agree with the reported interval, else a
    two-piece log-normal fitted to it (median ``value``, 2.5 % / 97.5 % points at the interval's ends)."""
    if value is None or not value > 0:
        return LimitDraws(None, "none", "no limit value")
    why = "the estimator's draws were not available (e.g. the limit was read from a JSON file)"
    if replicates is not None:
        r = np.asarray(replicates, dtype=float).ravel()
        r = r[np.isfinite(r) & (r > 0)]
        if r.size >= MIN_REPLICATES and replicates_agree(r, ci95):
            return LimitDraws(rng.choice(r, size=n, replace=True) * scale, "replicates",
                              f"the estimator's {r.size} draws of the limit (posterior or bootstrap)")
        if r.size >= MIN_REPLICATES:
            why = ("the reported interval is wider than the estimator's draws (widened, e.g. to the step grid), so "
                   "the draws would understate it")
        else:
            why = f"only {r.size} usable draws of the limit"
    s = two_piece_sigmas(value, ci95)
    if s is None:
        return LimitDraws(None, "none", "the limit has no usable 95% interval")
    z = rng.standard_normal(n)
    draws = value * np.exp(np.where(z < 0, z * s[0], z * s[1])) * scale
    return LimitDraws(draws, "lognormal", f"a two-piece log-normal fitted to the limit's 95% interval ({why})")


def ratio_interval(a: np.ndarray, b: np.ndarray, *, level: float = 0.95) -> tuple[float, float, float]:
    """(median, lo, hi) of ``a / b`` over independently paired draws (percentile interval)."""
    r = a / b
    tail = (1 - level) / 2 * 100
    lo, med, hi = np.percentile(r, [tail, 50, 100 - tail])
    return float(med), float(lo), float(hi)


def verdict_of(lo: float, hi: float) -> Verdict:
    """``better`` when the ratio's interval lies above 1, ``worse`` below, else ``not distinguishable``.

    >>> verdict_of(1.1, 1.4), verdict_of(0.7, 0.95), verdict_of(0.9, 1.2)
    ('better', 'worse', 'not distinguishable')
    """
    if lo > 1.0:
        return "better"
    if hi < 1.0:
        return "worse"
    return "not distinguishable"


def interval_of_bound(value: float, bound: str, ci95: tuple[float | None, float | None]) -> tuple[float, float]:
    """Where a limit can lie: a lower bound ``[value, ∞)``, an upper bound ``(0, value)``, a value its interval
    (an end the interval does not give is open: 0 or ∞, never the point value)."""
    if bound == "lower":
        return value, math.inf
    if bound == "upper":
        return 0.0, value
    lo, hi = ci95
    return (lo if lo is not None else 0.0), (hi if hi is not None else math.inf)


def bound_verdict(a: tuple[float, float], b: tuple[float, float]) -> Verdict:
    """Verdict of A against B from where each can lie (for bounds): disjoint ranges rank, overlapping do not."""
    if a[0] > b[1]:
        return "better"
    if a[1] < b[0]:
        return "worse"
    return "not distinguishable"


__all__ = [
    "MIN_REPLICATES",
    "N_DRAWS",
    "REPLICATE_TOLERANCE",
    "Z975",
    "DrawSource",
    "LimitDraws",
    "bound_verdict",
    "interval_of_bound",
    "limit_draws",
    "ratio_interval",
    "replicates_agree",
    "two_piece_sigmas",
    "verdict_of",
]
