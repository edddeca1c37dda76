"""The traffic profile: :class:`TrafficProfile`, one type, built by ``profile_traffic`` and read from its JSON.

``docs/interfaces.md`` §5. The builders (:func:`bearing_lib.traffic.profile.profile_traffic`,
:func:`~bearing_lib.traffic.dataset.profile_dataset`, :func:`~bearing_lib.traffic.metrics_profile.profile_metrics`)
return it, and :meth:`TrafficProfile.from_dict` reads a profile JSON into it, validated once (pydantic, every
problem together). Every key ``bearing profile`` writes is typed here (what a reader downstream needs: the capacity
plan's target, shares, rate series, bursts, sequence lengths; the report's every section), and
:meth:`_Part.to_dict` writes it back as read (``TrafficProfile.from_dict(j).to_dict() == j``, the JSON text equal:
the keys the JSON gave in its order, integers kept), so the profile JSON and the report's ``summary.json`` are
written from this one object. The plan's own view of a profile is :class:`bearing_lib.plan.inputs.ProfileInput`,
built from it. This module needs no polars (reading a profile stays light).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Field, Tag
from pydantic_core import core_schema

from bearing_lib.common.estimate import Estimate
from bearing_lib.common.schema import NotAvailable
from bearing_lib.traffic.forecast import TrendForecast
from bearing_lib.traffic.source import ProfileParameters, ProfileSource

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.data.mixes import Mix

PROFILE_SCHEMA = "bearing.profile/1"
"""Version tag of the profile JSON (``schema``; the builders write it). Files without it (written before the tag)
read the same."""

UnavailableDoc = NotAvailable
"""A section the data could not support (``{"available": false, "reason": ...}``)."""

_Count = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def _same_numbers(raw: Any, parsed: Any) -> Any:
    """``parsed`` with the JSON's integers kept as integers (pydantic reads ``201`` into a ``float`` field as
    ``201.0``; the number is the same, its JSON text is not)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and isinstance(parsed, float) and parsed == raw:
        return raw
    if isinstance(raw, list | tuple) and isinstance(parsed, list | tuple) and len(raw) == len(parsed):
        return type(parsed)(_same_numbers(r, v) for r, v in zip(raw, parsed, strict=True))
    if isinstance(raw, dict) and isinstance(parsed, dict):
        return {k: _same_numbers(raw.get(k), v) for k, v in parsed.items()}
    return parsed


def _plain(v: Any) -> Any:
    """A typed value as JSON values (a part with its own ``to_dict`` writes itself)."""
    if isinstance(v, NotAvailable):
        return {"available": False, "reason": v.reason}
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


class _Part:
    """A part of the profile JSON that writes itself back as it was read: the keys the JSON gave, in its order
    (pydantic's "fields set", kept by the validator below), each value from the typed field. A part built in
    code writes its fields in declaration order, those that are None left out."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        def keep(raw: Any, validate: Any) -> Any:
            obj = validate(raw)
            if isinstance(raw, dict) and isinstance(obj, _Part):
                names = {f.name for f in fields(obj)}  # type: ignore[arg-type]
                given = tuple(k for k in raw if k in names)
                for k in given:
                    object.__setattr__(obj, k, _same_numbers(raw[k], getattr(obj, k)))
                object.__setattr__(obj, "_given", given)
            return obj

        inner = handler(source)
        ref = inner.pop("ref", None) if inner.get("type") != "definition-ref" else None
        # the class's ref on the wrapper, so a part met twice (input and output tokens) is kept both times
        return core_schema.no_info_wrap_validator_function(keep, inner, ref=ref)

    def _keys(self) -> tuple[str, ...]:
        """The keys a part built in code writes, in order: its fields in declaration order, those that are None
        left out (a part whose builder writes another order, or a null, says so by overriding this)."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        """This part as JSON values (``TrafficProfile.from_dict(j).to_dict() == j`` for a profile bearing wrote)."""
        given: tuple[str, ...] | None = getattr(self, "_given", None)
        return {k: _plain(getattr(self, k)) for k in (self._keys() if given is None else given)}


@dataclass
class MinuteSeries(_Part):
    """``per_minute.series`` as columns: requests per minute and, optionally, each minute's start (s)."""

    requests: list[_Count]
    minute_start_s: list[float | None] | None = None

    def __post_init__(self) -> None:
        if self.minute_start_s is not None and len(self.minute_start_s) != len(self.requests):
            raise ValueError(f"'minute_start_s' has {len(self.minute_start_s)} values but 'requests' has "
                             f"{len(self.requests)}")

    def _keys(self) -> tuple[str, ...]:
        return ("requests",) if self.minute_start_s is None else ("minute_start_s", "requests")


@dataclass
class MinuteRow(_Part):
    """One row of ``per_minute.series`` in the row form ``[{"minute_start_s", "requests"}, ...]``."""

    requests: _Count
    minute_start_s: float | None = None


@dataclass
class WindowSeries(_Part):
    """``per_window.series``: requests per ``bin_s`` window and each window's start (s)."""

    bin_s: _Positive
    requests: list[_Count]
    window_start_s: list[float | None] | None = None

    def __post_init__(self) -> None:
        if self.window_start_s is not None and len(self.window_start_s) != len(self.requests):
            raise ValueError(f"'window_start_s' has {len(self.window_start_s)} values but 'requests' has "
                             f"{len(self.requests)}")

    def _keys(self) -> tuple[str, ...]:
        return ("bin_s", "requests") if self.window_start_s is None else ("bin_s", "window_start_s", "requests")


_MinuteSeries = Annotated[
    Annotated[MinuteSeries, Tag("~columns")] | Annotated[list[MinuteRow], Tag("~rows")],
    Discriminator(lambda v: "~rows" if isinstance(v, list) else "~columns"),
]


