"""Request mixes: named boxes in (input tokens, output tokens, cache-hit ratio) space.

A mix is a set of half-open bounds ``[lo, hi)`` on ``input_tokens``, ``output_tokens``
and ``cache_hit_ratio`` (= ``cached_tokens / input_tokens``, 0 when ``cached_tokens`` is
null). A :class:`MixSpec` is an ordered list of mixes; a request belongs to the first
mix whose bounds contain it, else to ``"other"``. The same spec segments load tests
(limits) and production traces (mix weights), and travels in the limits JSON as
``MixSpec.to_dict()`` so a plan can re-apply it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from bearing_lib.errors import ParameterError

DIMENSIONS: tuple[str, ...] = ("input_tokens", "output_tokens", "cache_hit_ratio")
OTHER = "other"
ALL = "all"


@dataclass(frozen=True)
class Mix:
    """One mix: a name and ``[lo, hi)`` bounds per dimension (missing = unbounded)."""

    name: str
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for dim, (lo, hi) in self.bounds.items():
            if dim not in DIMENSIONS:
                raise ParameterError(f"mix {self.name!r}: unknown dimension {dim!r}; expected one of {DIMENSIONS}")
            if not lo < hi:
                raise ParameterError(f"mix {self.name!r}: {dim} bounds [{lo}, {hi}) are empty; expected lo < hi")

    def expr(self) -> pl.Expr:
        """Polars boolean expression: request lies inside this mix."""
        cond = pl.lit(True)
        for dim, (lo, hi) in self.bounds.items():
            col = cache_hit_ratio_expr() if dim == "cache_hit_ratio" else pl.col(dim).cast(pl.Float64)
            if math.isfinite(lo):
                cond = cond & (col >= lo)
            if math.isfinite(hi):
                cond = cond & (col < hi)
        return cond

    def describe(self) -> str:
        """Human text such as ``input 1024–4096 tok, output < 256 tok``."""
        parts = []
        words = {
            "input_tokens": ("input", " tok"),
            "output_tokens": ("output", " tok"),
            "cache_hit_ratio": ("cache hit", ""),
        }
        for dim, (lo, hi) in self.bounds.items():
            w, unit = words[dim]
            fmt = (lambda v: f"{v:.0%}") if dim == "cache_hit_ratio" else (lambda v: f"{v:,.0f}")
            if math.isfinite(lo) and math.isfinite(hi):
                parts.append(f"{w} {fmt(lo)}–{fmt(hi)}{unit}")
            elif math.isfinite(hi):
                parts.append(f"{w} < {fmt(hi)}{unit}")
            elif math.isfinite(lo):
                parts.append(f"{w} ≥ {fmt(lo)}{unit}")
        return ", ".join(parts) or "all requests"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.describe(),
            "bounds": {d: [_num(lo), _num(hi)] for d, (lo, hi) in self.bounds.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> Mix:
        """Inverse of :meth:`to_dict` (``None`` bounds are unbounded)."""
        try:
            bounds = {}
            for dim, (lo, hi) in dict(d.get("bounds") or {}).items():  # type: ignore[arg-type]
                bounds[dim] = (-math.inf if lo is None else float(lo), math.inf if hi is None else float(hi))
            return cls(name=str(d["name"]), bounds=bounds)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"mix definition {d!r}: expected name and bounds {{dim: [lo, hi]}}") from exc


def _num(v: float) -> float | None:
    return None if math.isinf(v) else v


def cache_hit_ratio_expr() -> pl.Expr:
    """``cached_tokens / input_tokens`` (0 when either is null or input is 0)."""
    return (
        pl.when(pl.col("input_tokens") > 0)
        .then(pl.col("cached_tokens").fill_null(0).cast(pl.Float64) / pl.col("input_tokens").cast(pl.Float64))
        .otherwise(0.0)
    )


@dataclass(frozen=True)
class MixSpec:
    """Ordered mixes; ``assign`` labels each request with the first mix that holds it."""

    mixes: tuple[Mix, ...]

    @classmethod
    def single(cls) -> MixSpec:
        """All requests in one mix called ``all`` (``--mixes none``)."""
        return cls((Mix(ALL, {}),))

    def names(self) -> list[str]:
        return [m.name for m in self.mixes]

    def assign(self, frame: pl.DataFrame | pl.LazyFrame, column: str = "mix") -> pl.DataFrame | pl.LazyFrame:
        """``frame`` with a ``mix`` column (String)."""
        expr: pl.Expr = pl.lit(OTHER)
        for m in reversed(self.mixes):
            expr = pl.when(m.expr()).then(pl.lit(m.name)).otherwise(expr)
        return frame.with_columns(expr.alias(column))

    def to_dict(self) -> list[dict[str, object]]:
        return [m.to_dict() for m in self.mixes]

    @classmethod
    def from_dict(cls, items: list[dict[str, object]]) -> MixSpec:
        return cls(tuple(Mix.from_dict(d) for d in items))
