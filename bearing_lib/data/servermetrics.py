"""Server-side metrics: the canonical long table every metrics input is loaded into.

What the serving engine and the GPUs said while the load test ran: the ``/metrics`` of vLLM,
llama.cpp's ``llama-server``, SGLang and TGI (running and waiting requests, KV-cache usage,
preemptions, prefix-cache hits, token counters; one map per engine in :data:`METRIC_NAMES`,
documented with its sources in docs/formats-server-metrics.md), DCGM's GPU utilisation and
memory, the GPU telemetry AIPerf and GenAI-Perf export (``bearing_lib.loaders.gpu_telemetry``), and
inference-perf's per-stage summaries of the same. One row per
sample (or per window statistic), columns:

- ``run_id`` (String), ``step`` (Int64; the load step when the file says so, e.g. an
  inference-perf stage, else null until :func:`bearing_lib.servers.metrics.align_to_steps`
  assigns one by time);
- ``time_s`` (Float64; sample time in epoch seconds, or seconds from the file's own origin;
  null for a window statistic that has no instant);
- ``signal`` (String; the canonical name below, null for a metric bearing does not map);
- ``metric`` (String; the name as written in the file), ``stat`` (String; ``sample`` for a
  point sample, else the window statistic the tool reported: ``mean``, ``median``, ``p90``,
  ``p99``, ``rate``);
- ``value`` (Float64, in the signal's canonical unit below), ``instance`` and ``gpu``
  (String; pod/instance and GPU labels when present), ``labels`` (String; the other labels as
  ``k=v`` pairs, sorted), ``source_row`` (Int64; line or record number in the file).

Canonical signals and units (:data:`SIGNALS`): fractions are 0..1 (vLLM's
``gpu_cache_usage_perc`` already is one, despite its name; DCGM's ``GPU_UTIL`` is percent
and is divided by 100), memory in bytes (DCGM's ``FB_USED`` is MiB), counters as cumulative
totals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from bearing_lib.common.errors import SchemaError
from bearing_lib.data.provenance import Provenance

METRIC_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "step": pl.Int64(),
    "time_s": pl.Float64(),
    "signal": pl.String(),
    "metric": pl.String(),
    "stat": pl.String(),
    "value": pl.Float64(),
    "instance": pl.String(),
    "gpu": pl.String(),
    "labels": pl.String(),
    "source_row": pl.Int64(),
}


@dataclass(frozen=True)
class Signal:
    """A canonical server signal: its unit, whether it is a counter, what it means."""

    name: str
    unit: str
    counter: bool
    meaning: str


SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in (
        Signal("requests_running", "requests", False, "requests the engine is running (in the batch)"),
        Signal("requests_waiting", "requests", False, "requests queued in the engine, not yet scheduled"),
        Signal("requests_swapped", "requests", False, "requests swapped out to CPU memory"),
        Signal("kv_cache_usage", "fraction", False, "share of the GPU KV-cache blocks in use (0..1)"),
        Signal("preemptions_total", "count", True, "cumulative preemptions (KV cache ran out mid-request)"),
        Signal("prefix_cache_hit_rate", "fraction", False, "prefix-cache hit rate (0..1)"),
        Signal("prefix_cache_queries_total", "tokens", True, "cumulative prefix-cache queries (tokens)"),
        Signal("prefix_cache_hits_total", "tokens", True, "cumulative prefix-cache hits (tokens)"),
        Signal("requests_completed_total", "requests", True, "cumulative requests finished by the engine"),
        Signal("prompt_tokens_total", "tokens", True, "cumulative prompt (prefill) tokens processed"),
        Signal("generation_tokens_total", "tokens", True, "cumulative generated (decode) tokens"),
        Signal("gpu_utilization", "fraction", False, "GPU busy share (DCGM GPU_UTIL / 100)"),
        Signal("gpu_memory_used_bytes", "bytes", False, "GPU frame-buffer memory in use"),
        Signal("gpu_memory_free_bytes", "bytes", False, "GPU frame-buffer memory free"),
        Signal("gpu_memory_total_bytes", "bytes", False, "GPU frame-buffer memory in all"),
        Signal("gpu_memory_used_fraction", "fraction", False, "GPU memory used / (used + free)"),
        Signal("gpu_power_watts", "W", False, "GPU power draw"),
    )
}

MIB = 1024 * 1024


@dataclass(frozen=True)
class Mapping_:
    """How one metric name in a file becomes a canonical signal: ``value * scale``."""

    signal: str
    scale: float = 1.0


METRIC_NAMES: dict[str, Mapping_] = {
    # vLLM /metrics (V0 and V1 names; the V1 engine renamed the KV-cache gauge)
    "vllm:num_requests_running": Mapping_("requests_running"),
    "vllm:num_requests_waiting": Mapping_("requests_waiting"),
    "vllm:num_requests_swapped": Mapping_("requests_swapped"),
    "vllm:gpu_cache_usage_perc": Mapping_("kv_cache_usage"),
    "vllm:kv_cache_usage_perc": Mapping_("kv_cache_usage"),
    "vllm:num_preemptions_total": Mapping_("preemptions_total"),
    "vllm:num_preemptions": Mapping_("preemptions_total"),
    "vllm:gpu_prefix_cache_hit_rate": Mapping_("prefix_cache_hit_rate"),
    "vllm:gpu_prefix_cache_queries_total": Mapping_("prefix_cache_queries_total"),
    "vllm:gpu_prefix_cache_hits_total": Mapping_("prefix_cache_hits_total"),
    "vllm:prefix_cache_queries_total": Mapping_("prefix_cache_queries_total"),
    "vllm:prefix_cache_hits_total": Mapping_("prefix_cache_hits_total"),
    "vllm:request_success_total": Mapping_("requests_completed_total"),
    "vllm:prompt_tokens_total": Mapping_("prompt_tokens_total"),
    "vllm:generation_tokens_total": Mapping_("generation_tokens_total"),
    # llama.cpp llama-server (ggml-org/llama.cpp tools/server/server-context.cpp, server_routes::get_metrics;
    # before the split tools/server/server.cpp and examples/server/server.cpp, handle_metrics): every name is
    # "llamacpp:" + the definition's "name". requests_processing = busy slots (n_processing_slots), bounded by
    # --parallel; requests_deferred = tasks deferred because no slot was free (n_tasks_deferred), the waiting
    # queue. kv_cache_usage_ratio (used cells / n_ctx, "1 means 100 percent usage") is in older builds only.
    "llamacpp:requests_processing": Mapping_("requests_running"),
    "llamacpp:requests_deferred": Mapping_("requests_waiting"),
    "llamacpp:kv_cache_usage_ratio": Mapping_("kv_cache_usage"),
    "llamacpp:prompt_tokens_total": Mapping_("prompt_tokens_total"),
    "llamacpp:tokens_predicted_total": Mapping_("generation_tokens_total"),
    # SGLang (sgl-project/sglang python/sglang/srt/metrics/collector.py: SchedulerMetricsCollector,
    # TokenizerMetricsCollector). token_usage = used KV-pool tokens / max_total_num_tokens (0..1); a retraction
    # is SGLang's preemption (a running decode request sent back to the queue when the KV pool runs out).
    "sglang:num_running_reqs": Mapping_("requests_running"),
    "sglang:num_queue_reqs": Mapping_("requests_waiting"),
    "sglang:token_usage": Mapping_("kv_cache_usage"),
    "sglang:num_retracted_requests_total": Mapping_("preemptions_total"),
    "sglang:cache_hit_rate": Mapping_("prefix_cache_hit_rate"),
    "sglang:cached_tokens_total": Mapping_("prefix_cache_hits_total"),
    "sglang:num_requests_total": Mapping_("requests_completed_total"),
    "sglang:prompt_tokens_total": Mapping_("prompt_tokens_total"),
    "sglang:generation_tokens_total": Mapping_("generation_tokens_total"),
    # Hugging Face TGI router (huggingface/text-generation-inference backends/v3/src/queue.rs, backend.rs, lib.rs;
    # router/src/server.rs). The KV share is derived (DERIVED below): the batch's token reservation over the
    # warm-up's max_batch_total_tokens.
    "tgi_queue_size": Mapping_("requests_waiting"),
    "tgi_batch_current_size": Mapping_("requests_running"),
    "tgi_request_success": Mapping_("requests_completed_total"),
    # DCGM exporter field names
    "DCGM_FI_DEV_GPU_UTIL": Mapping_("gpu_utilization", 0.01),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": Mapping_("gpu_utilization"),
    "DCGM_FI_DEV_FB_USED": Mapping_("gpu_memory_used_bytes", MIB),
    "DCGM_FI_DEV_FB_FREE": Mapping_("gpu_memory_free_bytes", MIB),
    "DCGM_FI_DEV_FB_TOTAL": Mapping_("gpu_memory_total_bytes", MIB),
    "DCGM_FI_DEV_POWER_USAGE": Mapping_("gpu_power_watts"),
}
"""File metric names bearing maps to :data:`SIGNALS` (others load with ``signal`` null)."""


ENGINES: dict[str, str] = {"vllm:": "vLLM", "llamacpp:": "llama.cpp", "sglang:": "SGLang", "tgi_": "TGI",
                           "DCGM_FI_": "DCGM"}
"""Metric-name prefixes and the engine (or exporter) that writes them."""


@dataclass(frozen=True)
class Derived:
    """A signal computed from two metrics of one scrape: ``numerator / denominator``."""

    signal: str
    numerator: str
    denominator: str
    meaning: str


DERIVED: tuple[Derived, ...] = (
    Derived("kv_cache_usage", "tgi_batch_current_max_tokens", "tgi_batch_max_total_tokens",
            "TGI: the running batch's token reservation (batch.max_tokens) over max_batch_total_tokens, the KV "
            "token budget the router admits new requests against (backends/v3/src/backend.rs, lib.rs)"),
)
"""Signals an engine gives only as a ratio of two of its metrics."""


def engine_of(name: str) -> str | None:
    """The engine whose metric-name prefix ``name`` carries (None when none is known)."""
    return next((e for p, e in ENGINES.items() if name.startswith(p)), None)


def map_metric(name: str) -> Mapping_ | None:
    """The canonical mapping of a metric name (Prometheus names lose a ``_total`` suffix when
    a client library strips it, so both spellings are looked up)."""
    return METRIC_NAMES.get(name) or METRIC_NAMES.get(f"{name}_total")


@dataclass
class ServerMetrics:
    """Server-side metric samples (see module docstring), plus provenance."""

    frame: pl.DataFrame
    provenance: Provenance
    kind: ClassVar[str] = "metrics"

    def __len__(self) -> int:
        return self.frame.height

    def signals(self) -> list[str]:
        """Canonical signals present, sorted."""
        return sorted(s for s in self.frame["signal"].unique().to_list() if s is not None)


def conform_metrics(rows: list[dict[str, object]] | pl.DataFrame, *, path: str | None = None) -> pl.DataFrame:
    """A frame with exactly the :data:`METRIC_SCHEMA` columns (missing ones null), in schema order."""
    frame = pl.DataFrame(rows, infer_schema_length=None) if isinstance(rows, list) else rows
    extra = [c for c in frame.columns if c not in METRIC_SCHEMA]
    if extra:
        raise SchemaError(f"internal: non-canonical metric columns {extra}", path=path)
    if frame.height == 0:
        return pl.DataFrame(schema=METRIC_SCHEMA)
    return frame.select(
        [
            (pl.col(c).cast(t, strict=True) if c in frame.columns else pl.lit(None, dtype=t)).alias(c)
            for c, t in METRIC_SCHEMA.items()
        ]
    )


def derive_signals(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows for the :data:`DERIVED` signals: each numerator sample over the denominator of the same run, time
    and instance (a zero or missing denominator gives no row). The metric column names both, ``a/b``."""
    rows: list[dict[str, object]] = []
    for d in DERIVED:
        den = {
            (r["run_id"], r["time_s"], r["instance"]): r["value"]
            for r in frame.filter((pl.col("metric") == d.denominator) & (pl.col("stat") == "sample")).iter_rows(
                named=True
            )
        }
        if not den:
            continue
        for r in frame.filter((pl.col("metric") == d.numerator) & (pl.col("stat") == "sample")).iter_rows(named=True):
            total = den.get((r["run_id"], r["time_s"], r["instance"]))
            if total:
                rows.append({**r, "signal": d.signal, "metric": f"{d.numerator}/{d.denominator}",
                             "value": r["value"] / total})
    return conform_metrics(rows) if rows else pl.DataFrame(schema=METRIC_SCHEMA)
