"""The pooled exceedance estimator: where the SLA is crossed, from every request of every step.

A percentile clause ``pQ(metric) <= T`` holds on a set of requests when no more than a
share ``1 − Q`` of them exceed ``T``. Per step this module counts the requests that count
against each clause (``k``) among those that can (``n``):

* percentile: ``k`` = successful requests whose metric is above ``T`` (``≥ T`` for ``<``),
  ``n`` = successful requests carrying the metric; the clause's allowed bad share is ``1 − Q``;
* error rate: ``k`` = failed requests, ``n`` = all requests; allowed share = the error allowance;
* goodput ``≥ g``: ``k`` = requests failed or outside a bound, ``n`` = all; allowed share ``1 − g``.

The bad share ``p = k / n`` is fitted as a **non-decreasing** function of load by weighted
isotonic regression (weights ``n``: every request counts once, whatever its step's size;
steps at the same load are merged first), and the limit is the load where the fit crosses
the allowed share, linearly interpolated between the two steps around the crossing. The fit
is written as the margin ``1 − p / allowed`` so that one crossing (:func:`crossing`) serves the
step-wise estimator's margins too (``bearing_lib.limits.estimators.stepwise_crossing``). A step
with 150 requests cannot support a P99 on its own (368 are needed, docs/limits.md) and is left out
of the step-wise bracket, but its 150 requests, none above ``T``, still pull the fit: that is the
evidence the step-wise judgement throws away.

Scipy's ``isotonic_regression`` (pool-adjacent-violators) does the fit; the counting is polars.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from bearing_lib.limits.sla import FAILED_EXPR, KNOWN_EXPR, OK_EXPR, SLA, Clause

ESTIMATOR = "pooled exceedance (isotonic bad share over all steps' requests)"
INTERPOLATION = "linear"


def allowed_share(c: Clause) -> float:
    """The share of requests that may count against clause ``c`` (``1 − Q``, the error allowance, ``1 − g``)."""
    if c.kind == "percentile":
        return 1.0 - float(c.q)
    return float(c.allowed)


def requests_needed(c: Clause) -> int | None:
    """The requests one load needs for ``c`` to be judged at 95 % with none of them bad: the smallest ``n`` whose
    upper order statistic bounds the clause's quantile (a percentile ``pQ``: ``Q``; an error-rate or goodput
    clause: 1 − its allowed share, ``sla.ZERO_ALLOWANCE`` for a zero one), e.g. 368 for a P99 or
    ``error_rate <= 1%``, 72 for a P95. None where that quantile is not inside (0, 1)."""
    q = c.q if c.kind == "percentile" else 1.0 - allowed_share(c)
    if q is None or not 0.0 < q < 1.0:
        return None
    # here: importing the limits JSON's types (result -> settling -> pooled) must not load curves and scipy.stats
    from bearing_lib.limits.curves import min_n_supported

    return min_n_supported(q)


def bad_expr(c: Clause) -> tuple[pl.Expr, pl.Expr]:
    """(counts against the clause, can count) per request, as polars booleans."""
    if c.kind == "percentile":
        col = pl.col(c.metric)
        eligible = OK_EXPR & col.is_not_null() & ~col.is_nan()
        over = (col >= c.threshold) if c.strict else (col > c.threshold)
        return (eligible & over).fill_null(False), eligible.fill_null(False)
    # cancelled requests and those of unknown outcome are neither good nor bad (sla.UNSETTLED)
    if c.kind == "error_rate":
        return FAILED_EXPR, KNOWN_EXPR
    good = OK_EXPR
    for b in c.bounds or ():
        good = good & b.holds()
    return (~good.fill_null(False)) & KNOWN_EXPR, KNOWN_EXPR


def count_columns(steady: pl.DataFrame, sla: SLA) -> pl.DataFrame:
    """Per run, step and mix: ``_pk_{i}`` (bad requests) and ``_pn_{i}`` (eligible) for clause ``i``."""
    exprs = []
    for i, c in enumerate(sla.clauses):
        bad, elig = bad_expr(c)
        exprs += [bad.cast(pl.Int64).sum().alias(f"_pk_{i}"), elig.cast(pl.Int64).sum().alias(f"_pn_{i}")]
    # streaming: an in-memory three-key group-by held ~0.13 GB per million requests (integer sums: exact)
    return steady.lazy().group_by("run_id", "step", "mix").agg(exprs).collect(engine="streaming")


def share_to_margin(c: Clause, share: float | np.ndarray) -> float | np.ndarray:
    """The margin ``1 − share / allowed`` of a bad share (> 0 passes)."""
    m = 1.0 - np.asarray(share, dtype=float) / allowed_share(c)
    return float(m) if np.ndim(m) == 0 else m


def merge_ties(xs: np.ndarray, margins: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, ...]:
    """Steps at the same load merged into one point (weighted mean margin, summed weight); NaN margins dropped."""
    ok = ~np.isnan(margins) & ~np.isnan(xs) & (weights > 0)
    x, m, w = xs[ok], margins[ok], weights[ok]
    if x.size == 0:
        return x, m, w
    order = np.argsort(x, kind="stable")
    x, m, w = x[order], m[order], w[order]
    ux, inv = np.unique(x, return_inverse=True)
    sw = np.bincount(inv, weights=w)
    sm = np.bincount(inv, weights=m * w) / sw
    return ux, sm, sw


def crossing(xs: np.ndarray, margins: np.ndarray, weights: np.ndarray, strict: bool,
             allowed: float = 0.01, interpolation: str | None = None) -> float:
    """Zero crossing of the weighted isotonic (non-increasing in load) fit of margins: bearing's one isotonic crossing.

    The pooled estimator's count margins and the step-wise estimator's step margins both cross here. Steps at one
    load are one point (their weighted mean margin, summed weight: :func:`merge_ties`), in load order, whatever
    order they come in. +inf when the fit never fails, −inf when it fails at the lowest load, NaN without data.
    ``interpolation`` (``"linear"`` or ``"log"``; None: :data:`INTERPOLATION`) says how the crossing is placed
    between the two points around it; ``"log"`` reads ``1 − margin`` as a bad share (relative to ``allowed``),
    which only the pooled estimator's count margins are, so the step-wise estimator always passes ``"linear"``.
    """
    x, m, w = merge_ties(np.asarray(xs, float), np.asarray(margins, float), np.asarray(weights, float))
    if x.size == 0:
        return math.nan
    from scipy.optimize import isotonic_regression  # here: importing the limits JSON's types needs no scipy

    fit = isotonic_regression(m, weights=w, increasing=False).x if m.size > 1 else m
    fail = fit <= 0 if strict else fit < 0
    if not fail.any():
        return math.inf
    i = int(np.argmax(fail))
    if i == 0:
        return -math.inf
    a, b = fit[i - 1], fit[i]
    if (interpolation or INTERPOLATION) == "log":
        # the bad share near capacity grows roughly geometrically with load: interpolate log(share), a zero
        # share counted as half a request, (0.5 / (n + 1)), so it stays finite (shares are 1 − margin)
        s0 = max(1.0 - a, 0.5 / (w[i - 1] + 1.0) / allowed)
        s1 = max(1.0 - b, s0 * (1 + 1e-12))
        t = (math.log(1.0) - math.log(s0)) / (math.log(s1) - math.log(s0))
        return float(x[i - 1] + min(max(t, 0.0), 1.0) * (x[i] - x[i - 1]))
    return float(x[i - 1] + a / (a - b) * (x[i] - x[i - 1])) if a != b else float(x[i])


__all__ = ["ESTIMATOR", "allowed_share", "bad_expr", "count_columns", "crossing", "merge_ties", "requests_needed",
           "share_to_margin"]
