"""Each loader states the send window of each load point (first send to last send, drain excluded) and whether
the tool's duration includes the drain, as the tool's source defines them (docs/formats-loadtests-semantics.md,
"Send windows"). Expected values come from the raw files read with json / gzip in the test, not bearing's code.
"""

from __future__ import annotations

import gzip
import json

import pytest

from bearing_lib import load
from bearing_lib.common.errors import SchemaError
from bearing_lib.data.loadpoints import SendWindow

SGLANG = "loadtests/sglang-bench-serving/datacrunch-h200-benchmarks/llama_3_3_70b_online_output.jsonl"
EXP7 = "loadtests/vllm-bench-serve/llm-d-benchmark-exp7/"
IPERF = "loadtests/inference-perf/k8s-sigs-kubecon-na-2025/vllm_v0_engine"
SURAJ = "loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/01_tp8_pp1"


def test_send_window_type():
    w = SendWindow.of(250 / 5.5, "config", "num_prompts / request_rate")
    assert w is not None and w.seconds == pytest.approx(45.4545454545) and w.basis == "config"
    assert SendWindow.of(0.0, "measured", "x") is None and SendWindow.of(float("nan"), "measured", "x") is None
    with pytest.raises(SchemaError):
        SendWindow(1.0, "guessed", "x")  # type: ignore[arg-type]


@pytest.mark.shared_data
def test_sglang_window_is_estimated_from_completed_over_rate(shared_data):
    """bench_serving's lines state no num_prompts and no send times: completed / request_rate, estimated."""
    path = shared_data(SGLANG)
    raw = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    f = load(path).frame
    by = {(r["source_file"]): r for r in f.iter_rows(named=True)}
    for i, d in enumerate(raw, start=1):
        r = by[f"{path.name}:{i}"]
        assert r["send_window_s"] == pytest.approx(d["completed"] / d["request_rate"])
        assert r["send_window_basis"] == "estimated" and "completed / request_rate" in r["send_window_method"]
        assert r["duration_includes_drain"] is True
        assert r["duration_s"] == pytest.approx(d["duration"])
    # the 16 rps random-1024 line: 3,200 completed -> 200 s of sending, against a 383.07 s duration
    r16 = [r for r in f.iter_rows(named=True) if r["offered_load"] == 16.0][0]
    assert r16["send_window_s"] == pytest.approx(200.0) and r16["duration_s"] == pytest.approx(383.073250005953)


@pytest.mark.shared_data
def test_vllm_exp7_window_is_the_schedule(shared_data):
    """vLLM bench serve (llm-d exp-7, no start_times): num_prompts / request_rate from the config, drain in
    the duration."""
    folder = shared_data(EXP7 + "A100/llm-d-2p1d")
    raw = {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    f = load(folder).frame
    assert f.height == len(raw) == 2
    for r in f.iter_rows(named=True):
        d = raw[r["source_file"]]
        assert r["send_window_s"] == pytest.approx(d["num_prompts"] / d["request_rate"])  # 250 / 2.5 = 100 s
        assert r["send_window_basis"] == "config" and r["duration_includes_drain"] is True


@pytest.mark.shared_data
def test_vllm_append_result_lines_each_state_their_window(shared_data, tmp_path):
    """An --append-result file (one result per line, written as vllm/benchmarks/serve.py main does: a newline
    between json.dump calls) made of three real exp-7 results: each line is a step with its own window."""
    folder = shared_data(EXP7 + "H100/llm-d-2p1d")
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    f = tmp_path / "appended.json"
    f.write_text("\n".join(json.dumps(d) for d in docs))
    t = load(f).frame.sort("step")
    assert t.height == 3
    assert t["send_window_s"].to_list() == [pytest.approx(d["num_prompts"] / d["request_rate"]) for d in docs]
    assert set(t["send_window_basis"].to_list()) == {"config"}


@pytest.mark.shared_data
def test_vllm_arrays_window_in_the_steps(shared_data):
    folder = shared_data(SURAJ)
    raw = [json.loads(gzip.decompress(p.read_bytes())) for p in sorted(folder.glob("*.json.gz"))]
    steps = {r["offered_load"]: r for r in load(folder).steps.iter_rows(named=True)}
    for d in raw:
        s = steps[float(d["request_rate"])]
        if d["request_rate"] == "inf":
            assert s["send_window_s"] is None and s["send_window_basis"] is None
        else:
            assert s["send_window_s"] == pytest.approx(d["num_prompts"] / d["request_rate"])
            assert s["send_window_basis"] == "config"
        assert s["duration_includes_drain"] is True


@pytest.mark.shared_data
def test_inference_perf_window_is_its_send_duration(shared_data):
    """inference-perf: load_summary.send_duration (first -> last send) is measured; the benchmark time the
    throughput divides by runs on until every request finished."""
    folder = shared_data(IPERF)
    raw = {p.name: json.loads(p.read_text()) for p in folder.glob("stage_*_lifecycle_metrics.json")}
    t = load(folder)
    f = t.frame if hasattr(t, "frame") and "send_window_s" in t.frame.columns else None
    assert f is not None and f.height >= len(raw) - 1
    checked = 0
    for r in f.iter_rows(named=True):
        name = r["source_file"].split("/")[-1]
        if name not in raw:
            continue
        ls = raw[name]["load_summary"]
        assert r["send_window_s"] == pytest.approx(ls["send_duration"])
        assert r["send_window_basis"] == "measured"
        # the duration is the benchmark time (stated, or successes / requests_per_sec, which divides by it): drain
        bench = raw[name].get("benchmark_time_seconds")
        if bench is None:
            succ = raw[name]["successes"]
            bench = succ["count"] / succ["throughput"]["requests_per_sec"]
        assert r["duration_s"] == pytest.approx(bench)
        assert r["duration_includes_drain"] is True
        checked += 1
    assert checked >= 5
