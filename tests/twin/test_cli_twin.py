"""``bearing twin fit`` and ``bearing twin predict`` through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.loaders.canonical import write_trace
from tests.twin.conftest import oracle_trace

runner = CliRunner()
LMBENCH = Path(__file__).resolve().parents[2] / "data" / "loadtests" / "lmbenchmark-llm-d-exp2"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("twin")
    test = write_trace(oracle_trace("small", "prefix"), d / "test.parquet")
    out = d / "twin.json"
    r = runner.invoke(app, ["twin", "fit", str(test), "--sla", "p99(latency) <= 14s", "--json", str(out),
                            "--n-boot", "40"])
    assert r.exit_code == 0, r.output
    return d, test, out, r.output


def test_fit_writes_a_validated_twin(fitted):
    _, _, out, text = fitted
    doc = json.loads(out.read_text())
    assert doc["kind"] == "twin" and doc["validation"]["trusted"] is True
    names = [p["name"] for p in doc["params"]]
    assert names[:4] == ["prefill_base_ms", "prefill_ms_per_token", "decode_base_ms", "decode_ms_per_seq"]
    assert "validation: trusted" in text


def test_predict_for_a_mix_file_with_instances(fitted, tmp_path):
    _, _, twin, _ = fitted
    mixes = tmp_path / "mixes.yaml"
    mixes.write_text("rag:\n  input_tokens: {median: 3000, sigma: 0.5, min: 1024, max: 12000}\n"
                     "  output_tokens: {median: 250, sigma: 0.6, min: 16, max: 1024}\n")
    out = tmp_path / "pred.json"
    r = runner.invoke(app, ["twin", "predict", str(twin), "--mixes", str(mixes), "--sla", "p99(ttft) <= 3s",
                            "--instances", "2", "--draws", "2", "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    (p,) = doc["predictions"]
    assert doc["kind"] == "twin_predictions" and p["kind"] == "predicted" and p["q_ult"]["kind"] == "predicted"
    assert p["instances"] == 2 and p["q_ult"]["unit"] == "rps" and p["q_ult"]["basis"] == "offered"
    # the oracle's small server carries 5.25 rps of RAG per instance under this SLA (tests/oracle/truth.json)
    assert p["q_ult"]["value"] == pytest.approx(2 * 5.249, rel=0.15)
    assert "predicted limit for rag" in r.output


def test_predict_for_a_production_trace(fitted, tmp_path):
    d, test, twin, _ = fitted
    out = tmp_path / "pred.json"
    r = runner.invoke(app, ["twin", "predict", str(twin), "--production", str(test), "--sla", "p99(latency) <= 14s",
                            "--draws", "2", "--json", str(out)])
    assert r.exit_code == 0, r.output
    (p,) = json.loads(out.read_text())["predictions"]
    assert p["q_ult"]["value"] == pytest.approx(14.449, rel=0.10)  # truth.json: small/prefix


def test_predict_refuses_two_targets_and_a_bad_twin(fitted, tmp_path):
    _, test, twin, _ = fitted
    r = runner.invoke(app, ["twin", "predict", str(twin), "--production", str(test), "--tested-mix",
                            "--sla", "p99(ttft) <= 1s", "--json", str(tmp_path / "x.json")])
    assert r.exit_code == 1 and "exactly one of" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "twin", "source": 3}')
    r = runner.invoke(app, ["twin", "predict", str(bad), "--tested-mix", "--sla", "p99(ttft) <= 1s",
                            "--json", str(tmp_path / "x.json")])
    assert r.exit_code == 1 and str(bad) in r.output and "problem(s)" in r.output
    assert "Traceback" not in r.output


def test_fit_refuses_a_test_without_send_times(tmp_path):
    """The vLLM per-request arrays carry no send times (shared data README): no twin, a clear error."""
    import polars as pl

    tr = oracle_trace("small", "chat")
    no_times = tmp_path / "t.parquet"
    tr.frame.with_columns(pl.lit(None, pl.Float64).alias("start_s"), pl.lit(None, pl.Float64).alias("end_s")) \
        .write_parquet(no_times)
    r = runner.invoke(app, ["twin", "fit", str(no_times), "--sla", "p99(ttft) <= 1s", "--json",
                            str(tmp_path / "t.json")])
    assert r.exit_code == 1 and "start_s" in r.output and "Traceback" not in r.output


def test_fit_on_the_bundled_lmbenchmark_short_input_sweep(tmp_path):
    """A real sweep (vLLM, Llama-3-70B, 2 replicas): the twin replays every step's throughput within 1 %."""
    from bearing_lib.loaders import load_trace
    from bearing_lib.twin import calibrate, validate

    tr = load_trace(LMBENCH / "vllm-70b-2replicas")
    part = tr.frame.filter(tr.frame["run_id"].str.ends_with("short_input"))
    from bearing_lib.data.trace import RequestTrace

    t = RequestTrace(frame=part, provenance=tr.provenance)
    tw = calibrate(t, n_boot=40)
    v = validate(tw, t, "p99(ttft) <= 2s")
    assert v.trusted, v.reasons
    for r in v.rows:
        assert r.predicted["throughput_rps"] == pytest.approx(r.measured["throughput_rps"], rel=0.01)
    # the sweep never saturated the service: no ceiling is identified, and the twin says so
    assert not tw.param("max_num_seqs").identified and not tw.param("kv_budget_tokens").identified


