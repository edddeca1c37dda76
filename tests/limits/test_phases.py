"""Phases and P_critical on hand-built curves whose answers are computed by hand."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.limits.phases import (
    classify_phases,
    p_critical,
    p_critical_2x,
    p_critical_breakpoint,
)


def _curve(loads, p99, err=None, thr=None, valid=None, **extra):
    n = len(loads)
    d = {
        "run_id": ["r"] * n,
        "mix": ["all"] * n,
        "step": list(range(n)),
        "offered_load": [float(v) for v in loads],
        "offered_load_unit": ["rps"] * n,
        "latency_ms_p99": [None if v is None else float(v) for v in p99],
        "error_rate": [0.0] * n if err is None else [float(v) for v in err],
        "throughput_rps": [float(v) for v in (thr if thr is not None else loads)],
        "valid": [True] * n if valid is None else valid,
    }
    d.update(extra)
    return pl.DataFrame(d)


def test_phase_rules_and_band_gaps():
    c = _curve(
        loads=[1, 2, 3, 4, 5, 6, 7, 8],
        p99=[100, 110, 180, 230, 150, 150, 150, 150],
        err=[0, 0, 0.0009, 0, 0.003, 0.03, 0.06, 0],
        thr=[1, 2, 3, 4, 5, 6, 7, 6.5],
    )
    out = classify_phases(c)
    # baseline = mean of the two lowest valid steps = 105 ms; 2x = 210 ms
    assert out["baseline_p99"][0] == pytest.approx(105.0)
    assert out["p99_over_baseline"].to_list()[3] == pytest.approx(230 / 105)
    assert out["phase"].to_list() == [
        "elastic",  # 100 ms, no errors
        "elastic",
        "elastic",  # 0.09% errors < 0.1%, 180 ms < 210 ms
        "plastic",  # 230 ms > 2x baseline
        "plastic",  # 0.3% errors: in the 0.1-0.5% gap -> plastic
        "plastic",  # 3% errors: in the 2-5% gap -> plastic (not failure)
        "failure",  # 6% errors > 5%
        "failure",  # throughput 6.5 < 95% of 7 at lower load: retrograde
    ]
    assert "retrograde" in out["phase_reason"][7]


def test_timeouts_and_invalid_baseline_steps():
    c = _curve(
        loads=[1, 2, 3, 4],
        p99=[500, 100, 120, 130],
        valid=[False, True, True, True],
        timeout_rate=[0.0, 0.0, 0.0, 0.02],
    )
    out = classify_phases(c, n_baseline=2)
    # the invalid lowest step is not part of the baseline: (100 + 120) / 2
    assert out["baseline_p99"][0] == pytest.approx(110.0)
    assert out["phase"].to_list() == ["plastic", "elastic", "elastic", "failure"]
    assert "timeouts 2.0%" in out["phase_reason"][3]


def test_groups_are_classified_separately_and_row_order_kept():
    a = _curve([1, 2, 3], [100, 100, 300])
    b = _curve([3, 1, 2], [1000, 10, 10]).with_columns(pl.lit("b").alias("mix"))
    out = classify_phases(pl.concat([a, b]))
    assert out["phase"].to_list() == ["elastic", "elastic", "plastic", "plastic", "elastic", "elastic"]
    assert out["baseline_p99"].to_list() == [100.0] * 3 + [10.0] * 3


def test_missing_column_is_a_clear_error():
    with pytest.raises(SchemaError, match="latency_ms_p99"):
        classify_phases(pl.DataFrame({"offered_load": [1.0], "error_rate": [0.0], "throughput_rps": [1.0]}))


def _with_ci(c: pl.DataFrame, rel: float) -> pl.DataFrame:
    return c.with_columns(
        (pl.col("latency_ms_p99") / (1 + rel)).alias("latency_ms_p99_ci95_lo"),
        (pl.col("latency_ms_p99") * (1 + rel)).alias("latency_ms_p99_ci95_hi"),
    )


def test_p_critical_2x_interpolates_and_ci_covers():
    c = _with_ci(_curve([1, 2, 3, 4, 5, 6], [100, 102, 110, 150, 400, 900]), 0.05)
    r = p_critical_2x(c, n_boot=4000, seed=1)
    # baseline 101, level 202: between (4, 150) and (5, 400), linear in log P99
    expected = 4 + (math.log(202) - math.log(150)) / (math.log(400) - math.log(150))
    assert r["value"] == pytest.approx(expected)
    lo, hi = r["ci95"]
    assert 4.0 < lo < expected < hi < 5.0
    # a narrower percentile CI gives a narrower P_critical CI
    r2 = p_critical_2x(_with_ci(c.drop("latency_ms_p99_ci95_lo", "latency_ms_p99_ci95_hi"), 0.01), seed=1)
    assert r2["ci95"][1] - r2["ci95"][0] < hi - lo


def test_p_critical_censored_when_never_doubling():
    c = _curve([1, 2, 3, 4, 5], [100, 100, 120, 150, 190])
    res = p_critical(c)
    assert res.censored == "above"
    assert res.value == 5.0 and res.ci95 == (5.0, None)
    assert res.method == "2x_baseline"
    assert ">=" in res.reason


def test_breakpoint_recovers_a_known_hinge():
    rng = np.random.default_rng(3)
    x = np.arange(1.0, 13.0)
    logy = math.log(100) + 0.02 * x + 0.6 * np.clip(x - 7.3, 0, None) + rng.normal(0, 0.02, x.size)
    c = _curve(x, np.exp(logy))
    r = p_critical_breakpoint(c)
    assert r["value"] == pytest.approx(7.3, abs=0.3)
    assert r["ci95"][0] <= 7.3 <= r["ci95"][1]
    assert r["slope_change"] == pytest.approx(0.6, abs=0.1)


def test_breakpoint_needs_five_steps():
    r = p_critical_breakpoint(_curve([1, 2, 3, 4], [1, 2, 3, 4]))
    assert r["value"] is None and "5 valid steps" in r["reason"]


def test_p_critical_reports_both_and_trusts_2x():
    x = np.arange(1.0, 11.0)
    y = 100 * np.exp(0.8 * np.clip(x - 6.0, 0, None))
    c = _with_ci(_curve(x, y), 0.05)
    res = p_critical(c, seed=2)
    # 2x level = 200 ms: on the exponential branch log-linear interpolation is exact
    assert res.value == pytest.approx(6 + math.log(2) / 0.8)
    assert res.method == "2x_baseline"
    assert res.alternatives["breakpoint"]["value"] == pytest.approx(6.0, abs=0.1)
    assert "breakpoint" in res.reason
    d = res.to_dict()
    assert set(d) >= {"value", "ci95", "method", "alternatives", "reason"}
    assert d["unit"] == "rps"


def test_p_critical_on_simulated_mm1_steps_covers_closed_form():
    """M/M/1 (mu = 10 rps), steps at 2..9 rps, 600 s each, through bearing's load curve.

    P99 of the M/M/1 sojourn is ln(100) / (mu - lam). The baseline is the mean of the two
    lowest steps' P99 (2 and 3 rps), so P99 = 2 x baseline at
    lam* = mu - 1 / (2 * mean(1/8, 1/7)) = 6.267 rps. With the steps' requests the CI is a
    time-block bootstrap; it must cover lam* in >= 17 of 20 seeds (binomial: a true 95%
    interval does so with probability 0.98). SYNTHETIC traces (tests/limits/synth.py).
    """
    from bearing_lib.limits.curves import load_curve
    from tests.limits.synth import make_trace, mm1_frame

    mu = 10.0
    truth = mu - 1 / (2 * np.mean([1 / (mu - 2), 1 / (mu - 3)]))
    hits, errors = 0, []
    for seed in range(20):
        trace = make_trace(mm1_frame([2.0, 3, 4, 5, 6, 7, 8, 9], mu_rps=mu, step_s=600.0, seed=seed))
        curve = load_curve(trace)
        res = p_critical(curve, seed=seed, n_boot=500, requests=trace.frame)
        assert res.method == "2x_baseline" and res.censored == "none"
        assert "time-block bootstrap" in res.reason
        hits += res.ci95[0] <= truth <= res.ci95[1]
        errors.append(res.value - truth)
    assert hits >= 17
    assert abs(float(np.median(errors))) < 0.3
