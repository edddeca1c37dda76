"""Block bootstrap from per-block sufficient statistics, checked against explicit resamples."""

from __future__ import annotations

import numpy as np
import pytest

from bearing_lib.limits.bootstrap import (
    block_weights,
    boot_quantile,
    boot_rate,
    politis_white_block_length,
    row_blocks,
    time_blocks,
)


def _explicit(values, blocks, weights_row):
    """The resample a weight row stands for: each block's values repeated by its multiplicity."""
    parts = [np.repeat(values[blocks == b], int(k)) for b, k in enumerate(weights_row)]
    return np.concatenate(parts)


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_quantile_replicates_equal_explicit_resamples(q):
    rng = np.random.default_rng(1)
    n, nb = 3000, 30
    v = rng.lognormal(0, 1, n)
    b = row_blocks(n, nb)
    w = block_weights(nb, 25, rng)
    got = boot_quantile(w, b, v, q, nb)
    want = [np.quantile(_explicit(v, b, row), q, method="linear") for row in w]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_quantile_with_ties_and_small_n():
    v = np.array([5.0, 5.0, 1.0, 3.0, 3.0, 9.0, 2.0])
    b = np.array([0, 0, 1, 1, 2, 2, 2])
    w = np.array([[3.0, 0, 0], [0, 1, 2], [1, 1, 1], [0, 3, 0]])
    got = boot_quantile(w, b, v, 0.75, 3)
    want = [np.quantile(_explicit(v, b, row), 0.75) for row in w]
    np.testing.assert_allclose(got, want)


def test_rate_replicates():
    rng = np.random.default_rng(2)
    hits = (rng.uniform(size=500) < 0.1).astype(float)
    b = row_blocks(500, 20)
    w = block_weights(20, 10, rng)
    got = boot_rate(w, b, hits, 20)
    want = [_explicit(hits, b, row).mean() for row in w]
    np.testing.assert_allclose(got, want)


def test_weights_sum_to_blocks_and_blocks_cover():
    w = block_weights(12, 100, np.random.default_rng(0))
    assert (w.sum(axis=1) == 12).all()
    tb = time_blocks(np.array([0.0, 4.99, 5.0, 9.99, 10.0]), 0.0, 10.0, 2)
    assert tb.tolist() == [0, 0, 1, 1, 1]
    assert row_blocks(10, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_politis_white_longer_for_dependent_series():
    rng = np.random.default_rng(3)
    n = 4000
    iid = rng.normal(size=n)
    ar = np.empty(n)
    ar[0] = 0
    e = rng.normal(size=n)
    for i in range(1, n):
        ar[i] = 0.95 * ar[i - 1] + e[i]
    b_iid, b_ar = politis_white_block_length(iid), politis_white_block_length(ar)
    assert b_iid < 5
    assert b_ar > 5 * b_iid


@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_quantile_replicates_exact_on_a_saturating_step(q):
    """A step whose latency climbs through the window (a queue building: each block's values far above the
    previous block's) moves a replicate's quantile far from its rank, outside the dense window of ranks; those
    replicates were the next coarse grid value above (up to a quarter too high) and are now exact."""
    rng = np.random.default_rng(7)
    n, nb = 20_000, 50
    t = np.arange(n) / n
    v = np.exp(4.0 * t) * rng.lognormal(0, 0.05, n)  # latency rising 55-fold through the step
    b = row_blocks(n, nb)
    w = block_weights(nb, 200, rng)
    got = boot_quantile(w, b, v, q, nb)
    want = [np.quantile(_explicit(v, b, row), q, method="linear") for row in w]
    np.testing.assert_allclose(got, want, rtol=1e-12)
