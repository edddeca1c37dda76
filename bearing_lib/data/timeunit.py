"""Is a trace's relative clock in seconds? The unit check at the edge for production traces.

bearing's canonical ``start_s``/``end_s`` are seconds. For the tools' own formats the loader
knows the unit from the tool's source (Mooncake's ``timestamp`` is milliseconds, BurstGPT's
seconds, Azure's a date); for a **canonical** file and a **generic** table without a declared
unit it is the user's word. A clock in milliseconds from zero read as seconds makes a one-hour
trace span 972 h: the target load drops 1000-fold and the factor of safety comes out 745. An
epoch clock in the wrong unit is already refused (it is no date between 2000 and 2100,
:func:`bearing_lib.data.trace.validate`); a relative clock has no such anchor, and a uniform
rescaling of arrival times is still a valid arrival process, so the unit can only be judged
against what requests to an inference service look like. The rule (:func:`check_clock`):

1. **Durations** (decisive): where a request has both ``end_s`` and a ``latency_ms`` the source
   gave (not one derived from the other), ``(end_s - start_s) x 1000 / latency_ms`` is 1 on a
   seconds clock. A median ratio of about 1000 (500-2000) means the clock is milliseconds
   (about 10^6: microseconds); the trace is refused.
2. **Gaps** (a suspicion the user settles): with at least :data:`MIN_REQUESTS` requests, the
   median gap between consecutive request starts is at least :data:`SUSPECT_MEDIAN_GAP_S`
   (10 s: fewer than 6 requests in a typical minute, where a per-minute peak says little anyway).
   Read as milliseconds the same trace is then a service of a request every 10 ms or more, which
   is what production chat traffic looks like (the Azure conversation trace: median gap 0.118 s,
   19,366 requests in 58.4 min; as milliseconds read as seconds: 118 s and 972.7 h). The trace
   is refused with both readings side by side; the user says which is right.

The user settles it with the loader's unit: ``--production-option time_unit=ms`` (or ``s`` to
confirm seconds) for a canonical file, ``units: {column: ms}`` (or ``s``) in a generic mapping.
A declared unit is never second-guessed. What is not caught: a busy service's milliseconds
(a median gap under 10 ms reads as under 10 s) without end times and latencies to compare.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from bearing_lib.common.errors import BadValueError

MIN_REQUESTS = 100
SUSPECT_MEDIAN_GAP_S = 10.0
MIN_TIMED = 20  # requests with end_s and a source latency needed for the duration ratio
UNIT_RATIOS: tuple[tuple[str, float], ...] = (("ms", 1e3), ("us", 1e6), ("ns", 1e9))
USER_CLOCK_FORMATS = ("bearing-canonical", "generic")
"""Formats whose time unit is the user's declaration, not the tool's (the only ones checked)."""


@dataclass(frozen=True)
class ClockCheck:
    """What the relative clock of one trace looks like (``verdict`` ``seconds``, ``suspect`` or ``not_seconds``)."""

    source: str
    column: str
    format: str
    n_requests: int
    span_s: float
    median_gap_s: float | None
    duration_ratio: float | None
    """Median of ``(end_s - start_s) x 1000 / latency_ms`` (1 on a seconds clock); None without both."""
    verdict: Literal["seconds", "suspect", "not_seconds"]
    looks_like: str | None = None
    """The unit the evidence points to (``ms``, ``us``, ``ns``), or None."""

    @property
    def message(self) -> str:
        """The refusal: file, column, both readings, and how to load it right."""
        if self.format == "generic":
            fix = (f"declare the unit in the mapping: units: {{{self.column}: ms}} if they are milliseconds, "
                   f"units: {{{self.column}: s}} if they are seconds")
        else:
            fix = ("if they are milliseconds, load the trace with time_unit=ms (bearing report --production-option "
                   "time_unit=ms); if they are seconds, say so with time_unit=s")
        if self.verdict == "not_seconds":
            factor = dict(UNIT_RATIOS)[self.looks_like or "ms"]
            how = (f"units: {{{self.column}: {self.looks_like}}} in the mapping" if self.format == "generic" else
                   f"time_unit={self.looks_like} (bearing report --production-option time_unit={self.looks_like})")
            return (f"the start times are not seconds: each request's end_s - start_s is "
                    f"{self.duration_ratio:,.0f} x its latency_ms (1 on a seconds clock), so the clock counts "
                    f"{self.looks_like}; read as seconds the trace would span {self.span_s / 3600:,.2f} h, in "
                    f"{self.looks_like} {self.span_s / factor / 60:,.1f} min. Load it with {how}")
        gap = self.median_gap_s or 0.0
        return (f"the start times look like milliseconds from zero, not seconds: read as seconds, "
                f"{self.n_requests:,} requests span {self.span_s / 3600:,.2f} h with a median gap of {gap:,.1f} s "
                f"between consecutive requests (fewer than {60 / SUSPECT_MEDIAN_GAP_S:g} a minute); read as "
                f"milliseconds they span {self.span_s / 60_000:,.1f} min with a median gap of {gap:.3g} ms, as "
                f"production traffic does. bearing does not guess a unit: {fix}")


def declared_unit(provenance: Any) -> str | None:
    """The time unit the user declared when loading (canonical ``time_unit``, generic ``units``), or None."""
    opts = provenance.options or {}
    if provenance.format == "bearing-canonical":
        unit = opts.get("time_unit")
        return str(unit) if unit not in (None, "auto") else None
    if provenance.format == "generic":
        mapping = opts.get("mapping") or {}
        col = (mapping.get("columns") or {}).get("start_s")
        unit = (mapping.get("units") or {}).get(col) if col is not None else None
        return str(unit) if unit is not None else None
    return None


def _start_column(provenance: Any) -> str:
    if provenance.format == "generic":
        col = ((provenance.options or {}).get("mapping") or {}).get("columns", {}).get("start_s")
        if col:
            return str(col)
    return "start_s"


def check_clock(trace: Any) -> ClockCheck | None:
    """The clock check of a request trace (module docstring); None when it does not apply (not a request
    trace, a tool format, an epoch or no clock, a unit the user declared, too few requests)."""
    prov = getattr(trace, "provenance", None)
    frame = getattr(trace, "frame", None)
    if prov is None or not isinstance(frame, pl.DataFrame) or "start_s" not in frame.columns:
        return None
    if prov.format not in USER_CLOCK_FORMATS or prov.time_origin != "relative" or declared_unit(prov):
        return None
    start = frame["start_s"].drop_nulls().sort()
    n = start.len()
    if n < 2:
        return None
    span = float(start[-1] - start[0])
    gaps = start.diff().drop_nulls()
    median_gap = float(gaps.median()) if gaps.len() else None
    ratio = None
    derived = {k for k, v in (prov.fields or {}).items() if v == "derived"}
    if {"end_s", "latency_ms"} <= set(frame.columns) and not ({"end_s", "latency_ms"} & derived):
        timed = frame.filter(pl.col("end_s").is_not_null() & (pl.col("latency_ms") > 0))
        if timed.height >= MIN_TIMED:
            ratio = float(((timed["end_s"] - timed["start_s"]) * 1000.0 / timed["latency_ms"]).median())
    col, fmt = _start_column(prov), str(prov.format)
    if ratio is not None and math.isfinite(ratio):
        for unit, factor in UNIT_RATIOS:
            if factor / 2 <= ratio <= factor * 2:
                return ClockCheck(prov.source, col, fmt, n, span, median_gap, ratio, "not_seconds", unit)
        return ClockCheck(prov.source, col, fmt, n, span, median_gap, ratio, "seconds")
    if n >= MIN_REQUESTS and median_gap is not None and median_gap >= SUSPECT_MEDIAN_GAP_S:
        return ClockCheck(prov.source, col, fmt, n, span, median_gap, ratio, "suspect", "ms")
    return ClockCheck(prov.source, col, fmt, n, span, median_gap, ratio, "seconds")


def require_seconds(trace: Any, *, what: str = "trace") -> Any:
    """``trace`` when its clock reads as seconds (or the check does not apply); else :class:`BadValueError`
    naming the file and the column, with both readings and the fix (:class:`ClockCheck`)."""
    check = check_clock(trace)
    if check is not None and check.verdict != "seconds":
        raise BadValueError(f"the {what} ({check.format}): {check.message}", path=check.source, field=check.column)
    return trace


__all__ = ["MIN_REQUESTS", "SUSPECT_MEDIAN_GAP_S", "USER_CLOCK_FORMATS", "ClockCheck", "check_clock",
           "declared_unit", "require_seconds"]
