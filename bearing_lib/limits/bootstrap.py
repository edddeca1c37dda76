"""Block bootstrap of per-step statistics without materialising resamples.

Method (documented in ``docs/limits.md``): a step's steady window is cut into ``B``
consecutive blocks (equal time spans when requests carry times, else equal runs of rows
in source order). One bootstrap replicate draws ``B`` blocks with replacement
(non-overlapping block bootstrap, Carlstein 1986): its multiplicities are a row of
``W ~ Multinomial(B, 1/B)``. Every statistic of that replicate is a function of
per-block **sufficient statistics**, so a replicate costs a small matrix product instead
of a copy of the requests:

* counts and rates (errors, goodput): ``W @ per_block_count / W @ per_block_n``;
* a linear quantile: values are sorted once and a grid ``G`` of them is chosen: every
  value whose rank is within ``±(12·sqrt(n q (1−q)) + 50)`` of the quantile's rank, plus
  201 evenly spaced ranks. Per block the count of values ``≤ G[g]`` is stored; the
  replicate's count ``C = W @ counts`` gives its order statistics exactly inside the
  dense window (every rank there is a grid point), and the linear quantile interpolates
  the two order statistics around ``(N−1) q`` as numpy does. A replicate whose order
  statistics fall outside the dense window (the grid skips ranks below the value found)
  is recomputed exactly from its weighted cumulative counts.

The same ``W`` is used for every mix and clause of a step, so a replicate keeps the
joint structure of one resampled step.
"""

from __future__ import annotations

import numpy as np


def block_weights(n_blocks: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot, n_blocks)`` multiplicities of a block bootstrap (each row sums to ``n_blocks``)."""
    if n_blocks <= 0:
        return np.zeros((n_boot, 0))
    return rng.multinomial(n_blocks, np.full(n_blocks, 1.0 / n_blocks), size=n_boot).astype(np.float64)


def block_sums(blocks: np.ndarray, values: np.ndarray, n_blocks: int) -> np.ndarray:
    """Per-block sums of ``values`` (``blocks`` are 0-based block ids)."""
    return np.bincount(blocks, weights=values.astype(np.float64), minlength=n_blocks)


def block_rate(w: np.ndarray, hits: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Replicates of a rate from per-block counts: ``hits`` of ``n`` per block (NaN where a replicate holds none)."""
    num, den = w @ hits, w @ n
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def boot_rate(w: np.ndarray, blocks: np.ndarray, hits: np.ndarray, n_blocks: int) -> np.ndarray:
    """Replicates of the mean of a 0/1 array (NaN where a replicate holds no rows)."""
    return block_rate(w, block_sums(blocks, hits, n_blocks),
                      np.bincount(blocks, minlength=n_blocks).astype(np.float64))


def boot_quantile(w: np.ndarray, blocks: np.ndarray, values: np.ndarray, q: float, n_blocks: int) -> np.ndarray:
    """Replicates of the linear ``q`` quantile of ``values`` under block multiplicities ``w``.

    NaN where a replicate holds fewer than one value.
    """
    n = values.size
    if n == 0:
        return np.full(w.shape[0], np.nan)
    order = np.argsort(values, kind="stable")
    vs = values[order]
    bs = blocks[order]
    k = (n - 1) * q
    half = int(12.0 * np.sqrt(n * q * (1 - q)) + 50)
    dense = np.arange(max(0, int(np.floor(k)) - half), min(n, int(np.ceil(k)) + half + 1))
    coarse = np.linspace(0, n - 1, min(n, 201)).astype(np.int64)
    ranks = np.unique(np.concatenate([dense, coarse]))
    grid = vs[ranks]
    # bin of each value = first grid point >= value; counts <= grid[g] are cumulative bin counts
    gi = np.searchsorted(grid, vs, side="left")
    kk = grid.size
    cnt = np.bincount(bs * kk + gi, minlength=n_blocks * kk).reshape(n_blocks, kk)
    cum = np.cumsum(cnt, axis=1).astype(np.float64)
    c = w @ cum  # (R, K): resampled count of values <= grid[g]
    big_n = c[:, -1]
    h = (big_n - 1.0) * q
    j = np.floor(h)
    frac = h - j
    idx_j = (c < (j + 1.0)[:, None]).sum(axis=1)
    idx_j1 = (c < np.minimum(j + 2.0, big_n)[:, None]).sum(axis=1)
    idx_j = np.minimum(idx_j, kk - 1)
    idx_j1 = np.minimum(idx_j1, kk - 1)
    out = grid[idx_j] + frac * (grid[idx_j1] - grid[idx_j])
    # A grid point stands for its order statistic only where the rank below it is also a grid point; beyond the
    # dense window (near saturation a block bootstrap of correlated latencies moves the quantile far from its
    # rank) the grid's next value lies above the true one, by up to a quarter on a saturating step. Those
    # replicates are recomputed exactly from their weighted cumulative counts: O(n) each, and rare.
    gap = np.diff(ranks, prepend=-1) > 1  # grid point g skips ranks just below it
    rough = (big_n >= 1) & (gap[idx_j] | (gap[idx_j1] & (frac > 0)))
    for r in np.nonzero(rough)[0]:
        cw = np.cumsum(w[r][bs])  # resampled count of values <= vs[i]
        a = vs[min(int(np.searchsorted(cw, j[r] + 1.0, side="left")), n - 1)]
        b = vs[min(int(np.searchsorted(cw, min(j[r] + 2.0, big_n[r]), side="left")), n - 1)]
        out[r] = a + frac[r] * (b - a)
    return np.where(big_n >= 1, out, np.nan)


