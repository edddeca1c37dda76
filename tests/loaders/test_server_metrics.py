"""Server-metrics loaders: inference-perf's per-stage Prometheus reports (real files), Prometheus text
exposition (snapshots and series), Prometheus query JSON and DCGM CSV. Values are recomputed here
from the raw files with the json/csv modules, not through bearing."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bearing_lib.common.errors import BadValueError, InputError, SchemaError
from bearing_lib.loaders import detect, load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KUBECON_VLLM = FIXTURES / "inference-perf" / "k8s-sigs-kubecon-na-2025" / "vllm"


def _raw(folder: Path, stage: int) -> dict:
    return json.loads((folder / f"stage_{stage}_prometheus_metrics.json").read_text())["successes"]


def _value(ds, step, signal, stat):
    f = ds.frame
    rows = f.filter((f["step"] == step) & (f["signal"] == signal) & (f["stat"] == stat))
    assert rows.height == 1, (step, signal, stat, rows)
    return rows["value"][0]


# --------------------------------------------------------------------------- inference-perf (real files)
def test_inference_perf_stage_files_detect_as_server_metrics():
    for p in sorted(KUBECON_VLLM.glob("*_prometheus_metrics.json")):
        assert detect(p).name == "inference-perf-prometheus", p
    # the folder stays the lifecycle sweep; the metrics need the explicit format
    assert detect(KUBECON_VLLM).name == "inference-perf-stages"


def test_inference_perf_queue_per_stage_equals_the_file():
    ds = load(KUBECON_VLLM, format="inference-perf-prometheus")
    assert ds.kind == "metrics"
    assert sorted(ds.frame["step"].unique().to_list()) == list(range(7))
    for stage in range(7):
        raw = _raw(KUBECON_VLLM, stage)
        assert _value(ds, stage, "requests_waiting", "mean") == float(raw["queue_len"]["mean"])
        assert _value(ds, stage, "preemptions_total", "mean") == float(raw["num_preemptions_total"]["mean"])
    assert set(ds.frame["run_id"].unique().to_list()) == {"vllm"}


def test_v1_engine_all_zero_kv_cache_is_not_measured():
    # The vllm run is a V1 engine: kv_cache_usage_percentage is 0.0 in all 7 stages, also while
    # hundreds of requests wait (stage 4: queue_len mean 210), so it cannot be a measurement.
    raws = [_raw(KUBECON_VLLM, s) for s in range(7)]
    assert all(v == 0.0 for r in raws for v in r["kv_cache_usage_percentage"].values())
    assert max(r["queue_len"]["mean"] for r in raws) > 0
    ds = load(KUBECON_VLLM, format="inference-perf-prometheus")
    assert "kv_cache_usage" not in ds.signals()
    (f,) = [x for x in ds.provenance.findings if x.code == "kv_cache_not_measured"]
    assert "while requests were queued" in f.message and f.level == "warning"


def test_server_count_window_mismatch_is_reported_with_both_counts():
    ds = load(KUBECON_VLLM, format="inference-perf-prometheus")
    (f,) = [x for x in ds.provenance.findings if x.code == "server_count_window"]
    for stage in range(7):
        server = _raw(KUBECON_VLLM, stage)["count"]
        client = json.loads((KUBECON_VLLM / f"stage_{stage}_lifecycle_metrics.json").read_text())["successes"]["count"]
        assert abs(server / client - 1) > 0.10  # every stage of this run differs by more than 10%
        assert f"stage {stage}: server {server}, client {client}" in f.message
    assert f.count == 7


def test_summary_report_has_no_step():
    ds = load(KUBECON_VLLM, format="inference-perf-prometheus", summary=True)
    raw = json.loads((KUBECON_VLLM / "summary_prometheus_metrics.json").read_text())["successes"]
    assert ds.frame["step"].null_count() == ds.frame.height
    f = ds.frame.filter((ds.frame["signal"] == "requests_waiting") & (ds.frame["stat"] == "mean"))
    assert f["value"].to_list() == [float(raw["queue_len"]["mean"])]


@pytest.mark.shared_data
def test_v0_engine_kv_cache_is_a_fraction_read_per_statistic(shared_data):
    folder = shared_data("loadtests/inference-perf/k8s-sigs-kubecon-na-2025/vllm_v0_engine")
    ds = load(folder, format="inference-perf-prometheus")
    assert "kv_cache_usage" in ds.signals()
    for stage in range(7):
        raw = _raw(folder, stage)["kv_cache_usage_percentage"]
        for stat in ("mean", "median", "p90", "p99"):
            assert _value(ds, stage, "kv_cache_usage", stat) == float(raw[stat])
            assert 0.0 <= raw[stat] <= 1.0  # a 0..1 fraction, despite the key's name
    assert not [x for x in ds.provenance.findings if x.code == "kv_cache_not_measured"]


def test_a_prometheus_report_without_successes_is_refused(tmp_path):
    p = tmp_path / "stage_0_prometheus_metrics.json"
    p.write_text(json.dumps({"load_summary": {}, "failures": {}}))
    with pytest.raises(InputError, match="successes"):
        load(p, format="inference-perf-prometheus")


# --------------------------------------------------------------------------- text exposition
VLLM_SCRAPE = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama",pod="vllm-0"} 7.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama",pod="vllm-0"} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama",pod="vllm-0"} 0.42
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{engine="0",model_name="llama",pod="vllm-0"} 12.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="llama"} 5.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="llama"} 9.0
vllm:e2e_request_latency_seconds_count{model_name="llama"} 9.0
vllm:e2e_request_latency_seconds_sum{model_name="llama"} 11.5
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="node-a"} 87
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="node-a"} 1024
"""


