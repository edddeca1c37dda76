"""GuideLLM loaders: benchmarks.json 0.5 (request records), report schema v2 (statistics
only) and the DERIVED all-benchmarks.csv sweep table.

danielkorat (no licence) and nirjhar17 (no licence; the CSV is DERIVED, written by the
repo author's post-processing, not by GuideLLM) are read in place; the v2 report is a
**mock**-server fixture (Apache-2.0) bundled under tests/fixtures/guidellm. Expected values
come from the raw files parsed in the test (json, csv).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from bearing_lib import load, load_trace
from bearing_lib.cli.main import app
from bearing_lib.common.errors import FormatDetectionError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable

XPU = "loadtests/guidellm/danielkorat-guidellm-bench-xpu/"
GPT = XPU + "guidellm_results_20260302_1917/openai_gpt-oss-20b_tp4_quant-none_benchmarks.json"
QWEN30 = XPU + "guidellm_results_20260302_1917/Qwen_Qwen3-30B-A3B_tp4_quant-fp8_benchmarks.json"
SANITY = XPU + "guidellm_sanity_results_20260302_1856/Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"
DERIVED = "loadtests/guidellm/nirjhar17-pd-disaggregation-DERIVED/all-benchmarks.csv"
V2 = Path(__file__).resolve().parents[1] / "fixtures" / "guidellm" / "guidellm_report_v2.json"


def _records(doc):
    out = []
    for b in doc["benchmarks"]:
        for name in ("successful", "errored", "incomplete"):
            out.extend((name, r) for r in b["requests"][name] or [])
    return out


@pytest.mark.shared_data
def test_request_records_mixed_units(shared_data):
    path = shared_data(GPT)
    doc = json.loads(path.read_text())
    recs = _records(doc)
    tr = load_trace(path)
    assert tr.provenance.format == "guidellm-benchmarks-requests"
    assert tr.provenance.tool_version == doc["metadata"]["guidellm_version"] == "0.5.0.dev0"
    assert len(tr) == len(recs) == 30
    f = tr.frame.sort("start_s")
    recs.sort(key=lambda x: x[1]["request_start_time"])
    # trap: request_latency in seconds, token latencies in ms
    assert f["latency_ms"].to_list() == pytest.approx([r["request_latency"] * 1000 for _, r in recs])
    assert f["ttft_ms"].to_list() == pytest.approx([r["time_to_first_token_ms"] for _, r in recs])
    assert f["itl_ms"].to_list() == pytest.approx([r["inter_token_latency_ms"] for _, r in recs])
    assert f["tpot_ms"].to_list() == pytest.approx([r["time_per_output_token_ms"] for _, r in recs])
    # the seconds/ms reading agrees with the epoch-second timestamps
    assert ((f["end_s"] - f["start_s"]) * 1000 - f["latency_ms"]).abs().max() < 1.0
    assert f["start_s"].to_list() == pytest.approx([r["request_start_time"] for _, r in recs])
    assert f["input_tokens"].to_list() == [r["prompt_tokens"] for _, r in recs]
    assert tr.provenance.time_origin == "epoch"
    strat = doc["benchmarks"][0]["config"]["strategy"]
    assert strat["type_"] == "synchronous"
    assert tr.steps.row(0, named=True)["offered_load"] == 1.0
    assert tr.steps.row(0, named=True)["offered_load_unit"] == "concurrency"
    assert tr.steps["duration_s"].to_list() == [doc["benchmarks"][0]["duration"]]


@pytest.mark.shared_data
def test_incomplete_requests_are_cancelled_and_concurrent_streams(shared_data):
    doc = json.loads(shared_data(QWEN30).read_text())
    incomplete = doc["benchmarks"][0]["requests"]["incomplete"]
    tr = load_trace(shared_data(QWEN30))
    cancelled = tr.frame.filter(tr.frame["status"] == "cancelled")
    assert cancelled.height == len(incomplete) == 1
    assert cancelled["request_id"].to_list() == [incomplete[0]["request_id"]]
    assert cancelled["latency_ms"].to_list() == [None]
    assert {x.code: x.count for x in tr.provenance.findings}["cancelled_at_step_end"] == 1
    made = doc["benchmarks"][0]["scheduler_metrics"]["requests_made"]
    assert tr.steps["n_requests_reported"].to_list() == [made["total"]]
    sanity = json.loads(shared_data(SANITY).read_text())
    tr = load_trace(shared_data(SANITY))
    assert tr.steps["offered_load"].to_list() == [float(sanity["benchmarks"][0]["config"]["strategy"]["streams"])]


def test_report_v2_statistics_become_load_points():
    doc = json.loads(V2.read_text())
    assert doc["metadata"]["version"] == 2
    assert all(not b["requests"][k] for b in doc["benchmarks"] for k in ("successful", "errored", "incomplete"))
    lp = load(V2)
    assert isinstance(lp, LoadPointTable) and lp.provenance.tool_version == "0.8.0.dev18"
    f = lp.frame
    assert f["offered_load"].to_list() == [b["config"]["strategy"]["rate"] for b in doc["benchmarks"]] == [2.0, 4.0]
    for row, b in zip(f.iter_rows(named=True), doc["benchmarks"], strict=True):
        m = b["metrics"]
        assert row["latency_ms_mean"] == pytest.approx(m["request_latency"]["successful"]["mean"] * 1000)  # s -> ms
        assert row["latency_ms_p99"] == pytest.approx(m["request_latency"]["successful"]["percentiles"]["p99"] * 1000)
        assert row["ttft_ms_p50"] == m["time_to_first_token_ms"]["successful"]["median"]  # ms stays ms
        assert row["itl_ms_p95"] == m["inter_token_latency_ms"]["successful"]["percentiles"]["p95"]
        assert row["throughput_rps"] == m["requests_per_second"]["successful"]["mean"]
        assert row["duration_s"] == b["duration"]
        assert row["n_ok"] == b["scheduler_metrics"]["requests_made"]["successful"]
        # the measured mean in flight: GuideLLM's time-weighted request_concurrency over every status ("total", as
        # its own HTML report reads it)
        assert row["concurrency_mean"] == m["request_concurrency"]["total"]["mean"]
    assert f["concurrency_mean"].to_list() == pytest.approx([0.007884656, 0.014002884])


@pytest.mark.shared_data
def test_derived_sweep_csv(shared_data):
    """DERIVED file: written by post-processing, not by GuideLLM."""
    path = shared_data(DERIVED)
    rows = list(csv.DictReader(path.open(newline="")))
    lp = load(path)
    f = lp.frame
    assert f.height == len(rows) == 16
    assert "derived_file" in {x.code for x in lp.provenance.findings}
    sweep_rows = [r for r in rows if r["source_file"].startswith("sweep[")]
    sweep = f.filter(run_id="sweep").sort("step")
    assert len(sweep_rows) == 10 and sweep.height == 9
    # one unit per run: constant rates ascending, throughput (unbounded) last; the synchronous
    # step (concurrency 1) is its own run
    constants = sorted(float(r["rate"]) for r in sweep_rows if r["profile"] == "constant")
    assert sweep["offered_load"].to_list() == [*constants, math.inf]
    assert sweep["offered_load_unit"].to_list() == ["rps"] * 9
    sync = f.filter(run_id="sweep/concurrency")
    assert sync["offered_load"].to_list() == [1.0] and sync["offered_load_unit"].to_list() == ["concurrency"]
    assert "mixed_offered_load_units" in {x.code for x in lp.provenance.findings}
    by_label = {r["source_file"]: r for r in rows}
    last = by_label["sweep[1]"]  # the throughput step
    assert sweep["latency_ms_mean"][-1] == pytest.approx(float(last["req_latency_mean_s"]) * 1000)
    assert sweep["ttft_ms_mean"][-1] == float(last["ttft_mean_ms"]) and sweep["ttft_ms_p99"][-1] is None
    assert sweep["n_errors"][-1] == int(last["error_requests"]) == 1
    # the table's writer counts total_requests = len(successful) and error_requests = len(errored)
    # (parse_benchmarks.py in the source repository): 1,081 successful and 1 errored were sent, 1,082 in all
    assert sweep["n_ok"][-1] == int(last["total_requests"]) == 1081
    assert sweep["n_requests"][-1] == 1082
    assert sweep["n_requests"][0] == sweep["n_ok"][0] == 145  # sweep[2], no errors
    conc = f.filter(run_id="concurrent16").row(0, named=True)
    assert conc["offered_load"] is None and conc["offered_load_unit"] == "concurrency"
    assert f["run_id"].n_unique() == 8
    # the table's mean tokens per request times its successful rate: tokens/s (what the fidelity check reads back as
    # a mean per request); by hand, sweep[2]: 264 and 121 tokens at 2.42 req/s
    s2 = sweep.filter(pl.col("offered_load") == 2.6).row(0, named=True)
    assert s2["input_tokens_per_s"] == pytest.approx(264 * 2.42) and s2["output_tokens_per_s"] == pytest.approx(
        121 * 2.42)
    assert {r["source_file"]: r for r in rows}["sweep[2]"]["prompt_tokens_mean"] == "264"
    # the run's measured mean in flight is kept as labelled, and the load curve takes it over Little's law (a new
    # user's case, round 22: 49.80 at 11.4 rps in the file, 10.48 x 4.21 s = 44.1 by Little's law)
    from bearing_lib.limits.curves import load_curve

    s6 = by_label["sweep[6]"]
    assert s6["rate"] == "11.4" and s6["concurrency_mean"] == "49.80"
    assert sweep.filter(pl.col("offered_load") == 11.4)["concurrency_mean"].to_list() == [49.80]
    cur = load_curve(lp).filter((pl.col("run_id") == "sweep") & pl.col("offered_load").is_infinite())
    assert cur["concurrency_mean"].to_list() == [float(last["concurrency_mean"])] == [509.44]


def test_unknown_schema_version_and_old_layout(tmp_path):
    doc = json.loads(V2.read_text())
    doc["metadata"]["version"] = 3  # SYNTHETIC: a future schema
    p = tmp_path / "benchmarks.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.version == "0.8.0.dev18" and exc.value.tool == "GuideLLM"
    assert any("metadata.version" in m for m in exc.value.missing)
    old = {"benchmarks": [{"type_": "generative_benchmark", "args": {"profile": "sweep"}, "run_stats": {}}]}
    p.write_text(json.dumps(old))  # SYNTHETIC: the <=0.3 layout
    with pytest.raises(FormatDetectionError):
        load(p)
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p, format="guidellm-benchmarks")
    assert exc.value.version is None and "metadata" in exc.value.missing


@pytest.mark.shared_data
def test_several_benchmarks_are_ordered_steps(shared_data, tmp_path):
    # SYNTHETIC variant of a real file: the one synchronous benchmark copied as a sweep's
    # throughput and constant-rate steps, in GuideLLM's run order (sync, throughput, constants)
    doc = json.loads(shared_data(GPT).read_text())
    sync = doc["benchmarks"][0]
    bench = [sync]
    for strategy in ({"type_": "throughput", "max_concurrency": 64}, {"type_": "constant", "rate": 0.9},
                     {"type_": "poisson", "rate": 0.3}):
        b = json.loads(json.dumps(sync))
        b["config"]["strategy"] = strategy
        for r in b["requests"]["successful"]:
            r["request_id"] += f"-{strategy['type_']}"
        bench.append(b)
    doc["benchmarks"] = bench
    p = tmp_path / "sweep_benchmarks.json"
    p.write_text(json.dumps(doc))
    tr = load_trace(p)
    st = tr.steps
    # one unit per run: the rates (ascending, unbounded last) keep the run; synchronous is "<run>/concurrency"
    run = st["run_id"][0]
    assert st["run_id"].to_list() == [run] * 3 + [f"{run}/concurrency"]
    assert st["offered_load"].to_list() == [0.3, 0.9, math.inf, 1.0]
    assert st["offered_load_unit"].to_list() == ["rps", "rps", "rps", "concurrency"]
    assert st["step"].to_list() == [0, 1, 2, 0]
    assert st["source_file"].to_list() == [f"{p.name}:benchmarks[{i}]" for i in (3, 2, 1, 0)]
    assert tr.frame.group_by("run_id", "step").len()["len"].to_list() == [30] * 4
    assert "mixed_offered_load_units" in {x.code for x in tr.provenance.findings}


@pytest.mark.shared_data
def test_errored_records_get_statuses(shared_data, tmp_path):
    doc = json.loads(shared_data(SANITY).read_text())
    reqs = doc["benchmarks"][0]["requests"]
    moved = reqs["successful"][:2]
    reqs["successful"] = reqs["successful"][2:]
    moved[0]["info"]["error"] = "HTTPStatusError: 429 Too Many Requests"
    moved[1]["info"]["error"] = "ReadTimeout"
    reqs["errored"] = moved  # SYNTHETIC variant of a real file
    p = tmp_path / "b.json"
    p.write_text(json.dumps(doc))
    st = load_trace(p).frame["status"].value_counts().sort("status")
    assert dict(st.iter_rows()) == {"ok": 2, "rejected": 1, "timeout": 1}


@pytest.mark.shared_data
def test_cli_inspect_guidellm(shared_data):
    runner = CliRunner()
    res = runner.invoke(app, ["inspect", str(shared_data(GPT))])
    assert res.exit_code == 0, res.output
    assert "guidellm-benchmarks-requests (GuideLLM, version 0.5.0.dev0)" in res.output
    res = runner.invoke(app, ["inspect", str(V2)])
    assert res.exit_code == 0, res.output
    assert "guidellm-benchmarks (GuideLLM, version 0.8.0.dev18)" in res.output
    res = runner.invoke(app, ["inspect", str(shared_data(DERIVED))])
    assert res.exit_code == 0, res.output
    assert "guidellm-derived-csv" in res.output and "sweep #8: inf rps" in res.output
