"""Target load and staged reservation from a production rate series.

* **Target** ``Q_target`` = the ``quantile`` (P99 by default, linear interpolation) of
  the per-bin rate in req/s, times ``growth``. The sources: plan from P95/P99 peaks,
  not means.
* **Confidence interval** of the target: a block bootstrap (fixed seed) that resamples
  whole days when the series spans at least two days, else 10-minute blocks, and takes
  the 2.5th/97.5th percentiles of the resampled target.
* **Staged reservation**: near term = current peak (the max per-bin rate) x 1.5; mid
  term = a 6-month forecast of the daily peak (linear trend, statsmodels OLS on complete
  days) x 1.5, only when the series spans enough weeks (4 by default); otherwise the
  reason it cannot be made.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.quantiles import QUANTILE_METHOD, quantile
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.traffic.binning import RateSeries

DAY_S = 86_400.0
DEFAULT_SEED = 20261129


@dataclass(frozen=True)
class MidTermForecast:
    """A linear-trend forecast of the daily peak rate ``horizon_days`` after the series ends."""

    horizon_days: float
    n_days: int
    slope_rps_per_day: float
    slope_ci95: tuple[float, float]
    forecast_rps: float
    forecast_pi95: tuple[float, float]
    factor: float
    statement: str

    @property
    def reservation_rps(self) -> float:
        return self.forecast_rps * self.factor

    def to_dict(self) -> dict[str, object]:
        return {
            "available": True,
            "method": "OLS of the daily peak per-bin rate on the day index (statsmodels), extrapolated",
            "horizon_days": self.horizon_days,
            "n_days": self.n_days,
            "slope_rps_per_day": self.slope_rps_per_day,
            "slope_ci95": list(self.slope_ci95),
            "forecast_rps": self.forecast_rps,
            "forecast_pi95": list(self.forecast_pi95),
            "factor": self.factor,
            "rps": self.reservation_rps,
            "statement": self.statement,
        }


@dataclass
class Targets:
    """Target load, its CI, and the staged reservation (all in req/s)."""

    quantile: float
    growth: float
    bin_s: float
    n_bins: int
    basis_rps: float
    target_rps: float
    target_ci95: tuple[float, float] | None
    ci_method: str
    peak_rps: float
    near_term_factor: float
    mid_term: MidTermForecast | Unavailable
    notes: list[str] = field(default_factory=list)

    @property
    def near_term_rps(self) -> float:
        return self.peak_rps * self.near_term_factor

    @property
    def statement(self) -> str:
        """How the target was computed, in one sentence (``targets.target.statement`` in the JSON)."""
        return (f"Q_target = P{self.quantile * 100:g} of the {self.bin_s:g} s rate ({self.basis_rps:.4g} req/s) "
                f"x growth {self.growth:g} = {self.target_rps:.4g} req/s")

    def to_dict(self) -> dict[str, object]:
        return {
            "target": {
                "rps": self.target_rps,
                "quantile": self.quantile,
                "growth": self.growth,
                "basis_rps": self.basis_rps,
                "bin_s": self.bin_s,
                "n_bins": self.n_bins,
                "ci95": list(self.target_ci95) if self.target_ci95 else None,
                "ci_method": self.ci_method,
                "statement": self.statement,
            },
            "peak": {"rps": self.peak_rps, "bin_s": self.bin_s},
            "near_term": {
                "rps": self.near_term_rps,
                "factor": self.near_term_factor,
                "basis": f"current peak: the max {self.bin_s:g} s rate",
            },
            "mid_term": self.mid_term.to_dict(),
            "notes": self.notes,
        }

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        ci = f" (95% CI {self.target_ci95[0]:.3g}–{self.target_ci95[1]:.3g})" if self.target_ci95 else ""
        mid = (
            f"{self.mid_term.reservation_rps:.3g} req/s" if isinstance(self.mid_term, MidTermForecast)
            else f"<i>{html.escape(self.mid_term.reason)}</i>"
        )
        return (
            f"<p><b>Target</b> {self.target_rps:.4g} req/s{ci}; near term {self.near_term_rps:.4g} req/s; "
            f"mid term {mid}</p>"
        )


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
    """(day index, max rate) for each complete day of the series."""
    per_day = int(round(DAY_S / series.bin_s))
    t = series.slot_clock_s()
    day = np.floor(t / DAY_S).astype(np.int64)
    days, inv, counts = np.unique(day, return_inverse=True, return_counts=True)
    peaks = np.full(days.size, -np.inf)
    np.maximum.at(peaks, inv, series.rate_rps)
    keep = counts == per_day
    return days[keep].astype(float), peaks[keep]


def mid_term_forecast(
    series: RateSeries,
    *,
    horizon_days: float = 182.5,
    factor: float = 1.5,
    min_weeks: float = 4.0,
) -> MidTermForecast | Unavailable:
    """Linear-trend forecast of the daily peak ``horizon_days`` ahead, or why it cannot be made."""
    span_days = series.span_s / DAY_S
    if span_days < 7 * min_weeks:
        return Unavailable(
            f"the series spans {span_days:.2f} days; a {horizon_days:g}-day trend forecast needs at least "
            f"{min_weeks:g} weeks of traffic"
        )
    if series.bin_s > DAY_S:
        return Unavailable(f"bins of {series.bin_s:g} s are longer than a day")
    from statsmodels.regression.linear_model import OLS

    x, y = _daily_peaks(series)
    if x.size < 7 * min_weeks:
        return Unavailable(f"only {x.size} complete days; a trend forecast needs {7 * min_weeks:g}")
    fit = OLS(y, np.column_stack([np.ones_like(x), x])).fit()
    x_new = x[-1] + horizon_days
    pred = fit.get_prediction(np.array([[1.0, x_new]])).summary_frame(alpha=0.05)
    slope_lo, slope_hi = (float(v) for v in fit.conf_int(alpha=0.05)[1])
    fc = float(pred["mean"].iloc[0])
    pi = (float(pred["obs_ci_lower"].iloc[0]), float(pred["obs_ci_upper"].iloc[0]))
    sig = "no significant trend (the slope's 95% CI includes 0)" if slope_lo <= 0 <= slope_hi else (
        "a significant trend"
    )
    statement = (
        f"daily peak rate over {x.size} complete days: slope {fit.params[1]:+.4g} req/s per day ({sig}); "
        f"forecast {horizon_days:g} days after the last day {fc:.4g} req/s (95% PI {pi[0]:.4g}–{pi[1]:.4g}); "
        f"reservation x{factor:g}. A straight-line extrapolation: treat it as a planning input, not a prediction"
    )
    if fc <= 0:
        statement += "; the forecast is not positive, so the trend cannot be extrapolated this far"
    return MidTermForecast(horizon_days, int(x.size), float(fit.params[1]), (slope_lo, slope_hi), fc, pi, factor,
                           statement)


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
    return Targets(
        quantile=quantile_level,
        growth=growth,
        bin_s=series.bin_s,
        n_bins=int(rate.size),
        basis_rps=basis,
        target_rps=basis * growth,
        target_ci95=ci,
        ci_method=method,
        peak_rps=float(rate.max()),
        near_term_factor=near_term_factor,
        mid_term=mid_term_forecast(series, horizon_days=horizon_days, factor=mid_term_factor, min_weeks=min_weeks),
        notes=notes,
    )
