"""The plan's inputs, typed: what the plan reads of the limits and of the traffic profile.

Both hops into the plan are typed: the limits arrive as a
:class:`~bearing_lib.limits.result.LimitsResult` (read by :func:`limits_input` into a
:class:`LimitsInput`), the profile as a :class:`ProfileInput` (built by :func:`profile_input`
from the one profile type, :class:`~bearing_lib.traffic.document.TrafficProfile`, which ``profile_traffic``
returns and :func:`profile_input_from_dict` reads a profile JSON into, validated once).
:meth:`CapacityPlan.build <bearing_lib.plan.capacity_plan.CapacityPlan.build>` reads nothing else.

Read from the limits: per mix ``q_ult`` on the achieved basis (completed req/s; ``ci95``
scaled to throughput; ``censored``), ``steps`` (:class:`~bearing_lib.plan.plan_step.PlanStep`: latency–concurrency
curve, single-path P95, error rate at peak, mean concurrency), ``sla``, and
``conditions.instances`` (1 when absent, and the plan says it assumed so).

Read from the profile: ``mix_shares``, ``targets``, ``per_minute`` statistics and series (or
``per_window.series`` spread evenly over each window's minutes), ``bursts``, ``seq_len``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bearing_lib.common.errors import BadValueError, ParameterError, SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.schema import refuse_other_kind
from bearing_lib.limits.result import LimitsResult
from bearing_lib.limits.sla import Clause
from bearing_lib.plan.capacity import BurstModel
from bearing_lib.plan.fos import Limit, OwnPeak, Target
from bearing_lib.plan.interval import OPEN_ABOVE, OPEN_BELOW, Interval, open_end
from bearing_lib.plan.memory import SeqLenStats
from bearing_lib.plan.plan_step import PlanStep
from bearing_lib.traffic.document import (
    PROFILE_SCHEMA,
    MinuteSeries,
    MixPeaks,
    TrafficProfile,
    UnavailableDoc,
)
from bearing_lib.traffic.forecast import TrendForecast


# --------------------------------------------------------------------------- limits
@dataclass
class LimitsInput:
    limits: list[Limit]
    skipped: dict[str, str]
    steps: dict[str, list[PlanStep]]
    sla: list[Clause]
    tested_instances: int
    tested_instances_basis: str
    source: str
    notes: list[str] = field(default_factory=list)
    floors: list[str] = field(default_factory=list)
    """Per mix, a load-independent failure floor that breaks an SLA clause at every load
    (``MixLimit.failure_floors``): no instance count cures it, so the plan is red for it."""
    floors_one_load: bool = False
    """Every floor in :attr:`floors` rests on one quiet load (``FailureFloor.one_load``): whether more instances
    would cure it is not tested, and the verdict says so instead of "whatever the instance count"."""
    floor_mixes: tuple[str, ...] = ()
    """The mixes whose limit is the other clauses' (a floor of theirs breaks a clause): their lower bounds say "never
    failed on the other clauses" (``plan.fos.compute_fos``); another mix's says "never failed" (review, round 23)."""


