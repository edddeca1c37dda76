"""Curated, human views of the report's data sections (what the HTML tables show).

The report model keeps each section's data as the contract JSON holds it (that is the
``summary.json`` twin and what analysts diff). A reviewer needs something else: one row per
concept with units and plain labels ("Peak minute: 502 req/min = 8.37 req/s"), the caveats
as short notes, the "not available because ..." reasons kept verbatim, and long lists
folded. This module turns a section's data into such a view; the template renders it and
keeps the complete raw JSON in a collapsed block under each section.

A view is a list of :class:`Group` (a titled key-figure table, notes, "not available"
lines and optional row tables). Nothing here computes a new figure: values are formatted,
rates are shown per minute *and* per second (×/÷ 60), nothing else. Every
``{"available": false, "reason": ...}`` found anywhere in a section, every ``notes`` list
and every ``*_note`` string that the curated rows did not show is listed under "Other
caveats", so no caveat is lost by the curation (:func:`leftover_caveats`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any

from bearing_lib.common.files import jsonable
from bearing_lib.common.schema import NotAvailable
from bearing_lib.ops.triggers import ScalingTriggers
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.domains import FailureDomains
from bearing_lib.plan.elasticity import ReplayResult
from bearing_lib.plan.fos import CbuResult, MixFos, Target
from bearing_lib.plan.memory import MemoryPlan
from bearing_lib.plan.scorecards import Scorecards
from bearing_lib.plan.tenants import Tenants
from bearing_lib.report.model import Flag, ReportModel, as_float
from bearing_lib.report.plan_section import TOP_TENANTS, ProductionSource
from bearing_lib.traffic.document import BurstEpisode, SlotPeak, SlotRow, TrafficProfile


@dataclass
class Row:
    """One key figure: a plain label, its value with units, and a short note."""

    label: str
    value: str
    note: str = ""
    status: str | None = None  # for a badge (green / yellow / red / not assessed ...)


@dataclass
class Table:
    """Rows of a list (episodes, minutes above a threshold, per-basis memory) with headers."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    collapsed: bool = False
    status_column: int | None = None  # index of a column rendered as a badge
    id: str | None = None  # the HTML table's id, for readers that look a table up


@dataclass
class Group:
    """A titled block of a section: key figures, notes, unavailable parts and tables."""

    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.rows or self.notes or self.unavailable or self.tables)


# --------------------------------------------------------------------------- formatting


def num(v: Any, digits: int = 2) -> str:
    """A number for people: thousands separators, ``digits`` decimals below 100; ``—`` for none."""
    if v is None or isinstance(v, bool):
        return "—" if v is None else ("yes" if v else "no")
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "∞" if f > 0 else "not a number"
    if isinstance(v, int) or (f.is_integer() and abs(f) >= 100):
        return f"{f:,.0f}"
    if abs(f) >= 100:
        return f"{f:,.0f}"
    if f != 0 and abs(f) < 0.01:
        return f"{f:.2g}"
    return f"{f:,.{digits}f}"


def pct(v: Any, digits: int = 1) -> str:
    f = _f(v)
    return "—" if f is None else f"{f * 100:.{digits}f}%"


def _f(v: Any) -> float | None:
    return as_float(v, finite=True)


def _ci(ci: Any, digits: int = 2) -> str:
    if isinstance(ci, list | tuple) and len(ci) == 2 and _f(ci[0]) is not None and _f(ci[1]) is not None:
        return f"95% CI {num(ci[0], digits)}–{num(ci[1], digits)}"
    return ""


def per_min_and_s(per_minute: Any) -> str:
    """``502`` requests per minute → ``"502 req/min = 8.37 req/s"``."""
    f = _f(per_minute)
    return "—" if f is None else f"{num(f)} req/min = {num(f / 60)} req/s"


def rps_and_min(rps: Any) -> str:
    """``8.24`` req/s → ``"8.24 req/s (495 req/min)"``."""
    f = _f(rps)
    return "—" if f is None else f"{num(f)} req/s ({num(f * 60)} req/min)"


def quantile_name(q: Any) -> str:
    f = _f(q)
    if f is not None and 0 < f < 1:
        return f"P{f * 100:.10g}"
    return str(q or "").upper()


def duration(seconds: Any) -> str:
    f = _f(seconds)
    if f is None:
        return "—"
    if f < 120:
        return f"{f:g} s" if f == round(f, 1) else f"{num(f)} s"
    if f < 2 * 3600:
        return f"{num(f / 60, 1)} min"
    if f < 2 * 86400:
        return f"{num(f / 3600, 1)} h"
    return f"{num(f / 86400, 1)} days"


def utc(epoch_s: Any) -> str:
    f = _f(epoch_s)
    if f is None:
        return "—"
    return _dt.datetime.fromtimestamp(f, _dt.UTC).strftime("%Y-%m-%d %H:%M")


