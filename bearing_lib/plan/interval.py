"""A 95 % interval whose ends may be open, and how it carries through the plan's arithmetic.

A limit's 95 % CI is open above when no step above the limit failed a clause (``docs/limits.md``):
the data put no ceiling on it. Everything the plan computes from the limit keeps that end open, on
the side the arithmetic puts it, instead of a closed number that looks measured:

* a quantity proportional to the limit (FOS, allowable capacity, tokens/s, the per-instance limit)
  keeps the open end on the same side: ``(lo, None)`` stays ``(k·lo, None)``;
* a quantity inversely proportional to it (instances, $ per 1M tokens, monthly cost) has it on the
  other side: a limit open above leaves the instance count's *low* end open (the data cannot say how
  few instances would do).

An interval is the JSON pair ``[lo, hi]`` with ``null`` for an open end, next to an ``open_reason``
that says why it is open (``None`` when both ends are closed). :func:`ci_text` is its one rendering:
``"95% CI 1.15–1.65"``, ``"95% CI ≥ 1.15, open above: …"``, ``"95% CI < 0.9, open below: …"``.

    >>> scaled((9.0, None), 0.5)
    (4.5, None)
    >>> inverted((2.0, None), 12.0)
    (None, 6.0)
    >>> ci_text((1.149, None), "no step above the limit failed a clause")
    '95% CI ≥ 1.15, open above: no step above the limit failed a clause'
"""

from __future__ import annotations

import math
from typing import Literal

from bearing_lib.common.format import fmt_number

Interval = tuple[float | None, float | None]
"""A 95 % CI ``(lo, hi)``; ``None`` marks an open end (the JSON writes ``[lo, null]``)."""

OpenEnd = Literal["low", "high", "both"]

OPEN_ABOVE = "no step above the limit failed a clause"
"""Why a limit's CI is open above, when the limits say no more (``docs/limits.md``)."""
OPEN_BELOW = "no step below the limit passed every clause"


def open_end(ci: Interval | None) -> OpenEnd | None:
    """Which end of ``ci`` is open (``None``: both closed, or no interval at all)."""
    if ci is None:
        return None
    lo, hi = ci
    if lo is None and hi is None:
        return "both"
    return "low" if lo is None else "high" if hi is None else None


def is_open(ci: Interval | None) -> bool:
    return open_end(ci) is not None


def scaled(ci: Interval | None, factor: float) -> Interval | None:
    """``ci`` times a positive ``factor``: each closed end scaled, an open end stays open on its side."""
    if ci is None:
        return None
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"factor must be a positive finite number, got {factor}")
    return (None if ci[0] is None else ci[0] * factor, None if ci[1] is None else ci[1] * factor)


def inverted(ci: Interval | None, numerator: float) -> Interval | None:
    """``numerator / x`` over ``ci`` (``numerator`` > 0): the ends swap sides, an open high end of ``x``
    becomes an open low end of the result."""
    if ci is None:
        return None
    lo, hi = ci
    return (None if hi is None else numerator / hi, None if lo is None else numerator / lo)


def mapped(ci: Interval | None, fn) -> Interval | None:  # noqa: ANN001 - a monotone increasing float -> float
    """A monotone increasing function of each closed end (``fn``: e.g. ``math.ceil`` of a count)."""
    if ci is None:
        return None
    return (None if ci[0] is None else fn(ci[0]), None if ci[1] is None else fn(ci[1]))


def opened(ci: Interval | None, end: OpenEnd | None) -> Interval | None:
    """``ci`` with ``end`` (``low``, ``high`` or ``both``) made open."""
    if ci is None or end is None:
        return ci
    return (None if end in ("low", "both") else ci[0], None if end in ("high", "both") else ci[1])


def swapped(end: OpenEnd | None) -> OpenEnd | None:
    """The open end of an inversely proportional quantity (``high`` ↔ ``low``)."""
    return {"high": "low", "low": "high"}.get(end, end) if end else None  # type: ignore[return-value]


def relative_widths(value: float, ci: Interval | None) -> tuple[float, float]:
    """(``(value − lo) / value``, ``(hi − value) / value``); an open end is ``inf``, no interval ``(0, 0)``."""
    if ci is None:
        return 0.0, 0.0
    lo, hi = ci
    return (math.inf if lo is None else (value - lo) / value, math.inf if hi is None else (hi - value) / value)


def ci_text(ci: Interval | None, reason: str | None = None, *, digits: int = 2, unit: str = "",
            label: str = "95% CI ") -> str:
    """The interval in words: ``"95% CI 1.15–1.65"``, ``"95% CI ≥ 1.15, open above: reason"``,
    ``"95% CI < 0.9, open below: reason"`` or ``"95% CI open: reason"``; ``""`` without an interval."""
    if ci is None:
        return ""
    u = f" {unit}" if unit else ""
    lo, hi = ci
    why = f": {reason}" if reason else ""
    if lo is None and hi is None:
        return f"{label}open{why}"
    if hi is None:
        return f"{label}≥ {fmt_number(lo, digits)}{u}, open above{why}"
    if lo is None:
        return f"{label}< {fmt_number(hi, digits)}{u}, open below{why}"
    return f"{label}{fmt_number(lo, digits)}–{fmt_number(hi, digits)}{u}"


def count_range_text(r: tuple[int | None, int | None] | None, reason: str | None = None,
                     noun: str = "instances") -> str:
    """An instance count's 95 % range in words: ``"95% CI 9–26 instances"``, ``"95% CI ≤ 26 instances, low end
    open (the limit's CI is open above: reason)"``; a range whose ends agree is said as one number.

    >>> count_range_text((None, 26), "no step above the limit failed a clause")
    "95% CI ≤ 26 instances, low end open (the limit's CI is open above: no step above the limit failed a clause)"
    """
    if r is None:
        return ""
    lo, hi = r
    if lo is None and hi is None:
        return f"95% CI open{f': {reason}' if reason else ''}"
    if lo is None:
        return f"95% CI ≤ {hi} {noun}, low end open (the limit's CI is open above{f': {reason}' if reason else ''})"
    if hi is None:
        return f"95% CI ≥ {lo} {noun}, high end open (the limit's CI is open below{f': {reason}' if reason else ''})"
    return f"95% CI {lo}–{hi} {noun}" if lo != hi else f"{lo} {noun} at both ends of the limit's 95% CI"


__all__ = [
    "OPEN_ABOVE",
    "OPEN_BELOW",
    "Interval",
    "OpenEnd",
    "ci_text",
    "count_range_text",
    "inverted",
    "is_open",
    "mapped",
    "open_end",
    "opened",
    "relative_widths",
    "scaled",
    "swapped",
]
