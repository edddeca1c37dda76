"""The KV-cache arithmetic checked against the engine's own gauge during a load step.

The plan's memory section predicts how many KV-cache tokens the running requests hold; vLLM
reports the share of its KV blocks in use (``kv_cache_usage``) and, in ``vllm:cache_config_info``,
the pool (``num_gpu_blocks`` × ``block_size`` tokens). In a step with ``R`` requests running on
average, each holding its prompt and, on average over its decode, half its output, the
predicted usage is::

    blocks per request = ceil((input_tokens + output_tokens / 2) / block_size)
    predicted usage    = R × blocks per request / num_gpu_blocks

and it is "right" within ``tolerance`` of the measured mean (DOMAIN.md's 10 % for the start-up
log; 25 % by default here, since the half-output term is itself an average). Prefix caching
shares blocks between requests, so the engine may use less than predicted: the statement says
so when the measured value is lower and a prefix-cache hit rate above zero was seen.

A pure function over plain numbers: the plan (``plan/memory.py``) calls it where metrics exist.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.data.servermetrics import ServerMetrics


@dataclass(frozen=True)
class KvMetricsCheck:
    """Predicted against measured KV-cache usage in one step."""

    step: int | None
    requests_running: float
    blocks_per_request: int
    num_gpu_blocks: int
    predicted_usage: float
    measured_usage: float
    rel_error: float
    right: bool
    statement: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


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


def check_kv_usage(
    *,
    requests_running: float,
    input_tokens: float,
    output_tokens: float,
    num_gpu_blocks: int,
    block_size: int,
    measured_usage: float,
    step: int | None = None,
    prefix_hit_rate: float | None = None,
    tolerance: float = 0.25,
) -> KvMetricsCheck:
    """Compare the predicted KV usage of ``requests_running`` requests with the measured gauge."""
    if num_gpu_blocks <= 0 or block_size <= 0:
        raise ParameterError(f"the KV pool must be positive (num_gpu_blocks {num_gpu_blocks}, block_size {block_size})")
    if requests_running < 0 or input_tokens < 0 or output_tokens < 0:
        raise ParameterError("requests and token counts must be >= 0")
    if not 0 < measured_usage <= 1:
        raise ParameterError(f"measured KV usage must be a fraction in (0, 1] (got {measured_usage})")
    blocks = math.ceil((input_tokens + output_tokens / 2) / block_size)
    predicted = requests_running * blocks / num_gpu_blocks
    err = (predicted - measured_usage) / measured_usage
    ok = abs(err) <= tolerance
    where = f"step {step}: " if step is not None else ""
    text = (f"{where}{requests_running:.4g} running × {blocks} blocks ({input_tokens:g} in + {output_tokens:g}/2 out, "
            f"{block_size}-token blocks) / {num_gpu_blocks:,} blocks = {predicted:.3f} predicted; the engine reported "
            f"{measured_usage:.3f} ({err:+.1%}): {'right' if ok else 'NOT right'} (tolerance {tolerance:.0%})")
    if not ok and err > 0 and prefix_hit_rate:
        text += f"; prefix caching (hit rate {prefix_hit_rate:.0%}) shares blocks, so less in use is expected"
    return KvMetricsCheck(step, requests_running, blocks, num_gpu_blocks, predicted, measured_usage, err, ok, text)
