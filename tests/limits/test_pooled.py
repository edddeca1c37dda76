"""The pooled exceedance estimator (bearing_lib.limits.pooled; ``estimator="pooled"``, the model being the
default) and run pooling (fit_limits(pool_runs=True)).

Expected values come from closed forms (the isotonic fit of hand-made shares, the M/M/1 limit
``mu + ln(1 - q) / L``) computed here, not from bearing.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.limits import pooled
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.sla import parse_sla
from tests.limits.synth import make_trace, mm1_frame, mm1_limit

P99 = parse_sla("p99(latency) <= 1s").clauses[0]


def test_crossing_interpolates_the_share_where_it_passes_one_percent():
    # shares 0, 0.5 %, 3 %: the fit is the raw shares (monotone); 1 % is crossed 1/5 of the way from 2 to 3
    xs = np.array([1.0, 2.0, 3.0])
    shares = np.array([0.0, 0.005, 0.03])
    m = pooled.share_to_margin(P99, shares)
    assert m.tolist() == pytest.approx([1.0, 0.5, -2.0])
    assert pooled.crossing(xs, m, np.array([100.0, 100.0, 100.0]), strict=False) == pytest.approx(2.2)


def test_crossing_pools_a_violation_weighted_by_requests():
    # shares 2 % (100 requests) then 0.5 % (300): not monotone, so PAVA pools them to (2 + 1.5) / 400 = 0.875 %
    # at both loads; the next load (4 %) fails: crossing between x=2 and x=3 at (1 - 0.875/1)/(...)
    xs = np.array([1.0, 2.0, 3.0])
    n = np.array([100.0, 300.0, 200.0])
    shares = np.array([0.02, 0.005, 0.04])
    m = pooled.share_to_margin(P99, shares)
    pooled_share = (0.02 * 100 + 0.005 * 300) / 400
    a, b = 1 - pooled_share / 0.01, 1 - 0.04 / 0.01
    assert pooled.crossing(xs, m, n, strict=False) == pytest.approx(2 + a / (a - b))


def test_ties_merge_before_the_fit_and_censoring_is_infinite():
    x, m, w = pooled.merge_ties(np.array([2.0, 1.0, 2.0]), np.array([0.0, 1.0, 1.0]), np.array([1.0, 1.0, 3.0]))
    assert x.tolist() == [1.0, 2.0] and w.tolist() == [1.0, 4.0] and m.tolist() == pytest.approx([1.0, 0.75])
    assert pooled.crossing(np.array([1.0, 2.0]), np.array([0.5, 0.2]), np.ones(2), False) == math.inf
    assert pooled.crossing(np.array([1.0, 2.0]), np.array([-0.5, -0.2]), np.ones(2), False) == -math.inf
    assert math.isnan(pooled.crossing(np.array([1.0]), np.array([np.nan]), np.ones(1), False))


def test_thin_steps_give_a_value_not_below():
    # M/M/1, mu = 10 rps, p99(latency) <= 1 s: truth 10 + ln(0.01) = 5.395 rps. 40 s steps hold 40-360 requests
    # sent, fewer in the steady window: no step up to ~9 rps supports a P99 (368 needed)
    truth = mm1_limit(10.0, 0.99, 1000.0)
    rates = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    hits = 0
    for seed in range(6):
        res = fit_limits(make_trace(mm1_frame(rates, mu_rps=10.0, step_s=40.0, seed=seed)), "p99(latency) <= 1s",
                         mixes="none", n_boot=100, estimator="pooled")
        q = res.limits[0].q_ult
        assert q.bracket[0] is None  # no step passes on its own
        assert q.censored == "none" and q.estimator == pooled.ESTIMATOR
        hits += abs(q.value / truth - 1) <= 0.15
        assert q.ci95[0] <= q.value <= q.ci95[1]
    assert hits >= 5


def _good(rates, seed):
    return make_trace(mm1_frame(rates, mu_rps=10.0, step_s=300.0, seed=seed, error_prob=0.0))


@pytest.mark.parametrize("sla,truth", [
    # p95 of Exp(mu - lam) <= 1 s: lam = mu + ln(0.05)
    ("p95(latency) <= 1s", 10.0 + math.log(0.05)),
    # goodput(latency <= 1s) >= 95 %: P(sojourn <= 1 s) = 1 - exp(-(mu - lam)) >= 0.95, the same limit
    ("goodput(latency <= 1s) >= 95%", 10.0 + math.log(0.05)),
])
def test_each_clause_kind_end_to_end(sla, truth):
    rates = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    res = fit_limits(_good(rates, 3), sla, mixes="none", n_boot=100, estimator="pooled")
    q = res.limits[0].q_ult
    assert q.censored == "none" and res.limits[0].binding == sla
    assert q.value == pytest.approx(truth, rel=0.10)
    assert q.bracket[0] <= truth + 1.0 and q.bracket[1] >= truth - 1.0


def test_error_rate_clause_end_to_end():
    # errors injected with a rate rising with load: 0 % up to step 3, then 4 %: error_rate <= 1 % crosses
    # between 4 and 5 rps at 4 + 0.01 / 0.04 (the isotonic fit of the shares 0, 0, 0, 0, 0.04, ...)
    frames = []
    for k, lam in enumerate([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]):
        f = mm1_frame([lam], mu_rps=50.0, step_s=400.0, seed=k, run_id="run")
        n = f.height
        bad = np.zeros(n, bool)
        if lam >= 5:
            bad[:: 25] = True  # every 25th request: 4 %
        frames.append(f.with_columns(pl.lit(k).alias("step"), pl.Series("status", np.where(bad, "error", "ok")),
                                     (pl.col("start_s") + 400.0 * k).alias("start_s"),
                                     (pl.col("end_s") + 400.0 * k).alias("end_s")))
    res = fit_limits(make_trace(pl.concat(frames)), "error_rate <= 1%", mixes="none", n_boot=50, estimator="pooled")
    m = res.limits[0]
    ex = {s.offered_load: s.exceedances["error_rate <= 1%"] for s in m.steps}
    share5 = ex[5.0].bad / ex[5.0].of
    share6 = ex[6.0].bad / ex[6.0].of
    assert share5 == pytest.approx(0.04, abs=0.002) and ex[4.0].bad == 0
    # the fit at 5 rps: the raw share, or pooled with 6 rps when that one is lower (PAVA)
    fit5 = share5 if share6 >= share5 else (ex[5.0].bad + ex[6.0].bad) / (ex[5.0].of + ex[6.0].of)
    assert m.q_ult.value == pytest.approx(4 + 0.01 / fit5, rel=1e-9)
    assert m.binding == "error_rate <= 1%"


def test_pool_runs_pools_repeats_into_one_limit():
    # two repeats of the same M/M/1 test: one limit, both runs' steps present, each run's steps numbered apart
    rates = [2.0, 4.0, 5.0, 6.0, 8.0]
    t1 = make_trace(mm1_frame(rates, mu_rps=10.0, step_s=200.0, seed=1, run_id="a"))
    t2 = make_trace(mm1_frame(rates, mu_rps=10.0, step_s=200.0, seed=2, run_id="b"))
    sep = fit_limits([t1, t2], "p99(latency) <= 1s", mixes="none", n_boot=50, estimator="pooled")
    res = fit_limits([t1, t2], "p99(latency) <= 1s", mixes="none", n_boot=50, pool_runs=True, estimator="pooled")
    assert len(sep.limits) == 2 and len(res.limits) == 1
    m = res.limits[0]
    assert m.run_id == "pooled(a+b)" and res.conditions.pooled_runs == {"pooled(a+b)": ["a", "b"]}
    assert sorted({s.source_run for s in m.steps}) == ["a", "b"] and len(m.steps) == 10
    assert any("pooled 2 runs" in n for n in m.notes)
    # the pooled crossing is the crossing of the summed counts (ties merged): recompute it by hand
    per_load: dict[float, list[float]] = {}
    for s in m.steps:
        e = s.exceedances["p99(latency) <= 1s"]
        per_load.setdefault(s.load_axis, [0.0, 0.0])
        per_load[s.load_axis][0] += e.bad
        per_load[s.load_axis][1] += e.of
    xs = np.array(sorted(per_load))
    sh = np.array([per_load[x][0] / per_load[x][1] for x in xs])
    from scipy.optimize import isotonic_regression
    fit = isotonic_regression(sh, weights=np.array([per_load[x][1] for x in xs]), increasing=True).x
    i = int(np.argmax(fit > 0.01))
    expect = xs[i - 1] + (0.01 - fit[i - 1]) / (fit[i] - fit[i - 1]) * (xs[i] - xs[i - 1])
    lo_fail = min(s.load_axis for s in m.steps if s.status == "fail")
    below = max(x for x in xs if x < (m.q_ult.bracket[0] or lo_fail))
    assert m.q_ult.value == pytest.approx(min(max(expect, below), lo_fail), rel=1e-9)
    assert m.q_ult.value == pytest.approx(mm1_limit(10.0, 0.99, 1000.0), rel=0.15)


def test_recovery_rule_stays_within_a_run_when_pooled():
    # run b starts low again after run a failed high: b's steps are not recovery steps
    t1 = make_trace(mm1_frame([3.0, 9.5], mu_rps=10.0, step_s=200.0, seed=1, run_id="a"))
    t2 = make_trace(mm1_frame([3.0, 4.0], mu_rps=10.0, step_s=200.0, seed=2, run_id="b"))
    m = fit_limits([t1, t2], "p99(latency) <= 1s", mixes="none", n_boot=0, pool_runs=True).limits[0]
    assert not any(s.recovery_step for s in m.steps if s.source_run == "b")


def test_too_few_pooled_requests_make_no_limit():
    # one 40 s step at 1 rps: ~30 requests in its steady window, none slow: far fewer than the 368 a P99 needs
    # even pooled, so no "never failed" claim; the same with 9 such steps (~270 requests) still says nothing
    one = fit_limits(make_trace(mm1_frame([1.0], mu_rps=10.0, step_s=40.0, seed=1)), "p99(latency) <= 1s",
                     mixes="none", n_boot=0).limits[0].q_ult
    assert one.censored == "no_data" and one.value is None
    few = fit_limits(make_trace(mm1_frame([1.0] * 9, mu_rps=10.0, step_s=40.0, seed=1)), "p99(latency) <= 1s",
                     mixes="none", n_boot=0).limits[0]
    n = sum(s.exceedances["p99(latency) <= 1s"].of for s in few.steps)
    assert n < 368 and few.q_ult.censored == "no_data"


def test_a_limit_the_requests_cannot_place_says_what_would():
    # two 40 s steps at 1 and 2 rps (~30 and ~60 requests in their windows): neither clause can be judged at
    # either load, so the interval spans both; the statement names the loads and the requests the strictest
    # clause needs: 0 of n above the threshold supports a P99 at 95 % once 0.99^n <= 0.025, n >= 368 (P95: 72)
    q = fit_limits(make_trace(mm1_frame([1.0, 2.0], mu_rps=10.0, step_s=40.0, seed=1)),
                   ["p95(latency) <= 1s", "p99(latency) <= 2s"], mixes="none", n_boot=0).limits[0].q_ult
    assert math.ceil(math.log(0.025) / math.log(0.99)) == 368
    assert q.censored == "no_data" and q.value is None
    assert "from below the lowest load tested (1 rps) to above the highest (2 rps)" in q.statement
    assert q.statement.endswith("more requests per step would place it (p99(latency) <= 2s needs about 368 requests "
                                "at a load for a 95% interval)")


def test_the_limits_json_types_load_without_scipy_stats():
    # result -> settling -> pooled: pooled.requests_needed imports curves (and scipy.stats) only when called
    import subprocess
    import sys

    code = ("import sys, bearing_lib.limits.result; "
            "print('scipy.stats' in sys.modules, 'bearing_lib.limits.curves' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_pooled_runs_take_their_own_jitter_and_bound_and_a_single_run_does_not(monkeypatch):
    """``model.POOLED_JITTER`` and ``evidence.POOLED_RISING_AS_BOUND`` (docs/oracle.md, round 16) act on the model's
    fit of pooled runs only: it is then the fit with the global switches (``LOAD_JITTER``, ``RISING_AS_BOUND``) set
    alike, and a single run's fit is the fit with every switch off, to the last digit."""
    from bearing_lib.limits import evidence, model

    # 60 s steps, two above the service rate 10/s: three steps' queues still rise there, so the bound acts
    rates = [2.0, 4.0, 5.0, 6.0, 8.0, 11.0, 14.0]
    t1 = make_trace(mm1_frame(rates, mu_rps=10.0, step_s=60.0, seed=1, run_id="a"))
    t2 = make_trace(mm1_frame(rates, mu_rps=10.0, step_s=60.0, seed=2, run_id="b"))

    def q(items, pool):
        lim = fit_limits(items, "p99(latency) <= 1s", mixes="none", n_boot=0, pool_runs=pool,
                         estimator="model").limits[0]
        return lim.q_ult.value, tuple(lim.q_ult.ci95), lim.q_ult.interval_method

    assert (model.POOLED_JITTER, evidence.POOLED_RISING_AS_BOUND) == (0.03, True)  # the defaults (round 16)
    pooled_runs, single = q([t1, t2], True), q([t1], False)
    monkeypatch.setattr(evidence, "POOLED_RISING_AS_BOUND", False)
    jitter_alone = q([t1, t2], True)
    monkeypatch.setattr(model, "POOLED_JITTER", 0.0)
    off_pooled, off_single = q([t1, t2], True), q([t1], False)
    assert jitter_alone[:2] != pooled_runs[:2] and jitter_alone[:2] != off_pooled[:2]  # each switch acts
    assert single == off_single
    assert pooled_runs[:2] != off_pooled[:2]
    assert "jittered by 3% (log-normal: separate runs pooled" in pooled_runs[2]
    assert "a step whose queue still rose read as a lower bound of its own load's bad share (separate runs pooled)" \
        in pooled_runs[2] and "lower bound" not in single[2]
    monkeypatch.setattr(model, "LOAD_JITTER", 0.03)
    monkeypatch.setattr(evidence, "RISING_AS_BOUND", True)
    both = q([t1, t2], True)
    assert both[:2] == pooled_runs[:2] and "read as a lower bound of its own load's bad share;" in both[2] + ";"
    assert "separate runs pooled" not in both[2] and "jittered by 3%" in both[2]