def elapsed(seconds: Any) -> str:
    """A time on a relative clock as elapsed time from its origin: ``+0 s``, ``+45 s``, ``+12 min``,
    ``+1 h 05 min``, ``+2 d 03 h`` (never a calendar date: the clock has none)."""
    f = _f(seconds)
    if f is None:
        return "—"
    sign = "-" if f < 0 else "+"
    t = int(round(abs(f)))
    d, rem = divmod(t, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{sign}{d} d {h:02d} h"
    if h:
        return f"{sign}{h} h {m:02d} min"
    if m:
        return f"{sign}{m} min" + (f" {sec:02d} s" if sec else "")
    return f"{sign}{sec} s"


def is_relative(profile: Any) -> bool:
    """Whether a profile's clock is relative (seconds from the trace start, no dates): a
    :class:`TrafficProfile`, or the profile JSON (its ``clock``)."""
    if isinstance(profile, TrafficProfile):
        return profile.relative
    return isinstance(profile, dict) and str(profile.get("clock") or "").startswith("relative")


def moment(t: Any, relative: bool) -> str:
    """A time as the data has it: ``2023-11-16 10:00`` (UTC) or ``+1 h 05 min`` (relative clock)."""
    return elapsed(t) if relative else utc(t)


def window_line(profile: TrafficProfile | dict[str, Any] | None, run_time_utc: str | None,
                series: list[dict[str, Any]] | None = None) -> str:
    """The date of the report and the traffic window it judged, for the line under the verdict.

    A wall-clock profile gives its first and last request in UTC (``start_utc``/``end_utc``); a
    relative-clock one has no dates, so the window is the span of its counted minutes (or
    rate windows, ``series``: the report's ``per_minute_series``) on the trace's own clock, as
    elapsed time. ``profile`` is the typed document (a profile JSON is validated into one).
    """
    bits = []
    if run_time_utc:
        bits.append(f"Report of {str(run_time_utc)[:10]} ({str(run_time_utc)[11:16]} UTC)")
    if isinstance(profile, dict):
        series = series if series is not None else profile.get("per_minute_series")
        profile = TrafficProfile.from_dict(profile, source="production profile")
    if profile is None:
        return " · ".join(bits)
    span = duration(profile.span_s) if _f(profile.span_s) is not None else ""
    rows = [r for r in series or [] if _f(r.get("minute_start_s")) is not None]
    if profile.relative and rows:
        t0 = _f(rows[0]["minute_start_s"])
        last = rows[-1]
        t1 = (_f(last["minute_start_s"]) or 0.0) + (_f(last.get("bin_s")) or 60.0)
        bits.append(f"traffic window {elapsed(t0)} to {elapsed(t1)} on the trace's relative clock"
                    + (f" (trace span {span})" if span else "") + "; no calendar dates")
    elif profile.relative and span:
        bits.append(f"traffic window: {span} on the trace's relative clock; no calendar dates")
    elif profile.start_utc and profile.end_utc:
        a, b = (x.replace("T", " ")[:16] for x in (profile.start_utc, profile.end_utc))
        bits.append(f"traffic window {a} to {b} UTC" + (f" ({span})" if span else ""))
    return " · ".join(bits)


def gib(v: Any) -> str:
    f = _f(v)
    return "—" if f is None else f"{f:,.1f} GiB"


def _na(d: Any) -> str | None:
    """The reason of an ``{"available": false, "reason": ...}`` block, else None."""
    if isinstance(d, dict) and d.get("available") is False:
        return str(d.get("reason") or "no reason given")
    return None


def _notes(v: Any) -> list[str]:
    return [str(x) for x in v if x not in (None, "")] if isinstance(v, list | tuple) else []


# --------------------------------------------------------------------------- production


def _off(x: Any) -> str | None:
    """The reason of a typed profile section that says it is not available, else None."""
    if x is not None and getattr(x, "available", True) is False:
        return str(getattr(x, "reason", None) or "no reason given")
    return None


def target_group(p: TrafficProfile) -> Group:
    """Target load: the target, the observed peak, near- and mid-term forecasts."""
    t = p.targets
    g = Group("Target load")
    tg = t.target if t is not None else None
    if _off(tg):
        g.unavailable.append(f"target load not available: {_off(tg)}")
    elif tg is not None:
        q = quantile_name(tg.quantile)
        bin_s = tg.bin_s
        per = "per-minute " if bin_s == 60 else (f"{num(bin_s, 0)} s " if bin_s else "")
        bits = [f"{q} of the {per}rate × growth {num(tg.growth, 2)}"]
        if _ci(tg.ci95):
            bits.append(_ci(tg.ci95))
        g.rows.append(Row("Target load", rps_and_min(tg.rps), "; ".join(bits)))
        if tg.ci_method:
            bins = f" ({num(tg.n_bins)} bins)" if tg.n_bins is not None else ""
            g.notes.append(f"95% CI of the target: {tg.ci_method}{bins}")
        if tg.statement:
            g.notes.append(tg.statement)
    pk = t.peak if t is not None else None
    if pk is not None and _f(pk.rps) is not None:
        g.rows.append(Row("Busiest bin", rps_and_min(pk.rps), f"the largest {num(pk.bin_s, 0)} s bin (not the "
                          "current peak, which is the target's quantile)" if pk.bin_s else ""))
    for x, label in ((t.near_term if t else None, "Near-term planning load"),
                     (t.mid_term if t else None, "Mid-term forecast")):
        if _off(x):
            g.unavailable.append(f"{label.lower()} not available: {_off(x)}")
        elif x is not None and _f(x.rps) is not None:
            note = " × ".join(s for s in (num(x.factor) if x.factor is not None else "", x.basis or "") if s)
            g.rows.append(Row(label, rps_and_min(x.rps), note or (x.statement or "")))
    if t is not None:
        g.notes += _notes(t.notes)
    return g


def per_minute_group(p: TrafficProfile) -> Group:
    """Per-minute rates and tokens per minute."""
    rel = p.relative
    pm = p.per_minute
    g = Group("Per-minute rate (complete minutes from the trace start)" if rel
              else "Per-minute rate (complete UTC minutes)")
    if _off(pm):
        g.unavailable.append(f"per-minute rates not available: {_off(pm)}")
    elif pm is not None:
        g.rows.append(Row("Peak minute", per_min_and_s(pm.max),
                          f"{num(pm.peak_to_mean)} × the mean" if pm.peak_to_mean is not None else ""))
        for v, label in ((pm.p99, "P99 minute"), (pm.p95, "P95 minute"), (pm.p50, "Median minute"),
                         (pm.mean, "Mean")):
            if v is not None:
                g.rows.append(Row(label, per_min_and_s(v)))
        if pm.n_minutes is not None:
            g.rows.append(Row("Minutes counted", num(pm.n_minutes),
                              f"{num(pm.n_empty)} with no request (counted as zero)" if pm.n_empty is not None else ""))
        tok = pm.tokens
        for x, label in ((tok.input_tokens if tok else None, "Input tokens per minute"),
                         (tok.output_tokens if tok else None, "Output tokens per minute")):
            if _off(x):
                g.unavailable.append(f"{label.lower()} not available: {_off(x)}")
            elif x is not None:
                g.rows.append(Row(label, f"peak {num(x.max)} · P99 {num(x.p99)} · mean {num(x.mean)}", x.unit or ""))
    return g


def per_second_group(p: TrafficProfile) -> Group:
    """Per-second rates (bursts inside a minute)."""
    ps = p.per_second
    g = Group("Per-second rate (bursts inside a minute)")
    if _off(ps):
        g.unavailable.append(f"per-second rates not available: {_off(ps)}")
    elif ps is not None:
        g.rows.append(Row("Peak second", f"{num(ps.max)} req/s",
                          f"{num(ps.peak_to_mean)} × the mean" if ps.peak_to_mean is not None else ""))
        for v, label in ((ps.p99, "P99 second"), (ps.p95, "P95 second"), (ps.p50, "Median second"),
                         (ps.mean, "Mean")):
            if v is not None:
                g.rows.append(Row(label, f"{num(v)} req/s"))
        if ps.n_bins is not None:
            g.rows.append(Row("Seconds counted", num(ps.n_bins),
                              f"{num(ps.n_empty)} with no request (counted as zero)" if ps.n_empty is not None else ""))
    return g


def per_window_group(p: TrafficProfile) -> Group | None:
    """Per-window rates (sources with coarse windows only); None without them."""
    pw = p.per_window
    if pw is None:
        return None
    g = Group("Per-window rate")
    if _off(pw):
        g.unavailable.append(f"per-window rates not available: {_off(pw)}")
    else:
        for v, label in ((pw.max, "Peak window"), (pw.p99, "P99 window"), (pw.p95, "P95 window"),
                         (pw.mean, "Mean")):
            if v is not None:
                g.rows.append(Row(label, f"{num(v)} {pw.unit or ''}".strip()))
        if pw.bin_s is not None:
            g.rows.append(Row("Window length", duration(pw.bin_s)))
    return g


def seasonality_group(p: TrafficProfile) -> Group:
    """Daily / weekly profile and the seasonal decomposition."""
    rel = p.relative
    g = Group("Daily / weekly profile and seasonality")
    sl = p.slots
    if rel and sl is not None:
        g.unavailable.append("hour-of-day and weekday profiles not shown: the trace has a relative clock (seconds "
                             "from its start), so it has no time of day or weekday")
    for x, label in ((sl.hour_of_day if sl else None, "Hour-of-day profile"),
                     (sl.hour_weekday if sl else None, "Weekday × hour profile")):
        if rel:
            continue
        if _off(x):
            g.unavailable.append(f"{label.lower()} not available: {_off(x)}")
        elif x is not None:
            pk_, tr_ = x.peak, x.trough
            rows = [r for r in x.rows if _f(r.p95_rps) is not None]
            if pk_ is None and rows:  # older documents: the extreme slots from the rows
                hi, lo = max(rows, key=lambda r: r.p95_rps), min(rows, key=lambda r: r.p95_rps)  # type: ignore
                pk_, tr_ = SlotPeak(_slot(hi), hi.p95_rps), SlotPeak(_slot(lo), lo.p95_rps)
            if pk_ is not None:
                ratio = f"peak/trough {num(x.peak_to_trough)}; " if x.peak_to_trough is not None else ""
                g.rows.append(Row(label, f"peak {pk_.slot} at {num(pk_.p95_rps)} req/s; trough "
                                         f"{tr_.slot if tr_ else None} at {num(tr_.p95_rps if tr_ else None)} req/s",
                                  f"{ratio}{x.statistic or 'P95 rate per slot'}"
                                  + ("" if x.repeated else "; one period only (not a repeated pattern)")))
    dec = p.decomposition
    if _off(dec):
        g.unavailable.append(f"seasonal decomposition not available: {_off(dec)}")
    elif dec is not None:
        hour = "hour (from the trace start)" if rel else "hour (UTC)"
        for c in dec.components:
            g.rows.append(Row(f"{str(c.name or '').capitalize()} cycle ({num(c.period_h, 0)} h)",
                              f"amplitude {num(c.amplitude_rps)} req/s; strength {num(c.strength)}",
                              f"peak at {hour} {_phase(c.peak_phase_h)}, trough at {_phase(c.trough_phase_h)}; "
                              f"cycle correlation {num(c.cycle_correlation)}"))
        tr = dec.trend
        if tr is not None:
            g.rows.append(Row("Trend", f"{num(tr.start_rps)} → {num(tr.end_rps)} req/s",
                              f"range {num(tr.min_rps)}–{num(tr.max_rps)}; residual std "
                              f"{num(dec.resid_std_rps)} req/s; {dec.method or ''}"))
        g.notes += _notes(dec.notes)
    return g


def bursts_group(p: TrafficProfile) -> Group:
    """Burst episodes."""
    rel = p.relative
    b = p.bursts
    g = Group("Bursts")
    if _off(b):
        g.unavailable.append(f"burst detection not available: {_off(b)}")
    elif b is not None:
        g.rows.append(Row("Burst episodes", num(b.count), b.rule or b.threshold or ""))
        if b.count and _f(b.max_duration_s) is not None:
            g.rows.append(Row("Longest burst", duration(b.max_duration_s),
                              f"total {duration(b.total_duration_s)}" if _f(b.total_duration_s) is not None else ""))
        if b.count and _f(b.max_peak_multiplier) is not None:
            g.rows.append(Row("Largest burst", f"{num(b.max_peak_multiplier)} × baseline"))
        if b.per_month is not None:
            g.rows.append(Row("Bursts per month", num(b.per_month), b.per_month_note or ""))
        if b.baseline:
            g.notes.append(f"Baseline: {b.baseline}")
        if b.n_unjudged_bins:
            g.notes.append(f"{num(b.n_unjudged_bins)} bins could not be judged (no baseline for their slot)")
        g.notes += _notes(b.notes)
        if b.episodes:
            cols = [f.name for f in dataclasses.fields(BurstEpisode)
                    if any(getattr(e, f.name) is not None for e in b.episodes)]
            g.tables.append(Table(f"{len(b.episodes)} burst episode(s)", [c.replace("_", " ") for c in cols],
                                  [[_cell(getattr(e, c), c, rel) for c in cols] for e in b.episodes],
                                  collapsed=len(b.episodes) > 12))
    return g


def mix_group(p: TrafficProfile) -> Group:
    """Burstiness (dispersion) and the request mix."""
    rel = p.relative
    dsp = p.dispersion
    g = Group("Burstiness and request mix")
    if _off(dsp):
        g.unavailable.append(f"dispersion not available: {_off(dsp)}")
    elif dsp is not None:
        if dsp.index_of_dispersion is not None:
            g.rows.append(Row("Index of dispersion", num(dsp.index_of_dispersion), dsp.index_of_dispersion_note or ""))
        if dsp.interarrival_cv is not None:
            g.rows.append(Row("Inter-arrival CV", num(dsp.interarrival_cv), dsp.interarrival_cv_note or ""))
    ms = p.mix_shares
    if isinstance(ms, NotAvailable):
        g.unavailable.append(f"mix shares not available: {ms.reason}")
    elif ms:
        g.tables.append(Table("Mix shares of production requests", ["mix", "share", "requests"],
                              [[str(m.mix), pct(m.share), num(m.n_requests)] for m in ms]))
    mh = p.mix_shares_per_hour
    if _off(mh):
        g.unavailable.append(f"mix shares per hour not available: {_off(mh)}")
    elif mh is not None and mh.rows:
        g.tables.append(Table(f"Mix shares per hour ({mh.basis or 'UTC hours'})",
                              ["hour from the trace start" if rel else "hour (UTC)", "mix", "share", "requests"],
                              [[moment(r.hour_start_s, rel), str(r.mix), pct(r.share), num(r.n_requests)]
                               for r in mh.rows], collapsed=True))
        g.notes += _notes(mh.notes)
    return g


def seq_len_group(p: TrafficProfile) -> Group:
    """Sequence lengths (input + output tokens per request)."""
    sq = p.seq_len
    g = Group("Sequence length (input + output tokens per request)")
    if _off(sq):
        g.unavailable.append(f"sequence lengths not available: {_off(sq)}")
    elif sq is not None:
        for x, label in ((sq, "Total"), (sq.input_tokens, "Input tokens"), (sq.output_tokens, "Output tokens")):
            if x is not None:
                g.rows.append(Row(label, f"P50 {num(x.p50, 0)} · P90 {num(x.p90, 0)} · P99 {num(x.p99, 0)} · "
                                         f"max {num(x.max, 0)} tokens", f"mean {num(x.mean, 0)}; {num(x.n)} requests"))
        if sq.n_without_counts:
            g.notes.append(f"{num(sq.n_without_counts)} requests carry no token counts and are left out")
        if sq.definition:
            g.notes.append(sq.definition)
    return g


def budget_group(p: TrafficProfile) -> Group:
    """Timestamp resolution and the SLO error budget."""
    g = Group("Timestamps and error budget")
    res = p.resolution
    if _off(res):
        g.unavailable.append(f"timestamp resolution not available: {_off(res)}")
    elif res is not None and res.statement:
        g.rows.append(Row("Timestamp resolution", "quantized" if res.quantized else "fine", res.statement))
    slo = p.slo_budget
    if _off(slo):
        g.unavailable.append(f"SLO error budget not available: {_off(slo)}")
    elif slo is not None:
        obj = _f(slo.objective)
        g.rows.append(Row("SLO objective", pct(obj, 2) if obj is not None else "—",
                          f"over {num(slo.period_days, 0)} days" if slo.period_days else ""))
        if slo.n_requests is not None:
            g.rows.append(Row("Bad requests", f"{num(slo.n_bad)} of {num(slo.n_requests)}",
                              f"budget {num(slo.budget.requests if slo.budget else None)} requests; bad statuses "
                              f"{', '.join(map(str, slo.bad_statuses)) or '—'}"))
        used = slo.consumed  # shares of the period's request budget and minute budget spent by the trace
        for v, label in ((used.fraction if used else None, "Budget used"),
                         (used.minutes_fraction if used else None, "Minute budget used")):
            if v is not None:
                g.rows.append(Row(label, pct(v)))
        if slo.fastest_burn:
            g.tables.append(Table("Fastest burn windows", ["window", "requests", "bad", "burn rate", "budget used"],
                                  [[duration(w.window_s), num(w.n_requests), num(w.n_bad), num(w.burn_rate),
                                    pct(w.budget_fraction)] if w.available else
                                   [duration(w.window_s), f"not available: {w.reason}", "", "", ""]
                                   for w in slo.fastest_burn]))
        g.notes += _notes(slo.notes)
    return g


PRODUCTION_GROUPS = (
    target_group,
    per_minute_group,
    per_second_group,
    per_window_group,
    seasonality_group,
    bursts_group,
    mix_group,
    seq_len_group,
    budget_group,
)
"""The production section's groups, in page order."""


def production_view(p: TrafficProfile) -> list[Group]:
    """Production traffic: target, per-minute and per-second rates, tokens, forecasts, shape.

    Reads the typed profile document (``bearing_lib.traffic.document.TrafficProfile``). A
    relative clock (Mooncake, ServeGen) is shown as elapsed time from the trace's origin:
    no UTC minutes, no dates, no hour-of-day or weekday slots. One view per group
    (:data:`PRODUCTION_GROUPS`); empty groups are left out.
    """
    groups = [view(p) for view in PRODUCTION_GROUPS]
    return [g for g in groups if g is not None and not g.empty]



def _phase(h: float | None) -> str:
    """An hour of the cycle as the JSON wrote it (an integer hour shows without decimals)."""
    if h is None:
        return "None"
    return str(int(h)) if float(h).is_integer() else str(h)


def _slot(row: SlotRow) -> str:
    weekdays = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    h = f"{int(row.hour or 0):02d}:00"
    return f"{weekdays[int(row.weekday) % 7]} {h}" if row.weekday is not None else h


def _cell(v: Any, key: str = "", relative: bool = False) -> str:
    if key.endswith("_s") and key.startswith(("start", "end", "minute", "hour", "peak_at", "window")):
        return moment(v, relative)
    if key.endswith("_s"):
        return duration(v)
    if isinstance(v, list | tuple):
        return ", ".join(_cell(x) for x in v)
    if isinstance(v, dict):
        return _na(v) and f"not available: {_na(v)}" or "; ".join(f"{k}: {_cell(x)}" for k, x in v.items())
    if isinstance(v, str):
        return v
    return num(v)


# --------------------------------------------------------------------------- FOS and CBU
# These views read the typed plan (bearing_lib.plan.capacity_plan.CapacityPlan): a section is its
# dataclass or NotAvailable with the reason.


def _gone(x: Any) -> str | None:
    """The reason of a section that is not available (``NotAvailable``), else None."""
    return str(x.reason or "no reason given") if isinstance(x, NotAvailable) else None


def target_row(t: Target, bin_s: float | None = None) -> Row:
    """``Target load 8.24 req/s (P99 of per-minute rate × growth 1.0; 95% CI 6.09–8.37)``; a profile of
    rate windows (``bin_s`` 600, ServeGen) says "of the 600 s rate" instead of "per-minute"."""
    bits = []
    per = "per-minute " if bin_s is None or bin_s == 60 else f"{num(bin_s, 0)} s "
    if t.quantile is not None:
        bits.append(f"{quantile_name(t.quantile)} of the {per}rate × growth {num(t.growth, 1)}")
    if _ci(t.ci95):
        bits.append(_ci(t.ci95))
    note = "; ".join(bits)
    if t.basis:
        note = f"{note}. {t.basis}" if note else str(t.basis)
    return Row("Target load", rps_and_min(t.rps), note)


def cbu_minute(m: Any, relative: bool) -> str:
    """A CBU minute as the data has it: the plan writes an ISO UTC minute for a wall-clock trace and the
    minute's start in seconds on the trace's clock for a relative one (shown as elapsed time)."""
    f = _f(m)
    if f is None and isinstance(m, str):
        try:
            f = float(m)
        except ValueError:
            return m.replace("T", " ").removesuffix(":00Z").removesuffix("Z")
    if f is None:
        return "—"
    return moment(f, relative)


def cbu_view(cbu: CbuResult | NotAvailable | None, relative: bool = False) -> Group:
    """CBU: the threshold, how many minutes exceed it, the worst minute; the minutes folded."""
    g = Group("CBU (throughput / allowable capacity, per minute)")
    if not isinstance(cbu, CbuResult):
        g.unavailable.append(f"CBU not available: {_gone(cbu) or 'not computed'}")
        return g
    c = cbu
    thr = c.threshold
    g.rows.append(Row(f"Minutes above {num(thr)}", f"{num(c.n_above)} of {num(c.n_minutes)}",
                      f"{num(c.n_above_1)} above 1.0 (over the allowable capacity)", status=None))
    g.rows.append(Row("Highest CBU", num(c.max), f"P95 {num(c.p95)}"))
    g.rows.append(Row("Allowable capacity (the CBU denominator)", rps_and_min(c.allowable_rps)))
    if c.definition:
        g.notes.append(f"{c.definition}; above {num(thr)} → scale out or limit early")
    if c.minutes_above:
        title = f"{len(c.minutes_above)} minute(s) above {num(thr)}"
        if c.minutes_above_truncated:
            title += " (list truncated)"
        g.tables.append(Table(title, ["minute from the trace start" if relative else "minute (UTC)", "requests",
                                      "req/s", "CBU"],
                              [[cbu_minute(m.minute, relative), num(m.requests), num(m.requests / 60), num(m.cbu)]
                               for m in c.minutes_above], collapsed=True))
    return g


# --------------------------------------------------------------------------- plan


def production_source_view(ps: ProductionSource | None, passive: Any) -> Group:
    """Where production came from (metrics: resolution = the query step; request logs) and the passive limit."""
    g = Group("Production: where the numbers come from")
    if ps is None:
        g.unavailable.append("no production profile")
    else:
        g.rows.append(Row("Production from", {"metrics": "Prometheus metrics", "request log": "request logs",
                                              "rate windows": "rate windows"}.get(ps.kind, ps.kind), ps.statement))
        g.rows.append(Row("Time resolution", duration(ps.resolution_s) if ps.resolution_s is not None else "unknown",
                          "the query step: nothing finer than a step is seen" if ps.kind == "metrics" else
                          "rates are counted per bin of this length"))
        g.notes += [f"Not knowable from counters: {u}" for u in ps.unknowable]
    if isinstance(passive, NotAvailable):
        g.unavailable.append(f"passive limit not available: {passive.reason}")
    elif passive is not None:
        q = passive.q_ult
        g.rows.append(Row("Passive limit (production latency vs load)", q.text() if q.unit else f"{q.text()} req/s",
                          f"under {passive.clause}; {num(passive.n_windows)} windows of {duration(passive.window_s)}; "
                          + (f"EXTRAPOLATED beyond the highest observed load {num(passive.highest_rate_rps)} req/s"
                             if passive.extrapolated else
                             f"within the observed loads (up to {num(passive.highest_rate_rps)} req/s)")))
    return g


def mix_peaks_view(per_mix: list[MixFos]) -> Group:
    """Each mix's own peak and the FOS against it, beside the share-of-overall figure."""
    g = Group("Peaks per mix (each mix's own busiest minutes)")
    rows = [m for m in per_mix if m.own_peak is not None]
    if not rows:
        g.unavailable.append("per-mix peaks not available: the profile gives none (one mix, or rate windows only)")
        return g
    q = quantile_name(rows[0].own_peak.quantile)  # type: ignore[union-attr]
    t = Table(f"Own {q} per {duration(rows[0].own_peak.bin_s)} against share × overall {q}",  # type: ignore[union-attr]
              ["mix", "share", f"own {q} (req/s)", f"share × overall {q} (req/s)", "own / share",
               "FOS against own peak (95% CI)", "FOS by share method", "reading"], [], id="plan-mix-peaks")
    for m in rows:
        o = m.own_peak
        assert o is not None
        ci = f" ({num(o.fos.ci95[0])}–{num(o.fos.ci95[1])})" if o.fos.ci95 and None not in o.fos.ci95 else ""
        sign = {"lower": "≥ ", "upper": "< "}.get(o.fos.bound, "")
        t.rows.append([m.mix, pct(m.share), num(o.own_peak_rps, 3), num(o.share_method_rps, 3),
                       num(o.own_over_share), f"{sign}{num(o.fos.value)}{ci}", num(o.fos_share_method),
                       "share method understates the peak" if o.differs else "within 10 %"])
    g.tables.append(t)
    g.notes.append("A mix's busiest minutes need not be the overall busiest ones: its own peak is the target "
                   "quantile of its own per-minute rate; the share method takes its share of the overall peak. The "
                   "blended FOS (above) is unchanged; a mix served by its own pool is sized on its own peak.")
    return g


def domains_view(fd: FailureDomains | NotAvailable | None) -> Group:
    g = Group("Failure domains")
    if not isinstance(fd, FailureDomains):
        g.unavailable.append(f"failure domains not available: {_gone(fd) or 'not in the plan'}")
        return g
    lost = f"{fd.domains_lost} {fd.lost_domain}{'s' if fd.domains_lost > 1 else ''} lost"
    g.rows.append(Row("Fleet across failure domains", f"{num(fd.total)} instances",
                      f"{num(fd.instances)} carry the target with {lost} ({num(fd.surviving)} remain, "
                      f"{num(fd.needed)} needed) + burst buffer {num(fd.buffer)}"))
    g.rows.append(Row("Layout", f"{num(fd.zones)} zone(s), {num(fd.per_zone)} per zone"
                      + (f", nodes of {num(fd.replicas_per_node)}" if fd.replicas_per_node else ""), fd.rule))
    g.rows.append(Row("Capacity with the loss", rps_and_min(fd.surviving_capacity_rps),
                      f"at FOS {num(fd.target_fos)}; target {num(fd.target_rps)} req/s"))
    g.notes.append(fd.statement)
    return g


def tenants_view(t: Tenants | None) -> Group:
    g = Group("Top tenants")
    if t is None:
        g.unavailable.append("tenants not available: no tenant column was given (bearing plan --tenant-column "
                             "COLUMN with --trace; bearing report -p tenant_column COLUMN)")
        return g
    top = sorted(t.tenants, key=lambda r: -r.peak_rps)[:TOP_TENANTS]
    g.rows.append(Row("Tenants", f"{num(len(t.tenants))} in column {t.column}",
                      f"capacity shared: {num(t.capacity_rps)} req/s ({t.capacity_basis})"))
    g.tables.append(Table(f"The {len(top)} busiest tenants ({t.peak_statistic})",
                          ["tenant", "requests", "peak (req/s)", "share of the allowable capacity", "quota (req/s)",
                           "capped"],
                          [[r.tenant, num(r.requests), num(r.peak_rps, 3), pct(r.share_of_capacity),
                            num(r.quota_rps, 3), "yes" if r.capped else "no"] for r in top], id="plan-tenants"))
    g.notes.append(f"{t.rule}. {t.statement}")
    return g


def triggers_view(tr: ScalingTriggers | NotAvailable | None) -> Group:
    g = Group("Scaling triggers (exported to the HPA / KEDA)")
    if not isinstance(tr, ScalingTriggers):
        g.unavailable.append(f"scaling triggers not available: {_gone(tr) or 'not derived'}")
        return g
    r = tr.rate
    t = Table("Triggers and the evidence for each threshold", ["trigger", "signal", "threshold", "evidence"],
              [["request rate", "completed requests per second per replica", f"{num(r.per_pod_rps, 3)} req/s",
                r.evidence]], id="plan-triggers")
    b = tr.binding
    if isinstance(b, NotAvailable):
        g.unavailable.append(f"no trigger on the binding resource: {b.reason}")
    else:
        t.rows.append([f"binding resource: {b.resource}", b.metric, num(b.threshold, 3), b.evidence])
    s = tr.schedule
    if isinstance(s, NotAvailable):
        g.unavailable.append(f"no scheduled (KEDA cron) floors: {s.reason}")
    else:
        for w in s.windows:
            t.rows.append([f"cron {w.start_hour:02d}:00–{w.end_hour % 24:02d}:00 UTC", "time of day",
                           f"{num(w.replicas)} replicas", f"hour P95 up to {num(w.peak_rps, 3)} req/s / "
                           f"{num(s.per_instance_allowable_rps, 3)} req/s per replica"])
        g.notes.append(f"Daily schedule: {s.statement()}")
    g.tables.append(t)
    g.rows.append(Row("Replicas", f"{num(tr.min_replicas)}–{num(tr.max_replicas)}",
                      "KEDA minReplicaCount–maxReplicaCount"
                      + ("" if isinstance(s, NotAvailable) else "; the minimum is the off-peak floor")))
    return g


def plan_view(d: Any) -> list[Group]:
    """The plan section's groups, in page order (``d`` a :class:`~bearing_lib.report.model.PlanSection`)."""
    return [production_source_view(d.production_source, d.passive), mix_peaks_view(d.per_mix),
            instances_view(d.instances), domains_view(d.failure_domains), triggers_view(d.triggers),
            tenants_view(d.tenants), elasticity_view(d.elasticity), memory_view(d.memory)]


def instances_view(inst: InstancePlan | NotAvailable | None) -> Group:
    g = Group("Instances")
    if not isinstance(inst, InstancePlan):
        g.unavailable.append(f"instance count not available: {_gone(inst) or 'not in the plan'}")
        return g
    i = inst
    g.rows.append(Row("Instances", f"{num(i.total)} ({num(i.base)} + {num(i.buffer)} buffer)", i.reason))
    g.rows.append(Row("Per-instance limit", f"Q_ult {num(i.per_instance_q_ult_rps)} req/s; allowable "
                                            f"{num(i.per_instance_allowable_rps)} req/s",
                      f"allowable = Q_ult / target FOS {num(i.target_fos)}"))
    g.rows.append(Row("Target load", rps_and_min(i.target_rps)))
    g.rows.append(Row("Instances in the load test", num(i.tested_instances), i.tested_instances_basis))
    bp = i.buffer_plan
    if bp is not None:
        g.rows.append(Row("Buffer", f"{bp.mode}, {num(bp.instances)} instance(s)", bp.reason))
    bu = i.burst
    if bu is not None:
        per = f"{num(bu.per_month)} a month" if bu.per_month is not None else "frequency unknown"
        dur = f", {num(bu.duration_min)} min each" if bu.duration_min is not None else ""
        g.rows.append(Row("Burst model", f"{num(bu.multiplier)} × the target; {per}{dur}", bu.source))
    if i.buffer_basis:
        g.notes.append(f"Buffer basis: {i.buffer_basis}")
    sc = i.safe_concurrency
    if sc is not None:
        if _f(sc.value) is None:
            g.unavailable.append(f"safe concurrency not available: {sc.statement or 'not estimable'}")
        else:
            g.rows.append(Row("Max safe concurrency", f"{sc.value:.4g}", sc.statement))
    return g


def elasticity_view(el: ReplayResult | NotAvailable | None) -> Group:
    g = Group("Elasticity (replay of the production minutes)")
    if not isinstance(el, ReplayResult):
        g.unavailable.append(f"elasticity replay not available: {_gone(el) or 'not in the plan'}")
        return g
    e = el
    g.rows.append(Row("Recommendation", f"{e.recommendation}" + (f" (the replay alone needs {num(e.buffer)} "
                                                                  "buffer instance(s); the plan's buffer is under "
                                                                  "Instances)" if e.buffer else ""), e.reason))
    g.rows.append(Row("Instances", f"{num(e.initial_instances)} at the start → {num(e.max_instances)} at most",
                      f"{num(e.per_instance_rps)} req/s per instance (Q_ult)"))
    g.rows.append(Row("Scaling events", f"{num(e.n_scale_up)} up, {num(e.n_scale_down)} down"))
    g.rows.append(Row("Minutes over ready capacity", f"{num(e.n_over_capacity)} of {num(e.n_minutes)}"))
    g.rows.append(Row("Cold start / cool-down", f"{duration(e.cold_start_s)} / {duration(e.cool_down_s)}"))
    st = e.settings
    if st.scale_up_threshold is not None:
        g.notes.append(
            f"Rules: scale up above load ratio {num(st.scale_up_threshold)}, down below "
            f"{num(st.scale_down_threshold)}, to a ratio of {num(st.target_ratio)}; at least "
            f"{num(st.min_instances)} instance(s)"
            + (f"; latency budget {duration(st.latency_budget_s)}" if st.latency_budget_s else "")
            + (f"; {st.credit}" if st.credit else ""))
    if e.events:
        g.tables.append(Table(f"{len(e.events)} scaling event(s)",
                              ["after minute", "action", "count", "instances after", "ready from minute", "reason"],
                              [[num(x.after_minute), x.action.replace("_", " "), num(x.count), num(x.instances_after),
                                num(x.ready_from_minute), x.reason] for x in e.events], collapsed=True))
    if e.over_capacity_minutes:
        g.tables.append(Table(f"{len(e.over_capacity_minutes)} minute(s) over ready capacity", ["minute"],
                              [[num(x)] for x in e.over_capacity_minutes], collapsed=True))
    return g


def memory_view(mem: MemoryPlan | NotAvailable | None) -> Group:
    g = Group("KV-cache memory (per instance)")
    if not isinstance(mem, MemoryPlan):
        g.unavailable.append(f"memory plan not available: {_gone(mem) or 'not in the plan'}")
        return g
    m = mem
    md = m.model
    arch = (f"{num(md.layers)} layers, {str(md.attention or '').upper()} {num(md.heads)} heads / "
            f"{num(md.kv_heads)} KV heads, head dim {num(md.head_dim)}"
            if md.attention != "mla" else
            f"{num(md.layers)} layers, MLA latent {num(md.kv_lora_rank)} + RoPE {num(md.qk_rope_head_dim)}")
    g.rows.append(Row("Model", md.name, f"{arch}; weights {md.weight_dtype}, KV {md.kv_dtype}; {md.source or ''}"))
    g.rows.append(Row("Weights", gib(md.weight_bytes / 1024**3),
                      f"{num(md.params / 1e9 if md.params else None, 1)} B parameters"))
    kv, seed = md.kv_bytes_per_token, md.seed_mha_kv_bytes_per_token
    g.rows.append(Row("KV cache per token", f"{num(kv / 1024 if kv else None, 0)} KiB",
                      f"the MHA-only formula would say {num(seed / 1024, 0)} KiB" if seed else ""))
    g.rows.append(Row("Planning concurrency", f"{num(m.concurrency)} sequences per instance"
                      if m.concurrency is not None else "unknown", m.concurrency_basis))
    pc = m.planning_concurrency
    if pc is not None and not pc.used:
        g.rows.append(Row("Concurrency at Q_ult", f"{num(pc.per_instance, 1)} per instance",
                          f"{pc.statement}; not used: the concurrency above takes precedence"))
    p99 = m.row("p99")
    if m.gpu_mem_gib is not None:
        g.rows.append(Row("GPU memory", f"{num(m.gpu_count)} × {num(m.gpu_mem_gib, 0)} GiB", "given by the analyst"))
    else:
        need = m.gpu_memory_needed.gib_per_instance if m.gpu_memory_needed is not None else None
        if need is None:
            need = p99.total_gib if p99 is not None else None
        g.rows.append(Row("GPU memory", "not given",
                          f"the plan needs ≥ {need:,.1f} GiB per instance at the P99 sequence length"
                          if need is not None else
                          "give the GPU memory (gpu_mem_gib) to judge the fit; the need per instance is unknown "
                          "while the concurrency is"))
    g.rows.append(Row("Margin", pct(m.margin, 0), m.formula))
    if m.seq_len.source:
        g.notes.append(f"Sequence lengths from {m.seq_len.source} ({num(m.seq_len.n)} requests).")
    if m.rows:
        g.tables.append(Table(
            "Memory per sequence-length basis",
            ["basis", "sequence length (tokens)", "weights", "KV cache", "total with margin",
             "total, MHA-only formula", "headroom", "max concurrency that fits (MHA-only formula)"],
            [[r.basis.upper().replace("MEAN", "mean").replace("MAX", "max"), num(r.seq_len, 0),
              gib(r.weights_gib), gib(r.kv_gib), gib(r.total_gib), gib(r.seed_mha_total_gib),
              pct(r.headroom) if r.headroom is not None else "needs the GPU memory",
              (f"{num(r.max_concurrency_that_fits)} ({num(r.seed_mha_max_concurrency_that_fits)})"
               if r.max_concurrency_that_fits is not None else "needs the GPU memory")]
             for r in m.rows]))
    if m.vllm_log_check is not None:
        g.notes.append(f"vLLM log check: {m.vllm_log_check.statement}")
    return g


def scorecard_tables(sc: Scorecards | NotAvailable | None) -> Group:
    g = Group("Scorecards")
    if not isinstance(sc, Scorecards):
        g.unavailable.append(f"scorecards not available: {_gone(sc) or 'not in the plan'}")
        return g
    if sc.scorecard:
        g.tables.append(Table("Scorecard", ["dimension", "status", "value", "why"],
                              [[x.dimension, x.status, _value(x.value), x.reason] for x in sc.scorecard],
                              status_column=1))
    if sc.checklist:
        g.tables.append(Table("Health checklist", ["metric", "status", "value", "healthy when", "why"],
                              [[x.metric, x.status, _value(x.value), x.healthy_rule, x.reason] for x in sc.checklist],
                              status_column=1))
    return g


def _value(v: Any) -> str:
    return "—" if v is None else _cell(v)


# --------------------------------------------------------------------------- data-quality flags

_SEVERITY = {"error": 0, "critical": 0, "warning": 1, "warn": 1, "info": 3, "informational": 3}


def _severity(level: str) -> int:
    """Sort key of a flag level: errors, warnings, unknown levels, then informational."""
    return _SEVERITY.get(str(level).lower(), 2)


@dataclass
class FlagGroup:
    """The findings of one source, most severe first, with counts per level."""

    source: str
    counts: dict[str, int]
    flags: list[Flag]

    @property
    def summary(self) -> str:
        return ", ".join(f"{n} {lvl}{'s' if n != 1 and lvl in ('warning', 'error') else ''}"
                         for lvl, n in self.counts.items())


@dataclass
class CodeCount:
    """How often one (level, code) occurs, and where."""

    level: str
    code: str
    count: int = 0
    sources: list[str] = field(default_factory=list)


@dataclass
class FlagsView:
    """The data-quality section: ``by_level`` the count per level (most severe first), ``codes`` one row per
    (level, code), ``groups`` one :class:`FlagGroup` per source (most severe first, then the most findings)."""

    n: int
    by_level: dict[str, int]
    codes: list[CodeCount]
    groups: list[FlagGroup]


def flags_view(flags: list[Flag]) -> FlagsView:
    """Findings grouped by source and severity, and counted per code (warnings first)."""
    def lvl(f: Any) -> str:
        return str(getattr(f, "level", "") or "info")

    by_level: dict[str, int] = {}
    for f in sorted(flags, key=lambda f: _severity(lvl(f))):
        by_level[lvl(f)] = by_level.get(lvl(f), 0) + 1
    codes: dict[tuple[str, str], CodeCount] = {}
    for f in flags:
        row = codes.setdefault((lvl(f), f.code), CodeCount(lvl(f), f.code))
        row.count += 1
        if f.source not in row.sources:
            row.sources.append(f.source)
    code_rows = sorted(codes.values(), key=lambda r: (_severity(r.level), -r.count, r.code))
    by_source: dict[str, list[Any]] = {}
    for f in flags:
        by_source.setdefault(f.source, []).append(f)
    groups = []
    for src, fl in by_source.items():
        fl = sorted(fl, key=lambda f: (_severity(lvl(f)), f.code))  # stable: keeps step order within a code
        counts: dict[str, int] = {}
        for f in fl:
            counts[lvl(f)] = counts.get(lvl(f), 0) + 1
        groups.append(FlagGroup(src, counts, fl))
    groups.sort(key=lambda g: (min(_severity(x) for x in g.counts), -sum(
        n for x, n in g.counts.items() if _severity(x) <= 1), -len(g.flags), g.source))
    return FlagsView(len(flags), by_level, code_rows, groups)


# --------------------------------------------------------------------------- caveats


def _collect_caveats(obj: Any, out: list[str], path: str = "") -> None:
    if isinstance(obj, dict):
        r = _na(obj) if obj.get("reason") else None  # a block without a reason: its parts carry theirs
        if r:
            out.append(f"{path or 'section'}: not available: {r}")
        for k, v in obj.items():
            sub = f"{path}.{k}" if path else str(k)
            if k in ("notes", "warnings") and isinstance(v, list):
                out += [f"{path or 'section'}: {x}" for x in _notes(v)]
            elif isinstance(k, str) and k.endswith("_note") and isinstance(v, str) and v:
                out.append(f"{sub}: {v}")
            elif k != "reason":
                _collect_caveats(v, out, sub)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:200]):
            _collect_caveats(v, out, f"{path}[{i}]")


