"""``bearing inspect`` on the HTTP/aux load-test formats: format, tool, rows, and clear refusals.

Bundled and test-data copies run everywhere; licence-less files are read in place
(shared_data). inference-perf golden corpus: SYNTHETIC; Vegeta converted_to_vegeta_json:
converted; jaggr file: DERIVED (see the data README).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app

TESTDATA = Path(__file__).resolve().parents[1] / "fixtures"
runner = CliRunner()


def _inspect(path) -> tuple[int, str]:
    res = runner.invoke(app, ["inspect", str(path)])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    "where,rel,fmt,tool,rows",
    [
        ("bundled", "loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas", "lmbench-csv", "LMCache LMBenchmark",
         "17,067"),
        ("testdata", "inference-perf/k8s-sigs-kubecon-na-2025/vllm", "inference-perf-stages",
         "kubernetes-sigs inference-perf", "7"),
        ("testdata", "inference-perf/k8s-sigs-kubecon-na-2025/vllm/summary_lifecycle_metrics.json",
         "inference-perf-summary", "kubernetes-sigs inference-perf", "1"),
        ("testdata", "inference-perf/k8s-sigs-golden-corpus-SYNTHETIC/v0_5_0-clean-two-stage-run",  # SYNTHETIC
         "inference-perf-requests", "kubernetes-sigs inference-perf", "6"),
        ("testdata", "inference-perf/llm-d-benchmark-fixture/inference_perf_lifecycle.yaml",
         "inference-perf-lifecycle-yaml", "kubernetes-sigs inference-perf", "1"),
        ("testdata", "jmeter/HTMLReportTestFile.csv", "jmeter-jtl-csv", "Apache JMeter", "255"),
    ],
)
def test_inspect_repository_files(bundled, where, rel, fmt, tool, rows):
    path = bundled(rel) if where == "bundled" else TESTDATA / rel
    code, out = _inspect(path)
    assert code == 0, out
    assert f"format:   {fmt} ({tool}" in out
    assert f"rows:     {rows}\n" in out


SHARED = [
    ("loadtests/locust/rishabhpoddar-llm-inference-modal-vllm", "locust-csv-set", "Locust", "1"),
    ("loadtests/locust/veroliut-retail-demo-store/results_stats.csv", "locust-stats", "Locust", "1"),
    ("loadtests/locust/frankmwito-perf-testing-demo/reports_stats_history.csv", "locust-stats-history", "Locust",
     "1"),
    ("loadtests/k6/aicube-k6-results/ndjson_out_json__smoke-retrieve_26052025010722/summary.json", "k6-ndjson",
     "Grafana k6", "10"),
    ("loadtests/k6/aicube-k6-results/summary_export__smoke-memorize_26052025183048/summary.json",
     "k6-summary-export", "Grafana k6", "1"),
    ("loadtests/k6/mn1809-k6-lms-api/handleSummary_runs/20260602_2b33faf/k6-summary.json", "k6-handle-summary",
     "Grafana k6", "1"),
    ("loadtests/vegeta/ferdinandzhong-tgi-trial/bloomz-7b/converted_to_vegeta_json", "vegeta-json", "Vegeta",
     "480"),  # converted
    ("loadtests/vegeta/ferdinandzhong-tgi-trial/bloomz-7b/original", "vegeta-text-report", "Vegeta", "3"),
    ("loadtests/vegeta/azure-aks-ingress-DERIVED-jaggr/vegeta_results.json", "vegeta-jaggr",
     "Vegeta | jaggr (derived)", "1"),  # DERIVED
    ("loadtests/jmeter/kuprich-jtl-viewer-fakestore/fakestore_v2.jtl", "jmeter-jtl-csv", "Apache JMeter", "4,955"),
]


@pytest.mark.shared_data
@pytest.mark.parametrize("rel,fmt,tool,rows", SHARED)
def test_inspect_shared_files(shared_data, rel, fmt, tool, rows):
    code, out = _inspect(shared_data(rel))
    assert code == 0, out
    assert f"format:   {fmt} ({tool}" in out
    assert f"rows:     {rows}\n" in out


@pytest.mark.shared_data
def test_inspect_shows_version_when_visible(shared_data):
    code, out = _inspect(shared_data("loadtests/vegeta/ferdinandzhong-tgi-trial/codegen2-1b/original"))
    assert code == 0 and "< 12.8" in out


@pytest.mark.shared_data
def test_inspect_refusals_are_clear(shared_data):
    code, out = _inspect(
        shared_data("loadtests/vegeta/ferdinandzhong-tgi-trial/bloomz-3b/original/tgi_1qps_60duration_results.bin")
    )
    assert code == 1 and "vegeta encode --to json" in out
    code, out = _inspect(shared_data("loadtests/jmeter/gilbertmiao-legacy-pipe-noheader/results.jtl"))
    assert code == 1 and "columns=" in out and "does not guess" in out


def test_inspect_vegeta_csv(tmp_path):
    # a 2-line --to csv file in the v12.8.4 layout (no header), written here: no real one was collected
    p = tmp_path / "api_2qps_results.csv"
    p.write_text(
        "1700000000000000000,200,150000000,10,20,,e30=,,0,POST,http://x/,e30=\n"
        "1700000000500000000,0,30000000000,10,0,Client.Timeout exceeded,,,1,POST,http://x/,e30=\n"
    )
    code, out = _inspect(p)
    assert code == 0, out
    assert "format:   vegeta-csv (Vegeta" in out and "rows:     2\n" in out