@dataclass
class RpsStats(_Part):
    """``per_minute.rps`` / ``per_second.rps`` / ``per_window.rps``: the block's distribution in req/s."""

    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class RateStats(_Part):
    """``per_second`` (and the base of ``per_minute`` / ``per_window``): the distribution of a per-bin request
    count (``traffic/profile.py`` ``rate_stats``): bins (``n_minutes`` for minutes, else ``n_bins``), empty bins,
    mean, P50/P95/P99, max and peak/mean in requests per bin; ``rps`` the same in req/s; ``note`` what the bins
    are when they are not counted requests.
    """

    available: bool = True
    reason: str | None = None
    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    p50_ci95: list[float] | None = None
    p95_ci95: list[float] | None = None
    p99_ci95: list[float] | None = None
    max_ci95: list[float] | None = None
    bin_s: float | None = None
    n_minutes: int | None = None
    n_bins: int | None = None
    n_empty: int | None = None
    peak_to_mean: float | None = None
    unit: str | None = None
    note: str | None = None
    rps: RpsStats | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        opt = tuple(k for k in ("tokens", "note", "series") if getattr(self, k, None) is not None)
        return ("available", "bin_s", "n_minutes" if self.n_minutes is not None else "n_bins", "n_empty", "mean",
                "p50", "p95", "p99", "max", "peak_to_mean", "rps", "unit", *opt)


@dataclass
class TokenRate(_Part):
    """Tokens per minute, input or output (``per_minute.tokens.input_tokens`` / ``output_tokens``): mean, P95,
    P99, max; built by ``traffic/profile.py`` (``_minute_block``)."""

    available: bool = True
    reason: str | None = None
    mean: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    unit: str | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("mean", "p95", "p99", "max", "unit") if self.available else ("available", "reason")


@dataclass
class MinuteTokens(_Part):
    """``per_minute.tokens``: input and output tokens per minute (null: the trace has no such column)."""

    input_tokens: TokenRate | None = None
    output_tokens: TokenRate | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("input_tokens", "output_tokens")


@dataclass
class MinuteRateStats(RateStats):
    """``per_minute``: requests per minute (:class:`RateStats`), tokens per minute and the series itself."""

    series: _MinuteSeries | None = None
    tokens: MinuteTokens | None = None


@dataclass
class WindowRateStats(RateStats):
    """``per_window``: requests per rate window (:class:`RateStats`) and the series itself."""

    series: WindowSeries | None = None


@dataclass
class TargetLoad(_Part):
    """``targets.target``: the target load ``rps`` (or ``target_rps``) with ``ci95`` (or ``target_ci95``), the
    quantile and growth, the quantile before growth (``basis_rps``), the bins and how the CI was made."""

    available: bool = True
    reason: str | None = None
    rps: float | None = None
    target_rps: float | None = None
    basis_rps: float | None = None
    """The rate quantile before growth (``rps`` is ``basis_rps`` × ``growth``)."""
    ci95: list[float | None] | None = None
    target_ci95: list[float | None] | None = None
    quantile: float | None = None
    growth: float | None = None
    statement: str | None = None
    basis: str | None = None
    bin_s: float | None = None
    n_bins: int | None = None
    ci_method: str | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("rps", "quantile", "growth", "basis_rps", "bin_s", "n_bins", "ci95", "ci_method", "statement")


@dataclass
class PeakLoad(_Part):
    """``targets.peak``: the busiest bin's rate (shown; not the current peak)."""

    rps: float | None = None
    bin_s: float | None = None


@dataclass
class Reservation(_Part):
    """``targets.near_term`` / ``targets.mid_term``: a planning load, its factor and basis, or why there is none;
    the mid term's ``trend`` is the forecast itself, read here into its one type
    (:class:`~bearing_lib.traffic.forecast.TrendForecast`), the object the plan uses."""

    available: bool = True
    reason: str | None = None
    rps: float | None = None
    factor: float | None = None
    basis: str | None = None
    statement: str | None = None
    trend: TrendForecast | None = None
    method: str | None = None
    """The mid term's forecast method (``traffic/targets.py`` ``MidTermForecast.to_dict``); the figures below
    repeat the trend's, as the mid term writes them."""
    trend_significant: bool | None = None
    trend_test: str | None = None
    horizon_days: float | None = None
    n_days: int | None = None
    slope_rps_per_day: float | None = None
    slope_ci95: list[float] | None = None
    forecast_rps: float | None = None
    forecast_pi95: list[float] | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        if self.trend_test is None:  # the near term
            return ("rps", "factor", "basis")
        return ("available", "method", "trend_significant", "trend_test", "horizon_days", "n_days",
                "slope_rps_per_day", "slope_ci95", "forecast_rps", "forecast_pi95", "factor", "rps", "statement",
                *(("trend",) if self.trend is not None else ()))


@dataclass
class Targets(TargetLoad):
    """``targets``: the target load, its CI, the busiest bin and the staged reservation, all in req/s
    (``traffic/targets.py`` ``compute_targets`` builds it): ``targets.target`` (what ``bearing profile`` writes) or
    the flat form (``targets.rps``) of a hand-written profile."""

    target: TargetLoad | None = None
    peak: PeakLoad | None = None
    near_term: Reservation | None = None
    mid_term: Reservation | None = None
    notes: list[str] = field(default_factory=list)

    def _keys(self) -> tuple[str, ...]:
        return ("target", "peak", "near_term", "mid_term", "notes")


@dataclass
class BurstEpisode(_Part):
    """One burst episode (``bursts.episodes[]``): where it starts, how long, how high; times in s on the trace's
    clock, rates in req/s (``traffic/bursts.py`` ``find_bursts`` finds it)."""

    start_s: float | None = None
    end_s: float | None = None
    duration_s: float | None = None
    n_bins: int | None = None
    peak_rps: float | None = None
    baseline_at_peak_rps: float | None = None
    peak_multiplier: float | None = None
    mean_multiplier: float | None = None
    excess_requests: float | None = None