def limits_input(result: LimitsResult, *, run: str | None = None, source: str = "limits") -> LimitsInput:
    """The plan's view of the limits: per mix, ``Q_ult`` on the **achieved** basis (completed req/s).

    A limits result may hold several runs (e.g. two deployments) with the same mix names;
    then ``run`` must choose one (the error lists them). A mix whose limit cannot be put in
    completed req/s (no throughput at the limit, no limit at all, a censoring that has no
    sign) is skipped with its reason.
    """
    entries = result.for_run(run, source=source)
    default_unit = result.conditions.offered_load_unit[0] if len(result.conditions.offered_load_unit) == 1 else None
    limits, skipped, steps = [], {}, {}
    notes_extra: list[str] = []
    floors: list[str] = []
    floor_mixes: list[str] = []
    one_load: list[bool] = []
    for i, m in enumerate(entries):
        name, q = m.mix.name, m.q_ult
        floors += [f"mix {name}: {f.statement}" for f in m.failure_floors if f.breaks_clause]
        one_load += [f.one_load for f in m.failure_floors if f.breaks_clause]
        if any(f.breaks_clause for f in m.failure_floors):
            floor_mixes.append(name)
        unit = (q.unit if q else None) or default_unit
        steps[name] = [PlanStep.from_step(st, result.sla, unit) for st in m.steps]
        if q is None:
            skipped[name] = "no q_ult in the limits file"
            continue
        if q.value is None:
            skipped[name] = f"no limit: {q.statement or q.censored}"
            continue
        if q.censored not in ("none", "above", "below", "not_monotone"):
            skipped[name] = f"censoring {q.censored!r} cannot be planned with"
            continue
        a = q.achieved
        if a.value is None:
            skipped[name] = (f"q_ult is {q.value} {unit} with no throughput_rps: a plan needs the limit in "
                             "completed req/s")
            continue
        ci_rps, why_open = _limit_ci(a, q.interval_method)
        if why_open:
            side = "above" if ci_rps and ci_rps[1] is None else "below"
            notes_extra.append(f"{name}: the limit's 95% CI is open {side} ({why_open}); every number the plan makes "
                               "from this limit (FOS, allowable capacity, instances, tokens/s, cost) leaves that end "
                               "open, on the side its arithmetic puts it")
        if q.achieved_lower_bound:
            # the completed rate at the limit is read over a busy span (limits.curves.busy_span_rate): the server may
            # have completed more, so what the plan divides by it errs on the safe side (vLLM DeepSeek-V2.5, round 25)
            notes_extra.append(f"{name}: the limit's completed rate ({a.value:.4g} req/s) is a lower bound (read "
                               "from a step whose send window was shorter than a typical request, over the server's "
                               "busy span): the FOS, allowable capacity and tokens/s made from it are conservative "
                               "(the true ones may be higher), and at most the planned number of instances is needed")
        try:
            limits.append(Limit(name, a.value, ci_rps, q.censored, q.statement, why_open, capped=q.capped,
                                achieved_lower_bound=q.achieved_lower_bound))
        except BadValueError as exc:
            raise BadValueError(exc.message, path=source, field=f"mixes[{i}].q_ult") from exc
    n = result.conditions.instances
    if n is None:
        n, basis = 1, "assumed: the limits file does not say how many instances the load test drove"
    else:
        if n < 1:
            raise BadValueError(f"expected >= 1, got {n}", path=source, field="conditions.instances")
        basis = result.conditions.instances_basis or "conditions.instances in the limits file"
    return LimitsInput(limits, skipped, steps, list(result.sla), n, basis, source, notes_extra, floors,
                       floors_one_load=bool(one_load) and all(one_load), floor_mixes=tuple(floor_mixes))


def _limit_ci(a: Estimate, interval_method: str | None) -> tuple[Interval | None, str | None]:
    """The limit's 95 % CI on the achieved basis, an end the limits left open kept open (``None``), and why it
    is open (the limits' own words from ``interval_method`` when it says, e.g. "high end open: no step above
    the limit failed a clause"; :data:`~bearing_lib.plan.interval.OPEN_ABOVE` otherwise)."""
    if not a.ci95 or (a.lo is None and a.hi is None) or a.value is None:
        return None, None
    lo = None if a.lo is None else min(a.lo, a.value)
    hi = None if a.hi is None else max(a.hi, a.value)
    if lo is not None and lo <= 0:
        return None, None
    end = open_end((lo, hi))
    if end is None:
        return (lo, hi), None
    side = "high" if end == "high" else "low"
    said = next((p.strip() for p in (interval_method or "").split(";") if p.strip().startswith(f"{side} end open")),
                None)
    why = said.split(":", 1)[1].strip() if said and ":" in said else (OPEN_ABOVE if side == "high" else OPEN_BELOW)
    return (lo, hi), why


LIMITS_KEYS = ("mixes", "sla", "conditions")
"""The keys of a limits JSON the plan reads; a document without ``schema`` and without any of them is refused."""
PROFILE_KEYS = ("targets", "per_minute", "per_window", "mix_shares", "bursts", "seq_len")
"""The keys of a profile JSON the plan reads; a document without ``schema`` and without any of them is refused."""


