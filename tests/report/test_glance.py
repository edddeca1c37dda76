"""The one-screen summary at the top of the report (bearing_lib.report.glance), on the HAND-MADE documents."""

from __future__ import annotations


def test_glance_reads_the_number_its_interval_and_the_uncovered_from_the_model(docs):
    """The one-screen summary of the HAND-MADE report: values read from the contract JSON files directly."""
    from bearing_lib.report.glance import glance
    from bearing_lib.report.model import build_report
    from tests.report.conftest import provenance

    plan, limits = docs["plan"], docs["limits"]
    plan["fos"]["blended"]["uncovered"] = {"tool-calls": 0.05}  # 5 % of production traffic has no limit
    m = build_report(limits=limits, profile=docs["profile"], plan=plan, provenance=provenance())
    g = glance(m)
    rows = {r.label: r for r in g.rows}
    b = plan["fos"]["blended"]
    assert g.verdict == plan["verdict"]
    assert rows["factor of safety"].value == f"{b['value']:.2f} (95% CI {b['ci95'][0]:.2f}–{b['ci95'][1]:.2f})"
    assert rows["factor of safety"].note == "standard tier: FOS band 1.5–3"
    assert rows["target load"].value == f"{plan['target']['rps']:.2f} req/s"
    loads = [s["offered_load"] for mx in limits["mixes"] for s in mx["steps"]]
    assert (min(loads), max(loads)) == (0.5, 10)
    assert g.not_covered[0].startswith("The test ran offered loads 0.50–10 rps")  # whole numbers without decimals
    assert "inside that range" in g.not_covered[0]  # 2.4 req/s within 0.5-10
    assert "Production traffic with no measured limit: tool-calls (5.0%)." in g.not_covered


def test_with_several_runs_the_glance_speaks_of_the_plans_run_only(docs):
    """A limits document with two runs (HAND-MADE: the fixture's run "main" in rps, and a run "other" of one
    concurrency step that never failed). The plan covers "main": the load sentence reads main's loads in rps (the
    conditions join both units, "concurrency, rps"), and other's bound is not among what the test did not cover;
    each curve carries its own run's unit."""
    import copy

    from bearing_lib.report.glance import glance
    from bearing_lib.report.model import build_report
    from tests.report.conftest import provenance

    limits = copy.deepcopy(docs["limits"])
    for m in limits["mixes"]:
        m["run_id"] = "main"
    other = copy.deepcopy(limits["mixes"][0])
    other["run_id"] = "other"
    other["q_ult"] = {"value": 64.0, "unit": "concurrency", "ci95": [None, None], "bracket": [64.0, None],
                      "censored": "above", "statement": "≥ 64 concurrency (never failed)"}
    for st in other["steps"]:
        st["offered_load"] = 64.0
    limits["mixes"].append(other)
    limits["conditions"]["offered_load_unit"] = "concurrency, rps"
    m = build_report(limits=limits, profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                     plan_run="main")
    g = glance(m)
    loads = [s["offered_load"] for mx in docs["limits"]["mixes"] for s in mx["steps"]]
    assert (min(loads), max(loads)) == (0.5, 10)
    assert g.not_covered[0].startswith("The test ran offered loads 0.50–10 rps"), g.not_covered
    assert not any("64 concurrency" in line for line in g.not_covered), g.not_covered
    assert {c.run_id: c.offered_load_unit for c in m.curves} == {"main": "rps", "other": "concurrency"}


def test_the_limit_row_says_a_completed_rate_in_req_s_as_the_headline_does(docs):
    """The glance row of the binding limit writes its completed rate in req/s, the headline's unit (it read
    "Q_ult 3.05 rps (95% CI 1.72–4.00) completed" beside the headline's "Q_ult 3.05 req/s completed" on vLLM
    DeepSeek-V2.5). By hand from the HAND-MADE limits: long-context binds, offered 2.1 rps (95% CI 1.8–2.4),
    completed 2.05 req/s, its interval scaled by 2.05 / 2.1: 1.757–2.343."""
    from bearing_lib.report.glance import glance
    from bearing_lib.report.model import build_report
    from tests.report.conftest import provenance

    (q,) = [m["q_ult"] for m in docs["limits"]["mixes"] if m["mix"]["name"] == "long-context"]
    assert (q["value"], q["ci95"], q["throughput_rps"], q.get("throughput_ci95_rps")) == (2.1, [1.8, 2.4], 2.05, None)
    r = 2.05 / 2.1
    expected = f"Q_ult 2.05 req/s (95% CI {1.8 * r:.2f}–{2.4 * r:.2f}) completed"
    assert expected == "Q_ult 2.05 req/s (95% CI 1.76–2.34) completed"
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    row = {x.label: x for x in glance(m).rows}["limit that binds"]
    assert row.value == expected and row.note == "long-context, binds on P99 TTFT"
    assert "(Q_ult 2.05 req/s completed)" in m.headline.text
    q["achieved_lower_bound"] = True
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    assert {x.label: x for x in glance(m).rows}["limit that binds"].value == f"{expected}, a lower bound"
    assert "(Q_ult 2.05 req/s completed, a lower bound" in m.headline.text
