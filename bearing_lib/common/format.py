"""The one number formatter: how bearing writes a number for a person.

Two styles, one function each: :func:`fmt_number` (fixed decimals, thousands separated,
no decimals from 100 up: tables and headlines of the report) and :func:`fmt_sig`
(significant digits: terminal summaries and statements inside JSON). A missing value is
:data:`MISSING` in a table; "not available" in prose is the caller's word.

    >>> fmt_number(1.1834), fmt_number(1234.5), fmt_number(None), fmt_number(float("inf"))
    ('1.18', '1,234', '—', '∞')
    >>> fmt_number(0.0011530), fmt_number(0.0), fmt_number(0.004)
    ('0.0012', '0.00', '0.004')
    >>> fmt_sig(1.18342), fmt_sig(12.0), fmt_sig(None), fmt_sig(12_801.4), fmt_sig(9_999.7), fmt_sig(1.5e-7)
    ('1.183', '12', '–', '12,801', '10,000', '1.5e-07')
"""

from __future__ import annotations

import math

MISSING = "—"


def fmt_number(v: float | None, digits: int = 2) -> str:
    """Fixed decimals (``digits``), ``1,234`` from 100 up, ``—`` for None, ``∞`` for infinity; a non-zero
    value too small for the decimals keeps ``digits`` significant digits (``0.0012``, never ``0.00``)."""
    if v is None:
        return MISSING
    if isinstance(v, float) and not math.isfinite(v):
        return "∞" if v > 0 else ("−∞" if v < 0 else MISSING)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if v != 0 and abs(v) < 0.5 * 10.0**-digits:
        return f"{v:.{digits}g}"  # fixed decimals would print a non-zero value as 0.00
    return f"{v:,.{digits}f}"


def fmt_sig(v: object, digits: int = 4) -> str:
    """``digits`` significant digits for floats (``%g``), ``str`` otherwise, ``–`` for None; a float of
    magnitude ``%g`` would write with an exponent (from ``10 ** digits − 0.5``) is written whole with thousands
    separated (``12,800``, never ``1.28e+04``)."""
    if v is None:
        return "–"
    if isinstance(v, float):
        text = f"{v:.{digits}g}"
        if "e+" in text and math.isfinite(v):  # 9,999.5 and up: %g would switch to an exponent
            return f"{v:,.0f}"
        return text
    return str(v)


__all__ = ["MISSING", "fmt_number", "fmt_sig"]
