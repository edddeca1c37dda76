"""Target load and staged reservation from a production rate series.

* **Target** ``Q_target`` = the ``quantile`` (P99 by default, linear interpolation) of
  the per-bin rate in req/s, times ``growth``. The sources: plan from P95/P99 peaks,
  not means.
* **Confidence interval** of the target: a block bootstrap (fixed seed) that resamples
  whole days when the series spans at least two days, else 10-minute blocks, and takes
  the 2.5th/97.5th percentiles of the resampled target.
* **Staged reservation**: near term = current peak x 1.5, the current peak being the target's
  quantile of the per-bin rate before growth (``basis_rps``; P99 by default), the same number the
  plan's staged reservation uses (:attr:`bearing_lib.plan.fos.Target.current_peak_rps`): never the
  single busiest bin (``peak_rps``, shown as the busiest minute). Mid term = a 6-month forecast of
  the daily peak x 1.5 (:func:`trend_forecast`), only when the series spans enough weeks (4 by
  default); otherwise the reason it cannot be made.
* **The forecast** (:func:`trend_forecast`, the one the plan uses too): the daily peak (the max
  per-bin rate of each complete day, :func:`daily_peaks`) against the day index, statsmodels OLS.
  The trend is used only when it is significant: the slope's 95 % confidence interval excludes
  zero (the OLS t-test at 5 %). Otherwise "no trend detected over N days": the forecast is the
  flat level (the mean daily peak, with its 95 % prediction interval ``mean ± t(0.975, N−1) ×
  s × sqrt(1 + 1/N)``) and there is no date at which a capacity runs out. A rate is never
  negative: the forecast and its interval are clipped at 0 (and the statement says so).
"""

from __future__ import annotations

import math

import numpy as np

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.quantiles import QUANTILE_METHOD, quantile
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.document import PeakLoad, Reservation, TargetLoad, Targets
from bearing_lib.traffic.forecast import TREND_TEST, TrendForecast

DAY_S = 86_400.0
DEFAULT_SEED = 20261129


MIN_FORECAST_DAYS = 28


