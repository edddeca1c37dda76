"""The report model, built from the HAND-MADE contract documents (tests/fixtures/report/)."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict

import pytest

from bearing_lib.common.unavailable import Unavailable
from bearing_lib.report.model import build_report, constraint_label
from tests.report.conftest import provenance


def test_headline_quotes_peak_fos_ci_verdict_and_binding_mix(docs, full_model):
    plan = docs["plan"]
    # The binding mix is the one with the lowest FOS in the plan, found here independently.
    binding = min(plan["fos"]["per_mix"], key=lambda f: f["fos"]["value"])["mix"]
    assert binding == "long-context"
    lo, hi = plan["fos"]["blended"]["ci95"]
    # the binding mix's limit on the achieved basis: its throughput at Q_ult in the limits document
    achieved = next(m for m in docs["limits"]["mixes"] if m["mix"]["name"] == binding)["q_ult"]["throughput_rps"]
    expected = (f"At the P99 per-minute peak of {plan['target']['rps']:.2f} req/s the blended FOS is "
                f"{plan['fos']['blended']['value']:.2f} (95% CI {lo:.2f}–{hi:.2f}): {plan['verdict']}; "
                f"the {binding} mix binds on P99 TTFT (Q_ult {achieved:.2f} req/s completed).")
    assert full_model.headline.text == expected
    assert full_model.verdict == "yellow"
    assert full_model.headline.verdict_reason == plan["verdict_reason"]
    inst = plan["instances"]
    assert full_model.headline.plan_line == (
        f"Plan: {inst['total']} instances ({inst['base']} + {inst['buffer']} buffer) at "
        f"{inst['per_instance_allowable_rps']:.2f} req/s allowable each; scaling: "
        f"{plan['elasticity']['recommendation']}; allowable capacity {plan['allowable_rps']:.2f} req/s.")


def test_a_completed_rate_that_is_a_lower_bound_is_said_in_the_headline_and_the_row(docs):
    """The binding mix's limit read its completed rate from a step whose send window was shorter than a typical
    request (``q_ult.achieved_lower_bound``, round 25): the headline and the per-mix row say it is a lower bound;
    the other mixes' rows do not."""
    binding = "long-context"
    for m in docs["limits"]["mixes"]:
        if m["mix"]["name"] == binding:
            m["q_ult"]["achieved_lower_bound"] = True
    model = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"],
                         previous=docs["previous_summary"], provenance=provenance(), name="2026-W48")
    achieved = next(m for m in docs["limits"]["mixes"] if m["mix"]["name"] == binding)["q_ult"]["throughput_rps"]
    assert model.headline.text.endswith(f"the {binding} mix binds on P99 TTFT (Q_ult {achieved:.2f} req/s completed, "
                                        "a lower bound: the server may have completed more).")
    rows = {r.name: r.achieved_lower_bound for r in model.mixes.data.rows}
    assert rows[binding] is True and not any(v for n, v in rows.items() if n != binding)


def test_a_curve_judged_from_bounds_says_so_where_it_cannot_be_drawn(docs):
    """A table that reports only each step's mean and maximum (AIPerf's sweep CSV) is judged from the bounds they give
    (a margin per step, no P99 to draw): the load-curve section says that, not "no step supports a P99 TTFT" beside a
    limit that binds on it (round 62); the words name every bound a step can be judged by (a review found a trace's
    lower bound and a table's lower percentile judge steps too). Three of the mix's steps carry a margin."""
    m = next(m for m in docs["limits"]["mixes"] if m["mix"]["name"] == "long-context")
    clause = "p99(ttft_ms) <= 1000 ms"
    for i, st in enumerate(m["steps"]):
        st["ttft_ms_p99"] = None
        st["margins"] = {clause: 0.5 if i < 3 else None}
    model = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"],
                         previous=docs["previous_summary"], provenance=provenance(), name="2026-W48")
    assert "long-context" not in {c.mix for c in model.curves}
    assert ("long-context: no step has a supported P99 TTFT (p99(ttft_ms) <= 1000 ms) to draw; 3 step(s) were judged "
            "on it from bounds the data give (a 95 % lower bound, a lower percentile, or the mean and maximum)"
            in model.curves_section.data.missing)