def test_a_vllm_and_dcgm_scrape_maps_names_units_and_labels(tmp_path):
    p = tmp_path / "metrics.prom"
    p.write_text(VLLM_SCRAPE)
    assert detect(p).name == "prometheus-text"
    ds = load(p, time_s=1_733_077_200.0)
    f = ds.frame
    by = {r["signal"]: r for r in f.filter(f["signal"].is_not_null()).iter_rows(named=True)}
    assert by["requests_running"]["value"] == 7.0 and by["requests_running"]["instance"] == "vllm-0"
    assert by["requests_waiting"]["value"] == 3.0
    assert by["kv_cache_usage"]["value"] == 0.42
    assert by["preemptions_total"]["value"] == 12.0
    assert by["gpu_utilization"]["value"] == pytest.approx(0.87)  # percent / 100
    assert by["gpu_memory_used_bytes"]["value"] == 1024 * 1024 * 1024  # MiB → bytes
    assert by["gpu_utilization"]["gpu"] == "0" and by["gpu_utilization"]["instance"] == "node-a"
    assert by["gpu_utilization"]["labels"] == "UUID=GPU-1"
    assert set(f["time_s"].to_list()) == {1_733_077_200.0}
    hist = f.filter(f["metric"].str.starts_with("vllm:e2e_request_latency_seconds"))
    assert hist.height == 4 and hist["signal"].null_count() == 4  # histograms kept, not interpreted
    assert by["kv_cache_usage"]["source_row"] == 8  # the line of the sample


def test_exposition_timestamps_are_milliseconds(tmp_path):
    p = tmp_path / "m.txt"
    p.write_text("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 4 1733077200500\n")
    ds = load(p)
    assert ds.frame["time_s"].to_list() == [1_733_077_200.5]


