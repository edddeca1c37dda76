"""Peaks per mix: each mix's own busiest bins, not the overall peak times the mix's share.

The busiest minute of the long-prompt mix need not be the busiest minute overall, so the
overall P99 times a mix's share (what a blended plan assumes) can understate that mix's own
P99. :func:`mix_peaks` takes requests per (bin, mix) over the profile's complete bins and gives
per mix: mean, P95, P99 and max of its rate (linear quantiles, ``bearing_lib.common.quantiles``;
bins where the mix had no request count as zero), its peak-to-mean, and the share method's
figure ``share x overall P(q)`` beside its own ``P(q)`` (q = the profile's target quantile),
with ``understated`` set where the share method is more than 10 % below the mix's own peak.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from bearing_lib.common.quantiles import quantile
from bearing_lib.traffic.document import MixPeak, MixPeaks

#: The share method "matters" when it is this much below the mix's own peak.
UNDERSTATED_RATIO = 1.10


def _statement(rows: list[MixPeak], quantile_level: float) -> str:
    under = [r for r in rows if r.understated]
    q = f"P{quantile_level * 100:g}"
    if not under:
        return f"every mix's own {q} is within 10 % of its share of the overall {q}"
    return "; ".join(f"{r.mix}: own {q} {r.target_rps:.3g} req/s vs share x overall {r.share_method_rps:.3g} "
                     f"({r.own_over_share:.2f}x)" for r in under)


def mix_peaks(counts: pl.DataFrame, bin_start_s: np.ndarray, bin_s: float, *, quantile_level: float,
              basis: str) -> MixPeaks:
    """Per-mix peaks from requests per (bin, mix).

    Parameters
    ----------
    counts : polars.DataFrame
        ``bin_start_s``, ``mix``, ``requests`` (several rows of one bin and mix are summed);
        rows outside ``bin_start_s`` are ignored.
    bin_start_s : numpy.ndarray
        Every complete bin of the profile (the same bins as its overall rate).
    bin_s : float
        Bin length, seconds.
    quantile_level : float
        The target quantile (the profile's, 0.99 by default).
    basis : str
        What the mixes are (length mixes of a trace, a metric label, ...), in words.
    """
    bins = np.asarray(bin_start_s, dtype=float)
    index = {float(b): i for i, b in enumerate(bins)}
    mixes = sorted(counts["mix"].unique().to_list())
    grid = np.zeros((len(mixes), bins.size))
    agg = counts.group_by("bin_start_s", "mix").agg(pl.col("requests").sum())
    for b, m, n in agg.iter_rows():
        i = index.get(float(b))
        if i is not None:
            grid[mixes.index(m), i] = float(n)
    total = grid.sum(axis=0)
    overall_q = float(quantile(total, [quantile_level])[0]) / bin_s if bins.size else 0.0
    grand = float(total.sum())
    rows = []
    for j, m in enumerate(mixes):
        v = grid[j]
        if v.sum() == 0:
            continue
        p95, p99, pq = (float(x) / bin_s for x in quantile(v, [0.95, 0.99, quantile_level]))
        share = float(v.sum()) / grand
        mean, mx, by_share = float(v.mean()) / bin_s, float(v.max()) / bin_s, share * overall_q
        own_over = pq / by_share if by_share > 0 else None
        rows.append(MixPeak(mix=m, n_requests=float(v.sum()), share=share, mean_rps=mean, p95_rps=p95, p99_rps=p99,
                            max_rps=mx, peak_to_mean=mx / mean if mean > 0 else None, target_rps=pq,
                            share_method_rps=by_share, own_over_share=own_over,
                            understated=own_over is not None and own_over > UNDERSTATED_RATIO))
    return MixPeaks(bin_s=bin_s, n_bins=int(bins.size), quantile=quantile_level, overall_target_rps=overall_q,
                    basis=basis, understated_ratio=UNDERSTATED_RATIO, statement=_statement(rows, quantile_level),
                    rows=rows)


__all__ = ["UNDERSTATED_RATIO", "MixPeak", "MixPeaks", "mix_peaks"]
