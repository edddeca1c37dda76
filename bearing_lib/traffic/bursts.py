"""Burst episodes: runs of bins whose rate exceeds k x the slot baseline.

The sources treat bursts (campaigns, viral events) as probabilistic events, "1-2 per
month, lasting 1-2 h, 3-5x peak QPS", to be covered by an elastic buffer. Here an episode
is a maximal run of consecutive bins with ``rate > k * baseline`` (runs separated by at
most ``merge_gap_bins`` quiet bins are merged). Bins whose baseline is zero cannot be
judged and are counted apart. The monthly frequency is ``count / span_days * 30``; from
a trace shorter than 30 days it is an extrapolation, and the result says so.
"""

from __future__ import annotations

import numpy as np

from bearing_lib.common.errors import ParameterError
from bearing_lib.traffic.document import BurstEpisode, Bursts

MONTH_DAYS = 30.0


def find_bursts(
    rate_rps: np.ndarray,
    baseline_rps: np.ndarray,
    start_s: np.ndarray,
    bin_s: float,
    *,
    k: float = 3.0,
    merge_gap_bins: int = 0,
    baseline: str = "given",
) -> Bursts:
    """Burst episodes of a contiguous series (see module docstring).

    Parameters
    ----------
    rate_rps, baseline_rps, start_s : numpy arrays of one length
        Rate per bin (req/s), its baseline (req/s) and the bin starts (s).
    bin_s : float
        Bin length in seconds.
    k : float
        Multiplier over the baseline; default 3 (per-minute bins).
    merge_gap_bins : int
        Merge episodes separated by at most this many quiet bins.
    baseline : str
        How the baseline was made (echoed in the result).
    """
    rate = np.asarray(rate_rps, dtype=float)
    base = np.asarray(baseline_rps, dtype=float)
    starts = np.asarray(start_s, dtype=float)
    if not (rate.shape == base.shape == starts.shape):
        raise ParameterError("rate_rps, baseline_rps and start_s must have the same length")
    if not k > 0:
        raise ParameterError(f"burst multiplier k must be > 0, got {k!r}")
    if merge_gap_bins < 0:
        raise ParameterError(f"merge_gap_bins must be >= 0, got {merge_gap_bins!r}")
    judged = np.isfinite(base) & (base > 0)
    above = judged & (rate > k * base)
    idx = np.flatnonzero(above)
    runs: list[tuple[int, int]] = []  # inclusive bin index ranges
    for i in idx:
        if runs and i - runs[-1][1] - 1 <= merge_gap_bins:
            runs[-1] = (runs[-1][0], int(i))
        else:
            runs.append((int(i), int(i)))
    episodes = []
    for a, b in runs:
        seg = slice(a, b + 1)
        mult = np.where(judged[seg], rate[seg] / np.where(judged[seg], base[seg], 1.0), np.nan)
        j = a + int(np.nanargmax(mult))
        in_burst = above[seg]
        episodes.append(
            BurstEpisode(
                start_s=float(starts[a]),
                end_s=float(starts[a]) + float((b - a + 1) * bin_s),
                duration_s=float((b - a + 1) * bin_s),
                n_bins=b - a + 1,
                peak_rps=float(rate[seg].max()),
                baseline_at_peak_rps=float(base[j]),
                peak_multiplier=float(rate[j] / base[j]),
                mean_multiplier=float(np.mean(rate[seg][in_burst] / base[seg][in_burst])),
                excess_requests=float(np.sum(np.clip(rate[seg] - np.nan_to_num(base[seg]), 0, None)) * bin_s),
            )
        )
    days = rate.size * bin_s / 86_400.0
    durations = [e.duration_s for e in episodes]
    return Bursts(
        k=k,
        bin_s=bin_s,
        baseline=baseline,
        rule=(f"a burst is a run of {bin_s:g} s bins with rate > {k:g} x baseline"
              + (f", runs at most {merge_gap_bins} bin(s) apart merged" if merge_gap_bins else "")),
        count=len(episodes),
        total_duration_s=float(sum(durations)),
        max_duration_s=max(durations) if durations else None,
        max_peak_multiplier=max((e.peak_multiplier for e in episodes), default=None),
        per_month=len(episodes) / days * MONTH_DAYS if days > 0 else None,
        per_month_note=(f"estimated from {days:.2f} days: an extrapolation to 30 days" if days < MONTH_DAYS
                        else f"observed over {days:.1f} days"),
        n_unjudged_bins=int((~judged).sum()),
        episodes=episodes,
    )