def limits_document(d: Any, *, source: str = "limits JSON") -> LimitsResult:
    """A limits JSON document as a :class:`LimitsResult` (``LimitsResult.from_dict``, validated once); a
    document of another kind is refused as such first."""
    from bearing_lib.limits.result import SCHEMA as LIMITS_SCHEMA

    refuse_other_kind(d, kind="limits", schema=LIMITS_SCHEMA, keys=LIMITS_KEYS, source=source,
                      writer="bearing limits DATASET --sla ... --json OUT")
    return LimitsResult.from_dict(d, source=source)


def limits_from_dict(d: dict[str, Any], *, source: str = "limits JSON", run: str | None = None) -> LimitsInput:
    """:func:`limits_input` of a limits JSON document (:func:`limits_document`)."""
    return limits_input(limits_document(d, source=source), run=run, source=source)


# --------------------------------------------------------------------------- profile
def _num(x: Any) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class ProfileTarget:
    """The profile's target load as it gives it (before a growth or quantile given to the plan)."""

    rps: float | None
    ci95: tuple[float | None, float | None] | None = None
    quantile: float | None = None
    growth: float | None = None
    statement: str | None = None


@dataclass(frozen=True)
class BurstFacts:
    """The profile's burst episodes as far as the plan's burst model needs them."""

    peaks_rps: list[float]
    count: int
    per_month: float | None = None
    per_month_note: str | None = None
    max_duration_s: float | None = None
    rule: str | None = None


@dataclass
class ProfileInput:
    """What the plan needs from a traffic profile, typed: the plan's body reads only this.

    Built by :func:`profile_input` from a :class:`~bearing_lib.traffic.document.TrafficProfile` (what
    ``profile_traffic`` returns; :func:`profile_input_from_dict` reads a profile JSON into one first).
    ``per_minute`` / ``per_window`` hold the rate statistics the profile gives (``mean``,
    ``p50``, ``p95``, ``p99``, ``max``; requests per bin); ``series`` the requests per
    minute with their ``series_labels`` (rate windows spread evenly over their minutes,
    ``series_note`` says so).
    """

    source: str
    target: ProfileTarget
    clock: str | None = None
    span_s: float | None = None
    per_minute: dict[str, float] = field(default_factory=dict)
    per_minute_ci95: dict[str, tuple[float, float]] = field(default_factory=dict)
    per_window: dict[str, float] = field(default_factory=dict)
    shares: dict[str, float] = field(default_factory=dict)
    shares_reason: str | None = None
    series: list[float] | None = None
    series_labels: list[str] | None = None
    series_note: str | None = None
    bursts: BurstFacts | None = None
    seq_len: SeqLenStats | None = None
    seq_len_reason: str | None = None
    series_start_s: list[float] | None = None
    """Start (s) of each minute of a per-minute series (None for rate windows or when not given)."""
    mean_input_tokens: float | None = None
    mean_output_tokens: float | None = None
    """Mean input / output tokens per request of the production traffic (the profile's seq_len)."""
    mix_spec: Any = None
    """The profile's mix spec (a :class:`~bearing_lib.data.mixes.MixSpec`), if it has one."""
    forecast: TrendForecast | None = None
    """The profile's mid-term forecast of the daily peak (:class:`~bearing_lib.traffic.forecast.TrendForecast`),
    None when it made none: the plan uses this one rather than forecasting again."""
    own_peaks: list[OwnPeak] = field(default_factory=list)
    """Each mix's own peak beside the share method's (the profile's ``mix_peaks``, or ``metrics.mix_peaks`` for a
    profile from Prometheus counters); empty when the profile has none."""

    @property
    def peak_known(self) -> bool:
        return any(k in s for s in (self.per_minute, self.per_window) for k in ("p95", "p99"))

    @property
    def mean_known(self) -> bool:
        return any("mean" in s for s in (self.per_minute, self.per_window))


