"""Traffic profile of production traffic: rates, peaks, cycles, bursts, dispersion, mixes.

``profile_traffic(trace)`` reads a :class:`~bearing_lib.data.trace.RequestTrace` (per-request
start times) or, as a coarser profile, :class:`~bearing_lib.data.ratewindows.RateWindows`
(e.g. ServeGen's 600 s windows) and returns the :class:`~bearing_lib.traffic.document.TrafficProfile`: the per-minute
rate distribution (mean, P50/P95/P99/max, peak/mean; linear quantiles), per-second rates
where the timestamps allow, hour-of-day and weekday x hour baselines, an MSTL
decomposition, burst episodes, the index of dispersion and inter-arrival CV, mix shares
overall and per hour, the target load and staged reservation, the SLO error budget and
the sequence-length distribution (input + output tokens per request, for the memory plan).
The profile JSON also carries the per-minute series itself (``per_minute.series``; for
rate windows ``per_window.series``), so the capacity plan can compute CBU and replay the
traffic from the JSON alone.

The binning convention is stated in every profile's ``convention`` field (see
:mod:`bearing_lib.traffic.binning`): per-minute bins aligned to UTC wall-clock minutes, empty
minutes counted as zero, the partial first and last minutes left out; relative-clock
traces bin from the first request and say so. Sections the data cannot support are
:class:`~bearing_lib.common.unavailable.Unavailable` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TypeVar

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.quantiles import QUANTILE_METHOD, quantile
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.mixes import MixSpec
from bearing_lib.data.ratewindows import RateWindows
from bearing_lib.data.trace import RequestTrace
from bearing_lib.traffic.binning import (
    RateSeries,
    TimestampResolution,
    binned_counts,
    convention_text,
    per_minute_counts,
    series_from_rate_windows,
    timestamp_resolution,
)
from bearing_lib.traffic.bursts import Bursts, find_bursts
from bearing_lib.traffic.document import (
    PROFILE_SCHEMA,
    Dispersion,
    MetricsSource,
    MinuteRateStats,
    MinuteTokens,
    MixHour,
    MixShare,
    MixSharesPerHour,
    RateStats,
    RpsStats,
    SLOBudget,
    Targets,
    TokenRate,
    TrafficProfile,
    WindowRateStats,
)
from bearing_lib.traffic.mix_peaks import MixPeaks, mix_peaks
from bearing_lib.traffic.seasonality import Decomposition, SlotBaselines, burst_baseline_rps, decompose, slot_baselines
from bearing_lib.traffic.seqlen import SeqLenDistribution, seq_len_distribution
from bearing_lib.traffic.slo_budget import slo_budget
from bearing_lib.traffic.source import ProfileParameters, ProfileSource
from bearing_lib.traffic.targets import DEFAULT_SEED, compute_targets

_S = TypeVar("_S", bound=RateStats)

__all__ = [
    "MixShares",
    "assemble_profile",
    "binned_counts",
    "dispersion",
    "hour_basis",
    "mix_shares",
    "per_minute_counts",
    "profile_rate_windows",
    "profile_traffic",
    "rate_stats",
    "timestamp_resolution",
]


def rate_stats(requests_per_bin: np.ndarray, bin_s: float, *, unit: str = "", note: str | None = None,
               kind: type[_S] = RateStats) -> _S:  # type: ignore[assignment]
    """Distribution of a per-bin request count: n, empty bins, mean, P50/P95/P99, max, peak/mean.

    Values are in requests per bin (requests/min for 60 s bins); ``rps`` repeats them in
    req/s. Quantiles are linear (``bearing_lib.common.quantiles``). ``kind``: the block it makes
    (:class:`~bearing_lib.traffic.document.RateStats` or the per-minute / per-window one).
    """
    v = np.asarray(requests_per_bin, dtype=float)
    if v.size == 0:
        raise InsufficientDataError("no complete bin: the trace is shorter than one bin")
    p50, p95, p99 = (float(x) for x in quantile(v, [0.5, 0.95, 0.99]))
    mean, mx = float(v.mean()), float(v.max())
    return kind(
        bin_s=bin_s, n_bins=int(v.size), n_empty=int((v == 0).sum()), mean=mean, p50=p50, p95=p95, p99=p99, max=mx,
        peak_to_mean=mx / mean if mean > 0 else None,
        rps=RpsStats(mean=mean / bin_s, p50=p50 / bin_s, p95=p95 / bin_s, p99=p99 / bin_s, max=mx / bin_s),
        unit=unit, note=note,
    )


def _minute_block(counts: pl.DataFrame, series: RateSeries) -> MinuteRateStats:
    tokens: dict[str, TokenRate | None] = {}
    for col in ("input_tokens", "output_tokens"):
        s = counts[col]
        if s.null_count() == s.len():
            tokens[col] = None
            continue
        v = s.to_numpy().astype(float)
        p95, p99 = (float(x) for x in quantile(v, [0.95, 0.99]))
        tokens[col] = TokenRate(mean=float(v.mean()), p95=p95, p99=p99, max=float(v.max()),
                                unit=f"{col.replace('_', ' ')}/min")
    block = rate_stats(counts["requests"].to_numpy(), 60.0, unit="requests/min", kind=MinuteRateStats)
    return replace(block, n_minutes=block.n_bins, n_bins=None, tokens=MinuteTokens(**tokens),
                   series=series.minute_series())


def dispersion(trace: RequestTrace, counts_per_minute: np.ndarray,
               resolution: TimestampResolution) -> Dispersion:
    """Index of dispersion of per-minute counts and the inter-arrival CV.

    Index of dispersion = sample variance / mean of the per-minute counts (1 for a
    Poisson process; > 1 is burstier). Inter-arrival CV = sample std / mean of the gaps
    between consecutive request starts (ties give zero gaps; 1 for Poisson). Both use
    ``ddof = 1``. The CV is refused when timestamps are quantized (the gaps are then
    artefacts of the grid).
    """
    if resolution.quantized:
        return dispersion_from_gaps(counts_per_minute, resolution, 0, None)
    gaps = trace.frame["start_s"].diff().drop_nulls().to_numpy()
    if gaps.size < 2 or gaps.mean() <= 0:
        return dispersion_from_gaps(counts_per_minute, resolution, int(gaps.size), None)
    return dispersion_from_gaps(counts_per_minute, resolution, int(gaps.size), float(gaps.std(ddof=1) / gaps.mean()))


def dispersion_from_gaps(counts_per_minute: np.ndarray, resolution: TimestampResolution, n_gaps: int,
                         cv: float | None) -> Dispersion:
    """:func:`dispersion` from the per-minute counts and the inter-arrival CV over ``n_gaps`` gaps
    (``None``: fewer than three distinct start times); what the engines compute from aggregates."""
    c = np.asarray(counts_per_minute, dtype=float)
    iod = float(c.var(ddof=1) / c.mean()) if c.size >= 2 and c.mean() > 0 else None
    iod_note = ("sample variance / mean of requests per complete minute (1 = Poisson)" if iod is not None
                else "fewer than two complete minutes with requests")
    if resolution.quantized:
        cv, cv_note = None, (f"not measured: timestamps move in {resolution.quantum_s:.3g} s steps, so inter-arrival "
                             "times are artefacts of the grid")
    elif cv is None:
        cv_note = "fewer than three requests with distinct start times"
    else:
        cv_note = f"std / mean of {n_gaps:,} gaps between consecutive request starts (1 = Poisson)"
    return Dispersion(index_of_dispersion=iod, index_of_dispersion_note=iod_note, interarrival_cv=cv,
                      interarrival_cv_note=cv_note, index_of_dispersion_bin_s=60.0)


@dataclass
class MixShares:
    """The mix shares of a profile, as its own parts: the spec they were counted with (written as ``mix_spec``),
    each mix's share of all requests (``mix_shares``) and per hour (``mix_shares_per_hour``, with the hours' basis
    and the notes)."""

    spec: MixSpec
    overall: list[MixShare]
    per_hour: MixSharesPerHour

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        rows = "".join(f"<tr><td>{html.escape(str(r.mix))}</td><td>{r.share:.1%}</td><td>{r.n_requests:,}</td></tr>"
                       for r in self.overall)
        return f"<p><b>Mix shares</b></p><table><tr><th>mix</th><th>share</th><th>requests</th></tr>{rows}</table>"


def mix_shares(trace: RequestTrace, spec: MixSpec | None = None) -> MixShares | Unavailable:
    """Shares of requests per mix of ``spec`` (default: one mix ``all``), overall and per hour.

    Hours are UTC clock hours for wall-clock traces and hours from the first request for
    relative ones. A mix bounded on a dimension the trace lacks cannot be assigned:
    the result is then :class:`Unavailable` naming the field.
    """
    spec = spec or MixSpec.single()
    f = trace.frame
    needed = {d for m in spec.mixes for d in m.bounds}
    notes = []
    for dim in sorted(needed):
        col = "input_tokens" if dim == "cache_hit_ratio" else dim
        if f[col].null_count() == f.height:
            return Unavailable(f"mix bounds use {dim}, but the trace has no {col}")
        if f[col].null_count():
            notes.append(f"{f[col].null_count()} request(s) have no {col} and fall outside mixes bounded on it")
    if "cache_hit_ratio" in needed and f["cached_tokens"].null_count() == f.height:
        notes.append("the trace has no cached_tokens: cache-hit ratio taken as 0 for every request")
    if trace.provenance.time_origin == "none":
        counts = spec.assign(f.lazy().select("input_tokens", "output_tokens", "cached_tokens")).group_by("mix").agg(
            pl.len().cast(pl.Int64).alias("n_requests")).with_columns(pl.lit(None, pl.Float64).alias("h")).collect()
        return shares_from_counts(spec, counts, None, "no per-request times", notes)
    aligned = trace.provenance.time_origin == "epoch"
    origin = 0.0 if aligned else float(f["start_s"].min())
    counts = pl.collect_all(mix_hour_partials(f.lazy(), spec, origin))[0]
    return shares_from_counts(spec, counts, origin, hour_basis(aligned), notes)


def hour_basis(aligned: bool) -> str:
    """What the profile's hours are: UTC clock hours (an epoch clock) or hours from the first request."""
    return "UTC clock hours (partial first and last hours included)" if aligned else (
        "hours from the first request (relative clock)"
    )


