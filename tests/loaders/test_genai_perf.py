"""GenAI-Perf and AIPerf exports and the AIPerf sweep CSV, on real files read in place.

wellflat/k8s-dev has no licence and akamaslabs' licence is unknown, so nothing is copied.
The AIPerf sweep CSV is TRANSCRIBED (from a search index's text copy, length checked).
Expected values come from the raw files parsed in the test (json, csv).
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from bearing_lib import load
from bearing_lib.cli.main import app
from bearing_lib.common.errors import BadValueError, UnsupportedVersionError

GENAI = {
    "flat": "loadtests/genai-perf/wellflat-k8s-dev/v_2025-09-16_e3e57ba/profile_export_genai_perf.json",
    "nested": "loadtests/genai-perf/wellflat-k8s-dev/v_2025-09-30_e17e8f5_with_telemetry/"
    "profile_export_genai_perf.json",
}
AIPERF = "loadtests/aiperf/wellflat-k8s-dev/profile_export_aiperf.json"
SWEEP = ("loadtests/aiperf/akamaslabs-g7-4500-concurrency-sweep-TRANSCRIBED/sweep_aggregate/"
         "profile_export_aiperf_sweep.csv")


@pytest.mark.shared_data
@pytest.mark.parametrize("layout", ["flat", "nested"])
def test_genai_perf_two_versions(shared_data, layout):
    path = shared_data(GENAI[layout])
    raw = json.loads(path.read_text())
    cfg = raw["input_config"]
    conc = cfg["concurrency"] if layout == "flat" else cfg["perf_analyzer"]["stimulus"]["concurrency"]
    lp = load(path)
    assert lp.provenance.format == "genai-perf-export"
    row = lp.frame.row(0, named=True)
    assert (row["offered_load"], row["offered_load_unit"], row["step"]) == (float(conc), "concurrency", 0)
    assert raw["request_latency"]["unit"] == "ms"
    assert row["latency_ms_p99"] == raw["request_latency"]["p99"]
    assert row["latency_ms_p50"] == raw["request_latency"]["p50"]
    assert row["ttft_ms_mean"] == raw["time_to_first_token"]["avg"]
    assert row["tpot_ms_p90"] == raw["inter_token_latency"]["p90"]  # GenAI-Perf ITL = per-request TPOT
    assert row["itl_ms_mean"] is None
    assert row["n_ok"] == raw["request_count"]["avg"]
    # GenAI-Perf's request_throughput counts every request sent; request_count and output_token_throughput only those
    # whose response carried content (llm_profile_data_parser.py): the duration is their tokens over their rate
    n, rps = raw["request_count"]["avg"], raw["request_throughput"]["avg"]
    d = n * raw["output_sequence_length"]["avg"] / raw["output_token_throughput"]["avg"]
    assert row["duration_s"] == pytest.approx(d)
    assert round(d, 1) == {"flat": 317.9, "nested": 212.7}[layout]  # not n / rps: 209.8 s and 74.45 s
    assert round(rps * d) == 100  # both configs asked for 100 requests: said in a finding, not as n_requests
    assert row["n_requests"] is None and row["throughput_rps"] == rps
    (f,) = [f for f in lp.provenance.findings if f.code == "requests_without_content"]
    assert "GenAI-Perf sent 100 requests" in f.message and f"request_count, {n:.0f}," in f.message
    assert row["n_errors"] is None
    assert lp.provenance.fields["duration_s"] == "derived"
    layout_text = lp.provenance.options["layout"]
    assert ("flat config" in layout_text) == (layout == "flat")
    assert ("output_token_throughput_per_request" in raw) == (layout == "flat")


@pytest.mark.shared_data
def test_aiperf_export(shared_data):
    path = shared_data(AIPERF)
    raw = json.loads(path.read_text())
    lp = load(path)
    assert lp.provenance.format == "aiperf-export"
    row = lp.frame.row(0, named=True)
    assert row["offered_load"] == raw["input_config"]["loadgen"]["concurrency"] == 1
    assert raw["benchmark_duration"]["unit"] == "sec"
    assert row["duration_s"] == raw["benchmark_duration"]["avg"]
    assert row["itl_ms_p99"] == raw["inter_chunk_latency"]["p99"]
    assert row["tpot_ms_mean"] == raw["inter_token_latency"]["avg"]
    assert raw["error_request_count"] is None and raw["error_summary"] == []
    assert row["n_errors"] == 0 and row["n_requests"] == row["n_ok"] == raw["request_count"]["avg"]
    assert lp.provenance.fields["n_errors"] == "derived"


@pytest.mark.shared_data
def test_aiperf_reasoning_model_says_which_first_token_ttft_is(shared_data):
    """gpt-oss-20b under AIPerf (a new user's case): time_to_first_token is the first thinking token (P50 82 ms), the
    first answer token comes at P50 3,687 ms (time_to_first_output_token), and 90 % of the output is reasoning
    (mean 255.67 of 283.48 tokens); the finding says so, and ttft=first_output reads the answer's."""
    from bearing_lib.common.errors import ParameterError

    path = shared_data(AIPERF)
    raw = json.loads(path.read_text())
    lp = load(path)
    (said,) = [x.message for x in lp.provenance.findings if x.code == "reasoning_tokens"]
    share = raw["reasoning_token_count"]["avg"] / raw["output_sequence_length"]["avg"]
    assert f"{share:.0%} of the output tokens are reasoning" in said and share == pytest.approx(0.90, abs=0.005)
    assert "--option ttft=first_output" in said and "time_to_first_output_token P50 3,687 ms" in said
    # the answer's first token exists only for requests that produced one: total_output_tokens over the mean
    # output_token_count (by hand 2,781 / 69.525 = 40 of 100; review finding)
    n_ans = raw["total_output_tokens"]["avg"] / raw["output_token_count"]["avg"]
    assert n_ans == pytest.approx(40.0) and "about 40 of 100 requests produced an answer token" in said
    assert lp.provenance.options["ttft"] == "first_token"
    assert lp.frame["ttft_ms_p95"][0] == raw["time_to_first_token"]["p95"]
    answer = load(path, ttft="first_output")
    assert answer.frame["ttft_ms_p95"][0] == raw["time_to_first_output_token"]["p95"]
    assert answer.frame["ttft_ms_p50"][0] == raw["time_to_first_output_token"]["p50"]
    assert answer.provenance.options["ttft"] == "first_output"
    with pytest.raises(ParameterError, match="option ttft='answer'"):
        load(path, ttft="answer")


def _variant(tmp_path, path, mutate):
    """SYNTHETIC variant of a real export, written by the test."""
    doc = json.loads(path.read_text())
    mutate(doc)
    out = tmp_path / "profile_export_genai_perf.json"
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.shared_data
def test_units_are_read_not_guessed(shared_data, tmp_path):
    src = shared_data(GENAI["flat"])
    raw = json.loads(src.read_text())

    def to_seconds(doc):
        lat = doc["request_latency"]
        doc["request_latency"] = {k: (v / 1000 if isinstance(v, float) else v) for k, v in lat.items()}
        doc["request_latency"]["unit"] = "s"

    row = load(_variant(tmp_path, src, to_seconds)).frame.row(0, named=True)
    assert row["latency_ms_p99"] == pytest.approx(raw["request_latency"]["p99"])

    def odd_unit(doc):
        doc["time_to_first_token"]["unit"] = "ticks"

    with pytest.raises(BadValueError, match="ticks"):
        load(_variant(tmp_path, src, odd_unit))

    def no_load(doc):
        doc["input_config"].pop("concurrency")
        doc["input_config"].pop("request_rate")

    with pytest.raises(UnsupportedVersionError) as exc:
        load(_variant(tmp_path, src, no_load))
    assert exc.value.tool == "NVIDIA GenAI-Perf" and any("concurrency" in m for m in exc.value.missing)


@pytest.mark.shared_data
def test_aiperf_multi_section_crlf_sweep_csv(shared_data):
    """TRANSCRIBED file (see module docstring)."""
    path = shared_data(SWEEP)
    data = path.read_bytes()
    assert b"\r\n\r\nBest Configurations\r\n" in data  # CRLF, blank-line separated sections
    text = data.decode()
    naive = list(csv.reader(io.StringIO(text)))
    table = list(csv.DictReader(io.StringIO(text.split("\r\n\r\n")[0])))
    assert len(table) == 12 and len(naive) > 13  # a plain reader runs into the later sections
    lp = load(path)
    f = lp.frame
    assert f["offered_load"].to_list() == [float(r["concurrency"]) for r in table]
    assert f["step"].to_list() == list(range(12)) and set(f["offered_load_unit"]) == {"concurrency"}
    assert f["latency_ms_mean"].to_list() == [float(r["request_latency_mean"]) for r in table]
    assert f["latency_ms_max"].to_list() == [float(r["request_latency_max"]) for r in table]
    assert f["ttft_ms_mean"].to_list() == [float(r["time_to_first_token_mean"]) for r in table]
    assert f["throughput_rps"].to_list() == [float(r["request_throughput_mean"]) for r in table]
    assert f["duration_s"].to_list() == [float(r["benchmark_duration_mean"]) for r in table]
    assert f["n_ok"].to_list() == [round(float(r["request_count_mean"])) for r in table]
    assert f["n_errors"].null_count() == 12 and f["ttft_ms_p99"].null_count() == 12
    goodput = lp.provenance.options["goodput_rps"]
    assert goodput["256.0"] == 17.50 and goodput["320.0"] == 0.66  # README: goodput collapses at 320
    assert lp.provenance.options["metadata"]["Sweep Parameters"] == "concurrency"
    assert lp.provenance.options["metadata"]["Number of Combinations"] == "12"


@pytest.mark.shared_data
def test_cli_inspect_genai_perf_and_aiperf(shared_data):
    runner = CliRunner()
    res = runner.invoke(app, ["inspect", str(shared_data(GENAI["nested"]))])
    assert res.exit_code == 0, res.output
    assert "genai-perf-export (NVIDIA GenAI-Perf, version not stated in the file)" in res.output
    assert "nested config" in res.output
    res = runner.invoke(app, ["inspect", str(shared_data(SWEEP))])
    assert res.exit_code == 0, res.output
    assert "aiperf-sweep-csv (NVIDIA AIPerf" in res.output and "#7: 320 concurrency" in res.output
