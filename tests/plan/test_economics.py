"""Tokens, money and the staged plan (plan/economics.py): every figure worked out by hand here."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from scipy import stats

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.plan.capacity import BufferPlan, BurstModel
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.economics import (
    budget_row,
    burst_buffer_monthly_cost,
    cost_per_million_output_tokens,
    growth_forecast,
    instances_for,
    money_for,
    staged_for,
    token_rates,
    weeks_until_exhausted,
)

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


def test_growth_forecast_matches_the_closed_form_ols_and_its_prediction_interval():
    peaks = [10.0, 13.0, 14.0, 17.0]
    fc = growth_forecast(peaks, horizon_weeks=26)
    # weeks 0..3: mean 1.5, Sxx 5, Sxy 11 → slope 2.2, intercept 13.5 − 3.3 = 10.2
    assert fc.slope_per_week == pytest.approx(2.2) and fc.intercept == pytest.approx(10.2)
    w0 = 3 + 26
    assert fc.value == pytest.approx(10.2 + 2.2 * w0)  # 74.0
    # residuals −0.2, 0.6, −0.6, 0.2 → SSE 0.8, s² = 0.8 / 2;
    # PI half-width t(0.975, 2) × sqrt(s²(1 + 1/4 + (w0 − 1.5)² / 5))
    half = stats.t.ppf(0.975, 2) * math.sqrt(0.4 * (1 + 1 / 4 + (w0 - 1.5) ** 2 / 5))
    assert (fc.lower, fc.upper) == pytest.approx((74.0 - half, 74.0 + half))
    s = staged_for(INST.per_instance_allowable_rps, INST.total, PLAN.target.rps, weekly_peaks=peaks)
    assert s.mid_term.instances == math.ceil(74.0 * 1.5 / 2.61)  # 43
    assert s.fleet_runs_out.weeks_after_last == 0  # 2 × 2.61 req/s is below even the last peak


def test_weeks_until_the_fleet_runs_out():
    fc = growth_forecast([10.0, 13.0, 14.0, 17.0])
    # the line at week 3 + k is 16.8 + 2.2k; above 31 first at k = 7 (32.2; k = 6 gives 30.0)
    assert weeks_until_exhausted(fc, 31.0) == 7
    flat = growth_forecast([5.0, 5.0, 5.0, 5.0])
    assert weeks_until_exhausted(flat, 6.0) is None


def test_too_few_weeks_and_a_price_that_is_no_price():
    with pytest.raises(InsufficientDataError):
        growth_forecast([1.0, 2.0, 3.0])
    with pytest.raises(ParameterError, match="price_per_hour must be a positive number"):
        money_for(INST, price_per_hour=0, mean_input_tokens=1, mean_output_tokens=1)
