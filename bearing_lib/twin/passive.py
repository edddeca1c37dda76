"""Passive calibration: the limit production telemetry implies, from latency against load.

When a production trace carries per-request latency (or TTFT), it says how the latency
percentile grows with load without any load test. Per window (60 s by default): the arrival
rate (rps) and the SLA clause's percentile. A median regression (statsmodels ``QuantReg``,
robust to the windows a burst spoils) of ``log(percentile)`` on the rate, ``log P = a + b ×
rate``, gives the rate at which the fitted percentile meets the threshold:
``rate* = (log threshold − a) / b``. The CI comes from a bootstrap over windows. The answer is
an **extrapolation** whenever ``rate*`` lies above the highest rate observed, which is the usual
case for a healthy service: it is flagged, and the straight line in log space is a
simplification (a queue's latency grows faster than exponentially near capacity, so the
extrapolation tends to be optimistic the farther it reaches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.quantiles import quantile_expr

MIN_WINDOWS = 10


@dataclass
class PassiveLimit:
    """The limit implied by production telemetry: an estimate, the fit and the extrapolation flag."""

    q_ult: Estimate
    clause: str
    window_s: float
    n_windows: int
    highest_rate_rps: float
    intercept: float
    slope_per_rps: float
    extrapolated: bool
    kind: str = "passive"

    def text(self) -> str:
        s = f"passive (from production latency vs load) limit under {self.clause}: {self.q_ult.text()}"
        if self.extrapolated:
            s += f" — EXTRAPOLATED beyond the highest observed load ({self.highest_rate_rps:.3g} rps)"
        return s

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "q_ult": {**self.q_ult.to_dict(), "kind": "passive"}, "clause": self.clause,
                "window_s": self.window_s, "n_windows": self.n_windows, "highest_rate_rps": self.highest_rate_rps,
                "intercept": self.intercept, "slope_per_rps": self.slope_per_rps, "extrapolated": self.extrapolated}


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    import warnings

    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.QuantReg(y, np.column_stack([np.ones(x.size), x])).fit(q=0.5, max_iter=1000)
    a, b = (float(v) for v in res.params)
    return a, b


def passive_limit(trace, sla, *, window_s: float = 60.0, n_boot: int = 200, seed: int = 0,
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
    w = (f.with_columns(((pl.col("start_s") - t0) // window_s).cast(pl.Int64).alias("_w"))
         .group_by("_w").agg(pl.len().alias("n"),
                             quantile_expr(pl.col(c.metric).filter(ok), float(c.q)).alias("p"),
                             pl.col(c.metric).filter(ok).count().alias("n_ok"))
         .filter((pl.col("n_ok") >= min_requests) & (pl.col("p") > 0)).sort("_w"))
    # the last window is partial
    last = int(((f["start_s"].max() - t0) // window_s))
    w = w.filter(pl.col("_w") < last) if w.height > MIN_WINDOWS else w
    if w.height < MIN_WINDOWS:
        raise InsufficientDataError(f"{src}: passive calibration needs at least {MIN_WINDOWS} windows of "
                                    f"{window_s:g} s with {min_requests}+ successful requests; found {w.height}")
    x = w["n"].to_numpy() / window_s
    y = np.log(w["p"].to_numpy())
    a, b = _fit(x, y)
    thr = math.log(c.threshold)

    def cross(a_: float, b_: float) -> float | None:
        return (thr - a_) / b_ if b_ > 0 else None

    v = cross(a, b)
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(n_boot):
        i = rng.integers(0, x.size, x.size)
        if np.ptp(x[i]) <= 0:
            continue
        r = cross(*_fit(x[i], y[i]))
        reps.append(math.inf if r is None else r)
    hi_obs = float(x.max())
    if v is None:
        est = Estimate(hi_obs, bound="lower", unit="rps", basis="offered")
    else:
        lo, hi = (np.percentile(reps, [2.5, 97.5], method="linear") if len(reps) >= 20 else (None, None))
        ci = (None if lo is None else float(max(lo, 0.0)), None if hi is None or not math.isfinite(hi) else float(hi))
        est = Estimate(max(v, 0.0), ci95=ci, unit="rps", basis="offered")
    return PassiveLimit(q_ult=est, clause=c.text, window_s=window_s, n_windows=int(x.size), highest_rate_rps=hi_obs,
                        intercept=a, slope_per_rps=b, extrapolated=v is None or v > hi_obs)


__all__ = ["PassiveLimit", "passive_limit"]
