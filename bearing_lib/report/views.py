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

import datetime as _dt
import math
from dataclasses import dataclass, field
from typing import Any

from bearing_lib.report.model import as_float


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
    """Whether a profile document's clock is relative (seconds from the trace start, no dates)."""
    return isinstance(profile, dict) and str(profile.get("clock") or "").startswith("relative")


def moment(t: Any, relative: bool) -> str:
    """A time as the data has it: ``2023-11-16 10:00`` (UTC) or ``+1 h 05 min`` (relative clock)."""
    return elapsed(t) if relative else utc(t)


def window_line(profile: Any, run_time_utc: str | None) -> str:
    """The date of the report and the traffic window it judged, for the line under the verdict.

    A wall-clock profile gives its first and last request in UTC (``start_utc``/``end_utc``); a
    relative-clock one has no dates, so the window is the span of its counted minutes (or
    rate windows) on the trace's own clock, as elapsed time.
    """
    bits = []
    if run_time_utc:
        bits.append(f"Report of {str(run_time_utc)[:10]} ({str(run_time_utc)[11:16]} UTC)")
    p = _d(profile)
    span = duration(p.get("span_s")) if _f(p.get("span_s")) is not None else ""
    series = [r for r in p.get("per_minute_series") or [] if _f(_d(r).get("minute_start_s")) is not None]
    if is_relative(p) and series:
        t0 = _f(series[0]["minute_start_s"])
        last = series[-1]
        t1 = (_f(last["minute_start_s"]) or 0.0) + (_f(last.get("bin_s")) or 60.0)
        bits.append(f"traffic window {elapsed(t0)} to {elapsed(t1)} on the trace's relative clock"
                    + (f" (trace span {span})" if span else "") + "; no calendar dates")
    elif is_relative(p) and span:
        bits.append(f"traffic window: {span} on the trace's relative clock; no calendar dates")
    elif p.get("start_utc") and p.get("end_utc"):
        a, b = (str(p[k]).replace("T", " ")[:16] for k in ("start_utc", "end_utc"))
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


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _notes(v: Any) -> list[str]:
    return [str(x) for x in v if x not in (None, "")] if isinstance(v, list | tuple) else []


# --------------------------------------------------------------------------- production