def mix_hour_partials(lf: pl.LazyFrame, spec: MixSpec, origin: float) -> list[pl.LazyFrame]:
    """Requests per hour ``h`` (from ``origin``) and mix: a partial that sums across partitions."""
    return [
        spec.assign(lf.select("start_s", "input_tokens", "output_tokens", "cached_tokens"))
        .with_columns(((pl.col("start_s") - origin) / 3600.0).floor().alias("h"))
        .group_by("h", "mix")
        .agg(pl.len().cast(pl.Int64).alias("n_requests"))
    ]


def shares_from_counts(spec: MixSpec, counts: pl.DataFrame, origin: float | None, basis: str,
                       notes: list[str]) -> MixShares:
    """:class:`MixShares` from per hour x mix counts (``h``, ``mix``, ``n_requests``; rows of several
    partitions are summed); ``origin`` None: no per-request times, no per-hour rows."""
    counts = counts.group_by("h", "mix").agg(pl.col("n_requests").sum())
    names = [*spec.names(), "other"]
    per_mix = counts.group_by("mix").agg(pl.col("n_requests").sum())
    overall = (
        pl.DataFrame({"mix": names})
        .join(per_mix, on="mix", how="left")
        .with_columns(pl.col("n_requests").fill_null(0))
        .with_columns((pl.col("n_requests") / pl.col("n_requests").sum()).alias("share"))
        .filter((pl.col("mix") != "other") | (pl.col("n_requests") > 0))
        .select("mix", "share", "n_requests")
    )
    if origin is None:
        per_hour: list[MixHour] = []
    else:
        per_hour = [MixHour(**r) for r in (
            counts.with_columns((pl.col("n_requests") / pl.col("n_requests").sum().over("h")).alias("share"))
            .select((pl.col("h") * 3600.0 + origin).alias("hour_start_s"), "mix", "share", "n_requests")
            .sort("hour_start_s", "mix")
        ).to_dicts()]
    return MixShares(spec, [MixShare(**r) for r in overall.to_dicts()],
                     MixSharesPerHour(basis=basis, rows=per_hour, notes=notes))


