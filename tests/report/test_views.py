"""Curated section views: plain labels, units, caveats kept, raw JSON folded and escaped.

Inputs are the HAND-MADE contract documents in tests/fixtures/report/ (see its README) and
small hand-written dicts; expected strings are computed by hand in the comments.
"""

from __future__ import annotations

import json
import re

from bearing_lib.common.schema import NotAvailable, parse
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.elasticity import ReplayResult
from bearing_lib.plan.fos import CbuResult, Target
from bearing_lib.plan.memory import MemoryPlan
from bearing_lib.report.model import Flag, build_report
from bearing_lib.report.render import render_html, vega_bundle
from bearing_lib.report.views import (
    cbu_view,
    elasticity_view,
    instances_view,
    leftover_caveats,
    memory_view,
    production_view,
    target_row,
)
from bearing_lib.traffic.document import TrafficProfile
from tests.report.conftest import hand_made, provenance

PAYLOAD = "</script><img src=x onerror=alert(1)>"


def _view(doc):
    return production_view(TrafficProfile.from_dict(doc, source="profile"))


def _rows(groups):
    return {r.label: r for g in groups for r in g.rows}


def test_production_key_figures_have_units_and_both_rates():
    groups = _view(hand_made("profile"))
    rows = _rows(groups)
    # per_minute.max = 171 req/min; 171 / 60 = 2.85 req/s
    assert rows["Peak minute"].value == "171 req/min = 2.85 req/s"
    assert rows["Peak minute"].note == "2.79 × the mean"
    # p99 = 144 req/min = 2.40 req/s
    assert rows["P99 minute"].value == "144 req/min = 2.40 req/s"
    # target 2.4 req/s = 144 req/min; P99 × growth 1.00; CI 2.10–2.60 (the hand-made target gives no bin_s)
    t = rows["Target load"]
    assert t.value == "2.40 req/s (144 req/min)"
    assert t.note == "P99 of the rate × growth 1.00; 95% CI 2.10–2.60"
    target = next(g for g in groups if g.title == "Target load")
    assert "Q_target = P99 of the 60 s rate (2.4 req/s) x growth 1 = 2.4 req/s" in target.notes
    # 10,078 minutes, 12 of them empty
    assert rows["Minutes counted"].value == "10,078"
    assert rows["Minutes counted"].note == "12 with no request (counted as zero)"


def test_production_unavailable_reasons_are_kept_verbatim():
    doc = hand_made("profile")
    unavailable = [u for g in _view(doc) for u in g.unavailable]
    assert ("mid-term forecast not available: trace spans 1 week; a 6-month trend needs several weeks"
            in unavailable)


def test_caveats_the_curated_rows_miss_are_listed():
    doc = hand_made("profile")
    doc["new_part"] = {"available": False, "reason": "a reason nobody curated"}
    doc["per_minute"]["odd_note"] = "a caveat in a *_note key"
    doc["targets"]["target"]["notes"] = ["a note inside the target"]
    left = leftover_caveats(doc, _view(doc))
    assert "new part: not available: a reason nobody curated" in left
    assert "per minute.odd note: a caveat in a *_note key" in left
    assert any("a note inside the target" in c for c in left)
    # what the curated rows already show is not repeated
    assert not any("6-month trend" in c for c in left)


def test_target_row_of_the_plan():
    r = target_row(parse(Target, {"rps": 8.243166666666667, "per_minute": 494.59,
                                     "ci95": [6.086666666666666, 8.366666666666667], "quantile": 0.99, "growth": 1.0,
                                     "basis": "profile JSON"}, what="target"))
    # 8.2432 req/s × 60 = 494.59 → "495"
    assert r.value == "8.24 req/s (495 req/min)"
    assert r.note == "P99 of the per-minute rate × growth 1.0; 95% CI 6.09–8.37. profile JSON"


