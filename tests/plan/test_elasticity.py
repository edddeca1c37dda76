"""ElasticityEngine decisions and the minute-by-minute replay on a hand-worked synthetic burst."""

from __future__ import annotations

import pytest

from bearing_lib.common.errors import ParameterError
from bearing_lib.plan.elasticity import decide_scaling_action, replay


@pytest.mark.parametrize(
    "qps,max_qps,kw,kind,count,reason",
    [
        (80, 100, {}, "scale_up", 1, "load ratio 0.80 > 0.7"),
        (70, 100, {}, "none", 0, "load within normal range"),  # exactly 0.7 is not above
        (80, 100, {"cold_start_s": 120, "latency_budget_s": 60}, "none", 0, "cold start time exceeds latency budget"),
        (80, 100, {"cold_start_s": 40, "latency_budget_s": 60}, "scale_up", 1, "load ratio"),
        (20, 100, {"low_duration_s": 600, "cool_down_s": 1200}, "none", 0, "cool-down period not met"),
        (20, 100, {"low_duration_s": 1200, "cool_down_s": 1200}, "scale_down", 1, "for 20 min"),
        (30, 100, {"low_duration_s": 9999}, "none", 0, "load within normal range"),  # exactly 0.3 is not below
        # 150 req/s on 2 x 60: ceil(150 / (60 x 0.6)) = ceil(4.17) = 5 -> add 3
        (150, 120, {"current_instances": 2, "per_instance_qps": 60}, "scale_up", 3, "load ratio 1.25"),
    ],
)
def test_engine_decisions(qps, max_qps, kw, kind, count, reason):
    a = decide_scaling_action(qps, max_qps, **kw)
    assert (a.kind, a.count) == (kind, count)
    assert reason in a.reason
    if reason.startswith("cold start"):
        assert a.recommendation == "increase fixed capacity instead of elastic scaling"


def test_engine_rejects_bad_settings():
    with pytest.raises(ParameterError):
        decide_scaling_action(1, 0)
    with pytest.raises(ParameterError):
        decide_scaling_action(1, 10, scale_down_threshold=0.8)


# Synthetic burst (SYNTHETIC, made up for this test). One instance carries 10 req/s = 600 req/min.
# minute:   0-4: 600/min (10 req/s)   5-9: 1800/min (30 req/s)   10-19: 120/min (2 req/s)
BURST = [600] * 5 + [1800] * 5 + [120] * 10


def test_replay_on_a_synthetic_burst_worked_by_hand():
    r = replay(BURST, 10.0, initial_instances=2, cold_start_s=90, cool_down_s=5 * 60)
    # By hand (rule in bearing_lib.plan.elasticity's docstring):
    # * minutes 0-4: 10 req/s on 2 instances (20 req/s): ratio 0.5, no action.
    # * minute 5: 30 req/s > 20 ready -> OVER capacity. Ratio 30/20 = 1.5 > 0.7: scale up by
    #   ceil(30 / (10 x 0.6)) - 2 = 5 - 2 = 3, asked at the end of minute 5 (t = 6 min), ready at
    #   6 + 90 s = 7.5 min, credited from minute 8.
    # * minutes 6, 7: 30 req/s, still 2 ready -> OVER capacity; ratio vs 5 provisioned = 0.6: no action.
    # * minutes 8, 9: 5 ready (50 req/s) carry 30 req/s.
    # * minutes 10-14: 2 req/s / 50 = 0.04 < 0.3; after the 5th low minute (14) the cool-down (5 min)
    #   is met: scale down to 4; the low run restarts.
    # * minutes 15-19: 2 / 40 = 0.05 < 0.3; after minute 19: scale down to 3.
    assert r.over_capacity_minutes == [5, 6, 7]
    assert [(e.after_minute, e.action, e.count, e.instances_after) for e in r.events] == [
        (5, "scale_up", 3, 5),
        (14, "scale_down", 1, 4),
        (19, "scale_down", 1, 3),
    ]
    assert r.events[0].ready_from_minute == 8
    assert [m["ready"] for m in r.minutes[:10]] == [2, 2, 2, 2, 2, 2, 2, 2, 5, 5]
    # fixed + buffer: at 30 req/s, ceil(30 / 10) - 2 ready = 1 more instance would have covered it
    assert r.recommendation == "fixed+buffer" and r.buffer == 1
    assert "3 minute(s) above ready capacity (minutes 5–7)" in r.reason
    d = r.to_dict()
    assert (d["n_scale_up"], d["n_scale_down"], d["n_over_capacity"], d["max_instances"]) == (1, 2, 3, 5)


def test_replay_cold_start_changes_the_over_capacity_minutes():
    # 40 s cold start: asked at t = 6 min, ready at 6.67 min, credited from minute 7 -> over 5, 6 only
    r = replay(BURST, 10.0, initial_instances=2, cold_start_s=40, cool_down_s=5 * 60)
    assert r.over_capacity_minutes == [5, 6]
    # 150 s: ready at 8.5 min, credited from minute 9 -> over 5-8
    r = replay(BURST, 10.0, initial_instances=2, cold_start_s=150, cool_down_s=5 * 60)
    assert r.over_capacity_minutes == [5, 6, 7, 8]


def test_replay_gentle_ramp_is_elastic():
    # 6, 7, 8, ... 15 req/s on 1 instance of 10 req/s, initial 1. By hand:
    # minute 0: 6/10 = 0.6, no action. minute 1: 7/10 = 0.7, not above: no action.
    # minute 2: 8/10 = 0.8 -> add ceil(8 / 6) - 1 = 1 (ready from minute 2 + 1 + 1 = 4).
    # minute 3: 9 req/s on 1 ready (10) is fine; ratio vs 2 provisioned = 0.45.
    # minutes 4-9: 2 ready = 20 req/s >= 10..15; ratio 15/20 = 0.75 at minute 9 -> add ceil(15/6) - 2 = 1.
    ramp = [(6 + i) * 60 for i in range(10)]
    r = replay(ramp, 10.0, initial_instances=1, cold_start_s=60, cool_down_s=20 * 60)
    assert r.over_capacity_minutes == []
    assert [(e.after_minute, e.count) for e in r.events] == [(2, 1), (9, 1)]
    assert r.recommendation == "elastic" and r.buffer == 0


def test_replay_with_a_latency_budget_blocks_scaling():
    r = replay(BURST, 10.0, initial_instances=2, cold_start_s=90, cool_down_s=5 * 60, latency_budget_s=60)
    # no instance ever starts: minutes 5-9 are over capacity; the rule recommends fixed capacity
    assert r.over_capacity_minutes == [5, 6, 7, 8, 9]
    assert {e.action for e in r.events} >= {"blocked"}
    assert r.recommendation == "fixed+buffer" and r.buffer == 1
    assert "exceeds the latency budget" in r.reason


def test_replay_bad_input():
    with pytest.raises(ParameterError):
        replay([], 10.0)
    with pytest.raises(ParameterError):
        replay([1, -1], 10.0)
    with pytest.raises(ParameterError):
        replay([1], 0.0)