def _utc(t: float | None, aligned: bool) -> str | None:
    if t is None or not aligned:
        return None
    return datetime.fromtimestamp(t, tz=UTC).isoformat().replace("+00:00", "Z")


def _write(*, source: ProfileSource, convention: str, span_s: float, start_s: float | None, end_s: float | None,
           aligned: bool, resolution: TimestampResolution | Unavailable,
           per_minute_stats: MinuteRateStats | Unavailable, per_second_stats: RateStats | Unavailable,
           per_window_stats: WindowRateStats | None, slots: SlotBaselines,
           decomposition: Decomposition, bursts: Bursts, dispersion: Dispersion | Unavailable,
           mixes: MixShares | Unavailable, targets: Targets, slo: SLOBudget | Unavailable,
           parameters: ProfileParameters, seq_len: SeqLenDistribution | Unavailable,
           mix_peaks: MixPeaks | Unavailable | None = None, metrics: MetricsSource | None = None) -> TrafficProfile:
    """The :class:`~bearing_lib.traffic.document.TrafficProfile` of the computed sections: each section written
    in the profile JSON's layout (``docs/interfaces.md`` §5; ``docs/traffic-profile.md``) and read into the one
    profile type, validated once. ``mix_peaks`` None: not computed (rate windows); ``metrics`` the
    :class:`~bearing_lib.traffic.document.MetricsSource` of a profile from Prometheus counters."""
    from bearing_lib.common.version import __version__

    def d(x: object) -> object:
        return x.to_dict() if hasattr(x, "to_dict") else x

    mixes_json: object
    if isinstance(mixes, MixShares):
        mixes_json = [r.to_dict() for r in mixes.overall]
        mixes_hour: object = mixes.per_hour.to_dict()
        spec: object = mixes.spec.to_dict()
    else:
        mixes_json, mixes_hour, spec = mixes.to_dict(), mixes.to_dict(), None
    out = {
        "schema": PROFILE_SCHEMA,
        "bearing_version": __version__,
        "quantile_method": QUANTILE_METHOD,
        "source": source.to_dict(),
        "convention": convention,
        "span_s": span_s,
        "start_s": start_s,
        "end_s": end_s,
        "start_utc": _utc(start_s, aligned),
        "end_utc": _utc(end_s, aligned),
        "clock": "UTC wall clock" if aligned else "relative (seconds from the trace start)",
        "parameters": parameters.to_dict(),
        "resolution": d(resolution),
        "per_minute": d(per_minute_stats),
        "per_second": d(per_second_stats),
        "slots": slots.to_dict(),
        "decomposition": d(decomposition),
        "bursts": bursts.to_dict(),
        "dispersion": d(dispersion),
        "mix_spec": spec,
        "mix_shares": mixes_json,
        "mix_shares_per_hour": mixes_hour,
        "targets": targets.to_dict(),
        "slo_budget": d(slo),
        "seq_len": d(seq_len),
    }
    if mix_peaks is not None:
        out["mix_peaks"] = mix_peaks.to_dict()
    if metrics is not None:
        out["metrics"] = d(metrics)
    if per_window_stats is not None:
        out["per_window"] = per_window_stats.to_dict()
    return TrafficProfile.from_dict(out, source=f"the profile of {source.path}")