def test_cbu_counts_and_folded_minutes():
    cbu = {"definition": "CBU = throughput / allowable", "allowable_rps": 0.5, "threshold": 0.8, "n_minutes": 3,
           "max": 1.2, "p95": 1.1, "n_above": 2, "n_above_1": 1,
           "minutes_above": [{"minute": "2026-01-01 00:01", "index": 1, "requests": 30.0, "cbu": 1.0},
                             {"minute": "2026-01-01 00:02", "index": 2, "requests": 36.0, "cbu": 1.2}],
           "minutes_above_truncated": False}
    g = cbu_view(parse(CbuResult, cbu, what="cbu"))
    rows = {r.label: r for r in g.rows}
    assert rows["Minutes above 0.80"].value == "2 of 3"
    assert rows["Minutes above 0.80"].note == "1 above 1.0 (over the allowable capacity)"
    (t,) = g.tables
    assert t.collapsed
    # 36 requests in a minute = 0.60 req/s
    assert t.rows[1] == ["2026-01-01 00:02", "36.00", "0.60", "1.20"]
    assert cbu_view(NotAvailable("no series")).unavailable == ["CBU not available: no series"]


def test_plan_groups():
    plan = hand_made("plan")
    inst = {"target_rps": 8.0, "per_instance_q_ult_rps": 1.5, "target_fos": 1.5, "per_instance_allowable_rps": 1.0,
            "base": 8, "buffer": 2, "total": 10, "reason": "8 instances carry 8 req/s at 1 req/s each",
            "tested_instances": 1, "tested_instances_basis": "assumed", "safe_concurrency": None,
            "buffer_basis": "seed default", "burst": None}
    rows = {r.label: r for r in instances_view(parse(InstancePlan, inst, what="instances")).rows}
    assert rows["Instances"].value == "10 (8 + 2 buffer)"
    assert rows["Per-instance limit"].value == "Q_ult 1.50 req/s; allowable 1.00 req/s"
    assert instances_view(NotAvailable("unbounded")).unavailable == [
        "instance count not available: unbounded"]
    el = elasticity_view(parse(ReplayResult, {
        "recommendation": "fixed+buffer", "buffer": 2, "reason": "r", "initial_instances": 3, "max_instances": 5,
        "n_scale_up": 1, "n_scale_down": 0, "n_over_capacity": 4, "over_capacity_minutes": [7, 8, 9, 10],
        "n_minutes": 60, "cold_start_s": 90.0, "cool_down_s": 1200, "per_instance_rps": 1.5,
        "events": [{"after_minute": 1, "action": "scale_up", "count": 2, "instances_after": 5,
                    "ready_from_minute": 3, "reason": "load ratio 0.9 > 0.7"}]}, what="elasticity"))
    er = {r.label: r for r in el.rows}
    assert er["Recommendation"].value == ("fixed+buffer (the replay alone needs 2 buffer instance(s); the plan's "
                                          "buffer is under Instances)")
    assert er["Minutes over ready capacity"].value == "4 of 60"
    assert er["Cold start / cool-down"].value == "90 s / 20.0 min"
    assert el.tables[0].collapsed and el.tables[0].rows[0][1] == "scale up"
    assert memory_view(CapacityPlan.from_dict(plan).memory).title.startswith("KV-cache memory")


