"""Daily and weekly cycles of production traffic: slot baselines and MSTL decomposition.

* **Slot baselines**: the per-minute rate (req/s) grouped by hour of day, and by weekday x
  hour, with P95 per slot (the "peak of a typical 09:00") and a robust burst baseline
  (the median over days of each day's P95 in that slot, so one burst day cannot raise
  its own baseline). Hour-of-day slots need one full day; weekday x hour slots one full
  week; a slot seen on fewer than two days (weeks) is flagged as not repeated.
* **Decomposition**: MSTL on hourly mean rates (statsmodels' algorithm and defaults, computed in numpy by
  :mod:`bearing_lib.traffic.mstl` to the same bits, without statsmodels' imports), with a daily (24 h) component
  when the series holds at least two full days and a weekly (168 h) one when it holds at
  least two full weeks.

Wall-clock series use UTC hours and weekdays (Monday = 0); relative-clock series count
hours and days from the trace start, which is said in ``basis``. Both results are the profile's own parts
(:class:`~bearing_lib.traffic.document.SlotBaselines`, :class:`~bearing_lib.traffic.document.Decomposition`): the
frames and arrays they are computed from stay in this module.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from bearing_lib.common.quantiles import quantile_expr
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.document import (
    Decomposition,
    DecompositionTrend,
    SeasonalComponent,
    SlotBaselines,
    SlotPeak,
    SlotRow,
    SlotTable,
)
from bearing_lib.traffic.mstl import mstl

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _basis(series: RateSeries) -> str:
    if series.aligned:
        return "UTC wall clock (weekday 0 = Monday)"
    return "hours and days counted from the trace start (the source's clock has no wall-clock anchor)"


def _slot_frame(series: RateSeries) -> pl.DataFrame:
    t = series.slot_clock_s()
    day = np.floor(t / DAY_S).astype(np.int64)
    hour = (np.floor(t / 3600.0).astype(np.int64)) % 24
    # 1970-01-01 was a Thursday (weekday 3 with Monday = 0).
    weekday = (day + 3) % 7 if series.aligned else day % 7
    return pl.DataFrame(
        {"day": day, "week": np.floor_divide(day if not series.aligned else day + 3, 7), "weekday": weekday,
         "hour": hour, "rate_rps": series.rate_rps}
    )


def _slot_table(frame: pl.DataFrame, keys: list[str], period: str) -> pl.DataFrame:
    """Per slot: bins, periods seen, mean/P50/P95/max rate, and the robust baseline."""
    per_period = frame.group_by([period, *keys]).agg(quantile_expr("rate_rps", 0.95).alias("p95_of_period"))
    robust = per_period.group_by(keys).agg(
        pl.len().alias(f"n_{period}s"),
        quantile_expr("p95_of_period", 0.5).alias("baseline_rps"),
    )
    stats = frame.group_by(keys).agg(
        pl.len().alias("n_bins"),
        pl.col("rate_rps").mean().alias("mean_rps"),
        quantile_expr("rate_rps", 0.5).alias("p50_rps"),
        quantile_expr("rate_rps", 0.95).alias("p95_rps"),
        pl.col("rate_rps").max().alias("max_rps"),
    )
    return stats.join(robust, on=keys).sort(keys)


STATISTIC = ("P95 of the per-bin rate in the slot, req/s; baseline_rps = median over periods of each period's P95 "
             "in the slot")


def _label(row: SlotRow, aligned: bool) -> str:
    h = f"{row.hour:02d}:00"
    if row.weekday is None:
        return h if aligned else f"hour {row.hour}"
    day = WEEKDAYS[row.weekday] if aligned else f"day {row.weekday}"
    return f"{day} {h}" if aligned else f"{day} hour {row.hour}"


def _slot_part(table: pl.DataFrame, repeated: bool, n_periods: int, aligned: bool) -> SlotTable:
    """The slot layout of a computed slot table: its rows, the extreme slots by P95 and their ratio."""
    rows = [SlotRow(**r) for r in table.to_dicts()]
    peak = max(rows, key=lambda r: r.p95_rps)
    trough = min(rows, key=lambda r: r.p95_rps)
    return SlotTable(
        repeated=repeated, n_periods=n_periods, statistic=STATISTIC, rows=rows,
        peak=SlotPeak(slot=_label(peak, aligned), p95_rps=peak.p95_rps),
        trough=SlotPeak(slot=_label(trough, aligned), p95_rps=trough.p95_rps),
        peak_to_trough=(peak.p95_rps / trough.p95_rps) if trough.p95_rps > 0 else None,
    )


def _unavailable(why: str) -> SlotTable:
    return SlotTable(available=False, reason=why)


def _baselines(series: RateSeries, hod: SlotTable, how: SlotTable) -> SlotBaselines:
    return SlotBaselines(available=hod.available, reason=hod.reason, basis=_basis(series), bin_s=series.bin_s,
                         hour_of_day=hod, hour_weekday=how)


RELATIVE_CLOCK = ("relative clock (seconds from the trace start): the trace has no time of day or weekday, so "
                  "no hour-of-day or weekday slots")


def slot_baselines(series: RateSeries) -> SlotBaselines:
    """Hour-of-day and weekday x hour baselines, or the reason the span (or clock) does not allow them.

    A relative clock has no time of day or weekday: both layouts are unavailable whatever the span
    (hours counted from an arbitrary origin are not a time of day)."""
    span_days = series.span_s / DAY_S
    if not series.aligned:
        return _baselines(series, _unavailable(RELATIVE_CLOCK), _unavailable(RELATIVE_CLOCK))
    if series.bin_s > 3600:
        why = f"bins of {series.bin_s:g} s are longer than an hour"
        return _baselines(series, _unavailable(why), _unavailable(why))
    frame = _slot_frame(series)
    if series.span_s < DAY_S:
        hod = _unavailable(
            f"the series spans {series.span_s / 3600:.2f} h ({span_days:.2f} days); hour-of-day baselines "
            "need at least one full day (two for a repeated pattern)"
        )
    else:
        hod = _slot_part(_slot_table(frame, ["hour"], "day"), span_days >= 2, frame["day"].n_unique(), series.aligned)
    if series.span_s < WEEK_S:
        how = _unavailable(
            f"the series spans {span_days:.2f} days; weekday x hour baselines need at least one full week "
            "(two for a repeated pattern)"
        )
    else:
        how = _slot_part(_slot_table(frame, ["weekday", "hour"], "week"), span_days >= 14, frame["week"].n_unique(),
                         series.aligned)
    return _baselines(series, hod, how)


def burst_baseline_rps(series: RateSeries, slots: SlotBaselines) -> tuple[np.ndarray, str]:
    """Per-bin baseline for burst detection, and how it was made.

    With hour-of-day slots: the slot's robust baseline (median over days of each day's
    P95 in that hour). Shorter series are one slot: the P95 of the whole series.
    """
    table: pl.DataFrame | None = None
    n_periods = 0
    if not series.aligned and series.bin_s <= 3600 and series.span_s >= DAY_S:
        # no time-of-day slots are published on a relative clock, but 24 h periods counted from the
        # trace start still give a burst baseline that one burst period cannot raise
        table, n_periods = _slot_table(_slot_frame(series), ["hour"], "day"), _slot_frame(series)["day"].n_unique()
    elif slots.hour_of_day is not None and slots.hour_of_day.available:
        table, n_periods = slots.hour_of_day.table, slots.hour_of_day.n_periods or 0
    if table is not None:
        frame = _slot_frame(series).select("hour").join(
            table.select("hour", "baseline_rps"), on="hour", how="left", maintain_order="left"
        )
        how = ("hour-of-day slot baseline: median over days of each day's P95 rate in that hour" if series.aligned
               else "24-hour periodic slot baseline (hours counted from the trace start: the clock is relative, "
               "no time of day): median over 24 h periods of each period's P95 rate in that hour")
        if n_periods < 3:
            how += (
                f" (only {n_periods} day(s): a burst day can still raise its own baseline; "
                "three or more days make it robust)"
            )
        return frame["baseline_rps"].to_numpy(), how
    p95 = float(np.quantile(series.rate_rps, 0.95, method="linear")) if len(series) else float("nan")
    return np.full(len(series), p95), (
        f"the whole series as one slot (it spans {series.span_s / 3600:.2f} h, less than a day): "
        "its P95 rate; bursts relative to a typical day cannot be told apart from this trace's own peak"
    )


METHOD = ("MSTL as statsmodels computes it (STL per period, 2 iterations; bearing_lib/traffic/mstl.py) on hourly "
          "mean rates")
DEGENERATE = ("the residual is zero: with exactly two cycles of the longest period MSTL fits every point, so seasonal "
              "strength cannot be measured; cycle_correlation (fit-free) says whether the cycles repeat")


def _strength(seasonal: np.ndarray, resid: np.ndarray) -> float:
    """Seasonal strength max(0, 1 - Var(R) / Var(S + R)) (Wang, Smith & Hyndman 2006)."""
    v = np.var(seasonal + resid)
    return float(max(0.0, 1.0 - np.var(resid) / v)) if v > 0 else 0.0


def _cycle_correlation(observed: np.ndarray, trend: np.ndarray, name: str, period: int) -> float | None:
    """Mean Pearson correlation between consecutive cycles of the de-trended observations.

    A fit-free check that the cycle repeats: daily = consecutive days of hourly
    ``observed - trend``; weekly = consecutive weeks of daily means of it (so the
    daily shape does not count as weekly agreement). ``None`` with fewer than 2 cycles.
    """
    x = observed - trend
    if name == "weekly":
        n_days = x.size // 24
        x, period = x[: n_days * 24].reshape(n_days, 24).mean(axis=1), 7
    n = (x.size // period) * period
    cycles = x[:n].reshape(-1, period)
    if cycles.shape[0] < 2:
        return None
    rs = [np.corrcoef(cycles[i], cycles[i + 1])[0, 1] for i in range(cycles.shape[0] - 1)]
    rs = [r for r in rs if np.isfinite(r)]
    return float(np.mean(rs)) if rs else None


def _average_cycle(seasonal: np.ndarray, period: int) -> np.ndarray:
    """The component's mean value at each phase of its period (the average cycle)."""
    n = (seasonal.size // period) * period
    return seasonal[:n].reshape(-1, period).mean(axis=0)


def _decomposition(starts: np.ndarray, observed: np.ndarray, trend: np.ndarray, seasonal: dict[str, np.ndarray],
                   periods_h: dict[str, int], resid: np.ndarray, basis: str, notes: list[str]) -> Decomposition:
    """The profile's decomposition part of an MSTL fit: each component's figures, the trend's range, the residual's
    spread and the hourly series. With a degenerate residual (exactly two cycles of the longest period: MSTL fits
    every point) the strengths are None and a note says why."""
    degenerate = float(np.var(resid)) <= 1e-12 * max(float(np.var(observed)), 1e-300)
    comps = []
    for name, period in periods_h.items():
        prof = _average_cycle(seasonal[name], period)
        comps.append(SeasonalComponent(
            name=name, period_h=period, amplitude_rps=float(prof.max() - prof.min()),
            strength=None if degenerate else _strength(seasonal[name], resid),
            cycle_correlation=_cycle_correlation(observed, trend, name, period),
            peak_phase_h=int(np.argmax(prof)), trough_phase_h=int(np.argmin(prof)), average_cycle_rps=prof.tolist(),
        ))
    return Decomposition(
        method=METHOD,
        input=f"{observed.size} hourly mean rates (req/s), {basis}",
        components=comps,
        trend=DecompositionTrend(start_rps=float(trend[0]), end_rps=float(trend[-1]), min_rps=float(trend.min()),
                       max_rps=float(trend.max())),
        resid_std_rps=float(np.std(resid, ddof=1)),
        notes=notes + ([DEGENERATE] if degenerate else []),
        series={
            "hour_start_s": starts.tolist(),
            "observed_rps": observed.tolist(),
            "trend_rps": trend.tolist(),
            **{f"seasonal_{k}_rps": v.tolist() for k, v in seasonal.items()},
            "resid_rps": resid.tolist(),
        },
    )


def hourly_rates(series: RateSeries) -> tuple[np.ndarray, np.ndarray]:
    """Mean rate (req/s) per complete hour of the series: (hour start s, rate)."""
    per_hour = int(round(3600.0 / series.bin_s))
    if per_hour < 1 or abs(per_hour * series.bin_s - 3600.0) > 1e-6:
        return np.array([]), np.array([])
    t = series.slot_clock_s()
    hour = np.floor(t / 3600.0).astype(np.int64)
    frame = (
        pl.DataFrame({"h": hour, "r": series.rate_rps})
        .group_by("h")
        .agg(pl.len().alias("n"), pl.col("r").mean())
        .filter(pl.col("n") == per_hour)
        .sort("h")
    )
    h = frame["h"].to_numpy()
    # keep the longest run of consecutive complete hours (the series itself is contiguous)
    if h.size and (np.diff(h) != 1).any():  # pragma: no cover - contiguous input never splits
        frame = frame.head(int(np.argmax(np.diff(h) != 1)) + 1)
        h = frame["h"].to_numpy()
    offset = 0.0 if series.aligned else series.origin_s
    return h * 3600.0 + offset, frame["r"].to_numpy()


def decompose(series: RateSeries) -> Decomposition:
    """MSTL of the series' hourly mean rates, or the reason there are too few cycles.

    A daily component needs at least 48 complete hours, a weekly one at least 336.
    statsmodels' MSTL silently drops a period that is at least half the series (so
    exactly two cycles, e.g. ServeGen's 14 days for the weekly period); its STL
    accepts two full cycles, so periods with ``2 * period <= nobs`` are kept (as the
    statsmodels subclass used before :mod:`bearing_lib.traffic.mstl` did).
    """
    if series.bin_s > 3600:
        return Decomposition(available=False, reason=f"bins of {series.bin_s:g} s are longer than an hour")
    per_hour = 3600.0 / series.bin_s
    if abs(per_hour - round(per_hour)) > 1e-9:
        return Decomposition(available=False, reason=f"bins of {series.bin_s:g} s do not divide an hour, so hourly "
                             "rates cannot be formed")
    starts, obs = hourly_rates(series)
    n = obs.size
    if n < 48:
        return Decomposition(available=False, reason=(
            f"the series holds {n} complete hours ({series.span_s / DAY_S:.2f} days); a daily cycle needs at least "
            "two full days (48 h) to be separated from trend and noise"
        ))
    periods = {"daily": 24}
    notes = []
    if n >= 336:
        periods["weekly"] = 168
    else:
        notes.append(f"no weekly component: {n / 24:.1f} days of complete hours, a weekly cycle needs two full weeks")
    # statsmodels' MSTL computed in numpy (traffic/mstl.py: the same numbers, without ~1.2-2 s of imports)
    res = mstl(obs, tuple(periods.values()))
    seas = res.seasonal
    seasonal = {name: seas[i] for i, name in enumerate(periods)}
    return _decomposition(starts, obs, res.trend, seasonal, periods, res.resid, _basis(series), notes)
