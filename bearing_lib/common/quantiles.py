"""One quantile definition for all of bearing: linear interpolation.

Engines disagree by default (pandas: linear, polars: nearest, DuckDB ``quantile``:
discrete; see ``docs/`` and PERF-BASELINE). bearing uses numpy's ``linear`` method,
``x[(n-1)q]`` interpolated between neighbours, and names it in every call through
these helpers. Reports state it as ``QUANTILE_METHOD``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

QUANTILE_METHOD = "linear"


def quantile_expr(column: str | pl.Expr, q: float) -> pl.Expr:
    """Polars expression for the ``q`` quantile of ``column`` (linear interpolation)."""
    expr = pl.col(column) if isinstance(column, str) else column
    return expr.quantile(q, interpolation=QUANTILE_METHOD)


def quantile(values: np.ndarray | list[float], q: float | list[float]) -> float | np.ndarray:
    """numpy quantile with the project's method (linear); NaN for an empty input."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return np.full(np.shape(q), np.nan) if np.ndim(q) else float("nan")
    return np.quantile(arr, q, method=QUANTILE_METHOD)