_STATS = ("mean", "p50", "p95", "p99", "max")


def _stats_of(block: Any) -> dict[str, float]:
    """The known rate statistics of a profile's rate block (``per_minute`` / ``per_window``)."""
    if block is None:
        return {}
    get = block.get if isinstance(block, dict) else (lambda k: getattr(block, k, None))
    out = {k: _num(get(k)) for k in _STATS}
    return {k: v for k, v in out.items() if v is not None}


def own_peaks_of(peaks: MixPeaks | None) -> list[OwnPeak]:
    """The per-mix peaks of a profile (its :class:`~bearing_lib.traffic.document.MixPeaks`) as :class:`OwnPeak`
    rows; [] for none."""
    if peaks is None or not peaks.available:
        return []
    q, b, overall = peaks.quantile, peaks.bin_s, peaks.overall_target_rps
    if q is None or b is None or overall is None:
        return []
    return [OwnPeak(str(r.mix), float(r.target_rps), float(r.share_method_rps), float(overall), float(q), float(b))
            for r in peaks.rows if r.target_rps is not None and r.share_method_rps is not None]


def _fnum(x: Any) -> float | None:
    return None if x is None else float(x)


def profile_input_from_dict(doc: Any, *, source: str = "profile JSON") -> ProfileInput:
    """:func:`profile_input` of a profile JSON document (§5), validated once
    (:meth:`TrafficProfile.from_dict <bearing_lib.traffic.document.TrafficProfile.from_dict>`:
    every problem together, with its field path); a document of another kind is refused as such."""
    refuse_other_kind(doc, kind="profile", schema=PROFILE_SCHEMA, keys=PROFILE_KEYS, source=source,
                      writer="bearing profile TRACE --json OUT")
    return profile_input(TrafficProfile.from_dict(doc, source=source), source=source)


