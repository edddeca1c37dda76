"""vLLM bench serve: the send window (drain excluded) and the throughput_below_offered flag it feeds.

vLLM's ``duration`` ends when the last request returns (vllm-project/vllm ``vllm/benchmarks/serve.py``,
``benchmark``: ``benchmark_duration`` after ``asyncio.gather`` of all tasks), so ``completed / duration``
is below the request rate on a healthy server; the requests are sent on a schedule that ends at
``num_prompts / request_rate`` (``get_request``). Expected values come from the raw files (gzip + json)
or are written by hand (SYNTHETIC, marked).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from bearing_lib import load_trace
from bearing_lib.limits.curves import step_windows
from bearing_lib.loaders.vllm import send_window

SURAJ = "loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/"


def _raw(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.mark.shared_data
@pytest.mark.parametrize("deployment", ["01_tp8_pp1", "04_tp4_pp2_IB"])
def test_send_window_is_the_schedule_and_the_drain_no_longer_flags_the_step(shared_data, deployment):
    folder = shared_data(SURAJ + deployment)
    raw = {}
    for p in sorted(folder.glob("*.json.gz")):
        d = _raw(p)
        raw[d["request_rate"]] = d
    tr = load_trace(folder)
    steps = {r["offered_load"]: r for r in tr.steps.iter_rows(named=True)}
    for rate, d in raw.items():
        if rate == "inf":
            assert steps[float("inf")]["send_window_s"] is None  # unbounded: no window
            continue
        assert d["max_concurrency"] is None
        assert steps[float(rate)]["send_window_s"] == pytest.approx(d["num_prompts"] / float(rate), rel=1e-12)
        assert steps[float(rate)]["duration_s"] == pytest.approx(d["duration"], rel=1e-12)
    # at 16 rps the file's completed / duration is far below the rate though every request was sent on time:
    d16 = raw[16.0]
    assert d16["completed"] == d16["num_prompts"] == 200
    assert d16["completed"] / d16["duration"] < 0.7 * 16  # 200 / 31.6 s = 6.3 rps (tp8); the drain
    win = {r["offered_load"]: r for r in step_windows(tr).iter_rows(named=True)}
    for rate in (1.0, 4.0, 16.0):
        assert "throughput_below_offered" not in win[rate]["step_flags"]
    # the 16 rps step is still short: 200 requests sent in 12.5 s
    assert "too_short" in win[16.0]["step_flags"]
    assert "send_window" in {f.code for f in tr.provenance.findings}


def _synthetic(tmp_path: Path, name: str = "run.json", **over) -> Path:
    """SYNTHETIC: a ~v0.8-style result of 10 requests at 2 rps, every one completed."""
    doc = {
        "date": "20250101-000000", "backend": "vllm", "model_id": "m", "tokenizer_id": "m", "num_prompts": 10,
        "request_rate": 2.0, "burstiness": 1.0, "max_concurrency": None, "duration": 9.0, "completed": 10,
        "total_input_tokens": 100, "total_output_tokens": 30, "request_throughput": 10 / 9.0,
        "request_goodput:": None, "output_throughput": 30 / 9.0, "mean_ttft_ms": 100.0,
        "input_lens": [10] * 10, "output_lens": [3] * 10, "ttfts": [0.1] * 10, "itls": [[0.02, 0.03]] * 10,
        "errors": [""] * 10,
    }
    doc.update(over)
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_send_window_rules_by_hand(tmp_path):
    base = json.loads(_synthetic(tmp_path).read_text())
    w = send_window(base)
    assert (w.seconds, w.basis) == (5.0, "config")  # 10 / 2 rps
    # per-request send times: 10 sends over 9 s -> measured send rate 9 / 9 = 1 rps, window 10 s
    st = [100.0 + i for i in range(10)]
    w = send_window({**base, "start_times": st})
    assert (w.seconds, w.basis) == (pytest.approx(10.0), "measured")
    # a concurrency cap may hold sends back; an unbounded or ramped rate has no fixed window
    assert send_window({**base, "max_concurrency": 4}) is None
    assert send_window({**base, "request_rate": "inf"}) is None
    assert send_window({**base, "ramp_up_strategy": "linear"}) is None


def test_flag_fires_only_when_the_generator_fell_behind(tmp_path):
    """SYNTHETIC: the same 10 requests at 2 rps, with a 9 s duration (4 s of drain): 10 / 9 s = 1.1 rps
    completed, below 70 % of 2 rps, yet sent on schedule (5 s): no flag. With send times 1 s apart (9 s for
    10 sends: 1 rps sent, half the rate) the generator did fall behind: flagged."""
    tr = load_trace(_synthetic(tmp_path))
    (w,) = step_windows(tr).iter_rows(named=True)
    assert "throughput_below_offered" not in w["step_flags"]
    tr = load_trace(_synthetic(tmp_path, name="late.json", start_times=[100.0 + i for i in range(10)]))
    (w,) = step_windows(tr).iter_rows(named=True)
    assert "throughput_below_offered" in w["step_flags"]
    # without a stated window (a concurrency cap) the drain-inclusive rate is all there is: flagged as before
    tr = load_trace(_synthetic(tmp_path, name="capped.json", max_concurrency=2))
    (w,) = step_windows(tr).iter_rows(named=True)
    assert tr.steps["send_window_s"].to_list() == [None]
    assert "throughput_below_offered" in w["step_flags"]