@dataclass
class Bursts(_Part):
    """``bursts``: the burst episodes found in a rate series (``traffic/bursts.py`` ``find_bursts``), with the rule
    and the figures over them (``per_month``: episodes per 30 days, ``per_month_note`` how it was obtained)."""

    available: bool = True
    reason: str | None = None
    k: float | None = None
    """A burst is a run of bins with rate > ``k`` × baseline."""
    bin_s: float | None = None
    episodes: list[BurstEpisode] = field(default_factory=list)
    count: int | None = None
    per_month: float | None = None
    per_month_note: str | None = None
    max_duration_s: float | None = None
    total_duration_s: float | None = None
    max_peak_multiplier: float | None = None
    rule: str | None = None
    threshold: str | None = None
    baseline: str | None = None
    n_unjudged_bins: int | None = None
    notes: list[str] = field(default_factory=list)

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("k", "bin_s", "baseline", "rule", "count", "total_duration_s", "max_duration_s",
                "max_peak_multiplier", "per_month", "per_month_note", "n_unjudged_bins", "episodes", "notes")

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        rows = "".join(
            f"<tr><td>{e.start_s:.0f}</td><td>{e.duration_s:.0f}</td><td>{e.peak_rps:.2f}</td>"
            f"<td>{e.peak_multiplier:.2f}</td></tr>"
            for e in self.episodes
        )
        return (
            f"<p><b>{self.count} burst(s)</b> above {self.k:g}x baseline ({html.escape(self.baseline or '')})</p>"
            f"<table><tr><th>start_s</th><th>duration_s</th><th>peak_rps</th><th>peak ×</th></tr>{rows}</table>"
        )


@dataclass
class SlotPeak(_Part):
    slot: str | int | None = None
    p95_rps: float | None = None


@dataclass
class SlotRow(_Part):
    """One slot (``traffic/seasonality.py``): its bins, the rate's mean, P50, P95 and max (req/s), the periods
    seen (``n_days`` / ``n_weeks``) and the robust baseline (median over periods of each period's P95)."""

    hour: int | None = None
    weekday: int | None = None
    n_bins: int | None = None
    mean_rps: float | None = None
    p50_rps: float | None = None
    p95_rps: float | None = None
    max_rps: float | None = None
    n_days: int | None = None
    n_weeks: int | None = None
    baseline_rps: float | None = None

    def _keys(self) -> tuple[str, ...]:
        # the slot's keys first (weekday before hour), as the slot table's rows are written
        order = ("weekday", "hour", "n_bins", "mean_rps", "p50_rps", "p95_rps", "max_rps", "n_days", "n_weeks",
                 "baseline_rps")
        return tuple(k for k in order if getattr(self, k) is not None)


@dataclass
class SlotTable(_Part):
    """``slots.hour_of_day`` / ``slots.hour_weekday``: one slot layout (hour of day, or weekday x hour) of the
    per-bin rate, its rows (:class:`SlotRow`), the extreme slots by P95 and their ratio, or why there is none;
    ``traffic/seasonality.py`` (``slot_baselines``) builds it."""

    available: bool = True
    reason: str | None = None
    repeated: bool = True
    n_periods: int | None = None
    rows: list[SlotRow] = field(default_factory=list)
    peak: SlotPeak | None = None
    trough: SlotPeak | None = None
    peak_to_trough: float | None = None
    statistic: str | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("available", "repeated", "n_periods", "statistic", "rows", "peak", "trough", "peak_to_trough")

    @property
    def table(self) -> Any:
        """The rows as a polars frame (one row per slot; the columns the rows carry)."""
        import polars as pl

        return pl.DataFrame([r.to_dict() for r in self.rows])


@dataclass
class SlotBaselines(_Part):
    """``slots``: hour-of-day and weekday x hour baselines of a rate series (``traffic/seasonality.py``
    ``slot_baselines`` builds them): the clock they use (``basis``), the bin, and each layout, or why it is not
    available (``available`` / ``reason``: the hour-of-day layout's)."""

    available: bool = True
    reason: str | None = None
    basis: str | None = None
    bin_s: float | None = None
    hour_of_day: SlotTable | None = None
    hour_weekday: SlotTable | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("available", "reason", "basis", "bin_s", "hour_of_day", "hour_weekday")

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        hod = self.hour_of_day
        if hod is None or not hod.available:
            return f"<p><i>not available:</i> {html.escape(self.reason or '')}</p>"
        return f"<p><b>Hour-of-day baselines</b> ({html.escape(self.basis or '')})</p>" + hod.table._repr_html_()


@dataclass
class SeasonalComponent(_Part):
    """One seasonal component of ``decomposition.components``: its period (h), the average cycle's peak-to-trough
    (req/s), its strength (None when the residual is degenerate), the fit-free cycle-to-cycle correlation (None with
    fewer than two cycles), the phases (h) of the average cycle's peak and trough, and the average cycle itself."""

    name: str | None = None
    period_h: float | None = None
    amplitude_rps: float | None = None
    strength: float | None = None
    cycle_correlation: float | None = None
    peak_phase_h: float | None = None
    trough_phase_h: float | None = None
    average_cycle_rps: list[float | None] | None = None
    """The component's average cycle, one value per hour of its period (req/s)."""

    def _keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))  # a strength or correlation not measured is written as null


@dataclass
class DecompositionTrend(_Part):
    """``decomposition.trend``: the MSTL trend's first, last, lowest and highest value (req/s)."""

    start_rps: float | None = None
    end_rps: float | None = None
    min_rps: float | None = None
    max_rps: float | None = None


@dataclass
class Decomposition(_Part):
    """``decomposition``: MSTL of the hourly mean rates (``traffic/seasonality.py`` ``decompose`` builds it): the
    components with their figures, the trend's range, the residual's spread and the hourly series itself, or why
    there are too few cycles."""

    available: bool = True
    reason: str | None = None
    method: str | None = None
    input: str | None = None
    """What was decomposed (the hourly series, its clock)."""
    components: list[SeasonalComponent] = field(default_factory=list)
    trend: DecompositionTrend | None = None
    resid_std_rps: float | None = None
    notes: list[str] = field(default_factory=list)
    series: dict[str, list[float | None]] | None = None
    """The hourly series as columns (``hour_start_s``, ``observed_rps``, ``trend_rps``, ``seasonal_<name>_rps``,
    ``resid_rps``): one column per component, so keyed by name."""

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("available", "method", "input", "components", "trend", "resid_std_rps", "notes",
                *(("series",) if self.series is not None else ()))

    def component(self, name: str) -> SeasonalComponent:
        """The component ``name`` (``daily`` / ``weekly``; KeyError naming the components when there is none)."""
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no {name!r} component in the decomposition (components: "
                       f"{', '.join(str(c.name) for c in self.components) or 'none'})")


