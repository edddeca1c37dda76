"""``bearing limits`` on the bundled LMBench sweep (real, Apache-2.0) and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from bearing_lib.cli.main import app

DATA = Path(__file__).resolve().parents[2] / "data" / "loadtests" / "lmbenchmark-llm-d-exp2" / "vllm-70b-2replicas"
runner = CliRunner()


def test_limits_cli_writes_json_and_table(tmp_path):
    out = tmp_path / "limits.json"
    sla_file = tmp_path / "sla.yaml"
    sla_file.write_text("sla:\n  - error_rate <= 1%\n")
    res = runner.invoke(app, ["limits", str(DATA), "--sla", "p99(ttft) <= 2s", "--sla-file", str(sla_file),
                              "--mixes", "none", "--n-boot", "50", "--json", str(out)])
    assert res.exit_code == 0, res.output
    d = json.loads(out.read_text())
    assert [c["text"] for c in d["sla"]] == ["p99(ttft) <= 2s", "error_rate <= 1%"]
    runs = {m["run_id"]: m for m in d["mixes"]}
    assert runs["vllm-70b-2replicas/short_input"]["q_ult"]["statement"] == "≥ 10 rps (never failed)"
    assert d["conditions"]["sources"][0]["sha256"]
    assert "≥ 10 rps (never failed)" in res.output and "wrote" in res.output


def test_limits_cli_bad_sla_exits_1(tmp_path):
    res = runner.invoke(app, ["limits", str(DATA), "--sla", "p99(ttft) <= 2", "--json", str(tmp_path / "x.json")])
    assert res.exit_code == 1
    assert "error: SLA clause 'p99(ttft) <= 2'" in res.output and "no unit" in res.output
    assert not (tmp_path / "x.json").exists()


def test_limits_cli_needs_an_sla(tmp_path):
    res = runner.invoke(app, ["limits", str(DATA), "--json", str(tmp_path / "x.json")])
    assert res.exit_code == 1 and "no SLA given" in res.output


def test_limits_cli_bad_mixes(tmp_path):
    res = runner.invoke(app, ["limits", str(DATA), "--sla", "p99(ttft) <= 2s", "--mixes", "nope.yaml",
                              "--json", str(tmp_path / "x.json")])
    assert res.exit_code == 1 and "--mixes" in res.output
