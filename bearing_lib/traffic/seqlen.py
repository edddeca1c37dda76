"""Distribution of per-request sequence length (input + output tokens).

The traffic profile writes it as ``seq_len`` (``docs/interfaces.md`` section 5) and the
memory plan reads its P50/P99/max/mean (``bearing_lib.plan.memory``). Requests without both
token counts are left out of every figure (so total, input and output describe the same
requests) and counted in ``n_without_counts``. Quantiles are linear
(``bearing_lib.common.quantiles``); a P99 needs at least :data:`MIN_REQUESTS` requests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.common.quantiles import QUANTILE_METHOD, quantile

#: fewest requests with both token counts for which a P99 is reported
MIN_REQUESTS = 100

DEFINITION = "input_tokens + output_tokens per request, over requests that carry both counts"


@dataclass(frozen=True)
class TokenStats:
    """Mean, linear P50/P90/P99 and max of a per-request token count (tokens)."""

    n: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: np.ndarray) -> TokenStats:
        v = np.asarray(values, dtype=float)
        p50, p90, p99 = (float(x) for x in quantile(v, [0.5, 0.9, 0.99]))
        return cls(int(v.size), float(v.mean()), p50, p90, p99, float(v.max()))

    @classmethod
    def of_counts(cls, values: np.ndarray, counts: np.ndarray) -> TokenStats:
        """The same statistics from a value -> count table of integer token counts (what the
        engines aggregate): exact, since the linear quantile only needs two order statistics."""
        order = np.argsort(values, kind="stable")
        v = np.asarray(values, dtype=np.int64)[order]
        c = np.asarray(counts, dtype=np.int64)[order]
        n = int(c.sum())
        cum = np.cumsum(c)

        def at(rank: np.ndarray) -> np.ndarray:  # 0-based order statistic
            return v[np.searchsorted(cum, rank, side="right")].astype(float)

        h = (n - 1) * np.array([0.5, 0.9, 0.99])
        j = np.floor(h)
        a, b = at(j.astype(np.int64)), at(np.minimum(j + 1, n - 1).astype(np.int64))
        t = h - j
        # numpy's linear interpolation, term for term (its _lerp switches form at t >= 0.5)
        qv = np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)
        mean = float(int((v * c).sum()) / n)
        return cls(n, mean, float(qv[0]), float(qv[1]), float(qv[2]), float(v[-1]))

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class SeqLenDistribution:
    """Sequence length (``total``) and its two parts, over the same requests."""

    total: TokenStats
    input_tokens: TokenStats
    output_tokens: TokenStats
    n_without_counts: int
    source: str = ""

    def to_dict(self) -> dict[str, object]:
        """``{"available": true, "definition", "unit", "quantile_method", "n", "mean", "p50", "p90", "p99",
        "max", "n_without_counts", "input_tokens": {...}, "output_tokens": {...}}``."""
        return {
            "available": True,
            "definition": DEFINITION,
            "unit": "tokens",
            "quantile_method": QUANTILE_METHOD,
            **self.total.to_dict(),
            "n_without_counts": self.n_without_counts,
            "input_tokens": self.input_tokens.to_dict(),
            "output_tokens": self.output_tokens.to_dict(),
        }


def seq_len_distribution(frame: pl.DataFrame, *, source: str = "") -> SeqLenDistribution:
    """Sequence-length distribution of the requests in ``frame`` (columns ``input_tokens``, ``output_tokens``).

    Raises
    ------
    InsufficientDataError
        When a column is missing or fewer than :data:`MIN_REQUESTS` requests carry both
        counts (a P99 from fewer is not supported by the data).
    """
    what = source or "trace"
    for col in ("input_tokens", "output_tokens"):
        if col not in frame.columns:
            raise InsufficientDataError(f"{what}: no {col!r} column; sequence lengths need both counts")
    both = frame.select("input_tokens", "output_tokens").drop_nulls()
    if both.height < MIN_REQUESTS:
        raise InsufficientDataError(
            f"{what}: only {both.height} request(s) carry input and output token counts; "
            f"a P99 sequence length needs at least {MIN_REQUESTS}"
        )
    inp = both["input_tokens"].to_numpy().astype(float)
    out = both["output_tokens"].to_numpy().astype(float)
    return SeqLenDistribution(TokenStats.of(inp + out), TokenStats.of(inp), TokenStats.of(out),
                              frame.height - both.height, source)


def seq_len_partials(lf: pl.LazyFrame) -> list[pl.LazyFrame]:
    """Value -> count tables of ``total``, ``input_tokens``, ``output_tokens`` over requests with both
    counts: partials that add up across partitions (the engines' form of :func:`seq_len_distribution`)."""
    both = lf.select("input_tokens", "output_tokens").drop_nulls()
    return [
        both.group_by(v.alias("v")).agg(pl.len().cast(pl.Int64).alias("n"))
        for v in (pl.col("input_tokens") + pl.col("output_tokens"), pl.col("input_tokens"), pl.col("output_tokens"))
    ]


def seq_len_from_counts(tables: list[pl.DataFrame], n_rows: int, *, source: str = "") -> SeqLenDistribution:
    """:func:`seq_len_distribution` from the three value-count tables of :func:`seq_len_partials`
    (rows of several partitions are summed); ``n_rows`` is every request of the trace."""
    merged = [t.group_by("v").agg(pl.col("n").sum()) for t in tables]
    n_both = int(merged[0]["n"].sum()) if merged[0].height else 0
    if n_both < MIN_REQUESTS:
        raise InsufficientDataError(
            f"{source or 'trace'}: only {n_both} request(s) carry input and output token counts; "
            f"a P99 sequence length needs at least {MIN_REQUESTS}"
        )
    stats = [TokenStats.of_counts(t["v"].to_numpy(), t["n"].to_numpy()) for t in merged]
    return SeqLenDistribution(stats[0], stats[1], stats[2], n_rows - n_both, source)


__all__ = ["DEFINITION", "MIN_REQUESTS", "SeqLenDistribution", "TokenStats", "seq_len_distribution",
           "seq_len_from_counts", "seq_len_partials"]