@dataclass
class Dispersion(_Part):
    """``dispersion``: how bursty the arrivals are (``traffic/profile.py`` ``dispersion`` builds it): the index
    of dispersion of per-minute counts (``index_of_dispersion_bin_s``: its bin, None when it was not measured
    from counts) and the inter-arrival CV, each with a note saying how it was measured or why not; from rate
    windows, the source's own per-client window CVs weighted by rate (``per_client_window_cv_note`` set: the
    figure was looked for). A key not measured from the source is left out."""

    available: bool = True
    reason: str | None = None
    index_of_dispersion: float | None = None
    index_of_dispersion_bin_s: float | None = None
    index_of_dispersion_note: str | None = None
    interarrival_cv: float | None = None
    interarrival_cv_note: str | None = None
    per_client_window_cv_rate_weighted: float | None = None
    """Rate-weighted per-client, per-window inter-arrival CV (sources that give it, e.g. ServeGen)."""
    per_client_window_cv_note: str | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("index_of_dispersion",
                *(("index_of_dispersion_bin_s",) if self.index_of_dispersion_bin_s is not None else ()),
                "index_of_dispersion_note", "interarrival_cv", "interarrival_cv_note",
                *(("per_client_window_cv_rate_weighted", "per_client_window_cv_note")
                  if self.per_client_window_cv_note is not None else ()))


@dataclass
class MixHour(_Part):
    """One row of ``mix_shares_per_hour.rows``: a mix's requests in one hour and its share of that hour's."""

    hour_start_s: float | None = None
    mix: str | None = None
    share: float | None = None
    n_requests: int | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("hour_start_s", "mix", "share", "n_requests")


@dataclass
class MixSharesPerHour(_Part):
    """``mix_shares_per_hour``: each mix's share per hour (``traffic/profile.py`` ``mix_shares`` builds it), what
    the hours are (``basis``), and notes on requests no mix could take; or why there are no shares."""

    available: bool = True
    reason: str | None = None
    basis: str | None = None
    rows: list[MixHour] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _keys(self) -> tuple[str, ...]:
        return ("available", "basis", "rows", "notes") if self.available else ("available", "reason")


#: A bin may be this much finer than the timestamps' grid step (the grid's own tolerance).
GRID_TOLERANCE = 0.05


@dataclass
class TimestampResolution(_Part):
    """``resolution``: the time grid of a trace's start times (``traffic/binning.py`` measures it).

    ``quantum_s`` is the grid step when the timestamps are quantized (all gaps between distinct times are whole
    multiples of one step of at least 1 ms), else None; ``smallest_gap_s`` the smallest gap between distinct
    times; ``finest_bin_s`` the finest bin a rate may use (the quantum, or None when there is no limit);
    ``grid_fit_share`` the share of gaps on the grid (measured; the statement gives it, the JSON does not).
    """

    available: bool = True
    reason: str | None = None
    n_requests: int | None = None
    n_distinct_start_times: int | None = None
    smallest_gap_s: float | None = None
    quantized: bool | None = None
    quantum_s: float | None = None
    finest_bin_s: float | None = None
    statement: str | None = None
    grid_fit_share: float | None = None

    def allows_bin(self, bin_s: float) -> bool:
        """Whether bins of ``bin_s`` seconds are no finer than the timestamps' grid."""
        return self.quantum_s is None or bin_s >= self.quantum_s * (1 - GRID_TOLERANCE)

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("n_requests", "n_distinct_start_times", "smallest_gap_s", "quantized", "quantum_s", "finest_bin_s",
                "statement")


@dataclass
class BurnWindow(_Part):
    """``slo_budget.fastest_burn[]``: the fastest burn over windows of one length (or why it does not fit the
    trace)."""

    window_s: float | None = None
    available: bool = True
    reason: str | None = None
    start_s: float | None = None
    end_s: float | None = None
    n_requests: int | None = None
    n_bad: int | None = None
    error_ratio: float | None = None
    burn_rate: float | None = None
    budget_fraction: float | None = None

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("window_s", "available", "reason")
        return ("available", "window_s", "start_s", "end_s", "n_requests", "n_bad", "error_ratio", "burn_rate",
                "budget_fraction")


@dataclass
class ErrorBudget(_Part):
    """``slo_budget.budget``: the period's error budget in minutes, as a share of requests, and in requests."""

    minutes: float | None = None
    request_fraction: float | None = None
    requests: float | None = None
    requests_basis: str | None = None


@dataclass
class BudgetConsumed(_Part):
    """``slo_budget.consumed``: what the trace's bad requests and bad minutes spent of the budget."""

    requests: int | None = None
    fraction: float | None = None
    bad_minutes: int | None = None
    bad_minute_ratio: float | None = None
    minutes_fraction: float | None = None


@dataclass
class AlertCheck(_Part):
    """``slo_budget.alerts[]``: a burn-rate alert rule (``rule``, as text) replayed on the trace: whether it would
    have ``fired`` (None with the ``reason`` when the trace is shorter than its window), at the worst window's
    budget share and start (the reason, or the worst window: never both)."""

    rule: str | None = None
    fired: bool | None = None
    reason: str | None = None
    worst_budget_fraction: float | None = None
    window_start_s: float | None = None

    def _keys(self) -> tuple[str, ...]:
        if self.reason is not None:
            return ("rule", "fired", "reason")
        return ("rule", "fired", "worst_budget_fraction", "window_start_s")


