"""Every real file (and run folder) of the HTTP/aux load-test tools is claimed by exactly one format.

Files that are only part of a set and are not a format on their own are listed with the
reason (server-side Prometheus metrics, configs, a CSV that is not Locust output ...): no
format may claim them. Runs over the shared data folder (read in place).
"""

from __future__ import annotations

import re

import pytest

from bearing_lib.loaders.registry import _safe_sniff, formats
from bearing_lib.loaders.source import InputSource

pytestmark = pytest.mark.shared_data

NOT_A_FORMAT = {
    r"inference-perf/.*/config\.yaml$": "inference-perf run configuration (read for the model name)",
    r"inference-perf/.*/validation\.json$": "inference-perf report validation (part of a report folder)",
    r"analyzed_reports_legend\.json$": "inference-perf --analyze legend",
    r"NOT_LOCUST_modal_autoscaler_stats\.csv$": "not Locust output (Modal autoscaler log beside it)",
}


def expected_format(rel: str) -> str | None:
    for pat in NOT_A_FORMAT:
        if re.search(pat, rel):
            return None
    rules = [
        (r"^lmbenchmark/.*\.csv$", "lmbench-csv"),
        (r"_prometheus_metrics\.json$", "inference-perf-prometheus"),
        (r"stage_\d+_lifecycle_metrics\.json$", "inference-perf-stages"),
        (r"summary_lifecycle_metrics\.json$", "inference-perf-summary"),
        (r"per_request_lifecycle_metrics\.json$", "inference-perf-requests"),
        (r"inference_perf_lifecycle\.yaml$", "inference-perf-lifecycle-yaml"),
        (r"_stats\.csv$", "locust-stats"),
        (r"_stats_history\.csv$", "locust-stats-history"),
        (r"_(failures|exceptions)\.csv$", "locust-csv-set"),
        (r"^k6/.*/(ndjson_out.*/summary\.json|ndjson_out/output\.json)$", "k6-ndjson"),
        (r"^k6/.*/summary_export__.*/summary\.json$", "k6-summary-export"),
        (r"^k6/.*/k6-summary\.json$", "k6-handle-summary"),
        (r"^vegeta/.*\.bin$", "vegeta-gob"),
        (r"^vegeta/.*\.txt$", "vegeta-text-report"),
        (r"^vegeta/.*/converted_to_vegeta_json/.*\.json$", "vegeta-json"),
        (r"^vegeta/.*jaggr/vegeta_results\.json$", "vegeta-jaggr"),
        (r"^jmeter/gilbertmiao-legacy-pipe-noheader/", "jmeter-jtl-noheader"),
        (r"^jmeter/", "jmeter-jtl-csv"),
    ]
    for pat, name in rules:
        if re.search(pat, rel):
            return name
    raise AssertionError(f"no expectation written for {rel}")


TOOLS = ("lmbenchmark", "inference-perf", "locust", "k6", "vegeta", "jmeter")

FOLDERS = {
    "lmbenchmark/llm-d-benchmark-exp2": "lmbench-csv",
    "lmbenchmark/llm-d-benchmark-exp2/vllm-70b-2replicas": "lmbench-csv",
    "inference-perf/k8s-sigs-kubecon-na-2025": "inference-perf-stages",
    "inference-perf/k8s-sigs-kubecon-na-2025/vllm_eagle": "inference-perf-stages",
    "inference-perf/k8s-sigs-golden-corpus-SYNTHETIC/v0_5_0-clean-two-stage-run": "inference-perf-requests",
    "locust/frankmwito-perf-testing-demo": "locust-csv-set",
    "locust/rishabhpoddar-llm-inference-modal-vllm": "locust-csv-set",
    "locust/veroliut-retail-demo-store": "locust-csv-set",
    "vegeta/ferdinandzhong-tgi-trial/bloomz-3b/converted_to_vegeta_json": "vegeta-json",
    "vegeta/ferdinandzhong-tgi-trial/bloomz-3b/original": "vegeta-text-report",
}


def _claims(path) -> list[str]:
    src = InputSource(path)
    return [spec.name for spec in formats() if _safe_sniff(spec, src)]


def test_every_file_is_one_format_or_deliberately_none(shared_data):
    root = shared_data("loadtests")
    seen = 0
    problems = []
    for tool in TOOLS:
        for p in sorted((root / tool).rglob("*")):
            if not p.is_file():
                continue
            rel = p.relative_to(root).as_posix()
            want = expected_format(rel)
            got = _claims(p)
            if (want is None and got) or (want is not None and got != [want]):
                problems.append(f"{rel}: expected {want or 'no format'}, claimed by {got}")
            seen += 1
    assert not problems, "\n".join(problems)
    assert seen > 250


@pytest.mark.parametrize("rel,want", sorted(FOLDERS.items()))
def test_run_folders(shared_data, rel, want):
    assert _claims(shared_data(f"loadtests/{rel}")) == [want]