def profile_traffic(
    data: RequestTrace | RateWindows,
    *,
    mix_spec: MixSpec | None = None,
    quantile_level: float = 0.99,
    growth: float = 1.0,
    burst_k: float = 3.0,
    burst_merge_gap_bins: int = 0,
    slo_objective: float = 0.999,
    n_boot: int = 1000,
    seed: int = DEFAULT_SEED,
) -> TrafficProfile:
    """Profile a production trace (or rate windows); see the module docstring.

    Parameters
    ----------
    data : RequestTrace or RateWindows
        Per-request trace with start times, or per-window rates (coarser profile).
    mix_spec : MixSpec, optional
        Mixes for the shares (e.g. ``MixSpec.from_dict(limits["mix_spec"])``); default
        one mix ``all``.
    quantile_level : float
        Quantile of the per-minute rate that defines the target (0.99 = P99).
    growth : float
        Growth multiplier applied to the target.
    burst_k : float
        A burst is a run of bins above ``burst_k`` x the slot baseline (default 3).
    slo_objective : float
        Availability objective for the error budget (e.g. 0.999).
    """
    params = ProfileParameters(quantile=quantile_level, growth=growth, burst_k=burst_k,
                               burst_merge_gap_bins=burst_merge_gap_bins, slo_objective=slo_objective,
                               n_boot=n_boot, seed=seed)
    if isinstance(data, RateWindows):
        return profile_rate_windows(data, params)
    if not isinstance(data, RequestTrace):
        raise ParameterError(f"expected a RequestTrace or RateWindows, got {type(data).__name__}")
    prov = data.provenance
    if prov.time_origin == "none":
        raise InsufficientDataError(
            f"{prov.source}: the source keeps no per-request times (time_origin 'none'); a traffic profile needs "
            "arrival times (this looks like load-test output, not production traffic)"
        )
    if data.frame["step"].null_count() < data.frame.height:
        raise ParameterError(
            f"{prov.source}: the requests carry load-test steps ({prov.format}); a traffic profile describes "
            "production traffic. Use `bearing limits` for load-test results"
        )
    res = timestamp_resolution(data)
    if not res.allows_bin(60.0):
        raise ParameterError(
            f"{prov.source}: timestamps move in {res.quantum_s:.3f} s steps; per-minute rates would be artefacts "
            "of that grid"
        )
    minutes = binned_counts(data, 60.0, check_grid=False).rename({"bin_start_s": "minute_start_s"})
    if minutes.height == 0:
        raise InsufficientDataError(
            f"{prov.source}: the trace spans {float(data.frame['start_s'].max() - data.frame['start_s'].min()):.1f} s "
            "and holds no complete minute; a traffic profile needs at least one"
        )
    seconds = binned_counts(data, 1.0, check_grid=False) if res.allows_bin(1.0) else None
    f = data.frame
    mixes = mix_shares(data, mix_spec)
    mix_minutes = None
    if isinstance(mixes, MixShares) and len(mixes.overall) > 1:
        origin = 0.0 if prov.time_origin == "epoch" else float(f["start_s"].min())
        mix_minutes = mix_minute_counts(f, mixes.spec, origin).collect()
    return assemble_profile(
        source=ProfileSource.of(prov, "requests", f.height), time_origin=prov.time_origin,
        t_min=float(f["start_s"].min()), t_max=float(f["start_s"].max()), resolution=res, minutes=minutes,
        seconds=seconds, dispersion=dispersion(data, minutes["requests"].to_numpy(), res),
        mixes=mixes, slo=slo_budget(data, objective=slo_objective), seq_len=_seq_len(data),
        params=params, quantile_level=quantile_level, growth=growth, burst_k=burst_k,
        burst_merge_gap_bins=burst_merge_gap_bins, n_boot=n_boot, seed=seed, mix_minutes=mix_minutes,
    )


