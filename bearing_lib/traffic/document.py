"""The profile JSON at the edge: :class:`ProfileDocument`, validated once (pydantic, every problem together).

``docs/interfaces.md`` §5. What a reader downstream of ``bearing profile`` needs from the
document (the capacity plan: target, shares, the rate series, bursts, sequence lengths; the
report: the clock and the source) is typed here; the descriptive parts are kept as written.
The plan's own view of a profile is :class:`bearing_lib.plan.inputs.ProfileInput`,
built from this document or straight from a :class:`~bearing_lib.traffic.profile.TrafficProfile`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Discriminator, Field, Tag

from bearing_lib.common.estimate import Estimate
from bearing_lib.common.schema import NotAvailable
from bearing_lib.traffic.forecast import TrendForecast
from bearing_lib.traffic.source import ProfileSource

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.data.mixes import Mix

PROFILE_SCHEMA = "bearing.profile/1"
"""Version tag of the profile JSON (``schema``; ``TrafficProfile.to_dict`` writes it). Files without it (written
before the tag) read the same. Defined here, not in ``traffic/profile.py``, so reading a document needs no polars."""

UnavailableDoc = NotAvailable
"""A section the data could not support (``{"available": false, "reason": ...}``)."""

_Count = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


@dataclass
class MinuteSeriesDoc:
    """``per_minute.series`` as columns: requests per minute and, optionally, each minute's start (s)."""

    requests: list[_Count]
    minute_start_s: list[float | None] | None = None

    def __post_init__(self) -> None:
        if self.minute_start_s is not None and len(self.minute_start_s) != len(self.requests):
            raise ValueError(f"'minute_start_s' has {len(self.minute_start_s)} values but 'requests' has "
                             f"{len(self.requests)}")


@dataclass
class MinuteRowDoc:
    """One row of ``per_minute.series`` in the row form ``[{"minute_start_s", "requests"}, ...]``."""

    requests: _Count
    minute_start_s: float | None = None


@dataclass
class WindowSeriesDoc:
    """``per_window.series``: requests per ``bin_s`` window and each window's start (s)."""

    bin_s: _Positive
    requests: list[_Count]
    window_start_s: list[float | None] | None = None

    def __post_init__(self) -> None:
        if self.window_start_s is not None and len(self.window_start_s) != len(self.requests):
            raise ValueError(f"'window_start_s' has {len(self.window_start_s)} values but 'requests' has "
                             f"{len(self.requests)}")


_MinuteSeries = Annotated[
    Annotated[MinuteSeriesDoc, Tag("~columns")] | Annotated[list[MinuteRowDoc], Tag("~rows")],
    Discriminator(lambda v: "~rows" if isinstance(v, list) else "~columns"),
]


@dataclass
class RateBlockDoc:
    """``per_minute`` / ``per_window``: the rate distribution (requests per bin) and, optionally, its series.

    Only what the plan reads is typed; the block's other keys (``rps``, ``tokens``, ``note``,
    ...) are accepted as written and not checked here.
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


@dataclass
class TokenRateDoc:
    """Tokens per minute (``per_minute.tokens.input_tokens`` / ``output_tokens``)."""

    available: bool = True
    reason: str | None = None
    mean: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    unit: str | None = None


@dataclass
class MinuteTokensDoc:
    input_tokens: TokenRateDoc | None = None
    output_tokens: TokenRateDoc | None = None


@dataclass
class MinuteBlockDoc(RateBlockDoc):
    series: _MinuteSeries | None = None
    tokens: MinuteTokensDoc | None = None


@dataclass
class WindowBlockDoc(RateBlockDoc):
    series: WindowSeriesDoc | None = None


@dataclass
class TargetDoc:
    """The target load: ``rps`` (or ``target_rps``) with ``ci95`` (or ``target_ci95``), the quantile and growth."""

    available: bool = True
    reason: str | None = None
    rps: float | None = None
    target_rps: float | None = None
    ci95: list[float | None] | None = None
    target_ci95: list[float | None] | None = None
    quantile: float | None = None
    growth: float | None = None
    statement: str | None = None
    basis: str | None = None
    bin_s: float | None = None
    n_bins: int | None = None
    ci_method: str | None = None


@dataclass
class PeakDoc:
    rps: float | None = None
    bin_s: float | None = None


@dataclass
class ForecastDoc:
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


@dataclass
class TargetsDoc(TargetDoc):
    """``targets``: ``targets.target`` (what ``bearing profile`` writes) or the flat form (``targets.rps``)."""

    target: TargetDoc | None = None
    peak: PeakDoc | None = None
    near_term: ForecastDoc | None = None
    mid_term: ForecastDoc | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class EpisodeDoc:
    """One burst episode (``bursts.episodes[]``); times in s on the trace's clock."""

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
class BurstsDoc:
    available: bool = True
    reason: str | None = None
    episodes: list[EpisodeDoc] = field(default_factory=list)
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


