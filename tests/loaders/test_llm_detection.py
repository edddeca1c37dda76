"""Every real file under the LLM load-test folders is claimed by exactly one format.

The registry raises when several sniffers claim an input, so "detected" means exactly one.
Files that are not tool output are listed as companions and must be claimed by none:
surajssd's ``*.commands`` (the command line of each run), vLLM's nightly
``benchmark_results.json`` (DERIVED by vLLM's converter) and the leaderboard's README.
Folders that hold a sweep are detected as one input too.
"""

from __future__ import annotations

import re

import pytest

from bearing_lib.common.errors import FormatDetectionError
from bearing_lib.loaders import detect

TOOLS = ("vllm-bench-serve", "sglang-bench-serving", "llmperf", "genai-perf", "aiperf", "guidellm")

# (path regex relative to loadtests/, expected format); first match wins
EXPECTED = [
    (r"\.commands$|/benchmark_results\.json$|/README$", None),
    (r"^vllm-bench-serve/.*\.json\.gz$", "vllm-bench-serve-requests"),
    (r"^vllm-bench-serve/.*\.json$", "vllm-bench-serve"),
    (r"^sglang-bench-serving/.*\.jsonl$", "sglang-bench-serving"),
    (r"^llmperf/ray-llmperf-leaderboard/individual/", "llmperf-individual-responses"),
    (r"^llmperf/.*summary.*\.json$", "llmperf-summary"),
    (r"^genai-perf/.*profile_export_genai_perf\.json$", "genai-perf-export"),
    (r"^aiperf/.*profile_export_aiperf\.json$", "aiperf-export"),
    (r"^aiperf/.*_sweep\.csv$", "aiperf-sweep-csv"),
    (r"^guidellm/danielkorat-guidellm-bench-xpu/.*_benchmarks\.json$", "guidellm-benchmarks-requests"),
    (r"^guidellm/llm-d-benchmark-fixture/guidellm_report_v2\.json$", "guidellm-benchmarks"),
    (r"^guidellm/.*-DERIVED/all-benchmarks\.csv$", "guidellm-derived-csv"),
]

FOLDERS = {
    "vllm-bench-serve/surajssd-llm-k8s-azure-a100/deepseek-v2.5/01_tp8_pp2_no_ib": "vllm-bench-serve-requests",
    "vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/04_tp4_pp2_IB": "vllm-bench-serve-requests",
    "vllm-bench-serve/llm-d-benchmark-exp7/H100/vllm-3replicas": "vllm-bench-serve",
    "vllm-bench-serve/llm-d-benchmark-exp7/A100": "vllm-bench-serve",
    "vllm-bench-serve/surajssd-llm-k8s-azure-a100/deepseek-v2.5": "vllm-bench-serve-requests",
    "vllm-bench-serve/er0080-vllm-benchmarking/vllm_sweep_v0.25.1": "vllm-bench-serve",
    "vllm-bench-serve/er0080-vllm-benchmarking/vllm_sweep_v0.25.1/"
    "SERVE--max_num_seqs=8-BENCH--max_concurrency=2-num_prompts=8": "vllm-bench-serve",
    "llmperf/ray-llmperf-leaderboard/individual": "llmperf-individual-responses",
    "llmperf/ray-llmperf-leaderboard/summary": "llmperf-summary",
    "llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED": "llmperf-summary",
}


def _expected(rel: str) -> str | None:
    for pattern, name in EXPECTED:
        if re.search(pattern, rel):
            return name
    raise AssertionError(f"no expectation for {rel}: add it to EXPECTED")


@pytest.mark.shared_data
def test_every_file_detected_as_exactly_one_format(shared_data):
    base = shared_data("loadtests")
    seen = {}
    for tool in TOOLS:
        for p in sorted((base / tool).rglob("*")):
            if not p.is_file():
                continue
            rel = p.relative_to(base).as_posix()
            want = _expected(rel)
            if want is None:
                with pytest.raises(FormatDetectionError, match="no known format fits"):
                    detect(p)
            else:
                assert detect(p).name == want, rel
            seen[rel] = want
    assert len(seen) == 143
    assert sum(1 for v in seen.values() if v is None) == 24 + 6 + 1


@pytest.mark.shared_data
@pytest.mark.parametrize("rel,want", sorted(FOLDERS.items()))
def test_sweep_folders_detected(shared_data, rel, want):
    assert detect(shared_data("loadtests/" + rel)).name == want