def test_per_mix_rows_carry_limits_cis_fos_and_conditions(docs, full_model):
    rows = {r.name: r for r in full_model.mixes.data.rows}
    for m in docs["limits"]["mixes"]:
        r = rows[m["mix"]["name"]]
        assert r.q_ult.value == m["q_ult"]["value"]
        assert [r.q_ult.lo, r.q_ult.hi] == m["q_ult"]["ci95"]
        assert r.q_ult.basis == "offered" and r.achieved.basis == "achieved"
        assert r.share == m["share"]
        assert r.n_invalid_steps == sum(1 for s in m["steps"] if s["valid"] is False)
    fos = {f["mix"]: f["fos"]["value"] for f in docs["plan"]["fos"]["per_mix"]}
    assert {n: r.fos.value for n, r in rows.items()} == fos
    cond = full_model.conditions.data
    assert cond.model == docs["limits"]["conditions"]["model"]
    assert cond.sla == [c["text"] for c in docs["limits"]["sla"]]
    assert cond.tool == "LMBenchmark"
    rows = {r.label: r for r in cond.extra}
    assert rows["client"].value == "fmperf, Poisson arrivals" and rows["client"].parts is None
    # the conditions the file gives beyond the named ones, in its order, then the mixes and instances
    given = [k for k in docs["limits"]["conditions"] if k not in {
        "sources", "model", "offered_load_unit", "mixes", "steady_window", "bootstrap", "hardware", "instances",
        "instances_basis", "pooled_runs", "window", "extra"}]
    assert [r.label for r in cond.extra] == [*given, "load-test mixes", "instances in the load test"]


def test_load_curves_have_sla_line_knee_and_contiguous_phase_bands(docs, full_model):
    curve = {c.mix: c for c in full_model.curves}["long-context"]
    src = {m["mix"]["name"]: m for m in docs["limits"]["mixes"]}["long-context"]
    assert curve.metric == "ttft_ms_p99"
    assert curve.threshold == 1000
    assert curve.knee == src["p_critical"]["value"]
    assert [p.value for p in curve.points] == [s["ttft_ms_p99"] for s in src["steps"]]
    # Bands: phases in step order, split halfway between neighbouring steps.
    phases = [s["phase"] for s in src["steps"]]
    runs = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]
    assert [b.phase for b in curve.phase_bands] == runs
    loads = [s["offered_load"] for s in src["steps"]]
    first_change = next(i for i in range(1, len(phases)) if phases[i] != phases[i - 1])
    assert curve.phase_bands[0].lo == loads[0]
    assert curve.phase_bands[0].hi == pytest.approx((loads[first_change - 1] + loads[first_change]) / 2)
    assert curve.phase_bands[-1].hi == loads[-1]


def test_what_changed_reports_drift_with_ci_overlap(full_model):
    items = {i.item.replace(" (offered)", ""): asdict(i) for i in full_model.changes.data.items}
    short = items["Q_ult short-context"]  # previous 6.4 (5.9–6.9), now 6.2 (5.6–6.8): overlap
    assert short["delta"] == pytest.approx(6.2 - 6.4)
    assert short["delta_pct"] == pytest.approx((6.2 - 6.4) / 6.4)
    assert short["significant"] is False
    long = items["Q_ult long-context"]  # previous 2.9 (2.6–3.2), now 2.1 (1.8–2.4): no overlap
    assert long["significant"] is True
    assert items["blended FOS"]["delta"] == pytest.approx(1.63 - 1.91)
    retired = items["Q_ult retired-mix"]
    assert retired["current"] is None and retired["delta"] is None
    assert retired["note"] == "mix not in this report"
    assert full_model.changes.data.previous_verdict == "green"


