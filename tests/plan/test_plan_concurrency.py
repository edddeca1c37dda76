"""Planning concurrency from the load test (Little's law at Q_ult) and the memory it needs.

Inputs: the HAND-MADE plan documents in tests/fixtures/plan/ (edited in the tests) and small
hand-written step lists; every expected value is computed by hand in the comments.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.common.estimate import Estimate
from bearing_lib.limits.result import Step
from bearing_lib.plan.capacity_plan import CapacityPlan, concurrency_at_limit, read_json
from bearing_lib.plan.memory import GIB
from bearing_lib.plan.plan_step import PlanStep

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "plan"


def _steps():
    return {"a": [
        PlanStep(step=0, offered_load=1.0, concurrency_mean=2.0),
        PlanStep(step=1, offered_load=2.0, concurrency_mean=5.0),
        PlanStep(step=2, offered_load=3.0, concurrency_mean=20.0),
        PlanStep(step=3, offered_load=2.5, concurrency_mean=99.0, recovery_step=True),
    ]}


def test_interpolated_at_q_ult():
    at = concurrency_at_limit(_steps(), "a", Estimate(1.5, unit="rps"))
    # between (1, 2) and (2, 5): 2 + 0.5 × 3 = 3.5; the recovery step is left out
    assert at.value == pytest.approx(3.5)
    assert at.method == "interpolated at Q_ult" and at.steps_used == [1.0, 2.0] and not at.derived
    assert "between the steps at 1 and 2 rps" in at.statement
    # 2.5 lies between 2 (5) and 3 (20): 12.5, not the recovery step's 99
    assert concurrency_at_limit(_steps(), "a", Estimate(2.5)).value == pytest.approx(12.5)


def test_a_saturated_step_above_q_ult_is_not_interpolated_toward():
    """inference-perf vllm_quantization (a new user's case): 133.0 in flight at 170.24 rps, 429.6 in the saturated
    step read at its achieved 176.95 rps; Q_ult 173.36 interpolated to 271 while the plan's safe concurrency was 133.
    Now the step below scaled by load (Little's law at its time in system): 133.0 × 173.36 / 170.24 = 135.44."""
    steps = {"a": [PlanStep(step=0, offered_load=127.93, concurrency_mean=82.8),
                   PlanStep(step=1, offered_load=170.24, concurrency_mean=133.0),
                   PlanStep(step=2, offered_load=254.86, load_axis=176.95, concurrency_mean=429.6,
                            backlog="saturated")]}
    at = concurrency_at_limit(steps, "a", Estimate(173.36, unit="rps"))
    assert at.value == pytest.approx(133.0 * 173.36 / 170.24) and at.steps_used == [170.24]
    assert "the step at 176.95 rps saturated" in at.statement
    unsat = {"a": [dataclasses.replace(s, backlog=None) for s in steps["a"]]}
    assert concurrency_at_limit(unsat, "a", Estimate(173.36)).value == pytest.approx(
        133.0 + (429.6 - 133.0) * (173.36 - 170.24) / (176.95 - 170.24))


def test_a_step_above_q_ult_still_filling_up_is_not_interpolated_toward():
    """The saturated-step rule, for every flag whose in-flight count is a backlog (the last note's open item: a step
    flagged only ``not_steady`` was interpolated toward). From a judged step's flags, in
    order of precedence; the step below scaled by load: 20 × 9 / 8 = 22.5; with the step below flagged too, the
    plain interpolation stands (20 + (90 − 20) × 1 / 2 = 55)."""
    for flags, words in ((["not_steady"], "was still filling up"),
                         (["generator_behind", "throughput_below_offered"], "completed less than was offered")):
        st = Step(step=1, offered_load=10.0, flags=flags, concurrency_mean=90.0)
        hi = PlanStep.from_step(st, [], "rps")
        assert hi.backlog is not None and hi.backlog.startswith(words)
        steps = {"a": [PlanStep(step=0, offered_load=8.0, concurrency_mean=20.0), hi]}
        at = concurrency_at_limit(steps, "a", Estimate(9.0, unit="rps"))
        assert at.value == pytest.approx(22.5) and f"the step at 10 rps {words}" in at.statement
        both = {"a": [dataclasses.replace(steps["a"][0], backlog="saturated"), hi]}
        assert concurrency_at_limit(both, "a", Estimate(9.0, unit="rps")).value == pytest.approx(55.0)
    assert PlanStep.from_step(Step(step=0, offered_load=1.0, flags=["too_short"]), [], "rps").backlog is None
    # a generator that fell behind held requests at the client, not at the server: no backlog (review finding)
    assert PlanStep.from_step(Step(step=0, offered_load=1.0, flags=["generator_behind"]), [], "rps").backlog is None


def test_a_closed_loops_total_in_flight_is_capped_at_its_users():
    """Two mixes of a 5-user closed loop read 3 and 4 in flight each (each capped at 5 on its own); their sum, 7,
    exceeds what 5 users can hold (review finding): the plan reads 5 and says so; a rate step is not capped."""
    steps = {"a": [PlanStep(step=0, offered_load=5.0, offered_load_unit="concurrency", concurrency_mean=3.0)],
             "b": [PlanStep(step=0, offered_load=5.0, offered_load_unit="concurrency", concurrency_mean=4.0)]}
    at = concurrency_at_limit(steps, "a", Estimate(5.0, unit="concurrency"))
    assert at.value == 5.0 and "capped at the user count at 5 concurrency" in at.statement
    rate = {k: [dataclasses.replace(st, offered_load_unit="rps") for st in v] for k, v in steps.items()}
    assert concurrency_at_limit(rate, "a", Estimate(5.0, unit="rps")).value == 7.0


def test_outside_the_tested_loads_takes_the_nearest_step_and_says_so():
    at = concurrency_at_limit(_steps(), "a", Estimate(4.0, unit="rps"))
    assert at.value == 20.0 and at.steps_used == [3.0]
    assert "lies above the highest tested load" in at.statement


def test_derived_from_throughput_and_mean_latency_and_summed_over_mixes():
    steps = {
        "a": [PlanStep(step=0, offered_load=1.0, throughput_rps=2.0, stats={"latency_ms_mean": 1500.0}),
              PlanStep(step=1, offered_load=2.0, throughput_rps=4.0, stats={"latency_ms_mean": 2000.0})],
        # same steps of the same run (same step number and offered load): concurrency adds
        "b": [PlanStep(step=0, offered_load=1.0, concurrency_mean=1.0),
              PlanStep(step=1, offered_load=2.0, concurrency_mean=2.0),
              PlanStep(step=7, offered_load=9.0, concurrency_mean=50.0)],
    }
    at = concurrency_at_limit(steps, "a", Estimate(1.5, unit="rps"))
    # step 0: 2 × 1.5 + 1 = 4; step 1: 4 × 2.0 + 2 = 10; at 1.5: 7
    assert at.value == pytest.approx(7.0)
    assert at.derived and "throughput × mean latency" in at.statement and "summed over the mixes a, b" in at.statement


def test_no_concurrency_says_why():
    with pytest.raises(InsufficientDataError, match="no mean concurrency"):
        concurrency_at_limit({"a": [PlanStep(step=0, offered_load=1.0, throughput_rps=2.0)]}, "a", Estimate(1.0))
    with pytest.raises(InsufficientDataError, match="no Q_ult"):
        concurrency_at_limit(_steps(), "a", Estimate(None))


def _limits_without_latency_clause():
    d = read_json(DATA / "limits_handmade.json", "limits")
    d = copy.deepcopy(d)
    # an error-rate-only SLA: no latency–concurrency curve, so no max safe concurrency
    d["sla"] = [{"text": "error_rate <= 1%", "metric": None, "stat": "error_rate", "op": "<=",
                 "threshold": 0.01, "kind": "error_rate", "unit": "fraction"}]
    short = d["mixes"][0]
    short["q_ult"]["value"] = 6
    short["steps"][1]["concurrency_mean"] = 5
    short["steps"][2]["concurrency_mean"] = 10
    return d


def test_plan_memory_uses_the_concurrency_at_q_ult_without_a_gpu():
    plan = CapacityPlan.build(_limits_without_latency_clause(), read_json(DATA / "profile_handmade.json", "profile"),
                              model="llama-3.1-8b")
    d = plan.to_dict()
    assert d["instances"]["safe_concurrency"] is None
    m = d["memory"]
    # Q_ult 6 concurrent lies between the steps at 4 (5) and 8 (10): 5 + 0.5 × 5 = 7.5 → 8 sequences
    assert m["planning_concurrency"]["value"] == pytest.approx(7.5)
    assert m["planning_concurrency"]["used"] is True
    assert m["concurrency"] == 8
    assert m["concurrency_basis"].startswith("derived from the load test's mean in flight at Q_ult: mean concurrency "
                                             "7.50 at Q_ult 6 concurrency, interpolated between the steps at 4 and 8")
    # P99 6,000 tokens × 8 × 131,072 B + 16,060,522,496 B weights, × 1.15 = 25,704,775,270.4 B = 23.94 GiB
    p99 = next(r for r in m["rows"] if r["basis"] == "p99")
    assert p99["total_gib"] == pytest.approx(25_704_775_270.4 / GIB)
    need = m["gpu_memory_needed"]
    assert need["gib_per_instance"] == pytest.approx(25_704_775_270.4 / GIB) and need["concurrency"] == 8
    assert need["statement"].startswith("no GPU memory given: the plan needs ≥ 23.9 GiB per instance at the P99 "
                                        "sequence length")
    compute = next(r for r in d["scorecards"]["scorecard"] if r["dimension"] == "compute")
    assert compute["status"] == "not assessed"
    assert "needs ≥ 23.9 GiB per instance" in compute["reason"]
    json.dumps(d, allow_nan=False)


def test_a_given_concurrency_wins_and_the_q_ult_value_is_kept_for_reference():
    plan = CapacityPlan.build(_limits_without_latency_clause(), read_json(DATA / "profile_handmade.json", "profile"),
                              model="llama-3.1-8b", concurrency=3, gpu_mem_gib=80)
    m = plan.to_dict()["memory"]
    assert m["concurrency"] == 3 and m["concurrency_basis"] == "given"
    assert m["gpu_memory_needed"] is None  # a GPU was given: the headroom says whether it fits
    assert m["planning_concurrency"]["used"] is False and m["planning_concurrency"]["value"] == pytest.approx(7.5)
