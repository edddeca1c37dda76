"""Scaling on what binds (servers/binding.py): the autoscalers' extra trigger on the bottleneck's signal.

By hand on step-signal tables, and on the real KubeCon NA 2025 inference-perf run `vllm` (engine
queue binds at stage 4), whose queue figures are read here from the raw stage JSON with `json`.
The HPA and ScaledObject carrying the trigger are tested with the exports (tests/ops/test_triggers.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from bearing_lib import load
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.servers.binding import binding_trigger
from bearing_lib.servers.bottleneck import Bottleneck, Fired, bottleneck_at_limit, find_limit_step
from bearing_lib.servers.metrics import step_signals

ROOT = Path(__file__).resolve().parents[2]
KUBECON = ROOT / "tests" / "fixtures" / "inference-perf" / "k8s-sigs-kubecon-na-2025" / "vllm"


def _table(signal: str, highs: dict[int, float]) -> pl.DataFrame:
    return pl.DataFrame({"run_id": ["r"] * len(highs), "step": list(highs), "signal": [signal] * len(highs),
                         "high": list(highs.values())})


def _bn(rule: str, resource: str, step: int = 4) -> Bottleneck:
    return Bottleneck("r", step, resource, "s", [Fired(rule, resource, "e")])


def test_thresholds_by_hand():
    kv = binding_trigger(_table("kv_cache_usage", {3: 0.62, 4: 0.97}), _bn("KV-1", "KV cache"))
    assert kv.threshold == 0.62 and kv.passing_step == 3 and kv.failing_value == 0.97
    assert kv.metric == "vllm:kv_cache_usage_perc" and "0.62 at step 3; 0.97 at step 4" in kv.evidence
    q = binding_trigger(_table("requests_waiting", {3: 3.0, 4: 40.0}), _bn("CMP-2", "engine queue"))
    assert q.threshold == 3.0 and q.pods_metric == "vllm_num_requests_waiting"
    full = binding_trigger(_table("kv_cache_usage", {3: 0.96, 4: 0.99}), _bn("KV-1", "KV cache"))
    assert isinstance(full, Unavailable) and "before the limit" in full.reason
    mem = binding_trigger(_table("gpu_memory_used_fraction", {3: 0.9, 4: 0.97}), _bn("MEM-1", "GPU memory"))
    assert isinstance(mem, Unavailable) and "request rate" in mem.reason


def raw_queue(stage: int) -> float:
    """Stage ``stage``'s mean engine queue, read from the raw stage JSON with ``json``."""
    doc = json.loads((KUBECON / f"stage_{stage}_prometheus_metrics.json").read_text())
    return float(doc["successes"]["queue_len"]["mean"])


def test_kubecon_engine_queue_binds_at_stage_4_and_gives_a_queue_trigger():
    ds = load(KUBECON, format="inference-perf-prometheus")
    table = step_signals(ds)
    step = find_limit_step(None, metrics_path=KUBECON, metrics_format="inference-perf-prometheus").step
    assert step == 4
    trig = binding_trigger(table, bottleneck_at_limit(table, limit_step=step))
    assert trig.rule == "CMP-2" and trig.signal == "requests_waiting"
    assert trig.passing_value == raw_queue(3) == 0.0 and trig.failing_value == raw_queue(4) == 210.0
    assert trig.threshold == 1.0 and "queue was empty" in trig.evidence


@pytest.mark.parametrize("rule", ["KV-2"])
def test_kv_from_preemptions_uses_the_kv_gauge(rule):
    t = binding_trigger(_table("kv_cache_usage", {6: 0.41, 7: 0.88}), _bn(rule, "KV cache", step=7))
    assert t.threshold == 0.41 and t.passing_step == 6
