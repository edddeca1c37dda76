"""k6 ``--summary-export`` and ``handleSummary`` JSON without the shared data: SYNTHETIC summaries.

The real k6 files (aicube, mn1809) have no licence. These are written by the test in the
two layouts (legacy: metric objects hold the values, Rate ``passes`` = non-zero samples,
thresholds ``{expr: true}`` = crossed; handleSummary: ``{type, contains, values,
thresholds: {expr: {ok}}}``), from counts chosen here. The expected load point follows
by hand: failed = ``http_req_failed.passes``, ok = count − failed, throughput = ok / duration.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib import UnsupportedVersionError, load
from bearing_lib.loaders import detect

TREND = {"avg": 210.0, "min": 50.0, "med": 180.0, "max": 2400.0, "p(90)": 400.0, "p(95)": 650.0}


def _legacy() -> dict:
    return {
        "root_group": {"name": "", "path": "", "groups": {}, "checks": {}},
        "metrics": {
            "http_reqs": {"count": 1200, "rate": 20.0},
            "http_req_duration": {**TREND, "thresholds": {"p(95)<500": True}},
            "http_req_failed": {"passes": 60, "fails": 1140, "value": 0.05},
            "vus": {"value": 1, "min": 1, "max": 50},
        },
    }


def _handle() -> dict:
    return {
        "root_group": {"name": "", "path": "", "id": "x", "groups": [], "checks": []},
        "options": {"summaryTrendStats": ["avg", "min", "med", "max", "p(90)", "p(95)"], "summaryTimeUnit": "",
                    "noColor": False},
        "state": {"isStdOutTTY": False, "isStdErrTTY": False, "testRunDurationMs": 61_000.0},
        "metrics": {
            "http_reqs": {"type": "counter", "contains": "default", "values": {"count": 1200, "rate": 19.67}},
            "http_req_duration": {"type": "trend", "contains": "time", "values": TREND,
                                  "thresholds": {"p(95)<500": {"ok": False}}},
            "http_req_failed": {"type": "rate", "contains": "default",
                                "values": {"rate": 0.05, "passes": 60, "fails": 1140}},
            "vus": {"type": "gauge", "contains": "default", "values": {"value": 1, "min": 1, "max": 50}},
        },
    }


@pytest.mark.parametrize("layout", ["legacy", "handle"])
def test_summary_counts_failures_from_passes(tmp_path, layout):
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(_legacy() if layout == "legacy" else _handle()))
    assert detect(p).name == ("k6-summary-export" if layout == "legacy" else "k6-handle-summary")
    ds = load(p)
    row = ds.frame.row(0, named=True)
    duration = 1200 / 20.0 if layout == "legacy" else 61.0
    assert row["duration_s"] == pytest.approx(duration)
    assert (row["n_requests"], row["n_errors"], row["n_ok"]) == (1200, 60, 1140)
    assert row["throughput_rps"] == pytest.approx(1140 / duration)
    assert (row["offered_load"], row["offered_load_unit"]) == (50.0, "concurrency")
    for k, stat in (("avg", "mean"), ("med", "p50"), ("p(90)", "p90"), ("p(95)", "p95"), ("max", "max")):
        assert row[f"latency_ms_{stat}"] == TREND[k]
    th = next(f for f in ds.provenance.findings if f.code == "thresholds")
    assert th.count == 1 and "p(95)<500" in th.message  # crossed in both polarities


def test_handle_summary_in_seconds_is_refused(tmp_path):
    doc = _handle()
    doc["options"]["summaryTimeUnit"] = "s"
    p = tmp_path / "summary.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedVersionError, match="summaryTimeUnit"):
        load(p)