def test_memory_needs_stated_without_a_gpu():
    # a small GQA model: 2 layers x 1 KV head x 128 dims x 2 (K, V) x 2 bytes = 1,024 B/token; 5 Gi params bf16 = 10 GiB
    mem = {"model": {"name": "m", "params": 5 * 1024**3, "layers": 2, "hidden": 512, "kv_heads": 1, "head_dim": 128},
           "seq_len": {"n": 100, "mean": 2000, "p50": 1900, "p99": 4000,
                                                                "max": 5000}, "formula": "f",
           "concurrency": 10, "concurrency_basis": "given", "gpu_mem_gib": None, "gpu_count": 1, "margin": 0.15,
           "rows": [{"basis": "p99", "seq_len": 4000.0, "weights_gib": 10.0, "kv_gib": 5.0, "margin_gib": 2.25,
                     "total_gib": 17.25, "seed_mha_kv_gib": 20.0, "seed_mha_total_gib": 34.5, "headroom": None,
                     "max_concurrency_that_fits": None, "seed_mha_max_concurrency_that_fits": None}]}
    m = parse(MemoryPlan, mem, what="memory")
    assert (m.model.kv_bytes_per_token, m.model.weight_bytes) == (1024, 10 * 1024**3)
    rows = {r.label: r for r in memory_view(m).rows}
    assert rows["GPU memory"].value == "not given"
    assert rows["GPU memory"].note == "the plan needs ≥ 17.2 GiB per instance at the P99 sequence length"


def _html(**over):
    docs = {n: hand_made(n) for n in ("limits", "profile", "plan")}
    for k, v in over.items():
        docs[k] = v
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                     name="w")
    return render_html(m).replace(vega_bundle(), "")


def test_html_shows_curated_tables_not_snake_case_dumps():
    html = _html()
    sec = html[html.index('id="production"'):html.index('id="fos"')]
    visible = re.sub(r"<details class=\"raw\">.*?</details>", "", sec, flags=re.S)
    assert "171 req/min = 2.85 req/s" in visible
    for dump in ("bin s", "n empty", "peak to mean", ">rps<"):
        assert dump not in visible
    # the raw JSON is still there, folded, complete
    raw = re.search(r'<details class="raw"><summary>raw JSON of the production profile.*?<pre>(.*?)</pre>', sec,
                    re.S).group(1)
    import html as _h

    assert json.loads(_h.unescape(raw))["per_minute"]["max"] == 171.0


def test_raw_json_and_curated_text_are_escaped():
    prof = hand_made("profile")
    prof["targets"]["target"]["ci_method"] = PAYLOAD
    prof["mid_term_note"] = PAYLOAD
    html = _html(profile=prof)
    assert PAYLOAD not in html
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_flags_grouped_by_source_and_severity_with_counts_per_code():
    from bearing_lib.report.model import Flag
    from bearing_lib.report.views import flags_view

    flags = [Flag("profile", "info", "slots_not_available", "short trace"),
             Flag("limits · a", "info", "note", "n1"),
             Flag("limits · a", "warning", "step_invalid", "step 2"),
             Flag("limits · b", "warning", "step_flagged", "step 0"),
             Flag("limits · a", "warning", "step_invalid", "step 5"),
             Flag("loader", "error", "bad_row", "row 7")]
    v = flags_view(flags)
    assert v.n == 6
    assert list(v.by_level.items()) == [("error", 1), ("warning", 3), ("info", 2)]
    # codes: most severe first, then by count
    assert [(c.level, c.code, c.count) for c in v.codes] == [
        ("error", "bad_row", 1), ("warning", "step_invalid", 2), ("warning", "step_flagged", 1),
        ("info", "note", 1), ("info", "slots_not_available", 1)]
    assert v.codes[1].sources == ["limits · a"]
    # sources: the one with an error, then the most warnings, then the rest; warnings before info inside
    assert [g.source for g in v.groups] == ["loader", "limits · a", "limits · b", "profile"]
    a = v.groups[1]
    assert [f.message for f in a.flags] == ["step 2", "step 5", "n1"]
    assert a.summary == "2 warnings, 1 info"