def production_view(p: dict[str, Any]) -> list[Group]:
    """Production traffic: target, per-minute and per-second rates, tokens, forecasts, shape.

    A relative clock (Mooncake, ServeGen) is shown as elapsed time from the trace's origin:
    no UTC minutes, no dates, no hour-of-day or weekday slots.
    """
    groups: list[Group] = []
    rel = is_relative(p)

    # target load ---------------------------------------------------------------
    t = _d(p.get("targets"))
    g = Group("Target load")
    tg = _d(t.get("target"))
    if _na(tg):
        g.unavailable.append(f"target load not available: {_na(tg)}")
    elif tg:
        q = quantile_name(tg.get("quantile"))
        bin_s = _f(tg.get("bin_s"))
        per = "per-minute " if bin_s == 60 else (f"{num(bin_s, 0)} s " if bin_s else "")
        bits = [f"{q} of the {per}rate × growth {num(tg.get('growth'), 2)}"]
        if _ci(tg.get("ci95")):
            bits.append(_ci(tg.get("ci95")))
        g.rows.append(Row("Target load", rps_and_min(tg.get("rps")), "; ".join(bits)))
        if tg.get("ci_method"):
            bins = f" ({num(tg.get('n_bins'))} bins)" if tg.get("n_bins") is not None else ""
            g.notes.append(f"95% CI of the target: {tg['ci_method']}{bins}")
        if tg.get("statement"):
            g.notes.append(str(tg["statement"]))
    pk = _d(t.get("peak"))
    if _f(pk.get("rps")) is not None:
        g.rows.append(Row("Observed peak", rps_and_min(pk["rps"]),
                          f"the largest {num(pk.get('bin_s'), 0)} s bin" if pk.get("bin_s") else ""))
    for key, label in (("near_term", "Near-term planning load"), ("mid_term", "Mid-term forecast")):
        x = _d(t.get(key))
        if _na(x):
            g.unavailable.append(f"{label.lower()} not available: {_na(x)}")
        elif _f(x.get("rps")) is not None:
            note = " × ".join(s for s in (num(x.get("factor")) if x.get("factor") is not None else "",
                                          str(x.get("basis") or "")) if s)
            g.rows.append(Row(label, rps_and_min(x["rps"]), note or str(x.get("statement") or "")))
    g.notes += _notes(t.get("notes"))
    groups.append(g)

    # per-minute ------------------------------------------------------------------
    pm = _d(p.get("per_minute"))
    g = Group("Per-minute rate (complete minutes from the trace start)" if rel
              else "Per-minute rate (complete UTC minutes)")
    if _na(pm):
        g.unavailable.append(f"per-minute rates not available: {_na(pm)}")
    elif pm:
        g.rows.append(Row("Peak minute", per_min_and_s(pm.get("max")),
                          f"{num(pm.get('peak_to_mean'))} × the mean" if pm.get("peak_to_mean") is not None else ""))
        for k, label in (("p99", "P99 minute"), ("p95", "P95 minute"), ("p50", "Median minute"),
                         ("mean", "Mean")):
            if pm.get(k) is not None:
                g.rows.append(Row(label, per_min_and_s(pm[k])))
        if pm.get("n_minutes") is not None:
            g.rows.append(Row("Minutes counted", num(pm["n_minutes"]),
                              f"{num(pm.get('n_empty'))} with no request (counted as zero)"
                              if pm.get("n_empty") is not None else ""))
        tok = _d(pm.get("tokens"))
        for k, label in (("input_tokens", "Input tokens per minute"), ("output_tokens", "Output tokens per minute")):
            x = _d(tok.get(k))
            if _na(x):
                g.unavailable.append(f"{label.lower()} not available: {_na(x)}")
            elif x:
                g.rows.append(Row(label, f"peak {num(x.get('max'))} · P99 {num(x.get('p99'))} · "
                                         f"mean {num(x.get('mean'))}", str(x.get("unit") or "")))
    groups.append(g)

    # per-second ------------------------------------------------------------------
    ps = _d(p.get("per_second"))
    g = Group("Per-second rate (bursts inside a minute)")
    if _na(ps):
        g.unavailable.append(f"per-second rates not available: {_na(ps)}")
    elif ps:
        g.rows.append(Row("Peak second", f"{num(ps.get('max'))} req/s",
                          f"{num(ps.get('peak_to_mean'))} × the mean" if ps.get("peak_to_mean") is not None else ""))
        for k, label in (("p99", "P99 second"), ("p95", "P95 second"), ("p50", "Median second"), ("mean", "Mean")):
            if ps.get(k) is not None:
                g.rows.append(Row(label, f"{num(ps[k])} req/s"))
        if ps.get("n_bins") is not None:
            g.rows.append(Row("Seconds counted", num(ps["n_bins"]),
                              f"{num(ps.get('n_empty'))} with no request (counted as zero)"
                              if ps.get("n_empty") is not None else ""))
    groups.append(g)

    # per-window (sources with coarse windows only) -------------------------------
    pw = _d(p.get("per_window"))
    if pw:
        g = Group("Per-window rate")
        if _na(pw):
            g.unavailable.append(f"per-window rates not available: {_na(pw)}")
        else:
            for k, label in (("max", "Peak window"), ("p99", "P99 window"), ("p95", "P95 window"), ("mean", "Mean")):
                if pw.get(k) is not None:
                    g.rows.append(Row(label, f"{num(pw[k])} {pw.get('unit') or ''}".strip()))
            if pw.get("bin_s") is not None:
                g.rows.append(Row("Window length", duration(pw["bin_s"])))
        groups.append(g)

    # daily / weekly and decomposition ----------------------------------------------
    g = Group("Daily / weekly profile and seasonality")
    sl = _d(p.get("slots"))
    if rel and sl:
        g.unavailable.append("hour-of-day and weekday profiles not shown: the trace has a relative clock (seconds "
                             "from its start), so it has no time of day or weekday")
    for key, label in (("hour_of_day", "Hour-of-day profile"), ("hour_weekday", "Weekday × hour profile")):
        x = _d(sl.get(key))
        if rel:
            continue
        if _na(x):
            g.unavailable.append(f"{label.lower()} not available: {_na(x)}")
        elif x:
            pk_, tr_ = _d(x.get("peak")), _d(x.get("trough"))
            rows = [_d(r) for r in x.get("rows") or [] if _f(_d(r).get("p95_rps")) is not None]
            if not pk_ and rows:  # older documents: the extreme slots from the rows
                pk_ = {"slot": _slot(max(rows, key=lambda r: r["p95_rps"])), "p95_rps": max(r["p95_rps"] for r in rows)}
                tr_ = {"slot": _slot(min(rows, key=lambda r: r["p95_rps"])), "p95_rps": min(r["p95_rps"] for r in rows)}
            if pk_:
                ratio = (f"peak/trough {num(x.get('peak_to_trough'))}; " if x.get("peak_to_trough") is not None
                         else "")
                g.rows.append(Row(label, f"peak {pk_.get('slot')} at {num(pk_.get('p95_rps'))} req/s; "
                                         f"trough {tr_.get('slot')} at {num(tr_.get('p95_rps'))} req/s",
                                  f"{ratio}{x.get('statistic') or 'P95 rate per slot'}"
                                  + ("" if x.get("repeated", True) else "; one period only (not a repeated pattern)")))
    dec = _d(p.get("decomposition"))
    if _na(dec):
        g.unavailable.append(f"seasonal decomposition not available: {_na(dec)}")
    elif dec:
        for c in dec.get("components") or []:
            c = _d(c)
            hour = "hour (from the trace start)" if rel else "hour (UTC)"
            g.rows.append(Row(f"{str(c.get('name', '')).capitalize()} cycle ({num(c.get('period_h'), 0)} h)",
                              f"amplitude {num(c.get('amplitude_rps'))} req/s; strength {num(c.get('strength'))}",
                              f"peak at {hour} {c.get('peak_phase_h')}, trough at {c.get('trough_phase_h')}; "
                              f"cycle correlation {num(c.get('cycle_correlation'))}"))
        tr = _d(dec.get("trend"))
        if tr:
            g.rows.append(Row("Trend", f"{num(tr.get('start_rps'))} → {num(tr.get('end_rps'))} req/s",
                              f"range {num(tr.get('min_rps'))}–{num(tr.get('max_rps'))}; residual std "
                              f"{num(dec.get('resid_std_rps'))} req/s; {dec.get('method') or ''}"))
        g.notes += _notes(dec.get("notes"))
    groups.append(g)

    # bursts --------------------------------------------------------------------
    b = _d(p.get("bursts"))
    g = Group("Bursts")
    if _na(b):
        g.unavailable.append(f"burst detection not available: {_na(b)}")
    elif b:
        g.rows.append(Row("Burst episodes", num(b.get("count")), str(b.get("rule") or b.get("threshold") or "")))
        if b.get("count") and _f(b.get("max_duration_s")) is not None:
            g.rows.append(Row("Longest burst", duration(b.get("max_duration_s")),
                              f"total {duration(b.get('total_duration_s'))}"
                              if _f(b.get("total_duration_s")) is not None else ""))
        if b.get("count") and _f(b.get("max_peak_multiplier")) is not None:
            g.rows.append(Row("Largest burst", f"{num(b.get('max_peak_multiplier'))} × baseline"))
        if b.get("per_month") is not None:
            g.rows.append(Row("Bursts per month", num(b.get("per_month")), str(b.get("per_month_note") or "")))
        if b.get("baseline"):
            g.notes.append(f"Baseline: {b['baseline']}")
        if b.get("n_unjudged_bins"):
            g.notes.append(f"{num(b['n_unjudged_bins'])} bins could not be judged (no baseline for their slot)")
        g.notes += _notes(b.get("notes"))
        eps = [_d(e) for e in b.get("episodes") or []]
        if eps:
            cols = list(dict.fromkeys(k for e in eps for k in e))
            g.tables.append(Table(f"{len(eps)} burst episode(s)", [c.replace("_", " ") for c in cols],
                                  [[_cell(e.get(c), c, rel) for c in cols] for e in eps], collapsed=len(eps) > 12))
    groups.append(g)

    # dispersion, mix shares -----------------------------------------------------
    dsp = _d(p.get("dispersion"))
    g = Group("Burstiness and request mix")
    if _na(dsp):
        g.unavailable.append(f"dispersion not available: {_na(dsp)}")
    elif dsp:
        if dsp.get("index_of_dispersion") is not None:
            g.rows.append(Row("Index of dispersion", num(dsp["index_of_dispersion"]),
                              str(dsp.get("index_of_dispersion_note") or "")))
        if dsp.get("interarrival_cv") is not None:
            g.rows.append(Row("Inter-arrival CV", num(dsp["interarrival_cv"]),
                              str(dsp.get("interarrival_cv_note") or "")))
    ms = p.get("mix_shares")
    if _na(ms):
        g.unavailable.append(f"mix shares not available: {_na(ms)}")
    elif isinstance(ms, list) and ms:
        g.tables.append(Table("Mix shares of production requests", ["mix", "share", "requests"],
                              [[str(_d(m).get("mix")), pct(_d(m).get("share")), num(_d(m).get("n_requests"))]
                               for m in ms]))
    mh = _d(p.get("mix_shares_per_hour"))
    if _na(mh):
        g.unavailable.append(f"mix shares per hour not available: {_na(mh)}")
    elif mh.get("rows"):
        rows = [_d(r) for r in mh["rows"]]
        g.tables.append(Table(f"Mix shares per hour ({mh.get('basis') or 'UTC hours'})",
                              ["hour from the trace start" if rel else "hour (UTC)", "mix", "share", "requests"],
                              [[moment(r.get("hour_start_s"), rel), str(r.get("mix")), pct(r.get("share")),
                                num(r.get("n_requests"))] for r in rows], collapsed=True))
        g.notes += _notes(mh.get("notes"))
    groups.append(g)

    # sequence lengths ------------------------------------------------------------
    sq = _d(p.get("seq_len"))
    g = Group("Sequence length (input + output tokens per request)")
    if _na(sq):
        g.unavailable.append(f"sequence lengths not available: {_na(sq)}")
    elif sq:
        for k, label in (("total", "Total"), ("input_tokens", "Input tokens"), ("output_tokens", "Output tokens")):
            x = sq if k == "total" else _d(sq.get(k))
            if x:
                g.rows.append(Row(label, f"P50 {num(x.get('p50'), 0)} · P90 {num(x.get('p90'), 0)} · "
                                         f"P99 {num(x.get('p99'), 0)} · max {num(x.get('max'), 0)} tokens",
                                  f"mean {num(x.get('mean'), 0)}; {num(x.get('n'))} requests"))
        if sq.get("n_without_counts"):
            g.notes.append(f"{num(sq['n_without_counts'])} requests carry no token counts and are left out")
        if sq.get("definition"):
            g.notes.append(str(sq["definition"]))
    groups.append(g)

    # resolution, SLO budget --------------------------------------------------------
    g = Group("Timestamps and error budget")
    res = _d(p.get("resolution"))
    if _na(res):
        g.unavailable.append(f"timestamp resolution not available: {_na(res)}")
    elif res.get("statement"):
        g.rows.append(Row("Timestamp resolution", "quantized" if res.get("quantized") else "fine",
                          str(res["statement"])))
    slo = _d(p.get("slo_budget"))
    if _na(slo):
        g.unavailable.append(f"SLO error budget not available: {_na(slo)}")
    elif slo:
        obj = _f(slo.get("objective"))
        g.rows.append(Row("SLO objective", pct(obj, 2) if obj is not None else "—",
                          f"over {num(slo.get('period_days'), 0)} days" if slo.get("period_days") else ""))
        if slo.get("n_requests") is not None:
            g.rows.append(Row("Bad requests", f"{num(slo.get('n_bad'))} of {num(slo.get('n_requests'))}",
                              f"budget {num(slo.get('budget_requests'))} requests; bad statuses "
                              f"{', '.join(map(str, slo.get('bad_statuses') or [])) or '—'}"))
        for k, label in (("budget_used", "Budget used"), ("bad_minute_ratio", "Minutes with a bad request")):
            if slo.get(k) is not None:
                g.rows.append(Row(label, pct(slo[k])))
        fastest = [_d(w) for w in slo.get("fastest") or []]
        if fastest:
            g.tables.append(Table("Fastest burn windows", ["window", "requests", "bad", "burn rate", "budget used"],
                                  [[duration(w.get("window_s")), num(w.get("n_requests")), num(w.get("n_bad")),
                                    num(w.get("burn_rate")), pct(w.get("budget_fraction"))]
                                   if w.get("available", True) else
                                   [duration(w.get("window_s")), "not available: " + str(w.get("reason")), "", "", ""]
                                   for w in fastest]))
        g.notes += _notes(slo.get("notes"))
    groups.append(g)
    return [x for x in groups if not x.empty]


