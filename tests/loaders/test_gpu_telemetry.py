"""GPU telemetry of AIPerf and GenAI-Perf read as server metrics.

Real files, read in place (no licence, so not copied): GenAI-Perf's ``telemetry_stats`` in
wellflat/k8s-dev's ``v_2025-09-30_e17e8f5_with_telemetry`` export and AIPerf's (pre-0.13 names)
``telemetry_data`` in its ``profile_export_aiperf.json``; both DCGM exporters report eight GPUs
of which one serves. AIPerf 0.13's namespaced fields (``nvidia_*``), its per-scrape
``gpu_telemetry_export.jsonl`` and malformed files are small fixtures written here from AIPerf
0.13.0's source schema (``aiperf/common/models/export_models.py`` ``TelemetryExportData``,
``aiperf/common/models/telemetry_models.py`` ``TelemetryRecord``), not by AIPerf itself.
Expected values are read from the raw JSON with ``json`` and worked out by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, InputError, SchemaError
from bearing_lib.loaders import load
from bearing_lib.servers.metrics import step_signals

GENAI = "loadtests/genai-perf/wellflat-k8s-dev/v_2025-09-30_e17e8f5_with_telemetry/profile_export_genai_perf.json"
AIPERF = "loadtests/aiperf/wellflat-k8s-dev/profile_export_aiperf.json"
AIPERF_SM = Path(__file__).resolve().parents[1] / "fixtures" / "aiperf" / "aiperf-0.13.0-llamacpp-stub-server-metrics"


def _signals(ds) -> dict[str, dict]:
    return {r["signal"]: r for r in step_signals(ds).iter_rows(named=True)}


def _finding(ds, code: str):
    (f,) = [f for f in ds.provenance.findings if f.code == code]
    return f


@pytest.mark.shared_data
def test_genai_perf_telemetry_stats_of_the_one_serving_gpu(shared_data):
    path = shared_data(GENAI)
    raw = json.loads(path.read_text())["telemetry_stats"]
    ds = load(path, format="genai-perf-gpu-telemetry")
    assert ds.provenance.format == "genai-perf-gpu-telemetry"
    # the exporter reports 8 GPUs; only GPU 3 holds memory (78.08 GB of 85.10)
    serving = [g for g in raw["gpu_memory_used"] if g != "unit" and raw["gpu_memory_used"][g]["max"] > 0]
    assert serving == ["3"]
    idle = _finding(ds, "idle_gpus")
    assert idle.count == 7 and "GPU 0, 1, 2, 4, 5, 6, 7 of" in idle.message and "serving: GPU 3" in idle.message
    s = _signals(ds)
    util, used, free, power = (raw[k]["3"] for k in ("gpu_utilization", "gpu_memory_used", "gpu_memory_free",
                                                    "gpu_power_usage"))
    assert raw["gpu_utilization"]["unit"] == "%" and raw["gpu_memory_used"]["unit"] == "GB"
    assert s["gpu_utilization"]["mean"] == pytest.approx(util["avg"] / 100)  # 0.774, not 0.097 over 8 GPUs
    assert s["gpu_utilization"]["high"] == pytest.approx(util["p99"] / 100)
    # GenAI-Perf's GB are MiB × 1.048576e-3 (telemetry_statistics.py scale_data): 10^9 bytes
    assert s["gpu_memory_used_bytes"]["mean"] == pytest.approx(used["avg"] * 1e9)
    assert used["avg"] * 1e9 / 2**20 == pytest.approx(74467, abs=1e-6)  # a whole number of MiB, as DCGM counts
    assert s["gpu_memory_used_fraction"]["high"] == pytest.approx(used["p99"] / (used["avg"] + free["avg"]))
    assert s["gpu_memory_used_fraction"]["mean"] == pytest.approx(0.9176, abs=1e-4)
    assert s["gpu_power_watts"]["mean"] == pytest.approx(power["avg"])
    # the idle GPUs' rows are kept, unmapped
    f = ds.frame
    assert f.filter((f["gpu"] == "0") & (f["metric"] == "gpu_utilization"))["signal"].null_count() == 5


@pytest.mark.shared_data
def test_aiperf_telemetry_data_of_an_a100_node(shared_data):
    path = shared_data(AIPERF)
    raw = json.loads(path.read_text())["telemetry_data"]["endpoints"]
    ((endpoint, ep),) = raw.items()
    gpu0 = ep["gpus"]["gpu_0"]["metrics"]
    ds = load(path, format="aiperf-gpu-telemetry")
    s = _signals(ds)
    assert _finding(ds, "idle_gpus").count == 7
    assert s["gpu_utilization"]["mean"] == pytest.approx(gpu0["gpu_utilization"]["avg"] / 100)
    assert s["gpu_power_watts"]["high"] == pytest.approx(gpu0["gpu_power_usage"]["p99"])
    used, free = gpu0["gpu_memory_used"], gpu0["gpu_memory_free"]
    assert s["gpu_memory_used_fraction"]["mean"] == pytest.approx(used["avg"] / (used["avg"] + free["avg"]))
    rows = ds.frame.filter(ds.frame["signal"] == "gpu_utilization")
    assert set(rows["instance"].to_list()) == {endpoint} and set(rows["gpu"].to_list()) == {"0"}
    assert "gpu_name=NVIDIA A100-SXM4-80GB" in rows["labels"][0] and "hostname=gpu-03" in rows["labels"][0]
    # the load-test reading of the same file points at this format
    lp = load(path)
    assert any(f.code == "gpu_telemetry" and "--format aiperf-gpu-telemetry" in f.message
               for f in lp.provenance.findings)


def _gpu(index: int, util: float, mem_gb: float, watts: float) -> dict:
    def st(v: float, hi: float | None = None) -> dict:
        hi = v if hi is None else hi
        return {"avg": v, "p50": v, "p90": hi, "p99": hi, "max": hi, "min": v, "std": 0.0}
    return {"gpu_index": index, "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": f"GPU-{index:04d}",
            "platform": "nvidia", "hostname": "node-a", "metrics": {
                "nvidia_gpu_utilization": {"unit": "%", **st(util, min(util + 3, 100))},
                "nvidia_memory_used": {"unit": "GB", **st(mem_gb)},
                "nvidia_power_usage": {"unit": "W", **st(watts, watts + 20)},
                "nvidia_energy_consumption": {"unit": "MJ", "avg": 0.01},
            }}


def _with_telemetry(tmp_path: Path, gpus_per_rate: dict[int, list[dict]]) -> Path:
    """The AIPerf 0.13.0 llama.cpp-stub sweep with a telemetry_data block (AIPerf 0.13's schema) added per run."""
    sweep = tmp_path / "sweep"
    shutil.copytree(AIPERF_SM, sweep)
    for rate, gpus in gpus_per_rate.items():
        p = sweep / f"rate_{rate}" / "profile_export_aiperf.json"
        doc = json.loads(p.read_text())
        doc["telemetry_data"]["endpoints"] = {"127.0.0.1:9400": {"gpus": {f"gpu_{g['gpu_index']}": g for g in gpus}}}
        p.write_text(json.dumps(doc))
    return sweep


def test_aiperf_013_telemetry_joins_the_server_metrics_and_names_gpu_compute(tmp_path):
    """With the GPU busy at the limit step the engine queue's growth reads as compute-bound (CMP-1), where the
    llama.cpp names alone say only 'engine queue' (CMP-2). Two serving GPUs (tensor parallel) pool: the level
    averaged, the high the higher; the idle third is left out."""
    sweep = _with_telemetry(tmp_path, {4: [_gpu(0, 40.0, 60.0, 300.0), _gpu(1, 44.0, 60.0, 310.0),
                                           _gpu(2, 0.0, 0.0, 60.0)],
                                       32: [_gpu(0, 94.0, 60.0, 650.0), _gpu(1, 96.0, 60.0, 660.0),
                                            _gpu(2, 0.0, 0.0, 60.0)]})
    out = tmp_path / "b.json"
    r = CliRunner().invoke(app, ["bottleneck", str(sweep), "--format", "aiperf-server-metrics", "--step", "1",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["bottleneck"]["resource"] == "GPU compute"
    assert [f["rule"] for f in doc["bottleneck"]["fired"]] == ["CMP-1"]
    assert "gpu_utilization mean 0.95 >= 0.9" in doc["bottleneck"]["fired"][0]["evidence"]  # (94 + 96) / 2 %
    sig = {(s["step"], s["signal"]): s for s in doc["signals"]}
    assert sig[(0, "gpu_utilization")]["mean"] == pytest.approx(0.42)
    assert sig[(1, "gpu_utilization")]["high"] == pytest.approx(0.99)  # GPU 1's p99, 96 + 3 %
    assert sig[(1, "gpu_power_watts")]["mean"] == pytest.approx(655.0)
    assert sig[(1, "gpu_memory_used_bytes")]["mean"] == pytest.approx(60e9)
    assert (1, "gpu_memory_used_fraction") not in sig  # AIPerf 0.13 collects no FB_FREE / FB_TOTAL
    assert any("gpu_memory_total_unknown" in f for f in doc["findings"])
    assert any("idle_gpus" in f and "GPU 2 of 127.0.0.1:9400" in f for f in doc["findings"])
    # the engine signals are still there, from server_metrics_export.json
    assert (1, "requests_waiting") in sig and (1, "requests_running") in sig
    # the same folder read for its telemetry alone: a step per run in offered-load order
    ds = load(sweep, format="aiperf-gpu-telemetry")
    assert "0: rate_4 (rps 4); 1: rate_32 (rps 32)" in _finding(ds, "window_statistics").message


def _record(t_ns: int, gpu: int, util: float, mem_gb: float, watts: float) -> dict:
    return {"timestamp_ns": t_ns, "telemetry_source_url": "http://127.0.0.1:9400/metrics", "gpu_index": gpu,
            "gpu_uuid": f"GPU-{gpu:04d}", "gpu_model_name": "NVIDIA H100 80GB HBM3", "pci_bus_id": None,
            "device": f"nvidia{gpu}", "hostname": "node-a", "namespace": None, "pod_name": None,
            "platform": "nvidia", "telemetry_data": {"nvidia_power_usage": watts, "nvidia_gpu_utilization": util,
                                                     "nvidia_memory_used": mem_gb, "nvidia_temperature": 50.0,
                                                     "nvidia_xid_errors": None}}


def test_aiperf_per_scrape_jsonl_as_samples(tmp_path):
    t0 = 1_764_700_000_000_000_000
    recs = [_record(t0 + i * 330_000_000, g, u, m, w) for i, (u, w) in enumerate([(50.0, 300.0), (70.0, 400.0),
                                                                                   (90.0, 500.0)])
            for g, m in ((0, 70.5), (1, 0.0)) for u, w in [((u, w) if g == 0 else (0.0, 60.0))]]
    path = tmp_path / "gpu_telemetry_export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    ds = load(path)  # recognised by its own fields
    assert ds.provenance.format == "aiperf-gpu-telemetry"
    f = ds.frame
    util = f.filter(f["signal"] == "gpu_utilization").sort("time_s")
    assert util["value"].to_list() == pytest.approx([0.5, 0.7, 0.9])  # GPU 1 held nothing: left out
    assert util["time_s"].to_list() == pytest.approx([t0 / 1e9 + i * 0.33 for i in range(3)])
    assert util["source_row"].to_list() == [1, 3, 5]
    s = _signals(ds)
    assert s["gpu_utilization"]["basis"] == "samples" and s["gpu_utilization"]["mean"] == pytest.approx(0.7)
    assert s["gpu_utilization"]["trend_per_s"] == pytest.approx(0.2 / 0.33)
    assert s["gpu_memory_used_bytes"]["mean"] == pytest.approx(70.5e9)


def _genai_doc(stats: dict) -> dict:
    return {"request_throughput": {"unit": "requests/sec", "avg": 1.0},
            "input_config": {"perf_analyzer": {"stimulus": {"concurrency": 4}}}, "telemetry_stats": stats}


@pytest.mark.parametrize(("stats", "error", "where"), [
    ({"gpu_memory_used": {"unit": "furlongs", "0": {"avg": 1.0}}}, BadValueError,
     "telemetry_stats.gpu_memory_used.0"),
    ({"gpu_utilization": {"unit": "%", "0": {"avg": "high"}}}, BadValueError, "telemetry_stats.gpu_utilization.0.avg"),
    ({"gpu_utilization": [1, 2]}, BadValueError, "telemetry_stats.gpu_utilization"),
    (None, SchemaError, "telemetry_stats"),
])
def test_malformed_genai_perf_telemetry_names_the_field(tmp_path, stats, error, where):
    path = tmp_path / "profile_export_genai_perf.json"
    doc = _genai_doc(stats)
    if stats is None:
        del doc["telemetry_stats"]
    path.write_text(json.dumps(doc))
    with pytest.raises(error) as exc:
        load(path, format="genai-perf-gpu-telemetry")
    assert exc.value.field == where and str(path) in str(exc.value)
    if "furlongs" in json.dumps(stats):
        assert "unit 'furlongs'" in str(exc.value) and "GB" in str(exc.value)


def test_empty_or_broken_aiperf_telemetry_is_a_clear_error(tmp_path):
    path = AIPERF_SM / "rate_4" / "profile_export_aiperf.json"  # AIPerf 0.13 with no exporter reached
    assert json.loads(path.read_text())["telemetry_data"]["endpoints"] == {}
    with pytest.raises(InputError, match="wrote no GPU telemetry here"):
        load(path, format="aiperf-gpu-telemetry")
    bad = tmp_path / "gpu_telemetry_export.jsonl"
    bad.write_text(json.dumps(_record(1, 0, 1.0, 1.0, 1.0)) + "\n" + '{"timestamp_ns": 2, "telemetry_data": {"nv\n')
    with pytest.raises(BadValueError) as exc:
        load(bad, format="aiperf-gpu-telemetry")
    assert exc.value.row == 2 and "line 2 is not a JSON object" in str(exc.value)
    r = CliRunner().invoke(app, ["bottleneck", str(bad), "--step", "0"])
    assert r.exit_code != 0 and "Traceback" not in r.output and "line 2" in r.output


AIPERF_REAL = Path(__file__).resolve().parents[1] / "data" / "aiperf-0.13.0-dcgm-stub-telemetry"


def test_aiperf_013_own_telemetry_export_of_a_known_dcgm_exporter():
    """Written by AIPerf 0.13.0 itself (``aiperf profile … --request-rate R --benchmark-duration 25 --gpu-telemetry
    http://127.0.0.1:9400/metrics``, R = 1, 2) against llama.cpp's llama-server, with a DCGM-exporter stand-in on
    loopback serving fixed values: GPU 0 at 87 %, FB_USED 70,000 MiB, 512.5 W; GPU 1 idle (0 %, 0 MiB). Known
    truth: 70,000 MiB × 1.048576e-3 = 73.40032 GB = 7.340032e10 bytes. AIPerf also scraped its default
    localhost:9400, the same exporter, so every GPU comes twice: one copy is kept."""
    raw = json.loads((AIPERF_REAL / "rate_2" / "profile_export_aiperf.json").read_text())
    assert raw["aiperf_version"] == "0.13.0"
    assert set(raw["telemetry_data"]["endpoints"]) == {"localhost:9400", "127.0.0.1:9400"}
    ds = load(AIPERF_REAL, format="aiperf-server-metrics")
    sig = {(r["step"], r["signal"]): r for r in step_signals(ds).iter_rows(named=True)}
    for step in (0, 1):
        assert sig[(step, "gpu_utilization")]["mean"] == pytest.approx(0.87)
        assert sig[(step, "gpu_memory_used_bytes")]["mean"] == pytest.approx(70000 * 1.048576e-3 * 1e9)
        assert sig[(step, "gpu_power_watts")]["high"] == pytest.approx(512.5)
    assert _finding(ds, "duplicate_gpus").count == 2
    assert "GPU 1 of localhost:9400" in _finding(ds, "idle_gpus").message
    # the engine's own signals of the same runs sit beside them (llama.cpp names, from server_metrics_export.json)
    waiting = json.loads((AIPERF_REAL / "rate_2" / "server_metrics_export.json").read_text())[
        "metrics"]["llamacpp:requests_deferred"]["series"][0]["stats"]["avg"]
    assert sig[(1, "requests_waiting")]["mean"] == pytest.approx(waiting)
    # the per-scrape JSONL AIPerf wrote beside it: every sample of GPU 0 at the stub's value, epoch times
    path = AIPERF_REAL / "rate_2" / "gpu_telemetry_export.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    js = load(path)
    util = js.frame.filter(js.frame["signal"] == "gpu_utilization")
    gpu0 = [r for r in recs if r["gpu_index"] == 0 and r["telemetry_source_url"] == "http://localhost:9400/metrics"]
    assert util.height == len(gpu0) and set(util["value"].to_list()) == {0.87}
    assert util["time_s"].min() == pytest.approx(min(r["timestamp_ns"] for r in gpu0) / 1e9)
