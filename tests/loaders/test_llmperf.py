"""Anyscale LLMPerf loaders, on the real leaderboard files and the TRANSCRIBED Yi-34B sweep.

The leaderboard (Apache-2.0) is read in place for the whole 19-run set; two of its runs and
the TRANSCRIBED Yi-34B concurrency sweep (Apache-2.0; transcribed from a search index, byte
length checked, see tests/fixtures/llmperf/ATTRIBUTION.md) are bundled. Expected values are
computed in the test from the raw JSON with the json and statistics modules.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib import load, load_trace
from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, UnsupportedVersionError
from bearing_lib.loaders.llmperf import parse_error_codes

SHARED = "loadtests/llmperf/ray-llmperf-leaderboard/"
BUNDLED = Path(__file__).resolve().parents[1] / "fixtures" / "llmperf"
YI = BUNDLED / "yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED"


@pytest.mark.shared_data
def test_leaderboard_19_runs_2845_requests_539_failed_392_rejected(shared_data):
    folder = shared_data(SHARED + "individual")
    raw = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    n = sum(len(v) for v in raw.values())
    failed = sum(1 for v in raw.values() for r in v if r["error_code"] is not None)
    n429 = sum(1 for v in raw.values() for r in v if r["error_code"] == 429)
    assert (len(raw), n, failed, n429) == (19, 2845, 539, 392)
    tr = load_trace(folder)
    f = tr.frame
    assert f["run_id"].n_unique() == 19 and len(tr) == n
    assert (f["status"] != "ok").sum() == failed
    assert (f["status"] == "rejected").sum() == n429
    # every run is one step at the summary's concurrency (5), not from the file name
    assert tr.steps.height == 19 and set(tr.steps["offered_load"]) == {5.0}
    assert set(tr.steps["offered_load_unit"]) == {"concurrency"}
    assert tr.provenance.time_origin == "none" and f["start_s"].null_count() == n
    # zero-latency failure rows are errors with null latencies, never fast requests
    zero = [r for v in raw.values() for r in v if r["error_code"] is not None and r["end_to_end_latency_s"] == 0]
    assert len(zero) == f.filter((f["status"] != "ok") & f["latency_ms"].is_null()).height == 393
    assert f.filter(f["status"] != "ok")["itl_ms"].null_count() == failed
    assert f.filter(f["status"] == "ok")["latency_ms"].min() > 0


@pytest.mark.shared_data
def test_ok_rows_reproduce_the_summary_statistics(shared_data):
    """LLMPerf's summary statistics are over successful rows, in seconds; bearing's rows are ms."""
    base = shared_data(SHARED.rstrip("/"))
    for name in ("lepton_70b", "bedrock_13b", "together_13b", "anyscale_7b"):
        summary = json.loads((base / "summary" / f"{name}.json").read_text())
        tr = load_trace(base / "individual" / f"{name}.json")
        ok = tr.frame.filter(tr.frame["status"] == "ok")
        assert ok.height == summary["results_num_completed_requests"]
        assert ok["ttft_ms"].mean() == pytest.approx(summary["results_ttft_s_mean"] * 1000, rel=1e-9)
        assert ok["latency_ms"].mean() == pytest.approx(summary["results_end_to_end_latency_s_mean"] * 1000, rel=1e-9)
        # LLMPerf's own ITL (the summary's mean) is (TTFT + gaps) / N over the rows; bearing's itl_ms is the gaps
        # after the first token, (E2E − TTFT) / (N − 1), worked out here from the raw rows
        raw = [r for r in json.loads((base / "individual" / f"{name}.json").read_text()) if r["error_code"] is None]
        assert sum(r["inter_token_latency_s"] for r in raw) / len(raw) == pytest.approx(
            summary["results_inter_token_latency_s_mean"], rel=1e-9)
        gaps = [(r["end_to_end_latency_s"] - r["ttft_s"]) / (r["number_output_tokens"] - 1) * 1000 for r in raw
                if r["number_output_tokens"] > 1 and r["end_to_end_latency_s"] - r["ttft_s"] >= 0]
        assert ok["itl_ms"].drop_nulls().to_list() == pytest.approx(gaps, rel=1e-12)
        assert ok["itl_ms"].mean() < summary["results_inter_token_latency_s_mean"] * 1000  # TTFT / N no longer in it
        assert "llmperf_itl_includes_ttft" in {f.code for f in tr.provenance.findings}
        assert tr.steps["duration_s"][0] == pytest.approx(
            summary["results_num_completed_requests"] / summary["results_num_completed_requests_per_min"] * 60)


def test_bedrock_minus100_rows_keep_real_latency_but_not_the_unnormalised_itl():
    path = BUNDLED / "leaderboard" / "individual" / "bedrock_70b.json"
    raw = json.loads(path.read_text())
    bad = [r for r in raw if r["error_code"] == -100]
    assert len(bad) == 49
    # trap: inter_token_latency_s of these rows is the total (close to E2E), not a per-token mean
    assert all(r["inter_token_latency_s"] > 0.9 * r["end_to_end_latency_s"] for r in bad)
    tr = load_trace(path)
    f = tr.frame.filter(tr.frame["status"] == "error")
    assert f.height == 49 and f["itl_ms"].null_count() == 49
    assert f["latency_ms"].to_list() == pytest.approx([r["end_to_end_latency_s"] * 1000 for r in bad])
    assert f["error"][0].startswith("-100: Output too few tokens")
    codes = {x.code for x in tr.provenance.findings}
    assert "error_rows_unnormalised_itl" in codes
    assert tr.provenance.tool_version == "2023-08-31"


def test_error_code_frequency_is_a_python_repr_parsed_safely():
    summary = json.loads((BUNDLED / "leaderboard" / "summary" / "lepton_7b.json").read_text())
    assert summary["results_error_code_frequency"] == "{429.0: 130}"  # not JSON
    assert parse_error_codes(summary["results_error_code_frequency"], path=Path("x")) == {429: 130}
    assert parse_error_codes("{}", path=Path("x")) == {}
    with pytest.raises(BadValueError):
        parse_error_codes("__import__('os').system('true')", path=Path("x"))
    lp = load(BUNDLED / "leaderboard" / "summary" / "lepton_7b.json")
    row = lp.frame.row(0, named=True)
    assert (row["n_requests"], row["n_ok"], row["n_errors"]) == (150, 20, 130)
    assert lp.provenance.options["error_codes"] == {"429": 130}
    assert row["ttft_ms_p99"] == pytest.approx(summary["results_ttft_s_quantiles_p99"] * 1000)


def test_transcribed_yi_sweep_folder_is_one_run_ordered_by_concurrency():
    """TRANSCRIBED files (see ATTRIBUTION.md)."""
    raws = [json.loads(p.read_text()) for p in sorted(YI.glob("result_*/*_summary.json"))]
    raws.sort(key=lambda d: d["num_concurrent_requests"])
    lp = load(YI)
    f = lp.frame
    assert f["run_id"].n_unique() == 1
    assert f["step"].to_list() == list(range(7))
    assert f["offered_load"].to_list() == [float(d["num_concurrent_requests"]) for d in raws] == [
        1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert f["throughput_rps"].to_list() == pytest.approx(
        [d["results_num_completed_requests_per_min"] / 60 for d in raws])
    assert f["latency_ms_p50"].to_list() == pytest.approx(
        [d["results_end_to_end_latency_s_quantiles_p50"] * 1000 for d in raws])
    assert f["output_tokens_per_s"].to_list() == [d["results_mean_output_throughput_token_per_s"] for d in raws]
    # README: aggregate tokens/s peaks at concurrency 32 and falls at 64
    tok = f["output_tokens_per_s"].to_list()
    assert tok.index(max(tok)) == 5 and tok[6] < tok[5]
    assert lp.provenance.fields["duration_s"] == "derived"
    # the successful requests' mean prompt (550 tokens each here) times their completed rate: input tokens/s (the
    # fidelity check read "input length not known" beside mean_input_tokens 550; round 22)
    assert f["input_tokens_per_s"].to_list() == pytest.approx(
        [d["results_number_input_tokens_mean"] * d["results_num_completed_requests_per_min"] / 60 for d in raws])
    assert {d["results_number_input_tokens_mean"] for d in raws} == {550.0}
    assert lp.provenance.fields["input_tokens_per_s"] == "derived"


def test_token_count_strings_and_unknown_summary_version(tmp_path):
    summary = json.loads((BUNDLED / "leaderboard" / "summary" / "lepton_7b.json").read_text())
    assert isinstance(summary["results_number_input_tokens_min"], str)  # pandas artefact: "550"
    odd = dict(summary, version="2030-01-01")
    p = tmp_path / "x_summary.json"
    p.write_text(json.dumps(odd))  # SYNTHETIC: a future summary version
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.version == "2030-01-01" and exc.value.tool == "LLMPerf"
    del odd["results_number_errors"]
    odd["version"] = "2023-08-31"
    p.write_text(json.dumps(odd))
    with pytest.raises(UnsupportedVersionError) as exc:
        load(p)
    assert exc.value.missing == ["results_number_errors"]


def test_individual_file_without_summary_has_unknown_load(tmp_path):
    src = json.loads((BUNDLED / "leaderboard" / "individual" / "lepton_7b.json").read_text())
    p = tmp_path / "lone_individual_responses.json"
    p.write_text(json.dumps(src))
    tr = load_trace(p)
    assert tr.steps["offered_load"].to_list() == [None]
    assert "no_summary" in {x.code for x in tr.provenance.findings}
    assert (tr.frame["status"] == "rejected").sum() == sum(1 for r in src if r["error_code"] == 429) == 130
    assert statistics.fmean(r["ttft_s"] for r in src if r["error_code"] is None) * 1000 == pytest.approx(
        tr.frame.filter(tr.frame["status"] == "ok")["ttft_ms"].mean())


def test_cli_inspect_llmperf():
    runner = CliRunner()
    res = runner.invoke(app, ["inspect", str(BUNDLED / "leaderboard" / "individual" / "lepton_7b.json")])
    assert res.exit_code == 0, res.output
    assert "llmperf-individual-responses (Anyscale LLMPerf, version 2023-08-31)" in res.output
    assert "lepton_7b #0: 5 concurrency, 150 requests" in res.output
    res = runner.invoke(app, ["inspect", str(YI)])
    assert res.exit_code == 0, res.output
    assert "llmperf-summary" in res.output and "#6: 64 concurrency, 128/128" in res.output
