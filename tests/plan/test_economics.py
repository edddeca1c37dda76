"""Tokens, money and the staged plan (plan/economics.py): every figure worked out by hand here."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.plan.capacity import BufferPlan, BurstModel
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.economics import (
    budget_row,
    burst_buffer_monthly_cost,
    cost_per_million_output_tokens,
    instances_for,
    money_for,
    staged_for,
    token_rates,
    weeks_until_exhausted,
)
from bearing_lib.traffic.targets import trend_forecast

PLAN = CapacityPlan.from_dict(json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "report" / "plan.json")
                                         .read_text()))
# hand-made plan: per-instance allowable 2.61 req/s, base 1 + buffer 1 = 2, no buffer_plan (fixed), target 2.4
INST = PLAN.instances


def test_token_rates_and_price_per_million_output_tokens():
    t = token_rates(2.61, mean_input_tokens=1000, mean_output_tokens=250)
    assert (t.input_tokens_per_s, t.output_tokens_per_s, t.total_tokens_per_s) == pytest.approx((2610, 652.5, 3262.5))
    # $4/h buys 2.61 req/s × 250 tokens × 3600 s = 2,349,000 output tokens an hour → $1.7029 per million
    assert cost_per_million_output_tokens(4.0, rps=2.61, mean_output_tokens=250) == pytest.approx(4 / 2.349)


def test_money_of_the_plans_instances_fixed_buffer():
    e = money_for(INST, price_per_hour=4.0, mean_input_tokens=1000, mean_output_tokens=250, monthly_budget=10_000)
    assert e.monthly_cost_all_instances_always_on == pytest.approx(2 * 4 * 730)  # 5,840
    assert e.monthly_cost_base == pytest.approx(2920) and e.monthly_cost_burst_buffer == pytest.approx(2920)
    assert e.monthly_cost_recommended == pytest.approx(5840)
    assert e.usd_per_request == pytest.approx(4 / (2.61 * 3600))
    assert e.budget_row.status == "green" and e.budget_row.value == pytest.approx(0.584)


def test_elastic_buffer_costs_only_its_burst_hours():
    inst = dataclasses.replace(INST, buffer_plan=BufferPlan("elastic", 1, "hand-made"),
                               burst=BurstModel(3, per_month=2, duration_min=90))
    e = money_for(inst, price_per_hour=4.0, mean_input_tokens=1000, mean_output_tokens=250)
    assert e.monthly_cost_burst_buffer == pytest.approx(1 * 4 * 2 * 1.5)  # 2 bursts × 1.5 h
    assert e.monthly_cost_recommended == pytest.approx(2920 + 12)
    assert e.budget_row.status == "red" and "no budget" in e.budget_row.reason
    assert burst_buffer_monthly_cost(2, 3.0, mode="fixed") == pytest.approx(2 * 3 * 730)
    with pytest.raises(ParameterError):
        burst_buffer_monthly_cost(1, 3.0, mode="elastic")


def test_budget_row_bands():
    assert budget_row(None, 100).status == "red"
    assert budget_row(5840, 6000).status == "yellow"  # 97%: fits, less than 20% headroom
    assert budget_row(5840, 5000).status == "red"
    assert budget_row(4800, 6000).status == "green"  # exactly 80%


def test_near_term_instances_from_the_plan():
    s = staged_for(INST.per_instance_allowable_rps, INST.total, PLAN.target.rps)
    assert s.near_term.rps == pytest.approx(3.6) and s.near_term.instances == 2  # ceil(3.6 / 2.61)
    assert s.mid_term is None and "4 weeks" in s.mid_term_reason
    assert instances_for(2.61 / 1.5, 2.61) == 1  # exactly one instance, not two by rounding


def _by_hand(y: np.ndarray, horizon: float = 182.5):
    """OLS of y on day 0..n-1 by the closed form: slope, intercept, slope 95 % CI, value and PI at the horizon."""
    n = y.size
    x = np.arange(n, dtype=float)
    sxx = float(((x - x.mean()) ** 2).sum())
    b = float(((x - x.mean()) * (y - y.mean())).sum()) / sxx
    a = float(y.mean()) - b * float(x.mean())
    s2 = float(((y - a - b * x) ** 2).sum()) / (n - 2)
    t = stats.t.ppf(0.975, n - 2)
    ci = (b - t * math.sqrt(s2 / sxx), b + t * math.sqrt(s2 / sxx))
    x0 = n - 1 + horizon
    half = t * math.sqrt(s2 * (1 + 1 / n + (x0 - x.mean()) ** 2 / sxx))
    return b, a, ci, a + b * x0, half


def test_a_significant_trend_is_extrapolated_with_its_prediction_interval():
    # known truth: 35 daily peaks on 10 + 0.5 d, with ±0.3 alternating noise
    y = np.array([10 + 0.5 * d + (0.3 if d % 2 else -0.3) for d in range(35)])
    b, a, ci, value, half = _by_hand(y)
    assert ci[0] > 0  # the slope's CI excludes 0: a trend
    fc = trend_forecast(np.arange(35.0), y)
    assert fc.significant and fc.slope_rps_per_day == pytest.approx(b) and fc.intercept == pytest.approx(a)
    assert fc.slope_ci95 == pytest.approx(ci)
    assert (fc.value, fc.lower, fc.upper) == pytest.approx((value, value - half, value + half))
    assert "a trend over 35 complete days" in fc.statement
    # the line at day 34 + 7k first exceeds 40 req/s at k = the smallest k with a + b (34 + 7k) > 40
    k = next(k for k in range(600) if a + b * (34 + 7 * k) > 40.0)
    assert weeks_until_exhausted(fc, 40.0) == k
    s = staged_for(INST.per_instance_allowable_rps, 20, PLAN.target.rps, forecast=fc)
    assert s.mid_term.instances == math.ceil(value * 1.5 / 2.61 - 1e-9)
    assert s.mid_term.instances_upper == math.ceil((value + half) * 1.5 / 2.61 - 1e-9)
    # 20 × 2.61 = 52.2 req/s
    k52 = next(k for k in range(600) if a + b * (34 + 7 * k) > 52.2)
    assert s.fleet_runs_out.weeks_after_last == k52 and f"runs out in {k52} week(s)" in s.fleet_runs_out.statement


def test_no_trend_gives_the_level_and_no_exhaustion_date():
    # known truth: a flat level of 5 req/s, ±1 on alternate days, over 35 days (no trend)
    y = np.array([5.0 + (1.0 if d % 2 else -1.0) for d in range(35)])
    b, _, ci, _, _ = _by_hand(y)
    assert ci[0] < 0 < ci[1]
    fc = trend_forecast(np.arange(35.0), y)
    assert not fc.significant and fc.slope_ci95 == pytest.approx(ci)
    mean, sd = float(y.mean()), float(y.std(ddof=1))
    half = stats.t.ppf(0.975, 34) * sd * math.sqrt(1 + 1 / 35)
    assert (fc.value, fc.lower, fc.upper) == pytest.approx((mean, mean - half, mean + half))
    assert "no trend detected over 35 days" in fc.statement
    assert weeks_until_exhausted(fc, 5.5) is None  # no date from noise, even though the level is close
    s = staged_for(INST.per_instance_allowable_rps, 1, PLAN.target.rps, forecast=fc)
    assert s.fleet_runs_out.weeks_after_last is None
    assert "no trend detected over 35 days" in s.fleet_runs_out.statement and "runs out in" not in \
        s.fleet_runs_out.statement
    assert "no trend detected" in s.mid_term.rule


def test_random_series_with_and_without_a_trend():
    rng = np.random.default_rng(29)
    days = np.arange(60.0)
    trend = 20 + 0.2 * days + rng.normal(0, 1.0, 60)  # 0.2 req/s per day, noise sd 1: 12 sd over the span
    flat = 20 + rng.normal(0, 1.0, 60)
    assert trend_forecast(days, trend).significant
    f = trend_forecast(days, flat)
    assert not f.significant and f.value == pytest.approx(float(flat.mean()))


def test_a_falling_trend_is_never_below_zero():
    y = np.array([60 - 1.5 * d + (0.5 if d % 2 else -0.5) for d in range(30)])
    fc = trend_forecast(np.arange(30.0), y)
    assert fc.significant and fc.slope_rps_per_day < 0
    assert fc.value == 0.0 and fc.lower == 0.0 and fc.upper >= 0.0 and fc.clipped
    assert "clipped at 0" in fc.statement
    assert fc.at(1000.0) == 0.0
    # a flat noisy level near 0: the lower end of its interval is clipped, not negative
    low = np.array([0.2 + (1.0 if d % 2 else -0.2) for d in range(30)])
    g = trend_forecast(np.arange(30.0), low)
    assert not g.significant and g.lower == 0.0 and g.clipped


def test_too_few_weeks_and_a_price_that_is_no_price():
    with pytest.raises(InsufficientDataError):
        trend_forecast(np.arange(27.0), np.ones(27))
    with pytest.raises(ParameterError, match="price_per_hour must be a positive number"):
        money_for(INST, price_per_hour=0, mean_input_tokens=1, mean_output_tokens=1)


def test_tokens_and_money_say_their_two_sides():
    # the limit (req/s) was measured on the test's requests, the tokens per request are production's: both
    # the tokens rule and the money say so (issue 25: a 76-token test's limit × production's 1,469 tokens)
    from bearing_lib.plan.economics import TWO_SIDES

    e = money_for(INST, price_per_hour=4.0, mean_input_tokens=1000, mean_output_tokens=250)
    assert e.token_basis == TWO_SIDES and "load test's limit" in TWO_SIDES and "production's" in TWO_SIDES
