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


# --------------------------------------------------------------------------- a day with tenants and latency
T0 = 1_704_067_200.0  # 2024-01-01 00:00 UTC
RATE = {h: (0.2 if h < 8 else 1.0 if h < 20 else 0.5) for h in range(24)}  # req/s in each UTC hour


def _day_trace(tmp_path):
    """25 hours of evenly spaced requests (from 23:00 the day before), three tenants a/b/c in the ratio 2:1:1,
    latency 1000 / (2 − hour rate) ms; written as CSV and read with the generic loader."""
    import polars as pl

    starts, tenants, lat = [], [], []
    for k in range(-1, 24):
        r = RATE[k % 24]
        n = int(round(3600 * r))
        for i in range(n):
            starts.append(T0 + 3600 * k + (i + 0.5) / r)
            tenants.append("abac"[len(starts) % 4])
            lat.append(1000.0 / (2.0 - r))
    path = tmp_path / "day.csv"
    pl.DataFrame({"start_s": starts, "input_tokens": [100] * len(starts), "output_tokens": [10] * len(starts),
                  "latency_ms": lat, "tenant": tenants}).write_csv(path)
    cols = {c: c for c in ("start_s", "input_tokens", "output_tokens", "latency_ms")}
    return load_trace(path, format="generic", mapping={"columns": cols, "time_origin": "epoch"})


def test_tenants_cron_floors_and_the_passive_limit_on_the_page(tmp_path):
    trace = _day_trace(tmp_path)
    limits = read_json(LIMITS, "limits")
    short = limits["mixes"][0]["q_ult"]
    short["throughput_rps"] = 0.9  # 8 concurrent = 0.9 req/s: the allowable per instance is 0.9 / 1.5 = 0.6 req/s
    prof = profile_traffic(trace, mix_spec=MixSpec.from_dict(limits["mix_spec"]), n_boot=50)
    plan = CapacityPlan.build(limits, prof, trace=trace, tenant_column="tenant")
    ops = ops_section(plan_doc=plan.to_dict(), limits_doc=limits, output_dir=tmp_path / "r",
                      profile_doc=prof.to_dict())
    model = build_report(limits=limits, profile=prof.to_dict(), plan=plan.to_dict(), provenance=make_provenance(
        parameters={}, inputs=[]), ops=ops, passive=passive_part(trace, limits))
    p = _Tables()
    p.feed(render_html(model))
    text = " ".join(" ".join(p.plan_text).split())
    # cron floors by hand: hour P95 = the hour's rate (even spacing); replicas ceil(rate / 0.6): 1 at 0.2 and 0.5,
    # 2 at 1.0 req/s, so one window 08:00-20:00 UTC at 2 replicas over a floor of 1
    trig = {r[0]: r for r in p.tables["plan-triggers"][1:]}
    assert trig["cron 08:00–20:00 UTC"][2] == "2 replicas"
    assert [k for k in trig if k.startswith("cron")] == ["cron 08:00–20:00 UTC"]
    s = model.plan.data.triggers.schedule
    assert (s.floor, [(w.start_hour, w.end_hour, w.replicas) for w in s.windows]) == (1, [(8, 20, 2)])
    assert "Replicas 1–" in text
    # the KEDA file carries the same cron trigger
    keda = (tmp_path / "r" / "exports" / "keda-scaledobject.yaml").read_text()
    assert "start: 0 8 * * *" in keda and "end: 0 20 * * *" in keda and "desiredReplicas: '2'" in keda
    # tenants by hand: 60 requests a minute from 08:00 to 20:00 (720 of the 1,500 minutes), a takes half, b and c a
    # quarter each: P99 of their per-minute counts 30, 15, 15 -> 0.5, 0.25, 0.25 req/s
    rows = {r[0]: r for r in p.tables["plan-tenants"][1:]}
    assert [r[0] for r in p.tables["plan-tenants"][1:]][0] == "a"
    for name, peak in (("a", 0.5), ("b", 0.25), ("c", 0.25)):
        r, obj = rows[name], next(x for x in plan.tenants.tenants if x.tenant == name)
        assert _n(r[2]) == pytest.approx(peak, abs=1e-3) and obj.peak_rps == pytest.approx(peak, abs=1e-3)
        assert _n(r[4]) == pytest.approx(obj.quota_rps, abs=1e-3)
        assert int(r[1].replace(",", "")) == obj.requests
    assert sum(x.quota_rps for x in plan.tenants.tenants) <= plan.tenants.capacity_rps + 1e-9
    # the passive limit: 1 / latency = (2 − rate) / 1000 crosses 1 / 2000 ms at 1.5 req/s (by hand); the fit
    # smooths each window's rate over 5 windows (twin/passive.py), which blurs the hour boundaries: within 10 %.
    # Beyond the highest rate seen (1 req/s), so flagged as an extrapolation
    pas = model.plan.data.passive
    assert pas.q_ult.value == pytest.approx(1.5, rel=0.10) and pas.extrapolated
    # the unit is said once (no "req/s" after an estimate that carries its unit)
    assert pas.q_ult.unit and f"Passive limit (production latency vs load) {pas.q_ult.text()} under" in text
    assert "EXTRAPOLATED beyond the highest observed load" in text
    assert "Production from request logs" in text


def test_production_from_metrics_says_the_query_step_and_what_counters_cannot_tell():
    from bearing_lib.common.schema import NotAvailable
    from bearing_lib.report.plan_section import production_source
    from bearing_lib.report.views import production_source_view
    from bearing_lib.traffic.document import TrafficProfile
    from bearing_lib.traffic.metrics_profile import UNKNOWABLE

    doc = TrafficProfile.from_dict({
        "source": {"format": "prometheus-query-json", "kind": "metrics", "time_resolution_s": 30.0},
        "targets": {"target": {"rps": 2.0}},
        "metrics": {"request_metric": "vllm:request_success_total", "step_s": 30.0, "unknowable": list(UNKNOWABLE)}})
    ps = production_source(doc)
    assert (ps.kind, ps.resolution_s, ps.request_metric) == ("metrics", 30.0, "vllm:request_success_total")
    g = production_source_view(ps, NotAvailable("no per-request records"))
    rows = {r.label: r for r in g.rows}
    assert rows["Production from"].value == "Prometheus metrics"
    assert rows["Time resolution"].value == "30 s" and "query step" in rows["Time resolution"].note
    assert g.notes == [f"Not knowable from counters: {u}" for u in UNKNOWABLE]
    assert g.unavailable == ["passive limit not available: no per-request records"]


@pytest.mark.shared_data
def test_production_from_rate_windows_is_not_called_a_request_log(shared_data):
    """ServeGen's deepseek-r1 aggregates (per its README: one row per 600 s window, no per-request arrival times)
    are described as rate windows of 600 s, as the raw file's window column says, not as a per-request log."""
    import csv
    import gzip

    from bearing_lib import load
    from bearing_lib.report.plan_section import production_source
    from bearing_lib.traffic.profile import profile_traffic

    path = shared_data("traces/servegen-aggregates/reason/deepseek-r1")
    doc = profile_traffic(load(path), n_boot=0)
    ps = production_source(doc)
    assert ps.kind == "rate windows" and ps.resolution_s == 600.0
    assert "no per-request arrival times" in ps.statement and "per-request log" not in ps.statement
    # the raw windows are 600 s apart: the first column of a chunk's trace CSV (read with gzip and csv alone)
    with gzip.open(path / "chunk-0-trace.csv.gz", "rt") as fh:
        starts = [float(r[0]) for r in csv.reader(fh)]
    assert {b - a for a, b in zip(starts, starts[1:], strict=False)} == {600.0}
