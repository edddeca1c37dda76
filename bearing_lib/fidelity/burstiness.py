"""Burstiness: the index of dispersion of request counts at the SLA's time scale.

The index of dispersion of counts (Cox and Lewis 1966, *The Statistical Analysis of Series of
Events*, §4.5) is ``var(N) / mean(N)`` of the number of arrivals ``N`` in consecutive bins of
width ``tau`` (sample variance, ``ddof = 1``): 1 for a Poisson stream at every ``tau``, 0 for a
perfectly regular one whose period divides ``tau``, above 1 when arrivals come in bursts. The bin
width is the SLA's time scale: the largest latency threshold of its percentile clauses (a burst
shorter than the latency budget is what queues requests inside it); 60 s when the SLA has none.

Production: one series of complete bins from the first request on (empty bins count as 0).
The test: each load step on its own (a step is one constant offered load; pooling steps would
count the load changes as bursts), then the median over the steps with at least
:data:`MIN_BINS` complete bins.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from bearing_lib.fidelity.result import CountDispersion, Dimension, TimeScale
from bearing_lib.fidelity.result import missing_sides as _missing
from bearing_lib.fidelity.thresholds import DEFAULT_TIME_SCALE_S, IOD_ABS, IOD_RATIO, IOD_RULE

MIN_BINS = 10


def index_of_dispersion(starts_s: np.ndarray, tau_s: float) -> tuple[float | None, int]:
    """``var / mean`` (ddof 1) of the counts in complete bins of ``tau_s`` from the first start; (None, bins)
    when fewer than :data:`MIN_BINS` bins or no request."""
    t = np.sort(np.asarray(starts_s, dtype=float))
    t = t[np.isfinite(t)]
    if t.size == 0:
        return None, 0
    n_bins = int(math.floor((t[-1] - t[0]) / tau_s))
    if n_bins < MIN_BINS:
        return None, max(n_bins, 0)
    idx = np.floor((t - t[0]) / tau_s).astype(np.int64)  # half-open bins [t0 + k tau, t0 + (k+1) tau)
    counts = np.bincount(idx[idx < n_bins], minlength=n_bins)
    m = counts.mean()
    if m <= 0:
        return None, n_bins
    return float(counts.var(ddof=1) / m), n_bins


_TO_S = {"ms": 1e-3, "s": 1.0, "us": 1e-6, "µs": 1e-6}


def sla_time_scale_s(sla: object | None) -> tuple[float, str]:
    """The bin width (s) and where it comes from: the largest latency threshold of the SLA's percentile clauses.

    ``sla`` is a parsed :class:`~bearing_lib.limits.sla.SLA` (``.clauses``) or the limits' clause list
    (:class:`~bearing_lib.limits.sla.Clause`); a threshold is read in its clause's ``unit``."""
    clauses = getattr(sla, "clauses", sla) or []
    secs = []
    for c in clauses:
        stat, unit, thr = str(getattr(c, "stat", "")), str(getattr(c, "unit", "ms")), getattr(c, "threshold", None)
        if getattr(c, "kind", "") == "percentile" and stat.startswith("p") and unit in _TO_S and thr is not None \
                and float(thr) > 0:
            secs.append(float(thr) * _TO_S[unit])
    if not secs:
        return DEFAULT_TIME_SCALE_S, f"{DEFAULT_TIME_SCALE_S:g} s (the SLA has no latency threshold)"
    tau = max(secs)
    return tau, f"{tau:g} s (the SLA's latency threshold)"


def test_dispersion(frame: pl.DataFrame, tau_s: float) -> tuple[float | None, list[float]]:
    """Median index of dispersion over the test's steps (each step alone), and the per-step values."""
    if "start_s" not in frame.columns or frame["start_s"].null_count() == frame.height:
        return None, []
    keys = [c for c in ("run_id", "step") if c in frame.columns]
    groups = frame.partition_by(keys) if keys else [frame]
    vals = []
    for g in groups:
        iod, _ = index_of_dispersion(g["start_s"].drop_nulls().to_numpy(), tau_s)
        if iod is not None:
            vals.append(iod)
    return (float(np.median(vals)) if vals else None), vals


def _longest_step_s(frame: pl.DataFrame) -> float | None:
    """The longest span of request starts in one step of the test (None without start times)."""
    if "start_s" not in frame.columns or frame["start_s"].null_count() == frame.height:
        return None
    keys = [c for c in ("run_id", "step") if c in frame.columns]
    spans = (frame.group_by(keys).agg((pl.col("start_s").max() - pl.col("start_s").min()).alias("d"))["d"]
             if keys else frame.select((pl.col("start_s").max() - pl.col("start_s").min()).alias("d"))["d"])
    spans = spans.drop_nulls()
    return float(spans.max()) if spans.len() else None


def burstiness_dimension(test: pl.DataFrame | None, production: pl.DataFrame | None, sla: object | None) -> Dimension:
    tau, basis = sla_time_scale_s(sla)
    label = "burstiness"
    t_iod, per_step = test_dispersion(test, tau) if test is not None else (None, [])
    p_iod = None
    if production is not None and "start_s" in production.columns:
        p_iod, _ = index_of_dispersion(production["start_s"].drop_nulls().to_numpy(), tau)
    extra = TimeScale(time_scale_s=tau, time_scale_basis=basis, test_steps=per_step)
    if t_iod is None or p_iod is None:
        missing = _missing(t_iod is None, p_iod is None, f"request start times over ≥ {MIN_BINS} bins of {tau:g} s")
        longest = _longest_step_s(test) if t_iod is None and p_iod is not None and test is not None else None
        if longest is not None:
            # the test has start times, but its steps are too short to count (a Vegeta series of 60 s attacks read
            # "the test gives no request start times": a new user's case, round 21)
            missing = (f"the test's steps (the longest {longest:.4g} s) are shorter than {MIN_BINS} bins of {tau:g} s, "
                       "the fewest a step's index of dispersion is counted over")
        return Dimension("burstiness", label, "unknown", f"{missing}: the index of dispersion cannot be compared",
                         IOD_RULE,
                         test=None if t_iod is None else CountDispersion(t_iod),
                         production=None if p_iod is None else CountDispersion(p_iod), unit="", extra=extra)
    lo, hi = sorted((t_iod, p_iod))
    differs = (hi > IOD_RATIO * lo) and (hi - lo > IOD_ABS)
    more = "burstier" if p_iod > t_iod else "smoother"
    statement = (f"index of dispersion at {tau:g} s: {t_iod:.2f} in the test (median over {len(per_step)} step(s)), "
                 f"{p_iod:.2f} in production" + (f": production is {more} than the test" if differs else ""))
    return Dimension("burstiness", label, "differs" if differs else "represents", statement, IOD_RULE,
                     test=CountDispersion(t_iod), production=CountDispersion(p_iod),
                     distance={"ratio": hi / lo if lo > 0 else float("inf")}, extra=extra)


__all__ = ["MIN_BINS", "burstiness_dimension", "index_of_dispersion", "sla_time_scale_s", "test_dispersion"]
