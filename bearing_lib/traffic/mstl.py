"""MSTL (Bandara, Hyndman & Bergmeir 2021) with STL's loess passes in numpy: statsmodels' numbers, without its imports.

Why hand-written rather than the library: the profile's decomposition is one MSTL of at most a few
hundred hourly rates (a fit of a few milliseconds), but ``statsmodels.tsa.seasonal`` imports pandas and
scipy (``scipy.signal``, ``scipy.stats``): 1.2-2 s of CPU on the project's 2-core VM, a fifth of the
whole ``bearing profile`` of a 12.5 M-request file (``docs/performance.md``). Importing only
statsmodels' compiled STL (``statsmodels.tsa.stl._stl``) pulls in the same modules. So this module
ports the exact computation statsmodels runs for ``MSTL(y, periods=...).fit()`` with its defaults:

* MSTL (``statsmodels/tsa/stl/mstl.py``): seasonal windows ``7 + 4 i``; periods in increasing
  order; ``iterate = 2`` passes over the periods when there are several (1 for one); no Box-Cox;
  each period's seasonal component is re-estimated from the series less the other components, the
  trend is the last STL's trend, the residual what is left.
* STL (``statsmodels/tsa/stl/_stl.pyx``, a port of Cleveland et al.'s Fortran ``stl``), non-robust
  (``inner_iter = 5``, ``outer_iter = 0``), degree 1 everywhere, every jump 1; trend window
  ``ceil(1.5 p / (1 - 1.5 / s))`` and low-pass window ``p + 1``, both made odd.

Every loess estimate (``_est``) is evaluated for all points at once as a matrix of tricube weights,
and each of its sums is taken left to right as the Cython loop takes it (``numpy.cumsum``'s last
column, not numpy's pairwise ``sum``), the moving averages (``_ma``) as the same running sum:
``tests/traffic/test_mstl.py`` compares the components with statsmodels' on daily, daily + weekly,
two-cycle and ragged series and finds them equal to within 1e-12 relative (in practice to the last
bit or one ulp; ``pow`` may be a different libm routine).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: relative tolerance within which the components equal statsmodels' MSTL (see tests/traffic/test_mstl.py)
TOLERANCE = 1e-12


def _seqsum(x: np.ndarray) -> np.ndarray:
    """Sums along the last axis, taken left to right (as a C loop adds), not pairwise."""
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1])
    # along the first axis of the transposed copy: the same left-to-right order per sum, vectorised across sums
    return np.cumsum(np.moveaxis(x, -1, 0).copy(), axis=0)[-1]


@functools.lru_cache(maxsize=4096)
def _tricube(h: float, rmax: int) -> np.ndarray:
    """STL's weight of a point at whole distance ``r = 0..rmax`` from the estimate, for half-width ``h``,
    computed as the Cython code computes it (C ``pow``, via ``math.pow``: numpy's vectorised ``**`` rounds
    differently in about 5 % of values). Distances and half-widths are whole numbers, so a table per ``h``
    serves every call."""
    h9, h1 = 0.999 * h, 0.001 * h
    out = np.zeros(rmax + 1)
    for r in range(rmax + 1):
        if r <= h9:
            out[r] = 1.0 if r <= h1 else math.pow(1.0 - math.pow(r / h, 3), 3)
    return out


def _est(y: np.ndarray, n: int, len_: int, ideg: int, xs: np.ndarray, nleft: np.ndarray,
         nright: np.ndarray) -> np.ndarray:
    """STL's ``_est`` (no robustness weights) at every point ``xs`` (1-based) of every row of ``y``.

    ``y``: (rows, n); ``xs``, ``nleft``, ``nright``: (points,), 1-based, every window of the same width.
    Returns (rows, points), NaN where the weights sum to zero (the caller substitutes, as STL does)."""
    width = int(nright[0] - nleft[0] + 1)
    rng = n - 1.0
    h = np.maximum(xs - nleft, nright - xs).astype(np.float64)
    if len_ > n:
        h += (len_ - n) // 2.0
    j1 = (nleft[:, None] + np.arange(width)[None, :]).astype(np.float64)  # j + 1 for each point's window
    r = np.abs(j1 - xs[:, None])
    ri = r.astype(np.int64)  # whole numbers: xs and the window are integers
    rmax = int(ri.max())
    hs, inv = np.unique(h, return_inverse=True)
    table = np.stack([_tricube(float(hv), rmax) for hv in hs])
    w = table[inv[:, None], ri]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = _seqsum(w)
        ok = a > 0
        w = w / np.where(ok, a, 1.0)[:, None]
        if ideg > 0:
            lin = h > 0
            a = _seqsum(w * j1)
            b = xs - a
            c = _seqsum(w * (j1 - a[:, None]) ** 2)
            lin &= np.sqrt(c) > 0.001 * rng
            b = np.where(lin, b / np.where(lin, c, 1.0), 0.0)
            w = np.where(lin[:, None], w * (b[:, None] * (j1 - a[:, None]) + 1.0), w)
    idx = (nleft[:, None] - 1 + np.arange(width)[None, :])  # (points, width)
    ys = _seqsum(w[None, :, :] * y[:, idx])
    return np.where(ok[None, :], ys, np.nan)


def _ess(y: np.ndarray, len_: int, ideg: int) -> np.ndarray:
    """STL's ``_ess`` with jump 1 (no robustness weights) on each row of ``y`` (rows, n)."""
    n = y.shape[1]
    if n < 2:
        return y.copy()
    i = np.arange(n)
    if len_ >= n:
        nleft, nright = np.ones(n, dtype=np.int64), np.full(n, n, dtype=np.int64)
    else:
        nsh = (len_ + 2) // 2
        nleft = 1 + np.clip(i + 1 - nsh, 0, n - len_)
        nright = nleft + len_ - 1
    ys = _est(y, n, len_, ideg, (i + 1).astype(np.float64), nleft, nright)
    return np.where(np.isnan(ys), y, ys)


