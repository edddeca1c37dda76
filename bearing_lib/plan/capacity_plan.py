"""``CapacityPlan``: FOS, verdict, allowable capacity, CBU, instances, elasticity, memory, scorecards.

Built from a limits JSON (``docs/interfaces.md`` §4) and a profile JSON (§5); written as
the plan JSON (§6). Every section that the inputs cannot support is
``{"available": false, "reason": ...}``, never a placeholder number.

Inputs read from the limits JSON: per mix ``q_ult`` (``throughput_rps``, or ``value``
when the offered-load unit is req/s; ``ci95`` scaled to throughput by
``throughput_rps / value``; ``censored``), ``steps`` (latency–concurrency curve,
single-path P95, error rate at peak), ``sla``, and ``conditions.instances`` (how many
serving instances the load test drove; 1 when absent, and the plan says it assumed so).

Inputs read from the profile JSON: ``mix_shares`` (production weights), ``targets``
(target rate and its CI), ``per_minute`` (peak statistics and, for CBU and the
elasticity replay, the per-minute series ``per_minute.series``, or for rate windows
``per_window.series`` spread evenly over each window's minutes), ``bursts`` and, for the
memory plan, the sequence-length distribution ``seq_len``. A profile JSON written by
``bearing profile`` carries both; an older one without them can be completed from the
trace itself (:meth:`CapacityPlan.build` ``trace=``, ``bearing plan --trace``).

Both hops into the plan are typed: the limits arrive as a :class:`LimitsResult` (read by
:func:`limits_input`), the profile as a :class:`ProfileInput` (built by
:func:`profile_input` from a ``TrafficProfile`` or by :func:`profile_input_from_dict` from
the JSON, validated once); :meth:`CapacityPlan.build` reads nothing else.
"""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import BadValueError, InsufficientDataError, ParameterError, SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.files import read_json
from bearing_lib.limits.result import LimitsResult, SlaClauseDoc
from bearing_lib.plan.capacity import (
    BurstModel,
    InstancePlan,
    SafeConcurrency,
    curve_from_limits_steps,
    instance_count,
    max_safe_concurrency,
)
from bearing_lib.plan.economics import PlanEconomics, attach_economics
from bearing_lib.plan.elasticity import DEFAULT_COLD_START_S, DEFAULT_COOL_DOWN_S, ReplayResult, replay
from bearing_lib.plan.fos import CbuResult, FosResult, Limit, Target, TierBands, cbu_per_minute, compute_fos, get_tier
from bearing_lib.plan.memory import (
    DEFAULT_MARGIN,
    MemoryPlan,
    ModelPreset,
    SeqLenStats,
    VllmLogCheck,
    check_vllm_log,
    get_preset,
    memory_plan,
    sequence_length_stats,
)
from bearing_lib.plan.scorecards import Scorecards, checklist, scorecard

if TYPE_CHECKING:
    from bearing_lib.plan.document import PlanDocument


def unavailable(reason: str) -> dict[str, object]:
    return {"available": False, "reason": reason}


# --------------------------------------------------------------------------- limits
@dataclass
class LimitsInput:
    limits: list[Limit]
    skipped: dict[str, str]
    steps: dict[str, list[dict[str, Any]]]
    sla: list[SlaClauseDoc]
    tested_instances: int
    tested_instances_basis: str
    source: str
    notes: list[str] = field(default_factory=list)


def _step_rows(steps: list[Any], sla: list[Any], unit: str | None) -> list[dict[str, Any]]:
    """The plan's working rows of one mix's steps: each :class:`Step`'s fields plus flat
    ``{metric}_{stat}`` keys (e.g. ``latency_ms_p99``) from ``observed`` and the
    ``offered_load_unit``; the load curve's columns are added later (``_enrich_steps``).

    These rows stay inside the plan (safe concurrency, concurrency at the limit); the
    stage boundary is the typed :class:`LimitsResult`.
    """
    import dataclasses

    by_text = {c.text: c for c in sla}
    out = []
    for st in steps:
        row = dataclasses.asdict(st)
        row.update(row.pop("stats") or {})
        if unit:
            row["offered_load_unit"] = unit
        for text, v in (st.observed or {}).items():
            c = by_text.get(text)
            if c is not None and c.kind == "percentile" and c.metric and v is not None:
                row.setdefault(f"{c.metric}_{c.stat}", v)
        out.append(row)
    return out


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
    for i, m in enumerate(entries):
        name, q = m.mix.name, m.q_ult
        unit = (q.unit if q else None) or default_unit
        steps[name] = _step_rows(m.steps, result.sla, unit)
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
        ci_rps = None
        if a.ci95 and (a.lo is not None or a.hi is not None):
            lo = a.lo if a.lo is not None else a.value
            hi = a.hi if a.hi is not None else a.value
            ci_rps = (min(lo, a.value), max(hi, a.value))
            if a.lo is None or a.hi is None:
                notes_extra.append(f"{name}: the limit's 95% CI has only one end; the other side is held at the value")
            if ci_rps[0] <= 0:
                ci_rps = None
        try:
            limits.append(Limit(name, a.value, ci_rps, q.censored, q.statement))
        except BadValueError as exc:
            raise BadValueError(exc.message, path=source, field=f"mixes[{i}].q_ult") from exc
    n = result.conditions.instances
    if n is None:
        n, basis = 1, "assumed: the limits file does not say how many instances the load test drove"
    else:
        if n < 1:
            raise BadValueError(f"expected >= 1, got {n}", path=source, field="conditions.instances")
        basis = result.conditions.instances_basis or "conditions.instances in the limits file"
    return LimitsInput(limits, skipped, steps, list(result.sla), n, basis, source, notes_extra)


