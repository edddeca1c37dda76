"""kubernetes-sigs inference-perf loaders, on real reports.

Copies in tests/fixtures/inference-perf/ (Apache-2.0, see ATTRIBUTION.md): the KubeCon NA 2025
``vllm`` run (real, 7 stages), the golden corpus (**SYNTHETIC**: hand-built by the
inference-perf authors, start_time 0.0, 0.5 ...) and the llm-d-benchmark YAML rendering.
The full KubeCon tree (6 configs) is read in place from the shared data folder.
Expected values come from the raw JSON parsed with the json module inside each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bearing_lib import UnsupportedVersionError, load
from bearing_lib.loaders import detect

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "inference-perf"
KUBECON_VLLM = DATA / "k8s-sigs-kubecon-na-2025" / "vllm"
GOLDEN_SYNTHETIC = DATA / "k8s-sigs-golden-corpus-SYNTHETIC" / "v0_5_0-clean-two-stage-run"
YAML_FIXTURE = DATA / "llm-d-benchmark-fixture" / "inference_perf_lifecycle.yaml"


def _j(p):
    return json.loads(Path(p).read_text())


def test_stage_folder_real_run_units_and_rates():
    lp = load(KUBECON_VLLM)
    assert lp.kind == "loadpoints" and lp.provenance.format == "inference-perf-stages"
    f = lp.frame
    assert f["step"].to_list() == list(range(7))
    for row in f.iter_rows(named=True):
        doc = _j(KUBECON_VLLM / f"stage_{row['step']}_lifecycle_metrics.json")
        ls, succ = doc["load_summary"], doc["successes"]
        assert row["offered_load"] == ls["requested_rate"] and row["offered_load_unit"] == "rps"
        assert row["achieved_rate_rps"] == ls["achieved_rate"]
        assert row["n_requests"] == succ["count"] + doc["failures"]["count"]
        assert row["n_ok"] == succ["count"]
        assert row["throughput_rps"] == succ["throughput"]["requests_per_sec"]
        # seconds -> ms, median -> p50
        lat = succ["latency"]
        assert row["ttft_ms_p90"] == pytest.approx(lat["time_to_first_token"]["p90"] * 1000)
        assert row["latency_ms_p50"] == pytest.approx(lat["request_latency"]["median"] * 1000)
        assert row["tpot_ms_p99"] == pytest.approx(lat["time_per_output_token"]["p99"] * 1000)
        assert row["itl_ms_mean"] == pytest.approx(lat["inter_token_latency"]["mean"] * 1000)
        assert row["duration_s"] == pytest.approx(succ["count"] / succ["throughput"]["requests_per_sec"])
        assert row["model"] == "meta-llama/Meta-Llama-3-8B-Instruct"  # from config.yaml one folder up
    # README: stage 4 requested 122.6 req/s but achieved 106.5; TTFT p90 0.06 s -> 3.2 s
    s4 = f.filter(f["step"] == 4).row(0, named=True)
    assert round(s4["offered_load"], 1) == 122.6 and round(s4["achieved_rate_rps"], 1) == 106.5
    assert (f["ttft_ms_p90"][4] / f["ttft_ms_p90"][0]) > 50
    sat = [x for x in lp.provenance.findings if x.code == "achieved_below_requested"]
    assert sat and sat[0].count == 3  # stages 4, 5, 6
    assert lp.provenance.fields["duration_s"] == "derived"


@pytest.mark.shared_data
def test_kubecon_tree_is_six_runs(shared_data):
    root = shared_data("loadtests/inference-perf/k8s-sigs-kubecon-na-2025")
    lp = load(root)
    runs = sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("stage_*_lifecycle_metrics.json")))
    assert sorted(set(lp.frame["run_id"])) == runs and len(runs) == 6
    assert lp.frame.height == 6 * 7
    total = sum(_j(p)["load_summary"]["count"] for p in root.rglob("stage_*_lifecycle_metrics.json"))
    assert lp.frame["n_requests"].sum() == total


def test_single_stage_file():
    lp = load(KUBECON_VLLM / "stage_3_lifecycle_metrics.json")
    assert lp.frame.height == 1 and lp.frame["step"][0] == 3


def test_summary_file_has_no_step():
    p = KUBECON_VLLM / "summary_lifecycle_metrics.json"
    assert detect(p).name == "inference-perf-summary"
    lp = load(p)
    doc = _j(p)
    row = lp.frame.row(0, named=True)
    assert row["step"] is None and row["offered_load"] is None
    assert row["n_ok"] == doc["successes"]["count"]
    assert row["latency_ms_p99"] == pytest.approx(doc["successes"]["latency"]["request_latency"]["p99"] * 1000)


def test_golden_synthetic_per_request_matches_the_tools_own_stage_reports():
    """SYNTHETIC golden corpus: per-request values reproduce the stage reports inference-perf wrote."""
    tr = load(GOLDEN_SYNTHETIC)
    assert tr.kind == "requests" and tr.provenance.format == "inference-perf-requests"
    raw = _j(GOLDEN_SYNTHETIC / "per_request_lifecycle_metrics.json")
    assert len(tr) == len(raw) == 6
    assert tr.provenance.time_origin == "relative"
    f = tr.frame.sort("source_row")
    assert f["start_s"].to_list() == pytest.approx([r["start_time"] - raw[0]["start_time"] for r in raw])
    assert f["latency_ms"].to_list() == pytest.approx([(r["end_time"] - r["start_time"]) * 1000 for r in raw])
    errors = [r for r in raw if r["error"]]
    assert f.filter(f["status"] == "error").height == len(errors) == 1
    assert f.filter(f["status"] == "error")["error"][0] == "HTTP Error 500: boom"
    for stage in (0, 1):
        doc = _j(GOLDEN_SYNTHETIC / f"stage_{stage}_lifecycle_metrics.json")
        s = f.filter(f["step"] == stage)
        assert s.height == doc["load_summary"]["count"]
        ok = s.filter(s["status"] == "ok")
        lat = doc["successes"]["latency"]
        assert ok.height == doc["successes"]["count"]
        assert ok["ttft_ms"].mean() == pytest.approx(lat["time_to_first_token"]["mean"] * 1000)
        assert ok["tpot_ms"].mean() == pytest.approx(lat["time_per_output_token"]["mean"] * 1000)
        assert ok["latency_ms"].mean() == pytest.approx(lat["request_latency"]["mean"] * 1000)
        assert ok["output_tokens"].sum() == pytest.approx(doc["successes"]["output_len"]["mean"] * ok.height)
        assert set(s["offered_load"]) == {doc["load_summary"]["requested_rate"]}
    steps = tr.steps
    assert steps["n_requests_reported"].to_list() == [4, 2]
    assert any(x.code == "stages_by_count" for x in tr.provenance.findings)


def test_golden_synthetic_per_request_file_alone():
    tr = load(GOLDEN_SYNTHETIC / "per_request_lifecycle_metrics.json")
    assert len(tr) == 6 and tr.steps.height == 2


def test_yaml_rendering():
    assert detect(YAML_FIXTURE).name == "inference-perf-lifecycle-yaml"
    lp = load(YAML_FIXTURE)
    doc = yaml.safe_load(YAML_FIXTURE.read_text())
    row = lp.frame.row(0, named=True)
    assert row["offered_load"] == doc["load_summary"]["requested_rate"]
    assert row["achieved_rate_rps"] == doc["load_summary"]["achieved_rate"]
    assert row["duration_s"] == doc["benchmark_time_seconds"]
    assert row["ttft_ms_p99"] == pytest.approx(doc["successes"]["latency"]["time_to_first_token"]["p99"] * 1000)


def test_unknown_layout_names_missing_fields(tmp_path):
    doc = _j(KUBECON_VLLM / "stage_0_lifecycle_metrics.json")
    del doc["successes"]["latency"]
    del doc["load_summary"]["achieved_rate"]
    p = tmp_path / "stage_0_lifecycle_metrics.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.tool == "kubernetes-sigs inference-perf"
    assert exc.value.missing == ["load_summary.achieved_rate", "successes.latency"]


def test_prometheus_reports_are_server_metrics_and_config_is_not_a_format():
    from bearing_lib.common.errors import FormatDetectionError

    # the server-side reports load as server metrics (tests/loaders/test_server_metrics.py)
    for name in ("stage_0_prometheus_metrics.json", "summary_prometheus_metrics.json"):
        assert detect(KUBECON_VLLM / name).name == "inference-perf-prometheus"
    with pytest.raises(FormatDetectionError):
        detect(DATA / "k8s-sigs-kubecon-na-2025" / "config.yaml")


def test_sent_but_unaccounted_requests_are_reported(tmp_path):
    doc = _j(KUBECON_VLLM / "stage_2_lifecycle_metrics.json")
    doc["load_summary"]["count"] += 5
    p = tmp_path / "stage_2_lifecycle_metrics.json"
    p.write_text(json.dumps(doc))
    lp = load(p)
    (f,) = [x for x in lp.provenance.findings if x.code == "requests_unaccounted"]
    assert f"{doc['load_summary']['count']} sent, {doc['successes']['count']} succeeded or failed" in f.message
