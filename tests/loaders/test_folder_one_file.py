"""A folder holding one recognisable file (beside READMEs, plots, configs) reads as that file.

The files are SYNTHETIC (written here in each tool's layout) or bundled (the Apache-2.0
GuideLLM report v2 fixture); each folder's result is compared with loading the file
itself, so the expected values are the file's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib import load
from bearing_lib.cli.main import app
from bearing_lib.common.errors import FormatDetectionError
from bearing_lib.loaders import detect
from bearing_lib.loaders.registry import resolve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SGLANG_LINE = {"backend": "sglang", "dataset_name": "random", "request_rate": 2.0, "max_concurrency": None,
               "total_input_tokens": 3000, "total_output_tokens": 2900, "total_output_tokens_retokenized": 2890,
               "mean_e2e_latency_ms": 850.0, "median_e2e_latency_ms": 820.0, "median_ttft_ms": 40.0,
               "median_itl_ms": 12.0, "output_throughput": 48.0, "sharegpt_output_len": None,
               "random_input_len": 1024, "random_output_len": 1024, "random_range_ratio": 0.0, "duration": 60.0,
               "completed": 120}
K6_SUMMARY = {"root_group": {"name": "", "path": "", "groups": {}, "checks": {}},
              "metrics": {"http_reqs": {"count": 100, "rate": 10.0},
                          "http_req_duration": {"avg": 20.0, "min": 5.0, "med": 18.0, "max": 90.0, "p(90)": 30.0,
                                                "p(95)": 40.0},
                          "http_req_failed": {"passes": 2, "fails": 98, "value": 0.02},
                          "vus": {"value": 1, "min": 1, "max": 10}}}
GENAI = {"request_throughput": {"unit": "requests/sec", "avg": 1.0},
         "request_latency": {"unit": "ms", "avg": 900.0, "p50": 880.0, "p90": 990.0, "p95": 1000.0, "p99": 1100.0,
                             "max": 1200.0},
         "request_count": {"unit": "requests", "avg": 60.0},
         "time_to_first_token": {"unit": "ms", "avg": 50.0, "p50": 48.0, "p99": 90.0},
         "input_config": {"concurrency": 1}}
AIPERF_SWEEP = ("concurrency,request_count_mean,request_throughput_mean,request_latency_mean,"
                "time_to_first_token_mean,benchmark_duration_mean\r\n16,100,5.0,3000.0,80.0,20.0\r\n"
                "32,200,9.0,3500.0,120.0,22.0\r\n")


def _companions(folder: Path) -> None:
    (folder / "README.md").write_text("# how this run was made\n")
    (folder / "LICENSE").write_text("all rights reserved\n")
    (folder / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    (folder / "run.yaml").write_text("model: x\nconcurrency: [1, 2]\n")


def _write(folder: Path, tool: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _companions(folder)
    if tool == "genai-perf-export":
        p = folder / "profile_export_genai_perf.json"
        p.write_text(json.dumps(GENAI))
    elif tool == "aiperf-sweep-csv":
        p = folder / "profile_export_aiperf_sweep.csv"
        p.write_bytes(AIPERF_SWEEP.encode())
    elif tool == "guidellm-benchmarks":
        p = folder / "guidellm_report_v2.json"
        shutil.copy(FIXTURES / "guidellm" / "guidellm_report_v2.json", p)
    elif tool == "k6-summary-export":
        p = folder / "summary.json"
        p.write_text(json.dumps(K6_SUMMARY))
    elif tool == "sglang-bench-serving":
        p = folder / "online_output.jsonl"
        p.write_text(json.dumps(SGLANG_LINE) + "\n" + json.dumps({**SGLANG_LINE, "request_rate": 4.0}) + "\n")
    else:  # pragma: no cover
        raise AssertionError(tool)
    return p


TOOLS = ["genai-perf-export", "aiperf-sweep-csv", "guidellm-benchmarks", "k6-summary-export", "sglang-bench-serving"]


@pytest.mark.parametrize("tool", TOOLS)
def test_folder_reads_as_its_one_file(tmp_path, tool):
    folder = tmp_path / "run"
    f = _write(folder, tool)
    assert detect(folder).name == tool
    spec, src = resolve(folder)
    assert spec.name == tool and src.path == f
    via_folder, direct = load(folder), load(f)
    assert via_folder.frame.equals(direct.frame)
    note = next(x for x in via_folder.provenance.findings if x.code == "folder_one_file")
    assert f.name in note.message and "README.md" in note.message
    assert via_folder.provenance.source == str(f)


def test_only_subfolder_is_followed(tmp_path):
    study = tmp_path / "study"
    f = _write(study / "sweep_aggregate", "aiperf-sweep-csv")
    (study / "NOTES.md").write_text("notes\n")
    spec, src = resolve(study)
    assert (spec.name, src.path) == ("aiperf-sweep-csv", f)
    assert load(study).frame["offered_load"].to_list() == [16.0, 32.0]


def test_two_recognisable_files_are_named(tmp_path):
    folder = tmp_path / "mixed"
    _write(folder, "genai-perf-export")
    (folder / "summary.json").write_text(json.dumps(K6_SUMMARY))
    with pytest.raises(FormatDetectionError, match="several recognisable inputs") as exc:
        detect(folder)
    text = str(exc.value)
    assert "profile_export_genai_perf.json: genai-perf-export" in text and "summary.json: k6-summary-export" in text


def test_a_folder_of_companions_only_is_no_known_format(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    _companions(folder)
    with pytest.raises(FormatDetectionError, match="no known format fits"):
        detect(folder)


def test_explicit_format_finds_its_file_in_a_folder(tmp_path):
    folder = tmp_path / "run"
    f = _write(folder, "k6-summary-export")
    (folder / "profile_export_genai_perf.json").write_text(json.dumps(GENAI))  # a second, other-format file
    ds = load(folder, format="k6-summary-export")
    assert ds.provenance.source == str(f) and ds.frame["n_requests"].to_list() == [100]


def test_inspect_says_which_file_it_read(tmp_path):
    folder = tmp_path / "run"
    f = _write(folder, "sglang-bench-serving")
    r = CliRunner().invoke(app, ["inspect", str(folder)])
    assert r.exit_code == 0, r.output
    assert f"read as: {f}" in r.output and "sglang-bench-serving" in r.output


def test_a_folder_of_runs_names_the_subfolders_that_read(tmp_path):
    root = tmp_path / "campaign"
    _write(root / "day1", "genai-perf-export")
    _write(root / "nested" / "day2", "k6-summary-export")
    (root / "nested" / "other").mkdir()
    (root / "notes").mkdir()
    with pytest.raises(FormatDetectionError, match="these subfolders do") as exc:
        detect(root)
    text = str(exc.value)
    assert "  - day1: genai-perf-export\n" in text and "  - nested/day2: k6-summary-export\n" in text
    assert "notes" not in text


# Real folders of the shared collection that each hold one tool file (read in place, not copied)
SHARED_FOLDERS = {
    "genai-perf/wellflat-k8s-dev/v_2025-09-16_e3e57ba": ("genai-perf-export", "profile_export_genai_perf.json"),
    "aiperf/wellflat-k8s-dev": ("aiperf-export", "profile_export_aiperf.json"),
    "aiperf/akamaslabs-g7-4500-concurrency-sweep-TRANSCRIBED": (
        "aiperf-sweep-csv", "sweep_aggregate/profile_export_aiperf_sweep.csv"),
    "guidellm/llm-d-benchmark-fixture": ("guidellm-benchmarks", "guidellm_report_v2.json"),
    "guidellm/danielkorat-guidellm-bench-xpu/guidellm_sanity_results_20260302_1856": (
        "guidellm-benchmarks-requests", "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"),
    "k6/aicube-k6-results/summary_export__smoke-memorize_26052025183048": ("k6-summary-export", "summary.json"),
    "k6/mn1809-k6-lms-api/handleSummary_runs/20260325_ca24fb4": ("k6-handle-summary", "k6-summary.json"),
    "sglang-bench-serving/datacrunch-h200-benchmarks/earlier_commit_65b698b": (
        "sglang-bench-serving", "llama_3_3_70b_output_online.jsonl"),
}


@pytest.mark.shared_data
@pytest.mark.parametrize("rel", sorted(SHARED_FOLDERS))
def test_shared_tool_folders_read_as_their_file(shared_data, rel):
    folder = shared_data("loadtests/" + rel)
    fmt, file = SHARED_FOLDERS[rel]
    spec, src = resolve(folder)
    assert (spec.name, src.path) == (fmt, folder / file)
    assert load(folder).frame.equals(load(folder / file).frame)