def limits_from_dict(d: dict[str, Any], *, source: str = "limits JSON", run: str | None = None) -> LimitsInput:
    """:func:`limits_input` of a limits JSON document, validated once (``LimitsResult.from_dict``)."""
    return limits_input(LimitsResult.from_dict(d, source=source), run=run, source=source)


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

    Built by :func:`profile_input` from a :class:`~bearing_lib.traffic.profile.TrafficProfile`
    (its attributes, no JSON in between) or by :func:`profile_input_from_dict` from a profile
    JSON document (validated once, :class:`~bearing_lib.traffic.document.ProfileDocument`).
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

    @property
    def peak_known(self) -> bool:
        return any(k in s for s in (self.per_minute, self.per_window) for k in ("p95", "p99"))

    @property
    def mean_known(self) -> bool:
        return any("mean" in s for s in (self.per_minute, self.per_window))


_STATS = ("mean", "p50", "p95", "p99", "max")


def _stats_of(block: Any) -> dict[str, float]:
    """The known rate statistics of a block (a dict of the object, or a typed document block)."""
    if block is None:
        return {}
    get = block.get if isinstance(block, dict) else (lambda k: getattr(block, k, None))
    out = {k: _num(get(k)) for k in _STATS}
    return {k: v for k, v in out.items() if v is not None}


def profile_input(profile: Any, *, source: str = "profile") -> ProfileInput:
    """The plan's view of a :class:`~bearing_lib.traffic.profile.TrafficProfile`, from its attributes."""
    from bearing_lib.common.unavailable import Unavailable
    from bearing_lib.traffic.profile import MixShares, TrafficProfile
    from bearing_lib.traffic.seqlen import SeqLenDistribution

    if not isinstance(profile, TrafficProfile):
        raise ParameterError(f"profile: expected a TrafficProfile (profile_traffic) or a profile JSON document, "
                             f"got {type(profile).__name__}")
    t = profile.targets
    target = ProfileTarget(t.target_rps, tuple(t.target_ci95) if t.target_ci95 else None, t.quantile, t.growth,
                           t.statement)
    pm = profile.per_minute_stats if isinstance(profile.per_minute_stats, dict) else None
    shares: dict[str, float] = {}
    shares_reason = None
    if isinstance(profile.mixes, MixShares):
        for row in profile.mixes.to_list():
            if row.get("mix") is not None and row.get("share") is not None:
                shares[str(row["mix"])] = float(row["share"])  # type: ignore[arg-type]
    elif isinstance(profile.mixes, Unavailable):
        shares_reason = profile.mixes.reason
    series = labels = note = None
    got = _series_from_profile_object(profile)
    if got is not None:
        (series, labels), note = got[:2], got[2]
    b = profile.bursts
    bursts = BurstFacts([float(e.peak_rps) for e in b.episodes], b.count, b.per_month, b.per_month_note,
                        max((e.duration_s for e in b.episodes), default=None), b.rule)
    seq, seq_why = None, None
    mean_in = mean_out = None
    if isinstance(profile.seq_len, SeqLenDistribution):
        s = profile.seq_len.total
        seq = SeqLenStats(int(s.n or 0), float(s.mean), float(s.p50), float(s.p99), float(s.max),
                          source="profile JSON seq_len")
        mean_in, mean_out = profile.seq_len.input_tokens.mean, profile.seq_len.output_tokens.mean
    else:
        seq_why = profile.seq_len.reason
    starts = (profile.per_minute["minute_start_s"].cast(float).to_list()
              if pm is not None and profile.per_minute is not None else None)
    return ProfileInput(
        source=source, target=target,
        clock="UTC wall clock" if profile.aligned else "relative (seconds from the trace start)",
        span_s=profile.span_s, per_minute=_stats_of(pm), per_window=_stats_of(profile.per_window_stats),
        shares=shares, shares_reason=shares_reason, series=series, series_labels=labels, series_note=note,
        bursts=bursts, seq_len=seq, seq_len_reason=seq_why, series_start_s=starts,
        mean_input_tokens=_fnum(mean_in), mean_output_tokens=_fnum(mean_out),
        mix_spec=profile.mixes.spec if isinstance(profile.mixes, MixShares) else None,
    )


def _fnum(x: Any) -> float | None:
    return None if x is None else float(x)