@dataclass
class SlotPeakDoc:
    slot: str | int | None = None
    p95_rps: float | None = None


@dataclass
class SlotRowDoc:
    hour: int | None = None
    weekday: int | None = None
    p95_rps: float | None = None


@dataclass
class SlotTableDoc:
    """``slots.hour_of_day`` / ``slots.hour_weekday``: the P95 rate per slot, its peak and trough."""

    available: bool = True
    reason: str | None = None
    rows: list[SlotRowDoc] = field(default_factory=list)
    peak: SlotPeakDoc | None = None
    trough: SlotPeakDoc | None = None
    peak_to_trough: float | None = None
    statistic: str | None = None
    repeated: bool = True


@dataclass
class SlotsDoc:
    available: bool = True
    reason: str | None = None
    basis: str | None = None
    bin_s: float | None = None
    hour_of_day: SlotTableDoc | None = None
    hour_weekday: SlotTableDoc | None = None


@dataclass
class ComponentDoc:
    name: str | None = None
    period_h: float | None = None
    amplitude_rps: float | None = None
    strength: float | None = None
    cycle_correlation: float | None = None
    peak_phase_h: float | None = None
    trough_phase_h: float | None = None


@dataclass
class TrendDoc:
    start_rps: float | None = None
    end_rps: float | None = None
    min_rps: float | None = None
    max_rps: float | None = None


@dataclass
class DecompositionDoc:
    available: bool = True
    reason: str | None = None
    method: str | None = None
    components: list[ComponentDoc] = field(default_factory=list)
    trend: TrendDoc | None = None
    resid_std_rps: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class DispersionDoc:
    available: bool = True
    reason: str | None = None
    index_of_dispersion: float | None = None
    index_of_dispersion_note: str | None = None
    interarrival_cv: float | None = None
    interarrival_cv_note: str | None = None


@dataclass
class MixHourDoc:
    hour_start_s: float | None = None
    mix: str | None = None
    share: float | None = None
    n_requests: int | None = None


@dataclass
class MixSharesPerHourDoc:
    available: bool = True
    reason: str | None = None
    basis: str | None = None
    rows: list[MixHourDoc] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ResolutionDoc:
    available: bool = True
    reason: str | None = None
    quantized: bool | None = None
    statement: str | None = None


@dataclass
class BurnWindowDoc:
    available: bool = True
    reason: str | None = None
    window_s: float | None = None
    n_requests: int | None = None
    n_bad: int | None = None
    burn_rate: float | None = None
    budget_fraction: float | None = None


@dataclass
class SloBudgetDoc:
    available: bool = True
    reason: str | None = None
    objective: float | None = None
    period_days: float | None = None
    n_requests: int | None = None
    n_bad: int | None = None
    budget_requests: float | None = None
    bad_statuses: list[Any] = field(default_factory=list)
    budget_used: float | None = None
    bad_minute_ratio: float | None = None
    fastest: list[BurnWindowDoc] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class TokenStatsDoc:
    n: int | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class SeqLenDoc:
    """``seq_len``: input + output tokens per request (n, mean, P50, P99, max), or why there is none."""

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
    input_tokens: TokenStatsDoc | None = None
    output_tokens: TokenStatsDoc | None = None


@dataclass
class MixShareDoc:
    mix: str | None = None
    share: float | None = None
    n_requests: int | None = None


@dataclass
class MixPeakDoc:
    """One row of ``mix_peaks.rows``: a mix's own rate distribution (req/s) and the share method beside it."""

    mix: str
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


@dataclass
class MixPeaksDoc:
    """``mix_peaks`` (``traffic/mix_peaks.py``): per-mix peaks at the profile's bin and target quantile."""

    available: bool = True
    reason: str | None = None
    bin_s: float | None = None
    quantile: float | None = None
    overall_target_rps: float | None = None
    statement: str | None = None
    rows: list[MixPeakDoc] = field(default_factory=list)


@dataclass
class MixCountsDoc:
    """``metrics.per_mix[]``: one mix's counted requests, share and mean tokens per request."""

    mix: str | None = None
    n_requests: float | None = None
    share: float | None = None
    mean_input_tokens: float | None = None
    mean_output_tokens: float | None = None


@dataclass
class MetricsSourceDoc:
    """``metrics``: a profile made from Prometheus counters (``traffic/metrics_profile.py``); only what a reader
    shows is typed."""

    available: bool = True
    request_metric: str | None = None
    step_s: float | None = None
    mix_label: str | None = None
    counter_resets: int | None = None
    gaps: int | None = None
    per_mix: list[MixCountsDoc] = field(default_factory=list)
    mix_peaks: MixPeaksDoc | None = None
    unknowable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class MixEntryDoc:
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
class PassiveLimitDoc:
    """``passive_limit`` (``bearing profile --passive-sla``): the limit production latency implies, as
    :meth:`bearing_lib.twin.passive.PassiveLimit.to_dict` writes it (the twin's type reads it back; the profile
    wing sits below the twin, so the document names the fields here)."""

    q_ult: Estimate
    clause: str
    window_s: float
    n_windows: int
    highest_rate_rps: float
    intercept: float
    slope_per_rps: float
    extrapolated: bool
    kind: str = "passive"


