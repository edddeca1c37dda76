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