def profile_input_from_dict(doc: Any, *, source: str = "profile JSON") -> ProfileInput:
    """:func:`profile_input` of a profile JSON document (§5), validated once
    (:meth:`ProfileDocument.from_dict <bearing_lib.traffic.document.ProfileDocument.from_dict>`:
    every problem together, with its field path). The documented alternative shapes
    (``targets.target_rps`` / ``targets.target.rps`` / ``targets.rps``; ``ci95`` /
    ``target_ci95``; a series as columns or rows) are resolved here and nowhere else."""
    from bearing_lib.traffic.document import MinuteSeriesDoc, ProfileDocument, UnavailableDoc

    p = ProfileDocument.from_dict(doc, source=source)
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
        if isinstance(s, MinuteSeriesDoc):
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

        mix_spec = MixSpec.from_dict(p.mix_spec)
    tin = sl.input_tokens if sl is not None and sl.available else None
    tout = sl.output_tokens if sl is not None and sl.available else None
    return ProfileInput(
        source=source, target=target, clock=p.clock, span_s=p.span_s, per_minute=_stats_of(pm), per_minute_ci95=ci95,
        per_window=_stats_of(pw), shares=shares, shares_reason=shares_reason, series=series, series_labels=labels,
        series_note=note, bursts=bursts, seq_len=seq, seq_len_reason=seq_why, series_start_s=minute_starts,
        mean_input_tokens=tin.mean if tin is not None else None,
        mean_output_tokens=tout.mean if tout is not None else None, mix_spec=mix_spec,
    )


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


