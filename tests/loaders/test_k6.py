"""Grafana k6 loaders, on real output read in place (source repositories have no licence).

Expected values come from the raw files parsed with json and datetime inside each test.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from bearing_lib import UnsupportedVersionError, load, load_trace
from bearing_lib.loaders import detect

AICUBE_NDJSON = "loadtests/k6/aicube-k6-results/ndjson_out_json__smoke-retrieve_26052025010722/summary.json"
MN_NDJSON = "loadtests/k6/mn1809-k6-lms-api/ndjson_out/output.json"
LEGACY = "loadtests/k6/aicube-k6-results/summary_export__smoke-memorize_26052025183048/summary.json"
LEGACY_BATCH = "loadtests/k6/aicube-k6-results/summary_export__smoke-memorize-batch_27052025021520/summary.json"
HANDLE_DIR = "loadtests/k6/mn1809-k6-lms-api/handleSummary_runs"


def _points(path, metric):
    out = []
    for ln, line in enumerate(open(path), start=1):
        o = json.loads(line)
        if o["type"] == "Point" and o["metric"] == metric:
            out.append((ln, o["data"]))
    return out


def _utc(text):
    # stdlib parse, nanoseconds truncated to microseconds (enough for abs=1e-6)
    head, frac_tz = text.split(".")
    digits = re.match(r"\d*", frac_tz).group(0)
    tz = frac_tz[len(digits):].replace("Z", "+00:00")
    return datetime.fromisoformat(f"{head}.{digits[:6]}{tz}").timestamp()


@pytest.mark.shared_data
def test_ndjson_rows_joined_from_points(shared_data):
    p = shared_data(AICUBE_NDJSON)
    tr = load_trace(p)
    assert tr.provenance.format == "k6-ndjson"
    reqs = _points(p, "http_reqs")
    durs = _points(p, "http_req_duration")
    blocked = {d["time"]: d["value"] for _, d in _points(p, "http_req_blocked")}
    failed = _points(p, "http_req_failed")
    assert len(tr) == len(reqs) == 10
    f = tr.frame.sort("source_row")
    assert f["source_row"].to_list() == [ln for ln, _ in reqs]
    assert f["latency_ms"].to_list() == pytest.approx([d["value"] for _, d in durs])
    assert f["end_s"].to_list() == pytest.approx([_utc(d["time"]) for _, d in reqs], abs=1e-6)
    starts = [
        _utc(d["time"]) - (d2["value"] + blocked[d["time"]]) / 1000 for (_, d), (_, d2) in zip(reqs, durs, strict=True)
    ]
    assert f["start_s"].to_list() == pytest.approx(starts, abs=1e-6)
    # http_req_failed value 1 and status 500 (k6 error code 1500) on every request
    assert all(d["value"] == 1 for _, d in failed)
    assert set(f["status"]) == {"error"} and f["error"][0] == "status 500, k6 error 1500"
    # 1 VU for 11 s -> one step at concurrency 1
    assert set(f["step"]) == {0} and set(f["offered_load"]) == {1.0}
    assert tr.provenance.fields["ttft_ms"] == "absent"


@pytest.mark.shared_data
def test_ndjson_local_offset_and_setup_requests(shared_data):
    p = shared_data(MN_NDJSON)
    tr = load_trace(p)
    reqs = _points(p, "http_reqs")
    assert reqs[0][1]["time"].endswith("+05:30")
    f = tr.frame.sort("source_row")
    assert f["end_s"].to_list() == pytest.approx([_utc(d["time"]) for _, d in reqs], abs=1e-6)
    # 14:48:16.529855+05:30 is 09:18:16.529855 UTC
    assert f["end_s"][0] == pytest.approx(datetime.fromisoformat("2026-01-13T09:18:16.529855+00:00").timestamp())
    assert [d["tags"]["group"] for _, d in reqs][:2] == ["::setup", "::setup"]
    assert f["step"].is_null().all()  # setup requests and a 1-second VU run: no step
    assert any("2 setup/teardown" in x.message for x in tr.provenance.findings)


def _line(metric, t, value, tags):
    return json.dumps({"metric": metric, "type": "Point", "data": {"time": t, "value": value, "tags": tags}})


def test_ndjson_join_statuses_and_ttfb_option(tmp_path):
    t = "2025-01-01T10:00:00.5+02:00"
    ok = {"status": "200", "name": "u", "group": ""}
    lines = [json.dumps({"type": "Metric", "data": {"name": "http_reqs", "type": "counter"}, "metric": "http_reqs"})]
    # two requests finishing at the same instant with the same tags, one 429, one k6 timeout (1050)
    for v in (100.0, 300.0):
        lines += [_line("http_reqs", t, 1, ok), _line("http_req_duration", t, v, ok)]
        lines += [_line("http_req_waiting", t, v / 2, ok), _line("http_req_failed", t, 0, ok)]
    rej = {"status": "429", "name": "u", "group": "", "error_code": "1429"}
    tmo = {"status": "0", "name": "u", "group": "", "error_code": "1050"}
    for tags in (rej, tmo):
        lines += [_line("http_reqs", t, 1, tags), _line("http_req_duration", t, 60000.0, tags)]
        lines += [_line("http_req_failed", t, 1, tags)]
    p = tmp_path / "out.json"
    p.write_text("\n".join(lines) + "\n")
    tr = load_trace(p, ttfb_as_ttft=True)
    f = tr.frame.sort("source_row")
    assert f["latency_ms"].to_list() == [100.0, 300.0, 60000.0, 60000.0]
    assert f["status"].to_list() == ["ok", "ok", "rejected", "timeout"]
    assert f["ttft_ms"].to_list()[:2] == [50.0, 150.0]
    assert f["end_s"][0] == pytest.approx(datetime.fromisoformat("2025-01-01T08:00:00.5+00:00").timestamp())
    assert tr.provenance.fields["ttft_ms"] == "derived"
    assert load_trace(p).provenance.fields["ttft_ms"] == "absent"  # off by default


def test_ndjson_request_interrupted_at_graceful_stop_is_cancelled_not_failed(tmp_path):
    """An iteration k6 interrupts at the end of gracefulStop ends its in-flight request with Go's
    context.Canceled; the transport still emits its Points (lib/netext/httpext/transport.go
    measureAndEmitMetrics) with status 0, the default error code 1000 and the error text as the
    ``error`` tag (error_codes.go): the tool cancelled it, the server did not fail it."""
    t = "2025-01-01T10:00:30Z"
    ok = {"status": "200", "name": "u", "group": ""}
    cut = {"status": "0", "name": "u", "group": "", "error_code": "1000",
           "error": 'Post "http://127.0.0.1:8000/v1/completions": context canceled'}
    refused = {"status": "0", "name": "u", "group": "", "error_code": "1212",
               "error": "dial: i/o timeout"}
    lines = []
    for tags, dur, failed in ((ok, 120.0, 0), (cut, 29000.0, 1), (refused, 5.0, 1)):
        lines += [_line("http_reqs", t, 1, tags), _line("http_req_duration", t, dur, tags),
                  _line("http_req_failed", t, failed, tags)]
    p = tmp_path / "out.json"
    p.write_text("\n".join(lines) + "\n")
    f = load_trace(p).frame.sort("source_row")
    assert f["status"].to_list() == ["ok", "cancelled", "error"]
    assert f["error"][1].endswith("k6 error 1000: Post \"http://127.0.0.1:8000/v1/completions\": context canceled")


@pytest.mark.shared_data
def test_legacy_summary_export_passes_count_failures(shared_data):
    p = shared_data(LEGACY)
    doc = json.loads(p.read_text())
    assert detect(p).name == "k6-summary-export"
    lp = load(p)
    row = lp.frame.row(0, named=True)
    m = doc["metrics"]
    assert row["n_requests"] == m["http_reqs"]["count"] == 20
    assert row["n_errors"] == m["http_req_failed"]["passes"] == 20  # passes = FAILED requests
    assert row["n_ok"] == m["http_req_failed"]["fails"] == 0
    assert row["duration_s"] == pytest.approx(m["http_reqs"]["count"] / m["http_reqs"]["rate"])
    # every request failed: no latency of a successful request (the whole trend is the failures' durations)
    assert row["latency_ms_p95"] is None and row["latency_ms_p50"] is None
    assert "no_successful_latency" in {x.code for x in lp.provenance.findings}
    assert row["offered_load"] is None  # this export has no vus metric
    (th,) = [x for x in lp.provenance.findings if x.code == "thresholds"]
    # legacy: true = crossed (failed)
    assert m["http_req_failed"]["thresholds"] == {"rate<0.1": True}
    assert m["http_req_duration"]["thresholds"] == {"p(95)<5000": False}
    assert "failed ['http_req_failed: rate<0.1']" in th.message
    assert "passed ['http_req_duration: p(95)<5000']" in th.message
    assert load(shared_data(LEGACY_BATCH)).frame["offered_load"][0] == 1.0


@pytest.mark.shared_data
def test_handle_summary_all_runs(shared_data):
    root = shared_data(HANDLE_DIR)
    files = sorted(root.glob("*/k6-summary.json"))
    assert len(files) == 11
    for p in files:
        doc = json.loads(p.read_text())
        m = doc["metrics"]
        row = load(p).frame.row(0, named=True)
        assert row["n_requests"] == m["http_reqs"]["values"]["count"]
        assert row["n_errors"] == m["http_req_failed"]["values"]["passes"]
        assert row["duration_s"] == pytest.approx(doc["state"]["testRunDurationMs"] / 1000)
        assert row["offered_load"] == m["vus"]["values"]["max"]
        # successful requests' latency: k6's expected_response:true sub-metric where the summary has one
        ok = m.get("http_req_duration{expected_response:true}", m["http_req_duration"])["values"]
        assert row["latency_ms_p90"] == pytest.approx(ok["p(90)"])
        assert row["throughput_rps"] == pytest.approx(
            (row["n_requests"] - row["n_errors"]) / (doc["state"]["testRunDurationMs"] / 1000)
        )


@pytest.mark.shared_data
def test_handle_summary_threshold_polarity(shared_data):
    p = shared_data(f"{HANDLE_DIR}/20260429_cfc3091/k6-summary.json")
    doc = json.loads(p.read_text())
    failed = sorted(
        f"{name}: {expr}"
        for name, m in doc["metrics"].items()
        for expr, v in (m.get("thresholds") or {}).items()
        if v["ok"] is False
    )
    assert failed == ["http_req_duration: p(95)<2000", "http_req_failed: rate<0.01"]
    (th,) = [x for x in load(p).provenance.findings if x.code == "thresholds"]
    assert th.count == 2 and all(f in th.message for f in failed)


@pytest.mark.shared_data
def test_handle_summary_thresholds_without_samples_are_not_passed(shared_data):
    """A submetric whose tag never matched (``checks{step:…}``: passes 0, fails 0) has its threshold marked ok by k6,
    vacuously; it read "passed" (a new user's case). By hand from the raw file: seven such thresholds."""
    p = shared_data(f"{HANDLE_DIR}/20260325_ca24fb4/k6-summary.json")
    doc = json.loads(p.read_text())
    empty = sorted(f"{name}: {expr}" for name, m in doc["metrics"].items()
                   for expr in (m.get("thresholds") or {})
                   if m["values"].get("passes", 1) + m["values"].get("fails", 1) == 0)
    assert len(empty) == 7
    (th,) = [x for x in load(p).provenance.findings if x.code == "thresholds"]
    assert "passed none; not evaluated (no sample" in th.message and all(e in th.message for e in empty)


@pytest.mark.shared_data
def test_handle_summary_trend_thresholds_without_samples_are_not_passed(shared_data):
    """k6 formats an empty trend sink as zeros (metrics/sink.go) and still runs its thresholds at the end of the test,
    so ``http_req_duration{step:Profile API}: p(95)<1500`` reads ok on a step that never ran. By hand from the raw
    file: two trend submetrics with every statistic 0 beside the empty ``checks{step:…}``; the two thresholds evaluated
    on samples both failed, so none passed."""
    p = shared_data(f"{HANDLE_DIR}/20260429_cfc3091/k6-summary.json")
    doc = json.loads(p.read_text())
    zero_trends = sorted(f"{name}: {expr}" for name, m in doc["metrics"].items()
                         if m.get("type") == "trend" and m.get("thresholds")
                         and all(v == 0 for v in m["values"].values())
                         for expr in m["thresholds"])
    assert zero_trends == ["http_req_duration{step:My Orders API}: p(95)<3000",
                           "http_req_duration{step:Profile API}: p(95)<1500"]
    (th,) = [x for x in load(p).provenance.findings if x.code == "thresholds"]
    empty_part = th.message.split("not evaluated", 1)[1]
    assert all(z in empty_part for z in zero_trends)
    assert "passed none" in th.message and th.count == 2


def test_legacy_counter_and_trend_without_samples(tmp_path):
    """The legacy ``--summary-export`` names no metric type: an empty counter is ``{count: 0, rate: 0}`` and an empty
    trend all zeros; their thresholds (``false`` = not crossed) are not evaluated, a real one passes."""
    doc = {
        "metrics": {
            "http_reqs": {"count": 40, "rate": 2.0},
            "vus": {"value": 4, "min": 4, "max": 4},
            "http_req_failed": {"passes": 0, "fails": 40, "value": 0, "thresholds": {"rate<0.01": False}},
            "http_req_duration": {"avg": 120.0, "min": 80.0, "med": 110.0, "max": 300.0, "p(90)": 200.0,
                                  "p(95)": 250.0, "thresholds": {"p(95)<500": False}},
            "http_req_duration{step:x}": {"avg": 0, "min": 0, "med": 0, "max": 0, "p(90)": 0, "p(95)": 0,
                                          "thresholds": {"p(95)<100": False}},
            "retries{step:x}": {"count": 0, "rate": 0, "thresholds": {"count<5": False}},
            # a whole metric whose samples were all 0 (TLS handshaking against plain HTTP) was evaluated: passed
            "http_req_tls_handshaking": {"avg": 0, "min": 0, "med": 0, "max": 0, "p(90)": 0, "p(95)": 0,
                                         "thresholds": {"p(95)<100": False}},
        },
        "root_group": {"name": "", "path": "", "id": "x", "groups": {}, "checks": {}},
    }
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(doc))
    (th,) = [x for x in load(p).provenance.findings if x.code == "thresholds"]
    passed, empty = th.message.split("passed ", 1)[1].split("; not evaluated", 1)
    assert "http_req_duration: p(95)<500" in passed and "http_req_failed: rate<0.01" in passed
    assert "http_req_duration{step:x}: p(95)<100" in empty and "retries{step:x}: count<5" in empty
    assert "{step:x}" not in passed and "http_req_tls_handshaking: p(95)<100" in passed


