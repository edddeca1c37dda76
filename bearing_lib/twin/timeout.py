"""The request-timeout setting as the CLI, the notebook and ``--engine`` give it: one parser for calibration
(an engine setting the operator knows) and prediction (a what-if), below both in the wing."""

from __future__ import annotations

import math

from bearing_lib.common.errors import ParameterError

__all__ = ["KEEP", "parse_request_timeout"]

KEEP = "keep"


def parse_request_timeout(value: float | str | None, *, what: str = "--request-timeout") -> float | str | None:
    """A request-timeout setting as the CLI, the notebook and ``--engine`` give it: seconds (a positive
    number), ``None``/``"none"``/``"off"`` (no deadline), or ``"keep"`` (the twin's own)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "off")):
        return None
    if isinstance(value, str) and value.strip().lower() == KEEP:
        return KEEP
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} {value!r}: expected positive seconds, 'none' or 'keep'") from None
    if not (v > 0 and math.isfinite(v)):
        raise ParameterError(f"{what} {value!r}: expected positive seconds, 'none' or 'keep'")
    return v
