"""GenAI-Perf and AIPerf exports without the shared data: SYNTHETIC files in each tool's layout.

The real exports (wellflat/k8s-dev) have no licence, so none is copied. These files are
written by the test with the keys the tools write (metric objects with ``unit``, ``avg``,
``p1``…``p99``, ``min``, ``max``, ``std``; ``input_config``; AIPerf's ``benchmark_duration``,
``error_request_count``, ``was_cancelled``), from values chosen here; the expected load
point is those values with the units converted by hand.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib import BadValueError, load
from bearing_lib.loaders import detect


def _metric(unit: str, avg: float, spread: float = 0.1) -> dict:
    out = {"unit": unit, "avg": avg}
    for i, k in enumerate(("p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")):
        out[k] = avg * (1 - spread + i * spread / 4)
    out |= {"min": avg * 0.5, "max": avg * 2.0, "std": avg * spread}
    return out


def _export(*, aiperf: bool, latency_unit: str = "ms") -> dict:
    scale = {"ms": 1.0, "s": 1e-3, "ns": 1e6}[latency_unit]
    doc = {
        "request_throughput": {"unit": "requests/sec", "avg": 2.5},
        "request_latency": _metric(latency_unit, 4000.0 * scale),
        "request_count": {"unit": "requests", "avg": 150.0},
        "time_to_first_token": _metric(latency_unit, 80.0 * scale),
        "inter_token_latency": _metric(latency_unit, 18.0 * scale),
        "output_token_throughput": {"unit": "tokens/sec", "avg": 540.0},
        "input_sequence_length": {"unit": "tokens", "avg": 200.0},
    }
    if aiperf:
        doc |= {"benchmark_duration": {"unit": "sec", "avg": 61.0}, "error_request_count": {"unit": "requests",
                "avg": 3.0}, "error_summary": [{"error_details": {"code": 500}, "count": 3}], "was_cancelled": False,
                "inter_chunk_latency": _metric(latency_unit, 17.0 * scale),
                "input_config": {"loadgen": {"concurrency": 8}, "endpoint": {"model_names": ["gpt-oss-20b"]}}}
    else:
        doc["input_config"] = {"perf_analyzer": {"stimulus": {"request_rate": 3.0}}, "model": ["llama-8b"]}
    return doc


def test_genai_perf_export_units_and_load(tmp_path):
    p = tmp_path / "profile_export_genai_perf.json"
    p.write_text(json.dumps(_export(aiperf=False, latency_unit="s")))
    assert detect(p).name == "genai-perf-export"
    row = load(p).frame.row(0, named=True)
    assert (row["offered_load"], row["offered_load_unit"]) == (3.0, "rps")
    want = _metric("ms", 4000.0)
    for k, stat in (("avg", "mean"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("max", "max")):
        assert row[f"latency_ms_{stat}"] == pytest.approx(want[k])  # seconds in the file, ms here
    assert row["ttft_ms_mean"] == pytest.approx(80.0)
    assert row["tpot_ms_p95"] == pytest.approx(_metric("ms", 18.0)["p95"])  # GenAI-Perf ITL is per-request TPOT
    assert row["n_ok"] == 150 and row["n_errors"] is None
    assert row["duration_s"] == pytest.approx(150 / 2.5)
    assert row["input_tokens_per_s"] == pytest.approx(200.0 * 2.5)
    assert row["model"] == "llama-8b"


def test_aiperf_export_counts_errors_and_chunk_latency(tmp_path):
    p = tmp_path / "profile_export_aiperf.json"
    p.write_text(json.dumps(_export(aiperf=True, latency_unit="ns")))
    assert detect(p).name == "aiperf-export"
    row = load(p).frame.row(0, named=True)
    assert (row["offered_load"], row["offered_load_unit"]) == (8.0, "concurrency")
    assert row["duration_s"] == 61.0
    assert (row["n_ok"], row["n_errors"], row["n_requests"]) == (150, 3, 153)
    assert row["itl_ms_p99"] == pytest.approx(_metric("ms", 17.0)["p99"])
    assert row["latency_ms_mean"] == pytest.approx(4000.0)
    assert row["model"] == "gpt-oss-20b"


def test_a_latency_without_a_time_unit_is_refused(tmp_path):
    doc = _export(aiperf=True)
    doc["request_latency"]["unit"] = "tokens"
    p = tmp_path / "profile_export_aiperf.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(BadValueError, match="request_latency.unit"):
        load(p)


SWEEP = (
    "concurrency,request_count_mean,request_throughput_mean,request_latency_mean,request_latency_max,"
    "time_to_first_token_mean,time_to_first_token_max,benchmark_duration_mean,goodput_mean\r\n"
    "16,1000,5.0,3200.0,9000.0,90.0,400.0,200.0,4.9\r\n"
    "64,3000,15.0,4300.0,12000.0,150.0,900.0,200.0,14.0\r\n"
    "32,2000,10.0,3500.0,10000.0,110.0,600.0,200.0,9.5\r\n"
    "\r\n"
    "Metadata\r\nField,Value\r\nSweep Parameters,concurrency\r\nNumber of Profile Runs,1\r\n"
)


def test_aiperf_sweep_csv_steps_by_concurrency(tmp_path):
    folder = tmp_path / "study" / "sweep_aggregate"
    folder.mkdir(parents=True)
    p = folder / "profile_export_aiperf_sweep.csv"
    p.write_bytes(SWEEP.encode())
    assert detect(p).name == "aiperf-sweep-csv"
    f = load(p).frame.sort("step")
    assert f["offered_load"].to_list() == [16.0, 32.0, 64.0]
    assert f["throughput_rps"].to_list() == [5.0, 10.0, 15.0]
    assert f["latency_ms_mean"].to_list() == [3200.0, 3500.0, 4300.0]
    assert f["n_ok"].to_list() == [1000, 2000, 3000]
    assert f["run_id"].unique().to_list() == ["study"]
