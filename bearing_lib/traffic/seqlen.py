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


__all__ = ["DEFINITION", "MIN_REQUESTS", "SeqLenDistribution", "TokenStats", "seq_len_distribution"]
