"""Burst episodes: synthetic series with bursts planted at known times (SYNTHETIC data).

The planted bursts are recovered exactly (count, start, duration); the per-slot baseline
is checked against an independent numpy computation.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform, validate
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.bursts import find_bursts
from bearing_lib.traffic.profile import profile_traffic
from bearing_lib.traffic.seasonality import burst_baseline_rps, slot_baselines

T0 = 1_704_067_200.0  # 2024-01-01 00:00 UTC, a Monday


def test_find_bursts_by_hand():
    rate = np.array([1, 1, 5, 6, 1, 1, 7, 1], dtype=float)
    base = np.ones(8)
    starts = np.arange(8) * 60.0
    b = find_bursts(rate, base, starts, 60.0, k=3)
    assert b.count == 2
    e1, e2 = b.episodes
    assert (e1.start_s, e1.duration_s, e1.n_bins, e1.peak_rps, e1.peak_multiplier) == (120.0, 120.0, 2, 6.0, 6.0)
    assert e1.excess_requests == (4 + 5) * 60.0 and e1.mean_multiplier == 5.5
    assert (e2.start_s, e2.duration_s, e2.peak_multiplier) == (360.0, 60.0, 7.0)
    # rate equal to k x baseline is not a burst (strictly above)
    assert find_bursts(np.array([3.0]), np.array([1.0]), np.array([0.0]), 60.0, k=3).count == 0
    # runs two quiet bins apart merge only when merge_gap_bins >= 2
    assert find_bursts(rate, base, starts, 60.0, k=3, merge_gap_bins=1).count == 2
    merged = find_bursts(rate, base, starts, 60.0, k=3, merge_gap_bins=2)
    assert merged.count == 1 and merged.episodes[0].duration_s == 300.0
    # a zero baseline cannot be judged
    z = find_bursts(np.array([5.0, 5.0]), np.array([0.0, 1.0]), np.array([0.0, 60.0]), 60.0)
    assert z.count == 1 and z.n_unjudged_bins == 1
    d = b.to_dict()
    assert d["per_month"] == pytest.approx(2 / (8 * 60 / 86400) * 30)
    assert "extrapolation" in d["per_month_note"]


def _week_with_bursts(seed: int = 7) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """7 days of per-minute counts: a daily sine + Poisson noise, and three planted bursts."""
    rng = np.random.default_rng(seed)
    minutes = np.arange(7 * 1440)
    hour = (minutes // 60) % 24
    counts = rng.poisson(100 + 50 * np.sin(2 * np.pi * hour / 24)).astype(float)
    planted = [(1 * 1440 + 10 * 60, 30), (3 * 1440 + 2 * 60, 90), (5 * 1440 + 20 * 60 + 10, 1)]
    for start, length in planted:
        counts[start : start + length] = 800
    return counts, planted


def test_planted_bursts_recovered_exactly_on_slot_baseline():
    counts, planted = _week_with_bursts()
    series = RateSeries(60.0, T0 + np.arange(counts.size) * 60.0, counts, aligned=True)
    slots = slot_baselines(series)
    base, how = burst_baseline_rps(series, slots)
    # independent baseline: per hour of day, median over the 7 days of that day's P95 (linear)
    rate = counts / 60.0
    by = rate.reshape(7, 24, 60)
    expected = np.median(np.quantile(by, 0.95, axis=2), axis=0)
    assert np.allclose(base.reshape(7, 24, 60)[0, :, 0], expected, rtol=1e-12)
    assert "median over days" in how
    b = find_bursts(series.rate_rps, base, series.start_s, 60.0, k=3.0, baseline=how)
    assert b.count == 3
    for ep, (start, length) in zip(b.episodes, planted, strict=True):
        assert ep.start_s == T0 + start * 60.0
        assert ep.duration_s == length * 60.0
        assert ep.peak_rps == pytest.approx(800 / 60)
    assert b.per_month == pytest.approx(3 / 7 * 30)
    # the pooled P95 of the contaminated hour (day 3, 02:00-03:30) is far above the robust baseline
    hod = slots.hour_of_day.table
    h2 = hod.filter(pl.col("hour") == 2).row(0, named=True)
    assert h2["baseline_rps"] == pytest.approx(expected[2]) and h2["p95_rps"] > 3 * h2["baseline_rps"]


def test_profile_finds_planted_bursts_in_a_request_trace():
    # 3 days at a flat 20 requests/min with one 45-minute burst of 100/min on day 2 at 14:00 UTC
    counts = np.full(3 * 1440, 20)
    counts[1440 + 14 * 60 : 1440 + 14 * 60 + 45] = 100
    times = np.concatenate(
        [T0 + m * 60.0 + np.arange(n) * 60.0 / n for m, n in enumerate(counts)]  # first request on T0
        + [np.array([T0 + 3 * 86400.0 + 0.5])]  # one request in the next minute closes the last full minute
    )
    prov = Provenance(source="synthetic", format="synthetic", tool="test", sha256="")
    tr = RequestTrace(validate(conform(pl.DataFrame({"start_s": times})), prov), prov)
    d = profile_traffic(tr, n_boot=200).to_dict()
    assert d["per_minute"]["n_minutes"] == 3 * 1440
    b = d["bursts"]
    assert b["count"] == 1 and b["k"] == 3.0
    ep = b["episodes"][0]
    assert ep["start_s"] == T0 + (1440 + 14 * 60) * 60.0 and ep["duration_s"] == 45 * 60.0
    assert ep["peak_multiplier"] == pytest.approx(5.0)
    assert d["slots"]["hour_of_day"]["available"] and d["slots"]["hour_weekday"]["available"] is False
    # a higher k hides it
    assert profile_traffic(tr, burst_k=6.0, n_boot=50).bursts.count == 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=60),
    st.floats(0.5, 5.0),
    st.floats(0.5, 5.0),
)
def test_higher_k_never_finds_more_burst_bins(rates, k1, k2):
    rate = np.array(rates)
    base = np.full(rate.size, 10.0)
    starts = np.arange(rate.size) * 60.0
    lo, hi = sorted((k1, k2))
    b_lo = find_bursts(rate, base, starts, 60.0, k=lo)
    b_hi = find_bursts(rate, base, starts, 60.0, k=hi)
    assert sum(e.n_bins for e in b_hi.episodes) <= sum(e.n_bins for e in b_lo.episodes)
    assert sum(e.n_bins for e in b_lo.episodes) == int((rate > lo * 10.0).sum())