def test_flags_list_invalid_steps_and_profile_gaps(docs, full_model):
    invalid = [(m["mix"]["name"], s["step"]) for m in docs["limits"]["mixes"] for s in m["steps"] if not s["valid"]]
    step_flags = [f for f in full_model.flags if f.code == "step_invalid"]
    assert len(step_flags) == len(invalid) == 2
    assert all("not_steady" in f.message for f in step_flags)
    codes = {f.code for f in full_model.flags if f.source == "profile"}
    assert codes == {"per_second_not_available", "decomposition_not_available", "slo_budget_not_available"}


def test_step_flags_say_what_the_fit_did(docs):
    """Vegeta's failing 5 rps step (a new user's case, round 21) read "(excluded from the fit)" because a flag made
    it invalid, though it gave the bracket's failing end; a recovery step the fit left out, without flags, was not
    listed. With statuses: a step the fit read (pass, fail, or counted by the model) is "flagged (still judged)";
    one it did not read is "left out", with its first reason where it has no flag."""
    steps = docs["limits"]["mixes"][0]["steps"]
    steps[9].update(status="fail", pooled=True)  # invalid (not_steady), yet read
    steps[3].update(status="excluded", recovery_step=True,
                    reasons=["run after step 9, which failed at a higher requested load (5 > 2): a recovery step"])
    for st in steps[:9]:
        st.setdefault("status", "pass")
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    mine = [f for f in m.flags if f.source.endswith(docs["limits"]["mixes"][0]["mix"]["name"])
            and f.code.startswith("step_")]
    by_step = {f.message.split(" at ")[0]: f for f in mine}
    assert by_step["step 9"].code == "step_flagged" and "excluded" not in by_step["step 9"].message
    assert by_step["step 3"].code == "step_invalid" and "a recovery step" in by_step["step 3"].message
    assert by_step["step 3"].message.endswith("(excluded from the fit)")
    # the table's "steps (left out of the fit)" counts the same steps: the recovery step, not the failing one
    row = next(r for r in m.mixes.data.rows if r.name == docs["limits"]["mixes"][0]["mix"]["name"])
    assert row.n_invalid_steps == 1


def test_a_failure_floor_leads_the_headline(docs):
    """A JMeter run (a new user's case, round 21): 2.1 % of requests failed at every thread count, a floor that
    breaks ``error_rate <= 1%``, and the latency clause never failed; the headline read "Q_ult ≥ 5.90 req/s
    completed (it never failed)" after "red". A floor on one mix of the hand-made limits: the headline says first
    that the SLA fails at every load and names the clause and mix, and the binding mix's limit is the other
    clauses'."""
    binding = "long-context"
    mix = next(m for m in docs["limits"]["mixes"] if m["mix"]["name"] == binding)
    mix["failure_floors"] = [{"clause": "error_rate <= 1%", "share": 0.021, "ci95": [0.0166, 0.0265],
                              "allowed": 0.01, "p_breaks": 0.99, "breaks_clause": True,
                              "statement": "the SLA fails at every tested load because about 2.1% of requests fail"}]
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    assert f"; the SLA fails at every tested load: a load-independent failure floor breaks error_rate <= 1% " \
           f"({binding}), and no instance count fixes it; on the other clauses, the {binding} mix binds on P99 TTFT " \
           "(Q_ult" in m.headline.text
    # a floor seen at one quiet load: the headline does not claim that more instances cannot help (review finding)
    mix["failure_floors"][0]["one_load"] = True
    one = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    assert "at the one quiet load tested, and whether more instances would help is not tested" in one.headline.text
    assert "no instance count fixes it" not in one.headline.text
    # a floor on a row the plan did not judge (no FOS joined to it: another run) is not this verdict's (review)
    mix["failure_floors"][0]["one_load"] = False
    other = next(m for m in docs["limits"]["mixes"] if m["mix"]["name"] != binding)
    other["failure_floors"] = [dict(mix["failure_floors"][0])]
    mix["failure_floors"] = []
    plan = copy.deepcopy(docs["plan"])
    plan["fos"]["per_mix"] = [f for f in plan["fos"]["per_mix"] if f["mix"] == binding]
    elsewhere = build_report(limits=docs["limits"], profile=docs["profile"], plan=plan, provenance=provenance())
    assert "failure floor" not in elsewhere.headline.text
    mix["failure_floors"] = [dict(other["failure_floors"][0])]
    other["failure_floors"] = []
    # a floor that does not break its clause changes nothing
    mix["failure_floors"][0]["breaks_clause"] = False
    plain = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    assert "failure floor" not in plain.headline.text and "other clauses" not in plain.headline.text


