"""Vegeta loaders, on real files read in place (FerdinandZhong repo has no licence).

Labels from the data README:
- ``converted_to_vegeta_json/*.json`` are **converted**: the published gob ``.bin`` results
  re-encoded in ``vegeta encode --to json`` layout by the data collector (not tool output);
  their request counts, status codes and mean latency match the published ``.txt`` reports.
- ``azure-aks-ingress-DERIVED-jaggr/vegeta_results.json`` is **DERIVED** (a jaggr pipeline).
- No real ``--to csv`` file exists: the CSV test writes one from the converted JSON in the
  documented v12.8.4 layout (no header; unix-ns timestamp, code, latency ns, ...).
Expected values come from json/csv/re parsing of the raw files inside each test.
"""

from __future__ import annotations

import base64
import csv
import json
import re
from datetime import datetime

import pytest

from bearing_lib import InputError, UnsupportedVersionError, load, load_trace
from bearing_lib.loaders import detect
from bearing_lib.loaders._http_loadtest import parse_go_duration

FZ = "loadtests/vegeta/ferdinandzhong-tgi-trial"
CONVERTED_7B = f"{FZ}/bloomz-7b/converted_to_vegeta_json"
JAGGR_DERIVED = "loadtests/vegeta/azure-aks-ingress-DERIVED-jaggr/vegeta_results.json"


def _json_lines(p):
    return [json.loads(x) for x in open(p) if x.strip()]


def _unix_ns(ts):
    head, rest = ts.rstrip("Z").split(".")
    sec = int(datetime.fromisoformat(head + "+00:00").timestamp())
    return sec * 10**9 + int(rest.ljust(9, "0")[:9])


def _report(p):
    text = p.read_text()
    total, rate, thr = (float(x) for x in re.search(r"Requests\s+\[.*?\]\s+(.*)", text).group(1).split(","))
    code_text = re.search(r"Status Codes.*\]\s+(.*)", text).group(1)
    codes = {int(c): int(k) for c, k in re.findall(r"(\d+):(\d+)", code_text)}
    lat = [x.strip() for x in re.search(r"Latencies\s+\[.*?\]\s+(.*)", text).group(1).split(",")]
    dur = [x.strip() for x in re.search(r"Duration\s+\[.*?\]\s+(.*)", text).group(1).split(",")]
    return int(total), rate, thr, codes, lat, dur


@pytest.mark.shared_data
def test_converted_json_folder_ns_units_and_status(shared_data):
    folder = shared_data(CONVERTED_7B)  # converted (see module docstring)
    tr = load_trace(folder)
    assert tr.provenance.format == "vegeta-json"
    files = sorted(folder.glob("*.json"))
    assert len(tr) == sum(len(_json_lines(p)) for p in files) == 480
    steps = tr.steps
    assert steps["offered_load"].to_list() == [1.0, 2.0, 5.0]  # from the names, ordered
    for p in files:
        raw = _json_lines(p)
        rate = float(re.search(r"(\d+(?:\.\d+)?)qps", p.name).group(1))
        got = tr.frame.filter(tr.frame["offered_load"] == rate).sort("source_row")
        assert got["latency_ms"].to_list() == pytest.approx([r["latency"] / 1e6 for r in raw])  # ns -> ms
        assert got["start_s"].to_list() == pytest.approx([_unix_ns(r["timestamp"]) / 1e9 for r in raw], abs=1e-6)
        n_timeout = sum(1 for r in raw if r["code"] == 0 and "Timeout" in r["error"])
        n_err = sum(1 for r in raw if r["code"] >= 400 or (r["code"] == 0 and "Timeout" not in r["error"]))
        assert (got["status"] == "timeout").sum() == n_timeout
        assert (got["status"] == "error").sum() == n_err
        # published text report beside the original .bin
        total, _, _, codes, lat, _ = _report(folder.parent / "original" / p.name.replace("_results.json", ".txt"))
        assert total == len(raw)
        assert codes == {c: sum(1 for r in raw if r["code"] == c) for c in codes}
        assert got["latency_ms"].mean() == pytest.approx(parse_go_duration(lat[0]) * 1000, abs=1e-3)
    five = tr.frame.filter(tr.frame["offered_load"] == 5.0)
    assert (five["status"] == "timeout").sum() == 95 and (five["status"] == "error").sum() == 21
    assert five.filter(five["status"] == "timeout")["latency_ms"].min() > 29_900  # client timeout 30 s
    assert tr.steps["n_requests_reported"].to_list() == [60, 120, 300]
    (chk,) = [x for x in tr.provenance.findings if x.code == "report_cross_check"]
    assert chk.count == 3 and "MISMATCH" not in chk.message
    assert any(x.code == "offered_load_from_file_name" for x in tr.provenance.findings)


@pytest.mark.shared_data
def test_csv_layout_without_header(shared_data, tmp_path):
    src = shared_data(f"{CONVERTED_7B}/tgi_5qps_60duration_results.json")  # converted
    raw = _json_lines(src)
    out = tmp_path / "tgi_5qps_results.csv"
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        for r in raw:
            w.writerow([
                _unix_ns(r["timestamp"]), r["code"], r["latency"], r["bytes_out"], r["bytes_in"], r["error"],
                r["body"], r["attack"], r["seq"], r["method"], r["url"],
                base64.b64encode(json.dumps(r["headers"]).encode()).decode(),
            ])
    assert detect(out).name == "vegeta-csv"
    tr = load_trace(out)
    f = tr.frame.sort("source_row")
    assert f["latency_ms"].to_list() == pytest.approx([r["latency"] / 1e6 for r in raw])
    assert f["start_s"].to_list() == pytest.approx([_unix_ns(r["timestamp"]) / 1e9 for r in raw], abs=1e-6)
    assert f["status"].value_counts().sort("status").rows() == [("error", 21), ("ok", 184), ("timeout", 95)]
    assert set(f["offered_load"]) == {5.0}