@dataclass
class SLOBudget(_Part):
    """``slo_budget``: error-budget accounting of one trace (``traffic/slo_budget.py`` builds it): the
    objective, the requests and bad ones, the burn rate, the period's budget and what the trace consumed of it,
    the fastest burn per window length and the alert rules replayed."""

    available: bool = True
    reason: str | None = None
    objective: float | None = None
    period_days: float | None = None
    bad_statuses: list[str] = field(default_factory=list)
    n_requests: int | None = None
    n_bad: int | None = None
    n_no_status: int | None = None
    span_s: float | None = None
    error_ratio: float | None = None
    burn_rate: float | None = None
    budget: ErrorBudget | None = None
    consumed: BudgetConsumed | None = None
    days_to_exhaust_at_this_burn: float | None = None
    fastest_burn: list[BurnWindow] = field(default_factory=list)
    alerts: list[AlertCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return tuple(f.name for f in fields(self) if f.name != "reason")

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        fired = [a for a in self.alerts if a.fired]
        frac = self.consumed.fraction if self.consumed is not None else None
        return (
            f"<p><b>SLO {self.objective or 0:.3%}</b> over {self.period_days or 0:g} days: {self.n_bad or 0:,} bad "
            f"of {self.n_requests or 0:,} requests, burn rate {self.burn_rate or 0:.3g}, {frac or 0:.2%} of the "
            f"request budget; alerts fired: {html.escape(', '.join(a.rule or '' for a in fired) or 'none')}</p>"
        )


@dataclass
class TokenStats(_Part):
    """Mean, linear P50/P90/P99 and max of a per-request token count (tokens), over ``n`` requests
    (``seq_len.input_tokens`` / ``output_tokens``; the total's are ``seq_len``'s own)."""

    n: int | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values: Any) -> TokenStats:
        """The statistics of ``values`` (an array of token counts)."""
        import numpy as np

        from bearing_lib.common.quantiles import quantile

        v = np.asarray(values, dtype=float)
        p50, p90, p99 = (float(x) for x in quantile(v, [0.5, 0.9, 0.99]))
        return cls(n=int(v.size), mean=float(v.mean()), p50=p50, p90=p90, p99=p99, max=float(v.max()))

    @classmethod
    def of_counts(cls, values: Any, counts: Any) -> TokenStats:
        """The same statistics from a value -> count table of integer token counts (what the
        engines aggregate): exact, since the linear quantile only needs two order statistics."""
        import numpy as np

        order = np.argsort(values, kind="stable")
        v = np.asarray(values, dtype=np.int64)[order]
        c = np.asarray(counts, dtype=np.int64)[order]
        n = int(c.sum())
        cum = np.cumsum(c)

        def at(rank: Any) -> Any:  # 0-based order statistic
            return v[np.searchsorted(cum, rank, side="right")].astype(float)

        h = (n - 1) * np.array([0.5, 0.9, 0.99])
        j = np.floor(h)
        a, b = at(j.astype(np.int64)), at(np.minimum(j + 1, n - 1).astype(np.int64))
        t = h - j
        # numpy's linear interpolation, term for term (its _lerp switches form at t >= 0.5)
        qv = np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)
        mean = float(int((v * c).sum()) / n)
        return cls(n=n, mean=mean, p50=float(qv[0]), p90=float(qv[1]), p99=float(qv[2]), max=float(v[-1]))


@dataclass
class SeqLenDistribution(_Part):
    """``seq_len``: sequence length (input + output tokens per request: n, mean, P50/P90/P99, max) and its two
    parts over the same requests, or why there is none; built by ``traffic/seqlen.py``
    (``seq_len_distribution``); the memory plan reads it."""

    available: bool = True
    reason: str | None = None
    n: int | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    n_without_counts: int | None = None
    definition: str | None = None
    quantile_method: str | None = None
    unit: str | None = None
    input_tokens: TokenStats | None = None
    output_tokens: TokenStats | None = None

    @property
    def total(self) -> TokenStats:
        """The sequence length's own statistics (input + output tokens)."""
        return TokenStats(n=self.n, mean=self.mean, p50=self.p50, p90=self.p90, p99=self.p99, max=self.max)

    def _keys(self) -> tuple[str, ...]:
        if not self.available:
            return ("available", "reason")
        return ("available", "definition", "unit", "quantile_method", "n", "mean", "p50", "p90", "p99", "max",
                "n_without_counts", "input_tokens", "output_tokens")


@dataclass
class MixShare(_Part):
    """One row of ``mix_shares``: a mix's requests and its share of all (``traffic/profile.py`` ``mix_shares``)."""

    mix: str | None = None
    share: float | None = None
    n_requests: int | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("mix", "share", "n_requests")


@dataclass
class MixPeak(_Part):
    """One row of ``mix_peaks.rows``: a mix's own rate distribution over the profile's bins (req/s) and the share
    method beside it (``own_over_share``: its own peak at the target quantile / its share x the overall one;
    ``understated`` when that is above ``mix_peaks.understated_ratio``)."""

    mix: str
    n_requests: float | None = None
    share: float | None = None
    mean_rps: float | None = None
    p95_rps: float | None = None
    p99_rps: float | None = None
    max_rps: float | None = None
    peak_to_mean: float | None = None
    target_rps: float | None = None
    share_method_rps: float | None = None
    own_over_share: float | None = None
    understated: bool = False

    def _keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))


@dataclass
class MixPeaks(_Part):
    """``mix_peaks``: per-mix peaks over ``n_bins`` bins of ``bin_s`` seconds at the profile's target quantile
    (0.99 = P99); built by ``traffic/mix_peaks.py`` (``mix_peaks``)."""

    available: bool = True
    reason: str | None = None
    bin_s: float | None = None
    n_bins: int | None = None
    quantile: float | None = None
    overall_target_rps: float | None = None
    basis: str | None = None
    understated_ratio: float | None = None
    """A mix is understated when its own target exceeds its share of the overall by more than this ratio."""
    statement: str | None = None
    rows: list[MixPeak] = field(default_factory=list)

    def _keys(self) -> tuple[str, ...]:
        return super()._keys() if self.available else ("available", "reason")

    def row(self, mix: str) -> MixPeak:
        """The row of ``mix`` (KeyError naming the mixes when there is none)."""
        for r in self.rows:
            if r.mix == mix:
                return r
        raise KeyError(f"no mix {mix!r} in the mix peaks (mixes: {', '.join(r.mix for r in self.rows)})")