def test_unknown_summary_and_point_layouts(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"metrics": {"vus": {"value": 1}}, "root_group": {}}))
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "Grafana k6" and "http_reqs.count" in exc.value.missing
    q = tmp_path / "o.json"
    q.write_text(json.dumps({"type": "Point", "metric": "http_reqs", "data": {"value": 1}}) + "\n")
    with pytest.raises(UnsupportedVersionError, match="data.time"):
        load(q)


@pytest.mark.shared_data
def test_successful_only_trend_is_reported(shared_data):
    """The latency percentiles are the successful requests' (k6's http_req_duration{expected_response:true}), the
    whole trend said beside them; by hand from cfc3091's summary (1,000 VUs, 4,576 of 53,976 failed): p95 47,020.7 ms
    successful only, 60,000.45 ms over all requests (60 s timeouts)."""
    p = shared_data(f"{HANDLE_DIR}/20260602_2b33faf/k6-summary.json")
    m = json.loads(p.read_text())["metrics"]
    lp = load(p)
    (f,) = [x for x in lp.provenance.findings if x.code == "latency_successful_only"]
    assert f"p(95) {m['http_req_duration']['values']['p(95)']:.6g} ms" in f.message
    assert lp.frame["latency_ms_p95"][0] == m["http_req_duration{expected_response:true}"]["values"]["p(95)"]
    (cfc,) = sorted(shared_data(HANDLE_DIR).glob("*_cfc3091/k6-summary.json"))
    mc = json.loads(cfc.read_text())["metrics"]
    assert mc["http_req_duration"]["values"]["p(95)"] == pytest.approx(60000.45, abs=0.01)
    row = load(cfc).frame.row(0, named=True)
    assert row["latency_ms_p95"] == pytest.approx(47020.7, abs=0.1)
    assert (row["n_requests"], row["n_errors"]) == (53976, 4576)


