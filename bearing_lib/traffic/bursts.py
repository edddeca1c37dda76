"""Burst episodes: runs of bins whose rate exceeds k x the slot baseline.

The sources treat bursts (campaigns, viral events) as probabilistic events, "1-2 per
month, lasting 1-2 h, 3-5x peak QPS", to be covered by an elastic buffer. Here an episode
is a maximal run of consecutive bins with ``rate > k * baseline`` (runs separated by at
most ``merge_gap_bins`` quiet bins are merged). Bins whose baseline is zero cannot be
judged and are counted apart. The monthly frequency is ``count / span_days * 30``; from
a trace shorter than 30 days it is an extrapolation, and the result says so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np

from bearing_lib.common.errors import ParameterError

MONTH_DAYS = 30.0


@dataclass(frozen=True)
class BurstEpisode:
    """One burst: where it starts, how long, how high (rates in req/s)."""

    start_s: float
    duration_s: float
    n_bins: int
    peak_rps: float
    baseline_at_peak_rps: float
    peak_multiplier: float
    mean_multiplier: float
    excess_requests: float

    def to_dict(self) -> dict[str, object]:
        return {
            "start_s": self.start_s,
            "end_s": self.start_s + self.duration_s,
            "duration_s": self.duration_s,
            "n_bins": self.n_bins,
            "peak_rps": self.peak_rps,
            "baseline_at_peak_rps": self.baseline_at_peak_rps,
            "peak_multiplier": self.peak_multiplier,
            "mean_multiplier": self.mean_multiplier,
            "excess_requests": self.excess_requests,
        }


@dataclass
class Bursts:
    """Burst episodes found in a rate series, with the parameters that found them."""

    k: float
    bin_s: float
    span_s: float
    baseline: str
    episodes: list[BurstEpisode]
    n_unjudged_bins: int = 0
    merge_gap_bins: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.episodes)

    @property
    def per_month(self) -> float | None:
        """Estimated episodes per 30 days (None for an empty span)."""
        days = self.span_s / 86_400.0
        return self.count / days * MONTH_DAYS if days > 0 else None

    @property
    def rule(self) -> str:
        """The burst rule in words (``bursts.rule`` in the JSON)."""
        return (f"a burst is a run of {self.bin_s:g} s bins with rate > {self.k:g} x baseline"
                + (f", runs at most {self.merge_gap_bins} bin(s) apart merged" if self.merge_gap_bins else ""))

    @property
    def per_month_note(self) -> str:
        """How :attr:`per_month` was obtained (``bursts.per_month_note`` in the JSON)."""
        days = self.span_s / 86_400.0
        return (f"estimated from {days:.2f} days: an extrapolation to 30 days" if days < MONTH_DAYS
                else f"observed over {days:.1f} days")

    def to_dict(self) -> dict[str, object]:
        durations = [e.duration_s for e in self.episodes]
        freq_note = self.per_month_note
        return {
            "k": self.k,
            "bin_s": self.bin_s,
            "baseline": self.baseline,
            "rule": self.rule,
            "count": self.count,
            "total_duration_s": float(sum(durations)),
            "max_duration_s": max(durations) if durations else None,
            "max_peak_multiplier": max((e.peak_multiplier for e in self.episodes), default=None),
            "per_month": self.per_month,
            "per_month_note": freq_note,
            "n_unjudged_bins": self.n_unjudged_bins,
            "episodes": [e.to_dict() for e in self.episodes],
            "notes": self.notes,
        }

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        rows = "".join(
            f"<tr><td>{e.start_s:.0f}</td><td>{e.duration_s:.0f}</td><td>{e.peak_rps:.2f}</td>"
            f"<td>{e.peak_multiplier:.2f}</td></tr>"
            for e in self.episodes
        )
        return (
            f"<p><b>{self.count} burst(s)</b> above {self.k:g}x baseline ({html.escape(self.baseline)})</p>"
            f"<table><tr><th>start_s</th><th>duration_s</th><th>peak_rps</th><th>peak ×</th></tr>{rows}</table>"
        )


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
                duration_s=float((b - a + 1) * bin_s),
                n_bins=b - a + 1,
                peak_rps=float(rate[seg].max()),
                baseline_at_peak_rps=float(base[j]),
                peak_multiplier=float(rate[j] / base[j]),
                mean_multiplier=float(np.mean(rate[seg][in_burst] / base[seg][in_burst])),
                excess_requests=float(np.sum(np.clip(rate[seg] - np.nan_to_num(base[seg]), 0, None)) * bin_s),
            )
        )
    return Bursts(
        k=k,
        bin_s=bin_s,
        span_s=rate.size * bin_s,
        baseline=baseline,
        episodes=episodes,
        n_unjudged_bins=int((~judged).sum()),
        merge_gap_bins=merge_gap_bins,
    )
