"""Focused regression tests, one per defect the proof matrix (test_matrix.py) found on real files.

Each builds the smallest input that shows the defect and asserts the value by hand."""

from __future__ import annotations

import math
from types import SimpleNamespace

import polars as pl
import pytest

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.limits.phases import classify_phases
from bearing_lib.plan.capacity import instance_count
from bearing_lib.plan.fos import Limit, Target, compute_fos, fos_verdict, get_tier
from bearing_lib.report.model import _load_text, _target_bin_s, _target_text
from bearing_lib.report.views import target_row
from bearing_lib.traffic.binning import RateSeries
from bearing_lib.traffic.document import TrafficProfile
from bearing_lib.traffic.seasonality import slot_baselines


def test_an_empty_load_curve_is_insufficient_data_not_a_crash():
    """Locust (frankmwito): every judged step was a recovery step, so the curve left for the phases
    was empty and polars raised "cannot concat empty list" (exit 70). Now a BearingError, which the
    fit turns into "phases not classified: ..."."""
    empty = pl.DataFrame(schema={"offered_load": pl.Float64, "latency_ms_p99": pl.Float64,
                                 "error_rate": pl.Float64, "throughput_rps": pl.Float64})
    with pytest.raises(InsufficientDataError, match="no step left to classify"):
        classify_phases(empty)


def test_the_verdict_note_keeps_an_upper_bound_fos_sign():
    """LLMPerf (failed at its first step): the note said "FOS 0.06" for a FOS < 0.06. The note names a mix a shift
    of the mix could move towards, so it needs a second mix (round 21: "alone, mix all (100% of traffic …)")."""
    res = compute_fos([Limit("all", 0.24, censored="below"), Limit("b", 400.0)], {"all": 0.9, "b": 0.1},
                      Target(4.0))
    fos = res.per_mix[0].fos
    assert fos.bound == "upper" and fos.value == pytest.approx(0.06)
    assert "(90% of traffic, FOS < 0.06)" in fos_verdict(res, get_tier("standard"), Target(4.0)).reason
    one = compute_fos([Limit("all", 0.24, censored="below")], {"all": 1.0}, Target(4.0))
    assert "of traffic" not in fos_verdict(one, get_tier("standard"), Target(4.0)).reason


def test_one_instance_is_singular():
    """"1 instances carry 4.12 req/s" on SGLang x Mooncake."""
    plan = instance_count(4.0, 12.0, 1.5)  # allowable 8 req/s per instance: one carries 4
    assert plan.base == 1
    assert plan.reason.startswith("1 instance carries 4.00 req/s at 8.00 req/s each")
    assert instance_count(20.0, 12.0, 1.5).reason.startswith("3 instances carry")


@pytest.mark.parametrize("load, reasons, text", [
    (None, ["offered load is not a finite number (an unbounded rate)"], "at an unbounded offered load"),
    (math.inf, [], "at an unbounded offered load"), (4.0, [], "at offered load 4"), (2.5, [], "at offered load 2.5"),
    (None, ["offered load unknown: the file does not say it"], "(offered load unknown)")])
def test_a_step_at_an_unbounded_rate_says_so(load, reasons, text):
    """vLLM's request_rate "inf" is null in the limits JSON: the flag said "at offered load None"; a load the file
    does not give (GuideLLM's concurrent16 row, null too) is unknown, not unbounded (round 22)."""
    from types import SimpleNamespace

    assert _load_text(SimpleNamespace(offered_load=load, reasons=reasons)) == text


def _target(rps: float) -> Target:
    return Target(rps, None, 0.99, 1.0, "given")


def test_a_rate_window_profile_is_not_called_per_minute():
    """ServeGen's 600 s windows: the headline said "the P99 per-minute peak", the FOS target row
    "P99 of the per-minute rate"."""
    plan = SimpleNamespace(target=_target(407.7))  # the typed plan's target
    profile = TrafficProfile.from_dict({"targets": {"target": {"rps": 407.7, "bin_s": 600.0}}})
    assert _target_bin_s(profile) == 600.0
    assert _target_text(plan, 600.0) == "the P99 per-window (600 s) peak of 408 req/s"
    assert _target_text(plan, 60.0) == "the P99 per-minute peak of 408 req/s"
    assert _target_text(plan) == "the P99 per-minute peak of 408 req/s"  # no profile: as before
    row = target_row(_target(407.7), 600.0)
    assert "P99 of the 600 s rate × growth 1.0" in row.note and "per-minute" not in row.note
    assert "P99 of the per-minute rate" in target_row(_target(4.0)).note