@dataclass
class MixCounts(_Part):
    """``metrics.per_mix[]``: one mix's requests counted by the counters over the profile's bins, its share of all,
    and the mean tokens per request where a token counter is labelled by the mix (None otherwise)."""

    mix: str | None = None
    n_requests: float | None = None
    share: float | None = None
    mean_input_tokens: float | None = None
    mean_output_tokens: float | None = None

    def _keys(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))


@dataclass
class MetricTokens(_Part):
    """``metrics.token_metrics``: the token counters read (None: not found)."""

    input_tokens: str | None = None
    output_tokens: str | None = None

    def _keys(self) -> tuple[str, ...]:
        return ("input_tokens", "output_tokens")


@dataclass
class MetricsSource(_Part):
    """``metrics``: a profile made from Prometheus counters (``traffic/metrics_profile.py`` builds it): the
    counter, step, resets, gaps, per-label shares and own peaks, and what counters cannot tell."""

    available: bool = True
    request_metric: str | None = None
    step_s: float | None = None
    bin_s: float | None = None
    time_resolution_s: float | None = None
    mix_label: str | None = None
    n_series: int | None = None
    counter_resets: int | None = None
    gaps: int | None = None
    token_metrics: MetricTokens | None = None
    per_mix: list[MixCounts] = field(default_factory=list)
    mix_peaks: MixPeaks | None = None
    unknowable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rules: str | None = None
    """How the counters were turned into requests per bin (increases, resets, gaps)."""


@dataclass
class MixEntry(_Part):
    """One mix of ``mix_spec`` as written (:meth:`bearing_lib.data.mixes.Mix.to_dict`): its name, description and
    bounds ``{dim: [lo, hi]}`` (``None``: unbounded on that side)."""

    name: str
    description: str = ""
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def to_mix(self) -> Mix:
        """The mix itself (``None`` bounds read as unbounded)."""
        from bearing_lib.data.mixes import Mix

        return Mix.from_dict({"name": self.name, "bounds": {k: list(v) for k, v in self.bounds.items()}})


@dataclass
class PassiveLimit(_Part):
    """``passive_limit`` (``bearing profile --passive-sla``): the limit production telemetry implies, from latency
    against load: an estimate, the fit and the extrapolation flag. Computed by
    :func:`bearing_lib.twin.passive.passive_limit`; defined here, in the profile's wing (below the twin), because the
    profile carries it."""

    q_ult: Estimate
    clause: str
    window_s: float
    n_windows: int
    highest_rate_rps: float
    intercept: float
    """Of ``1 / P`` (1/ms)."""
    slope_per_rps: float
    extrapolated: bool
    kind: str = "passive"

    _ORDER = ("kind", "q_ult", "clause", "window_s", "n_windows", "highest_rate_rps", "intercept", "slope_per_rps",
              "extrapolated")

    def text(self) -> str:
        s = f"passive (from production latency vs load) limit under {self.clause}: {self.q_ult.text()}"
        if self.extrapolated:
            s += f" — EXTRAPOLATED beyond the highest observed load ({self.highest_rate_rps:.3g} rps)"
        return s

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (read back as it was read; built in code: ``kind`` first); the estimate carries the
        limit's kind too."""
        given: tuple[str, ...] = getattr(self, "_given", None) or self._ORDER
        d = {k: _plain(getattr(self, k)) for k in given}
        if isinstance(d.get("q_ult"), dict):
            d["q_ult"] = {**d["q_ult"], "kind": self.kind}
        return d

    @classmethod
    def from_dict(cls, d: object, *, source: str = "passive limit") -> PassiveLimit:
        """The ``to_dict`` form read back (the profile JSON's ``passive_limit``), validated once: a
        :class:`~bearing_lib.common.errors.SchemaError` naming ``source`` and every field."""
        from bearing_lib.common.errors import SchemaError
        from bearing_lib.common.schema import parse

        if not isinstance(d, dict):
            raise SchemaError(f"{source}: expected an object, found {type(d).__name__}")
        q = d.get("q_ult")
        body = {**d, "q_ult": {k: v for k, v in q.items() if k != "kind"} if isinstance(q, dict) else q}
        return parse(cls, body, what=source)


_MixShares = Annotated[
    Annotated[list[MixShare], Tag("~list")] | Annotated[UnavailableDoc, Tag("~unavailable")],
    Discriminator(lambda v: "~list" if isinstance(v, list) else "~unavailable"),
]