def _slot(row: dict[str, Any]) -> str:
    weekdays = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    h = f"{int(row.get('hour', 0)):02d}:00"
    wd = row.get("weekday")
    return f"{weekdays[int(wd) % 7]} {h}" if wd is not None else h


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


def target_row(t: dict[str, Any], bin_s: float | None = None) -> Row:
    """``Target load 8.24 req/s (P99 of per-minute rate × growth 1.0; 95% CI 6.09–8.37)``; a profile of
    rate windows (``bin_s`` 600, ServeGen) says "of the 600 s rate" instead of "per-minute"."""
    bits = []
    per = "per-minute " if bin_s is None or bin_s == 60 else f"{num(bin_s, 0)} s "
    if t.get("quantile") is not None:
        bits.append(f"{quantile_name(t.get('quantile'))} of the {per}rate × growth {num(t.get('growth'), 1)}")
    if _ci(t.get("ci95")):
        bits.append(_ci(t.get("ci95")))
    note = "; ".join(bits)
    if t.get("basis"):
        note = f"{note}. {t['basis']}" if note else str(t["basis"])
    return Row("Target load", rps_and_min(t.get("rps")), note)


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


def cbu_view(cbu: Any, relative: bool = False) -> Group:
    """CBU: the threshold, how many minutes exceed it, the worst minute; the minutes folded."""
    g = Group("CBU (throughput / allowable capacity, per minute)")
    c = _d(cbu)
    if _na(c) or not c:
        g.unavailable.append(f"CBU not available: {_na(c) or 'not computed'}")
        return g
    n = c.get("n_minutes")
    thr = c.get("threshold")
    g.rows.append(Row(f"Minutes above {num(thr)}", f"{num(c.get('n_above'))} of {num(n)}",
                      f"{num(c.get('n_above_1'))} above 1.0 (over the allowable capacity)"
                      if c.get("n_above_1") is not None else "", status=None))
    g.rows.append(Row("Highest CBU", num(c.get("max")), f"P95 {num(c.get('p95'))}"))
    if c.get("allowable_rps") is not None:
        g.rows.append(Row("Allowable capacity (the CBU denominator)", rps_and_min(c["allowable_rps"])))
    if c.get("definition"):
        g.notes.append(str(c["definition"]) + f"; above {num(thr)} → scale out or limit early")
    mins = [_d(m) for m in c.get("minutes_above") or []]
    if mins:
        title = f"{len(mins)} minute(s) above {num(thr)}"
        if c.get("minutes_above_truncated"):
            title += " (list truncated)"
        g.tables.append(Table(title, ["minute from the trace start" if relative else "minute (UTC)", "requests",
                                      "req/s", "CBU"],
                              [[cbu_minute(m.get("minute"), relative), num(m.get("requests")),
                                num(_f(m.get("requests")) / 60 if _f(m.get("requests")) is not None else None),
                                num(m.get("cbu"))] for m in mins], collapsed=True))
    return g