def test_flags_section_in_html():
    findings = [Flag("production trace", "info", "tz_assumed", "UTC assumed"),
                Flag("production trace", "warning", "dup_rows", "3 duplicate rows")]
    m = build_report(limits=None, profile=None, plan=None, provenance=provenance(), findings=findings, name="w")
    html = render_html(m).replace(vega_bundle(), "")
    sec = html[html.index('id="quality"'):html.index('id="provenance"')]
    assert "2 finding(s): <strong>1 warning</strong>, <strong>1 info</strong>." in sec
    assert "production trace: 1 warning, 1 info" in sec
    # warnings first, in the code counts and inside the source's table
    codes = sec[sec.index("Count per code"):sec.index("Findings by source")]
    assert codes.index("dup_rows") < codes.index("tz_assumed")
    table = sec[sec.index("Findings by source"):]
    assert table.index("3 duplicate rows") < table.index("UTC assumed")


def test_no_placeholder_values_in_the_curated_production_rows():
    # the hand-made bursts carry no durations or multipliers: those rows are left out, not shown as "—"
    groups = _view(hand_made("profile"))
    assert all("—" not in r.value and "None" not in r.value for g in groups for r in g.rows)
    rows = _rows(groups)
    assert "Longest burst" not in rows and rows["Burst episodes"].value == "2"
    # hour-of-day rows without a stored peak: the extreme slots are read from the rows (peak 1.833 at 10:00)
    assert rows["Hour-of-day profile"].value.startswith("peak 10:00 at 1.83 req/s")


def test_budget_group_reads_the_slo_budget_as_the_profile_writes_it():
    """``slo_budget`` in ``SLOBudget.to_dict``'s shape (``budget``, ``consumed``, ``fastest_burn``): the group shows
    the request budget, the shares spent and the burn windows (values set here, strings worked out by hand)."""
    from bearing_lib.report.views import budget_group
    from bearing_lib.traffic.document import TrafficProfile

    slo = {"available": True, "objective": 0.999, "period_days": 30.0, "bad_statuses": ["error"],
           "n_requests": 4000, "n_bad": 2, "n_no_status": 0, "span_s": 3600.0, "error_ratio": 0.0005,
           "burn_rate": 0.5, "budget": {"minutes": 43.2, "request_fraction": 0.001, "requests": 1200.0,
                                        "requests_basis": "(1 - objective) x the period's requests"},
           "consumed": {"requests": 2, "fraction": 2 / 1200, "bad_minutes": 1, "bad_minute_ratio": 0.001,
                        "minutes_fraction": 1 / 43.2},
           "days_to_exhaust_at_this_burn": 60.0,
           "fastest_burn": [{"available": True, "window_s": 300.0, "start_s": 0.0, "end_s": 300.0, "n_requests": 40,
                             "n_bad": 2, "error_ratio": 0.05, "burn_rate": 50.0, "budget_fraction": 2 / 1200},
                            {"window_s": 21600.0, "available": False, "reason": "a 360-minute window does not fit"}],
           "alerts": [], "notes": []}
    doc = TrafficProfile.from_dict({"slo_budget": slo})
    assert doc.to_dict() == {"slo_budget": slo}
    g = budget_group(doc)
    rows = {r.label: (r.value, r.note) for r in g.rows}
    assert rows["Bad requests"] == ("2 of 4,000", "budget 1,200 requests; bad statuses error")
    assert rows["Budget used"][0] == "0.2%"  # 2 of 1,200
    assert rows["Minute budget used"][0] == "2.3%"  # 1 of 43.2 minutes
    (t,) = g.tables
    assert t.rows == [["5.0 min", "40", "2", "50.00", "0.2%"],
                      ["6.0 h", "not available: a 360-minute window does not fit", "", "", ""]]


def test_an_interval_whose_ends_agree_is_said_once():
    """The ops section's intervals (a new user read "2 instance(s) (95% CI from the limit's: 2–2)", round 22): ends
    that print alike are said once, "2 at both ends"; others as before."""
    from bearing_lib.report.templating import environment

    civ = environment().get_template("_macros.html.j2").module.civ
    assert str(civ((2, 2), 0)) == "2 at both ends"
    assert str(civ((14151.2, 16961.0), 0)) == "14,151–16,961"
    assert str(civ((2.004, 2.001), 2)) == "2.00 at both ends"