def profile_input(p: TrafficProfile, *, source: str = "profile") -> ProfileInput:
    """The plan's view of a :class:`~bearing_lib.traffic.document.TrafficProfile` (what ``profile_traffic`` returns
    and a profile JSON reads into), from its attributes. The documented alternative shapes
    (``targets.target_rps`` / ``targets.target.rps`` / ``targets.rps``; ``ci95`` /
    ``target_ci95``; a series as columns or rows) are resolved here and nowhere else."""
    if not isinstance(p, TrafficProfile):
        raise ParameterError(f"profile: expected a TrafficProfile (profile_traffic) or a profile JSON document, "
                             f"got {type(p).__name__}")
    t = p.targets
    inner = t.target if t is not None and t.target is not None else t
    if inner is None:
        target = ProfileTarget(None)
    else:
        ci = inner.ci95 or inner.target_ci95
        target = ProfileTarget(inner.target_rps if inner.target_rps is not None else inner.rps,
                               (ci[0], ci[1]) if ci and len(ci) == 2 else None, inner.quantile, inner.growth,
                               inner.statement or inner.basis)
    pm = p.per_minute if p.per_minute is not None and p.per_minute.available else None
    pw = p.per_window if p.per_window is not None and p.per_window.available else None
    ci95 = {}
    for k in ("p50", "p95", "p99", "max"):
        c = getattr(pm, f"{k}_ci95", None) if pm is not None else None
        if isinstance(c, list) and len(c) == 2:
            ci95[k] = (float(c[0]), float(c[1]))
    shares: dict[str, float] = {}
    shares_reason = None
    if isinstance(p.mix_shares, UnavailableDoc):
        shares_reason = p.mix_shares.reason
    elif p.mix_shares:
        shares = {str(r.mix): float(r.share) for r in p.mix_shares if r.mix is not None and r.share is not None}
    series = labels = note = minute_starts = None
    if pm is not None and pm.series:
        s = pm.series
        if isinstance(s, MinuteSeries):
            starts_raw, counts = s.minute_start_s, list(s.requests)
        else:
            starts_raw, counts = [r.minute_start_s for r in s], [r.requests for r in s]
        starts = _starts(starts_raw, source, "per_minute.series.minute_start_s")
        series, labels = counts, [_label(x) for x in (starts if starts is not None else range(len(counts)))]
        minute_starts = starts
    elif pw is not None and pw.series:
        s = pw.series
        starts = _starts(s.window_start_s, source, "per_window.series.window_start_s")
        got = spread_windows(starts or [i * s.bin_s for i in range(len(s.requests))], list(s.requests), s.bin_s,
                             p.clock == "UTC wall clock")
        if got is not None:
            series, labels, note = got
    bursts = None
    b = p.bursts
    if b is not None and b.available:
        peaks = [e.peak_rps for e in b.episodes if e.peak_rps is not None]
        bursts = BurstFacts(peaks, b.count if b.count is not None else len(b.episodes), b.per_month, b.per_month_note,
                            b.max_duration_s, b.rule)
    seq, seq_why = None, None
    sl = p.seq_len
    if sl is not None and all(getattr(sl, k) is not None for k in ("mean", "p50", "p99", "max")):
        seq = SeqLenStats(int(sl.n or 0), float(sl.mean), float(sl.p50), float(sl.p99),  # type: ignore[arg-type]
                          float(sl.max), source="profile JSON seq_len")  # type: ignore[arg-type]
    elif sl is not None and not sl.available:
        seq_why = sl.reason
    mix_spec = None
    if p.mix_spec:
        from bearing_lib.data.mixes import MixSpec

        mix_spec = MixSpec(tuple(m.to_mix() for m in p.mix_spec))
    tin = sl.input_tokens if sl is not None and sl.available else None
    tout = sl.output_tokens if sl is not None and sl.available else None
    return ProfileInput(
        source=source, target=target, clock=p.clock, span_s=p.span_s, per_minute=_stats_of(pm), per_minute_ci95=ci95,
        per_window=_stats_of(pw), shares=shares, shares_reason=shares_reason, series=series, series_labels=labels,
        series_note=note, bursts=bursts, seq_len=seq, seq_len_reason=seq_why, series_start_s=minute_starts,
        mean_input_tokens=tin.mean if tin is not None else None,
        mean_output_tokens=tout.mean if tout is not None else None, mix_spec=mix_spec,
        own_peaks=own_peaks_of(p.mix_peaks if p.mix_peaks is not None
                               else p.metrics.mix_peaks if p.metrics is not None else None),
        forecast=_forecast_of(t.mid_term if t is not None else None),
    )


def _forecast_of(mid: Any) -> TrendForecast | None:
    """The profile's ``targets.mid_term.trend`` (a :class:`~bearing_lib.traffic.forecast.TrendForecast`, read and
    validated with the profile document), None when the profile made no forecast."""
    if mid is None or not mid.available:
        return None
    return mid.trend


def _starts(raw: list[float | None] | None, source: str, where: str) -> list[float] | None:
    """Start times of a series: None when not given (all missing); a SchemaError when only some are."""
    if raw is None or all(x is None for x in raw):
        return None
    if any(x is None for x in raw):
        raise SchemaError("expected numeric start times (s) for every bin, or none", path=source, field=where)
    return [float(x) for x in raw]  # type: ignore[arg-type]


