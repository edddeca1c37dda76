"""``bearing compare`` end to end: load tests and limits JSON in, JSON and a self-contained page out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.compare import Comparison

runner = CliRunner()
KUBECON = "loadtests/inference-perf/k8s-sigs-kubecon-na-2025"


@pytest.mark.shared_data
def test_compare_load_tests_writes_json_and_an_offline_page(shared_data, tmp_path):
    a, b = shared_data(f"{KUBECON}/vllm"), shared_data(f"{KUBECON}/vllm_v0_engine")
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    r = runner.invoke(app, ["compare", f"v1={a}", f"v0={b}", "--sla", "p90(ttft) <= 500ms", "--gpus", "1",
                            "--price-per-hour", "v1=2.5", "--price-per-hour", "v0=2.5", "--n-boot", "100",
                            "--json", str(out), "--html", str(page)])
    assert r.exit_code == 0, r.output
    c = Comparison.from_dict(json.loads(out.read_text()))
    assert {d.name for d in c.deployments} == {"v1", "v0"} and c.basis == "cost per 1M output tokens"
    assert c.answer[0] in r.output
    text = page.read_text()
    assert "vegaEmbed(" in text and c.deployments[0].name in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=\"http", text)  # nothing fetched from the network
    assert '"per_gpu_tps"' in text  # the chart's data are inline


@pytest.mark.shared_data
def test_compare_limits_json_says_the_interval_is_approximated(shared_data, tmp_path):
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load

    paths = []
    for name in ("vllm", "vllm_eagle"):
        res = fit_limits(load(shared_data(f"{KUBECON}/{name}")), "p90(ttft) <= 500ms", mixes="none", n_boot=50)
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(res.to_dict()))
        paths.append(str(p))
    out = tmp_path / "c.json"
    r = runner.invoke(app, ["compare", *paths, "--hardware", "same GKE node", "--json", str(out)])
    assert r.exit_code == 0, r.output
    c = Comparison.from_dict(json.loads(out.read_text()))
    assert all("log-normal" in d.uncertainty and "JSON" in d.uncertainty for d in c.deployments)
    p = c.pair("vllm", "vllm_eagle")
    assert p.basis == "req/s per instance" and p.limit_ratio is not None


def test_compare_needs_an_sla_for_load_tests_and_two_deployments(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    r = runner.invoke(app, ["compare", str(d), str(d)])
    assert r.exit_code == 1 and "SLA" in r.output
    r = runner.invoke(app, ["compare", str(tmp_path / "missing")])
    assert r.exit_code == 1 and "no such file" in r.output
    r = runner.invoke(app, ["compare", str(d), "--gpus", "a=1", "--gpus", "2"])
    assert r.exit_code == 1
    r = runner.invoke(app, ["compare", str(d), str(d), "--sla", "p99(ttft) <= 1s", "--estimator", "bayes"])
    assert r.exit_code == 1 and "--estimator" in r.output and "expected model or pooled, got 'bayes'" in r.output


def test_report_takes_deployments_to_compare_as_one_list_parameter(tmp_path, monkeypatch):
    """``bearing report --compare A --compare B`` reaches the report notebook as its declared ``compare`` list."""
    import papermill

    seen = {}

    def fake(notebook, out, parameters, **_):
        seen[notebook.rsplit("/", 1)[-1]] = dict(parameters)
        raise RuntimeError("stop here: only the parameters are checked")

    monkeypatch.setattr(papermill, "execute_notebook", fake)
    a, b = tmp_path / "a", tmp_path / "b"
    root = Path(__file__).resolve().parents[2]
    trace = root / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
    limits = root / "tests/fixtures/report/limits.json"
    inputs = ["-p", "limits_json", str(limits), "-p", "production_trace", str(trace)]
    r = runner.invoke(app, ["report", "--name", "cmp", "--reports-dir", str(tmp_path / "reports"),
                            "--compare", f"x={a}", "--compare", str(b),
                            *inputs])
    assert r.exit_code != 0, r.output  # the fake notebook stopped the run
    assert seen["weekly_report.ipynb"]["compare"] == [f"x={a}", str(b)]
    r = runner.invoke(app, ["report", "--name", "cmp2", "--reports-dir", str(tmp_path / "reports"),
                            "-p", "compare", "[c, d]", *inputs])
    assert seen["weekly_report.ipynb"]["compare"] == ["c", "d"]