# --------------------------------------------------------------------------- plan


def instances_view(inst: Any) -> Group:
    g = Group("Instances")
    i = _d(inst)
    if _na(i) or not i:
        g.unavailable.append(f"instance count not available: {_na(i) or 'not in the plan'}")
        return g
    total, base, buf = i.get("total"), i.get("base"), i.get("buffer")
    g.rows.append(Row("Instances", f"{num(total)} ({num(base)} + {num(buf)} buffer)", str(i.get("reason") or "")))
    g.rows.append(Row("Per-instance limit", f"Q_ult {num(i.get('per_instance_q_ult_rps'))} req/s; allowable "
                                            f"{num(i.get('per_instance_allowable_rps'))} req/s",
                      f"allowable = Q_ult / target FOS {num(i.get('target_fos'))}"))
    if i.get("target_rps") is not None:
        g.rows.append(Row("Target load", rps_and_min(i["target_rps"])))
    if i.get("tested_instances") is not None:
        g.rows.append(Row("Instances in the load test", num(i["tested_instances"]),
                          str(i.get("tested_instances_basis") or "")))
    bp = _d(i.get("buffer_plan"))
    if bp:
        g.rows.append(Row("Buffer", f"{bp.get('mode')}, {num(bp.get('instances'))} instance(s)",
                          str(bp.get("reason") or "")))
    bu = _d(i.get("burst"))
    if bu:
        per = f"{num(bu.get('per_month'))} a month" if bu.get("per_month") is not None else "frequency unknown"
        dur = f", {num(bu.get('duration_min'))} min each" if bu.get("duration_min") is not None else ""
        g.rows.append(Row("Burst model", f"{num(bu.get('multiplier'))} × the target; {per}{dur}",
                          str(bu.get("source") or "")))
    if i.get("buffer_basis"):
        g.notes.append(f"Buffer basis: {i['buffer_basis']}")
    sc = i.get("safe_concurrency")
    if isinstance(sc, dict):
        if _na(sc) or _f(sc.get("value")) is None:
            g.unavailable.append(f"safe concurrency not available: {_na(sc) or sc.get('reason') or 'not estimable'}")
        else:
            g.rows.append(Row("Max safe concurrency", num(sc.get("value"), 1),
                              "; ".join(s for s in (_ci(sc.get("ci95")), str(sc.get("statement") or
                                                                            sc.get("method") or "")) if s)))
    return g


