"""The binding signal's trigger in the exported autoscalers (ops/triggers.py, ops/exports.py).

On the real KubeCon NA 2025 inference-perf run `vllm` (engine queue binds at stage 4; the trigger itself is
tested in tests/servers/test_binding.py, whose raw-JSON queue reader is used here): the HPA and ScaledObject
carrying the trigger pass their validators, a user's ``--queue-target`` wins over it, and
``bearing export --server-metrics`` names the same trigger as the report's orchestration."""

from __future__ import annotations

from pathlib import Path

import yaml

from bearing_lib import load
from bearing_lib.ops.exports import ExportTarget, export, read_plan
from bearing_lib.servers.binding import binding_trigger
from bearing_lib.servers.bottleneck import bottleneck_at_limit, find_limit_step
from bearing_lib.servers.metrics import step_signals
from tests.servers.test_binding import KUBECON, raw_queue

ROOT = Path(__file__).resolve().parents[2]


def test_kubecon_engine_queue_gives_a_queue_trigger_that_validates(tmp_path):
    ds = load(KUBECON, format="inference-perf-prometheus")
    table = step_signals(ds)
    step = find_limit_step(None, metrics_path=KUBECON, metrics_format="inference-perf-prometheus").step
    trig = binding_trigger(table, bottleneck_at_limit(table, limit_step=step))
    assert step == 4 and trig.rule == "CMP-2" and trig.threshold == 1.0
    numbers = read_plan(ROOT / "tests" / "fixtures" / "report" / "plan.json")
    w = export(numbers, ["hpa", "keda"], tmp_path, ExportTarget(namespace="llm", binding=trig), check=True)
    keda = yaml.safe_load((tmp_path / "keda-scaledobject.yaml").read_text())
    hpa = yaml.safe_load((tmp_path / "hpa.yaml").read_text())
    assert {"type": "prometheus", "metricType": "AverageValue", "metadata": {
        "serverAddress": ExportTarget().prometheus_url, "query": 'sum(vllm:num_requests_waiting{namespace="llm"})',
        "threshold": "1"}} in keda["spec"]["triggers"]
    assert {"type": "Pods", "pods": {"metric": {"name": "vllm_num_requests_waiting"},
                                     "target": {"type": "AverageValue", "averageValue": "1000m"}}} \
        in hpa["spec"]["metrics"]
    for c in w.checks:
        assert c.ok in (True, None), c
    # the user's --queue-target wins over the bottleneck's queue threshold, and says so
    w2 = export(numbers, ["keda"], tmp_path / "q", ExportTarget(binding=trig, queue_target=5.0), check=False)
    assert sum("num_requests_waiting" in t["metadata"]["query"] for t in
               yaml.safe_load((tmp_path / "q" / "keda-scaledobject.yaml").read_text())["spec"]["triggers"]) == 1
    assert w2 is not None


def test_bearing_export_server_metrics_names_the_same_trigger_the_report_derives(tmp_path):
    """`bearing export --server-metrics` and the report's triggers share one orchestration
    (`ops.triggers.binding_part`): on the KubeCon `vllm` run the KEDA file scales on the waiting queue at the
    threshold read from the raw stage JSON (stage 3's queue 0 → 1 request, as in tests/servers/test_binding.py)."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app
    from bearing_lib.ops.triggers import binding_part

    plan = ROOT / "tests" / "fixtures" / "report" / "plan.json"
    r = CliRunner().invoke(app, ["export", str(tmp_path / "x"), "--plan", str(plan), "--format", "keda",
                                 "--server-metrics", str(KUBECON), "--metrics-format", "inference-perf-prometheus"])
    assert r.exit_code == 0, r.output
    assert "binding signal:" in r.output and "requests_waiting" in r.output
    keda = yaml.safe_load((tmp_path / "x" / "keda-scaledobject.yaml").read_text())
    queries = [t["metadata"]["query"] for t in keda["spec"]["triggers"] if t["type"] == "prometheus"]
    assert any("num_requests_waiting" in q for q in queries)
    trig = binding_part(load(KUBECON, format="inference-perf-prometheus"), None, metrics_path=str(KUBECON))
    assert trig.threshold == 1.0 and raw_queue(3) == 0.0 and trig.failing_value == raw_queue(4)