def test_a_folder_of_scrapes_is_a_series_dated_by_file_name(tmp_path):
    for t, waiting in ((1_733_077_200, 1), (1_733_077_215, 5)):
        (tmp_path / f"scrape-{t}.prom").write_text(
            f"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {waiting}\n"
        )
    (tmp_path / "scrape-20241201T183030Z.prom").write_text(
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 9\n"
    )
    assert detect(tmp_path).name == "prometheus-text"
    ds = load(tmp_path)
    iso = datetime(2024, 12, 1, 18, 30, 30, tzinfo=UTC).timestamp()
    got = sorted(zip(ds.frame["time_s"].to_list(), ds.frame["value"].to_list(), strict=True))
    assert got == [(1_733_077_200.0, 1.0), (1_733_077_215.0, 5.0), (iso, 9.0)]


def test_an_undated_scrape_in_a_series_is_named(tmp_path):
    (tmp_path / "scrape-1733077200.prom").write_text("# TYPE a gauge\na 1\n")
    (tmp_path / "latest.prom").write_text("# TYPE a gauge\na 2\n")
    with pytest.raises(BadValueError, match="latest.prom"):
        load(tmp_path, format="prometheus-text")


def test_a_broken_exposition_line_is_located(tmp_path):
    p = tmp_path / "m.prom"
    p.write_text("# TYPE a gauge\na 1\na{x=\"1\" 2\n")
    with pytest.raises(BadValueError) as exc:
        load(p, format="prometheus-text")
    assert exc.value.row == 3 and str(p) in str(exc.value)


# --------------------------------------------------------------------------- query JSON
def test_query_range_matrix(tmp_path):
    doc = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"__name__": "vllm:num_requests_waiting", "pod": "vllm-0"},
                 "values": [[1733077200, "2"], [1733077215, "6"]]},
                {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1", "Hostname": "n"},
                 "values": [[1733077200, "50"]]},
            ],
        },
    }
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    assert detect(p).name == "prometheus-query-json"
    ds = load(p)
    rows = [(r["signal"], r["time_s"], r["value"], r["instance"], r["gpu"]) for r in ds.frame.iter_rows(named=True)]
    assert rows == [
        ("requests_waiting", 1733077200.0, 2.0, "vllm-0", None),
        ("requests_waiting", 1733077215.0, 6.0, "vllm-0", None),
        ("gpu_utilization", 1733077200.0, 0.5, "n", "1"),
    ]


def test_query_result_without_a_metric_name_is_explained(tmp_path):
    doc = {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "3"]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SchemaError, match="__name__"):
        load(p)


# --------------------------------------------------------------------------- DCGM CSV
def test_dcgm_csv_units_and_memory_fraction(tmp_path):
    p = tmp_path / "dcgm.csv"
    rows = [
        ("2024-12-01T18:30:00Z", "0", "90", "72000", "8000"),
        ("2024-12-01T18:30:15Z", "0", "95", "76000", "4000"),
    ]
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["timestamp", "gpu", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"])
        w.writerows(rows)
    assert detect(p).name == "dcgm-csv"
    ds = load(p)
    f = ds.frame
    frac = f.filter(f["signal"] == "gpu_memory_used_fraction").sort("time_s")
    assert frac["value"].to_list() == pytest.approx([72000 / 80000, 76000 / 80000])
    util = f.filter(f["signal"] == "gpu_utilization").sort("time_s")
    assert util["value"].to_list() == pytest.approx([0.90, 0.95])
    t0 = datetime(2024, 12, 1, 18, 30, tzinfo=UTC).timestamp()
    assert util["time_s"].to_list() == [t0, t0 + 15]
    assert util["source_row"].to_list() == [2, 3]
    used = f.filter(f["signal"] == "gpu_memory_used_bytes").sort("time_s")
    assert used["value"].to_list() == [72000 * 2**20, 76000 * 2**20]


def test_dcgm_csv_bad_time_is_located(tmp_path):
    p = tmp_path / "dcgm.csv"
    p.write_text("timestamp,DCGM_FI_DEV_GPU_UTIL\n1733077200,5\nyesterday,6\n")
    with pytest.raises(BadValueError) as exc:
        load(p)
    assert exc.value.row == 3 and exc.value.field == "timestamp"