def elasticity_view(el: Any) -> Group:
    g = Group("Elasticity (replay of the production minutes)")
    e = _d(el)
    if _na(e) or not e:
        g.unavailable.append(f"elasticity replay not available: {_na(e) or 'not in the plan'}")
        return g
    g.rows.append(Row("Recommendation", f"{e.get('recommendation')}"
                                        + (f" (buffer {num(e.get('buffer'))})" if e.get("buffer") else ""),
                      str(e.get("reason") or "")))
    g.rows.append(Row("Instances", f"{num(e.get('initial_instances'))} at the start → {num(e.get('max_instances'))} "
                                   "at most", f"{num(e.get('per_instance_rps'))} req/s per instance (Q_ult)"))
    g.rows.append(Row("Scaling events", f"{num(e.get('n_scale_up'))} up, {num(e.get('n_scale_down'))} down"))
    g.rows.append(Row("Minutes over ready capacity", f"{num(e.get('n_over_capacity'))} of {num(e.get('n_minutes'))}"))
    g.rows.append(Row("Cold start / cool-down",
                      f"{duration(e.get('cold_start_s'))} / {duration(e.get('cool_down_s'))}"))
    st = _d(e.get("settings"))
    if st:
        g.notes.append(
            f"Rules: scale up above load ratio {num(st.get('scale_up_threshold'))}, down below "
            f"{num(st.get('scale_down_threshold'))}, to a ratio of {num(st.get('target_ratio'))}; at least "
            f"{num(st.get('min_instances'))} instance(s)"
            + (f"; latency budget {duration(st.get('latency_budget_s'))}" if st.get("latency_budget_s") else "")
            + (f"; {st['credit']}" if st.get("credit") else ""))
    ev = [_d(x) for x in e.get("events") or []]
    if ev:
        g.tables.append(Table(f"{len(ev)} scaling event(s)",
                              ["after minute", "action", "count", "instances after", "ready from minute", "reason"],
                              [[num(x.get("after_minute")), str(x.get("action", "")).replace("_", " "),
                                num(x.get("count")), num(x.get("instances_after")), num(x.get("ready_from_minute")),
                                str(x.get("reason") or "")] for x in ev], collapsed=True))
    oc = e.get("over_capacity_minutes") or []
    if oc:
        rows = [[_cell(v, k) for k, v in _d(x).items()] if isinstance(x, dict) else [num(x)] for x in oc]
        cols = list(_d(oc[0]).keys()) if isinstance(oc[0], dict) else ["minute"]
        g.tables.append(Table(f"{len(oc)} minute(s) over ready capacity", [c.replace("_", " ") for c in cols], rows,
                              collapsed=True))
    g.notes += _notes(e.get("notes"))
    return g


