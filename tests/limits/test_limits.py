"""Limits: bracket, interpolation, censoring statements, mixes, blended capacity, JSON contract.

Every trace here is SYNTHETIC (tests/limits/synth.py) or a hand-built load-point table."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.data.loadpoints import LoadPointTable, conform_loadpoints
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.limits.evidence import settle_share
from bearing_lib.limits.fit import blended_capacity, fit_limits
from tests.limits.synth import make_trace, mm1_frame, mm1_limit


def _table(p99s: list[float], loads: list[float] | None = None, n: int = 1000) -> LoadPointTable:
    loads = loads or [float(i + 1) for i in range(len(p99s))]
    rows = [{"run_id": "t", "step": i, "offered_load": x, "offered_load_unit": "rps", "duration_s": 120.0,
             "n_requests": n, "n_ok": n, "n_errors": 0, "throughput_rps": x, "achieved_rate_rps": x,
             "output_tokens_per_s": 100.0 * x, "ttft_ms_p99": p}
            for i, (x, p) in enumerate(zip(loads, p99s, strict=True))]
    return LoadPointTable(conform_loadpoints(rows), Provenance(source="SYNTHETIC", format="t", tool="t", sha256=""))


SLA = "p99(ttft) <= 500ms"


def test_interpolated_limit_and_bracket_by_hand():
    # reported P99s 100, 300, 400, 600 ms at loads 1..4 (1,000 requests each) against 500 ms: at loads 1-3 at most
    # 1 % of the requests exceed 500 ms (k <= 10 of 1,000), at load 4 more do (k >= 10): the crossing lies
    # between 3 and 4, and the model's interval (a load-point table now has one) holds that bracket's interior
    r = fit_limits(_table([100, 300, 400, 600]), SLA, mixes="none", n_boot=0)
    q = r.limits[0].q_ult
    assert 3.0 < q.value < 4.0
    assert q.bracket == (3.0, 4.0) and q.censored == "none"
    lo, hi = q.ci95
    # the interval holds the bracket (a step's verdict near the limit is partly chance) and stays within the
    # model's range (the tested loads widened by a factor 2)
    assert lo is not None and hi is not None and 0.5 <= lo < 3.0 and 4.0 < hi <= 8.0
    # the table's throughput is the load itself: interpolated at the value
    assert q.throughput_rps == pytest.approx(q.value) and q.tokens_per_s == pytest.approx(100 * q.value)
    assert r.limits[0].binding == SLA
    assert q.estimator.startswith("exceedance model") and "reported percentiles" in q.method


def test_all_pass_censored_above():
    r = fit_limits(_table([100, 200, 300]), SLA, mixes="none", n_boot=0)
    q = r.limits[0].q_ult
    assert (q.censored, q.value, q.bracket) == ("above", 3.0, (3.0, None))
    assert q.statement == "≥ 3 rps (never failed)"


def test_all_fail_censored_below():
    r = fit_limits(_table([600, 700, 900]), SLA, mixes="none", n_boot=0)
    q = r.limits[0].q_ult
    assert (q.censored, q.value, q.bracket) == ("below", 1.0, (None, 1.0))
    assert q.statement.startswith("< 1 rps (failed at the lowest load")


def test_one_step():
    assert fit_limits(_table([100]), SLA, mixes="none", n_boot=0).limits[0].q_ult.censored == "above"
    assert fit_limits(_table([900]), SLA, mixes="none", n_boot=0).limits[0].q_ult.censored == "below"


def test_not_monotone_said_as_such():
    # pass, fail, pass, fail: the isotonic fit pools steps 2-3 (margins -0.2, 0.2 -> 0), crossing between 3 and 4
    r = fit_limits(_table([100, 600, 400, 700]), SLA, mixes="none", n_boot=0)
    q = r.limits[0].q_ult
    assert q.censored == "not_monotone"
    assert q.statement.startswith("not monotone: step 2 (3 rps) pass(es) above the failing load 2 rps")
    assert q.bracket == (1.0, 2.0)


def test_unsupported_p99_step_is_never_a_pass():
    # 20 requests per step: the P99 cannot be supported, the step cannot pass; the model still reads the
    # counts (no reported value above 500 ms: at most 1 of 20 requests above it) and says only a bound
    r = fit_limits(_table([100, 200], n=20), SLA, mixes="none", n_boot=0)
    q = r.limits[0].q_ult
    assert all(s.status == "undetermined" for s in r.limits[0].steps)
    assert q.bracket == (None, None)
    assert q.censored != "none" and q.ci95[1] is None
    st0 = r.limits[0].steps[0]
    assert st0.status == "undetermined" and "too few requests for a p99" in st0.reasons[0]


def test_step_with_twenty_requests_in_a_trace():
    df = mm1_frame([2.0, 4.0, 6.0], mu_rps=10, step_s=300, seed=4)
    few = mm1_frame([1.0], mu_rps=10, step_s=25, seed=5).with_columns(
        pl.col("start_s") + 2000.0, pl.col("end_s") + 2000.0, pl.lit(3, pl.Int64).alias("step"))
    tr = make_trace(pl.concat([df, few]))
    r = fit_limits(tr, "p99(latency) <= 5s", mixes="none", n_boot=50)
    s3 = next(s for s in r.limits[0].steps if s.step == 3)
    assert s3.n_requests < 40 and s3.status == "undetermined"
    assert s3.observed["p99(latency) <= 5s"] is None  # never invented
    assert "too_few_for_p99" in s3.flags


def test_unsupported_p99_can_still_prove_a_failure():
    # 200 requests at a heavy overload: the P99 is unsupported but its lower bound breaks the SLA
    tr = make_trace(mm1_frame([14.0], mu_rps=10, step_s=20, seed=6))
    r = fit_limits(tr, "p99(latency) <= 100ms", mixes="none", n_boot=0)
    st0 = r.limits[0].steps[0]
    assert st0.status == "fail" and "lower bound" in " ".join(st0.reasons)


def test_not_steady_step_never_passes():
    # SLA so loose that every P99 passes; the overloaded last step grows a queue -> it cannot pass, and as no
    # clause fails on its window it is no measured failure either: undetermined
    tr = make_trace(mm1_frame([3.0, 5.0, 7.0, 13.0], mu_rps=10, step_s=120, seed=11))
    # the model (the default): the same bracket and binding clause; its interval is its posterior's, which holds
    # mu = 10/s, where the M/M/1 queue stops being steady
    d = fit_limits(tr, "p99(latency) <= 600s", mixes="none", n_boot=100).limits[0]
    assert d.q_ult.bracket == (7.0, None) and d.binding.startswith("steady state") and d.q_ult.censored == "none"
    assert 7.0 < d.q_ult.value < 13.0 and d.q_ult.ci95[0] < 10.0 < d.q_ult.ci95[1]
    assert d.steps[-1].status == "undetermined" and "not_steady" in d.steps[-1].flags
    # the pooled estimator's rules
    r = fit_limits(tr, "p99(latency) <= 600s", mixes="none", n_boot=100, estimator="pooled")
    m = r.limits[0]
    last = m.steps[-1]
    assert last.margins["p99(latency) <= 600s"] > 0  # the latency clause alone would pass it
    assert last.status == "undetermined" and "not_steady" in last.flags
    # the bracket's upper end is the first judged failure: none here
    assert m.q_ult.censored == "none" and m.q_ult.bracket == (7.0, None)
    assert m.binding.startswith("steady state")
    assert m.q_ult.value == pytest.approx(10.0)  # pseudo-clause +1/-1: midpoint of 7 and 13
    # no judged failure above the limit: the interval's high end is open, and said so
    assert m.q_ult.ci95[0] is not None and m.q_ult.ci95[1] is None
    assert "high end open" in m.q_ult.interval_method and "13" in m.q_ult.interval_method
    assert "open above" in m.q_ult.statement
    # ... and as coarse as it gets: the loads to re-run reach 1.2 x the value (bearing next's range without an end)
    res = m.q_ult.resolution
    assert res.coarse and res.ci_relative[1] is None
    assert res.suggested_loads[0] == m.q_ult.ci95[0] and res.suggested_loads[-1] == pytest.approx(1.2 * 10.0)


def test_mm1_closed_form():
    """M/M/1, mu = 10/s: sojourn ~ Exp(mu - lambda), P50 <= 0.5 s holds up to mu - ln 2 / 0.5 = 8.614/s."""
    truth = mm1_limit(10.0, 0.5, 500.0)
    assert truth == pytest.approx(10 - math.log(2) / 0.5)
    rates = [4.0, 5.0, 6.0, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.5]
    tr = make_trace(mm1_frame(rates, mu_rps=10, step_s=400, seed=21))
    r = fit_limits(tr, "p50(latency) <= 500ms", mixes="none", n_boot=300, seed=1)
    q = r.limits[0].q_ult
    assert abs(q.value / truth - 1) < 0.05
    assert q.bracket[0] <= q.value <= q.bracket[1]
    lo, hi = q.ci95
    assert lo <= q.value <= hi


def test_resolution_says_when_the_test_cannot_resolve_the_limit():
    """M/M/1, mu = 10/s, P50 latency <= 0.5 s (truth 8.614/s): steps 2/s apart resolve it coarsely, 0.5/s apart
    over 400 s finely; the coarse one says so, with re-run loads spread evenly across the CI."""
    # the pooled estimator's interval (asked for; the model is the default, below)
    coarse = fit_limits(make_trace(mm1_frame([2.0, 4.0, 6.0, 8.0, 10.0, 12.0], mu_rps=10, step_s=120, seed=21)),
                        "p50(latency) <= 500ms", mixes="none", n_boot=300, seed=1, estimator="pooled").limits[0]
    q = coarse.q_ult
    lo, hi = q.ci95
    assert lo <= 8.614 <= hi
    res = q.resolution
    assert res.coarse is True
    assert res.ci_relative == pytest.approx([lo / q.value - 1, hi / q.value - 1])
    assert res.ci_relative[0] < -0.10 or res.ci_relative[1] > 0.10
    step = (hi - lo) / 3
    assert res.suggested_loads == pytest.approx([lo, lo + step, lo + 2 * step, hi])
    # 10 % trimmed from each end of the send window [first, last start] of a 120 s step
    assert 0.8 * 119 <= res.steady_window_s <= 0.8 * 120
    assert res.statement in coarse.notes and "longer steps" in res.statement

    fine_trace = make_trace(mm1_frame([4.0, 5.0, 6.0, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.5], mu_rps=10,
                                      step_s=400, seed=21))
    fine = fit_limits(fine_trace, "p50(latency) <= 500ms", mixes="none", n_boot=300, seed=1,
                      estimator="pooled").limits[0]
    assert fine.q_ult.resolution.coarse is False
    assert not any("resolves the limit" in n for n in fine.notes)
    # the model's own interval on the same steps is wider than ±10 % (its design effects: each 400 s step near the
    # limit holds a few dozen queue episodes), so it says coarse, and it holds the truth
    own = fit_limits(fine_trace, "p50(latency) <= 500ms", mixes="none", n_boot=300, seed=1).limits[0].q_ult
    assert own.ci95[0] <= 8.614 <= own.ci95[1] and own.resolution.coarse
    assert own.resolution.ci_relative == pytest.approx([own.ci95[0] / own.value - 1, own.ci95[1] / own.value - 1])
    # censored limits carry no resolution (there is no interior estimate to resolve)
    above = fit_limits(make_trace(mm1_frame([2.0, 3.0, 4.0], mu_rps=10, step_s=120, seed=3)),
                       "p50(latency) <= 500ms", mixes="none", n_boot=50, seed=1).limits[0]
    assert above.q_ult.censored == "above" and above.q_ult.resolution is None


def test_mix_present_in_only_some_steps():
    base = mm1_frame([2.0, 4.0, 6.0], mu_rps=10, step_s=200, seed=8, mix_weights={"chat": 1.0})
    rag = mm1_frame([4.0, 6.0], mu_rps=10, step_s=200, seed=9, mix_weights={"rag": 1.0}).with_columns(
        pl.col("step") + 1, pl.col("start_s") + 200.0, pl.col("end_s") + 200.0)
    rag = rag.with_columns(pl.lit(4.0).alias("offered_load")).with_columns(
        pl.when(pl.col("step") == 2).then(6.0).otherwise(4.0).alias("offered_load"))
    frame = pl.concat([base, rag.with_columns(pl.col("request_id") + "r")]).sort("start_s")
    spec = MixSpec((Mix("short", {"input_tokens": (0, 2000)}), Mix("long", {"input_tokens": (2000, math.inf)})))
    r = fit_limits(make_trace(frame), "p50(latency) <= 10s", mixes=spec, n_boot=50)
    long = next(m for m in r.limits if m.mix.name == "long")
    assert [s.step for s in long.steps] == [1, 2]
    assert "the mix appears in 2 of the run's 3 steps" in long.notes


def test_json_contract_and_blended():
    tr = make_trace(mm1_frame([3.0, 5.0, 7.0, 8.0, 9.0], mu_rps=10, step_s=200, seed=3,
                              mix_weights={"chat": 0.5, "rag": 0.5}))
    spec = MixSpec((Mix("short", {"input_tokens": (0, 2000)}), Mix("long", {"input_tokens": (2000, math.inf)})))
    r = fit_limits(tr, ["p90(latency) <= 800ms", "error_rate <= 1%"], mixes=spec, weights={"short": 3, "long": 1},
                   n_boot=200)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["quantile_method"] == "linear"
    assert [c["text"] for c in d["sla"]] == ["p90(latency) <= 800ms", "error_rate <= 1%"]
    m = d["mixes"][0]
    for key in ("mix", "share", "n_requests", "q_ult", "binding", "p_critical", "steps", "usl", "queueing",
                "t_recover_s", "cost_anomaly_index"):
        assert key in m
    for key in ("value", "unit", "ci95", "bracket", "censored", "statement", "throughput_rps", "tokens_per_s"):
        assert key in m["q_ult"]
    for key in ("step", "offered_load", "throughput_rps", "phase", "valid", "flags", "sla_margin"):
        assert key in m["steps"][0]
    assert sum(x["share"] for x in d["mixes"]) == pytest.approx(1.0)
    q = {x["mix"]["name"]: x["q_ult"]["value"] for x in d["mixes"]}
    b = d["blended"]
    assert b["value"] == pytest.approx(1 / (0.75 / q["short"] + 0.25 / q["long"]))
    assert min(q.values()) <= b["value"] <= max(q.values())
    # the blend's interval from the mixes' draws taken together: open below where a mix's interval is (the model's
    # posterior reaching below the loads tested, drawn as -inf), else holding the value
    lo, hi = b["ci95"]
    assert (lo is None) == any(x["q_ult"]["ci95"][0] is None for x in d["mixes"])
    assert (lo is None or lo <= b["value"]) and b["value"] <= hi
    # the mixes of one run draw from the same uniforms (their errors move together): the blend's interval lies
    # between the mixes' own, end for end
    ends = [x["q_ult"]["ci95"] for x in d["mixes"]]
    assert min(e[1] for e in ends) <= hi <= max(e[1] for e in ends)
    assert lo is None or min(e[0] for e in ends) <= lo <= max(e[0] for e in ends)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 1e5), st.floats(0.001, 100.0)), min_size=1, max_size=8))
def test_blended_between_smallest_and_largest(pairs):
    q = [p[0] for p in pairs]
    w = [p[1] for p in pairs]
    b = blended_capacity(q, w)
    assert min(q) * (1 - 1e-12) <= b <= max(q) * (1 + 1e-12)


def test_bad_inputs():
    from bearing_lib.common.errors import ParameterError, SLAParseError

    t = _table([100, 200])
    with pytest.raises(SLAParseError):
        fit_limits(t, "p99(ttft) <= 5", mixes="none")
    with pytest.raises(ParameterError, match="expected 'auto', 'none'"):
        fit_limits(t, SLA, mixes="nonexistent-file.yaml")
    with pytest.raises(ParameterError, match="RequestTrace or LoadPointTable"):
        fit_limits([pl.DataFrame()], SLA)
    with pytest.raises(ParameterError, match="no limit for mix 'nope'"):
        fit_limits(t, SLA, mixes="none", weights={"nope": 1.0}, n_boot=0)


def test_deterministic_with_seed():
    tr = make_trace(mm1_frame([3.0, 6.0, 8.0, 9.0], mu_rps=10, step_s=150, seed=12))
    a = fit_limits(tr, "p90(latency) <= 600ms", mixes="none", n_boot=100, seed=5).limits[0].q_ult
    b = fit_limits(tr, "p90(latency) <= 600ms", mixes="none", n_boot=100, seed=5).limits[0].q_ult
    assert a == b
    assert np.isfinite(a.value)


def test_generator_behind_step_placed_at_achieved_rate():
    # offered 4 rps, but only 2.5 rps sent (generator behind): the failing step sits at 2.5 on the load axis
    rows = [{"run_id": "t", "step": i, "offered_load": x, "offered_load_unit": "rps", "duration_s": 120.0,
             "n_requests": 1000, "n_ok": 1000, "n_errors": 0, "throughput_rps": a, "achieved_rate_rps": a,
             "ttft_ms_p99": p} for i, (x, a, p) in enumerate([(1.0, 1.0, 100.0), (2.0, 2.0, 300.0), (4.0, 2.5, 900.0)])]
    t = LoadPointTable(conform_loadpoints(rows), Provenance(source="SYNTHETIC", format="t", tool="t", sha256=""))
    m = fit_limits(t, SLA, mixes="none", n_boot=0).limits[0]
    # the failing step sits at its achieved 2.5 rps: the crossing lies below it. A table's evidence lags (round 26,
    # evidence.table_lags): the 2.5 rps step runs at the run's capacity (its highest completed rate), so its failure
    # may stand for any load back to 2.0; the pass at 2.0 (ρ = 0.8) for loads back to 1.0 + (1 − 0.897) × 1.0, by
    # hand: three relaxation times 3 / (2.5 (1 − √0.8)²) = 107.7 s of its 120 s. The value stays at or above the
    # last passing step (2.0 before the lag read 2.219)
    assert 3 / (2.5 * (1 - 0.8 ** 0.5) ** 2) / 120 == pytest.approx(0.897, abs=5e-4)
    assert settle_share(2.0, 2.5, 120.0) == pytest.approx(0.897, abs=5e-4)  # the code's share is the hand one
    assert 2.0 <= m.q_ult.value < 2.5
    assert 1.0 - 0.1 < m.q_ult.ci95[0] < 2.0  # the pass's evidence reaches back towards the 1 rps step
    assert m.q_ult.bracket == (2.0, 2.5)
    assert m.steps[-1].load_axis == 2.5 and m.steps[-1].offered_load == 4.0


def test_table_maximum_proves_a_pass():
    # no percentiles reported, only mean and max: with >= 368 requests the max bounds the P99's 95% CI from above
    rows = [{"run_id": "t", "step": 0, "offered_load": 1.0, "offered_load_unit": "concurrency", "duration_s": 300.0,
             "n_ok": 400, "throughput_rps": 1.0, "ttft_ms_mean": 80.0, "ttft_ms_max": 400.0},
            {"run_id": "t", "step": 1, "offered_load": 2.0, "offered_load_unit": "concurrency", "duration_s": 300.0,
             "n_ok": 300, "throughput_rps": 1.5, "ttft_ms_mean": 100.0, "ttft_ms_max": 450.0},
            {"run_id": "t", "step": 2, "offered_load": 3.0, "offered_load_unit": "concurrency", "duration_s": 300.0,
             "n_ok": 400, "throughput_rps": 1.5, "ttft_ms_mean": 300.0, "ttft_ms_max": 900.0}]
    t = LoadPointTable(conform_loadpoints(rows), Provenance(source="SYNTHETIC", format="t", tool="t", sha256=""))
    m = fit_limits(t, SLA, mixes="none", n_boot=0).limits[0]
    assert m.share == 1.0
    # 300 requests: a max of 450 ms is not a 95% bound on the P99 (0.99^300 = 5%): not a pass
    assert [s.status for s in m.steps] == ["pass", "undetermined", "undetermined"]
    assert "reports no p99 of ttft_ms" in m.steps[1].reasons[0]
    assert m.q_ult.censored == "above" and m.q_ult.value == 1.0


def test_point_estimate_is_the_isotonic_interpolation_by_hand():
    # P99 / threshold = exp(0.5 (x - 3.4)) at x = 1..5: margins already decreasing, so the isotonic fit is
    # the margins themselves and the crossing is the straight interpolation between x = 3 and 4
    from bearing_lib.limits.estimators import stepwise_crossing

    xs = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    m = np.array([1 - math.exp(0.5 * (x - 3.4)) for x in xs])
    iso = 3 + (1 - math.exp(-0.2)) / ((1 - math.exp(-0.2)) - (1 - math.exp(0.3)))
    assert stepwise_crossing(xs, {"c": m}, np.ones(5), {"c": False}) == (pytest.approx(iso), "c")


def test_isotonic_fit_pools_a_violation_before_interpolating():
    # margins 0.5, 0.2, 0.3 (a rise: pooled to 0.25, 0.25 with equal weights), -0.5: the crossing lies
    # between x = 3 (fit 0.25) and x = 4 (fit -0.5): 3 + 0.25 / 0.75
    from bearing_lib.limits.estimators import stepwise_crossing

    xs = np.array([1.0, 2.0, 3.0, 4.0])
    est, _ = stepwise_crossing(xs, {"c": np.array([0.5, 0.2, 0.3, -0.5])}, np.ones(4), {"c": False})
    assert est == pytest.approx(3 + 0.25 / 0.75)
    # with weights 1, 3 on the pooled pair the pool is (0.2 * 1 + 0.3 * 3) / 4 = 0.275
    est_w, _ = stepwise_crossing(xs, {"c": np.array([0.5, 0.2, 0.3, -0.5])}, np.array([1.0, 1.0, 3.0, 1.0]),
                                 {"c": False})
    assert est_w == pytest.approx(3 + 0.275 / 0.775)


def test_steps_at_one_load_are_one_point_of_the_isotonic_fit():
    # two runs pooled, both with a step at load 2: margins 0.3 (100 requests) and -0.1 (300 requests) there merge
    # to (0.3 * 100 - 0.1 * 300) / 400 = 0.0, a pass for a non-strict clause; the fit is then 0.5 at 1, 0.0 at 2,
    # -0.4 at 3 and crosses at 2 + 0 / 0.4 = 2 (non-strict: a zero margin holds, the first failing point is 3:
    # 2 + 0.0 / (0.0 + 0.4) * 1 = 2.0). Listed in the other order, the same. Before the estimators shared
    # limits.pooled.crossing, the step-wise one read the two steps as separate points in their listed order.
    from bearing_lib.limits.estimators import stepwise_crossing

    xs = np.array([1.0, 2.0, 2.0, 3.0])
    w = np.array([100.0, 100.0, 300.0, 100.0])
    m = np.array([0.5, 0.3, -0.1, -0.4])
    assert stepwise_crossing(xs, {"c": m}, w, {"c": False}) == (pytest.approx(2.0), "c")
    swapped = [0, 2, 1, 3]
    assert stepwise_crossing(xs[swapped], {"c": m[swapped]}, w[swapped], {"c": False})[0] == pytest.approx(2.0)
    # one more request reading slow at load 2 tips the merged point below zero: the crossing moves below 2
    m2 = np.array([0.5, 0.3, -0.11, -0.4])
    merged = (0.3 * 100 - 0.11 * 300) / 400
    assert stepwise_crossing(xs, {"c": m2}, w, {"c": False})[0] == pytest.approx(1 + 0.5 / (0.5 - merged))


def test_step_validity_counts_only_the_percentiles_the_sla_uses():
    from bearing_lib.limits.fit import _valid_for_sla
    from bearing_lib.limits.sla import parse_sla

    p95, p99 = parse_sla("p95(ttft) <= 1s"), parse_sla("p99(ttft) <= 1s")
    # a 200-request step: too small for a P99 (needs 368), fine for a P95
    assert _valid_for_sla(["too_few_for_p99"], p95) is True
    assert _valid_for_sla(["too_few_for_p99"], p99) is False
    assert _valid_for_sla(["no_times", "steadiness_unknown"], p99) is True  # informational only
    assert _valid_for_sla(["generator_behind"], p95) is False