def test_missing_inputs_give_not_available_with_reason_and_no_numbers():
    m = build_report(limits=Unavailable("the load test has no TTFT column"), profile=None, plan=None,
                     provenance=provenance())
    assert m.verdict == "unknown"
    for section in (m.mixes, m.conditions, m.curves_section):
        assert not section.available and section.reason == "the load test has no TTFT column"
        assert section.data is None and section.to_dict()["data"] == {}
    assert not m.production.available and m.production.reason == "no production profile was given to this run"
    assert not m.fos.available and m.fos.reason == "no capacity plan was given to this run"
    assert not m.plan.available and not m.scorecards.available
    assert not m.changes.available and "no earlier report" in m.changes.reason
    assert m.curves == []
    assert "No verdict" in m.headline.text and "no TTFT column" in m.headline.text
    # summary.json holds no FOS/limit number at all
    s = json.dumps(m.to_dict())
    assert '"value"' not in s


def test_documents_marked_unavailable_by_their_producer(docs):
    m = build_report(limits=docs["limits"], profile={"available": False, "reason": "trace spans 3 minutes"},
                     plan=None, provenance=provenance())
    assert m.production.reason == "trace spans 3 minutes"
    assert m.mixes.available
    # no plan: no verdict, but the lowest measured limit is named
    assert m.verdict == "unknown"
    assert m.headline.binding_mix == "long-context"
    assert "capacity plan is not available" in m.headline.text


def test_summary_json_round_trips_as_next_weeks_previous(docs, full_model):
    d = full_model.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["schema"] == "bearing.report.summary/2"
    assert back["verdict"] == "yellow"
    assert back["provenance"]["quantile_method"] == "linear"
    nxt = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], previous=back,
                       provenance=provenance())
    deltas = {i.item: i.delta for i in nxt.changes.data.items}
    assert deltas == {"Q_ult short-context (offered)": 0.0, "Q_ult long-context (offered)": 0.0, "blended FOS": 0.0}


def test_what_changed_refuses_another_service(docs, full_model):
    """A summary of another service (other model) or another SLA or tier is not compared."""
    back = json.loads(json.dumps(full_model.to_dict()))
    other = {**back, "identity": {**back["identity"], "model": "another-model"}}
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], previous=other,
                     provenance=provenance())
    assert not m.changes.available
    assert m.changes.reason == "not comparable: model another-model → meta-llama/Llama-3-70B-Instruct"
    tier = {**back, "identity": {**back["identity"], "tier": "critical", "sla": "p99(ttft) <= 2s"}}
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], previous=tier,
                     provenance=provenance())
    assert m.changes.reason == ("not comparable: sla p99(ttft) <= 2s → p99(ttft_ms) <= 1000 ms and error_rate <= 1%; "
                                "tier critical → standard")
    old = {k: v for k, v in back.items() if k != "identity"}
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], previous=old,
                     provenance=provenance())
    assert "identity: expected an object with model, hardware, sla, tier" in m.changes.reason


