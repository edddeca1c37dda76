"""FOS, verdict bands, allowable capacity and CBU: hand-computed cases and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.common.errors import BadValueError, ParameterError
from bearing_lib.plan.fos import (
    CAPPED_REASON,
    FosEstimate,
    Limit,
    Target,
    allowable_capacity,
    blend_rate_lower_bound,
    blended_capacity,
    cbu_per_minute,
    compute_fos,
    fos_point,
    fos_verdict,
    get_tier,
    verdict,
)

rates = st.floats(min_value=0.01, max_value=1e5, allow_nan=False, allow_infinity=False)


STANDARD = get_tier("standard")


def _allowable(res):
    a = allowable_capacity(res.blended.q_blend_rps, STANDARD.target_fos, res.blended.bound,
                           ci95=res.blended.q_blend_ci95, open_reason=res.blended.open_reason)
    return a.rps, a.statement


# ---------------------------------------------------------------- hand-computed
def test_blend_by_hand():
    # 1 / (0.75/12 + 0.25/4) = 1 / (0.0625 + 0.0625) = 8
    assert blended_capacity([12.0, 4.0], [0.75, 0.25]) == pytest.approx(8.0, rel=1e-12)
    # weights are renormalised: 3:1 is the same as 0.75:0.25
    assert blended_capacity([12.0, 4.0], [3, 1]) == pytest.approx(8.0, rel=1e-12)


def test_point_fos_per_mix_and_blended():
    res = compute_fos([Limit("short", 12.0), Limit("long", 4.0)], {"short": 0.75, "long": 0.25}, Target(4.0))
    by = {m.mix: m for m in res.per_mix}
    assert by["short"].fos.value == pytest.approx(3.0)
    assert by["long"].fos.value == pytest.approx(1.0)
    assert by["long"].utilisation == pytest.approx(1.0)
    assert res.blended.q_blend_rps == pytest.approx(8.0)
    assert res.blended.fos.value == pytest.approx(2.0)
    assert res.blended.fos.ci95 is None  # no input carries a CI: nothing to propagate
    v = fos_verdict(res, STANDARD, Target(4.0))
    assert v.color == "green"
    assert "50% of the breakpoint" in v.reason
    assert "long" in v.reason  # the weak mix is named
    # allowable = 8 / 1.5
    assert _allowable(res)[0] == pytest.approx(8.0 / 1.5)


@pytest.mark.parametrize(
    "fos,ci,tier,color,words",
    [
        (0.8, None, "standard", "red", "< 1"),
        (1.4, None, "standard", "red", "below"),
        (1.6, (1.45, 1.8), "standard", "yellow", "CI reaches down to 1.45"),
        (1.3, None, "non-core", "yellow", "77% of the breakpoint"),  # 1/1.3 = 0.769 > 0.70
        (3.5, None, "standard", "yellow", "over-provisioned"),
        (2.6, None, "critical", "green", "within"),
        (2.4, None, "critical", "red", "below"),
        (1.5, (1.5, 1.7), "standard", "green", "67% of the breakpoint"),  # 1/1.5 = 0.667 <= 0.70
    ],
)
def test_verdict_bands(fos, ci, tier, color, words):
    v = verdict(FosEstimate(fos, ci, "none", f"FOS {fos}"), get_tier(tier), target_rps=10.0, q_ult_rps=10.0 * fos)
    assert v.color == color
    assert words in v.reason
    assert v.utilisation == pytest.approx(1 / fos)
    assert v.over_provisioned is (words == "over-provisioned")  # the typed flag the plan reads, not the words


@pytest.mark.parametrize(
    "bound,value,color,words",
    [
        ("lower", 1.2, "yellow", "never failed"),
        ("lower", 2.0, "green", "already meets"),
        ("lower", 3.2, "yellow", "over-provisioned"),
        ("upper", 1.2, "red", "below"),
        ("upper", 2.0, "yellow", "cannot confirm"),
    ],
)
def test_verdict_on_bounds(bound, value, color, words):
    v = verdict(FosEstimate(value, None, bound, "x"), get_tier("standard"))
    assert (v.color, words in v.reason) == (color, True)
    assert v.over_provisioned is (words == "over-provisioned")


def test_censored_limits_give_bounds():
    tgt = Target(4.0)
    above = compute_fos([Limit("a", 6.0, censored="above")], {"a": 1.0}, tgt)
    assert above.per_mix[0].fos.statement.startswith("FOS ≥ 1.50")
    assert above.blended.fos.bound == "lower"
    below = compute_fos([Limit("b", 6.0, censored="below")], {"b": 1.0}, tgt)
    assert below.blended.fos.statement.startswith("FOS < 1.50")
    assert fos_verdict(below, STANDARD, tgt).color == "red"  # < 1.5 cannot meet the standard minimum 1.5
    # a normal mix blended with a lower-bound mix is a lower bound
    mixed = compute_fos([Limit("a", 6.0, censored="above"), Limit("c", 12.0)], {"a": 0.5, "c": 0.5}, tgt)
    assert mixed.blended.fos.bound == "lower"
    assert mixed.blended.fos.value == pytest.approx(1 / (0.5 / 6 + 0.5 / 12) / 4)  # 8 / 4 = 2
    assert _allowable(mixed)[1].count("at least") == 1
    # lower and upper bounds together cannot be bounded: no number is given
    both = compute_fos([Limit("a", 6.0, censored="above"), Limit("b", 6.0, censored="below")], {"a": 0.5, "b": 0.5},
                       tgt)
    assert both.blended.fos.value is None and both.blended.fos.bound == "unbounded"
    assert _allowable(both)[0] is None
    v = fos_verdict(both, STANDARD, tgt)
    assert v.color == "yellow" and "cannot be judged" in v.reason


def test_a_capped_limit_is_an_upper_bound_in_the_plan():
    """A limit held at the saturated throughput (``q_ult.capped``) is measured, not censored, but the sustained
    limit lies below the cap: FOS 7.176 / 4 = 1.794 is said as "FOS < 1.79", its reason names the cap, and the
    standard tier's minimum 1.5 cannot be confirmed from below."""
    tgt = Target(4.0)
    capped = compute_fos([Limit("r", 7.176, (7.09, 7.176), capped=True)], {"r": 1.0}, tgt)
    (m,) = capped.per_mix
    assert m.fos.bound == "upper" and m.fos.value == pytest.approx(7.176 / 4)
    assert m.fos.statement.startswith("FOS < 1.79") and "capped" in m.fos.statement
    # the per-mix limit is an upper bound too, where the report shows it (round 22: "173 (171–176)" beside "FOS <")
    assert m.capped and m.q_ult.bound == "upper" and m.to_dict()["capped"] is True
    assert capped.blended.fos.bound == "upper"
    assert capped.blended.bound_reason == CAPPED_REASON and "bound_reason" in capped.blended.to_dict()
    # its 95 % CI is closed below at 7.09 / 4 = 1.77: the FOS lies in [1.77, 1.79], inside the standard band 1.5-3
    # (round 20: a new user's inference-perf run, capped at 173.4 req/s with a step passing at 170.2, read "cannot
    # confirm" the band and, at FOS < 20.8, was not called over-provisioned)
    v = fos_verdict(capped, STANDARD, tgt)
    assert v.color == "green" and "saturated below the SLA crossing" in v.reason and "≥ 1.77 (95% CI)" in v.reason
    assert "lies within" in v.reason
    over = fos_verdict(compute_fos([Limit("r", 7.176, (7.09, 7.176), capped=True)], {"r": 1.0}, Target(0.35)),
                       STANDARD, Target(0.35))
    assert over.color == "yellow" and "over-provisioned" in over.reason  # [20.3, 20.5]: above the band's 3
    assert over.over_provisioned
    # a limit that failed at its first step has no lower end of its own: the target's uncertainty alone closes the
    # FOS's interval below (10 / 4.2 = 2.38), and that is no evidence the band is met (review finding)
    below = compute_fos([Limit("r", 10.0, None, censored="below")], {"r": 1.0}, Target(4.0, (3.8, 4.2)))
    assert below.blended.fos.ci95[0] == pytest.approx(10 / 4.2, rel=0.02)
    v = fos_verdict(below, STANDARD, Target(4.0, (3.8, 4.2)))
    assert v.color == "yellow" and "cannot confirm" in v.reason and "first step" in v.reason
    # both ends within the band but production could run at 1 / 1.25 = 80 % of the breakpoint (non-core, minimum
    # 1.2): yellow, as a measured FOS of 1.25 would be; both ends straddling the band's maximum 3 (FOS in [2, 5]):
    # yellow, possibly over-provisioned
    busy = compute_fos([Limit("r", 10.5, (10.0, 10.5), capped=True)], {"r": 1.0}, Target(8.0))
    v = fos_verdict(busy, get_tier("non-core"), Target(8.0))
    assert v.color == "yellow" and "up to 80% of the breakpoint" in v.reason
    wide = compute_fos([Limit("r", 20.0, (8.0, 20.0), capped=True)], {"r": 1.0}, tgt)
    v = fos_verdict(wide, STANDARD, tgt)
    assert v.color == "yellow" and "may lie above its maximum" in v.reason
    assert not v.over_provisioned  # "possibly": the plan does not say fewer instances would do
    # a CI reaching below the band's minimum: < 1.79 cannot confirm the standard tier's 1.5 from below
    loose = compute_fos([Limit("r", 7.176, (5.5, 7.176), capped=True)], {"r": 1.0}, tgt)
    v = fos_verdict(loose, STANDARD, tgt)
    assert v.color == "yellow" and "saturated below the SLA crossing" in v.reason and "first step" not in v.reason
    assert "between the last passing load and the saturation" in v.reason
    plain = compute_fos([Limit("r", 7.176, (7.09, 7.176))], {"r": 1.0}, tgt)
    assert plain.per_mix[0].fos.bound == "none"
    assert plain.blended.bound_reason is None and "bound_reason" not in plain.blended.to_dict()
    failed = compute_fos([Limit("b", 6.0, censored="below")], {"b": 1.0}, tgt)
    assert "first step" in fos_verdict(failed, STANDARD, Target(3.0)).reason  # FOS < 2: the first-step wording



