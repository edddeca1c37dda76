"""The uncertainty of a ratio of two limits, and the verdict it supports.

A limit's uncertainty enters as **draws** of the limit: the estimator's own posterior or
bootstrap draws (:attr:`bearing_lib.limits.result.MixLimit.replicates`) when the limit was
computed in this process, else draws from a **log-normal approximation** of its 95 % interval
(``ln Q ~ N(ln q, σ²)`` with ``σ = (ln hi − ln lo) / (2 · 1.96)``, centred on the point value;
an asymmetric interval is thereby made symmetric in log scale, said in ``method``). The two
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

Z975 = 1.959963984540054
N_DRAWS = 4000
"""Draws of each limit used for a ratio (replicates are resampled to this many)."""

Verdict = Literal["better", "worse", "not distinguishable", "not ranked"]
DrawSource = Literal["replicates", "lognormal", "none"]


@dataclass(frozen=True)
class LimitDraws:
    """Draws of one limit (per-instance, achieved basis) and where they came from."""

    draws: np.ndarray | None
    source: DrawSource
    method: str


def lognormal_sigma(value: float, ci95: tuple[float | None, float | None]) -> float | None:
    """σ of ln Q from a 95 % interval (None when the interval is missing or not positive).

    >>> round(lognormal_sigma(10.0, (5.0, 20.0)), 4)   # ln 4 / 3.92
    0.3536
    """
    lo, hi = ci95
    if lo is None or hi is None or not (0 < lo <= value <= hi) or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (math.log(hi) - math.log(lo)) / (2 * Z975)


def limit_draws(value: float | None, ci95: tuple[float | None, float | None], replicates: object,
                rng: np.random.Generator, *, scale: float = 1.0, n: int = N_DRAWS) -> LimitDraws:
    """Draws of ``value × scale``: the replicates (times ``scale``) when there are enough, else log-normal."""
    if value is None or not value > 0:
        return LimitDraws(None, "none", "no limit value")
    if replicates is not None:
        r = np.asarray(replicates, dtype=float).ravel()
        r = r[np.isfinite(r) & (r > 0)]
        if r.size >= 50:
            return LimitDraws(rng.choice(r, size=n, replace=True) * scale, "replicates",
                              f"the estimator's {r.size} draws of the limit (posterior or bootstrap)")
    s = lognormal_sigma(value, ci95)
    if s is None:
        return LimitDraws(None, "none", "the limit has no usable 95% interval")
    if s == 0:
        return LimitDraws(np.full(n, value * scale), "lognormal", "a zero-width interval (no uncertainty stated)")
    return LimitDraws(np.exp(rng.normal(math.log(value), s, n)) * scale, "lognormal",
                      f"log-normal approximation from the 95% interval (σ of ln Q = {s:.3g}; the estimator's "
                      "draws were not available, e.g. the limit was read from a JSON file)")


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
    """Where a limit can lie: a lower bound ``[value, ∞)``, an upper bound ``(0, value)``, a value its interval."""
    if bound == "lower":
        return value, math.inf
    if bound == "upper":
        return 0.0, value
    lo, hi = ci95
    return (lo if lo is not None else value), (hi if hi is not None else value)


def bound_verdict(a: tuple[float, float], b: tuple[float, float]) -> Verdict:
    """Verdict of A against B from where each can lie (for bounds): disjoint ranges rank, overlapping do not."""
    if a[0] > b[1]:
        return "better"
    if a[1] < b[0]:
        return "worse"
    return "not distinguishable"


__all__ = ["N_DRAWS", "Z975", "DrawSource", "LimitDraws", "Verdict", "bound_verdict", "interval_of_bound",
           "limit_draws", "lognormal_sigma", "ratio_interval", "verdict_of"]