def test_bounds_keep_their_sign_in_rows_changes_and_fos_chart(docs):
    """A limit that never failed is a lower bound: '≥' in the table, no delta quoted, a marker in the chart."""
    from bearing_lib.report.charts import fos_chart
    from bearing_lib.report.render import render_html

    lim = docs["limits"]
    lim["mixes"][1]["q_ult"]["censored"] = "above"
    plan = docs["plan"]
    pm = plan["fos"]["per_mix"][1]
    pm["censored"] = "above"
    pm["fos"] = {**pm["fos"], "bound": "lower", "ci95": None}
    m = build_report(limits=lim, profile=docs["profile"], plan=plan, previous=docs["previous_summary"],
                     provenance=provenance())
    row = m.mixes.data.rows[1]
    assert row.q_ult.bound == "lower" and row.q_ult.text().startswith("≥ ")
    assert row.fos.bound == "lower"
    ch = {i.item: i for i in m.changes.data.items}[f"Q_ult {row.name} (offered)"]
    assert ch.delta is None and "a bound" in ch.note
    spec = fos_chart(m.fos.data.per_mix, m.fos.data.blended).spec
    marks = [lay["mark"]["shape"] for lay in spec["layer"] if isinstance(lay.get("mark"), dict)
             and lay["mark"].get("type") == "point"]
    assert marks == ["triangle-right"]
    html = render_html(m)
    assert f"≥ {pm['fos']['value']:.2f}" in html


@pytest.mark.parametrize(("clause", "label"), [
    ({"metric": "ttft_ms", "stat": "p99"}, "P99 TTFT"),
    ("p95(latency_ms) <= 3000 ms", "P95 end-to-end latency"),
    ({"metric": "error_rate", "stat": "error_rate"}, "error rate"),
    ("error_rate <= 1%", "error rate"),
    ("something else", "something else"),
    (None, None),
])
def test_constraint_label(clause, label):
    assert constraint_label(clause) == label


def test_the_twin_section_says_predicted_and_never_mixes_with_measured(docs):
    """A trusted twin's limit is shown labelled predicted, beside its validation; an untrusted one quotes nothing."""
    import altair as alt

    from bearing_lib.common.estimate import Estimate
    from bearing_lib.report.render import render_html
    from bearing_lib.twin.section import TwinSection

    chart = alt.Chart(alt.Data(values=[{"x": 1, "y": 2}])).mark_point().encode(x="x:Q", y="y:Q")
    rows = [{"step": 0, "offered_load": 1.0, "held_out": False, "throughput_rps_measured": 1.0,
             "throughput_rps_predicted": 0.98, "ttft_p99_ms_measured": 300.0, "ttft_p99_ms_predicted": 310.0,
             "sla_pass_measured": True, "sla_pass_predicted": True}]
    est = Estimate(3.1, ci95=(2.8, 3.4), unit="rps", basis="offered")
    sec = TwinSection(title="Predicted for the production mix", headline=f"Predicted (not measured) limit for "
                      f"production mix: {est.text()}", predicted=est, kind="predicted", trusted=True, flags=[],
                      validation_rows=rows, param_rows=[], chart=chart)
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                     twin=sec)
    tw = m.predicted.data
    assert tw.predicted == est and tw.kind == "predicted"
    html = render_html(m)
    assert "Predicted (not measured) limit for production mix: 3.10 rps (95% CI 2.80–3.40)" in html
    assert "predicted, not measured" in html and 'id="chart-twin"' in html
    # the measured limits table is untouched by the prediction
    assert all(r.q_ult.value != 3.1 for r in m.mixes.data.rows)
    back = json.loads(json.dumps(m.to_dict()))
    assert back["predicted"]["data"]["kind"] == "predicted"
    none = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                        twin=Unavailable("the load test keeps no per-request times"))
    assert not none.predicted.available and "per-request" in none.predicted.reason


