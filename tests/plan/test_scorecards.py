"""Scorecard rows and health checklist: computed where the data allows, "not measured" otherwise."""

from __future__ import annotations

import pytest

from bearing_lib.limits.sla import Clause
from bearing_lib.plan.plan_step import PlanStep
from bearing_lib.plan.scorecards import (
    budget_row,
    business_row,
    checklist,
    compute_row,
    data_row,
    engineering_row,
    scorecard,
)

SLA = [Clause(text="p99(latency) < 2s", kind="percentile", metric="latency_ms", stat="p99", op="<", threshold=2000,
              unit="ms")]
STEPS = [
    PlanStep(step=0, offered_load=1, offered_load_unit="concurrency", throughput_rps=2.0, error_rate=0.0,
             stats={"latency_ms_p95": 600}),
    PlanStep(step=1, offered_load=4, offered_load_unit="concurrency", throughput_rps=6.5, error_rate=0.0005,
             stats={"latency_ms_p95": 900}),
    PlanStep(step=2, offered_load=8, offered_load_unit="concurrency", throughput_rps=12.0, error_rate=0.002,
             stats={"latency_ms_p95": 1500}),
    PlanStep(step=3, offered_load=16, offered_load_unit="concurrency", throughput_rps=13.0, error_rate=0.02,
             stats={"latency_ms_p95": 2900}),
]


@pytest.mark.parametrize("h,status", [(0.45, "green"), (0.30, "green"), (0.2, "yellow"), (0.05, "red"), (-0.1, "red"),
                                      (None, "not assessed")])
def test_compute_row(h, status):
    assert compute_row(h).status == status


@pytest.mark.parametrize(
    "peak,mean,fos,bound,status",
    [
        (True, True, 2.0, "none", "green"),  # headroom 100 %
        (True, True, 1.5, "none", "green"),  # exactly 50 %
        (True, True, 1.3, "none", "yellow"),
        (True, True, 0.9, "none", "red"),
        (False, True, None, "none", "yellow"),  # only a mean
        (False, False, None, "none", "red"),  # no traffic model
        (True, True, 1.6, "lower", "green"),  # FOS >= 1.6: headroom >= 60 %
        (True, True, 1.6, "upper", "yellow"),  # FOS < 1.6: not shown
        (True, True, 1.0, "upper", "red"),
        (True, True, 1.2, "lower", "yellow"),  # FOS >= 1.2: headroom >= 20 % only
        (True, True, 0.72, "lower", "red"),  # FOS >= 0.72: the peak is untested (round 22)
    ],
)
def test_business_row(peak, mean, fos, bound, status):
    assert business_row(peak, mean, fos, bound).status == status


def test_a_lower_bound_below_one_says_the_peak_is_untested():
    row = business_row(True, True, 0.72, "lower")
    # in the verdict's words ("untested at the peak: … the most the test completed"; round 62)
    assert row.reason == "the planned peak lies above the most the test completed (headroom ≥ -28%): untested there"
    row = business_row(True, True, 0.72, "lower", blended=True)
    assert row.reason == ("the planned peak lies above the blended limit the test showed (headroom ≥ -28%): "
                          "untested there")


def test_user_supplied_rows():
    assert data_row({"coverage": 0.95, "bad_label_rate": 0.01}).status == "green"
    assert data_row({"coverage": 0.95}).status == "yellow"  # bad-label rate unknown: not green
    assert data_row({"coverage": 0.6}).status == "red"
    assert data_row(None).status == "not assessed"
    assert engineering_row({"canary": True, "monitoring": True, "rollback": True}).status == "green"
    assert engineering_row({"monitoring": True}).status == "yellow"
    assert engineering_row({"canary": False}).status == "red"
    assert budget_row({"cost_model": "tight"}).status == "yellow"
    assert budget_row({"cost_model": "weird"}).status == "not assessed"
    rows = scorecard(headroom=None, peak_known=True, mean_known=True, fos_value=2.0)
    assert [r.dimension for r in rows] == ["compute", "data", "business", "engineering", "budget"]
    assert [r.status for r in rows] == ["not assessed", "not assessed", "green", "not assessed", "not assessed"]


def test_checklist_computed_from_steps():
    items = {c.metric: c for c in checklist(steps=STEPS, sla=SLA, target_rps=4.0)}
    sp = items["single-path P95 latency"]
    # lowest load (concurrency 1): P95 600 ms < 2000 / 3 = 666.7 ms
    assert sp.status == "healthy" and sp.value == 600
    # the metric in words, not its column name (round 22: "ttft_ms P95 592 ms")
    assert sp.reason.startswith(("TTFT P95 600 ms < 667 ms (SLA 2,000 / 3)",
                                 "end-to-end latency P95 600 ms < 667 ms (SLA 2,000 / 3)")), sp.reason
    er = items["error rate at peak"]
    # the lowest step whose throughput reaches 4 req/s is step 1 (6.5 req/s): 0.05 % < 0.1 %
    assert er.status == "healthy" and er.value == 0.0005
    # at a 12.5 req/s peak only step 3 (13 req/s) reaches it: 2 % > 1 %
    assert {c.metric: c for c in checklist(steps=STEPS, sla=SLA, target_rps=12.5)}["error rate at peak"].status == \
        "danger"
    for m in ("GPU utilisation", "cost per request", "cold start / rolling release", "data freshness"):
        assert items[m].status == "not measured" and items[m].reason


def test_checklist_not_measured_reasons_and_user_values():
    items = {c.metric: c for c in checklist(steps=[], sla=[], target_rps=100.0)}
    assert items["single-path P95 latency"].status == "not measured"
    assert "no latency SLA" in items["single-path P95 latency"].reason
    assert items["error rate at peak"].status == "not measured"
    user = {"gpu_utilisation": 0.97, "cost_share_of_monthly_budget": 0.02, "release_error_delta": 0.0,
            "data_lag_hours": 30}
    got = {c.metric: c.status for c in checklist(user=user)}
    assert got["GPU utilisation"] == "danger"
    assert got["cost per request"] == "healthy"
    assert got["cold start / rolling release"] == "healthy"
    assert got["data freshness"] == "danger"
    # single-path P95 near the SLA is danger, between SLA/3 and 0.9 SLA a warning
    near = [PlanStep(offered_load=1, stats={"latency_ms_p95": 1900})]
    assert checklist(steps=near, sla=SLA)[0].status == "danger"
    mid = [PlanStep(offered_load=1, stats={"latency_ms_p95": 1000})]
    assert checklist(steps=mid, sla=SLA)[0].status == "warning"


def test_business_row_reads_the_lower_end_of_a_capped_upper_bound():
    """FOS < 20.83 with a 95 % CI from 20.6 (a limit capped at the saturated throughput, a step passing under it):
    the headroom is at least 1,960 % (by hand: 20.6 − 1), not "not shown ≥ 50%"; without the lower end it is."""
    row = business_row(True, True, 20.83, "upper", 20.6)
    assert row.status == "green" and row.value == pytest.approx(19.6) and "at least 1960%" in row.reason
    assert business_row(True, True, 20.83, "upper").status == "yellow"
    assert business_row(True, True, 1.3, "upper", 1.2).status == "yellow"  # headroom ≥ 20 % only
