"""Server metrics aligned to load steps by time, per-step summaries, and the bottleneck rules.

Alignment and summaries are checked on hand-built series whose answers are worked out here
(which window holds which time, a counter's rise across a reset, a straight line's slope); the
rules on hand-built step tables, one per rule, and on the real inference-perf KubeCon runs, where
the limit step and the queue numbers are read from the raw JSON in the test."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from bearing_lib.common.errors import InputError, ParameterError, SchemaError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.servermetrics import ServerMetrics, conform_metrics
from bearing_lib.loaders import load
from bearing_lib.ops.bottleneck import first_failing_step, first_saturated_step, name_bottleneck
from bearing_lib.ops.metrics import align_to_steps, step_signals, step_windows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KUBECON_VLLM = FIXTURES / "inference-perf" / "k8s-sigs-kubecon-na-2025" / "vllm"


def _metrics(rows: list[dict]) -> ServerMetrics:
    full = [{"run_id": "r", "stat": "sample", **r} for r in rows]
    return ServerMetrics(conform_metrics(full), Provenance(source="test", format="test", tool="test", sha256=""))


WINDOWS = [
    {"run_id": "r", "step": 0, "start_s": 100.0, "end_s": 160.0},
    {"run_id": "r", "step": 1, "start_s": 160.0, "end_s": 220.0},
]


def test_samples_go_to_the_window_holding_their_time_half_open():
    times = [90.0, 100.0, 159.9, 160.0, 219.0, 220.0]
    ds = _metrics([{"time_s": t, "signal": "requests_waiting", "metric": "w", "value": float(i)}
                   for i, t in enumerate(times)])
    out = align_to_steps(ds, WINDOWS)
    # 90 is before every window, 220 is the end of the last (half-open), the rest are inside
    assert out.frame["step"].to_list() == [None, 0, 0, 1, 1, None]
    (f,) = [x for x in out.provenance.findings if x.code == "aligned_to_steps"]
    assert f.count == 2 and "4 of 6 samples" in f.message


def test_overlapping_windows_and_undated_samples_are_refused():
    ds = _metrics([{"time_s": 1.0, "signal": "requests_waiting", "metric": "w", "value": 1.0}])
    with pytest.raises(ParameterError, match="overlap"):
        align_to_steps(ds, [{"run_id": "r", "step": 0, "start_s": 0.0, "end_s": 10.0},
                            {"run_id": "r", "step": 1, "start_s": 5.0, "end_s": 20.0}])
    undated = _metrics([{"time_s": None, "signal": "requests_waiting", "metric": "w", "value": 1.0}])
    with pytest.raises(InputError, match="no time"):
        align_to_steps(undated, WINDOWS)


def test_step_windows_come_from_the_trace_first_send_to_last_end():
    class Trace:
        frame = pl.DataFrame({"run_id": ["r"] * 4, "step": [0, 0, 1, None], "start_s": [1.0, 3.0, 10.0, 50.0],
                              "end_s": [4.0, 9.5, 12.0, 60.0]})

    w = step_windows(Trace(), offset_s=1000.0)
    assert w.to_dicts() == [{"run_id": "r", "step": 0, "start_s": 1001.0, "end_s": 1009.5},
                            {"run_id": "r", "step": 1, "start_s": 1010.0, "end_s": 1012.0}]


def test_counter_increase_handles_a_reset_and_gauge_trend_is_the_slope():
    rows = []
    # preemptions counter in step 0: 5, 7, 2 (reset), 4 → rises 2, then 2 after the reset, then 2 → 6
    for t, v in zip((100, 115, 130, 145), (5, 7, 2, 4), strict=True):
        rows.append({"time_s": float(t), "signal": "preemptions_total", "metric": "p", "value": float(v)})
    # waiting gauge in step 0: 3 + 0.2 * (t - 100) exactly → slope 0.2 per second
    for t in (100, 115, 130, 145):
        rows.append({"time_s": float(t), "signal": "requests_waiting", "metric": "w", "value": 3 + 0.2 * (t - 100)})
    table = step_signals(align_to_steps(_metrics(rows), WINDOWS))
    pre = table.filter(pl.col("signal") == "preemptions_total").row(0, named=True)
    assert pre["increase"] == 6.0 and pre["trend_per_s"] is None
    wait = table.filter(pl.col("signal") == "requests_waiting").row(0, named=True)
    assert wait["trend_per_s"] == pytest.approx(0.2)
    assert wait["mean"] == pytest.approx(3 + 0.2 * 22.5) and wait["high"] == pytest.approx(12.0)
    assert wait["first"] == 3.0 and wait["last"] == pytest.approx(12.0)


def _table(rows: list[dict]) -> pl.DataFrame:
    base = {"run_id": "r", "basis": "samples", "n": 10, "first": None, "last": None, "increase": None,
            "trend_per_s": None}
    return pl.DataFrame([base | r for r in rows], schema={
        "run_id": pl.String(), "step": pl.Int64(), "signal": pl.String(), "basis": pl.String(), "n": pl.Int64(),
        "mean": pl.Float64(), "high": pl.Float64(), "first": pl.Float64(), "last": pl.Float64(),
        "increase": pl.Float64(), "trend_per_s": pl.Float64()})


def test_kv_cache_at_96_percent_is_kv_bound():
    t = _table([{"step": 2, "signal": "kv_cache_usage", "mean": 0.9, "high": 0.96}])
    b = name_bottleneck(t, limit_step=2)
    assert b.resource == "KV cache" and b.fired[0].rule == "KV-1" and "0.96 >= 0.95" in b.fired[0].evidence


def test_rising_preemptions_are_kv_bound():
    t = _table([{"step": 1, "signal": "preemptions_total", "mean": 0, "high": 0, "last": 0.0},
                {"step": 2, "signal": "preemptions_total", "mean": 3, "high": 5, "last": 5.0}])
    b = name_bottleneck(t, limit_step=2)
    assert b.resource == "KV cache" and b.fired[0].rule == "KV-2" and "0 at step 1 → 5 at step 2" in b.fired[0].evidence


def test_gpu_memory_above_95_percent():
    t = _table([{"step": 3, "signal": "gpu_memory_used_fraction", "mean": 0.97, "high": 0.98}])
    assert name_bottleneck(t, limit_step=3).fired[0].rule == "MEM-1"


def test_growing_queue_with_busy_gpu_is_compute_bound():
    t = _table([{"step": 1, "signal": "requests_waiting", "mean": 0.5, "high": 1},
                {"step": 2, "signal": "requests_waiting", "mean": 12, "high": 30},
                {"step": 2, "signal": "gpu_utilization", "mean": 0.97, "high": 1.0}])
    b = name_bottleneck(t, limit_step=2)
    assert b.resource == "GPU compute" and b.fired[0].rule == "CMP-1"
    assert "mean 12 at step 2, 0.5 at step 1" in b.fired[0].evidence


def test_idle_gpu_with_rising_latency_is_upstream():
    t = _table([{"step": 1, "signal": "requests_waiting", "mean": 0, "high": 0},
                {"step": 2, "signal": "requests_waiting", "mean": 0, "high": 0},
                {"step": 2, "signal": "gpu_utilization", "mean": 0.3, "high": 0.4}])
    assert name_bottleneck(t, limit_step=2, latency_rose=True).fired[0].rule == "UP-1"
    # without the load test's word on latency the rule cannot fire, and nothing is guessed
    quiet = name_bottleneck(t, limit_step=2)
    assert quiet.resource is None and quiet.statement.startswith("no rule fired at step 2")


def test_no_metrics_and_no_limit_say_so():
    assert name_bottleneck(None, limit_step=3).statement == "no server metrics given"
    t = _table([{"step": 2, "signal": "kv_cache_usage", "mean": 0.9, "high": 0.96}])
    assert name_bottleneck(t, limit_step=None).resource is None


def test_first_failing_step_of_a_limits_document():
    doc = {"mixes": [{"run_id": "a", "mix": {"name": "all"}, "q_ult": None,
                      "steps": [{"step": 2, "offered_load": 4.0, "status": "fail"},
                                {"step": 0, "offered_load": 1.0, "status": "pass"},
                                {"step": 1, "offered_load": 2.0, "status": "fail"}]}]}
    assert first_failing_step(doc, run_id="a", mix="all") == 1
    with pytest.raises(ParameterError, match="run 'b' is not in the limits; they hold a"):
        first_failing_step(doc, run_id="b")
    two = {"mixes": doc["mixes"] + [{**doc["mixes"][0], "run_id": "b", "steps": [
        {"step": 0, "offered_load": 1.0, "status": "fail"}]}]}
    with pytest.raises(ParameterError, match=r"2 runs \(a, b\).*--run"):  # never the first run's step in silence
        first_failing_step(two)
    assert first_failing_step(two, run_id="b") == 0
    with pytest.raises(SchemaError, match=r"mixes\.0\.steps\.0\.offered_load"):  # validated once, paths named
        first_failing_step({"mixes": [{"run_id": "a", "mix": {"name": "all"}, "q_ult": None,
                                       "steps": [{"step": 0, "status": "fail"}]}]})


def test_kubecon_vllm_run_binds_in_the_engine_queue_at_the_first_saturated_stage():
    # independently: the first stage whose achieved rate is > 10% below the requested rate
    stages = []
    for s in range(7):
        ls = json.loads((KUBECON_VLLM / f"stage_{s}_lifecycle_metrics.json").read_text())["load_summary"]
        stages.append((ls["requested_rate"], s, ls["achieved_rate"]))
    limit = next(s for req, s, ach in sorted(stages) if ach < 0.9 * req)
    assert limit == 4  # 122.59 requested, 106.5 achieved
    waiting = {s: json.loads((KUBECON_VLLM / f"stage_{s}_prometheus_metrics.json").read_text())["successes"]
               ["queue_len"]["mean"] for s in range(7)}
    lp = load(KUBECON_VLLM)  # the lifecycle sweep
    assert first_saturated_step(lp.frame) == limit
    table = step_signals(load(KUBECON_VLLM, format="inference-perf-prometheus"))
    b = name_bottleneck(table, limit_step=limit, run_id="vllm")
    assert b.resource == "engine queue" and [f.rule for f in b.fired] == ["CMP-2"]
    assert f"requests_waiting mean {waiting[4]:.4g} at step 4, {waiting[3]:.4g} at step 3" in b.fired[0].evidence
    assert "GPU utilisation not measured" in b.statement
    # no KV verdict: the V1 engine's KV gauge was not measured (all zeros), so KV-1 has nothing to read
    assert "kv_cache_usage" not in b.signals


@pytest.mark.shared_data
def test_kubecon_v0_engine_kv_cache_stays_low_at_its_limit(shared_data):
    folder = shared_data("loadtests/inference-perf/k8s-sigs-kubecon-na-2025/vllm_v0_engine")
    raw = {s: json.loads((folder / f"stage_{s}_prometheus_metrics.json").read_text())["successes"] for s in range(7)}
    life = {s: json.loads((folder / f"stage_{s}_lifecycle_metrics.json").read_text())["load_summary"]
            for s in range(7)}
    limit = min(s for s in range(7) if life[s]["achieved_rate"] < 0.9 * life[s]["requested_rate"])
    assert limit == 3  # 118.56 requested, 79.3 achieved
    b = name_bottleneck(step_signals(load(folder, format="inference-perf-prometheus")), limit_step=limit)
    assert b.signals["kv_cache_usage"]["high"] == raw[limit]["kv_cache_usage_percentage"]["p99"] < 0.95
    assert [f.rule for f in b.fired] == ["CMP-2"]  # queue grew (141 → 221), KV far from full


def test_kv_check_against_the_engine_gauge():
    from bearing_lib.ops.kv_check import check_kv_usage, kv_pool

    # 8 running × ceil((200 + 64/2) / 16) = ceil(14.5) = 15 blocks → 120 of 1,000 blocks = 0.12
    c = check_kv_usage(requests_running=8, input_tokens=200, output_tokens=64, num_gpu_blocks=1000, block_size=16,
                       measured_usage=0.11, step=3)
    assert c.blocks_per_request == 15 and c.predicted_usage == pytest.approx(0.12)
    assert c.rel_error == pytest.approx(0.01 / 0.11) and c.right
    far = check_kv_usage(requests_running=8, input_tokens=200, output_tokens=64, num_gpu_blocks=1000, block_size=16,
                         measured_usage=0.05, prefix_hit_rate=0.6)
    assert not far.right and "prefix caching" in far.statement
    scrape = ('# TYPE vllm:cache_config_info gauge\n'
              'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="27495"} 1.0\n')
    from bearing_lib.loaders.prometheus import _parse_exposition

    rows = _parse_exposition(scrape, Path("x.prom"), default_time=0.0, run_id="r")
    ds = ServerMetrics(conform_metrics(rows), Provenance(source="x", format="prometheus-text", tool="t", sha256=""))
    assert kv_pool(ds) == (27495, 16)