def memory_view(mem: Any) -> Group:
    g = Group("KV-cache memory (per instance)")
    m = _d(mem)
    if _na(m) or not m:
        g.unavailable.append(f"memory plan not available: {_na(m) or 'not in the plan'}")
        return g
    md = _d(m.get("model"))
    if md:
        arch = (f"{num(md.get('layers'))} layers, {str(md.get('attention') or '').upper()} "
                f"{num(md.get('heads'))} heads / {num(md.get('kv_heads'))} KV heads, head dim {num(md.get('head_dim'))}"
                if md.get("attention") != "mla" else
                f"{num(md.get('layers'))} layers, MLA latent {num(md.get('kv_lora_rank'))} + RoPE "
                f"{num(md.get('qk_rope_head_dim'))}")
        g.rows.append(Row("Model", str(md.get("name")), f"{arch}; weights {md.get('weight_dtype')}, KV "
                                                        f"{md.get('kv_dtype')}; {md.get('source') or ''}"))
        wb = _f(md.get("weight_bytes"))
        g.rows.append(Row("Weights", gib(wb / 1024**3 if wb is not None else None),
                          f"{num(_f(md.get('params')) / 1e9 if _f(md.get('params')) else None, 1)} B parameters"))
        kv, seed = _f(md.get("kv_bytes_per_token")), _f(md.get("seed_mha_kv_bytes_per_token"))
        g.rows.append(Row("KV cache per token", f"{num(kv / 1024 if kv else None, 0)} KiB",
                          f"the MHA-only formula would say {num(seed / 1024, 0)} KiB" if seed else ""))
    conc = m.get("concurrency")
    basis = str(m.get("concurrency_basis") or "")
    g.rows.append(Row("Planning concurrency", f"{num(conc)} sequences per instance" if conc is not None else "unknown",
                      basis))
    pc = _d(m.get("planning_concurrency"))
    if pc and not pc.get("used"):
        g.rows.append(Row("Concurrency at Q_ult", f"{num(pc.get('per_instance'), 1)} per instance",
                          f"{pc.get('statement')}; not used: the concurrency above takes precedence"))
    gpu = _f(m.get("gpu_mem_gib"))
    rows = [_d(r) for r in m.get("rows") or []]
    p99 = next((r for r in rows if r.get("basis") == "p99"), None)
    if gpu is not None:
        g.rows.append(Row("GPU memory", f"{num(m.get('gpu_count'))} × {num(gpu, 0)} GiB",
                          "given by the analyst"))
    else:
        need = _f(_d(m.get("gpu_memory_needed")).get("gib_per_instance"))
        if need is None:
            need = _f(p99.get("total_gib")) if p99 else None
        g.rows.append(Row("GPU memory", "not given",
                          f"the plan needs ≥ {need:,.1f} GiB per instance at the P99 sequence length"
                          if need is not None else
                          "give the GPU memory (gpu_mem_gib) to judge the fit; the need per instance is unknown "
                          "while the concurrency is"))
    g.rows.append(Row("Margin", pct(m.get("margin"), 0), str(m.get("formula") or "")))
    sl = _d(m.get("seq_len"))
    if sl.get("source"):
        g.notes.append(f"Sequence lengths from {sl['source']} ({num(sl.get('n'))} requests).")
    if rows:
        g.tables.append(Table(
            "Memory per sequence-length basis",
            ["basis", "sequence length (tokens)", "weights", "KV cache", "total with margin",
             "total, MHA-only formula", "headroom", "max concurrency that fits (MHA-only formula)"],
            [[str(r.get("basis")).upper().replace("MEAN", "mean").replace("MAX", "max"), num(r.get("seq_len"), 0),
              gib(r.get("weights_gib")), gib(r.get("kv_gib")), gib(r.get("total_gib")),
              gib(r.get("seed_mha_total_gib")),
              pct(r.get("headroom")) if r.get("headroom") is not None else "needs the GPU memory",
              (f"{num(r.get('max_concurrency_that_fits'))} ({num(r.get('seed_mha_max_concurrency_that_fits'))})"
               if r.get("max_concurrency_that_fits") is not None else "needs the GPU memory")]
             for r in rows]))
    vc = m.get("vllm_log_check")
    if isinstance(vc, dict) and vc:
        g.notes.append("vLLM log check: " + (str(vc.get("statement")) if vc.get("statement") else
                                             "; ".join(f"{k}: {_cell(v)}" for k, v in vc.items())))
    return g


