"""NVIDIA AIPerf 0.13 artefacts written by AIPerf itself.

The fixture ``tests/fixtures/aiperf/aiperf-0.13.0-stub-sweep`` is AIPerf 0.13.0's own output
(``aiperf profile --endpoint-type chat --streaming --request-rate R --request-count 30
--request-timeout-seconds 2 --request-cancellation-rate 10 --request-cancellation-delay 0.1
--output-artifact-dir rate_R`` for R = 2, 8, 16) against an OpenAI-compatible stub server on
loopback with four slots that answers every 11th request 503 and stalls every 17th past the
2 s timeout (``profile_export.jsonl`` and ``profile_export_aiperf.json`` of each run kept). Every
expected number is read from the raw files with ``json`` here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bearing_lib.loaders import detect, load, load_trace

SWEEP = Path(__file__).resolve().parents[1] / "fixtures" / "aiperf" / "aiperf-0.13.0-stub-sweep"
RATES = (2, 8, 16)


def _raw(rate: int) -> tuple[list[dict], dict]:
    folder = SWEEP / f"rate_{rate}"
    records = [json.loads(ln) for ln in (folder / "profile_export.jsonl").read_text().splitlines() if ln.strip()]
    return records, json.loads((folder / "profile_export_aiperf.json").read_text())


def _expected_status(rec: dict) -> str:
    if rec["metadata"]["was_cancelled"]:
        return "cancelled"
    err = rec.get("error")
    if not err:
        return "ok"
    return "timeout" if err.get("type") == "TimeoutError" else "error"


def test_a_folder_of_per_rate_artefact_folders_is_one_sweep():
    tr = load_trace(SWEEP)
    assert tr.provenance.format == "aiperf-requests" and tr.provenance.tool_version == "0.13.0"
    steps = tr.steps.sort("step")
    # the load of each step is the profiling phase's rate in the summary beside the records
    rates = [_raw(r)[1]["input_config"]["phases"][0]["rate"] for r in RATES]
    assert steps["offered_load"].to_list() == rates == [2.0, 8.0, 16.0]
    assert set(steps["offered_load_unit"].to_list()) == {"rps"}
    for r in RATES:
        records, summary = _raw(r)
        rows = tr.frame.filter(tr.frame["offered_load"] == r)
        assert rows.height == len(records) == 30
        want = {}
        for rec in records:
            want[_expected_status(rec)] = want.get(_expected_status(rec), 0) + 1
        got = dict(rows.group_by("status").len().iter_rows())
        assert got == want
        ok = rows.filter(rows["status"] == "ok")
        # AIPerf's own statistics are over its successful requests: bearing's rows reproduce them
        assert ok.height == summary["request_count"]["avg"]
        assert ok["ttft_ms"].mean() == pytest.approx(summary["time_to_first_token"]["avg"], rel=1e-12)
        assert ok["latency_ms"].mean() == pytest.approx(summary["request_latency"]["avg"], rel=1e-12)
        assert ok["tpot_ms"].mean() == pytest.approx(summary["inter_token_latency"]["avg"], rel=1e-12)
        # times: the wall-clock ns of the records
        first = min(rec["metadata"]["request_start_ns"] for rec in records) / 1e9
        assert rows["start_s"].min() == pytest.approx(first, abs=1e-6)


def test_cancelled_requests_are_aiperfs_own_not_failures():
    tr = load_trace(SWEEP / "rate_8")
    records, summary = _raw(8)
    cancelled = [rec for rec in records if rec["metadata"]["was_cancelled"]]
    assert len(cancelled) == 1 and cancelled[0]["error"]["code"] == 499
    f = tr.frame
    assert f.filter(f["status"] == "cancelled").height == 1
    # AIPerf's error rate counts the cancellation (6 of 30 = 20 %); bearing's failures leave it out
    errors = sum(1 for rec in records if rec.get("error"))
    assert summary["request_error_rate"]["avg"] == pytest.approx(100 * errors / len(records))
    assert f.filter(f["status"].is_in(["error", "timeout", "rejected"])).height == errors - 1
    assert "cancelled_by_aiperf" in {x.code for x in tr.provenance.findings}


def test_detection_prefers_the_per_request_records():
    for p in (SWEEP, SWEEP / "rate_16", SWEEP / "rate_16" / "profile_export.jsonl"):
        assert detect(p).name == "aiperf-requests", p
    assert detect(SWEEP / "rate_16" / "profile_export_aiperf.json").name == "aiperf-export"


def test_the_0_13_summary_reads_its_load_and_version():
    _, summary = _raw(16)
    lp = load(SWEEP / "rate_16" / "profile_export_aiperf.json")
    row = lp.frame.row(0, named=True)
    assert row["offered_load"] == summary["input_config"]["phases"][0]["rate"] == 16.0
    assert row["offered_load_unit"] == "rps"
    assert row["n_ok"] == summary["request_count"]["avg"]
    assert lp.provenance.tool_version == summary["aiperf_version"] == "0.13.0"
    assert "version_not_stated" not in {x.code for x in lp.provenance.findings}
