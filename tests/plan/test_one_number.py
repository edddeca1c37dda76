"""One number per concept in the plan (issue #25 item 1), on HAND-MADE inputs with values worked out by hand.

tests/fixtures/plan/limits_handmade.json: SLA ``p99 latency < 2000 ms``; steps of the ``short`` mix at
concurrency 1, 4, 8, 16 with P99 800, 1200, 1900, 3500 ms and error rate 0. profile_handmade.json: target
4.0 req/s (P99, growth 1).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from bearing_lib.common.files import read_json
from bearing_lib.limits.sla import Clause
from bearing_lib.plan.capacity import (
    BufferPlan,
    BurstModel,
    LatencyPoint,
    curve_from_limits_steps,
    hold_buffer,
    instance_count,
    max_safe_concurrency,
)
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.fos import Target
from bearing_lib.plan.plan_step import PlanStep
from bearing_lib.plan.scorecards import lowest_load_text, single_path_p95
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.targets import compute_targets

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
LIMITS = DATA / "limits_handmade.json"
PROFILE = DATA / "profile_handmade.json"

P95_1S = Clause(text="p95(ttft) <= 1s", kind="percentile", metric="ttft_ms", stat="p95", op="<=",
                threshold=1000.0, unit="ms")
ERR_1 = Clause(text="error_rate <= 1%", kind="error_rate", metric=None, stat="error_rate", op="<=",
               threshold=0.01, unit="fraction")


# --------------------------------------------------------------------------- current peak and near term
def test_current_peak_is_the_target_quantile_before_growth():
    t = Target(9.0, growth=1.5, quantile=0.99)
    assert t.current_peak_rps == pytest.approx(6.0)  # 9 / 1.5
    assert t.near_term_rps == pytest.approx(9.0)  # 6 x 1.5
    assert t.peak_name == "P99 of the observed rate"


def test_traffic_near_term_is_the_p99_not_the_busiest_minute():
    # 100 minutes: 99 at 60 req/min (1 req/s) and one at 600 (10 req/s); numpy linear P99 by hand:
    # sorted rates, position 0.99 x 99 = 98.01 -> 1 + 0.01 x (10 - 1) = 1.09 req/s
    counts = np.array([60.0] * 99 + [600.0])
    series = RateSeries(60.0, np.arange(100) * 60.0 + 1_700_000_000, counts, aligned=True)
    t = compute_targets(series, n_boot=20)
    assert t.target.basis_rps == pytest.approx(1.09)
    assert t.near_term.rps == pytest.approx(1.09 * 1.5)
    assert t.peak.rps == pytest.approx(10.0)  # the busiest minute: shown, but not the current peak
    d = t.to_dict()
    assert d["near_term"]["rps"] == pytest.approx(1.635)
    assert d["near_term"]["basis"] == "current peak 1.09 req/s: the P99 of the 60 s rate"


def test_the_staged_plan_and_the_profile_share_the_near_term():
    plan = CapacityPlan.from_files(LIMITS, PROFILE)
    s = plan.economics.staged
    # target 4.0 req/s (P99, growth 1): current peak 4.0, near term 6.0 req/s
    assert s.near_term.rps == pytest.approx(6.0)
    assert s.near_term.rule.startswith("current peak 4 req/s (P99 of the observed rate) × 1.5")
    grown = CapacityPlan.from_files(LIMITS, PROFILE, growth=2.0)
    assert grown.target.rps == pytest.approx(8.0)  # the target grows ...
    assert grown.economics.staged.near_term.rps == pytest.approx(6.0)  # ... the current peak does not


# --------------------------------------------------------------------------- buffer and fixed capacity
def test_a_fixed_buffer_is_the_plan_buffer_and_total():
    inst = instance_count(100.0, 20.0, 1.5, burst=BurstModel(3.0))  # base 8, burst buffer 7 (docstring example)
    hold_buffer(inst, BufferPlan("fixed", 9, "the replay needed 9"))
    assert (inst.base, inst.buffer, inst.total, inst.burst_buffer) == (8, 9, 17, 7)
    assert inst.buffer_plan.instances == inst.buffer
    same = instance_count(100.0, 20.0, 1.5, burst=BurstModel(3.0))
    hold_buffer(same, BufferPlan("elastic", 7, "kept up"))
    assert (same.buffer, same.total, same.burst_buffer) == (7, 15, None)


def test_the_cli_lines_name_one_buffer():
    plan = CapacityPlan.from_files(LIMITS, PROFILE, cold_start_s=600.0, latency_budget_s=60.0)
    i = plan.instances
    assert i.buffer_plan is not None and i.buffer_plan.instances == i.buffer and i.total == i.base + i.buffer
    lines = "\n".join(plan.summary_lines())
    assert f"instances:   {i.total} = {i.base} + buffer {i.buffer}" in lines
    assert f"buffer:      {i.buffer_plan.mode}, {i.buffer} instance(s)" in lines


# --------------------------------------------------------------------------- safe concurrency
def test_safe_concurrency_respects_every_clause():
    # P95 holds at concurrency 5.86 and 12.58 (575, 519 ms); the error rate is 2 % and 2.5 % there (> 1 %)
    steps = [PlanStep(offered_load=0.5, offered_load_unit="rps", concurrency_mean=5.86,
                      observed={"p95(ttft) <= 1s": 575.0, "error_rate <= 1%": 0.02}, error_rate=0.02,
                      stats={"ttft_ms_p95": 575.0}),
             PlanStep(offered_load=1.0, offered_load_unit="rps", concurrency_mean=12.58,
                      observed={"p95(ttft) <= 1s": 519.0, "error_rate <= 1%": 0.025}, error_rate=0.025,
                      stats={"ttft_ms_p95": 519.0}),
             PlanStep(offered_load=1.5, offered_load_unit="rps", concurrency_mean=20.8,
                      observed={"p95(ttft) <= 1s": 1780.0, "error_rate <= 1%": 0.046}, error_rate=0.046,
                      stats={"ttft_ms_p95": 1780.0})]
    pts = curve_from_limits_steps(steps, metric="ttft_ms", stat="p95", clauses=[P95_1S, ERR_1],
                                  latency_text=P95_1S.text)
    assert [p.broken for p in pts] == [("error_rate <= 1% (observed 2.00%)",), ("error_rate <= 1% (observed 2.50%)",),
                                       ("error_rate <= 1% (observed 4.60%)",)]
    sc = max_safe_concurrency(pts, 1000.0, stat="P95")
    assert sc.value is None and sc.latency_only_value == pytest.approx(12.58)
    assert sc.statement == ("no measured concurrency meets every SLA clause: P95 ≤ 1000 ms holds up to concurrency "
                            "12.58 (P95 519 ms), but error_rate <= 1% (observed 2.50%) fails there")
    assert (sc.sla_threshold_ms, sc.sla_stat) == (1000.0, "P95")
    # with the error rate at 0.5 % at the first step only, that step is the safe one
    ok = copy.deepcopy(steps)
    ok[0].observed["error_rate <= 1%"] = 0.005
    sc = max_safe_concurrency(curve_from_limits_steps(ok, metric="ttft_ms", stat="p95", clauses=[P95_1S, ERR_1],
                                                      latency_text=P95_1S.text), 1000.0, stat="P95")
    assert sc.value == pytest.approx(5.86) and sc.latency_only_value == pytest.approx(12.58)
    assert sc.statement.startswith("max safe concurrency 5.86 (P95 575 ms ≤ SLA 1,000 ms; the other clauses hold "
                                   "there)")


def test_latency_points_name_the_sla_statistic():
    sc = max_safe_concurrency([LatencyPoint(1, 100, 200, 4.0), LatencyPoint(8, 150, 450, 20.0)], 500, stat="P95")
    assert sc.to_dict()["sla_threshold_ms"] == 500 and sc.to_dict()["sla_stat"] == "P95"
    assert "sla_p99_ms" not in sc.to_dict()


def test_a_plan_file_with_the_old_field_name_reads_into_the_new_one():
    d = CapacityPlan.from_files(LIMITS, PROFILE).to_dict()
    sc = d["instances"]["safe_concurrency"]
    assert sc["value"] == 8 and sc["sla_threshold_ms"] == 2000 and sc["sla_stat"] == "P99"
    old = copy.deepcopy(d)
    o = old["instances"]["safe_concurrency"]
    o["sla_p99_ms"] = o.pop("sla_threshold_ms")
    del o["sla_stat"], o["latency_only_value"]
    back = CapacityPlan.from_dict(old)
    assert back.instances.safe_concurrency.sla_threshold_ms == 2000
    assert back.instances.safe_concurrency.sla_stat == "P99"  # read from "(P99 1,900 ms ≤ SLA ...)"
    assert "sla_p99_ms" in old["instances"]["safe_concurrency"]  # the input is not modified


# --------------------------------------------------------------------------- lowest tested vs lowest judged
def test_lowest_judged_load_is_not_called_the_lowest_tested():
    steps = [PlanStep(offered_load=0.2, offered_load_unit="rps"),  # no P95 here
             PlanStep(offered_load=1.25, offered_load_unit="rps", stats={"ttft_ms_p95": 300.0}),
             PlanStep(offered_load=2.0, offered_load_unit="rps", stats={"ttft_ms_p95": 900.0})]
    assert lowest_load_text(steps, steps[1]) == ("at the lowest judged load 1.25 rps (the test started at 0.2 rps; "
                                                 "the steps below have no value for it)")
    item = single_path_p95(steps, [P95_1S])
    assert item.value == 300.0 and item.reason.endswith("at the lowest judged load 1.25 rps (the test started at "
                                                        "0.2 rps; the steps below have no value for it)")
    assert single_path_p95(steps[1:], [P95_1S]).reason.endswith("at the lowest tested load 1.25 rps")
    # a P95 the limits left unsupported (inference-perf's 60-request 1 rps stage, round 22) is said to be one
    thin = [PlanStep(offered_load=1.0, offered_load_unit="rps", stats={"ttft_ms_p95": 36.49}, too_few=("p95", "p99"),
                     n_ok=60)]
    item = single_path_p95(thin, [P95_1S])
    assert item.status == "healthy" and item.reason.endswith(
        "at the lowest tested load 1 rps (from 60 requests, too few for a supported P95: an indication only)")


def test_the_fixture_is_what_the_docstring_says():
    lim = read_json(LIMITS, "limits")
    short = next(m for m in lim["mixes"] if m["mix"]["name"] == "short")
    assert [(s["concurrency_mean"], s["latency_ms_p99"]) for s in short["steps"]] == [
        (1, 800), (4, 1200), (8, 1900), (16, 3500)]
