"""The canonical load-point table: one row per load step of an aggregate-only run.

Tools that keep only summaries (vLLM ``--save-result`` without details, GenAI-Perf and
AIPerf summaries, LLMPerf summaries, Locust stats, k6 summaries, inference-perf stage
reports ...) load into this table. Limit fitting accepts it beside request traces, with
the uncertainty a summary supports (no bootstrap: there are no requests to resample).

Columns: identity and load (``run_id``, ``step``, ``offered_load``, ``offered_load_unit``,
``model``), volume (``duration_s``, ``n_requests``, ``n_ok``, ``n_errors``), throughput
(``throughput_rps`` = completed ok requests per second, ``achieved_rate_rps`` = requests
sent per second when the tool reports it, ``input_tokens_per_s``, ``output_tokens_per_s``), ``concurrency_mean``
(the mean number of requests in flight as the tool measured it, where it reports one; else null and the limits
take Little's law, completed rate × mean latency),
then, for each latency metric ``ttft_ms``, ``latency_ms``, ``tpot_ms``, ``itl_ms``, the
statistics ``mean``, ``p50``, ``p90``, ``p95``, ``p99``, ``max`` as ``<metric>_<stat>``
(e.g. ``ttft_ms_p99``), all in milliseconds, null where the tool did not report it.
``source_file`` names the file each row came from.

The **send window** of each load point (:class:`SendWindow`): ``send_window_s`` (first send to last send over
``n − 1`` intervals, scaled by ``n / (n − 1)`` so that ``n / send_window_s`` is the send rate; the drain after the
last send excluded), ``send_window_basis`` (``measured``, ``config`` or ``estimated``; null when unknown),
``send_window_method`` (how, in words), and ``duration_includes_drain`` (true when the tool's ``duration_s`` runs
on until the last reply, so that ``n / duration_s`` is below the sending rate even on a server that keeps up).
Every rate bearing derives from a load point reads them (``bearing_lib.limits.curves``;
docs/formats-loadtests-semantics.md, "Send windows").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

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
    "concurrency_mean": pl.Float64(),
    "send_window_s": pl.Float64(),
    "send_window_basis": pl.String(),
    "send_window_method": pl.String(),
    "duration_includes_drain": pl.Boolean(),
    **{f"{m}_{s}": pl.Float64() for m in LATENCY_METRICS for s in LATENCY_STATS},
    "source_file": pl.String(),
}


SendWindowBasis = Literal["measured", "config", "estimated"]
SEND_WINDOW_BASES: tuple[str, ...] = ("measured", "config", "estimated")
WindowCell = float | str | bool | None
"""A value of a send-window column in a load-point row (seconds, basis, method, drain flag)."""


@dataclass(frozen=True)
class SendWindow:
    """The period over which a tool sent one step's requests, first send to last send, and how it is known.

    ``seconds`` is scaled so that ``n / seconds`` is the send rate: ``(last − first) × n / (n − 1)`` from
    ``n`` send times, ``n / rate`` from a schedule, a configured duration as it stands.

    ``basis``: ``measured`` (the tool's own send times or its send-window field), ``config`` (from the tool's
    schedule: prompt count / request rate, a configured duration), ``estimated`` (derived from other figures,
    drain-free, ``method`` says how). ``method`` is the rule in words, with the tool's field names.

    Examples
    --------
    >>> w = SendWindow.of(200 / 16, "config", "num_prompts / request_rate")
    >>> (w.seconds, w.basis)
    (12.5, 'config')
    >>> SendWindow.of(None, "measured", "start_times") is None
    True
    """

    seconds: float
    basis: SendWindowBasis
    method: str

    def __post_init__(self) -> None:
        if self.basis not in SEND_WINDOW_BASES:
            raise SchemaError(f"internal: send window basis must be one of {SEND_WINDOW_BASES}, got {self.basis!r}")

    @classmethod
    def of(cls, seconds: float | None, basis: SendWindowBasis, method: str) -> SendWindow | None:
        """The window, or None when ``seconds`` is not a positive finite number (unknown)."""
        if seconds is None or not math.isfinite(seconds) or not seconds > 0:
            return None
        return cls(float(seconds), basis, method)

    def columns(self, *, includes_drain: bool | None = None) -> dict[str, WindowCell]:
        """The load-point / step columns of this window."""
        return {"send_window_s": self.seconds, "send_window_basis": self.basis, "send_window_method": self.method,
                "duration_includes_drain": includes_drain}


def window_columns(window: SendWindow | None, includes_drain: bool | None) -> dict[str, WindowCell]:
    """The four send-window columns of a row (nulls for an unknown window)."""
    if window is None:
        return {"send_window_s": None, "send_window_basis": None, "send_window_method": None,
                "duration_includes_drain": includes_drain}
    return window.columns(includes_drain=includes_drain)


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


__all__ = [
    "LATENCY_METRICS", "LATENCY_STATS", "LOADPOINT_SCHEMA", "SEND_WINDOW_BASES", "LoadPointTable", "SendWindow",
    "SendWindowBasis", "WindowCell", "conform_loadpoints", "window_columns",
]