def plan_target(p: ProfileInput, *, quantile: float | None = None, growth: float | None = None) -> Target:
    """The planned load in req/s from the profile's target (§5), else its per-minute quantile.

    Without a target: ``per_minute.p99 / 60 × growth`` (or the quantile asked for: P50,
    P95, P99 or the max), with that statistic's CI when the profile gives one.
    """
    source, t = p.source, p.target
    g0 = t.growth or 1.0
    g = growth if growth is not None else g0
    q = quantile if quantile is not None else t.quantile
    if t.rps is not None and quantile is None:
        ci = t.ci95
        k = g / g0  # a growth given here replaces the profile's
        ci_t = (float(ci[0]) * k, float(ci[1]) * k) if ci and ci[0] is not None and ci[1] is not None else None
        basis = f"{source}: {t.statement or 'targets as given'}"
        if ci_t is not None and not all(math.isfinite(x) for x in ci_t):
            # a profile made without resamples (n_boot=0) gives no CI: the target is a point, said as one
            basis += "; the profile gives no CI for the target (no bootstrap resamples): a point"
            ci_t = None
        if k != 1:
            basis += f", growth {g:g} instead of {g0:g}"
        if ci_t is not None and not (ci_t[0] <= t.rps * k <= ci_t[1]):
            # a bootstrap CI of a high quantile need not contain the point estimate; widen it to do so
            basis += (f"; the profile's CI [{ci_t[0]:.4g}, {ci_t[1]:.4g}] does not contain the target and was "
                      "widened to it")
            ci_t = (min(ci_t[0], t.rps * k), max(ci_t[1], t.rps * k))
        if ci_t is not None and ci_t[0] <= 0:
            basis += "; the profile's CI reaches 0 req/s and is not used"
            ci_t = None
        try:
            return Target(t.rps * k, ci_t, q, g, basis)
        except BadValueError as exc:
            raise BadValueError(exc.message, path=source, field="targets.target.rps") from exc
    qq = q if q is not None else 0.99
    key = {0.5: "p50", 0.95: "p95", 0.99: "p99", 1.0: "max"}.get(qq)
    if key is None or key not in p.per_minute:
        raise SchemaError(f"no target in the profile and no per_minute.{key or qq} to derive one", path=source,
                          field="targets")
    per_min = p.per_minute[key]
    ci = p.per_minute_ci95.get(key)
    ci_t = (ci[0] / 60 * g, ci[1] / 60 * g) if ci else None
    return Target(per_min / 60.0 * g, ci_t, qq, g,
                  f"{source}: per-minute {key.upper()} {per_min:,.1f} req/min / 60 × growth {g:g}"
                  + ("" if ci_t else " (the profile gives no CI for it)"))


def plan_burst(p: ProfileInput, target_rps: float, growth: float = 1.0) -> BurstModel | None:
    """Burst model from the profile's bursts: the highest observed burst peak (× growth) relative to the target."""
    b = p.bursts
    if b is None:
        return None
    if not b.peaks_rps:
        span_h = (p.span_s or 0) / 3600
        return BurstModel(1.0, 0.0, None,
                          f"no burst episode in the profile's {span_h:,.1f} h ({b.rule or 'burst rule'}); "
                          "a short trace cannot rule bursts out: give a burst multiplier to plan for campaigns "
                          "(the sources: 1–2 a month, 3–5× peak)")
    peak = max(b.peaks_rps) * growth
    return BurstModel(max(1.0, peak / target_rps), b.per_month, (b.max_duration_s or 0) / 60 or None,
                      f"highest observed burst peak {max(b.peaks_rps):,.2f} req/s × growth {growth:g} over the target "
                      f"{target_rps:,.2f} req/s ({b.count} episode(s), {b.per_month_note or 'frequency as given'})")


# The dict readers of earlier versions, kept for callers: each validates the document once and reads the typed view.
def target_from_profile(p: dict[str, Any], *, quantile: float | None = None, growth: float | None = None,
                        source: str = "profile JSON") -> Target:
    """:func:`plan_target` of a profile JSON document."""
    return plan_target(profile_input_from_dict(p, source=source), quantile=quantile, growth=growth)


def shares_from_profile(p: dict[str, Any]) -> dict[str, float]:
    return profile_input_from_dict(p).shares


def series_from_profile(p: dict[str, Any], *, source: str = "profile JSON") -> tuple[list[float], list[str]] | None:
    """Requests per minute and minute labels from ``per_minute.series`` (§5), if present (columns
    ``{"minute_start_s": [...], "requests": [...]}``, what ``bearing profile`` writes, or rows)."""
    pi = profile_input_from_dict({k: v for k, v in p.items() if k != "per_window"}, source=source)
    return None if pi.series is None or pi.series_labels is None else (pi.series, pi.series_labels)


