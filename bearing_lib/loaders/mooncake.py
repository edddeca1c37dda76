"""Mooncake (Kimi / Moonshot AI) FAST'25 request traces: JSON lines with prefix-block hash ids.

One request per line: ``timestamp`` (int, milliseconds from the trace start),
``input_length`` and ``output_length`` (tokens), ``hash_ids`` (ids of the prompt's
512-token blocks, prefix-chained: equal ids mean a reusable prefix block). The trace has
no latency, status, session or model.

bearing reads ``start_s = timestamp / 1000`` (``time_origin`` ``relative``), the token
counts, and **derives** ``cached_tokens`` per request by replaying a prefix cache over the
hash ids in arrival order (:mod:`bearing_lib.loaders.prefix_cache`; infinite cache and 512-token
blocks by default). Licence: Apache-2.0 (kvcache-ai/Mooncake); cite the Mooncake FAST'25
paper.
"""

from __future__ import annotations

import polars as pl

from bearing_lib.common.errors import BadValueError, ParameterError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import cast_checked, finish_trace, new_provenance, read_jsonl_checked
from bearing_lib.loaders.prefix_cache import DEFAULT_BLOCK_TOKENS, replay_prefix_cache
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "mooncake"
TOOL = "Mooncake trace (FAST'25)"
KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


def sniff(source: InputSource) -> bool:
    obj = source.first_json_line
    return isinstance(obj, dict) and all(k in obj for k in KEYS) and isinstance(obj["hash_ids"], list)


def _quantization_finding(ts_ms: pl.Series, prov: Provenance) -> None:
    """Record when arrival times move in coarse steps (the conversation trace: ~3 s)."""
    distinct = ts_ms.unique().sort()
    if distinct.len() < 3 or distinct.len() > ts_ms.len() / 2:
        return
    gaps = distinct.diff().drop_nulls()
    lo, hi, med = gaps.min(), gaps.max(), gaps.median()
    prov.add(
        "quantized_timestamps",
        f"timestamps are quantized: {distinct.len():,} distinct values for {ts_ms.len():,} requests, "
        f"spaced {lo:,.0f}-{hi:,.0f} ms apart (median {med:,.0f} ms); per-second rates are meaningless, "
        "use 1-minute bins or coarser",
        count=int(distinct.len()),
    )


def load(
    source: InputSource,
    *,
    block_tokens: int = DEFAULT_BLOCK_TOKENS,
    cache_capacity_blocks: int | None = None,
    skip_bad_lines: bool = False,
) -> RequestTrace:
    """Load a Mooncake JSONL trace; ``cached_tokens`` comes from a prefix-cache replay.

    Parameters
    ----------
    block_tokens
        Tokens per hash block (512 in the published traces).
    cache_capacity_blocks
        Prefix-cache size in blocks for the replay; ``None`` (default) is unbounded,
        a number replays an LRU cache of that many blocks.
    skip_bad_lines
        Drop lines that are not JSON objects (e.g. a truncated last line) and report how
        many were skipped, instead of raising.
    """
    if block_tokens <= 0:
        raise ParameterError(f"block_tokens must be a positive number of tokens, got {block_tokens!r}")
    if cache_capacity_blocks is not None and cache_capacity_blocks <= 0:
        raise ParameterError(f"cache_capacity_blocks must be positive or None, got {cache_capacity_blocks!r}")
    prov = new_provenance(source, format=NAME, tool=TOOL)
    raw = read_jsonl_checked(source, skip_bad_lines=skip_bad_lines, provenance=prov)
    raw = cast_checked(
        raw,
        {"timestamp": pl.Float64(), "input_length": pl.Int64(), "output_length": pl.Int64()},
        path=source.path,
    )
    if "hash_ids" not in raw.columns or not isinstance(raw.schema["hash_ids"], pl.List):
        found = raw.schema.get("hash_ids")
        raise BadValueError(f"expected a list of block hash ids, found {found}", path=source.path, field="hash_ids")
    n_ids = raw["hash_ids"].list.len().fill_null(0)
    expected = (raw["input_length"] + block_tokens - 1) // block_tokens
    wrong = n_ids != expected
    if wrong.any():
        i = int(wrong.arg_max())
        raise BadValueError(
            f"{n_ids[i]} hash ids for input_length {raw['input_length'][i]}; expected "
            f"ceil({raw['input_length'][i]}/{block_tokens}) = {expected[i]} (is the block size {block_tokens}?)",
            path=source.path,
            row=int(raw["source_row"][i]),
            field="hash_ids",
        )
    # Replay in arrival order; ties keep file order.
    order = raw.select(pl.arg_sort_by("timestamp", maintain_order=True)).to_series().to_list()
    ids = raw["hash_ids"].to_list()
    n_in = raw["input_length"].to_list()
    replay = replay_prefix_cache(
        [ids[i] for i in order],
        [n_in[i] for i in order],
        block_tokens=block_tokens,
        capacity_blocks=cache_capacity_blocks,
    )
    cached = [0] * raw.height
    for pos, i in enumerate(order):
        cached[i] = int(replay.cached_tokens[pos])
    cap = "infinite" if cache_capacity_blocks is None else f"LRU {cache_capacity_blocks:,} blocks"
    prov.add(
        "prefix_cache_replay",
        f"cached_tokens derived by replaying a prefix cache ({cap}, {block_tokens}-token blocks) in arrival order: "
        f"token hit rate {replay.token_hit_rate:.1%}, block hit rate {replay.block_hit_rate:.1%}",
        level="info",
    )
    _quantization_finding(raw["timestamp"], prov)
    frame = pl.DataFrame(
        {
            "request_id": raw["source_row"].cast(pl.String),
            "start_s": raw["timestamp"] / 1000.0,
            "input_tokens": raw["input_length"],
            "output_tokens": raw["output_length"],
            "cached_tokens": pl.Series(cached, dtype=pl.Int64),
            "source_row": raw["source_row"],
        }
    )
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool=TOOL,
        derived=("request_id", "cached_tokens"),
        timezone="none (timestamps are milliseconds from the trace start)",
        time_origin="relative",
        provenance=prov,
        options={
            "block_tokens": block_tokens,
            "cache_capacity_blocks": cache_capacity_blocks,
            "skip_bad_lines": skip_bad_lines,
            "prefix_cache": replay.to_dict(),
        },
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="JSON lines whose objects have timestamp (ms), input_length, output_length and hash_ids (a list)",
        sniff=sniff,
        load=load,
    )
)
