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
from bearing_lib.servers.bottleneck import first_failing_step, first_saturated_step, name_bottleneck
from bearing_lib.servers.metrics import align_to_steps, step_signals, step_windows

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
    from bearing_lib.limits.result import LimitsResult

    res = LimitsResult.from_dict  # the JSON edge: validated once, then typed
    assert first_failing_step(res(doc), run_id="a", mix="all") == 1
    with pytest.raises(ParameterError, match="run 'b' is not in the limits; they hold a"):
        first_failing_step(res(doc), run_id="b")
    two = {"mixes": doc["mixes"] + [{**doc["mixes"][0], "run_id": "b", "steps": [
        {"step": 0, "offered_load": 1.0, "status": "fail"}]}]}
    with pytest.raises(ParameterError, match=r"2 runs \(a, b\).*--run"):  # never the first run's step in silence
        first_failing_step(res(two))
    assert first_failing_step(res(two), run_id="b") == 0
    with pytest.raises(SchemaError, match=r"mixes\.0\.steps\.0\.offered_load"):  # validated once, paths named
        res({"mixes": [{"run_id": "a", "mix": {"name": "all"}, "q_ult": None,
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
    from bearing_lib.plan.memory import check_kv_usage
    from bearing_lib.servers.kv_check import kv_pool

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


# --------------------------------------------------------------------------- other engines' /metrics names
# Scrapes written in each engine's own words; a trace with two steps of 60 s (epoch seconds) puts the
# samples at +5, +30 in step 0 and +65, +90, +110 in step 1 (the CLI's --trace alignment).
T0 = 1_733_000_000
STEP0, STEP1 = (T0 + 5, T0 + 30), (T0 + 65, T0 + 90, T0 + 110)


def _trace(tmp_path: Path) -> Path:
    rows = ["request_id,start_s,end_s,latency_ms,status,run_id,step"]
    for i in range(10):
        start = T0 + i * 12
        rows.append(f"{i},{start},{start + 10},10000,ok,r,{0 if i < 5 else 1}")
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    return trace


def _llamacpp(defs: list[tuple[str, str, str, float]]) -> str:
    """What llama-server's GET /metrics prints: for every definition "# HELP llamacpp:<name> <help>",
    "# TYPE llamacpp:<name> <type>", "llamacpp:<name> <value>" (ggml-org/llama.cpp
    tools/server/server-context.cpp, server_routes::get_metrics; the same loop in the older
    tools/server/server.cpp and examples/server/server.cpp)."""
    return "".join(f"# HELP llamacpp:{n} {h}\n# TYPE llamacpp:{n} {t}\nllamacpp:{n} {v:g}\n" for n, t, h, v in defs)


def _bottleneck_cli(tmp_path: Path, scrapes: dict[int, str]) -> dict:
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    series = tmp_path / "scrapes"
    series.mkdir()
    for t, text in scrapes.items():
        (series / f"scrape-{t}.prom").write_text(text)
    out = tmp_path / "b.json"
    r = CliRunner().invoke(app, ["bottleneck", str(series), "--trace", str(_trace(tmp_path)), "--step", "1",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    return json.loads(out.read_text())


def test_llamacpp_server_with_every_slot_busy_binds_in_the_engine_queue(tmp_path):
    # --parallel 4: step 0 uses 2 slots and defers nothing; step 1 keeps all 4 busy while deferred tasks pile up
    state = {STEP0[0]: (2, 0, 1000), STEP0[1]: (2, 0, 3000), STEP1[0]: (4, 2, 6000), STEP1[1]: (4, 5, 9000),
             STEP1[2]: (4, 9, 12500)}
    scrapes = {
        t: _llamacpp([
            ("prompt_tokens_total", "counter", "Number of prompt tokens processed.", prompt),
            ("tokens_predicted_total", "counter", "Number of generation tokens processed.", prompt / 4),
            ("n_decode_total", "counter", "Total number of llama_decode() calls", prompt / 10),
            ("n_busy_slots_per_decode", "counter", "Average number of busy slots per llama_decode() call", busy),
            ("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.", 950.5),
            ("requests_processing", "gauge", "Number of requests processing.", busy),
            ("requests_deferred", "gauge", "Number of requests deferred.", deferred),
        ])
        for t, (busy, deferred, prompt) in state.items()
    }
    doc = _bottleneck_cli(tmp_path, scrapes)
    b = doc["bottleneck"]
    assert b["resource"] == "engine queue" and [f["rule"] for f in b["fired"]] == ["CMP-2"]
    # waiting at step 1: (2 + 5 + 9) / 3; step 0: 0; every slot busy: high 4
    assert "requests_waiting mean 5.333 at step 1, 0 at step 0" in b["fired"][0]["evidence"]
    assert "requests_running high 4" in b["fired"][0]["evidence"]
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    assert sig[(1, "prompt_tokens_total")]["increase"] == 12500 - 6000
    assert sig[(1, "generation_tokens_total")]["increase"] == (12500 - 6000) / 4
    assert sig[(0, "requests_running")]["mean"] == 2.0
    assert any("metric names of: llama.cpp" in f for f in doc["findings"])


def test_llamacpp_older_build_kv_cache_ratio_at_97_percent_is_kv_bound(tmp_path):
    # builds that still export kv_cache_usage_ratio (= used cells / n_ctx, "1 means 100 percent usage")
    kv = {STEP0[0]: 0.40, STEP0[1]: 0.45, STEP1[0]: 0.80, STEP1[1]: 0.97, STEP1[2]: 0.93}
    scrapes = {t: _llamacpp([("kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", v),
                             ("requests_processing", "gauge", "Number of request processing.", 3),
                             ("requests_deferred", "gauge", "Number of request deferred.", 0)])
               for t, v in kv.items()}
    b = _bottleneck_cli(tmp_path, scrapes)["bottleneck"]
    assert b["resource"] == "KV cache" and b["fired"][0]["rule"] == "KV-1"
    assert "kv_cache_usage high 0.97 >= 0.95" in b["fired"][0]["evidence"]


def _sglang_scrape(token_usage: float, running: int, queued: int, retracted: int) -> str:
    """SGLang's scrape, written by prometheus_client (the library SGLang exports with) from gauges and a
    counter declared with SGLang's names and labels (sgl-project/sglang
    python/sglang/srt/metrics/collector.py, SchedulerMetricsCollector)."""
    from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

    reg = CollectorRegistry()
    labels = {"model_name": "meta-llama/Llama-3.1-8B-Instruct", "engine_type": "unified", "tp_rank": "0",
              "pp_rank": "0", "moe_ep_rank": "0"}
    for name, doc, v in (("sglang:token_usage", "The token usage.", token_usage),
                         ("sglang:num_running_reqs", "The number of running requests.", running),
                         ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", queued)):
        Gauge(name, doc, labelnames=list(labels), registry=reg).labels(**labels).set(v)
    c = Counter("sglang:num_retracted_requests_total", "Total number of retracted requests.",
                labelnames=list(labels), registry=reg)
    c.labels(**labels).inc(retracted)
    return generate_latest(reg).decode()


def test_sglang_retractions_within_the_limit_step_are_kv_bound(tmp_path):
    state = {STEP0[0]: (0.41, 30, 0, 0), STEP0[1]: (0.55, 34, 0, 0), STEP1[0]: (0.88, 60, 4, 3),
             STEP1[1]: (0.91, 64, 9, 5), STEP1[2]: (0.90, 63, 12, 7)}
    doc = _bottleneck_cli(tmp_path, {t: _sglang_scrape(*v) for t, v in state.items()})
    b = doc["bottleneck"]
    # token_usage never reaches 0.95 (KV-1 silent); retractions rise 3 → 7 within step 1 (KV-2); the queue grows
    assert b["resource"] == "KV cache" and [f["rule"] for f in b["fired"]] == ["KV-2", "CMP-2"]
    assert b["fired"][0]["evidence"] == "4 preemption(s) within step 1"
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    assert sig[(1, "kv_cache_usage")]["high"] == 0.91
    assert sig[(1, "requests_waiting")]["mean"] == pytest.approx((4 + 9 + 12) / 3)


def _tgi_scrape(queue: int, batch: int, batch_max_tokens: int) -> str:
    """TGI's router scrape (metrics-exporter-prometheus): tgi_queue_size (backends/v3/src/queue.rs),
    tgi_batch_current_size and tgi_batch_current_max_tokens (backends/v3/src/backend.rs),
    tgi_batch_max_total_tokens set once after warm-up (backends/v3/src/lib.rs)."""
    return (f"# TYPE tgi_queue_size gauge\ntgi_queue_size {queue}\n"
            f"# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size {batch}\n"
            f"# TYPE tgi_batch_current_max_tokens gauge\ntgi_batch_current_max_tokens {batch_max_tokens}\n"
            "# TYPE tgi_batch_max_total_tokens gauge\ntgi_batch_max_total_tokens 16000\n"
            "# TYPE tgi_request_success counter\ntgi_request_success 17\n")


def test_tgi_token_budget_exhausted_is_kv_bound(tmp_path):
    state = {STEP0[0]: (0, 8, 6000), STEP0[1]: (0, 9, 7000), STEP1[0]: (3, 20, 15200), STEP1[1]: (6, 21, 15800),
             STEP1[2]: (7, 21, 15700)}
    doc = _bottleneck_cli(tmp_path, {t: _tgi_scrape(*v) for t, v in state.items()})
    b = doc["bottleneck"]
    # derived KV share = batch reservation / max_batch_total_tokens: 15800 / 16000 = 0.9875 at its highest
    assert b["resource"] == "KV cache" and b["fired"][0]["rule"] == "KV-1"
    assert "kv_cache_usage high 0.988 >= 0.95" in b["fired"][0]["evidence"]
    assert b["fired"][1]["rule"] == "CMP-2" and "requests_running high 21" in b["fired"][1]["evidence"]
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    assert sig[(0, "kv_cache_usage")]["mean"] == pytest.approx((6000 + 7000) / 2 / 16000)
    assert any("derived_signal" in f and "tgi_batch_current_max_tokens / tgi_batch_max_total_tokens" in f
               for f in doc["findings"])


def test_a_scrape_with_no_known_name_says_which_names_it_found(tmp_path):
    scrapes = {t: "# TYPE myengine_inflight gauge\nmyengine_inflight 3\n# TYPE myengine_queue gauge\n"
                  "myengine_queue 1\n" for t in (*STEP0, *STEP1)}
    doc = _bottleneck_cli(tmp_path, scrapes)
    statement = doc["bottleneck"]["statement"]
    assert statement.startswith("server metrics given, but none of their 2 metric name(s)")
    assert "found: myengine_inflight, myengine_queue" in statement
    (finding,) = [f for f in doc["findings"] if "no_known_signal" in f]
    assert "found 2 name(s): myengine_inflight, myengine_queue" in finding


AIPERF_SM = FIXTURES / "aiperf" / "aiperf-0.13.0-llamacpp-stub-server-metrics"


def test_aiperf_server_metrics_of_a_llamacpp_named_endpoint_bind_in_the_engine_queue(tmp_path):
    """AIPerf 0.13.0 scraped the endpoint's /metrics (llama.cpp names, as get_metrics prints them, from a
    loopback stub with 4 slots) at 4 and 32 rps and wrote server_metrics_export.json per run: window
    statistics over the profiling phase. Step k is the k-th run by offered load; the expected numbers
    are AIPerf's own, read from the raw JSON."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    raw = {r: json.loads((AIPERF_SM / f"rate_{r}" / "server_metrics_export.json").read_text()) for r in (4, 32)}
    assert [raw[r]["input_config"]["phases"][0]["rate"] for r in (4, 32)] == [4.0, 32.0]
    waiting = {r: raw[r]["metrics"]["llamacpp:requests_deferred"]["series"][0]["stats"] for r in (4, 32)}
    running = raw[32]["metrics"]["llamacpp:requests_processing"]["series"][0]["stats"]
    out = tmp_path / "b.json"
    r = CliRunner().invoke(app, ["bottleneck", str(AIPERF_SM), "--format", "aiperf-server-metrics", "--step", "1",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    b = doc["bottleneck"]
    assert b["resource"] == "engine queue" and [f["rule"] for f in b["fired"]] == ["CMP-2"]
    assert (f"requests_waiting mean {waiting[32]['avg']:.4g} at step 1, {waiting[4]['avg']:.4g} at step 0"
            in b["fired"][0]["evidence"])
    assert f"requests_running high {running['p99']:.4g}" in b["fired"][0]["evidence"]  # the 4 slots
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    # AIPerf strips a counter's _total: llamacpp:prompt_tokens is llamacpp:prompt_tokens_total; its total is the
    # increase over the profiling phase
    assert sig[(1, "prompt_tokens_total")]["increase"] == raw[32]["metrics"]["llamacpp:prompt_tokens"]["series"][0][
        "stats"]["total"]
    assert load(AIPERF_SM / "rate_4" / "server_metrics_export.json").provenance.format == "aiperf-server-metrics"