def window_series_from_profile(
    p: dict[str, Any], *, source: str = "profile JSON"
) -> tuple[list[float], list[str], str | None] | None:
    """Requests per minute from a rate-window profile's ``per_window.series`` (§5), if present: each
    window's requests spread evenly over its minutes; ``None`` when the window is not a whole number of minutes."""
    pi = profile_input_from_dict({k: v for k, v in p.items() if k != "per_minute"}, source=source)
    return None if pi.series is None or pi.series_labels is None else (pi.series, pi.series_labels, pi.series_note)


def burst_from_profile(p: dict[str, Any], target_rps: float, growth: float = 1.0) -> BurstModel | None:
    return plan_burst(profile_input_from_dict(p), target_rps, growth)


def seq_len_from_profile(p: dict[str, Any]) -> SeqLenStats | None:
    return profile_input_from_dict(p).seq_len


def spread_windows(starts: list[float], requests: list[float], bin_s: float,
                   aligned: bool) -> tuple[list[float], list[str], str | None] | None:
    """Requests per minute from requests per ``bin_s`` window, each window spread evenly over its minutes.

    Returns ``(counts, labels, note)``; ``None`` when ``bin_s`` is not a whole number of
    minutes. The note says that peaks inside a window are smoothed (``None`` for 60 s bins).
    """
    k = bin_s / 60.0
    if abs(k - round(k)) > 1e-9 or round(k) < 1:
        return None
    k = int(round(k))
    note = (f"the profile's series has {bin_s:g} s bins: each is spread evenly over its {k} minutes for CBU and "
            "the elasticity replay, which smooths peaks inside a bin") if k > 1 else None
    counts: list[float] = []
    labels: list[str] = []
    for start, n in zip(starts, requests, strict=True):
        for j in range(k):
            counts.append(n / k)
            labels.append(_label(start + 60 * j) if aligned else str(start + 60 * j))
    return counts, labels, note


def _label(x: Any) -> str:
    from datetime import UTC, datetime

    v = _num(x)
    if v is not None and v > 1e9:  # epoch seconds
        return datetime.fromtimestamp(v, tz=UTC).strftime("%Y-%m-%d %H:%M")
    return str(x)


def enrich_steps(lim: LimitsInput, curve: Any, run: str | None) -> None:
    """Add the load curve's columns (P50/P95/P99 latencies, mean concurrency ...) to the steps."""
    import polars as pl

    if not isinstance(curve, pl.DataFrame) or curve.height == 0:
        return
    cols = [c for c in curve.columns if not c.startswith("_")]
    for name, steps in lim.steps.items():
        part = curve.filter(pl.col("mix") == name)
        if run is not None and "run_id" in curve.columns:
            part = part.filter(pl.col("run_id") == run)
        by_step = {r["step"]: r for r in part.select(cols).to_dicts()}
        for st in steps:
            st.add_curve_columns(by_step.get(st.step) or {})


def q_ult_of(limits: LimitsResult, mix: str, run: str | None) -> Estimate | None:
    for m in limits.mixes:
        if m.mix.name == mix and (run is None or m.run_id == run):
            return m.q_ult.estimate
    return None


def series_from_trace(trace: Any) -> tuple[list[float], list[str]] | None:
    """Per-minute counts of a trace via the profile's binning (UTC minutes, empty = 0, partial ends dropped)."""
    from bearing_lib.traffic.binning import per_minute_counts

    f = per_minute_counts(trace)
    return [float(x) for x in f["requests"].to_list()], [_label(x) for x in f["minute_start_s"].to_list()]


__all__ = [
    "BurstFacts",
    "LimitsInput",
    "ProfileInput",
    "ProfileTarget",
    "burst_from_profile",
    "enrich_steps",
    "limits_document",
    "limits_from_dict",
    "limits_input",
    "own_peaks_of",
    "plan_burst",
    "plan_target",
    "profile_input",
    "profile_input_from_dict",
    "q_ult_of",
    "seq_len_from_profile",
    "series_from_profile",
    "series_from_trace",
    "shares_from_profile",
    "spread_windows",
    "target_from_profile",
    "window_series_from_profile",
]