@pytest.mark.shared_data
def test_fit_refuses_the_real_vllm_per_request_sweep_without_send_times(shared_data, tmp_path):
    """vLLM benchmark_serving ~v0.8 keeps ttfts/itls per request but no send times (its README)."""
    sweep = shared_data("loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/01_tp8_pp1")
    r = runner.invoke(app, ["twin", "fit", str(sweep), "--sla", "p99(ttft) <= 1s", "--json", str(tmp_path / "t.json")])
    assert r.exit_code == 1, r.output
    assert "start_s" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "t.json").exists()


def test_fit_with_engine_settings(fitted, tmp_path):
    _, test, _, _ = fitted
    out = tmp_path / "twin.json"
    r = runner.invoke(app, ["twin", "fit", str(test), "--sla", "p99(latency) <= 14s", "--json", str(out),
                            "--n-boot", "0", "--engine", "max_num_seqs=64", "--engine", "kv_policy=reserve"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    ms = next(p for p in doc["params"] if p["name"] == "max_num_seqs")
    # the prefix test on the small server is KV-bound and never fills its 64 slots: given, they are used
    assert ms["value"] == 64 and ms["identified"] is True and ms["note"].startswith("given")
    assert doc["given"] == {"max_num_seqs": 64.0, "kv_policy": "reserve"} and doc["kv_policy"] == "reserve"
    bad = runner.invoke(app, ["twin", "fit", str(test), "--sla", "p99(latency) <= 14s", "--json", str(out),
                              "--engine", "max_num_seqs"])
    assert bad.exit_code != 0 and "NAME=VALUE" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize(("doc", "said"), [
    ({"hello": [1, 2, 3]}, "not a bearing twin document (no `kind`); expected kind 'twin' with the keys params, "
                           "draws, test_mix (found keys: hello)"),
    ({"schema": "bearing.limits/2", "mixes": []}, "a bearing.limits/2 document, not a bearing twin document"),
    ({"kind": "twin_predictions", "predictions": []}, "not a bearing twin document: kind is 'twin_predictions'"),
])
def test_predict_refuses_a_document_of_another_kind_as_such(tmp_path, doc, said):
    """A JSON file that is not a twin is named for what it is before any field is checked (no list of
    'Field required' problems)."""
    f = tmp_path / "other.json"
    f.write_text(json.dumps(doc))
    res = CliRunner().invoke(app, ["twin", "predict", str(f), "--tested-mix", "--sla", "p99(ttft) <= 1s",
                                   "--json", str(tmp_path / "out.json")])
    assert res.exit_code != 0
    text = " ".join(res.output.split())
    assert said in text
    assert "Field required" not in text
    assert "Traceback" not in text