def scorecard_tables(sc: Any) -> Group:
    g = Group("Scorecards")
    s = _d(sc)
    if _na(s):
        g.unavailable.append(f"scorecards not available: {_na(s)}")
        return g
    card = [_d(x) for x in s.get("scorecard") or []]
    if card:
        g.tables.append(Table("Scorecard", ["dimension", "status", "value", "why"],
                              [[str(x.get("dimension", "")), str(x.get("status")), _value(x.get("value")),
                                str(x.get("reason") or "")] for x in card], status_column=1))
    chk = [_d(x) for x in s.get("checklist") or []]
    if chk:
        g.tables.append(Table("Health checklist", ["metric", "status", "value", "healthy when", "why"],
                              [[str(x.get("metric", "")), str(x.get("status")), _value(x.get("value")),
                                str(x.get("healthy_rule") or ""), str(x.get("reason") or "")] for x in chk],
                              status_column=1))
    for k, v in s.items():
        if k not in ("scorecard", "checklist", "available") and v not in (None, [], {}):
            g.notes.append(f"{k.replace('_', ' ')}: {_cell(v)}")
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
    flags: list[Any]

    @property
    def summary(self) -> str:
        return ", ".join(f"{n} {lvl}{'s' if n != 1 and lvl in ('warning', 'error') else ''}"
                         for lvl, n in self.counts.items())