def test_a_target_above_a_lower_bound_rate_says_the_limit_is_one():
    """A limit whose completed rate is a lower bound (q_ult.achieved_lower_bound: read over a busy span, the server
    may have completed more): "the target exceeds the measured limit" says so. Blend by hand: 12 req/s at 75 % and
    4 req/s at 25 % is 1 / (0.75 / 12 + 0.25 / 4) = 8 req/s; a 10 req/s target gives FOS 0.8 < 1, red. A lower bound
    on one weighted limit bounds the blend from below (it rises with every limit); on a limit that carries no traffic
    it bounds nothing."""
    limits = [Limit("short", 12.0), Limit("long", 4.0, achieved_lower_bound=True)]
    res = compute_fos(limits, {"short": 0.75, "long": 0.25}, Target(10.0))
    assert res.blended.q_blend_rps == pytest.approx(8.0)
    assert blend_rate_lower_bound(res, limits) is True
    v = fos_verdict(res, STANDARD, Target(10.0), rate_lower_bound=True)
    assert v.color == "red"
    assert v.reason.startswith("FOS 0.80 < 1: the target 10.00 req/s exceeds the measured limit 8.00 req/s (a lower "
                               "bound: the server may have completed more); the SLA fails at the planned peak "
                               "unless the server completes more than was measured; a test whose steps send for "
                               "longer than a typical request takes would measure it")
    plain = fos_verdict(res, STANDARD, Target(10.0))
    assert "exceeds the measured limit 8.00 req/s; the SLA fails" in plain.reason and "lower bound" not in plain.reason
    idle = compute_fos(limits, {"short": 1.0, "long": 0.0}, Target(10.0))
    assert blend_rate_lower_bound(idle, limits) is False
    # through the plan: the limits JSON's q_ult.achieved_lower_bound reaches the verdict (hand-made limits, the
    # blend above; the profile's mixes short 75 %, long 25 %)
    import json
    from pathlib import Path

    from bearing_lib.plan.capacity_plan import CapacityPlan

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
    lim = json.loads((fix / "limits_handmade.json").read_text())
    prof = json.loads((fix / "profile_handmade.json").read_text())
    words = "exceeds the measured limit 8.00 req/s (a lower bound: the server may have completed more)"
    assert words not in CapacityPlan.build(json.loads(json.dumps(lim)), prof, target_rps=10.0).verdict_reason
    (long_mix,) = [m for m in lim["mixes"] if m["mix"]["name"] == "long"]
    long_mix["q_ult"]["achieved_lower_bound"] = True
    plan = CapacityPlan.build(lim, prof, target_rps=10.0)
    assert plan.verdict == "red" and words in plan.verdict_reason

