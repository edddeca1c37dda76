"""Aggregate production traffic: request rates per time window (not per request).

ServeGen publishes per-client rates in 600 s windows; such sources load into this
table, which the traffic profile reads like per-minute counts of a request trace.

Columns: ``client`` (String), ``window_start_s`` (Float64, seconds from the trace
start), ``window_s`` (Float64, window length), ``rate_rps`` (Float64, mean requests per
second in the window), ``cv`` (Float64, coefficient of variation of inter-arrival
times), ``pattern`` (String, fitted inter-arrival family), ``shape``, ``scale``
(Float64, its parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import polars as pl

from bearing_lib.data.provenance import Provenance

RATE_SCHEMA: dict[str, pl.DataType] = {
    "client": pl.String(),
    "window_start_s": pl.Float64(),
    "window_s": pl.Float64(),
    "rate_rps": pl.Float64(),
    "cv": pl.Float64(),
    "pattern": pl.String(),
    "shape": pl.Float64(),
    "scale": pl.Float64(),
}


@dataclass
class RateWindows:
    """Per-window request rates (a traffic profile, not requests), plus provenance.

    ``length_pmfs`` optionally maps ``client -> window_start_s -> field -> {value: prob}``
    for token-length distributions published beside the rates.
    """

    frame: pl.DataFrame
    provenance: Provenance
    length_pmfs: dict[str, dict[float, dict[str, dict[float, float]]]] = field(default_factory=dict)
    kind: ClassVar[str] = "rates"

    def __len__(self) -> int:
        return self.frame.height

    def aggregate(self) -> pl.DataFrame:
        """Total rate over clients per window: ``window_start_s``, ``window_s``, ``rate_rps``."""
        return (
            self.frame.group_by("window_start_s", "window_s")
            .agg(pl.col("rate_rps").sum())
            .sort("window_start_s")
        )
