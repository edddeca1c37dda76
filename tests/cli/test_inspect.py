"""``bearing inspect`` through Typer's CliRunner, for every kind of input.

Expected figures come from the data README (Azure code 8,819 requests over 57.3 min;
Mooncake 12,031 requests, 37.4 % token hit rate) or from the small files written here.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app

runner = CliRunner()
SERVEGEN = Path(__file__).resolve().parents[1] / "fixtures" / "servegen" / "mm-image"


def _inspect(*args: str):
    return runner.invoke(app, ["inspect", *map(str, args)])


def _line(out: str, key: str) -> str:
    m = re.search(rf"^{key}:\s+(.*)$", out, re.M)
    assert m, f"no '{key}:' line in\n{out}"
    return m.group(1)


def test_inspect_azure(bundled):
    r = _inspect(bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"))
    assert r.exit_code == 0, r.output
    assert _line(r.output, "format").startswith("azure-llm-inference")
    assert _line(r.output, "rows") == "8,819"
    assert "(57.3 min)" in _line(r.output, "span")
    assert "2023-11-16T18:17:03+00:00" in _line(r.output, "span")
    assert _line(r.output, "fields") == "request_id, start_s, input_tokens, output_tokens"
    assert "timezone_assumed" in r.output
    assert _line(r.output, "sha256") == "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6"


def test_inspect_mooncake(bundled):
    r = _inspect(bundled("traces/mooncake-fast25/conversation_trace.jsonl"))
    assert r.exit_code == 0, r.output
    assert _line(r.output, "format").startswith("mooncake")
    assert _line(r.output, "rows") == "12,031"
    assert "3,537.0 s" in _line(r.output, "span") and "relative" in _line(r.output, "span")
    assert "cached_tokens" in _line(r.output, "derived")
    assert "token hit rate 37.4%" in r.output and "quantized_timestamps" in r.output


def test_inspect_servegen_folder(tmp_path):
    for p in SERVEGEN.iterdir():
        (tmp_path / p.name).write_bytes(p.read_bytes())
    r = _inspect(tmp_path)
    assert r.exit_code == 0, r.output
    assert _line(r.output, "format").startswith("servegen")
    assert _line(r.output, "kind") == "rates"
    assert _line(r.output, "rows") == "144"
    assert _line(r.output, "clients") == "1"
    assert "86,400 s (1.00 days) in 600 s windows" in _line(r.output, "span")
    with gzip.open(SERVEGEN / "chunk-25-trace.csv.gz", "rt") as fh:
        rates = [float(line.split(",")[1]) for line in fh]
    assert f"peak {max(rates):,.2f}" in _line(r.output, "rate")
    assert "text_tokens" in _line(r.output, "lengths")


def test_inspect_no_per_request_times(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("start_s,latency_ms,output_tokens\n,120.5,10\n,99.0,12\n")
    r = _inspect(p)
    assert r.exit_code == 0, r.output
    assert _line(r.output, "format").startswith("bearing-canonical")
    assert "no per-request times" in _line(r.output, "span")
    assert _line(r.output, "fields") == "latency_ms, output_tokens"
    assert "start_s" in _line(r.output, "absent")


def test_inspect_generic_with_yaml_mapping(tmp_path):
    data = tmp_path / "log.csv"
    data.write_text("id,sent_ms,took_s,code\na,1715299200000,0.25,200\nb,1715299201000,0.5,504\n")
    yml = tmp_path / "map.yaml"
    yml.write_text(
        "columns: {request_id: id, start_s: sent_ms, latency_ms: took_s, status: code}\n"
        "units: {sent_ms: ms, took_s: s}\nstatus_map: {'200': ok, '504': timeout}\n"
    )
    r = _inspect(data, "--format", "generic", "--mapping", yml)
    assert r.exit_code == 0, r.output
    assert _line(r.output, "format").startswith("generic")
    assert _line(r.output, "rows") == "2"
    # from the first start (t = 0) to the last end (t = 1 s + 0.5 s)
    assert "1.5 s" in _line(r.output, "span") and "2024-05-10T00:00:00+00:00" in _line(r.output, "span")
    assert set(_line(r.output, "status").split(", ")) == {"ok 1", "timeout 1"}
    assert "end_s" in _line(r.output, "derived")


def test_inspect_skip_bad_lines(bundled, tmp_path):
    lines = bundled("traces/mooncake-fast25/conversation_trace.jsonl").read_text().splitlines()[:3]
    p = tmp_path / "cut.jsonl"
    p.write_text("\n".join(lines) + "\n" + lines[0][:20])
    r = _inspect(p)
    assert r.exit_code == 1
    assert "line 4 is not valid JSON" in r.output
    r = _inspect(p, "--skip-bad-lines")
    assert r.exit_code == 0, r.output
    assert _line(r.output, "rows") == "3"
    assert "skipped_lines" in r.output and "1 line(s)" in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--format", "nope"], "unknown format 'nope'"),
        (["--format", "azure-llm-inference", "--skip-bad-lines"], "does not take option(s) ['skip_bad_lines']"),
        (["--format", "generic"], "needs a column mapping"),
    ],
)
def test_inspect_errors_exit_1(bundled, args, message):
    r = _inspect(bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"), *args)
    assert r.exit_code == 1
    assert message in r.output


def test_inspect_undetectable_file_lists_formats(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    r = _inspect(p)
    assert r.exit_code == 1
    for name in ("azure-llm-inference", "burstgpt", "mooncake", "servegen", "bearing-canonical", "generic"):
        assert f"- {name} (" in r.output
    assert "first line is 'a,b'" in r.output
