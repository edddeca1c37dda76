"""Scaling on what binds: an autoscaler trigger on the resource the bottleneck names.

For LLM serving the binding resource is often the KV cache or the engine's queue, not the request
rate. Given the per-step server signals of the load test (``servers/metrics.step_signals``) and the
bottleneck at the limit step (``servers/bottleneck.py``), :func:`binding_trigger` picks the signal
(KV-1 / KV-2: ``kv_cache_usage``; CMP-1 / CMP-2: ``requests_waiting``) and the threshold: the
signal's ``high`` at the **last step that held the SLA** (the step before the limit step), which is
the value at the limit's load, with the bracket up to the first failing step's value (the limit
lies between those two steps, so the threshold does too). A queue that was empty at the last
passing step gives the threshold 1 (the smallest count an autoscaler can hold; any sustained queue
means the load is past the limit's). A KV figure already at or above 0.95 there gives no trigger
(the cache binds before the limit: scale on it earlier by hand). Other resources (GPU memory,
upstream) get no trigger, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from bearing_lib.common.unavailable import Unavailable

#: rule id -> (signal, PromQL metric of vLLM, per-pod custom metric for the HPA)
SIGNAL_OF_RULE = {
    "KV-1": ("kv_cache_usage", "vllm:kv_cache_usage_perc", "vllm_kv_cache_usage_perc"),
    "KV-2": ("kv_cache_usage", "vllm:kv_cache_usage_perc", "vllm_kv_cache_usage_perc"),
    "CMP-1": ("requests_waiting", "vllm:num_requests_waiting", "vllm_num_requests_waiting"),
    "CMP-2": ("requests_waiting", "vllm:num_requests_waiting", "vllm_num_requests_waiting"),
}


@dataclass(frozen=True)
class BindingTrigger:
    """A per-replica threshold on the binding signal, with its evidence."""

    rule: str
    resource: str
    signal: str
    metric: str
    pods_metric: str
    threshold: float
    passing_step: int
    passing_value: float | None
    failing_step: int
    failing_value: float | None
    evidence: str

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "resource": self.resource, "signal": self.signal, "metric": self.metric,
                "pods_metric": self.pods_metric, "threshold": self.threshold, "passing_step": self.passing_step,
                "passing_value": self.passing_value, "failing_step": self.failing_step,
                "failing_value": self.failing_value, "evidence": self.evidence}


def _high(table: pl.DataFrame, run_id: str | None, step: int, signal: str) -> float | None:
    f = table.filter((pl.col("step") == step) & (pl.col("signal") == signal))
    if run_id is not None:
        f = f.filter(pl.col("run_id") == run_id)
    return float(f["high"][0]) if f.height and f["high"][0] is not None else None


def binding_trigger(table: pl.DataFrame, bottleneck) -> BindingTrigger | Unavailable:  # noqa: ANN001 - Bottleneck
    """The trigger on the bottleneck's signal (module docstring), or why there is none."""
    if bottleneck.step is None or not bottleneck.fired:
        return Unavailable(f"no bottleneck named ({bottleneck.statement}): the autoscalers stay on the request rate")
    rule = bottleneck.fired[0]
    if rule.rule not in SIGNAL_OF_RULE:
        return Unavailable(f"the bottleneck is {rule.resource} (rule {rule.rule}): no engine signal to scale on; "
                           "the autoscalers stay on the request rate")
    signal, metric, pods = SIGNAL_OF_RULE[rule.rule]
    fail, passing = int(bottleneck.step), int(bottleneck.step) - 1
    v_pass = _high(table, bottleneck.run_id, passing, signal)
    v_fail = _high(table, bottleneck.run_id, fail, signal)
    if v_pass is None:
        return Unavailable(f"{signal} was not measured at step {passing}, the last step before the limit")
    if signal == "kv_cache_usage":
        if v_pass >= 0.95:
            return Unavailable(f"kv_cache_usage was already {v_pass:.3g} at step {passing}, before the limit: the "
                               "cache binds earlier than the limit's load")
        threshold, how = v_pass, f"{v_pass:.3g} at step {passing}"
    else:
        threshold = max(1.0, v_pass)
        how = (f"{v_pass:.4g} waiting at step {passing}" if v_pass >= 1 else
               f"the queue was empty ({v_pass:.3g}) at step {passing}: 1 waiting request per replica")
    bracket = f"; {v_fail:.4g} at step {fail}, the first past the limit" if v_fail is not None else ""
    evidence = (f"{rule.resource} binds (rule {rule.rule}); threshold = {signal} at the last step that held the SLA: "
                f"{how}{bracket}")
    return BindingTrigger(rule.rule, rule.resource, signal, metric, pods, threshold, passing, v_pass, fail, v_fail,
                          evidence)


__all__ = ["SIGNAL_OF_RULE", "BindingTrigger", "binding_trigger"]