_MixShares = Annotated[
    Annotated[list[MixShareDoc], Tag("~list")] | Annotated[UnavailableDoc, Tag("~unavailable")],
    Discriminator(lambda v: "~list" if isinstance(v, list) else "~unavailable"),
]


@dataclass
class ProfileDocument:
    """The profile JSON (``docs/interfaces.md`` §5), typed for its readers downstream.

    The plan reads ``targets``, ``per_minute`` / ``per_window`` (statistics and series),
    ``bursts``, ``seq_len``, ``mix_shares``, ``span_s`` and ``clock``; the report's production
    section reads those and the descriptive parts (``per_second``, ``slots``,
    ``decomposition``, ``dispersion``, ``mix_shares_per_hour``, ``resolution``,
    ``slo_budget``). Looser on purpose where the document is heavy or open: every section
    and field is optional (an older or hand-written profile may carry only a target), keys
    not named here (``parameters``, ``decomposition.series``, the slots' extra columns, ...)
    are accepted and not checked.
    """

    schema: str | None = None
    bearing_version: str | None = None
    source: ProfileSource | str | None = None
    """Where the profile came from (:class:`~bearing_lib.traffic.source.ProfileSource`); a hand-written profile
    may name it in words."""
    convention: str | None = None
    span_s: float | None = None
    start_utc: str | None = None
    end_utc: str | None = None
    clock: str | None = None
    targets: TargetsDoc | None = None
    per_minute: MinuteBlockDoc | None = None
    per_second: RateBlockDoc | None = None
    per_window: WindowBlockDoc | None = None
    slots: SlotsDoc | None = None
    decomposition: DecompositionDoc | None = None
    bursts: BurstsDoc | None = None
    dispersion: DispersionDoc | None = None
    mix_shares: _MixShares | None = None
    mix_shares_per_hour: MixSharesPerHourDoc | None = None
    resolution: ResolutionDoc | None = None
    slo_budget: SloBudgetDoc | None = None
    seq_len: SeqLenDoc | None = None
    mix_spec: list[MixEntryDoc] | None = None
    """The mix spec the shares were computed with (``bearing_lib.data.mixes.MixSpec.to_dict``)."""
    mix_peaks: MixPeaksDoc | None = None
    """Each mix's own peaks (profiles with more than one mix)."""
    metrics: MetricsSourceDoc | None = None
    """A profile from Prometheus counters: the counter, step, resets, per-label shares and what is unknowable."""
    passive_limit: PassiveLimitDoc | None = None
    """``bearing profile --passive-sla``: the passive limit (``bearing_lib.twin.passive.PassiveLimit.to_dict``)."""

    @property
    def relative(self) -> bool:
        """Whether the clock is relative (seconds from the trace start, no dates)."""
        return str(self.clock or "").startswith("relative")

    @property
    def source_format(self) -> str | None:
        return self.source.format if isinstance(self.source, ProfileSource) and self.source.format else None

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "profile JSON") -> ProfileDocument:
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
        if d.get("schema") not in (None, PROFILE_SCHEMA):
            raise SchemaError(f"{source}: schema {d['schema']!r} is not {PROFILE_SCHEMA!r}", field="schema")
        return parse(cls, d, what=source)


def profile_schema_document() -> dict[str, Any]:
    """The JSON Schema of the profile JSON (``bearing schema profile``); looser for the descriptive parts."""
    from bearing_lib.common.schema import json_schema

    return json_schema(ProfileDocument, title="bearing profile JSON", schema_id=PROFILE_SCHEMA)


__all__ = [
    "PROFILE_SCHEMA",
    "BurnWindowDoc",
    "BurstsDoc",
    "ComponentDoc",
    "DecompositionDoc",
    "DispersionDoc",
    "EpisodeDoc",
    "ForecastDoc",
    "MetricsSourceDoc",
    "MinuteBlockDoc",
    "MinuteRowDoc",
    "MinuteSeriesDoc",
    "MixCountsDoc",
    "MixEntryDoc",
    "MixHourDoc",
    "MixPeakDoc",
    "MixPeaksDoc",
    "MixShareDoc",
    "MixSharesPerHourDoc",
    "PassiveLimitDoc",
    "PeakDoc",
    "ProfileDocument",
    "RateBlockDoc",
    "ResolutionDoc",
    "SeqLenDoc",
    "SloBudgetDoc",
    "SlotPeakDoc",
    "SlotRowDoc",
    "SlotTableDoc",
    "SlotsDoc",
    "TokenRateDoc",
    "TokenStatsDoc",
    "TrendDoc",
    "TargetDoc",
    "TargetsDoc",
    "UnavailableDoc",
    "WindowBlockDoc",
    "WindowSeriesDoc",
    "profile_schema_document",
]