def test_slots_not_available_carry_their_reason():
    """The data-quality table printed "slots_not_available None": the slots block had no reason."""
    short = RateSeries(60.0, 1_764_547_200.0 + 60.0 * pl.int_range(0, 120, eager=True).to_numpy(),
                       pl.Series([1.0] * 120).to_numpy(), aligned=True)
    d = slot_baselines(short).to_dict()
    assert d["available"] is False
    assert d["reason"].startswith("the series spans 2.00 h")
    relative = RateSeries(60.0, 60.0 * pl.int_range(0, 3 * 1440, eager=True).to_numpy(),
                          pl.Series([1.0] * (3 * 1440)).to_numpy(), aligned=False, origin_s=0.0)
    r = slot_baselines(relative).to_dict()
    assert r["available"] is False and r["reason"].startswith("relative clock")


def test_a_locust_stats_only_run_is_step_0_and_its_limits_json_reads_back(tmp_path):
    """Locust (frankmwito): a stats CSV without history is one aggregate step; it had step null, which
    the limits JSON contract refuses ("mixes.1.steps.0.step: Input should be a valid integer"), so the
    report run failed in the notebook."""
    from bearing_lib.app import pipeline
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.loaders import load

    head = ("Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,"
            "Max Response Time,Requests/s,50%,90%,95%,99%\n")
    p = tmp_path / "run_stats.csv"
    p.write_text(head + "GET,/,200,10,120,130,50,900,2.0,120,300,400,800\n"
                        ",Aggregated,200,10,120,130,50,900,2.0,120,300,400,800\n")
    lp = load(p)
    assert lp.frame["step"].to_list() == [0] and lp.frame["offered_load"].to_list() == [None]
    assert lp.frame["n_requests"].to_list() == [200] and lp.frame["n_errors"].to_list() == [10]
    doc = pipeline.limits_document(fit_limits(lp, "error_rate <= 10%", mixes="none", n_boot=0))
    lim = LimitsResult.coerce(doc, source="limits document")
    assert lim is not None
    assert [st.step for st in lim.mixes[0].steps] == [0]


def test_a_tiny_fos_is_not_printed_as_zero():
    """GenAI-Perf (concurrency 1) x ServeGen (408 req/s): FOS 0.00115 was written "FOS < 0.00"."""
    from bearing_lib.common.estimate import Estimate

    res = compute_fos([Limit("all", 0.47, censored="below")], {"all": 1.0}, Target(407.7))
    v = res.per_mix[0].fos.value
    assert v == pytest.approx(0.47 / 407.7)  # 0.00115
    assert res.per_mix[0].fos.statement.startswith("FOS < 0.0012")
    assert fos_verdict(res, get_tier("standard"), Target(407.7)).reason.startswith("FOS < 0.0012 is below")
    assert Estimate(v, bound="upper").text() == "< 0.0012"
    assert Estimate(0.0, bound="none").text() == "0.00"  # a true zero stays 0.00


def test_a_p_critical_that_never_crossed_is_a_lower_bound():
    """"P99 never exceeded 2x baseline up to 6": the report showed "6.00 (≥ 6.00, open above)" (JMeter's fakestore
    run, a new user's case, round 22); it is P_critical ≥ 6, and a measured one keeps its interval."""
    from types import SimpleNamespace

    from bearing_lib.limits.result import PCritical
    from bearing_lib.report.model import _p_critical

    never = SimpleNamespace(p_critical=PCritical(value=6.0, ci95=(6.0, None), censored="above", unit="concurrency"),
                            unit="concurrency")
    est, note = _p_critical(never)
    assert note is None and est.bound == "lower" and est.sign.strip() == "≥" and est.value == 6.0
    # the 2x rule's "P99 already above 2x its baseline at the lowest load": P_critical < x, an upper bound
    first = SimpleNamespace(p_critical=PCritical(value=2.0, ci95=(None, 2.0), censored="below", unit="rps"),
                            unit="rps")
    est, _ = _p_critical(first)
    assert est.bound == "upper" and est.sign.strip() == "<"
    crossed = SimpleNamespace(p_critical=PCritical(value=4.2, ci95=(3.9, 4.6), censored="none", unit="rps"), unit="rps")
    est, _ = _p_critical(crossed)
    assert est.bound == "none" and est.ci95 == (3.9, 4.6)
