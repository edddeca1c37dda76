"""GuideLLM benchmarks.json from before 0.5 (no ``metadata``), SYNTHETIC files in that schema.

The schema is GuideLLM's at tag v0.3.0 (vllm-project/guidellm, commit ad9513fd):
``src/guidellm/benchmark/output.py`` ``GenerativeBenchmarksReport.save_json`` writes ``model_dump()`` of a
report whose only field is ``benchmarks``; each is a ``GenerativeBenchmark``
(``src/guidellm/benchmark/benchmark.py``): ``type_`` "generative_benchmark", ``args.strategy`` (a
``scheduler/strategy.py`` strategy: ``type_`` synchronous / concurrent + ``streams`` / throughput / constant
or poisson + ``rate``), ``run_stats.requests_made``, ``worker.backend_model``, ``metrics`` (status
distribution summaries), ``start_time``, ``end_time``, ``duration`` (computed), ``request_totals`` and
``requests.{successful, errored, incomplete}`` of ``GenerativeTextResponseStats`` /
``GenerativeTextErrorStats``, whose computed fields are written too. Expected values are worked out by
hand from the times chosen here.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib import load
from bearing_lib.data.loadpoints import LoadPointTable
from bearing_lib.loaders import detect
from bearing_lib.loaders.guidellm import LEGACY_VERSION


def _rec(i: int, t0: float, *, ttft: float, lat: float, out: int, error: str | None = None) -> dict:
    """A record as model_dump() writes it: fields and the computed fields of v0.3.0."""
    first = None if error else t0 + ttft
    last = None if error else t0 + lat
    r = {"type_": "generative_text_error" if error else "generative_text_response", "request_id": f"q{i}",
         "request_type": "text_completions", "scheduler_info": {"requested": True, "completed": True},
         "prompt": "p", "output": None if error else "o", "prompt_tokens": 100 + i,
         "output_tokens": 0 if error else out,
         "start_time": t0, "end_time": t0 + lat, "first_token_time": first, "last_token_time": last,
         "request_latency": lat,
         "time_to_first_token_ms": None if error else 1000 * ttft,
         "time_per_output_token_ms": None if error else 1000 * (lat - ttft) / out,
         "inter_token_latency_ms": None if error else 1000 * (lat - ttft) / (out - 1),
         "tokens_per_second": None, "output_tokens_per_second": None}
    if error:
        r["error"] = error
    return r


def _dist(mean: float, median: float, p99: float) -> dict:
    pct = {k: None for k in ("p001", "p01", "p05", "p10", "p25", "p75", "p90", "p95", "p999")}
    pct.update(p50=median, p99=p99, p90=median, p95=median)
    s = {"mean": mean, "median": median, "mode": median, "variance": 0.0, "std_dev": 0.0, "min": median,
         "max": p99, "count": 3, "total_sum": 3 * mean, "percentiles": pct, "cumulative_distribution_function": None}
    return {"successful": s, "errored": None, "incomplete": None, "total": s}


def _bench(strategy: dict, t0: float, records: dict, made: dict) -> dict:
    return {"type_": "generative_benchmark", "id_": "b", "run_id": "r",
            "args": {"profile": {"type_": "sweep"}, "strategy_index": 0, "strategy": strategy, "max_number": None,
                     "max_duration": 30.0},
            "run_stats": {"start_time": t0, "end_time": t0 + 30, "requests_made": made},
            "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                       "backend_target": "http://x", "backend_model": "llama-3-8b"},
            "request_loader": {}, "extras": {},
            "metrics": {"request_latency": _dist(2.0, 1.9, 3.0), "time_to_first_token_ms": _dist(90.0, 80.0, 300.0),
                        "time_per_output_token_ms": _dist(18.0, 17.0, 25.0),
                        "inter_token_latency_ms": _dist(19.0, 18.0, 26.0), "requests_per_second": _dist(2.0, 2.0, 2.0)},
            "start_time": t0, "end_time": t0 + 30, "duration": 30.0,
            "request_totals": made, "request_samples": None, "requests": records}


def test_pre_0_5_report_with_records(tmp_path):
    t0 = 1_745_000_000.0
    sync = {"successful": [_rec(0, t0, ttft=0.1, lat=2.1, out=101)], "errored": [], "incomplete": []}
    const = {"successful": [_rec(1, t0 + 40, ttft=0.2, lat=1.2, out=51)],
             "errored": [_rec(2, t0 + 41, ttft=0.0, lat=0.5, out=0, error="HTTP 500 Internal Server Error")],
             "incomplete": [_rec(3, t0 + 69, ttft=0.3, lat=1.0, out=11)]}
    doc = {"benchmarks": [_bench({"type_": "synchronous"}, t0, sync, {"successful": 1, "errored": 0,
                                                                        "incomplete": 0, "total": 1}),
                          _bench({"type_": "constant", "rate": 2.0}, t0 + 40, const,
                                 {"successful": 1, "errored": 1, "incomplete": 1, "total": 3})]}
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    assert detect(p).name == "guidellm-benchmarks-requests"
    tr = load(p)
    assert tr.provenance.tool_version == LEGACY_VERSION
    assert "legacy_schema" in {x.code for x in tr.provenance.findings}
    f = tr.frame.sort("start_s")
    assert f["status"].to_list() == ["ok", "ok", "error", "cancelled"]
    assert f["start_s"].to_list() == [t0, t0 + 40, t0 + 41, t0 + 69]
    assert f["end_s"].to_list() == pytest.approx([t0 + 2.1, t0 + 41.2, t0 + 41.5, t0 + 70])
    assert f["latency_ms"].to_list() == pytest.approx([2100.0, 1200.0, 500.0, 1000.0])
    assert f["ttft_ms"].to_list()[:2] == pytest.approx([100.0, 200.0])
    # tpot after the first token: (2.1 - 0.1) s / 100 tokens = 20 ms; (1.2 - 0.2) / 50 = 20 ms
    assert f["tpot_ms"].to_list()[:2] == pytest.approx([20.0, 20.0])
    assert f["input_tokens"].to_list() == [100, 101, 102, 103]
    assert f["error"][2] == "HTTP 500 Internal Server Error"
    assert f["model"].unique().to_list() == ["llama-3-8b"]
    steps = tr.steps.sort("offered_load_unit", "offered_load")
    assert steps["n_requests_reported"].to_list() == [1, 3]
    assert steps["duration_s"].to_list() == [30.0, 30.0]
    assert sorted(zip(steps["offered_load"].to_list(), steps["offered_load_unit"].to_list(), strict=True)) == [
        (1.0, "concurrency"), (2.0, "rps")]


def test_pre_0_5_report_without_records_is_load_points(tmp_path):
    t0 = 1_745_000_000.0
    empty = {"successful": [], "errored": [], "incomplete": []}
    doc = {"benchmarks": [_bench({"type_": "concurrent", "streams": 4}, t0, empty,
                                 {"successful": 120, "errored": 2, "incomplete": 1, "total": 123})]}
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    assert detect(p).name == "guidellm-benchmarks"
    t = load(p)
    assert isinstance(t, LoadPointTable)
    (r,) = t.frame.iter_rows(named=True)
    assert (r["offered_load"], r["offered_load_unit"]) == (4.0, "concurrency")
    assert (r["n_requests"], r["n_ok"], r["n_errors"]) == (123, 120, 2)
    assert r["ttft_ms_p50"] == 80.0 and r["ttft_ms_p99"] == 300.0
    assert r["latency_ms_mean"] == pytest.approx(2000.0)  # s -> ms
    assert r["tpot_ms_mean"] == 19.0  # the old inter_token_latency_ms, not its time_per_output_token_ms (18)


def test_a_file_that_is_neither_schema_names_what_is_missing(tmp_path):
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps({"benchmarks": [{"type_": "generative_benchmark", "args": {}}]}))
    with pytest.raises(Exception) as exc:
        load(p, format="guidellm-benchmarks-requests")
    assert "metadata" in str(exc.value)