@dataclass
class TrafficProfile(_Part):
    """The traffic profile of one production source (``docs/interfaces.md`` §5, ``docs/traffic-profile.md``): what
    ``profile_traffic`` builds and what its JSON reads back into.

    The plan reads ``targets``, ``per_minute`` / ``per_window`` (statistics and series),
    ``bursts``, ``seq_len``, ``mix_shares``, ``span_s`` and ``clock``; the report's production
    section reads those and the descriptive parts (``per_second``, ``slots``,
    ``decomposition``, ``dispersion``, ``mix_shares_per_hour``, ``resolution``,
    ``slo_budget``). Every section and field is optional (an older or hand-written profile may carry
    only a target); every key bearing writes is named here (``tests/traffic/test_document_roundtrip.py``);
    a key not named (a hand-written ``_comment``) is dropped on reading. A section set after reading or building
    (``passive_limit``, by ``bearing profile --passive-sla``) is written after the others.
    """

    schema: str | None = None
    bearing_version: str | None = None
    quantile_method: str | None = None
    """How the quantiles were computed (``numpy``'s method name)."""
    source: ProfileSource | str | None = None
    """Where the profile came from (:class:`~bearing_lib.traffic.source.ProfileSource`); a hand-written profile
    may name it in words."""
    convention: str | None = None
    span_s: float | None = None
    start_s: float | None = None
    end_s: float | None = None
    start_utc: str | None = None
    end_utc: str | None = None
    clock: str | None = None
    parameters: ProfileParameters | None = None
    """How the profile was computed (:class:`~bearing_lib.traffic.source.ProfileParameters`)."""
    targets: Targets | None = None
    per_minute: MinuteRateStats | None = None
    per_second: RateStats | None = None
    per_window: WindowRateStats | None = None
    slots: SlotBaselines | None = None
    decomposition: Decomposition | None = None
    bursts: Bursts | None = None
    dispersion: Dispersion | None = None
    mix_shares: _MixShares | None = None
    mix_shares_per_hour: MixSharesPerHour | None = None
    resolution: TimestampResolution | None = None
    slo_budget: SLOBudget | None = None
    seq_len: SeqLenDistribution | None = None
    mix_spec: list[MixEntry] | None = None
    """The mix spec the shares were computed with (``bearing_lib.data.mixes.MixSpec.to_dict``)."""
    mix_peaks: MixPeaks | None = None
    """Each mix's own peaks (profiles with more than one mix)."""
    metrics: MetricsSource | None = None
    """A profile from Prometheus counters: the counter, step, resets, per-label shares and what is unknowable."""
    passive_limit: PassiveLimit | None = None
    """``bearing profile --passive-sla``: the passive limit (computed by ``bearing_lib.twin.passive.passive_limit``)."""

    @property
    def relative(self) -> bool:
        """Whether the clock is relative (seconds from the trace start, no dates)."""
        return str(self.clock or "").startswith("relative")

    @property
    def source_format(self) -> str | None:
        return self.source.format if isinstance(self.source, ProfileSource) and self.source.format else None

    def to_dict(self, *, include_series: bool = True) -> dict[str, Any]:
        """The profile JSON: the keys as read (or as built), then any section set since (``passive_limit``).

        ``include_series=False`` leaves out ``per_minute.series`` / ``per_window.series``
        (one row per minute: 20,160 for a 14-day trace); the plan then needs the trace
        for CBU and the elasticity replay.
        """
        out = super().to_dict()
        for f in fields(self):
            if f.name not in out and getattr(self, f.name) is not None:
                out[f.name] = _plain(getattr(self, f.name))
        if not include_series:
            for k in ("per_minute", "per_window"):
                if isinstance(out.get(k), dict):
                    out[k] = {key: v for key, v in out[k].items() if key != "series"}
        return out

    def minute_counts(self) -> list[tuple[float, float, float]]:
        """The rate series as ``(start_s, requests, bin_s)`` rows: requests per minute, or for rate windows
        requests per window with the window's length; [] when the profile carries no series (or no start times)."""
        pm, pw = self.per_minute, self.per_window
        if pm is not None and isinstance(pm.series, MinuteSeries) and pm.series.minute_start_s is not None:
            return [(t, n, 60.0) for t, n in zip(pm.series.minute_start_s, pm.series.requests, strict=True)
                    if t is not None]
        if pm is not None and isinstance(pm.series, list):
            return [(r.minute_start_s, r.requests, 60.0) for r in pm.series if r.minute_start_s is not None]
        if pw is not None and pw.series is not None and pw.series.window_start_s is not None:
            return [(float(t), float(n), float(pw.series.bin_s))
                    for t, n in zip(pw.series.window_start_s, pw.series.requests, strict=True) if t is not None]
        return []

    def summary_lines(self) -> list[str]:
        """A short human summary (the CLI prints it)."""
        return _summary_lines(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(line.split(':', 1)[0])}</th>"
            f"<td style='text-align:left'>{html.escape(line.split(':', 1)[1].strip())}</td></tr>"
            for line in self.summary_lines()
        )
        return f"<p><b>TrafficProfile</b></p><table>{rows}</table>"

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "profile JSON") -> TrafficProfile:
        """Validate a profile JSON document once (every problem together, with its path); the input is not
        modified. Alternative shapes accepted here only: ``tokens.seq_len`` for ``seq_len``; an empty
        ``bursts`` object for none."""
        from bearing_lib.common.errors import SchemaError
        from bearing_lib.common.schema import parse

        if not isinstance(doc, dict):
            raise SchemaError(f"{source}: expected a JSON object, found {type(doc).__name__}")
        known = set(cls.__dataclass_fields__)
        d: dict[str, Any] = {k: v for k, v in doc.items() if k in known}
        if not d.get("seq_len") and isinstance(doc.get("tokens"), dict) and doc["tokens"].get("seq_len"):
            d["seq_len"] = doc["tokens"]["seq_len"]
        for k in ("bursts", "targets", "per_minute", "per_window", "seq_len", "mix_shares", "per_second", "slots",
                  "decomposition", "dispersion", "mix_shares_per_hour", "resolution", "slo_budget"):
            if k in d and not d[k]:
                d[k] = None  # an empty section says nothing
        if isinstance(d.get("parameters"), dict):  # the counters' keys are flattened into it
            d["parameters"] = ProfileParameters.from_dict(d["parameters"], source=f"{source}: parameters")
        if d.get("schema") not in (None, PROFILE_SCHEMA):
            raise SchemaError(f"{source}: schema {d['schema']!r} is not {PROFILE_SCHEMA!r}", field="schema")
        return parse(cls, d, what=source)


def _fmt(x: object) -> str:
    return "n/a" if x is None else f"{x:,.2f}"


def _missing(part: object) -> str:
    return f"not available: {getattr(part, 'reason', None) or 'not in the profile'}"