# --------------------------------------------------------------------------- the plan
@dataclass
class CapacityPlan:
    """The assembled capacity plan (see module docstring); ``to_dict()`` is the plan JSON."""

    tier: TierBands
    fos: FosResult
    limits: LimitsInput
    cbu: CbuResult | None = None
    cbu_reason: str = ""
    instances: InstancePlan | None = None
    instances_reason: str = ""
    safe_concurrency: SafeConcurrency | None = None
    planning_concurrency: dict[str, object] | None = None
    gpu_memory_needed: dict[str, object] | None = None
    elasticity: ReplayResult | None = None
    elasticity_reason: str = ""
    memory: MemoryPlan | None = None
    memory_reason: str = ""
    scorecards: Scorecards | None = None
    buffer_plan: dict[str, object] | None = None
    vllm_check: VllmLogCheck | None = None
    economics: PlanEconomics | None = None
    notes: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    # ----------------------------------------------------------------- build
    @classmethod
    def build(
        cls,
        limits: dict[str, Any] | Any,
        profile: dict[str, Any] | Any,
        *,
        tier: str | TierBands = "standard",
        run: str | None = None,
        target_rps: float | None = None,
        quantile: float | None = None,
        growth: float | None = None,
        model: str | ModelPreset | None = None,
        gpu_mem_gib: float | None = None,
        gpu_count: int = 1,
        concurrency: int | None = None,
        margin: float = DEFAULT_MARGIN,
        tested_instances: int | None = None,
        cold_start_s: float = DEFAULT_COLD_START_S,
        cool_down_s: float = DEFAULT_COOL_DOWN_S,
        latency_budget_s: float | None = None,
        burst_multiplier: float | None = None,
        min_buffer: int = 1,
        trace: Any = None,
        user_inputs: dict[str, Any] | None = None,
        vllm_log: str | None = None,
        tensor_parallel: int = 1,
        price_per_hour: float | None = None,
        budget_per_month: float | None = None,
        server_metrics: Any = None,
        limits_source: str = "limits JSON",
        profile_source: str = "profile JSON",
    ) -> CapacityPlan:
        """Assemble the plan.

        ``limits`` is a limits JSON dict or a ``LimitsResult`` (whose load curve then adds
        P50/P95 latencies and mean concurrency to the steps); ``profile`` a profile JSON
        dict or a ``TrafficProfile`` (whose rate series then feeds CBU and the replay).
        ``trace`` (a RequestTrace) supplies the per-minute series and sequence lengths
        when the profile does not.
        """
        tier_b = get_tier(tier) if isinstance(tier, str) else tier
        # the JSON edges: each document validated once, then typed from here on
        if isinstance(profile, dict):
            prof = profile_input_from_dict(profile, source=profile_source)
        elif isinstance(profile, ProfileInput):
            prof = profile
        else:
            prof = profile_input(profile, source=profile_source)
        if isinstance(limits, dict):
            limits = LimitsResult.from_dict(limits, source=limits_source)
        if not isinstance(limits, LimitsResult):
            raise ParameterError(f"limits: expected a LimitsResult (fit_limits) or a limits JSON document, "
                                 f"got {type(limits).__name__}")
        curve = limits.__dict__.get("_curve")
        lim = limits_input(limits, source=limits_source, run=run)
        if curve is not None:
            _enrich_steps(lim, curve, run)
        if tested_instances is not None:
            if tested_instances < 1:
                raise ParameterError(f"tested_instances must be >= 1 (got {tested_instances})")
            lim.tested_instances = tested_instances
            lim.tested_instances_basis = "given (--tested-instances, or the parameter tested_instances)"
        notes = [f"{m}: {why}" for m, why in lim.skipped.items()] + list(lim.notes)
        # where the series note goes among the notes is as before the typed hop: first for a TrafficProfile,
        # after the mix-share note for a profile JSON
        from_json = isinstance(profile, dict)
        if prof.series_note and not from_json:
            notes.append(prof.series_note)
        if not lim.limits:
            raise InsufficientDataError(f"{limits_source}: no mix has a usable limit ({'; '.join(notes) or 'empty'})")
        if target_rps is not None:
            g = growth if growth is not None else 1.0
            tgt = Target(target_rps * g, None, None, g, f"given: {target_rps:g} req/s × growth {g:g}")
        else:
            tgt = plan_target(prof, quantile=quantile, growth=growth)
        shares = dict(prof.shares)
        if not shares:
            why = prof.shares_reason
            if len(lim.limits) > 1:
                raise SchemaError("the profile has no mix_shares" + (f" ({why})" if why else "")
                                  + ", so the per-mix limits cannot be blended",
                                  path=profile_source, field="mix_shares")
            shares = {lim.limits[0].mix: 1.0}
            notes.append(f"the profile has no mix shares{f' ({why})' if why else ''}: the one limit "
                         f"({lim.limits[0].mix}) is taken to cover all production traffic")
        fos = compute_fos(lim.limits, shares, tgt, tier_b)
        plan = cls(tier_b, fos, lim, notes=notes, sources={"limits": limits_source, "profile": profile_source})

        # CBU ------------------------------------------------------------
        series = (prof.series, prof.series_labels) if prof.series is not None and prof.series_labels else None
        if series is not None and prof.series_note and from_json:
            plan.notes.append(prof.series_note)
        if series is None and trace is not None:
            series = _series_from_trace(trace)
        g = tgt.growth
        if fos.allowable_rps is None:
            plan.cbu_reason = fos.allowable_statement
        elif series is None:
            plan.cbu_reason = "no per-minute series (profile per_minute.series, or give the trace)"
        else:
            counts, labels = series
            plan.cbu = cbu_per_minute(counts, fos.allowable_rps, minute_labels=labels)
            if fos.blended.fos.bound != "none":
                b = fos.blended.fos.bound
                plan.notes.append(f"CBU uses {'an' if b == 'upper' else 'a'} {b} bound on the limit")

        # instances ------------------------------------------------------
        q_blend = fos.blended.q_blend_rps
        burst = None
        if burst_multiplier is not None:
            burst = BurstModel(burst_multiplier, source=f"given: {burst_multiplier:g}× the target")
        else:
            burst = plan_burst(prof, tgt.rps, g)
        if q_blend is None:
            plan.instances_reason = "the blended limit is not bounded"
        else:
            per_inst = q_blend / lim.tested_instances
            plan.instances = instance_count(tgt.rps, per_inst, tier_b.target_fos, burst=burst, min_buffer=min_buffer)
            if fos.blended.fos.bound == "lower":
                plan.notes.append("instance count from a lower bound on the limit: an upper bound on instances needed")
            elif fos.blended.fos.bound == "upper":
                plan.notes.append("instance count from an upper bound on the limit: a lower bound on instances needed")

        # safe concurrency (latency–concurrency curve of the heaviest mix) -
        main_mix = max(fos.per_mix, key=lambda m: m.share).mix if fos.per_mix else None
        sla_lat = next((c for c in lim.sla if c.kind == "percentile" and str(c.metric).endswith("_ms")
                        and c.op in ("<", "<=") and c.threshold is not None), None)
        lc_points = (curve_from_limits_steps(lim.steps.get(main_mix or "", []), metric=str(sla_lat.metric),
                                             stat=str(sla_lat.stat)) if sla_lat else [])
        if sla_lat and lc_points:
            try:
                plan.safe_concurrency = max_safe_concurrency(
                    lc_points, float(sla_lat.threshold), stat=str(sla_lat.stat).upper()
                )
            except InsufficientDataError as exc:
                plan.notes.append(f"safe concurrency: {exc}")

        # elasticity replay ----------------------------------------------
        if q_blend is None:
            plan.elasticity_reason = "the blended limit is not bounded"
        elif series is None:
            plan.elasticity_reason = "no per-minute series (profile per_minute.series, or give the trace)"
        else:
            counts = [c * g for c in series[0]]
            plan.elasticity = replay(counts, q_blend / lim.tested_instances, cold_start_s=cold_start_s,
                                     cool_down_s=cool_down_s, latency_budget_s=latency_budget_s)

        # elastic or fixed buffer: the replay decides --------------------
        if plan.instances is not None:
            plan.buffer_plan = _buffer_plan(plan.instances, plan.elasticity, plan.elasticity_reason)

        # memory ---------------------------------------------------------
        seq = prof.seq_len
        if seq is None and prof.seq_len_reason is not None:
            plan.memory_reason = f"the profile has no sequence-length distribution: {prof.seq_len_reason}"
        if seq is None and trace is not None:
            plan.memory_reason = ""
            try:
                seq = sequence_length_stats(trace.frame, source=str(trace.provenance.source))
            except InsufficientDataError as exc:
                plan.memory_reason = str(exc)
        at, at_why = None, ""
        if main_mix is not None:
            try:
                at = concurrency_at_limit(lim.steps, main_mix, _q_ult_of(limits, main_mix, run))
            except InsufficientDataError as exc:
                at_why = str(exc)
        per = f" / {lim.tested_instances} tested instances" if lim.tested_instances != 1 else ""
        conc = concurrency
        conc_basis = "given" if concurrency is not None else ""
        # Without a given concurrency: the mean concurrency at Q_ult (the load the limit is measured
        # at; rounded up, memory is sized for it), else the max safe concurrency of the
        # latency–concurrency curve (the last step meeting the latency clause; rounded down).
        if at is not None:
            per_inst = at.value / lim.tested_instances
            used = conc is None
            if used:
                conc = max(1, math.ceil(per_inst))
                conc_basis = (f"derived from the load test at Q_ult (Little's law): {at.statement}{per}, "
                              f"rounded up to {conc} sequences per instance")
            plan.planning_concurrency = {**at.to_dict(), "per_instance": per_inst, "used": used,
                                         "tested_instances": lim.tested_instances}
        if conc is None and plan.safe_concurrency and plan.safe_concurrency.value is not None:
            conc = int(math.floor(plan.safe_concurrency.value / lim.tested_instances))
            clause = f"{sla_lat.stat}({sla_lat.metric})" if sla_lat else "the latency clause"
            conc_basis = (f"derived from the load test (Little's law): max safe concurrency "
                          f"{plan.safe_concurrency.value:.2f}, the highest step mean concurrency whose {clause} meets "
                          f"the SLA (the last passing step of the latency–concurrency curve){per}, rounded down "
                          f"to {conc} per instance" + (f"; no concurrency at Q_ult: {at_why}" if at_why else ""))
        elif conc is None and at_why:
            conc_basis = f"concurrency unknown: {at_why}; only what fits is computed (give --concurrency)"
        if model is None:
            plan.memory_reason = plan.memory_reason or "no model preset given (--model)"
        elif seq is None:
            plan.memory_reason = plan.memory_reason or "no sequence-length distribution (profile seq_len, or the trace)"
        else:
            preset = get_preset(model) if isinstance(model, str) else model
            plan.memory = memory_plan(preset, conc, seq, gpu_mem_gib=gpu_mem_gib, gpu_count=gpu_count, margin=margin)
            plan.memory_reason = conc_basis or "concurrency unknown: only what fits is computed (give --concurrency)"
            if gpu_mem_gib is None and conc is not None:
                need = float(plan.memory.row("p99")["total_gib"])  # type: ignore[arg-type]
                plan.gpu_memory_needed = {
                    "gib_per_instance": need, "basis": "p99", "concurrency": conc,
                    "statement": f"no GPU memory given: the plan needs ≥ {need:,.1f} GiB per instance at the P99 "
                                 f"sequence length and {conc} sequences in flight"}
        if vllm_log is not None:
            if model is None:
                raise ParameterError("a vLLM log check needs the model preset (--model)")
            preset = get_preset(model) if isinstance(model, str) else model
            plan.vllm_check = check_vllm_log(preset, vllm_log, tensor_parallel=tensor_parallel)

        # scorecards -----------------------------------------------------
        headroom, why = None, plan.memory_reason if plan.memory is None else ""
        if plan.memory is not None:
            if gpu_mem_gib is None:
                why = "no GPU memory size given (--gpu-mem-gib)"
                if conc is not None:
                    why += (f"; the plan needs ≥ {plan.memory.row('p99')['total_gib']:,.1f} GiB per instance at the "
                            "P99 sequence length")
            elif conc is None:
                why = "concurrency unknown (give --concurrency or a concurrency-swept limits file)"
            else:
                headroom = plan.memory.row("p99")["headroom"]  # type: ignore[assignment]
        peak_known = prof.peak_known or target_rps is not None
        mean_known = prof.mean_known
        main_steps = lim.steps.get(main_mix or "", [])
        plan.scorecards = Scorecards(
            scorecard(headroom=headroom, headroom_missing=why, peak_known=peak_known, mean_known=mean_known,
                      fos_value=fos.blended.fos.value, fos_bound=fos.blended.fos.bound, user=user_inputs),
            checklist(steps=main_steps, sla=lim.sla, target_rps=tgt.rps, user=(user_inputs or {}).get("health")),
        )
        plan.economics = attach_economics(plan, prof, trace=trace, price_per_hour=price_per_hour,
                                          budget_per_month=budget_per_month, server_metrics=server_metrics)
        return plan

    @classmethod
    def from_files(cls, limits_path: str | Path, profile_path: str | Path, **kw: Any) -> CapacityPlan:
        return cls.build(read_json(limits_path, "limits"), read_json(profile_path, "profile"),
                         limits_source=str(limits_path), profile_source=str(profile_path), **kw)

    # ----------------------------------------------------------------- output
    def to_dict(self) -> dict[str, object]:
        from bearing_lib.common.version import __version__
        from bearing_lib.plan.document import SCHEMA

        f = self.fos.to_dict()
        return {
            "schema": SCHEMA,
            "bearing_version": __version__,
            "sources": self.sources,
            "tier": self.tier.to_dict(),
            "target": self.fos.target.to_dict(),
            "fos": {"per_mix": f["per_mix"], "blended": f["blended"], "ci_method": f["ci_method"]},
            "verdict": f["verdict"],
            "verdict_reason": f["verdict_reason"],
            "utilisation": f["utilisation"],
            "breakpoint_rule": "production should sit at 60–70% of the breakpoint (utilisation = Q_target / Q_ult)",
            "allowable_rps": f["allowable_rps"],
            "allowable_statement": f["allowable_statement"],
            "cbu": self.cbu.to_dict() if self.cbu else unavailable(self.cbu_reason),
            "instances": (
                {**self.instances.to_dict(), "tested_instances": self.limits.tested_instances,
                 "tested_instances_basis": self.limits.tested_instances_basis, "buffer_plan": self.buffer_plan,
                 "safe_concurrency": self.safe_concurrency.to_dict() if self.safe_concurrency else None}
                if self.instances else unavailable(self.instances_reason)
            ),
            "elasticity": self.elasticity.to_dict() if self.elasticity else unavailable(self.elasticity_reason),
            "memory": ({**self.memory.to_dict(), "concurrency_basis": self.memory_reason,
                        "planning_concurrency": self.planning_concurrency,
                        "gpu_memory_needed": self.gpu_memory_needed,
                        "vllm_log_check": self.vllm_check.to_dict() if self.vllm_check else None}
                       if self.memory else unavailable(self.memory_reason)),
            "scorecards": self.scorecards.to_dict() if self.scorecards else unavailable("not computed"),
            "economics": self.economics.to_dict() if self.economics else unavailable("not computed"),
            "notes": self.notes,
        }

    def document(self) -> PlanDocument:
        """The plan as its typed JSON document (:class:`~bearing_lib.plan.document.PlanDocument`, ``bearing.plan/1``):
        what readers downstream of the plan (the report, the exports) read."""
        from bearing_lib.plan.document import PlanDocument

        return PlanDocument.from_dict(self.to_dict(), source="capacity plan")

    def summary_lines(self) -> list[str]:
        """A short text summary (the CLI prints it)."""
        b = self.fos.blended
        t = self.fos.target
        lines = [
            f"tier:        {self.tier.name} (FOS {self.tier.describe()}, design FOS {self.tier.target_fos:g})",
            f"target:      {t.rps:,.3f} req/s ({t.rps * 60:,.1f} req/min) — {t.basis}",
            f"blended:     Q_ult {b.q_blend_rps if b.q_blend_rps is None else format(b.q_blend_rps, ',.3f')} req/s; "
            f"{b.fos.statement}",
            f"verdict:     {self.fos.verdict.color.upper()}: {self.fos.verdict.reason}",
            f"allowable:   {self.fos.allowable_statement}",
        ]
        for m in self.fos.per_mix:
            lines.append(f"  mix {m.mix}: share {m.share:.1%}, Q_ult {m.q_ult_rps:,.3f} req/s, {m.fos.statement}")
        if self.cbu:
            c = self.cbu.to_dict()
            lines.append(f"CBU:         max {c['max']:.2f}; {c['n_above']} of {c['n_minutes']} minutes above "
                         f"{c['threshold']:g}")
        else:
            lines.append(f"CBU:         not available: {self.cbu_reason}")
        if self.instances:
            i = self.instances
            lines.append(f"instances:   {i.total} = {i.base} + buffer {i.buffer} ({i.buffer_basis})")
            if self.buffer_plan:
                lines.append(f"buffer:      {self.buffer_plan['mode']}, {self.buffer_plan['instances']} instance(s): "
                             f"{self.buffer_plan['reason']}")
        else:
            lines.append(f"instances:   not available: {self.instances_reason}")
        if self.elasticity:
            e = self.elasticity
            lines.append(f"elasticity:  {e.recommendation}: {e.reason}")
        else:
            lines.append(f"elasticity:  not available: {self.elasticity_reason}")
        if self.memory:
            r = self.memory.row("p99")
            m = self.memory
            fits = (f"max concurrency that fits {r['max_concurrency_that_fits']} (seed MHA formula: "
                    f"{r['seed_mha_max_concurrency_that_fits']})" if r["max_concurrency_that_fits"] is not None
                    else "no GPU size given")
            if m.concurrency is None:
                lines.append(f"memory:      {m.model.name} at P99 seq {r['seq_len']:,.0f} tok: {fits}; "
                             f"need not computed: {self.memory_reason}")
            else:
                lines.append(f"memory:      {m.model.name} at P99 seq {r['seq_len']:,.0f} tok, concurrency "
                             f"{m.concurrency}: {r['total_gib']:,.1f} GiB (seed MHA formula: "
                             f"{r['seed_mha_total_gib']:,.1f} GiB); {fits}")
        else:
            lines.append(f"memory:      not available: {self.memory_reason}")
        if self.vllm_check:
            lines.append(f"vLLM log:    {self.vllm_check.statement}")
        for n in self.notes:
            lines.append(f"note:        {n}")
        return lines

    def _repr_html_(self) -> str:
        """Notebook view: verdict, key numbers, per-mix FOS, then each section (or why it is missing)."""
        colors = {"green": "#1a7f37", "yellow": "#9a6700", "red": "#cf222e"}
        v = self.fos.verdict
        e = html.escape
        parts = [
            f"<p><b style='color:{colors[v.color]}'>{v.color.upper()}</b> · tier {e(self.tier.name)} "
            f"(FOS {e(self.tier.describe())}) · {e(v.reason)}</p>",
            self.fos._repr_html_(),
        ]
        for title, obj, why in (("CBU", self.cbu, self.cbu_reason), ("Elasticity", self.elasticity,
                                self.elasticity_reason), ("Memory", self.memory, self.memory_reason),
                                ("Scorecards", self.scorecards, "not computed")):
            if obj is None:
                parts.append(f"<p><b>{title}</b>: <i>not available: {e(why)}</i></p>")
            elif hasattr(obj, "_repr_html_"):
                parts.append(obj._repr_html_())
            else:
                c = obj.to_dict()
                parts.append(f"<p><b>{title}</b>: max {c['max']:.2f}; {c['n_above']} of {c['n_minutes']} minutes "
                             f"above {c['threshold']:g}</p>")
        if self.instances:
            parts.append(f"<p><b>Instances</b> {self.instances.total} = {self.instances.base} + buffer "
                         f"{self.instances.buffer}: {e(self.instances.buffer_basis)}</p>")
        if self.notes:
            parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in self.notes) + "</ul>")
        return "".join(parts)