def _ma(x: np.ndarray, len_: int) -> np.ndarray:
    """STL's ``_ma``: the moving average of ``len_`` values as its running sum computes it."""
    v0 = _seqsum(x[:len_])
    v = np.cumsum(np.concatenate([[v0], x[len_:] - x[:x.size - len_]]))
    return v / float(len_)


def _ss(y: np.ndarray, period: int, ns: int, ideg: int) -> np.ndarray:
    """STL's ``_ss``: each cycle-subseries smoothed (``_ess``) and extended one point at each end;
    returns the ``n + 2 period`` values STL keeps in ``work[1]``."""
    n = y.size
    season = np.zeros(n + 2 * period)
    for k in sorted({(n - (j + 1)) // period + 1 for j in range(period)}):
        js = np.array([j for j in range(period) if (n - (j + 1)) // period + 1 == k])
        sub = y[js[:, None] + period * np.arange(k)[None, :]]  # (subseries, k)
        mid = _ess(sub, ns, ideg)
        nright = min(ns, k)
        lo = _est(sub, k, ns, ideg, np.array([0.0]), np.array([1]), np.array([nright]))[:, 0]
        lo = np.where(np.isnan(lo), mid[:, 0], lo)
        nleft = max(1, k - ns + 1)
        hi = _est(sub, k, ns, ideg, np.array([k + 1.0]), np.array([nleft]), np.array([k]))[:, 0]
        hi = np.where(np.isnan(hi), mid[:, -1], hi)
        full = np.concatenate([lo[:, None], mid, hi[:, None]], axis=1)  # (subseries, k + 2)
        season[js[:, None] + period * np.arange(k + 2)[None, :]] = full
    return season


def _stl(y: np.ndarray, period: int, seasonal: int, inner_iter: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels ``STL(y, period, seasonal).fit()`` (non-robust, defaults): (seasonal, trend)."""
    n = y.size
    trend_len = int(np.ceil(1.5 * period / (1 - 1.5 / seasonal)))
    trend_len += trend_len % 2 == 0
    low_pass = period + 1
    low_pass += low_pass % 2 == 0
    trend = np.zeros(n)
    season = np.zeros(n)
    for _ in range(inner_iter):
        cyc = _ss(y - trend, period, seasonal, 1)
        low = _ma(_ma(_ma(cyc, period), period), 3)
        low = _ess(low[None, :], low_pass, 1)[0]
        season = cyc[period:period + n] - low
        trend = _ess((y - season)[None, :], trend_len, 1)[0]
    return season, trend


@dataclass(frozen=True)
class MSTLFit:
    """The components of :func:`mstl` (``seasonal``: one row per period, in ``periods`` order)."""

    periods: tuple[int, ...]
    trend: np.ndarray
    seasonal: np.ndarray
    resid: np.ndarray


def mstl(y: np.ndarray, periods: tuple[int, ...], *, iterate: int = 2) -> MSTLFit:
    """MSTL of ``y`` with the given periods (each at most half the series: ``2 p <= n``), as statsmodels'
    ``MSTL(y, periods=periods).fit()`` computes it (see the module docstring).

    ``periods`` are sorted; the seasonal windows are ``7 + 4 i`` in that order."""
    y = np.ascontiguousarray(np.asarray(y, dtype=np.float64))
    if y.ndim != 1:
        raise ValueError("y must be a 1-d series")
    ps = tuple(sorted(periods))
    if not ps or any(p < 2 or 2 * p > y.size for p in ps):
        raise ValueError(f"each period must be >= 2 and at most half the series ({y.size} values); got {periods}")
    windows = tuple(7 + 4 * i for i in range(1, len(ps) + 1))
    seasonal = np.zeros((len(ps), y.size))
    deseas = y
    trend = np.zeros(y.size)
    for _ in range(1 if len(ps) == 1 else iterate):
        for i, (p, w) in enumerate(zip(ps, windows, strict=True)):
            deseas = deseas + seasonal[i]
            seasonal[i], trend = _stl(deseas, p, w)
            deseas = deseas - seasonal[i]
    if not math.isfinite(float(np.sum(trend))):
        raise ValueError("MSTL gave a non-finite trend (non-finite input?)")
    return MSTLFit(ps, trend, seasonal, deseas - trend)


__all__ = ["TOLERANCE", "MSTLFit", "mstl"]