def politis_white_block_length(x: np.ndarray) -> float:
    """Optimal block length (in observations) for a block bootstrap of the mean of ``x``.

    Politis & White (2004), with the Patton, Politis & White (2009) correction, for the
    non-overlapping/moving block bootstrap: ``b = (2 G² / D)^(1/3) n^(1/3)`` with ``G`` and
    ``D`` from flat-top lag-window sums of the autocovariances up to ``M = 2 m̂``, where
    ``m̂`` is the first lag after which ``K = max(5, sqrt(log10 n))`` consecutive
    autocorrelations are insignificant (``|ρ| < 2 sqrt(log10 n / n)``). Written here
    because the ``arch`` package that ships it is not a bearing dependency.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 20 or np.all(x == x[0]):
        return 1.0
    xc = x - x.mean()
    max_lag = int(min(n - 1, max(20, np.ceil(np.sqrt(n)) + 5)))
    f = np.fft.rfft(xc, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[: max_lag + 1] / n
    rho = acov / acov[0]
    k_n = max(5, int(np.sqrt(np.log10(n))))
    crit = 2.0 * np.sqrt(np.log10(n) / n)
    m_hat = max_lag
    for m in range(1, max_lag - k_n + 1):
        if np.all(np.abs(rho[m : m + k_n]) < crit):
            m_hat = m
            break
    big_m = min(2 * max(m_hat, 1), max_lag)
    k = np.arange(-big_m, big_m + 1)
    u = np.abs(k) / big_m
    lam = np.where(u <= 0.5, 1.0, np.where(u <= 1.0, 2.0 * (1.0 - u), 0.0))
    r = acov[np.abs(k)]
    g = np.sum(lam * np.abs(k) * r)
    big_d = 2.0 * np.sum(lam * r) ** 2
    if big_d <= 0:
        return 1.0
    b = (2.0 * g * g / big_d) ** (1.0 / 3.0) * n ** (1.0 / 3.0)
    return float(min(max(b, 1.0), n))


def time_blocks(start_s: np.ndarray, t0: float, t1: float, n_blocks: int) -> np.ndarray:
    """0-based block id of each request: equal time spans of ``[t0, t1]``."""
    if t1 <= t0:
        return np.zeros(start_s.size, dtype=np.int64)
    b = np.floor((start_s - t0) / (t1 - t0) * n_blocks).astype(np.int64)
    return np.clip(b, 0, n_blocks - 1)


def row_blocks(n_rows: int, n_blocks: int) -> np.ndarray:
    """0-based block id of each row: equal runs of consecutive rows."""
    if n_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.minimum(np.arange(n_rows) * n_blocks // n_rows, n_blocks - 1).astype(np.int64)


__all__ = ["block_sums", "block_weights", "boot_quantile", "boot_rate", "politis_white_block_length", "row_blocks",
           "time_blocks"]
