"""Prefix-cache replay: hand-worked examples (infinite and LRU) and invariants.

The expected numbers below were worked out by hand, step by step, in the comments.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib.loaders.prefix_cache import block_token_counts, replay_prefix_cache

# 4-token blocks. (ids, input tokens); blocks hold 4 tokens except the last.
REQUESTS = [
    ([1, 2], 6),  # R0: blocks 4+2
    ([1, 3], 8),  # R1: 4+4
    ([4], 3),  # R2: 3
    ([1, 2], 5),  # R3: 4+1
    ([1, 3, 5], 9),  # R4: 4+4+1
    ([1, 3, 6], 10),  # R5: 4+4+2
]


def _run(capacity):
    ids = [r[0] for r in REQUESTS]
    n_in = [r[1] for r in REQUESTS]
    return replay_prefix_cache(ids, n_in, block_tokens=4, capacity_blocks=capacity)


def test_block_token_counts_last_block_is_partial():
    assert block_token_counts(1300, 3, 512) == [512, 512, 276]
    assert block_token_counts(1024, 2, 512) == [512, 512]
    assert block_token_counts(0, 0, 512) == []


def test_infinite_cache_hand_worked():
    # R0: empty cache -> 0.  R1: 1 hit, 3 miss -> 4 tokens.  R2: 4 miss -> 0.
    # R3: 1, 2 both seen -> whole prompt, 5 tokens (last block partial: 1 token).
    # R4: 1, 3 seen, 5 new -> 8.  R5: 1, 3 seen, 6 new -> 8.
    r = _run(None)
    assert r.cached_tokens.tolist() == [0, 4, 0, 5, 8, 8]
    assert r.cached_blocks.tolist() == [0, 1, 0, 2, 2, 2]
    assert r.n_blocks.tolist() == [2, 2, 1, 2, 3, 3]
    assert r.token_hit_rate == pytest.approx(25 / 41)
    assert r.block_hit_rate == pytest.approx(7 / 13)


def test_lru_cache_of_three_blocks_hand_worked():
    # LRU order written oldest -> newest, capacity 3 blocks.
    # R0: miss, miss; insert 1,2 -> [1,2].                      cached 0
    # R1: 1 hit, 3 miss; touch 1, insert 3 -> [2,1,3].          cached 4
    # R2: 4 miss; insert 4 -> [2,1,3,4] evict 2 -> [1,3,4].     cached 0
    # R3: 1 hit, 2 miss (evicted); touch 1 -> [3,4,1]; insert 2 evicts 3 -> [4,1,2].  cached 4
    # R4: 1 hit, 3 miss (evicted); touch 1 -> [4,2,1]; insert 3 evicts 4 -> [2,1,3];
    #     insert 5 evicts 2 -> [1,3,5].                         cached 4
    # R5: 1 hit, 3 hit, 6 miss -> 8 tokens (2 blocks).         cached 8
    r = _run(3)
    assert r.cached_tokens.tolist() == [0, 4, 0, 4, 4, 8]
    assert r.cached_blocks.tolist() == [0, 1, 0, 1, 1, 2]
    assert r.to_dict()["capacity_blocks"] == 3


def test_hits_stop_at_the_first_miss_and_a_request_does_not_hit_itself():
    # [9, 1]: 1 is cached but 9 is not, so no prefix is reusable.
    r = replay_prefix_cache([[1], [9, 1], [7, 7]], [4, 8, 8], block_tokens=4)
    assert r.cached_tokens.tolist() == [0, 0, 0]


def test_block_count_must_match_prompt_length():
    msg = r"request 1: 1 block hash ids for 600 input tokens; expected ceil\(600/512\) = 2"
    with pytest.raises(ValueError, match=msg):
        replay_prefix_cache([[1], [2]], [10, 600])
    with pytest.raises(ValueError, match="capacity_blocks"):
        replay_prefix_cache([[1]], [10], capacity_blocks=0)


_requests = st.lists(
    st.lists(st.integers(0, 12), min_size=1, max_size=5).flatmap(
        lambda ids: st.tuples(st.just(ids), st.integers(4 * (len(ids) - 1) + 1, 4 * len(ids)))
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(_requests, st.integers(1, 20))
def test_lru_never_beats_infinite_and_equals_it_when_big_enough(reqs, cap):
    ids = [r[0] for r in reqs]
    n_in = [r[1] for r in reqs]
    inf = replay_prefix_cache(ids, n_in, block_tokens=4)
    lru = replay_prefix_cache(ids, n_in, block_tokens=4, capacity_blocks=cap)
    # an LRU cache always holds a subset of the blocks seen so far
    assert (lru.cached_tokens <= inf.cached_tokens).all()
    big = replay_prefix_cache(ids, n_in, block_tokens=4, capacity_blocks=13)  # >= distinct ids (0..12)
    assert big.cached_tokens.tolist() == inf.cached_tokens.tolist()
    assert ((inf.cached_tokens >= 0) & (inf.cached_tokens <= inf.block_tokens_total)).all()