def _buffer_plan(inst: InstancePlan, rep: ReplayResult | None, why_no_replay: str) -> dict[str, object]:
    """Hold the burst buffer elastic or fixed: fixed when the replay saw minutes over capacity
    during cold starts (and then at least the replay's buffer), elastic otherwise."""
    freq = ""
    if inst.burst is not None and inst.burst.per_month:
        freq = f"; bursts about {inst.burst.per_month:.2g} a month"
    if rep is None:
        return {"mode": "fixed", "instances": inst.buffer,
                "reason": f"no elasticity replay ({why_no_replay}): hold the buffer as fixed capacity{freq}"}
    if rep.recommendation == "elastic":
        return {"mode": "elastic", "instances": inst.buffer,
                "reason": f"the replay of the production series kept up with a {rep.cold_start_s:g} s cold start, "
                          f"so the buffer can be elastic{freq}"}
    n = max(inst.buffer, rep.buffer)
    return {"mode": "fixed", "instances": n,
            "reason": f"{rep.reason}; fixed buffer = max(burst buffer {inst.buffer}, replay buffer {rep.buffer}){freq}"}


def _enrich_steps(lim: LimitsInput, curve: Any, run: str | None) -> None:
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
            for k, v in (by_step.get(st.get("step")) or {}).items():
                if v is not None:
                    st.setdefault(k, v)