def _summary_lines(p: TrafficProfile) -> list[str]:
    """A short human summary of ``p`` (the CLI prints it), one ``name: text`` line per section the profile has."""
    src = p.source
    lines = [f"source:      {src.path} ({src.format})" if isinstance(src, ProfileSource) else f"source:      {src}"]
    lines.append(f"span:        {(p.span_s or 0.0) / 3600:,.2f} h, clock {'relative' if p.relative else 'UTC'}")
    lines.append(f"convention:  {p.convention}")
    pm = p.per_minute
    if pm is not None and pm.available:
        lines.append(
            f"per minute:  {pm.n_minutes} minutes ({pm.n_empty} empty); mean {pm.mean:,.1f}, "
            f"P95 {pm.p95:,.1f}, P99 {pm.p99:,.1f}, max {pm.max:,.0f} requests/min; "
            f"peak/mean {_fmt(pm.peak_to_mean)}"
        )
    else:
        lines.append(f"per minute:  {_missing(pm)}")
    pw = p.per_window
    if pw is not None and pw.rps is not None:
        lines.append(
            f"per window:  {pw.n_bins} x {pw.bin_s:g} s; mean {pw.rps.mean:,.1f}, "
            f"P99 {pw.rps.p99:,.1f}, max {pw.rps.max:,.1f} req/s; peak/mean {_fmt(pw.peak_to_mean)}"
        )
    ps = p.per_second
    if ps is not None and ps.available:
        lines.append(f"per second:  max {ps.max:,.0f} req/s, P99 {ps.p99:,.1f}, peak/mean {_fmt(ps.peak_to_mean)}")
    else:
        lines.append(f"per second:  {_missing(ps)}")
    dec = p.decomposition
    if dec is not None and dec.available:
        comps = ", ".join(f"{c.name} (amplitude {c.amplitude_rps:,.1f} req/s, cycle-to-cycle correlation "
                          f"{_fmt(c.cycle_correlation)})" for c in dec.components)
        lines.append(f"cycles:      {comps}")
    else:
        lines.append(f"cycles:      {_missing(dec)}")
    b = p.bursts
    if b is not None and b.count is not None:
        lines.append(f"bursts:      {b.count} above {b.k:g}x baseline"
                     + (f", ~{b.per_month:.1f}/month" if b.count else ""))
    disp = p.dispersion
    if disp is not None and disp.available:
        lines.append(f"dispersion:  index {_fmt(disp.index_of_dispersion)}, inter-arrival CV "
                     f"{_fmt(disp.interarrival_cv)}")
    targets = p.targets
    t = targets.target if targets is not None and targets.target is not None else targets
    if t is not None and t.rps is not None:
        ci95 = t.ci95
        ci = f" (95% CI {ci95[0]:,.2f}–{ci95[1]:,.2f})" if ci95 else ""
        near = targets.near_term if targets is not None else None
        near_rps = f"{near.rps:,.2f} req/s" if near is not None and near.rps is not None else "n/a"
        lines.append(f"target:      {t.rps:,.2f} req/s = P{(t.quantile or 0.0) * 100:g} x growth "
                     f"{t.growth if t.growth is not None else 1.0:g}{ci}; near term {near_rps}")
        mt = targets.mid_term if targets is not None else None
        lines.append(f"mid term:    {mt.rps:,.2f} req/s" if mt is not None and mt.available and mt.rps is not None
                     else f"mid term:    {_missing(mt)}")
    if isinstance(p.mix_shares, list):
        lines.append("mixes:       " + ", ".join(f"{r.mix} {r.share:.1%}" for r in p.mix_shares))
    mp = p.mix_peaks
    if mp is not None and mp.available and len(mp.rows) > 1:
        own = ", ".join(f"{r.mix} {r.target_rps:,.2f} (share x overall {r.share_method_rps:,.2f})" for r in mp.rows)
        lines.append(f"mix peaks:   own P{(mp.quantile or 0.0) * 100:g} req/s per {mp.bin_s:g} s: {own}")
    if p.passive_limit is not None:
        lines.append(f"passive:     {p.passive_limit.text()}")
    m = p.metrics
    if m is not None:
        lines.append(f"metrics:     {m.request_metric} every {m.step_s:g} s, {m.n_series} series, "
                     f"{m.counter_resets} counter reset(s), {m.gaps} gap(s); per {m.mix_label}: "
                     + ", ".join(f"{r.mix} {r.share:.1%}" for r in m.per_mix))
    slo = p.slo_budget
    if slo is not None and slo.available and slo.consumed is not None:
        lines.append(f"SLO budget:  {slo.consumed.fraction:.1%} of the {slo.objective:.2%} budget consumed, "
                     f"burn rate {slo.burn_rate:.3g}")
    else:
        lines.append(f"SLO budget:  {_missing(slo)}")
    sl = p.seq_len
    if sl is not None and sl.available and sl.p50 is not None:
        lines.append(f"seq length:  input+output tokens P50 {sl.p50:,.0f}, P90 {sl.p90:,.0f}, P99 {sl.p99:,.0f}, "
                     f"max {sl.max:,.0f} ({sl.n:,} requests)")
    else:
        lines.append(f"seq length:  {_missing(sl)}")
    return lines


def profile_schema_document() -> dict[str, Any]:
    """The JSON Schema of the profile JSON (``bearing schema profile``); looser for the descriptive parts."""
    from bearing_lib.common.schema import json_schema

    return json_schema(TrafficProfile, title="bearing profile JSON", schema_id=PROFILE_SCHEMA)


__all__ = [
    "GRID_TOLERANCE",
    "PROFILE_SCHEMA",
    "AlertCheck",
    "BudgetConsumed",
    "BurnWindow",
    "BurstEpisode",
    "Bursts",
    "Decomposition",
    "DecompositionTrend",
    "Dispersion",
    "ErrorBudget",
    "MetricTokens",
    "MetricsSource",
    "MinuteRateStats",
    "MinuteRow",
    "MinuteSeries",
    "MinuteTokens",
    "MixCounts",
    "MixEntry",
    "MixHour",
    "MixPeak",
    "MixPeaks",
    "MixShare",
    "MixSharesPerHour",
    "PassiveLimit",
    "PeakLoad",
    "RateStats",
    "Reservation",
    "RpsStats",
    "SLOBudget",
    "SeasonalComponent",
    "SeqLenDistribution",
    "SlotBaselines",
    "SlotPeak",
    "SlotRow",
    "SlotTable",
    "TargetLoad",
    "Targets",
    "TimestampResolution",
    "TokenRate",
    "TokenStats",
    "TrafficProfile",
    "UnavailableDoc",
    "WindowRateStats",
    "WindowSeries",
    "profile_schema_document",
]