def flags_view(flags: list[Any]) -> dict[str, Any]:
    """Findings grouped by source and severity, and counted per code (warnings first).

    Returns ``{"n", "by_level", "codes", "groups"}``: ``by_level`` the count per level
    (most severe first), ``codes`` one row per (level, code) with its count and sources,
    ``groups`` one :class:`FlagGroup` per source, sources with the most severe findings
    first (then the most findings).
    """
    def lvl(f: Any) -> str:
        return str(getattr(f, "level", "") or "info")

    by_level: dict[str, int] = {}
    for f in sorted(flags, key=lambda f: _severity(lvl(f))):
        by_level[lvl(f)] = by_level.get(lvl(f), 0) + 1
    codes: dict[tuple[str, str], dict[str, Any]] = {}
    for f in flags:
        row = codes.setdefault((lvl(f), f.code), {"level": lvl(f), "code": f.code, "count": 0, "sources": []})
        row["count"] += 1
        if f.source not in row["sources"]:
            row["sources"].append(f.source)
    code_rows = sorted(codes.values(), key=lambda r: (_severity(r["level"]), -r["count"], r["code"]))
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
    return {"n": len(flags), "by_level": by_level, "codes": code_rows, "groups": groups}


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


def section_views(model: Any) -> dict[str, Any]:
    """The curated views of the production, FOS/CBU, plan and scorecards sections."""
    views: dict[str, Any] = {}
    if model.production.available:
        g = production_view(model.production.data)
        # a relative clock has no time-of-day slots: their reasons are not caveats of this report
        skip = ("per_minute_series", "slots") if is_relative(model.production.data) else ("per_minute_series",)
        views["production"] = {"groups": g, "caveats": leftover_caveats(
            {k: v for k, v in model.production.data.items() if k not in skip}, g)}
    if model.fos.available:
        f = model.fos.data
        g = [cbu_view(f.get("cbu"), is_relative(model.production.data if model.production.available else None))]
        tbin = _f(_d(_d(model.production.data.get("targets")).get("target")).get("bin_s")) \
            if model.production.available else None
        views["fos"] = {"target": target_row(_d(f.get("target")), tbin), "cbu": g[0],
                        "caveats": leftover_caveats({"cbu": f.get("cbu")}, g)}
    views["window"] = window_line(model.production.data if model.production.available else None,
                                  getattr(model.provenance, "run_time_utc", None))
    if model.plan.available:
        d = model.plan.data
        g = [instances_view(d.get("instances")), elasticity_view(d.get("elasticity")), memory_view(d.get("memory"))]
        views["plan"] = {"groups": g, "caveats": leftover_caveats({k: d.get(k) for k in
                                                                   ("instances", "elasticity", "memory")}, g)}
    if model.scorecards.available:
        g = [scorecard_tables(model.scorecards.data.get("scorecards"))]
        views["scorecards"] = {"groups": g, "caveats": leftover_caveats(model.scorecards.data, g)}
    return views


__all__ = [
    "Group",
    "Row",
    "Table",
    "cbu_minute",
    "cbu_view",
    "elapsed",
    "elasticity_view",
    "flags_view",
    "instances_view",
    "is_relative",
    "leftover_caveats",
    "memory_view",
    "num",
    "production_view",
    "scorecard_tables",
    "section_views",
    "target_row",
    "window_line",
]