def test_monte_carlo_ci_matches_closed_form():
    # Only the target is uncertain: FOS = 10 / T is monotone in T, so its 2.5 % / 97.5 %
    # points are 10 / 4.4 and 10 / 3.6 exactly (up to Monte Carlo error, ~0.1 % here).
    res = compute_fos([Limit("m", 10.0)], {"m": 1.0}, Target(4.0, (3.6, 4.4)))
    lo, hi = res.blended.fos.ci95
    assert lo == pytest.approx(10 / 4.4, rel=0.01)
    assert hi == pytest.approx(10 / 3.6, rel=0.01)
    # Only the limit is uncertain: CI = [9, 12] / 4
    res2 = compute_fos([Limit("m", 10.0, (9.0, 12.0))], {"m": 1.0}, Target(4.0))
    assert res2.blended.fos.ci95 == pytest.approx((9 / 4, 12 / 4), rel=0.01)
    # fixed seed: identical on a rerun
    again = compute_fos([Limit("m", 10.0)], {"m": 1.0}, Target(4.0, (3.6, 4.4)))
    assert again.blended.fos.ci95 == res.blended.fos.ci95


def test_coverage_of_production_traffic():
    # 20 % of production traffic is in "other", which no limit covers
    res = compute_fos([Limit("a", 10.0), Limit("b", 10.0)], {"a": 0.4, "b": 0.4, "other": 0.2}, Target(4.0))
    assert res.blended.coverage == pytest.approx(0.8)
    assert res.blended.weights == pytest.approx({"a": 0.5, "b": 0.5})
    assert res.blended.uncovered == {"other": 0.2}
    v = fos_verdict(res, STANDARD, Target(4.0))
    assert v.color == "yellow" and "80.0%" in v.reason


