"""Passive calibration: the limit production telemetry implies, from latency against load.

When a production trace carries per-request latency (or TTFT), it says how the latency
percentile grows with load without any load test. Each request gets the arrival rate (rps) of
its window (60 s by default). The queueing form ``P = k / (c − rate)`` (exact for an M/M/1
queue's sojourn percentiles; the heavy-traffic shape of a single queue, latency ∝ 1 / (1 − ρ))
makes ``1 / P`` a straight line in the rate. A quantile regression (statsmodels ``QuantReg``) of
``1 / latency`` per request at ``1 − q`` on the rate fits exactly that line, since a quantile
of ``1 / L`` is ``1 /`` the matching quantile of ``L``; pooling requests, not per-window
percentiles, avoids the low bias of a P99 over a few dozen autocorrelated requests. The limit is
the rate where the fitted percentile meets the threshold; the CI comes from a bootstrap over
windows. It is an **extrapolation** whenever it lies above the highest rate observed, the usual
case for a healthy service, and is flagged so. A server whose latency has a large
load-independent part (long decodes) bends the line; the twin (``calibrate``) models that, this
relation does not. A line that meets the threshold at no load (or below it) is a server that breaks the SLA at
every rate production ran at: the limit is then an upper bound, below the lowest rate observed.

The result type, :class:`~bearing_lib.traffic.document.PassiveLimit`, lives with the traffic profile that carries it
(``passive_limit``), a floor below the twin.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.estimate import Estimate
from bearing_lib.traffic.document import PassiveLimit

MIN_WINDOWS = 10


def _fit(x: np.ndarray, y: np.ndarray, q: float) -> tuple[float, float]:
    import warnings

    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.QuantReg(y, np.column_stack([np.ones(x.size), x])).fit(q=q, max_iter=2000)
    a, b = (float(v) for v in res.params)
    return a, b


def passive_limit(trace, sla, *, window_s: float = 60.0, smooth: int = 5, n_boot: int = 50, seed: int = 0,
                  min_requests: int = 20) -> PassiveLimit:
    """The rate at which production's fitted latency percentile meets the SLA's first percentile clause."""
    from bearing_lib.limits.sla import SLA, parse_sla

    sla_obj = sla if isinstance(sla, SLA) else parse_sla(sla)
    clauses = sla_obj.percentile_clauses()
    if not clauses:
        raise ParameterError("passive calibration needs a percentile clause, e.g. 'p99(latency) <= 10s'")
    c = clauses[0]
    f = trace.frame if hasattr(trace, "frame") else trace
    src = getattr(getattr(trace, "provenance", None), "source", "trace")
    if c.metric not in f.columns or f[c.metric].null_count() == f.height or "start_s" not in f.columns:
        raise InsufficientDataError(f"{src}: passive calibration needs per-request start_s and {c.metric}; "
                                    "this trace has none")
    ok = pl.col("status").is_null() | (pl.col("status") == "ok") if "status" in f.columns else pl.lit(True)
    t0 = float(f["start_s"].min())
    last = int((float(f["start_s"].max()) - t0) // window_s)  # the last window is partial: left out
    g = f.with_columns(((pl.col("start_s") - t0) // window_s).cast(pl.Int64).alias("_w"))
    # the window's own count is a noisy rate (Poisson): a noisy regressor flattens the line (optimistic
    # limit), so each window's rate is the centred mean over ``smooth`` windows (load drifts slowly)
    rate = (g.group_by("_w").agg(pl.len().alias("_n")).sort("_w")
            .with_columns((pl.col("_n").rolling_mean(smooth, center=True, min_samples=1) / window_s).alias("_rate"))
            .select("_w", "_rate"))
    rows = (g.filter(ok & pl.col(c.metric).is_not_null() & (pl.col(c.metric) > 0) & (pl.col("_w") < last))
            .join(rate, on="_w").select("_w", "_rate", c.metric))
    counts = rows.group_by("_w").len().filter(pl.col("len") >= min_requests)
    rows = rows.join(counts.select("_w"), on="_w")
    n_win = counts.height
    if n_win < MIN_WINDOWS:
        raise InsufficientDataError(f"{src}: passive calibration needs at least {MIN_WINDOWS} complete windows of "
                                    f"{window_s:g} s with {min_requests}+ successful requests; found {n_win}")
    x = rows["_rate"].to_numpy()
    y = 1.0 / rows[c.metric].to_numpy()  # 1 / latency: its (1 − q) quantile is 1 / (the q quantile of latency)
    win = rows["_w"].to_numpy()
    qq = 1.0 - float(c.q)
    a, b = _fit(x, y, qq)
    thr = 1.0 / c.threshold

    def cross(a_: float, b_: float) -> float | None:
        return (a_ - thr) / -b_ if b_ < 0 else None

    v = cross(a, b)
    rng = np.random.default_rng(seed)
    ids = np.unique(win)
    by_win = {int(w): np.flatnonzero(win == w) for w in ids}
    reps = []
    for _ in range(n_boot):
        pick = rng.choice(ids, ids.size, replace=True)
        i = np.concatenate([by_win[int(w)] for w in pick])
        if np.ptp(x[i]) <= 0:
            continue
        r = cross(*_fit(x[i], y[i], qq))
        reps.append(math.inf if r is None else r)
    hi_obs, lo_obs = float(np.max(x)), float(np.min(x))
    if v is None:
        est = Estimate(hi_obs, bound="lower", unit="rps", basis="offered")
    elif v <= 0:
        # the fitted percentile is above the threshold even at no load: the SLA fails at every rate production
        # ran at, so the limit lies below the lowest of them; nothing in the data says how far below (a line
        # crossing at a negative rate is not a limit, and its resamples' interval would be one of negative rates)
        est = Estimate(lo_obs, bound="upper", unit="rps", basis="offered")
    else:
        r_ = np.sort(np.asarray(reps, dtype=float))  # inf: a resample whose line never reaches the threshold
        if r_.size >= 20:
            lo_i, hi_i = 0.025 * (r_.size - 1), 0.975 * (r_.size - 1)
            lo = float(r_[int(math.floor(lo_i))])
            hi_v = r_[int(math.ceil(hi_i))]
            # a resample whose line crosses at a negative rate says the limit is at no load: 0
            ci = (max(lo, 0.0) if math.isfinite(lo) else None, max(float(hi_v), 0.0) if math.isfinite(hi_v) else None)
        else:
            ci = (None, None)
        est = Estimate(max(v, 0.0), ci95=ci, unit="rps", basis="offered")
    return PassiveLimit(q_ult=est, clause=c.text, window_s=window_s, n_windows=n_win, highest_rate_rps=hi_obs,
                        intercept=a, slope_per_rps=b, extrapolated=v is None or v > hi_obs)


__all__ = ["passive_limit"]