@dataclass(frozen=True)
class ConcurrencyAtLimit:
    """Mean number of requests in the system at the limit, by Little's law (L = λ × W).

    ``value`` is summed over the run's mixes at each step (Little's law is additive), then
    read at ``at_load`` on the offered-load axis: interpolated linearly between the two
    steps around Q_ult, or taken at the nearest step when Q_ult lies outside the tested
    loads (``method`` says which). ``derived`` is True when a step had no
    ``concurrency_mean`` and it was computed here as ``throughput_rps × latency_ms_mean / 1000``.
    """

    value: float
    at_load: float
    unit: str
    method: str
    steps_used: list[float]
    derived: bool
    statement: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _step_concurrency(st: dict[str, Any]) -> tuple[float | None, bool]:
    """A step's mean concurrency: ``concurrency_mean``, else throughput × mean latency (derived)."""
    c = _num(st.get("concurrency_mean"))
    if c is not None and math.isfinite(c):
        return c, False
    thr, lat = _num(st.get("throughput_rps")), _num(st.get("latency_ms_mean"))
    if thr is not None and lat is not None and math.isfinite(thr * lat):
        return thr * lat / 1000.0, True
    return None, False


def concurrency_at_limit(steps: dict[str, list[dict[str, Any]]], mix: str,
                         q_ult: Estimate | None) -> ConcurrencyAtLimit:
    """Mean concurrency (requests in the system) at the mix's Q_ult, from the load-test steps.

    ``steps`` are the run's steps per mix (limits JSON ``mixes[].steps``, which carry
    ``concurrency_mean`` when the limits came with their load curve, or
    ``latency_ms_mean`` to derive it); ``q_ult`` the mix's limit on the steps' offered-load
    axis (``QUlt.estimate``). Recovery steps (run after an overload)
    are left out. Raises :class:`InsufficientDataError` saying what is missing.
    """
    q = q_ult.value if q_ult is not None else None
    unit = (q_ult.unit if q_ult is not None else "") or "rps"
    if q is None or not math.isfinite(q):
        raise InsufficientDataError(f"mix {mix} has no Q_ult value to read the concurrency at")
    xs_main: dict[Any, float] = {}
    offered: dict[Any, Any] = {}
    for st in steps.get(mix, []):
        x = _num(st.get("load_axis") if st.get("load_axis") is not None else st.get("offered_load"))
        if x is not None and not st.get("recovery_step"):
            xs_main[st.get("step")] = x
            offered[st.get("step")] = st.get("offered_load")
    total: dict[Any, float] = {}
    derived = False
    mixes_summed: set[str] = set()
    for name, rows in steps.items():
        for st in rows:
            # the same step of the same run: same step number and offered load (other mixes' requests
            # share the servers, so their concurrency adds, by Little's law)
            if st.get("step") not in xs_main or st.get("offered_load") != offered[st.get("step")]:
                continue
            c, d = _step_concurrency(st)
            if c is not None:
                total[st.get("step")] = total.get(st.get("step"), 0.0) + c
                derived = derived or d
                mixes_summed.add(name)
    pts = sorted((xs_main[k], v) for k, v in total.items())
    if not pts:
        raise InsufficientDataError("the limits' steps carry no mean concurrency (concurrency_mean) or mean "
                                    "latency (latency_ms_mean) to apply Little's law to")
    xs = [p[0] for p in pts]
    how = "derived here as throughput × mean latency" if derived else "per step from the load curve"
    if len(mixes_summed) > 1:
        how += f"; summed over the mixes {', '.join(sorted(mixes_summed))} at each step"
    if xs[0] <= q <= xs[-1]:
        import numpy as np

        value = float(np.interp(q, xs, [p[1] for p in pts]))
        lo = max(x for x in xs if x <= q)
        hi = min(x for x in xs if x >= q)
        method = "interpolated at Q_ult" if lo != hi else "at the step at Q_ult"
        used = sorted({lo, hi})
        where = (f"between the steps at {lo:g} and {hi:g} {unit}" if lo != hi else f"at the step at {lo:g} {unit}")
        statement = f"mean concurrency {value:.2f} at Q_ult {q:.3g} {unit}, interpolated {where} ({how})"
    else:
        x, value = (pts[-1] if q > xs[-1] else pts[0])
        side = "above the highest" if q > xs[-1] else "below the lowest"
        method = f"nearest step (Q_ult {side} tested load)"
        used = [x]
        statement = (f"mean concurrency {value:.2f} at the step at {x:g} {unit} (Q_ult {q:.3g} {unit} lies {side} "
                     f"tested load; {how})")
    return ConcurrencyAtLimit(value, q, unit, method, used, derived, statement)


