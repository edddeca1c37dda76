"""Mooncake JSONL loader, on the real traces.

The expected values are computed inside the test with the json module and a set of
"blocks seen so far" (the data README's model: a block counts as cached after its first
sight, requests in timestamp order, the last block holds input_length - 512*(n-1)
tokens). They match the README facts: conversation 12,031 requests over 3,537.0 s,
37.4 % token / 36.6 % block hit rate; synthetic 3,993 requests, 65.1 % / 64.0 %.
"""

from __future__ import annotations

import json

import pytest

from bearing_lib import BadValueError, load_trace
from bearing_lib.loaders import detect


def _independent(path):
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    order = sorted(range(len(rows)), key=lambda i: rows[i]["timestamp"])  # stable: ties keep file order
    seen: set[int] = set()
    cached = [0] * len(rows)
    blocks_hit = 0
    for i in order:
        r = rows[i]
        n = len(r["hash_ids"])
        sizes = [512] * (n - 1) + [r["input_length"] - 512 * (n - 1)]
        # "any previously seen block" (the README notes it equals "leading hits" on these files)
        cached[i] = sum(s for h, s in zip(r["hash_ids"], sizes, strict=True) if h in seen)
        blocks_hit += sum(1 for h in r["hash_ids"] if h in seen)
        seen.update(r["hash_ids"])
    return rows, cached, blocks_hit


def _check(tr, path, n, span_s, token_rate, block_rate):
    rows, cached, blocks_hit = _independent(path)
    f = tr.frame.sort("source_row")
    assert len(tr) == len(rows) == n
    assert f["start_s"].to_list() == pytest.approx([r["timestamp"] / 1000 for r in rows])
    assert round(f["start_s"].max() - f["start_s"].min(), 1) == span_s
    assert f["input_tokens"].to_list() == [r["input_length"] for r in rows]
    assert f["output_tokens"].to_list() == [r["output_length"] for r in rows]
    assert f["cached_tokens"].to_list() == cached
    total_tokens = sum(r["input_length"] for r in rows)
    total_blocks = sum(len(r["hash_ids"]) for r in rows)
    assert round(100 * sum(cached) / total_tokens, 1) == token_rate
    assert round(100 * blocks_hit / total_blocks, 1) == block_rate
    opts = tr.provenance.options
    assert opts["prefix_cache"]["token_hit_rate"] == pytest.approx(sum(cached) / total_tokens)
    assert opts["prefix_cache"]["block_hit_rate"] == pytest.approx(blocks_hit / total_blocks)
    assert tr.provenance.time_origin == "relative"
    assert tr.provenance.fields["cached_tokens"] == "derived"
    assert tr.provenance.fields["latency_ms"] == "absent"
    return rows


def test_mooncake_conversation_bundled(bundled):
    path = bundled("traces/mooncake-fast25/conversation_trace.jsonl")
    before = path.read_bytes()
    assert detect(path).name == "mooncake"
    tr = load_trace(path)
    rows = _check(tr, path, 12_031, 3537.0, 37.4, 36.6)
    # quantized timestamps are recorded: 1,180 distinct values, about 3 s apart
    distinct = sorted({r["timestamp"] for r in rows})
    gaps = [b - a for a, b in zip(distinct, distinct[1:], strict=False)]
    assert len(distinct) == 1180 and (min(gaps), max(gaps)) == (2997, 3003)
    q = [x for x in tr.provenance.findings if x.code == "quantized_timestamps"]
    assert len(q) == 1 and q[0].count == 1180 and "2,997-3,003 ms" in q[0].message
    assert path.read_bytes() == before


@pytest.mark.shared_data
def test_mooncake_synthetic_in_place(shared_data):
    path = shared_data("traces/mooncake-fast25/synthetic_trace.jsonl")
    tr = load_trace(path)
    _check(tr, path, 3_993, 1022.0, 65.1, 64.0)
    assert not [x for x in tr.provenance.findings if x.code == "quantized_timestamps"]


def test_mooncake_lru_capacity_option(bundled):
    path = bundled("traces/mooncake-fast25/conversation_trace.jsonl")
    inf = load_trace(path)
    lru = load_trace(path, cache_capacity_blocks=10_000)
    a = inf.frame.sort("source_row")["cached_tokens"]
    b = lru.frame.sort("source_row")["cached_tokens"]
    assert (b <= a).all() and b.sum() < a.sum()
    assert lru.provenance.options["cache_capacity_blocks"] == 10_000
    assert "LRU 10,000 blocks" in next(x.message for x in lru.provenance.findings if x.code == "prefix_cache_replay")


def test_mooncake_hash_ids_must_match_block_size(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(
        '{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [0, 1]}\n'
        '{"timestamp": 5, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1]}\n'
    )
    with pytest.raises(BadValueError, match=r"row 2, field 'hash_ids': 2 hash ids for input_length 1100; expected"):
        load_trace(p)
    # with 600-token blocks the same file is consistent, and request 2 finds both blocks cached
    tr = load_trace(p, block_tokens=600)
    assert tr.frame["cached_tokens"].to_list() == [0, 1100]
