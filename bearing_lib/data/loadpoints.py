"""The canonical load-point table: one row per load step of an aggregate-only run.

Tools that keep only summaries (vLLM ``--save-result`` without details, GenAI-Perf and
AIPerf summaries, LLMPerf summaries, Locust stats, k6 summaries, inference-perf stage
reports ...) load into this table. Limit fitting accepts it beside request traces, with
the uncertainty a summary supports (no bootstrap: there are no requests to resample).

Columns: identity and load (``run_id``, ``step``, ``offered_load``, ``offered_load_unit``,
``model``), volume (``duration_s``, ``n_requests``, ``n_ok``, ``n_errors``), throughput
(``throughput_rps`` = completed ok requests per second, ``achieved_rate_rps`` = requests
sent per second when the tool reports it, ``input_tokens_per_s``, ``output_tokens_per_s``),
then, for each latency metric ``ttft_ms``, ``latency_ms``, ``tpot_ms``, ``itl_ms``, the
statistics ``mean``, ``p50``, ``p90``, ``p95``, ``p99``, ``max`` as ``<metric>_<stat>``
(e.g. ``ttft_ms_p99``), all in milliseconds, null where the tool did not report it.
``source_file`` names the file each row came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from bearing_lib.common.errors import SchemaError
from bearing_lib.data.provenance import Provenance

if TYPE_CHECKING:
    import pandas as pd

LATENCY_METRICS: tuple[str, ...] = ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")
LATENCY_STATS: tuple[str, ...] = ("mean", "p50", "p90", "p95", "p99", "max")

LOADPOINT_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "step": pl.Int64(),
    "offered_load": pl.Float64(),
    "offered_load_unit": pl.String(),
    "model": pl.String(),
    "duration_s": pl.Float64(),
    "n_requests": pl.Int64(),
    "n_ok": pl.Int64(),
    "n_errors": pl.Int64(),
    "throughput_rps": pl.Float64(),
    "achieved_rate_rps": pl.Float64(),
    "input_tokens_per_s": pl.Float64(),
    "output_tokens_per_s": pl.Float64(),
    **{f"{m}_{s}": pl.Float64() for m in LATENCY_METRICS for s in LATENCY_STATS},
    "source_file": pl.String(),
}


@dataclass
class LoadPointTable:
    """Aggregate-only load test: one row per (run, step), plus provenance."""

    frame: pl.DataFrame
    provenance: Provenance
    kind: ClassVar[str] = "loadpoints"

    def __len__(self) -> int:
        return self.frame.height

    def to_pandas(self) -> pd.DataFrame:
        """The frame as pandas."""
        return self.frame.to_pandas()


def conform_loadpoints(rows: list[dict[str, object]] | pl.DataFrame, *, path: str | None = None) -> pl.DataFrame:
    """Build a load-point frame with exactly the canonical columns from dicts or a frame.

    Unknown keys are an error (a loader bug); missing ones become nulls.
    """
    frame = pl.DataFrame(rows, infer_schema_length=None) if isinstance(rows, list) else rows
    extra = [c for c in frame.columns if c not in LOADPOINT_SCHEMA]
    if extra:
        raise SchemaError(f"internal: loader produced non-canonical load-point columns {extra}", path=path)
    exprs = [
        (pl.col(c).cast(t, strict=True) if c in frame.columns else pl.lit(None, dtype=t)).alias(c)
        for c, t in LOADPOINT_SCHEMA.items()
    ]
    out = frame.select(exprs) if frame.height else pl.DataFrame(schema=LOADPOINT_SCHEMA)
    return out.sort(["run_id", "step"], nulls_last=True, maintain_order=True)
