"""Prefix-cache hit rate: cached prompt tokens / prompt tokens, in the test and in production.

A request's ``cached_tokens`` is what the source says came from a prefix/KV cache (Mooncake's
replay of ``hash_ids``, a tool's ``cached_tokens`` usage field). The rate is token-weighted
(``sum(cached) / sum(input)`` over requests that carry both); the share of requests with any
hit is kept beside it. A side without a ``cached_tokens`` value on any request is *unknown*,
never 0 %.
"""

from __future__ import annotations

import polars as pl

from bearing_lib.fidelity.result import CacheRates, Dimension
from bearing_lib.fidelity.result import missing_sides as _missing
from bearing_lib.fidelity.thresholds import CACHE_DIFFERS, CACHE_RULE


def cache_rates(frame: pl.DataFrame) -> CacheRates | None:
    """:class:`CacheRates` over requests with input and cached tokens, or None."""
    if not {"cached_tokens", "input_tokens"} <= set(frame.columns):
        return None
    f = frame.select("input_tokens", "cached_tokens").drop_nulls()
    if f.height == 0 or int(f["input_tokens"].sum()) <= 0:
        return None
    return CacheRates(token_hit_ratio=float(f["cached_tokens"].sum() / f["input_tokens"].sum()),
                      request_hit_share=float((f["cached_tokens"] > 0).mean()), n=float(f.height))


def cache_dimension(test: pl.DataFrame | None, production: pl.DataFrame | None) -> Dimension:
    t = cache_rates(test) if test is not None else None
    p = cache_rates(production) if production is not None else None
    label = "prefix-cache hit rate"
    if t is None or p is None:
        missing = _missing(t is None, p is None, "cached-token counts")
        return Dimension("prefix_cache", label, "unknown", f"{missing}, so the cache hit rates cannot be compared",
                         CACHE_RULE, test=t, production=p, unit="share")
    gap = p.token_hit_ratio - t.token_hit_ratio
    verdict = "differs" if abs(gap) > CACHE_DIFFERS else "represents"
    statement = (f"{t.token_hit_ratio:.1%} of the tested prompt tokens came from the prefix cache; "
                 f"{p.token_hit_ratio:.1%} of production's do")
    return Dimension("prefix_cache", label, verdict, statement, CACHE_RULE, test=t, production=p,
                     distance={"absolute": abs(gap)}, unit="share")


__all__ = ["cache_dimension", "cache_rates"]