def test_mix_mismatch_is_an_error():
    with pytest.raises(BadValueError, match="same mix definitions"):
        compute_fos([Limit("a", 10.0), Limit("b", 5.0)], {"x": 1.0}, Target(1.0))


def test_bad_inputs():
    with pytest.raises(BadValueError, match="bracket"):
        Limit("a", 10.0, (11.0, 12.0))
    with pytest.raises(BadValueError, match="positive"):
        Target(0.0)
    with pytest.raises(ParameterError, match="unknown service tier"):
        get_tier("gold")
    t = get_tier("standard", fos_min=2.0, design_fos=2.5)
    assert (t.fos_min, t.fos_max, t.target_fos) == (2.0, 3.0, 2.5)
    assert get_tier("non_core").fos_min == 1.2


def test_cbu_by_hand():
    # allowable 5.333 req/s = 320 req/min; CBU = count / 320
    counts = [120, 180, 240, 300, 260, 200]
    res = cbu_per_minute(counts, 8.0 / 1.5)
    assert [(a.index, a.requests) for a in res.minutes_above] == [(3, 300), (4, 260)]  # 0.9375, 0.8125 > 0.8
    assert [a.cbu for a in res.minutes_above] == pytest.approx([300 / 320, 260 / 320])  # 240/320 = 0.75 is not
    assert res.n_minutes == 6 and res.max == pytest.approx(0.9375) and res.n_above == 2 and res.n_above_1 == 0
    # P95 of [0.375, 0.5625, 0.625, 0.75, 0.8125, 0.9375] (linear): rank 0.95 × 5 = 4.75 → 0.8125 + 0.75 × 0.125
    assert res.p95 == pytest.approx(0.8125 + 0.75 * 0.125)
    d = res.to_dict()
    assert d["max"] == pytest.approx(0.9375) and d["minutes_above"][0] == {"minute": "3", "index": 3, "requests": 300.0,
                                                                          "cbu": 0.9375}
    assert cbu_per_minute(counts, 8.0 / 1.5, max_listed=1).minutes_above_truncated
    with pytest.raises(ParameterError):
        cbu_per_minute(counts, 0.0)


# ---------------------------------------------------------------- properties
@settings(max_examples=200, deadline=None)
@given(q=rates, t=rates, k=st.floats(min_value=1.001, max_value=100))
def test_fos_rises_with_capacity_and_falls_with_target(q, t, k):
    assert fos_point(q * k, t) > fos_point(q, t)
    assert fos_point(q, t * k) < fos_point(q, t)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(rates, st.floats(min_value=0.001, max_value=1.0)), min_size=1, max_size=6))
