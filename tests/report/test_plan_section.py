"""The report's plan section read back from the rendered HTML (stdlib ``html.parser``).

Real data: the Azure conversation trace (bundled) as production, the hand-made limits of
``tests/fixtures/plan/limits_handmade.json`` (short 12.0 req/s, long 4.0 req/s, split at 1,024 input tokens),
three zones. Each figure on the page is checked against the plan object and against a hand computation: the
per-mix per-minute counts from the raw CSV with ``csv`` (``tests/plan/test_mix_peak_fos.py``), the failure-domain
layout and the request-rate trigger by arithmetic.
"""

from __future__ import annotations

import math
from html.parser import HTMLParser

import pytest

from bearing_lib import load_trace
from bearing_lib.data.mixes import MixSpec
from bearing_lib.plan.capacity_plan import CapacityPlan, read_json
from bearing_lib.report.model import build_report, make_provenance
from bearing_lib.report.ops_section import ops_section
from bearing_lib.report.plan_section import passive_part
from bearing_lib.report.render import render_html
from bearing_lib.traffic.profile import profile_traffic
from tests.conftest import BUNDLED
from tests.plan.test_mix_peak_fos import CONV, LIMITS, Q_ULT, _linear, _per_minute_by_hand


class _Tables(HTMLParser):
    """The cells of every ``<table id=...>`` (rows of text) and the text of the plan section."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.plan_text: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._in_plan = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id") == "plan":
            self._in_plan = 1
        elif tag == "section" and self._in_plan:
            self._in_plan += 1
        if tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._in_plan:
            self._in_plan -= 1
        if tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_plan:
            self.plan_text.append(data)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    path = BUNDLED / CONV
    limits = read_json(LIMITS, "limits")
    trace = load_trace(path)
    prof = profile_traffic(trace, mix_spec=MixSpec.from_dict(limits["mix_spec"]), n_boot=50)
    plan = CapacityPlan.build(limits, prof, zones=3)
    profile_doc, plan_doc = prof.to_dict(), plan.to_dict()
    ops = ops_section(plan_doc=plan_doc, limits_doc=limits, output_dir=out, profile_doc=profile_doc)
    model = build_report(limits=limits, profile=profile_doc, plan=plan_doc, provenance=make_provenance(
        parameters={}, inputs=[]), ops=ops, passive=passive_part(trace, limits))
    p = _Tables()
    p.feed(render_html(model))
    return path, plan, model, p


def _n(cell: str) -> float:
    return float(cell.split()[0].replace(",", "").lstrip("≥<").strip())


def test_per_mix_peaks_on_the_page_match_the_raw_csv_and_the_plan(page):
    path, plan, _model, p = page
    per, total = _per_minute_by_hand(path)
    p99_all = _linear(total, 0.99) / 60
    rows = {r[0]: r for r in p.tables["plan-mix-peaks"][1:]}
    assert set(rows) == {"short", "long"}
    for m in plan.fos.per_mix:
        r, o = rows[m.mix], m.own_peak
        own, share = _linear(per[m.mix], 0.99) / 60, sum(per[m.mix]) / sum(total)
        assert _n(r[2]) == pytest.approx(own, abs=1e-3) and _n(r[2]) == pytest.approx(o.own_peak_rps, abs=1e-3)
        assert _n(r[3]) == pytest.approx(share * p99_all, abs=1e-3)
        assert _n(r[5]) == pytest.approx(Q_ULT[m.mix] / own, abs=1e-2)
        assert _n(r[6]) == pytest.approx(Q_ULT[m.mix] / (share * p99_all), abs=1e-2)
        assert r[1] == f"{m.share * 100:.1f}%"  # the production share (all requests, partial minutes too)
        assert (r[7] == "share method understates the peak") is (own > 1.1 * share * p99_all)
    assert rows["short"][7] == "share method understates the peak"  # its busiest minutes are not the overall ones


def test_failure_domains_triggers_source_and_what_is_missing(page):
    _path, plan, model, p = page
    text = " ".join(" ".join(p.plan_text).split())
    fd = plan.failure_domains
    # by hand: allowable per instance 1 / (0.5058/12 + 0.4942/4) / 1.5; base = ceil(target / it); three zones, one
    # lost: per zone ceil(base / 2), fleet 3 x that, plus the burst buffer rounded up to a multiple of 3
    inst = plan.instances
    a = 1 / (plan.fos.blended.weights["short"] / 12 + plan.fos.blended.weights["long"] / 4) / 1.5
    assert inst.per_instance_allowable_rps == pytest.approx(a)
    base = math.ceil(plan.target.rps / a - 1e-9)
    per_zone = math.ceil(base / 2)
    assert (fd.needed, fd.per_zone, fd.instances) == (base, per_zone, 3 * per_zone)
    assert fd.total == 3 * math.ceil((3 * per_zone + inst.buffer) / 3)
    assert f"Fleet across failure domains {fd.total} instances" in text
    assert f"{fd.instances} carry the target with 1 zone lost ({fd.surviving} remain, {base} needed)" in text
    # the request-rate trigger: 0.8 x the per-instance allowable
    trig = {r[0]: r for r in p.tables["plan-triggers"][1:]}
    assert _n(trig["request rate"][2]) == pytest.approx(0.8 * a, abs=1e-3)
    assert model.plan.data.triggers.rate.per_pod_rps == pytest.approx(0.8 * a)
    # one hour of traffic: no daily schedule; no server metrics: no binding-resource trigger; both said
    assert "no scheduled (KEDA cron) floors: no hour-of-day slots: the series spans 0.97 h" in text
    assert "no trigger on the binding resource: no server metrics given" in text
    # production from request logs at one minute; no latency in the trace: no passive limit, and why
    assert "Production from request logs" in text and "Time resolution 60 s" in text
    assert ("passive limit not available: the production trace: passive calibration needs per-request start_s and "
            "latency_ms; this trace has none") in text
    assert "tenants not available: no tenant column was given" in text