def _q_ult_of(limits: LimitsResult, mix: str, run: str | None) -> Estimate | None:
    for m in limits.mixes:
        if m.mix.name == mix and (run is None or m.run_id == run):
            return m.q_ult.estimate
    return None


def _series_from_profile_object(profile: Any) -> tuple[list[float], list[str], str | None] | None:
    """Requests per minute from a TrafficProfile's rate series.

    Bins longer than a minute (e.g. ServeGen's 600 s windows) are spread evenly over
    their minutes, which smooths any peak inside a window (the plan notes it).
    """
    s = getattr(profile, "series", None)
    if s is None or len(s) == 0:
        return None
    return spread_windows(s.start_s.tolist(), s.requests.tolist(), s.bin_s, s.aligned)


def _series_from_trace(trace: Any) -> tuple[list[float], list[str]] | None:
    """Per-minute counts of a trace via the profile's binning (UTC minutes, empty = 0, partial ends dropped)."""
    from bearing_lib.traffic.binning import per_minute_counts

    f = per_minute_counts(trace)
    return [float(x) for x in f["requests"].to_list()], [_label(x) for x in f["minute_start_s"].to_list()]


__all__ = [
    "CapacityPlan",
    "ConcurrencyAtLimit",
    "concurrency_at_limit",
    "LimitsInput",
    "BurstFacts",
    "ProfileInput",
    "ProfileTarget",
    "burst_from_profile",
    "limits_from_dict",
    "limits_input",
    "plan_burst",
    "plan_target",
    "profile_input",
    "profile_input_from_dict",
    "read_json",
    "seq_len_from_profile",
    "series_from_profile",
    "shares_from_profile",
    "spread_windows",
    "target_from_profile",
    "window_series_from_profile",
]