def test_blend_lies_between_smallest_and_largest_limit(pairs):
    qs = [p[0] for p in pairs]
    ws = [p[1] for p in pairs]
    b = blended_capacity(qs, ws)
    assert min(qs) * (1 - 1e-9) <= b <= max(qs) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(rates, min_size=2, max_size=4), st.integers(min_value=0, max_value=3),
       st.floats(min_value=1.01, max_value=10))
def test_blended_fos_rises_when_any_mix_limit_rises(qs, i, k):
    i = i % len(qs)
    names = [f"m{j}" for j in range(len(qs))]
    shares = {n: 1 / len(qs) for n in names}
    base = compute_fos([Limit(n, q) for n, q in zip(names, qs, strict=True)], shares, Target(1.0), draws=10)
    qs2 = [q * k if j == i else q for j, q in enumerate(qs)]
    up = compute_fos([Limit(n, q) for n, q in zip(names, qs2, strict=True)], shares, Target(1.0), draws=10)
    assert up.blended.fos.value > base.blended.fos.value


def test_a_peak_above_everything_tested_is_untested_never_reassuring():
    """Issue: "FOS ≥ 0.34" was yellow although the peak is 2.3x the highest load ever tested.

    A limit that never failed at 3 req/s against a 7 req/s target: FOS ≥ 3/7 = 0.43, and the
    peak lies 7/3 = 2.33x above the highest tested load, so the verdict says so and is red.
    """
    res = compute_fos([Limit("a", 3.0, censored="above")], {"a": 1.0}, Target(7.0))
    assert res.blended.fos.bound == "lower"
    assert res.blended.fos.value == pytest.approx(3 / 7)
    v = fos_verdict(res, STANDARD, Target(7.0))
    assert v.color == "red"
    assert v.reason.startswith("untested at the peak: the target 7.00 req/s is 2.3× the most the test completed "
                               "(3.00 req/s, where the SLA still held); FOS ≥ 0.43 says nothing about the peak")
    # a lower bound that already clears 1 but not the tier minimum stays a caution, not untested
    ok = compute_fos([Limit("a", 9.0, censored="above")], {"a": 1.0}, Target(7.0))
    v = fos_verdict(ok, STANDARD, Target(7.0))
    assert v.color == "yellow" and "untested" not in v.reason
    # a failure floor breaks another clause at every load (a JMeter run, round 21): what held was the other clauses
    v = fos_verdict(res, STANDARD, Target(7.0), other_clauses=True)
    assert "(3.00 req/s, where the other clauses still held)" in v.reason and "the SLA still held" not in v.reason
    v = fos_verdict(ok, STANDARD, Target(7.0), other_clauses=True)
    assert "the load test never failed on the other clauses" in v.reason


def test_an_untested_peak_of_several_mixes_names_the_blended_limit() -> None:
    """Two mixes that never failed, at 3 and 6 req/s, half the traffic each: the blended limit is the harmonic mean
    1 / (0.5 / 3 + 0.5 / 6) = 4 req/s, a rate no step completed, so the verdict calls it the blended limit the test
    showed, not the most the test completed (round 62); the business scorecard says the same."""
    res = compute_fos([Limit("a", 3.0, censored="above"), Limit("b", 6.0, censored="above")], {"a": 0.5, "b": 0.5},
                      Target(8.0))
    assert res.blends_several and res.blended.q_blend_rps == pytest.approx(4.0)
    v = fos_verdict(res, STANDARD, Target(8.0))
    assert v.color == "red"
    assert v.reason.startswith("untested at the peak: the target 8.00 req/s is 2.0× the blended limit the test showed "
                               "(4.00 req/s, where the SLA still held); FOS ≥ 0.50 says nothing about the peak")
    # one mix with all the traffic is one rate the test completed
    one = compute_fos([Limit("a", 3.0, censored="above"), Limit("b", 6.0, censored="above")], {"a": 1.0, "b": 0.0},
                      Target(8.0))
    assert not one.blends_several
    assert "2.7× the most the test completed (3.00 req/s" in fos_verdict(one, STANDARD, Target(8.0)).reason


