"""vLLM benchmark_serving / vllm bench serve loaders, on real files.

Expected values come from the raw JSON parsed in the test (gzip + json, numpy for
quantiles), and from vLLM's own statistics written in the same file: the loader's
per-request rows must reproduce them (ms statistics vs seconds arrays).
Files: surajssd (Apache-2.0) and er0080 (no licence) are read in place; the llm-d exp-7
pair is bundled under tests/fixtures/vllm (Apache-2.0, see ATTRIBUTION.md). Files written
by hand inside a test are marked SYNTHETIC.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from bearing_lib import load, load_trace
from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable

SHARED = "loadtests/vllm-bench-serve/"
BUNDLED = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
SURAJ = SHARED + "surajssd-llm-k8s-azure-a100/deepseek-v2.5/01_tp8_pp2_no_ib"
ER = SHARED + "er0080-vllm-benchmarking/"


def _raw(path: Path) -> dict:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


@pytest.mark.shared_data
def test_per_request_folder_is_one_run_with_ordered_steps(shared_data):
    folder = shared_data(SURAJ)
    files = sorted(folder.glob("*.json.gz"))
    raws = sorted((_raw(p) for p in files), key=lambda d: float(d["request_rate"]))  # float("inf") sorts last
    tr = load_trace(folder)
    assert tr.provenance.format == "vllm-bench-serve-requests"
    assert len(tr) == sum(d["num_prompts"] for d in raws) == 800
    assert tr.frame["run_id"].unique().to_list() == ["01_tp8_pp2_no_ib"]
    steps = tr.steps
    assert steps["step"].to_list() == [0, 1, 2, 3]
    assert steps["offered_load"].to_list() == [1.0, 4.0, 16.0, math.inf]
    assert steps["offered_load_unit"].unique().to_list() == ["rps"]
    assert steps["duration_s"].to_list() == [d["duration"] for d in raws]
    assert steps["n_requests_reported"].to_list() == [200] * 4
    # no per-request times in these arrays
    assert tr.provenance.time_origin == "none"
    assert tr.frame["start_s"].null_count() == len(tr)
    assert tr.provenance.fields["latency_ms"] == "derived"
    assert tr.provenance.fields["ttft_ms"] == "measured"


@pytest.mark.shared_data
def test_seconds_arrays_reproduce_vllms_ms_statistics(shared_data):
    """Trap: statistics are in ms, per-request arrays in seconds."""
    folder = shared_data(SURAJ)
    tr = load_trace(folder)
    for p in sorted(folder.glob("*.json.gz")):
        d = _raw(p)
        step = tr.steps.filter(source_file=p.name)["step"].item()
        f = tr.frame.filter(step=step)
        ttft_ms = np.asarray(d["ttfts"]) * 1000.0
        assert f["ttft_ms"].to_numpy() == pytest.approx(ttft_ms, rel=1e-12)
        # vLLM's own statistics (np.mean / np.percentile linear), written in ms
        assert f["ttft_ms"].mean() == pytest.approx(d["mean_ttft_ms"], rel=1e-9)
        assert np.percentile(f["ttft_ms"].to_numpy(), 99) == pytest.approx(d["p99_ttft_ms"], rel=1e-9)
        # derived TPOT = (ttft + sum(itls) - ttft) / (output_len - 1) reproduces vLLM's median/mean TPOT
        assert np.median(f["tpot_ms"].drop_nulls().to_numpy()) == pytest.approx(d["median_tpot_ms"], rel=1e-6)
        assert f["tpot_ms"].mean() == pytest.approx(d["mean_tpot_ms"], rel=1e-6)
        # e2e rebuilt as ttft + sum(itls), in ms
        e2e0 = (d["ttfts"][0] + math.fsum(d["itls"][0])) * 1000.0
        assert f["latency_ms"][0] == pytest.approx(e2e0, rel=1e-12)
        assert f["itl_ms"][0] == pytest.approx(np.mean(d["itls"][0]) * 1000.0, rel=1e-12)
        assert f["input_tokens"].to_list() == d["input_lens"]


@pytest.mark.shared_data
def test_inf_string_rate_is_unbounded_and_last(shared_data):
    path = shared_data(SURAJ + "/serving_deepseek-ai-DeepSeek-V2.5_tp8_pp2_sharegpt_qps_inf.json.gz")
    assert _raw(path)["request_rate"] == "inf"  # a string in the file
    tr = load_trace(path)
    assert tr.steps["offered_load"].to_list() == [math.inf]
    assert any(f.code == "unbounded_rate" for f in tr.provenance.findings)


def test_aggregate_repeats_extra_keys_and_colon_goodput_key():
    folder = BUNDLED / "llm-d-1p1d"
    raws = sorted((json.loads(p.read_text()) for p in folder.glob("*.json")), key=lambda d: d["date"])
    assert all("request_goodput:" in d for d in raws)  # trap: the key ends in a colon
    lp = load(folder)
    assert isinstance(lp, LoadPointTable)
    f = lp.frame
    assert f["step"].to_list() == [0, 1]  # two repeats at 1.8 req/s, ordered by date
    assert f["offered_load"].to_list() == [1.8, 1.8]
    for row, d in zip(f.iter_rows(named=True), raws, strict=True):
        assert row["ttft_ms_p95"] == d["p95_ttft_ms"]  # ms kept as ms
        assert row["ttft_ms_p50"] == d["median_ttft_ms"]
        assert row["itl_ms_p99"] == d["p99_itl_ms"]
        assert row["throughput_rps"] == d["request_throughput"]
        assert row["input_tokens_per_s"] == pytest.approx(d["total_input_tokens"] / d["duration"])
        assert row["n_ok"] == d["completed"] and row["n_errors"] == d["num_prompts"] - d["completed"]
        assert row["latency_ms_p99"] is None  # e2el not requested in this run
    assert "request_goodput:" in lp.provenance.tool_version
    assert lp.provenance.fields["n_errors"] == "derived"
    extra = lp.provenance.options["extra_keys"]
    assert {v["timestamp"] for v in extra.values()} == {d["timestamp"] for d in raws}
    codes = {x.code for x in lp.provenance.findings}
    assert {"extra_metadata_keys", "repeated_load_level"} <= codes


@pytest.mark.shared_data
def test_folder_of_deployment_folders_is_one_run_each(shared_data):
    base = shared_data(SHARED + "llm-d-benchmark-exp7/H100")
    lp = load(base)
    f = lp.frame
    deployments = sorted(p.name for p in base.iterdir() if p.is_dir())
    assert f["run_id"].unique().sort().to_list() == deployments
    for dep in deployments:
        raws = sorted((json.loads(p.read_text()) for p in (base / dep).glob("*.json")),
                      key=lambda d: (d["request_rate"], d["date"]))
        run = f.filter(run_id=dep).sort("step")
        assert run["step"].to_list() == list(range(len(raws)))
        assert run["offered_load"].to_list() == [d["request_rate"] for d in raws]
        assert run["ttft_ms_p99"].to_list() == [d["p99_ttft_ms"] for d in raws]


@pytest.mark.shared_data
def test_all_failed_run_zeros_are_missing(shared_data):
    path = shared_data(ER + "bench_serve_all_requests_failed_v0.25.1.json")
    raw = _raw(path)
    assert raw["completed"] == 0 and raw["mean_ttft_ms"] == 0.0 and raw["p99_itl_ms"] == 0.0
    row = load(path).frame.row(0, named=True)
    assert row["n_ok"] == 0 and row["n_errors"] == raw["failed"] == 8
    assert row["throughput_rps"] == 0.0  # a real zero: nothing completed
    for col in ("ttft_ms_mean", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_mean", "itl_ms_p99"):
        assert row[col] is None, col
    assert row["offered_load"] == math.inf


@pytest.mark.shared_data
def test_v0251_single_run_concurrency_is_the_load(shared_data):
    path = shared_data(ER + "bench_serve_v0.25.1.json")
    raw = _raw(path)
    lp = load(path)
    row = lp.frame.row(0, named=True)
    assert (row["offered_load"], row["offered_load_unit"]) == (float(raw["max_concurrency"]), "concurrency")
    assert row["n_errors"] == raw["failed"] and row["ttft_ms_p99"] == raw["p99_ttft_ms"]
    assert "v0.25.1" in lp.provenance.tool_version and "request_goodput" in raw


@pytest.mark.shared_data
def test_sweep_layout_folder_and_summary(shared_data):
    root = shared_data(ER + "vllm_sweep_v0.25.1")
    lp = load(root)
    f = lp.frame
    combos = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert f["run_id"].unique().sort().to_list() == combos
    assert f.height == 4 and f["step"].to_list() == [0, 1, 0, 1]
    assert set(f["offered_load_unit"]) == {"concurrency"} and set(f["offered_load"]) == {2.0}
    for combo in combos:
        for n in (0, 1):
            raw = _raw(root / combo / f"run={n}.json")
            assert raw["run_number"] == n
            row = f.filter(run_id=combo, step=n).row(0, named=True)
            assert row["latency_ms_p99"] == raw["p99_e2el_ms"] and row["ttft_ms_mean"] == raw["mean_ttft_ms"]
            assert row["duration_s"] == raw["duration"]
    assert lp.provenance.options["sweep_parameters"][combos[0]] == {
        "max_num_seqs": "4", "max_concurrency": "2", "num_prompts": "8"}
    assert "extra_keys" not in lp.provenance.options  # the swept server parameter is not "extra"
    # summary.json (the array of repeats) gives the same load points as the run=N.json files
    summary = load(root / combos[0] / "summary.json").frame
    assert summary["ttft_ms_mean"].to_list() == f.filter(run_id=combos[0])["ttft_ms_mean"].to_list()
    assert summary["run_id"].unique().to_list() == [combos[0]]


@pytest.mark.shared_data
def test_folder_mixing_detailed_and_summary_files_loads_as_load_points(shared_data, tmp_path):
    import shutil

    detailed = shared_data(SURAJ + "/serving_deepseek-ai-DeepSeek-V2.5_tp8_pp2_sharegpt_qps_04.json.gz")
    shutil.copy(detailed, tmp_path / detailed.name)
    shutil.copy(BUNDLED / "llm-d-1p1d" / "benchmark_2025-05-11_23-00-27.json", tmp_path / "b.json")
    lp = load(tmp_path)
    assert lp.provenance.format == "vllm-bench-serve"
    assert "per_request_arrays_ignored" in {x.code for x in lp.provenance.findings}
    assert lp.frame["offered_load"].to_list() == [1.8, 4.0]
    assert lp.frame["ttft_ms_mean"][1] == _raw(detailed)["mean_ttft_ms"]


def _synthetic(tmp_path: Path, **over) -> Path:
    """SYNTHETIC: a minimal ~v0.8-style result written by the test."""
    doc = {
        "date": "20250101-000000", "backend": "vllm", "model_id": "m", "tokenizer_id": "m", "num_prompts": 4,
        "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": None, "duration": 4.0, "completed": 1,
        "total_input_tokens": 40, "total_output_tokens": 3, "request_throughput": 0.25, "request_goodput:": None,
        "output_throughput": 0.75, "mean_ttft_ms": 100.0, "input_lens": [10, 10, 10, 10],
        "output_lens": [3, 0, 0, 0], "ttfts": [0.1, 0.0, 0.0, 0.0], "itls": [[0.02, 0.03], [], [], []],
        "errors": ["", "HTTP 429 Too Many Requests", "asyncio.TimeoutError()", "ClientPayloadError: boom"],
        "deployment": "my-deploy", "gpu": "A100",
    }
    doc.update(over)
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    return p


def test_error_statuses_and_zero_latencies_of_failed_requests(tmp_path):
    tr = load_trace(_synthetic(tmp_path))
    f = tr.frame
    assert f["status"].to_list() == ["ok", "rejected", "timeout", "error"]
    # failed requests carry ttft 0.0 and output_len 0 in the file: unknown, never fast
    assert f["ttft_ms"].to_list()[1:] == [None, None, None] and f["latency_ms"].to_list()[1:] == [None, None, None]
    assert f["ttft_ms"][0] == pytest.approx(100.0) and f["latency_ms"][0] == pytest.approx(150.0)
    assert f["tpot_ms"][0] == pytest.approx(25.0)  # (150 - 100) / (3 - 1)
    assert f["output_tokens"].to_list() == [3, None, None, None]
    assert tr.provenance.options["extra_keys"]["run.json"] == {"deployment": "my-deploy", "gpu": "A100"}


def test_array_length_mismatch_is_a_clear_error(tmp_path):
    with pytest.raises(BadValueError, match="num_prompts=4"):
        load_trace(_synthetic(tmp_path, ttfts=[0.1, 0.0]))


def test_unknown_version_names_tool_version_and_missing_fields(tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"backend": "vllm", "model_id": "m", "tokenizer_id": "m", "request_rate": 1.0,
                             "request_goodput:": None, "num_prompts": 3}))
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    err = exc.value
    assert err.tool == "vLLM bench serve" and "~v0.8" in (err.version or "")
    assert {"duration", "completed", "mean_ttft_ms"} <= set(err.missing)
    assert str(p) in str(err)


@pytest.mark.shared_data
def test_cli_inspect_names_tool_and_layout(shared_data):
    runner = CliRunner()
    res = runner.invoke(app, ["inspect", str(shared_data(SURAJ))])
    assert res.exit_code == 0, res.output
    assert "vllm-bench-serve-requests" in res.output and "~v0.8" in res.output
    assert "no per-request times" in res.output and "#3: inf rps, 200 requests" in res.output
    res = runner.invoke(app, ["inspect", str(shared_data(ER + "vllm_sweep_v0.25.1"))])
    assert res.exit_code == 0, res.output
    assert "vllm-bench-serve (" in res.output and "v0.25.1" in res.output
