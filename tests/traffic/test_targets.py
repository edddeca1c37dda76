"""Target load, bootstrap CI and staged reservation, on SYNTHETIC series with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.common.errors import ParameterError
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.targets import bootstrap_quantile_ci, compute_targets

T0 = 1_704_067_200.0


def _series(counts, bin_s=60.0) -> RateSeries:
    counts = np.asarray(counts, dtype=float)
    return RateSeries(bin_s, T0 + np.arange(counts.size) * bin_s, counts, aligned=True)


def test_target_near_term_by_hand():
    rng = np.random.default_rng(1)
    counts = rng.poisson(300, size=600)
    t = compute_targets(_series(counts), quantile_level=0.99, growth=1.2, n_boot=200)
    expected = float(np.quantile(counts / 60.0, 0.99, method="linear"))
    assert t.target.basis_rps == pytest.approx(expected, rel=1e-12)
    assert t.target.rps == pytest.approx(expected * 1.2, rel=1e-12)
    assert t.peak.rps == counts.max() / 60.0
    # near term = the current peak (the P99 before growth, not the busiest minute) x 1.5 (issue #25)
    assert t.near_term.rps == pytest.approx(expected * 1.5, rel=1e-12)
    assert "10-minute blocks" in t.target.ci_method and "60 10-minute blocks" in t.target.ci_method
    lo, hi = t.target.ci95
    assert lo <= t.target.rps <= hi
    # fixed seed: identical on a second run
    assert compute_targets(_series(counts), quantile_level=0.99, growth=1.2, n_boot=200).target.ci95 == [lo, hi]
    d = t.to_dict()
    assert d["target"]["rps"] == t.target.rps and d["near_term"]["factor"] == 1.5
    assert t.mid_term.available is False and "4 weeks" in t.mid_term.reason


def test_day_bootstrap_on_three_constant_days_by_hand():
    # days at 1, 2 and 3 req/s. The P99 of a resample of 3 days is the highest level drawn (the top 1%
    # lies inside one day's 1440 equal values), so it is 1 with probability (1/3)^3 = 3.7% > 2.5%
    # and 3 with probability 1 - (2/3)^3 = 70.4% > 2.5%: the 95% CI is exactly [1, 3].
    counts = np.concatenate([np.full(1440, 60.0), np.full(1440, 120.0), np.full(1440, 180.0)])
    t = compute_targets(_series(counts), n_boot=2000)
    assert "3 days" in t.target.ci_method
    assert t.target.ci95 == [1.0, 3.0]
    assert t.target.rps == 3.0
    # identical days: the CI collapses on the estimate
    lo, hi, n = bootstrap_quantile_ci(np.full(5 * 144, 7.0), 0.99, 144, n_boot=100)
    assert (lo, hi, n) == (7.0, 7.0, 5)


def test_too_few_blocks_gives_no_ci():
    t = compute_targets(_series(np.arange(25)), n_boot=50)
    assert t.target.ci95 is None and "at least 3" in t.target.ci_method
    assert any("25 bins < 100" in n for n in t.notes)


def test_mid_term_forecast_recovers_a_linear_trend():
    # 8 weeks of minutes; each day's busiest minute is 100 + 2 * day req/s, every other minute 50 req/s
    days = 56
    rate = np.full(days * 1440, 50.0)
    for d in range(days):
        rate[d * 1440 + 600] = 100 + 2 * d
    t = compute_targets(_series(rate * 60.0), n_boot=20)
    mt = t.mid_term
    assert mt.available
    assert mt.n_days == days
    assert mt.slope_rps_per_day == pytest.approx(2.0, rel=1e-9)
    # the last complete day is index (T0 / 86400) + 55; forecast 182.5 days later: 100 + 2 * (55 + 182.5)
    assert mt.forecast_rps == pytest.approx(100 + 2 * (55 + 182.5), rel=1e-9)
    assert mt.rps == pytest.approx(1.5 * (100 + 2 * 237.5), rel=1e-9)
    assert t.to_dict()["mid_term"]["available"] is True
    short = compute_targets(_series(rate[: 14 * 1440] * 60.0), n_boot=20).mid_term
    assert short.available is False and "14.00 days" in short.reason


def test_mid_term_forecast_without_a_trend_says_so():
    # 8 weeks; each day's busiest minute is 100 ± 5 req/s (alternate days), no trend: the forecast is the level
    days = 56
    rate = np.full(days * 1440, 50.0)
    peaks = [100 + (5 if d % 2 else -5) for d in range(days)]
    for d in range(days):
        rate[d * 1440 + 600] = peaks[d]
    mt = compute_targets(_series(rate * 60.0), n_boot=20).mid_term
    assert mt.available and not mt.trend.significant
    assert mt.slope_ci95[0] < 0 < mt.slope_ci95[1]
    assert mt.forecast_rps == pytest.approx(float(np.mean(peaks)))
    assert "no trend detected over 56 days" in mt.statement and "No growth is extrapolated" in mt.statement
    d = mt.to_dict()
    assert d["trend_significant"] is False and d["forecast_pi95"][0] >= 0


@pytest.mark.parametrize("kw", [{"quantile_level": 0.0}, {"quantile_level": 1.5}, {"growth": 0.0},
                                {"growth": float("nan")}])
def test_bad_parameters_are_refused(kw):
    with pytest.raises(ParameterError):
        compute_targets(_series(np.arange(100)), **kw)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 1000), min_size=30, max_size=200),
    st.floats(0.1, 10.0),
    st.floats(0.1, 10.0),
    st.floats(0.5, 1.0),
)
def test_target_rises_with_growth_and_quantile(counts, g1, g2, q):
    s = _series(counts)
    lo_g, hi_g = sorted((g1, g2))
    a = compute_targets(s, growth=lo_g, quantile_level=q, n_boot=10)
    b = compute_targets(s, growth=hi_g, quantile_level=q, n_boot=10)
    assert a.target.rps <= b.target.rps
    assert b.target.rps == pytest.approx(a.target.basis_rps * hi_g, rel=1e-12)
    c = compute_targets(s, growth=lo_g, quantile_level=min(1.0, q + 0.01), n_boot=10)
    assert c.target.rps >= a.target.rps
    assert a.target.rps <= a.peak.rps * lo_g * (1 + 1e-12)