def test_a_coarse_limit_shows_its_follow_up_test_in_the_limits_table(docs):
    """Issue (limits): the report shows the follow-up plan where the limit is coarse, beside the limit."""
    from bearing_lib.report.render import render_html

    lim = docs["limits"]
    note = ("follow-up test: loads 1.8, 2, 2.2, 2.4 rps in ascending order, steps of 600, 600, 600, 600 s "
            "(total 2400 s), then pool both runs; expected resolution ±5%. `bearing next LIMITS.json --out FILE` "
            "writes it for your load-test tool")
    # the typed field the limits write (bearing_lib.limits.followup.attach_followup), not the note's text
    lim["mixes"][1]["q_ult"]["resolution"] = {
        "ci_relative": [-0.2, 0.2], "tolerance": 0.1, "coarse": True, "steady_window_s": 600.0,
        "suggested_loads": [1.8, 2.0, 2.2, 2.4], "statement": "coarse",
        "followup": {"steps": [{"load": x, "duration_s": 600.0, "warmup_s": 60.0, "relaxation_s": 20.0, "rho": 0.5,
                                "expected_requests": int(600 * x)} for x in (1.8, 2.0, 2.2, 2.4)], "total_s": 2400.0,
                     "budget_s": None, "expected_resolution": 0.05, "order": "ascending", "repeats": 1,
                     "model": "mm1"}}
    lim["mixes"][1]["notes"] = ["an unrelated note"]
    m = build_report(limits=lim, profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    rows = m.mixes.data.rows
    assert rows[1].followup == note and rows[0].followup is None
    html = render_html(m)
    assert "This test cannot resolve the limit finely: follow-up test: loads 1.8, 2, 2.2, 2.4 rps" in html


def test_plan_sections_are_the_typed_document_and_summary_json_keeps_the_plan_json(docs):
    from bearing_lib.common.schema import NotAvailable
    from bearing_lib.plan.capacity import InstancePlan
    from bearing_lib.plan.capacity_plan import CapacityPlan
    from bearing_lib.plan.fos import CbuResult
    from bearing_lib.plan.scorecards import Scorecards

    plan = docs["plan"]
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=plan, provenance=provenance())
    assert isinstance(m.fos.data.cbu, CbuResult) and isinstance(m.plan.data.instances, InstancePlan)
    assert isinstance(m.scorecards.data.scorecards, Scorecards)
    assert m.profile_doc is not None and m.profile_doc.per_minute.max == docs["profile"]["per_minute"]["max"]
    s = json.loads(json.dumps(m.to_dict()))
    assert "profile_doc" not in s
    assert s["fos"]["data"]["cbu"] == plan["cbu"]  # the summary twin writes the plan's own JSON
    assert s["scorecards"]["data"]["scorecards"] == plan["scorecards"]
    assert s["production"]["data"]["per_minute"] == docs["profile"]["per_minute"]
    # a CapacityPlan is taken as it is; an unavailable section stays a reason
    plan["memory"] = {"available": False, "reason": "no model preset given (--model)"}
    m2 = build_report(limits=docs["limits"], profile=None, plan=CapacityPlan.from_dict(plan), provenance=provenance())
    assert m2.plan.data.memory == NotAvailable("no model preset given (--model)")


def test_a_renamed_plan_or_profile_key_is_an_error_naming_it_not_a_dash(docs):
    from bearing_lib.common.errors import SchemaError

    plan = docs["plan"]
    plan["fos"]["blended"]["statment"] = plan["fos"]["blended"].pop("statement")
    with pytest.raises(SchemaError, match=r"fos\.blended\.statement: Field required"):
        build_report(limits=docs["limits"], profile=docs["profile"], plan=plan, provenance=provenance())
    prof = docs["profile"]
    prof["per_minute"]["max"] = "lots"
    with pytest.raises(SchemaError, match=r"(?s)production profile: 1 problem.*per_minute\.max: Input should be a "):
        build_report(limits=docs["limits"], profile=prof, plan=None, provenance=provenance())


def test_loader_findings_read_in_a_readers_words():
    """Loader findings name raw values for `bearing inspect` ("start_s is null", "offered_load is inf"); the
    report's data-quality section says them in words, and leaves words that merely contain them alone."""
    from bearing_lib.report.model import _readable

    raw = "start_s is null (time_origin 'none'); offered_load is inf, rate 'inf'; bare Infinity; NaN; nulls; a.null"
    assert _readable(raw) == ("start_s is empty (time_origin 'none'); offered_load is unbounded, rate 'unbounded'; "
                              "bare unbounded; not a number; nulls; a.null")