@pytest.mark.shared_data
def test_text_reports_folder(shared_data):
    folder = shared_data(f"{FZ}/codegen2-1b/original")
    lp = load(folder)
    assert lp.provenance.format == "vegeta-text-report"
    assert lp.provenance.tool_version.startswith("< 12.8")
    reports = sorted(folder.glob("*.txt"))
    assert lp.frame.height == len(reports) == 6
    for p in reports:
        total, rate, thr, codes, lat, dur = _report(p)
        run = "original/" + p.name.split("_")[0]
        qps = float(re.search(r"_(\d+(?:\.\d+)?)qps", p.name).group(1))
        row = lp.frame.filter((lp.frame["run_id"] == run) & (lp.frame["offered_load"] == qps)).row(0, named=True)
        assert row["n_requests"] == total
        assert row["n_ok"] == sum(k for c, k in codes.items() if 200 <= c < 400)
        assert row["achieved_rate_rps"] == rate and row["throughput_rps"] == thr
        assert row["latency_ms_p99"] == pytest.approx(parse_go_duration(lat[3]) * 1000)
        assert row["duration_s"] == pytest.approx(parse_go_duration(dur[0]))
        # n starts span n - 1 intervals (lib/metrics.go Close: Rate = Requests / (Latest - Earliest)): the send
        # window is the attack × n / (n − 1), e.g. 60 requests over 59.0 s of attack at 1 qps -> 60 s
        assert row["send_window_s"] == pytest.approx(parse_go_duration(dur[1]) * total / (total - 1))
        assert total / row["send_window_s"] == pytest.approx(qps, rel=2e-3)  # the rate in the file's name
    assert sorted(set(lp.frame["run_id"])) == ["original/ray", "original/tgi"]
    not_read = next(x for x in lp.provenance.findings if x.code == "not_read").message
    assert ".bin" in not_read and ".txt" not in not_read


@pytest.mark.shared_data
def test_single_report_61_percent_success(shared_data):
    p = shared_data(f"{FZ}/bloomz-7b/original/tgi_5qps_60duration.txt")
    row = load(p).frame.row(0, named=True)
    assert row["n_requests"] == 300 and row["n_ok"] == 184
    assert round(row["n_ok"] / row["n_requests"], 4) == 0.6133  # "Success [ratio] 61.33%"
    assert row["duration_s"] == pytest.approx(60 + 29.801399599)


@pytest.mark.shared_data
def test_jaggr_derived_per_second_rows(shared_data):
    p = shared_data(JAGGR_DERIVED)  # DERIVED
    raw = _json_lines(p)
    lp = load(p)
    assert lp.provenance.format == "vegeta-jaggr"
    row = lp.frame.row(0, named=True)
    assert row["n_requests"] == sum(r["rps"] for r in raw) == 799
    assert row["duration_s"] == len(raw) == 20
    assert row["latency_ms_p99"] is None  # per-second percentiles are not poolable
    assert any(x.code == "derived_file" for x in lp.provenance.findings)


@pytest.mark.shared_data
def test_gob_binary_is_refused_with_the_conversion(shared_data):
    p = shared_data(f"{FZ}/bloomz-3b/original/tgi_1qps_60duration_results.bin")
    assert detect(p).name == "vegeta-gob"
    with pytest.raises(InputError, match="vegeta encode --to json"):
        load(p)


def test_unknown_report_layout(tmp_path):
    p = tmp_path / "r_1qps.txt"
    p.write_text("Requests      [total, rate, throughput]  10, 1.00, 1.00\nDuration      [total]  10s\n")
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "Vegeta" and exc.value.missing == ["Latencies", "Success", "Status Codes"]


@pytest.mark.parametrize(
    "text,seconds",
    [("1m29.801399599s", 89.801399599), ("350µs", 350e-6), ("30ms", 0.03), ("2h0m1s", 7201.0), ("0s", 0.0)],
)
def test_go_durations(text, seconds):
    assert parse_go_duration(text) == pytest.approx(seconds)


def test_status_codes_429_504_and_transport_errors(tmp_path):
    lines = [
        {"code": 200, "error": ""},
        {"code": 429, "error": "429 Too Many Requests"},
        {"code": 504, "error": "504 Gateway Timeout"},
        {"code": 0, "error": "dial tcp 127.0.0.1:8080: connect: connection refused"},
        {"code": 0, "error": "Post: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"},
    ]
    p = tmp_path / "api_10qps_results.json"
    with p.open("w") as fh:
        for i, r in enumerate(lines):
            rec = {"attack": "", "seq": i, "timestamp": f"2024-01-01T00:00:0{i}.5Z", "latency": 1_500_000} | r
            fh.write(json.dumps(rec) + "\n")
    f = load_trace(p).frame.sort("source_row")
    assert f["status"].to_list() == ["ok", "rejected", "timeout", "error", "timeout"]
    assert f["latency_ms"].to_list() == [1.5] * 5
    assert f["error"][3].startswith("0: dial tcp")
    assert set(f["offered_load"]) == {10.0}