def leftover_caveats(data: Any, groups: list[Group]) -> list[str]:
    """Caveats in ``data`` (unavailable reasons, notes, ``*_note``) that no group shows."""
    shown = " ".join(
        " ".join([*(r.note for r in g.rows), *(r.value for r in g.rows), *g.notes, *g.unavailable,
                  *(c for t in g.tables for row in t.rows for c in row)])
        for g in groups)
    found: list[str] = []
    _collect_caveats(data, found)
    out = []
    for c in found:
        text = c.split(": ", 1)[1] if ": " in c else c
        text = text.removeprefix("not available: ")
        where, _, rest = c.partition(": ")
        label = f"{where.replace('_', ' ')}: {rest}"
        if text not in shown and label not in out:
            out.append(label)
    return out


@dataclass
class SectionView:
    """A section as the HTML shows it: its groups and the caveats no group shows."""

    groups: list[Group]
    caveats: list[str]


@dataclass
class FosView:
    """The FOS section's curated parts: the target row and the CBU group, and leftover caveats."""

    target: Row
    cbu: Group
    caveats: list[str]


@dataclass
class SectionViews:
    """The curated views of the report (what the template reads), each None when its section is not available."""

    window: str
    production: SectionView | None = None
    fos: FosView | None = None
    plan: SectionView | None = None
    scorecards: SectionView | None = None