def test_a_limit_ci_open_above_leaves_every_fos_open_above() -> None:
    """A limit whose CI the limits left open above (no step beyond it failed) gives FOS intervals open above:
    ``None`` there, "≥ lo" in words, with the reason, never a closed number.

    By hand: Q_ult 10 (CI 8 to open), target 5 exactly: the FOS is 2, its low end 8 / 5 = 1.6, its high end
    open; the allowable capacity 10 / 1.5 = 6.667 with CI 8 / 1.5 = 5.333 to open."""
    lim = Limit("all", 10.0, (8.0, None))
    assert lim.open_end == "high" and lim.open_reason == "no step above the limit failed a clause"
    res = compute_fos([lim], {"all": 1.0}, Target(5.0))
    assert res.blended.value == pytest.approx(2.0)
    assert res.blended.q_blend_ci95 == (8.0, None)
    for est in (res.blended.fos, res.per_mix[0].fos):
        assert est.ci95[0] == pytest.approx(1.6, rel=0.01) and est.ci95[1] is None
        assert est.open_reason == lim.open_reason
        assert "95% CI ≥ 1.6" in est.statement and "open above" in est.statement
    a = allowable_capacity(res.blended.q_blend_rps, 1.5, ci95=res.blended.q_blend_ci95,
                           open_reason=res.blended.open_reason)
    assert a.rps == pytest.approx(10 / 1.5) and a.ci95[0] == pytest.approx(8 / 1.5) and a.ci95[1] is None
    assert "95% CI ≥ 5.33 req/s, open above: no step above the limit failed a clause" in a.statement
    plain = compute_fos([Limit("all", 10.0, (8.0, 12.0))], {"all": 1.0}, Target(5.0))
    assert plain.blended.open_reason is None and "open" not in plain.blended.statement
    assert plain.blended.ci95 == pytest.approx((1.6, 2.4), rel=0.01)
    # the JSON edge: the open end is null, the reason beside it; a closed FOS has no reason key
    d = res.to_dict()
    assert d["blended"]["ci95"][1] is None and d["per_mix"][0]["fos"]["ci95"][1] is None
    assert d["blended"]["open_reason"] == lim.open_reason
    assert "open_reason" not in plain.to_dict()["blended"]


def test_an_open_end_on_one_mix_opens_the_blend_on_that_side() -> None:
    """Two mixes, one open above: the blended limit and FOS are open above (the data put no ceiling on one
    mix's limit), their low ends closed."""
    res = compute_fos([Limit("a", 10.0, (8.0, None)), Limit("b", 5.0, (4.0, 6.0))], {"a": 0.5, "b": 0.5},
                      Target(2.0))
    # 1 / (0.5/10 + 0.5/5) = 6.667
    assert res.blended.q_blend_rps == pytest.approx(1 / (0.5 / 10 + 0.5 / 5))
    assert res.blended.q_blend_ci95[1] is None and res.blended.q_blend_ci95[0] < 6.667
    assert res.blended.ci95[1] is None and res.blended.ci95[0] is not None
    by = {m.mix: m for m in res.per_mix}
    assert by["a"].fos.ci95[1] is None and by["b"].fos.ci95[1] is not None


def _rel(value, ci):
    lo, hi = ci
    return (math.inf if lo is None else (value - lo) / value, math.inf if hi is None else (hi - value) / value)


@st.composite
def _limits_and_target(draw):
    n = draw(st.integers(1, 3))
    lims = []
    for i in range(n):
        q = draw(st.floats(0.1, 1000))
        lo = q * (1 - draw(st.floats(0.0, 0.9)))
        hi = None if draw(st.booleans()) else q * (1 + draw(st.floats(0.0, 2.0)))
        lims.append(Limit(f"m{i}", q, (lo, hi) if (hi is None or hi > lo) else None))
    t = draw(st.floats(0.1, 1000))
    skew = draw(st.sampled_from([None, (0.74, 1.015), (0.95, 1.0), (0.9, 1.2)]))
    tgt = Target(t, None if skew is None else (t * skew[0], t * skew[1]))
    shares = {lim.mix: draw(st.floats(0.05, 1.0)) for lim in lims}
    return lims, shares, tgt