def test_report_summary_reads_back_what_the_model_writes(docs, full_model):
    """summary.json has one typed reader: what "what changed", the index, the runner and the CLI use."""
    from bearing_lib.report.summary import ReportSummary

    back = ReportSummary.from_dict(json.loads(json.dumps(full_model.to_dict())))
    assert (back.name, back.verdict) == ("2026-W48", "yellow")
    assert back.headline == full_model.headline.text and back.run_time_utc == full_model.provenance.run_time_utc
    # the compact limits are the limits document's own numbers, per mix
    want = {m["mix"]["name"]: m["q_ult"]["value"] for m in docs["limits"]["mixes"]}
    assert {x.name: x.q_ult.value for x in back.limits} == want
    assert back.blended_fos.value == docs["plan"]["fos"]["blended"]["value"]
    assert back.identity.tier == "standard"
    assert back.to_dict()["limits"] == full_model.to_dict()["limits"]


def test_report_summary_names_every_bad_field_and_the_file(tmp_path):
    from bearing_lib.common.errors import SchemaError
    from bearing_lib.report.summary import ReportSummary
    from tests.factories import summary_doc

    doc = summary_doc("w", limits={"a": 2.0})
    doc["verdict"] = "purple"
    del doc["identity"]["tier"]
    doc["limits"]["mixes"][0]["q_ult"] = 3
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SchemaError) as e:
        ReportSummary.read(p)
    msg = str(e.value)
    assert str(p) in msg and "3 problem(s)" in msg
    assert "verdict: expected one of green, yellow, red, unknown (found 'purple')" in msg
    assert "identity: missing key(s) tier" in msg
    assert "limits.mixes[0].q_ult: expected a value with its CI" in msg
    with pytest.raises(SchemaError, match="field 'schema' is 'bearing.report.summary/1'"):
        ReportSummary.from_dict({**summary_doc(), "schema": "bearing.report.summary/1"})


def test_conditions_rows_give_back_the_limits_conditions_in_summary_json(docs):
    """The conditions' further rows (``ConditionRow``): a measured part shows its named parts, a part that was not
    available its reason, anything else its value; ``summary.json`` writes them back as the mapping the limits
    JSON gave (compared with the raw fixture read with ``json``), the mixes and instances after them."""
    from bearing_lib.report.model import ConditionRow
    from bearing_lib.report.render import render_html

    limits = docs["limits"]
    extra = {"stats": {"n_blocks": 20, "rel_bin": 0.01, "tolerance": 0.005},
             "probe": {"available": False, "reason": "no probe was run"}, "runs": ["a", "b"]}
    limits["conditions"]["extra"] = extra
    model = build_report(limits=limits, profile=None, plan=None, provenance=provenance())
    rows = {r.label: r for r in model.conditions.data.extra}
    assert rows["stats"].parts == (("n_blocks", 20), ("rel_bin", 0.01), ("tolerance", 0.005))
    assert rows["probe"].parts is None and rows["probe"].value == extra["probe"]
    assert rows["runs"].value == ["a", "b"]
    for r in rows.values():
        assert ConditionRow.of(r.label, r.json_value()) == r
    out = json.loads(json.dumps(model.to_dict()))["conditions"]["data"]["extra"]
    top = {k: v for k, v in limits["conditions"].items() if k in ("client", "engine", "engine_version")}
    inst = limits["conditions"]["instances"]
    assert out == {**extra, **top, "load-test mixes": "auto", "instances in the load test": f"{inst} (stated)"}
    page = render_html(model)
    assert "<th>stats</th><td>n blocks 20; rel bin 0.01; tolerance 0.005</td>" in page
    assert "not available: no probe was run" in page
