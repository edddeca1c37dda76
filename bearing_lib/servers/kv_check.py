"""The KV-cache arithmetic checked against the engine's own gauge during a load step.

The plan's memory section predicts how many KV-cache tokens the running requests hold; vLLM
reports the share of its KV blocks in use (``kv_cache_usage``) and, in ``vllm:cache_config_info``,
the pool (``num_gpu_blocks`` × ``block_size`` tokens). In a step with ``R`` requests running on
average, each holding its prompt and, on average over its decode, half its output, the
predicted usage is::

    blocks per request = ceil((input_tokens + output_tokens / 2) / block_size)
    predicted usage    = R × blocks per request / num_gpu_blocks

and it is "right" within ``tolerance`` of the measured mean (docs/domain.md's 10 % for the start-up
log; 25 % by default here, since the half-output term is itself an average). Prefix caching
shares blocks between requests, so the engine may use less than predicted: the statement says
so when the measured value is lower and a prefix-cache hit rate above zero was seen.

The arithmetic itself (:class:`~bearing_lib.plan.memory.KvMetricsCheck`,
:func:`~bearing_lib.plan.memory.check_kv_usage`, :func:`~bearing_lib.plan.memory.kv_metrics_check`)
lives in the plan (``plan/memory.py``), which must not read server metrics itself: this module
turns server metrics into what the check needs (:class:`KvGauge`, built by :func:`kv_gauge`: the
pool and the step means) and the caller hands that to the plan (``CapacityPlan.build(kv_gauge=...)``).
The servers wing stands below the plan, so the plan imports :class:`KvGauge` from here, never the
other way round.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.data.servermetrics import ServerMetrics


@dataclass(frozen=True)
class KvGauge:
    """What the engine reported about its KV cache during the load test, as the KV check needs it: the pool
    (``num_gpu_blocks`` × ``block_size`` tokens, vLLM's ``cache_config_info``; ``pool_reason`` says why it is
    unknown) and, per load step, the means of its signals (``requests_running``, ``kv_cache_usage``,
    ``prefix_cache_hit_rate``). Built from server metrics by :func:`kv_gauge`; read by the plan's KV check
    (:func:`bearing_lib.plan.memory.kv_metrics_check`)."""

    num_gpu_blocks: int | None
    block_size: int | None
    step_means: dict[int, dict[str, float]]
    pool_reason: str | None = None


def kv_pool(metrics: ServerMetrics) -> tuple[int, int]:
    """(num_gpu_blocks, block_size) from vLLM's ``cache_config_info`` labels (the last sample)."""
    f = metrics.frame.filter(pl.col("metric") == "vllm:cache_config_info")
    if f.height == 0:
        raise InsufficientDataError("no vllm:cache_config_info sample: the KV pool size is unknown")
    labels = dict(kv.split("=", 1) for kv in (f["labels"][-1] or "").split(",") if "=" in kv)
    try:
        return int(labels["num_gpu_blocks"]), int(labels["block_size"])
    except (KeyError, ValueError):
        raise InsufficientDataError(
            f"vllm:cache_config_info has no usable num_gpu_blocks/block_size labels (found {sorted(labels)})"
        ) from None


def kv_gauge(metrics: ServerMetrics) -> KvGauge:
    """What the engine reported about its KV cache, for the plan's KV check: the pool (:func:`kv_pool`; the
    reason when it is unknown) and each step's mean of every signal (:func:`bearing_lib.servers.metrics.step_signals`).
    ``metrics`` must have steps (aligned, or per-stage reports)."""
    from bearing_lib.servers.metrics import step_signals

    try:
        blocks, block_size, why = *kv_pool(metrics), None
    except InsufficientDataError as exc:
        return KvGauge(None, None, {}, str(exc))
    by_step: dict[int, dict[str, float]] = {}
    for r in step_signals(metrics).iter_rows(named=True):
        by_step.setdefault(int(r["step"]), {})[r["signal"]] = r["mean"]
    return KvGauge(blocks, block_size, by_step, why)


__all__ = ["KvGauge", "kv_gauge", "kv_pool"]
