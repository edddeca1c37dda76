"""Cost anomaly index: the share of compute spent on requests that did not deliver.

``index = compute(failed, timed-out or SLA-violating requests) / compute(all requests)``
per group (by default run x step x mix). It rises sharply near failure, before the
limit is crossed for good, so it is an early warning (docs/domain.md).

Compute model
-------------
* **Measured**: when the caller names a column of per-request busy/GPU time
  (``measured_column``), that time is the compute. The canonical trace has no such
  column today: ``latency_ms`` is wall time, including queueing and the time the
  request shared the batch with others, so it is *not* busy time and is never used.
* **Token model** (default): ``prefill_weight x (input_tokens - cached_tokens) +
  output_tokens``, in decode-token equivalents. Default ``prefill_weight = 1/8``: a
  prefill token is processed in parallel with the rest of the prompt (compute-bound,
  thousands of tokens per forward pass), a decode token costs one memory-bound forward
  pass shared by the batch; engine profiles put prefill throughput roughly an order of
  magnitude above per-sequence decode throughput, and 1/8 is a round value in that range.
  The index is a ratio, so only the relative weight matters; pass another weight when
  the engine's own prefill/decode throughput is known.
* Requests with no evidence of being processed (no first token and no output tokens,
  e.g. queue timeouts and rejections) count zero compute: they cost nothing on the GPU.
  A request that errors after prefill but reports no tokens is therefore not charged,
  so the index is a lower bound when such requests exist; ``n_uncharged`` counts them.
  Null token counts count as 0.

Which requests are wasted: ``status != "ok"`` or the caller's violation flag (a polars
boolean expression or column name, e.g. from the SLA object: the request's own latency
broke a per-request clause). Null flags count as not violating.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from bearing_lib.common.errors import ParameterError, SchemaError

DEFAULT_PREFILL_WEIGHT = 1.0 / 8.0


def compute_expr(prefill_weight: float = DEFAULT_PREFILL_WEIGHT, measured_column: str | None = None) -> pl.Expr:
    """Per-request compute in decode-token equivalents (or the measured column's unit)."""
    if measured_column is not None:
        return pl.col(measured_column).cast(pl.Float64).fill_null(0.0)
    processed = pl.col("ttft_ms").is_not_null() | (pl.col("output_tokens").fill_null(0) > 0)
    uncached = (pl.col("input_tokens").fill_null(0) - pl.col("cached_tokens").fill_null(0)).clip(lower_bound=0)
    tokens = prefill_weight * uncached.cast(pl.Float64) + pl.col("output_tokens").fill_null(0).cast(pl.Float64)
    return pl.when(processed).then(tokens).otherwise(0.0)


def cost_anomaly_index(
    requests: pl.DataFrame | pl.LazyFrame,
    violation: pl.Expr | str | None = None,
    *,
    by: Sequence[str] = ("run_id", "step", "mix"),
    prefill_weight: float = DEFAULT_PREFILL_WEIGHT,
    measured_column: str | None = None,
) -> pl.DataFrame:
    """Cost anomaly index per group.

    Parameters
    ----------
    requests
        Canonical request rows (``status``, ``input_tokens``, ``output_tokens``,
        ``cached_tokens``, ``ttft_ms``; plus the ``by`` columns that exist).
    violation
        Per-request SLA violation: a boolean polars expression or the name of a boolean
        column. None: only failed/timed-out requests count as wasted.
    by
        Grouping columns; those absent from the frame are skipped.
    prefill_weight
        Cost of one uncached prompt token relative to one output token.
    measured_column
        Column of measured per-request busy/GPU time; replaces the token model.

    Returns
    -------
    polars.DataFrame
        Per group: ``n_requests``, ``n_wasted``, ``n_uncharged``, ``compute_total``,
        ``compute_wasted``, ``cost_anomaly_index`` (null when no compute was spent),
        ``compute_model``.

    Examples
    --------
    >>> df = pl.DataFrame({"status": ["ok", "ok", "timeout"], "input_tokens": [800, 800, 800],
    ...                    "cached_tokens": [0, 0, 0], "output_tokens": [100, 100, None],
    ...                    "ttft_ms": [50.0, 900.0, None]})
    >>> cost_anomaly_index(df, pl.col("ttft_ms") > 500)["cost_anomaly_index"][0]
    0.5
    """
    if prefill_weight < 0:
        raise ParameterError(f"prefill_weight must be >= 0, got {prefill_weight}")
    lf = requests.lazy() if isinstance(requests, pl.DataFrame) else requests
    cols = lf.collect_schema().names()
    need = ["status"] + (
        [measured_column] if measured_column else ["input_tokens", "output_tokens", "cached_tokens", "ttft_ms"]
    )
    missing = [c for c in need if c not in cols]
    if missing:
        raise SchemaError(f"cost anomaly index needs column(s) {missing}; found {cols}")
    if isinstance(violation, str):
        if violation not in cols:
            raise SchemaError(f"violation column {violation!r} not in the requests; found {cols}")
        viol = pl.col(violation)
    elif violation is None:
        viol = pl.lit(False)
    else:
        viol = violation
    keys = [c for c in by if c in cols]
    model = (
        f"measured: {measured_column}"
        if measured_column
        else f"tokens: {prefill_weight:g} x (input - cached) + output (decode-token equivalents)"
    )
    processed = pl.col("ttft_ms").is_not_null() | (pl.col("output_tokens").fill_null(0) > 0)
    wasted = (pl.col("status") != "ok").fill_null(True) | viol.fill_null(False)
    lf = lf.with_columns(
        compute_expr(prefill_weight, measured_column).alias("_c"),
        wasted.alias("_w"),
        (pl.lit(False) if measured_column else ~processed & (pl.col("status") == "error")).alias("_u"),
    )
    aggs = [
        pl.len().alias("n_requests"),
        pl.col("_w").sum().cast(pl.Int64).alias("n_wasted"),
        pl.col("_u").sum().cast(pl.Int64).alias("n_uncharged"),
        pl.col("_c").sum().alias("compute_total"),
        pl.col("_c").filter(pl.col("_w")).sum().alias("compute_wasted"),
    ]
    out = (lf.group_by(keys, maintain_order=True).agg(aggs) if keys else lf.select(aggs)).collect()
    out = out.with_columns(
        pl.when(pl.col("compute_total") > 0)
        .then(pl.col("compute_wasted") / pl.col("compute_total"))
        .otherwise(None)
        .alias("cost_anomaly_index"),
        pl.lit(model).alias("compute_model"),
    )
    return out.sort(keys) if keys else out


@dataclass
class CostAnomalyStep:
    """The cost anomaly index of one step: wasted compute over all compute spent."""

    step: int
    offered_load: float | None = None
    value: float | None = None
    n_wasted: int | None = None


@dataclass
class CostAnomaly:
    """The cost anomaly index of a mix, step by step (the limits document's ``cost_anomaly_index``)."""

    by_step: list[CostAnomalyStep] = field(default_factory=list)
    compute_model: str | None = None
    wasted: str | None = None
    available: bool = True
    reason: str | None = None
