"""Distribution of per-request sequence length (input + output tokens).

The traffic profile writes it as ``seq_len`` (``docs/interfaces.md`` section 5) and the
memory plan reads its P50/P99/max/mean (``bearing_lib.plan.memory``). Requests without both
token counts are left out of every figure (so total, input and output describe the same
requests) and counted in ``n_without_counts``. Quantiles are linear
(``bearing_lib.common.quantiles``); a P99 needs at least :data:`MIN_REQUESTS` requests.
"""

from __future__ import annotations

import polars as pl

from bearing_lib.common.errors import InsufficientDataError
from bearing_lib.common.quantiles import QUANTILE_METHOD
from bearing_lib.traffic.document import SeqLenDistribution, TokenStats

#: fewest requests with both token counts for which a P99 is reported
MIN_REQUESTS = 100

DEFINITION = "input_tokens + output_tokens per request, over requests that carry both counts"


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
    return _distribution(TokenStats.of(inp + out), TokenStats.of(inp), TokenStats.of(out), frame.height - both.height)


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
    return _distribution(stats[0], stats[1], stats[2], n_rows - n_both)


def _distribution(total: TokenStats, inp: TokenStats, out: TokenStats, n_without_counts: int) -> SeqLenDistribution:
    return SeqLenDistribution(n=total.n, mean=total.mean, p50=total.p50, p90=total.p90, p99=total.p99,
                              max=total.max, n_without_counts=n_without_counts, definition=DEFINITION,
                              quantile_method=QUANTILE_METHOD, unit="tokens", input_tokens=inp, output_tokens=out)


__all__ = ["DEFINITION", "MIN_REQUESTS", "SeqLenDistribution", "TokenStats", "seq_len_distribution",
           "seq_len_from_counts", "seq_len_partials"]
