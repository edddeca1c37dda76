"""Slot baselines and MSTL on SYNTHETIC series with known daily and weekly cycles."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.seasonality import Decomposition, burst_baseline_rps, decompose, hourly_rates, slot_baselines

T0 = 1_704_067_200.0  # Monday 2024-01-01 00:00 UTC


def _cycles(days: int, seed: int = 5, noise: float = 2.0) -> np.ndarray:
    """Per-minute rate (req/s): 100 + 40 sin(daily) + 20 on weekdays / -20 on weekends + noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * 1440) * 60.0
    hour = t / 3600.0
    weekday = (t // 86400) % 7
    return 100 + 40 * np.sin(2 * np.pi * hour / 24) + np.where(weekday < 5, 20.0, -20.0) + rng.normal(0, noise, t.size)


def test_slots_match_numpy_and_use_utc_weekdays():
    rate = _cycles(14)
    s = RateSeries(60.0, T0 + np.arange(rate.size) * 60.0, rate * 60.0, aligned=True)
    slots = slot_baselines(s)
    d = slots.to_dict()
    assert d["available"] and d["hour_of_day"]["repeated"] and d["hour_weekday"]["repeated"]
    assert "UTC" in d["basis"]
    by_hour = rate.reshape(14, 24, 60)
    for row in d["hour_of_day"]["rows"]:
        vals = by_hour[:, row["hour"], :].ravel()
        assert row["p95_rps"] == pytest.approx(float(np.quantile(vals, 0.95)), rel=1e-12)
        assert row["mean_rps"] == pytest.approx(float(vals.mean()), rel=1e-12)
        assert row["n_bins"] == 840 and row["n_days"] == 14
    # weekday from the calendar, not from the trace start
    rows = {(r["weekday"], r["hour"]): r for r in d["hour_weekday"]["rows"]}
    sat = datetime(2024, 1, 6, 13, tzinfo=UTC)
    assert sat.weekday() == 5
    i = int((sat.timestamp() - T0) / 60)
    vals = np.concatenate([rate[i : i + 60], rate[i + 7 * 1440 : i + 7 * 1440 + 60]])
    assert rows[(5, 13)]["p95_rps"] == pytest.approx(float(np.quantile(vals, 0.95)), rel=1e-12)
    assert d["hour_of_day"]["peak"]["slot"] in ("05:00", "06:00")  # sine peaks at 06:00
    assert d["hour_weekday"]["trough"]["slot"].startswith(("Sat", "Sun"))
    # the builder's result is the profile's slots part: its JSON reads back into the same object
    assert TrafficProfile.from_dict({"slots": d}).slots == slots
    # the table is the rows as a frame: the robust baseline of 13:00, median over days of each day's P95
    hod = slots.hour_of_day.table
    assert hod.columns == ["hour", "n_bins", "mean_rps", "p50_rps", "p95_rps", "max_rps", "n_days", "baseline_rps"]
    expect = float(np.median([np.quantile(by_hour[day, 13, :], 0.95) for day in range(14)]))
    assert hod.filter(hod["hour"] == 13)["baseline_rps"].item() == pytest.approx(expect, rel=1e-12)


def test_mstl_recovers_daily_and_weekly_amplitudes():
    rate = _cycles(21)
    s = RateSeries(60.0, T0 + np.arange(rate.size) * 60.0, rate * 60.0, aligned=True)
    dec = decompose(s)
    assert isinstance(dec, Decomposition) and dec.available
    assert [c.name for c in dec.components] == ["daily", "weekly"]
    daily, weekly = dec.component("daily"), dec.component("weekly")
    assert (daily.period_h, weekly.period_h) == (24, 168)
    # hourly means of a sine of amplitude 40: peak-to-trough 80 x sinc(1/24) (mean over each hour)
    expected = 80 * np.sin(np.pi / 24) / (np.pi / 24)
    assert daily.amplitude_rps == pytest.approx(expected, rel=0.05)
    assert 30 < weekly.amplitude_rps < 50  # a +-20 weekday/weekend step, smoothed by STL
    assert daily.strength > 0.95 and weekly.strength > 0.9  # measured: the residual is not degenerate
    assert daily.cycle_correlation > 0.95 and weekly.cycle_correlation > 0.9
    assert not any("residual is zero" in n for n in dec.notes)
    hourly = rate.reshape(-1, 60).mean(axis=1)
    assert dec.series is not None and len(dec.series["observed_rps"]) == 21 * 24
    assert np.allclose(dec.series["observed_rps"], hourly, rtol=1e-12)
    # the figures from the series the part carries, by hand: the average daily cycle, the daily strength and the
    # correlation of consecutive de-trended days
    seas, resid = np.array(dec.series["seasonal_daily_rps"]), np.array(dec.series["resid_rps"])
    assert np.allclose(np.array(dec.series["trend_rps"]) + seas + np.array(dec.series["seasonal_weekly_rps"]) + resid,
                       hourly, rtol=1e-12)
    avg = seas.reshape(21, 24).mean(axis=0)
    assert daily.average_cycle_rps == pytest.approx(avg.tolist(), rel=1e-12)
    assert daily.amplitude_rps == pytest.approx(avg.max() - avg.min(), rel=1e-12)
    assert (daily.peak_phase_h, daily.trough_phase_h) == (int(np.argmax(avg)), int(np.argmin(avg)))
    assert daily.strength == pytest.approx(1 - resid.var() / (seas + resid).var(), rel=1e-12)
    days = (hourly - np.array(dec.series["trend_rps"])).reshape(21, 24)
    corr = np.mean([np.corrcoef(days[i], days[i + 1])[0, 1] for i in range(20)])
    assert daily.cycle_correlation == pytest.approx(corr, rel=1e-12)
    assert dec.resid_std_rps == pytest.approx(resid.std(ddof=1), rel=1e-12)
    # the builder's result is the profile's decomposition part: its JSON reads back into the same object
    assert TrafficProfile.from_dict({"decomposition": dec.to_dict()}).decomposition == dec
    hours, obs = hourly_rates(s)
    assert np.allclose(obs, hourly, rtol=1e-12)
    assert hours[0] == T0


def test_short_spans_say_why():
    rate = _cycles(2)[: 1440 + 600]  # 1.4 days
    s = RateSeries(60.0, T0 + np.arange(rate.size) * 60.0, rate * 60.0, aligned=True)
    slots = slot_baselines(s)
    assert slots.to_dict()["hour_of_day"]["repeated"] is False
    assert slots.hour_weekday.available is False and "one full week" in slots.hour_weekday.reason
    dec = decompose(s)
    assert dec.available is False and "34 complete hours" in dec.reason and "two full days" in dec.reason
    ten_days = _cycles(10)
    s10 = RateSeries(60.0, T0 + np.arange(ten_days.size) * 60.0, ten_days * 60.0, aligned=True)
    dec10 = decompose(s10)
    assert [c.name for c in dec10.components] == ["daily"] and "two full weeks" in dec10.notes[0]


def test_relative_clock_has_no_slots_but_a_periodic_burst_baseline_from_the_start():
    """A relative clock has no time of day or weekday: no slots are computed (both layouts say so),
    while the burst baseline still uses 24 h periods counted from the trace's first bin."""
    rate = _cycles(2)
    s = RateSeries(60.0, 5_000.0 + np.arange(rate.size) * 60.0, rate * 60.0, aligned=False, origin_s=5_000.0)
    slots = slot_baselines(s)
    d = slots.to_dict()
    assert "from the trace start" in d["basis"] and d["available"] is False
    for key in ("hour_of_day", "hour_weekday"):
        assert getattr(slots, key).available is False
        assert d[key]["available"] is False and "relative clock" in d[key]["reason"]
    base, how = burst_baseline_rps(s, slots)
    assert "24-hour periodic" in how and "relative" in how
    # hour 0 from the start: the median over the 2 days of each day's P95 of its 60 minutes (linear)
    by = rate.reshape(2, 24, 60)
    expect = float(np.median([np.quantile(by[d_, 0, :], 0.95, method="linear") for d_ in range(2)]))
    assert base[0] == pytest.approx(expect, rel=1e-12)
    assert base[60 * 24 + 30] == pytest.approx(expect, rel=1e-12)  # the same hour of the second period


def test_bins_that_do_not_divide_an_hour_are_refused():
    s = RateSeries(420.0, np.arange(1000) * 420.0, np.ones(1000), aligned=False)
    dec = decompose(s)
    assert dec.available is False and "do not divide an hour" in dec.reason