def section_views(model: ReportModel) -> SectionViews:
    """The curated views of the production, FOS/CBU, plan and scorecards sections."""
    run_time = model.provenance.run_time_utc
    prod = model.production.data
    views = SectionViews(window=window_line(prod.document if prod else None, run_time,
                                            [m.to_dict() for m in prod.per_minute_series] if prod else None))
    if prod is not None:
        doc = prod.document
        g = production_view(doc)
        # a relative clock has no time-of-day slots: their reasons are not caveats of this report
        skip = ("per_minute_series", "slots") if doc.relative else ("per_minute_series",)
        views.production = SectionView(g, leftover_caveats(
            {k: v for k, v in prod.to_dict().items() if k not in skip}, g))
    f = model.fos.data
    if f is not None:
        cbu = cbu_view(f.cbu, prod is not None and prod.document.relative)
        ttarget = prod.document.targets.target if prod is not None and prod.document.targets is not None else None
        views.fos = FosView(target_row(f.target, ttarget.bin_s if ttarget is not None else None), cbu,
                            leftover_caveats(jsonable({"cbu": f.cbu}), [cbu]))
    d = model.plan.data
    if d is not None:
        g = plan_view(d)
        # the caveats walk is generic (every unavailable reason, note and *_note of the section's JSON form)
        views.plan = SectionView(g, leftover_caveats(jsonable({"instances": d.instances, "elasticity": d.elasticity,
                                                               "memory": d.memory}), g))
    sc = model.scorecards.data
    if sc is not None:
        g = [scorecard_tables(sc.scorecards)]
        views.scorecards = SectionView(g, leftover_caveats(jsonable(dataclasses.asdict(sc)), g))
    return views


__all__ = [
    "PRODUCTION_GROUPS",
    "CodeCount",
    "FlagGroup",
    "FlagsView",
    "FosView",
    "Group",
    "Row",
    "SectionView",
    "SectionViews",
    "Table",
    "budget_group",
    "bursts_group",
    "cbu_minute",
    "cbu_view",
    "domains_view",
    "elapsed",
    "elasticity_view",
    "flags_view",
    "instances_view",
    "is_relative",
    "leftover_caveats",
    "memory_view",
    "mix_group",
    "mix_peaks_view",
    "num",
    "per_minute_group",
    "per_second_group",
    "per_window_group",
    "plan_view",
    "production_source_view",
    "production_view",
    "scorecard_tables",
    "seasonality_group",
    "section_views",
    "seq_len_group",
    "target_group",
    "target_row",
    "tenants_view",
    "triggers_view",
    "window_line",
]