def assemble_profile(*, source: ProfileSource, time_origin: str, t_min: float, t_max: float,
                     resolution: TimestampResolution | Unavailable, minutes: pl.DataFrame,
                     seconds: pl.DataFrame | None,
                     dispersion: Dispersion, mixes: MixShares | Unavailable, slo: SLOBudget | Unavailable,
                     seq_len: SeqLenDistribution | Unavailable, params: ProfileParameters, quantile_level: float,
                     growth: float, burst_k: float, burst_merge_gap_bins: int, n_boot: int, seed: int,
                     per_second: RateStats | Unavailable | None = None,
                     mix_minutes: pl.DataFrame | None = None, convention: str | None = None,
                     metrics: MetricsSource | None = None) -> TrafficProfile:
    """The profile of a request trace from its aggregates (per-minute and per-second counts, the
    dispersion, mix shares, budget and sequence lengths): the in-memory path and the engines
    (``bearing_lib.traffic.dataset``) both end here, so everything after aggregation is shared.
    ``seconds`` None: the timestamps' grid is coarser than 1 s (or ``per_second`` says why there are no
    seconds); ``mix_minutes`` (``bin_start_s``, ``mix``, ``requests``): requests per minute and mix, for the
    per-mix peaks. A profile from Prometheus counters states its own ``convention`` and ``metrics`` section
    (:class:`~bearing_lib.traffic.document.MetricsSource`)."""
    aligned = time_origin == "epoch"
    series = RateSeries(60.0, minutes["minute_start_s"].to_numpy(), minutes["requests"].to_numpy(), aligned,
                        0.0 if aligned else t_min, counts_are_integers=minutes["requests"].dtype.is_integer())
    if per_second is not None:
        pass
    elif seconds is not None:
        per_second = (
            rate_stats(seconds["requests"].to_numpy(), 1.0, unit="requests/s")
            if seconds.height else Unavailable("no complete second")
        )
    else:
        per_second = Unavailable(
            f"timestamps move in {resolution.quantum_s:.3g} s steps: per-second rates would be artefacts of the "
            f"grid; the finest meaningful bin is {resolution.quantum_s:.3g} s"
        )
    slots = slot_baselines(series)
    base, how = burst_baseline_rps(series, slots)
    bursts = find_bursts(series.rate_rps, base, series.start_s, 60.0, k=burst_k,
                         merge_gap_bins=burst_merge_gap_bins, baseline=how)
    return _write(
        source=source,
        convention=convention or (convention_text(time_origin, 60.0)
                                  + " (per-second rates: the same rule with 1 s bins)"),
        span_s=float(t_max - t_min),
        start_s=t_min,
        end_s=t_max,
        aligned=aligned,
        resolution=resolution,
        per_minute_stats=_minute_block(minutes, series),
        per_second_stats=per_second,
        per_window_stats=None,
        slots=slots,
        decomposition=decompose(series),
        bursts=bursts,
        dispersion=dispersion,
        mixes=mixes,
        targets=compute_targets(series, quantile_level=quantile_level, growth=growth, n_boot=n_boot, seed=seed),
        slo=slo,
        parameters=params,
        seq_len=seq_len,
        mix_peaks=(mix_peaks(mix_minutes, minutes["minute_start_s"].to_numpy(), 60.0, quantile_level=quantile_level,
                             basis=_mix_basis(mixes)) if mix_minutes is not None else None),
        metrics=metrics,
    )