def daily_peaks(starts_s: np.ndarray, rate_rps: np.ndarray, bin_s: float, *,
                aligned: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(day index, max rate) of each *complete* day of a binned series. ``aligned``: the starts are on
    the UTC clock (days from midnight); otherwise days are counted from the first bin."""
    t = np.asarray(starts_s, dtype=float)
    r = np.asarray(rate_rps, dtype=float)
    if t.size == 0:
        return np.empty(0), np.empty(0)
    if not aligned:
        t = t - t.min()
    per_day = int(round(DAY_S / bin_s))
    day = np.floor(t / DAY_S).astype(np.int64)
    days, inv, counts = np.unique(day, return_inverse=True, return_counts=True)
    peaks = np.full(days.size, -np.inf)
    np.maximum.at(peaks, inv, r)
    keep = counts == per_day
    return days[keep].astype(float), peaks[keep]


def trend_forecast(days: np.ndarray, peaks: np.ndarray, *, horizon_days: float = 182.5,
                   level: float = 0.95, min_days: int = MIN_FORECAST_DAYS) -> TrendForecast:
    """The forecast of the daily peak ``horizon_days`` after the last day (module docstring): the
    trend only when it is significant, the flat level otherwise; never below 0."""
    from scipy import stats
    from statsmodels.regression.linear_model import OLS

    x, y = np.asarray(days, dtype=float), np.asarray(peaks, dtype=float)
    if x.size < min_days:
        raise InsufficientDataError(f"a trend forecast needs >= {min_days} complete days (got {x.size})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ParameterError("daily peaks must be finite numbers")
    fit = OLS(y, np.column_stack([np.ones_like(x), x])).fit()
    slope = float(fit.params[1])
    lo_s, hi_s = (float(v) for v in fit.conf_int(alpha=1 - level)[1])
    if not (math.isfinite(lo_s) and math.isfinite(hi_s)):  # a perfect fit: no residual spread
        lo_s = hi_s = slope
    significant = bool(lo_s > 0 or hi_s < 0)
    x_new = float(x[-1] + horizon_days)
    n = int(x.size)
    ci = f"slope {slope:+.4g} req/s per day, {level:.0%} CI {lo_s:+.4g}…{hi_s:+.4g}"
    if significant:
        pred = fit.get_prediction(np.array([[1.0, x_new]])).summary_frame(alpha=1 - level)
        value = float(pred["mean"].iloc[0])
        lo, hi = float(pred["obs_ci_lower"].iloc[0]), float(pred["obs_ci_upper"].iloc[0])
        intercept = float(fit.params[0])
        method = "OLS of the daily peak on the day index (statsmodels), extrapolated; prediction interval"
        text = (f"a trend over {n} complete days ({ci}, excludes 0): forecast {horizon_days:g} days after the last "
                f"day")
    else:
        mean, sd = float(y.mean()), float(y.std(ddof=1))
        half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
        value, lo, hi, intercept = mean, mean - half, mean + half, mean
        method = ("no significant trend: the flat level (mean daily peak) with its prediction interval "
                  "mean ± t × s × sqrt(1 + 1/n)")
        text = (f"no trend detected over {n} days ({ci} includes 0): the level {horizon_days:g} days after the "
                f"last day is taken as today's")
    clipped = value < 0 or lo < 0
    value, lo, hi = max(0.0, value), max(0.0, lo), max(0.0, hi)
    text += f" {value:.4g} req/s ({level:.0%} PI {lo:.4g}–{hi:.4g})"
    if clipped:
        text += "; clipped at 0 (a rate is not negative)"
    return TrendForecast(n, float(x[0]), float(x[-1]), slope, (lo_s, hi_s), intercept, significant, TREND_TEST,
                         float(horizon_days), value, lo, hi, level, clipped, method, text)


def bootstrap_quantile_ci(
    values: np.ndarray,
    q: float,
    block_len: int,
    *,
    n_boot: int = 1000,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float, int]:
    """Block-bootstrap CI of the ``q`` quantile: resample whole blocks of ``block_len`` values.

    Only complete blocks are used (a trailing partial block is dropped). Returns
    ``(lo, hi, n_blocks)``. Raises :class:`InsufficientDataError` with fewer than 3 blocks.
    """
    v = np.asarray(values, dtype=float)
    n_blocks = v.size // block_len
    if n_blocks < 3:
        raise InsufficientDataError(f"{n_blocks} complete block(s) of {block_len} bins; a bootstrap needs at least 3")
    blocks = v[: n_blocks * block_len].reshape(n_blocks, block_len)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    chunk = max(1, 2_000_000 // (n_blocks * block_len))
    for a in range(0, n_boot, chunk):
        b = min(n_boot, a + chunk)
        idx = rng.integers(0, n_blocks, size=(b - a, n_blocks))
        sample = blocks[idx].reshape(b - a, -1)
        out[a:b] = np.quantile(sample, q, axis=1, method=QUANTILE_METHOD)
    alpha = (1 - level) / 2
    lo, hi = quantile(out, [alpha, 1 - alpha])
    return float(lo), float(hi), n_blocks


def _daily_peaks(series: RateSeries) -> tuple[np.ndarray, np.ndarray]:
    """(day index, max rate) for each complete day of the series (:func:`daily_peaks`)."""
    return daily_peaks(series.slot_clock_s(), series.rate_rps, series.bin_s)


def mid_term_forecast(
    series: RateSeries,
    *,
    horizon_days: float = 182.5,
    factor: float = 1.5,
    min_weeks: float = 4.0,
) -> Reservation:
    """Linear-trend forecast of the daily peak ``horizon_days`` ahead, or why it cannot be made."""
    span_days = series.span_s / DAY_S
    if span_days < 7 * min_weeks:
        return Reservation(available=False, reason=(
            f"the series spans {span_days:.2f} days; a {horizon_days:g}-day trend forecast needs at least "
            f"{min_weeks:g} weeks of traffic"))
    if series.bin_s > DAY_S:
        return Reservation(available=False, reason=f"bins of {series.bin_s:g} s are longer than a day")
    x, y = _daily_peaks(series)
    if x.size < 7 * min_weeks:
        return Reservation(available=False,
                           reason=f"only {x.size} complete days; a trend forecast needs {7 * min_weeks:g}")
    fc = trend_forecast(x, y, horizon_days=horizon_days, min_days=max(3, math.ceil(7 * min_weeks)))
    statement = (f"daily peak rate: {fc.statement}; reservation x{factor:g}. "
                 + ("A straight-line extrapolation: treat it as a planning input, not a prediction"
                    if fc.significant else "No growth is extrapolated"))
    return Reservation(method=fc.method, trend_significant=fc.significant, trend_test=TREND_TEST,
                       horizon_days=horizon_days, n_days=fc.n_days, slope_rps_per_day=fc.slope_rps_per_day,
                       slope_ci95=list(fc.slope_ci95), forecast_rps=fc.value, forecast_pi95=[fc.lower, fc.upper],
                       factor=factor, rps=fc.value * factor, statement=statement, trend=fc)


def compute_targets(
    series: RateSeries,
    *,
    quantile_level: float = 0.99,
    growth: float = 1.0,
    near_term_factor: float = 1.5,
    mid_term_factor: float = 1.5,
    horizon_days: float = 182.5,
    min_weeks: float = 4.0,
    n_boot: int = 1000,
    seed: int = DEFAULT_SEED,
) -> Targets:
    """Target load (req/s), its bootstrap CI and the staged reservation (see module docstring).

    Parameters
    ----------
    series : RateSeries
        Per-minute counts of a trace (or a source's rate windows).
    quantile_level : float
        Quantile of the per-bin rate, in (0, 1]; 0.99 = P99.
    growth : float
        Multiplier (> 0) for expected growth.
    """
    if not (0 < quantile_level <= 1):
        raise ParameterError(f"quantile must be in (0, 1], got {quantile_level!r}")
    if not (growth > 0 and math.isfinite(growth)):
        raise ParameterError(f"growth must be a positive number, got {growth!r}")
    if len(series) == 0:
        raise InsufficientDataError("the series has no complete bin; no target can be computed")
    rate = series.rate_rps
    basis = float(quantile(rate, quantile_level))
    notes = []
    min_bins = math.ceil(1 / (1 - quantile_level)) if quantile_level < 1 else None
    if min_bins and rate.size < min_bins:
        notes.append(
            f"{rate.size} bins < {min_bins}: the P{quantile_level * 100:g} is interpolated between the largest "
            "bins, close to the peak"
        )
    if series.span_s >= 2 * DAY_S and series.bin_s <= DAY_S:
        block_len, block_name = int(round(DAY_S / series.bin_s)), "days"
    else:
        block_len, block_name = max(1, int(round(600.0 / series.bin_s))), "10-minute blocks"
    try:
        lo, hi, n_blocks = bootstrap_quantile_ci(rate, quantile_level, block_len, n_boot=n_boot, seed=seed)
        ci: tuple[float, float] | None = (lo * growth, hi * growth)
        method = f"block bootstrap over {n_blocks} {block_name}, {n_boot} resamples, seed {seed}"
        if block_name != "days":
            notes.append("the series spans less than two days: the CI resamples 10-minute blocks, not days")
    except InsufficientDataError as exc:
        ci, method = None, f"no CI: {exc}"
    target = basis * growth
    return Targets(
        target=TargetLoad(rps=target, quantile=quantile_level, growth=growth, basis_rps=basis, bin_s=series.bin_s,
                          n_bins=int(rate.size), ci95=list(ci) if ci else None, ci_method=method,
                          statement=(f"Q_target = P{quantile_level * 100:g} of the {series.bin_s:g} s rate "
                                     f"({basis:.4g} req/s) x growth {growth:g} = {target:.4g} req/s")),
        peak=PeakLoad(rps=float(rate.max()), bin_s=series.bin_s),
        near_term=Reservation(rps=basis * near_term_factor, factor=near_term_factor,
                              basis=(f"current peak {basis:.4g} req/s: the P{quantile_level * 100:g} of the "
                                     f"{series.bin_s:g} s rate")),
        mid_term=mid_term_forecast(series, horizon_days=horizon_days, factor=mid_term_factor, min_weeks=min_weeks),
        notes=notes,
    )