@given(_limits_and_target())
@settings(max_examples=60, deadline=None)
def test_every_fos_interval_is_at_least_as_wide_relative_to_its_value_as_the_limits(case) -> None:
    """Per side, ``(FOS − lo) / FOS ≥ (Q − q_lo) / Q`` and ``(hi − FOS) / FOS ≥ (q_hi − Q) / Q``, for every mix
    and for the blend against the blended limit, whatever the target's (skewed) CI: the target's uncertainty
    may add to the limit's, never take from it; an open end of the limit is an open end of the FOS."""
    lims, shares, tgt = case
    res = compute_fos(lims, shares, tgt, draws=4000)
    by = {lim.mix: lim for lim in lims}
    pairs = [(m.fos, by[m.mix].q_ult_rps, by[m.mix].ci95) for m in res.per_mix]
    pairs.append((res.blended.fos, res.blended.q_blend_rps, res.blended.q_blend_ci95))
    for fos, q, ci in pairs:
        if ci is None:
            continue
        assert fos.ci95 is not None
        f_lo, f_hi = _rel(fos.value, fos.ci95)
        q_lo, q_hi = _rel(q, ci)
        assert f_lo >= q_lo - 1e-9 and f_hi >= q_hi - 1e-9
        assert (ci[1] is None) <= (fos.ci95[1] is None)


def test_a_fos_just_under_an_edge_does_not_read_as_the_edge():
    """A vLLM sweep's plan (a new user's case, round 21) read "FOS 1.00 < 1": 0.9951 rounded to two decimals. The
    verdict writes as many decimals (up to four) as it takes not to read as the edge it is compared with; 2 stays
    "2.00"."""
    res = compute_fos([Limit("a", 9.951)], {"a": 1.0}, Target(10.0))
    assert res.blended.fos.value == pytest.approx(0.9951)
    v = fos_verdict(res, STANDARD, Target(10.0))
    assert v.color == "red" and v.reason.startswith("FOS 0.995 < 1")
    two = fos_verdict(compute_fos([Limit("a", 20.0)], {"a": 1.0}, Target(10.0)), STANDARD, Target(10.0))
    assert "FOS 2.00 " in two.reason
    # the same rule for a CI's low end and the weak-mix note (review finding: "reaches down to 1.50" for 1.495)
    from bearing_lib.plan.fos import _edge_text

    assert _edge_text(1.495, (1.0, 1.5, 3.0)) == "1.495" and _edge_text(1.49, (1.0, 1.5, 3.0)) == "1.49"


def test_the_weak_mix_note_keeps_the_over_provisioned_flag():
    """Mixes a (95 %, 100 req/s) and b (5 %, 12 req/s) against 10 req/s: the blend 1 / (0.95/100 + 0.05/12) = 73.2,
    FOS 7.32 above the standard band (over-provisioned), while b alone (FOS 1.2) is below its minimum; the note added
    for b kept the words but dropped the typed flag the plan reads (review finding, round 22)."""
    two = compute_fos([Limit("a", 100.0, (95.0, 105.0)), Limit("b", 12.0, (11.5, 12.5))], {"a": 0.95, "b": 0.05},
                      Target(10.0))
    assert two.blended.fos.value == pytest.approx(1 / (0.95 / 100 + 0.05 / 12) / 10)
    v = fos_verdict(two, STANDARD, Target(10.0))
    assert "over-provisioned" in v.reason and "alone, mix b" in v.reason and v.over_provisioned


def test_a_floor_makes_a_lower_bound_the_other_clauses():
    """With a failure floor breaking one clause at every load the limit is the other clauses': the per-mix reason
    says the test never failed on them, not that it never failed (it failed the floor's clause everywhere)."""
    tgt = Target(4.0)
    res = compute_fos([Limit("a", 6.0, censored="above")], {"a": 1.0}, tgt, other_clauses=("a",))
    assert "the load test never failed on the other clauses (limit is a lower bound)" in res.per_mix[0].fos.statement
    plain = compute_fos([Limit("a", 6.0, censored="above")], {"a": 1.0}, tgt)
    assert "the load test never failed (limit is a lower bound)" in plain.per_mix[0].fos.statement
    both = compute_fos([Limit("a", 6.0, censored="above"), Limit("b", 6.0, censored="below")],
                       {"a": 0.5, "b": 0.5}, tgt, other_clauses=("a",))
    assert both.blended.fos.statement.endswith("one mix never failed on the other clauses (lower bound) and another "
                                               "failed at once (upper bound): the blend is not bounded")
    # per mix: a floor of mix "a" says nothing of mix "c"'s lower bound (review finding, round 23)
    two = compute_fos([Limit("a", 6.0, censored="above"), Limit("c", 8.0, censored="above")], {"a": 0.5, "c": 0.5},
                      tgt, other_clauses=("a",))
    assert "never failed on the other clauses" in two.per_mix[0].fos.statement
    assert "the load test never failed (limit is a lower bound)" in two.per_mix[1].fos.statement