def _mix_basis(mixes: MixShares | Unavailable) -> str:
    if isinstance(mixes, MixShares):
        return "the profile's mixes (" + ", ".join(mixes.spec.names()) + ", other) by each request's lengths"
    return "the profile's mixes"


def mix_minute_counts(f: pl.DataFrame | pl.LazyFrame, spec: MixSpec, origin: float) -> pl.LazyFrame:
    """Requests per (minute, mix) from ``origin`` (a partial: rows of several partitions add up)."""
    return (
        spec.assign(f.lazy().select("start_s", "input_tokens", "output_tokens", "cached_tokens"))
        .with_columns((((pl.col("start_s") - origin) / 60.0).floor() * 60.0 + origin).alias("bin_start_s"))
        .group_by("bin_start_s", "mix")
        .agg(pl.len().cast(pl.Int64).alias("requests"))
    )


def _seq_len(trace: RequestTrace) -> SeqLenDistribution | Unavailable:
    try:
        return seq_len_distribution(trace.frame, source=str(trace.provenance.source))
    except InsufficientDataError as exc:
        return Unavailable(str(exc))


def profile_rate_windows(rates: RateWindows, params: ProfileParameters, *, source: ProfileSource | None = None,
                         convention: str | None = None, mixes: MixShares | None = None,
                         slo: Unavailable | None = None, seq_len: Unavailable | None = None,
                         metrics: MetricsSource | None = None, cv_note: str | None = None) -> TrafficProfile:
    """The coarser profile of rate windows (``profile_traffic`` of a :class:`RateWindows`). A profile from
    Prometheus counters whose query step does not divide a minute states its own ``source``, ``convention``,
    ``mixes``, ``slo`` and ``seq_len`` reasons, ``metrics`` section and per-client CV note (``cv_note``)."""
    quantile_level, growth, burst_k = params.quantile, params.growth, params.burst_k
    merge_gap, n_boot, seed = params.burst_merge_gap_bins, params.n_boot, params.seed
    prov = rates.provenance
    series = series_from_rate_windows(rates)
    w = series.bin_s
    per_window = replace(
        rate_stats(series.requests, w, unit=f"requests per {w:g} s window", kind=WindowRateStats,
                   note="from mean rates per window: the distribution of window means, not of minutes"),
        series=series.window_series())
    coarse = f"the source gives mean request rates per {w:g} s window; per-minute rates cannot be recovered"
    slots = slot_baselines(series)
    base, how = burst_baseline_rps(series, slots)
    bursts = find_bursts(series.rate_rps, base, series.start_s, w, k=burst_k, merge_gap_bins=merge_gap, baseline=how)
    cv = rates.frame.filter(pl.col("rate_rps") > 0)
    wcv = (
        float((cv["cv"] * cv["rate_rps"]).sum() / cv["rate_rps"].sum())
        if cv.height and cv["cv"].null_count() < cv.height else None
    )
    disp = Dispersion(
        index_of_dispersion=None,
        index_of_dispersion_note="not measured: the source gives rates per window, not request counts per minute",
        interarrival_cv=None,
        interarrival_cv_note="not measured: no per-request times",
        per_client_window_cv_rate_weighted=wcv,
        per_client_window_cv_note=(cv_note or "the source's own per-client, per-window inter-arrival CVs, weighted "
                                   "by rate"),
    )
    origin_note = (
        f"{w:g} s windows as published, UTC wall clock" if prov.time_origin == "epoch"
        else f"{w:g} s windows as published, seconds from the trace start (no wall-clock anchor: no time of day "
        "or weekday)"
    )
    targets = compute_targets(series, quantile_level=quantile_level, growth=growth, n_boot=n_boot, seed=seed)
    targets.notes.append(
        f"the target comes from {w:g} s window means: per-minute peaks are higher and are not in the source"
    )
    span = series.span_s
    return _write(
        source=source if source is not None else ProfileSource.of(prov, "rates", rates.frame.height),
        convention=convention or f"{origin_note}; missing windows count as zero; the window is the finest bin",
        span_s=span,
        start_s=float(series.start_s[0]),
        end_s=float(series.start_s[0] + span),
        aligned=series.aligned,
        resolution=Unavailable(f"no per-request times: the source gives {w:g} s windows"),
        per_minute_stats=Unavailable(coarse),
        per_second_stats=Unavailable(coarse.replace("per-minute", "per-second")),
        per_window_stats=per_window,
        slots=slots,
        decomposition=decompose(series),
        bursts=bursts,
        dispersion=disp,
        mixes=mixes if mixes is not None else Unavailable("the source gives rates, not requests with token counts, "
                                                          "so mix shares cannot be counted"),
        targets=targets,
        slo=slo if slo is not None else Unavailable("the source gives rates only: no request outcomes, so no error "
                                                    "budget"),
        parameters=params,
        seq_len=seq_len if seq_len is not None else Unavailable("the source gives rates, not requests with token "
                                                                "counts"),
        metrics=metrics,
    )


