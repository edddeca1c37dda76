"""GuideLLM benchmarks.json with request records, and the DERIVED sweep table, without the shared data.

The danielkorat and nirjhar17 files have no licence, so these are SYNTHETIC: a 0.5.x
``benchmarks.json`` (``metadata.version`` 1) written with the keys GuideLLM writes (per
benchmark ``config.strategy``, ``duration``, ``scheduler_metrics.requests_made``,
``requests.{successful, errored, incomplete}`` records with ``request_start_time``,
``request_end_time``, ``request_latency`` in s and token latencies in ms), and a table in
the DERIVED ``all-benchmarks.csv`` layout. Expected values are the chosen ones, converted by hand.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from bearing_lib import load
from bearing_lib.loaders import detect


def _record(i: int, t0: float, *, lat: float, ttft: float, err: str | None = None) -> dict:
    return {"request_id": f"r{i}", "request_start_time": t0, "request_end_time": t0 + lat, "request_latency": lat,
            "time_to_first_token_ms": ttft, "time_per_output_token_ms": 20.0 + i, "inter_token_latency_ms": 19.0 + i,
            "prompt_tokens": 100 + i, "output_tokens": 50 + i,
            "info": {"status": "errored" if err else "completed", "error": err}}


def _bench(kind: str, rate: float | None, t0: float, records: dict[str, list[dict]]) -> dict:
    strategy = {"type_": kind, **({"rate": rate} if rate is not None else {})}
    total = sum(len(v) for v in records.values())
    return {"config": {"strategy": strategy}, "metrics": {}, "duration": 30.0, "start_time": t0,
            "end_time": t0 + 30, "scheduler_metrics": {"requests_made": {"total": total}}, "requests": records}


def test_benchmarks_json_with_records(tmp_path):
    t0 = 1_770_000_000.0
    sync = {"successful": [_record(0, t0, lat=1.5, ttft=80.0), _record(1, t0 + 2, lat=1.25, ttft=70.0)],
            "errored": [], "incomplete": []}
    const = {"successful": [_record(2, t0 + 40, lat=2.0, ttft=90.0)],
             "errored": [_record(3, t0 + 41, lat=0.5, ttft=None, err="HTTP 429 Too Many Requests"),
                         _record(4, t0 + 42, lat=30.0, ttft=None, err="Read timed out")],
             "incomplete": [_record(5, t0 + 69, lat=1.0, ttft=100.0)]}
    doc = {"metadata": {"version": 1, "guidellm_version": "0.5.0", "python_version": "3.12", "platform": "x"},
           "args": {"model": "Qwen3-0.6B"},
           "benchmarks": [_bench("constant", 2.0, t0 + 40, const), _bench("synchronous", None, t0, sync)]}
    p = tmp_path / "sweep_benchmarks.json"
    p.write_text(json.dumps(doc))
    assert detect(p).name == "guidellm-benchmarks-requests"
    tr = load(p)
    assert tr.provenance.tool_version == "0.5.0"
    f = tr.frame.sort("start_s")
    # one unit per run: the constant rate keeps the run, synchronous (concurrency 1) is "<run>/concurrency"
    run = f["run_id"][2]
    assert f["run_id"].to_list() == [f"{run}/concurrency"] * 2 + [run] * 4
    assert f["step"].to_list() == [0, 0, 0, 0, 0, 0]
    assert f["offered_load"].to_list() == [1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert f["offered_load_unit"].to_list() == ["concurrency"] * 2 + ["rps"] * 4
    assert f["status"].to_list() == ["ok", "ok", "ok", "rejected", "timeout", "cancelled"]
    assert f["latency_ms"].to_list() == pytest.approx([1500.0, 1250.0, 2000.0, 500.0, 30000.0, 1000.0])
    assert f["ttft_ms"].to_list()[:3] == [80.0, 70.0, 90.0]
    assert f["end_s"].to_list() == pytest.approx([t0 + 1.5, t0 + 3.25, t0 + 42, t0 + 41.5, t0 + 72, t0 + 70])
    assert f["input_tokens"].to_list() == [100, 101, 102, 103, 104, 105]
    assert tr.steps["duration_s"].to_list() == [30.0, 30.0]
    # the one incomplete record: cancelled by GuideLLM at the step's end, not an error (guidellm.py _status)
    (fin,) = [x for x in tr.provenance.findings if x.code == "cancelled_at_step_end"]
    assert fin.count == 1 and f"{run} step 0: 1" in fin.message


def test_cancelled_records_stay_cancelled_whatever_their_error_text(tmp_path):
    """GuideLLM writes error "Request was cancelled" and info.status "cancelled" on the requests it cancels at a
    step's end (vllm-project/guidellm scheduler/worker.py, _process_next_graph_node); a cancelled record in
    the errored list (older layouts) is cancelled too, and nothing in the incomplete list becomes an error."""
    t0 = 1_770_000_000.0
    inc = _record(1, t0 + 29, lat=1.0, ttft=None, err="Request was cancelled")
    inc["info"]["status"] = "cancelled"
    err = _record(2, t0 + 29.5, lat=0.5, ttft=None, err="Request was cancelled")
    err["info"]["status"] = "cancelled"
    recs = {"successful": [_record(0, t0, lat=1.0, ttft=50.0)], "errored": [err], "incomplete": [inc]}
    doc = {"metadata": {"version": 1, "guidellm_version": "0.5.0", "python_version": "3.12", "platform": "x"},
           "args": {"model": "m"}, "benchmarks": [_bench("constant", 1.0, t0, recs)]}
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    tr = load(p)
    f = tr.frame.sort("start_s")
    assert f["status"].to_list() == ["ok", "cancelled", "cancelled"]
    assert f["error"].to_list() == [None, "Request was cancelled", "Request was cancelled"]
    assert {x.code: x.count for x in tr.provenance.findings}["cancelled_at_step_end"] == 2


CSV = """source_file,profile,rate,duration_s,total_requests,error_requests,ttft_mean_ms,ttft_median_ms,ttft_p99_ms,\
itl_mean_ms,itl_median_ms,itl_p99_ms,req_latency_mean_s,req_latency_median_s,req_latency_p99_s,rps_mean,\
concurrency_mean
sweep[0],synchronous,-,60.0,23,0,63.3,63.3,-,20.6,20.4,-,2.633,2.618,-,0.37,1.00
sweep[1],throughput,-,60.0,1081,1,8554.9,11810.4,-,166.9,183.4,-,14.520,21.491,-,17.98,509.44
sweep[2],constant,2.6,60.0,145,0,77.8,73.3,-,26.9,26.9,-,3.269,3.445,-,2.42,8.57
constant5,constant,5.0,60.0,281,0,80.5,75.2,-,28.9,28.9,-,3.475,3.693,-,4.68,17.89
"""


def test_derived_sweep_table(tmp_path):
    p = tmp_path / "all-benchmarks.csv"
    p.write_text(CSV)
    assert detect(p).name == "guidellm-derived-csv"
    f = load(p).frame
    sweep = pl.concat([f.filter(f["run_id"] == "sweep/concurrency"), f.filter(f["run_id"] == "sweep").sort("step")])
    assert sweep["offered_load"].to_list() == [1.0, 2.6, math.inf]
    assert sweep["step"].to_list() == [0, 0, 1]  # synchronous is its own run: one unit per load curve
    # total_requests is len(requests.successful) in the table's writer (parse_benchmarks.py): 1,081 successful and
    # 1 errored make 1,082 sent
    assert sweep["n_requests"].to_list() == [23, 145, 1082]
    assert sweep["n_errors"].to_list() == [0, 0, 1] and sweep["n_ok"].to_list() == [23, 145, 1081]
    assert sweep["latency_ms_mean"].to_list() == pytest.approx([2633.0, 3269.0, 14520.0])
    assert sweep["ttft_ms_p50"].to_list() == [63.3, 73.3, 11810.4]
    assert sweep["ttft_ms_p99"].is_null().all()  # '-' is missing, not zero
    other = f.filter(f["run_id"] == "constant5").row(0, named=True)
    assert (other["offered_load"], other["throughput_rps"]) == (5.0, 4.68)


def test_derived_row_without_an_error_count_leaves_the_sent_count_unknown(tmp_path):
    """error_requests '-': the successful count is known (total_requests is len(successful) in the table's writer),
    the sent count is not, and no error count is made up (review finding, round 23: it read 0 errors)."""
    p = tmp_path / "all-benchmarks.csv"
    p.write_text(CSV.replace("sweep[1],throughput,-,60.0,1081,1,", "sweep[1],throughput,-,60.0,1081,-,"))
    row = load(p).frame.filter(pl.col("offered_load").is_infinite()).row(0, named=True)
    assert (row["n_ok"], row["n_requests"], row["n_errors"]) == (1081, None, None)
