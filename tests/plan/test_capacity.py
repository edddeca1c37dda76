"""CapacityCalculator as functions: max safe concurrency, instance count with a burst buffer."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.plan.capacity import (
    BurstModel,
    LatencyPoint,
    curve_from_limits_steps,
    instance_count,
    max_safe_concurrency,
    memory_for,
)
from bearing_lib.plan.memory import get_preset
from bearing_lib.plan.plan_step import PlanStep

CURVE = [
    LatencyPoint(1, 450, 800, 2.0),
    LatencyPoint(4, 520, 1200, 6.5),
    LatencyPoint(8, 640, 1900, 12.0),
    LatencyPoint(16, 1200, 3500, 13.0),
]


def test_safe_concurrency_from_latency_not_max_concurrency():
    r = max_safe_concurrency(CURVE, 2000)
    # 16 is the highest tested concurrency (and the highest throughput, 13 req/s), but its
    # P99 3500 ms breaks the SLA: capacity comes from the latency constraint.
    assert r.value == 8
    assert r.throughput_rps == 12.0 and r.throughput_basis.startswith("measured")
    assert r.contiguous_value == 8
    assert "16 reaches P99 3,500 ms" in r.statement
    assert max_safe_concurrency(CURVE, 1900).value == 8  # P99 <= SLA is inclusive
    assert max_safe_concurrency(CURVE, 1899).value == 4


def test_no_concurrency_meets_the_sla_is_not_invented():
    r = max_safe_concurrency(CURVE, 500)
    assert r.value is None and r.throughput_rps is None
    assert "below 1" in r.statement  # the seed's unwrap_or(1) would have said 1


def test_non_monotone_curve_is_flagged():
    pts = [LatencyPoint(1, 100, 300), LatencyPoint(2, 100, 900), LatencyPoint(4, 150, 400)]
    r = max_safe_concurrency(pts, 500)
    assert r.value == 4 and r.contiguous_value == 1
    assert "not monotone" in r.statement
    # no throughput measured: Little's law 4 / 0.150 s
    assert r.throughput_rps == pytest.approx(4 / 0.150)
    assert "Little" in r.throughput_basis


def test_curve_from_limits_steps():
    steps = [PlanStep(offered_load=2, offered_load_unit="concurrency", throughput_rps=5,
                      stats={"latency_ms_p50": 10, "latency_ms_p99": 20}),
             PlanStep(offered_load=3, offered_load_unit="rps", stats={"latency_ms_p99": 20}),  # no concurrency: skipped
             PlanStep(concurrency_mean=3.5, stats={"latency_ms_p99": 30})]
    pts = curve_from_limits_steps(steps)
    assert [(p.concurrency, p.sla_ms, p.throughput_rps) for p in pts] == [(2.0, 20.0, 5.0), (3.5, 30.0, None)]
    with pytest.raises(InsufficientDataError):
        max_safe_concurrency([LatencyPoint(1, None, None)], 100)


def test_instance_count_by_hand():
    # per-instance allowable = 20 / 1.5 = 13.33; base = ceil(100 / 13.33) = ceil(7.5) = 8
    # burst 3 x 100 = 300 req/s at 20 req/s each = 15 instances: buffer = 15 - 8 = 7
    p = instance_count(100.0, 20.0, 1.5, burst=BurstModel(3.0))
    assert (p.base, p.buffer, p.total) == (8, 7, 15)
    assert p.per_instance_allowable_rps == pytest.approx(20 / 1.5)
    assert "needs 15 instances at their ultimate capacity; buffer = 15 − 8 base = 7" in p.buffer_basis
    # a burst the base already carries: the minimum buffer, said so (not "buffer = max(1, 6 − 8)")
    b = instance_count(100.0, 20.0, 1.5, burst=BurstModel(1.2))
    assert "the 8 base instances already carry it: buffer = the minimum, 1" in b.buffer_basis
    # a burst above the base but by less than the minimum buffer (review finding): 2 x 100 / 20 = 10 − 8 = 2 < 3
    c = instance_count(100.0, 20.0, 1.5, burst=BurstModel(2.0), min_buffer=3)
    assert c.buffer == 3 and "needs 10 instances" in c.buffer_basis
    assert "10 − 8 base = 2, below the minimum: buffer = 3" in c.buffer_basis
    # a mild burst still keeps the minimum buffer of 1: ceil(1.2 x 100 / 20) = 6 < 8
    assert instance_count(100.0, 20.0, 1.5, burst=BurstModel(1.2)).buffer == 1
    # no burst model: the seed's +2, labelled as such
    p2 = instance_count(100.0, 20.0, 1.5)
    assert p2.buffer == 2 and "seed default" in p2.buffer_basis
    # exact division is not rounded up: 80 / (20 / 2) = 8
    assert instance_count(80.0, 20.0, 2.0, burst=BurstModel(1.0), min_buffer=0).total == 8
    with pytest.raises(ParameterError):
        instance_count(0.0, 20.0, 1.5)


def test_memory_requirement_is_the_memory_plan():
    m = memory_for(get_preset("llama-3.1-8b"), 4, 1000, margin=0.15)
    assert m.total_bytes == pytest.approx((8_030_261_248 * 2 + 4 * 1000 * 131_072) * 1.15)


@settings(max_examples=300, deadline=None)
@given(
    target=st.floats(min_value=0.01, max_value=1e5),
    q=st.floats(min_value=0.01, max_value=1e4),
    fos=st.floats(min_value=1.0, max_value=5.0),
    mult=st.one_of(st.none(), st.floats(min_value=1.0, max_value=10.0)),
    min_buffer=st.integers(min_value=0, max_value=3),
)
def test_instances_never_below_ceil_target_over_allowable(target, q, fos, mult, min_buffer):
    burst = BurstModel(mult) if mult is not None else None
    p = instance_count(target, q, fos, burst=burst, min_buffer=min_buffer)
    floor_needed = math.ceil(target / (q / fos) - 1e-9)
    assert p.total >= floor_needed
    assert p.base == floor_needed
    if burst is not None:
        # the fleet with its buffer carries the burst at the ultimate capacity
        assert p.total * q >= mult * target * (1 - 1e-9)


def test_safe_concurrency_statement_names_the_sla_statistic():
    # P95 SLA of 500 ms: concurrency 8 meets it (450 ms), 16 does not (900 ms) -> 8, said as P95
    pts = [LatencyPoint(1, 100, 200, 4.0), LatencyPoint(8, 150, 450, 20.0), LatencyPoint(16, 300, 900, 28.0)]
    res = max_safe_concurrency(pts, 500, stat="P95")
    assert res.value == 8
    assert "P95 450 ms ≤ SLA 500 ms" in res.statement and "P99" not in res.statement


def test_a_count_the_same_at_both_ends_of_the_limits_ci_is_said_once():
    """inference-perf's quantization run (a new user's case, round 22): 8.24 req/s against 115.6 req/s allowable
    per instance is one instance at every end of the limit's CI (170.5–177.3 / 1.5), plus the buffer; the reason
    read "over the limit's 95% CI the fleet is 2 instances at both ends of the limit's 95% CI"."""
    p = instance_count(8.24, 173.36, 1.5, ci95=(170.5, 177.3))
    assert (p.base, p.total) == (1, 3) and p.total_ci95 == (3, 3)  # no burst model: the seed's +2
    assert p.reason.endswith("; the fleet is 3 instances at both ends of the limit's 95% CI")
    assert "over the limit's 95% CI the fleet is 3" not in p.reason
    # ends that differ keep "over the limit's 95% CI": at 10 req/s each, ceil(100 / 6.67) = 15 + 2
    q = instance_count(100.0, 20.0, 1.5, ci95=(10.0, 30.0))
    assert q.reason.endswith("; over the limit's 95% CI the fleet is 7–17 instances")