def test_a_summary_without_the_successful_trend_says_its_latency_counts_failures(tmp_path):
    """No expected_response:true sub-metric (an older k6, or a script that renamed it): the whole trend is read and a
    warning says the failed requests are in it."""
    doc = {"metrics": {"http_reqs": {"type": "counter", "values": {"count": 100, "rate": 10.0}},
                       "http_req_failed": {"type": "rate", "values": {"passes": 7, "fails": 93, "rate": 0.07}},
                       "vus": {"type": "gauge", "values": {"value": 5, "min": 1, "max": 5}},
                       "http_req_duration": {"type": "trend", "values": {"avg": 100.0, "min": 10.0, "med": 90.0,
                                                                         "max": 900.0, "p(90)": 300.0,
                                                                         "p(95)": 400.0}}},
           "state": {"testRunDurationMs": 10000}, "root_group": {"name": "", "path": "", "groups": [], "checks": []},
           "options": {"summaryTimeUnit": "", "summaryTrendStats": ["avg", "min", "med", "max", "p(90)", "p(95)"]}}
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(doc))
    lp = load(p)
    assert lp.frame["latency_ms_p95"][0] == 400.0
    (f,) = [x for x in lp.provenance.findings if x.code == "latency_includes_failures"]
    assert f.level == "warning" and "the 7 failed ones included" in f.message
